//! The version resource (`VS_VERSIONINFO`): `FileVersion` and `ProductVersion` from its string
//! table, or else from its fixed part. Each node is a length, a value length, a type, a UTF-16
//! key, then the value and the children, each on a 4-byte boundary; every read is checked.

use object::pe;
use object::read::pe::{ResourceDirectory, ResourceDirectoryEntryData, SectionTable};
use object::read::ReadRef;
use object::LittleEndian as LE;

/// Signature of `VS_FIXEDFILEINFO`.
const FIXED_SIGNATURE: u32 = 0xFEEF_04BD;

/// The versions a DLL's resource gives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Versions {
    pub file_version: Option<String>,
    pub product_version: Option<String>,
}

/// The versions in the first `RT_VERSION` resource, if the DLL has one that reads.
pub fn read<'data, R: ReadRef<'data>>(
    resources: ResourceDirectory<'data>,
    sections: &SectionTable<'data>,
    data: R,
) -> Versions {
    resource(resources, sections, data)
        .map(parse)
        .unwrap_or_default()
}

/// The bytes of the first language of the first `RT_VERSION` resource.
fn resource<'data, R: ReadRef<'data>>(
    resources: ResourceDirectory<'data>,
    sections: &SectionTable<'data>,
    data: R,
) -> Option<&'data [u8]> {
    let root = resources.root().ok()?;
    let versions = root
        .entries
        .iter()
        .find(|e| e.name_or_id().id() == Some(pe::RT_VERSION))?;
    let mut entry = versions.data(resources).ok()?;
    // Type, then name, then language: descend through the first entry of each table.
    for _ in 0..3 {
        match entry {
            ResourceDirectoryEntryData::Table(table) => {
                entry = table.entries.first()?.data(resources).ok()?;
            }
            ResourceDirectoryEntryData::Data(leaf) => {
                let bytes = sections.pe_data_at(data, leaf.offset_to_data.get(LE))?;
                return bytes.get(..leaf.size.get(LE) as usize);
            }
        }
    }
    None
}

/// The versions in a `VS_VERSIONINFO` block.
pub fn parse(block: &[u8]) -> Versions {
    let Some(root) = Node::read(block) else {
        return Versions::default();
    };
    let mut versions = Versions::default();
    for table in root
        .children()
        .filter(|c| c.key == "StringFileInfo")
        .flat_map(|c| c.children().collect::<Vec<_>>())
    {
        for string in table.children() {
            let value = Some(string.text()).filter(|v| !v.is_empty());
            match string.key.as_str() {
                "FileVersion" if versions.file_version.is_none() => versions.file_version = value,
                "ProductVersion" if versions.product_version.is_none() => {
                    versions.product_version = value
                }
                _ => {}
            }
        }
    }
    let fixed = root.value;
    if fixed.len() >= 24 && u32_at(fixed, 0) == Some(FIXED_SIGNATURE) {
        let dotted = |at: usize| {
            let (high, low) = (u32_at(fixed, at)?, u32_at(fixed, at + 4)?);
            Some(format!(
                "{}.{}.{}.{}",
                high >> 16,
                high & 0xffff,
                low >> 16,
                low & 0xffff
            ))
        };
        versions.file_version = versions.file_version.or_else(|| dotted(8));
        versions.product_version = versions.product_version.or_else(|| dotted(16));
    }
    versions
}

/// One node of the version resource.
struct Node<'a> {
    key: String,
    /// Text value (`wType` 1): counted in UTF-16 units; binary: in bytes.
    is_text: bool,
    value: &'a [u8],
    rest: &'a [u8],
}

impl<'a> Node<'a> {
    fn read(block: &'a [u8]) -> Option<Node<'a>> {
        let length = usize::from(u16_at(block, 0)?);
        let value_length = usize::from(u16_at(block, 2)?);
        let is_text = u16_at(block, 4)? == 1;
        let block = block.get(..length.min(block.len()))?;
        let mut units = Vec::new();
        let mut at = 6;
        loop {
            let unit = u16_at(block, at)?;
            at += 2;
            if unit == 0 {
                break;
            }
            units.push(unit);
        }
        let value_start = align4(at);
        let value_bytes = if is_text {
            value_length * 2
        } else {
            value_length
        };
        let value_end = value_start.saturating_add(value_bytes).min(block.len());
        let value = block.get(value_start.min(value_end)..value_end)?;
        let rest = block.get(align4(value_end).min(block.len())..)?;
        Some(Node {
            key: String::from_utf16_lossy(&units),
            is_text,
            value,
            rest,
        })
    }

    /// The child nodes, in order.
    fn children(&self) -> impl Iterator<Item = Node<'a>> + 'a {
        let mut rest = self.rest;
        std::iter::from_fn(move || {
            let length = usize::from(u16_at(rest, 0)?);
            if length < 6 {
                return None;
            }
            let node = Node::read(rest)?;
            rest = rest.get(align4(length).min(rest.len())..)?;
            Some(node)
        })
    }

    /// A text value up to its NUL.
    fn text(&self) -> String {
        if !self.is_text {
            return String::new();
        }
        let units: Vec<u16> = self
            .value
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .take_while(|&u| u != 0)
            .collect();
        String::from_utf16_lossy(&units).trim().to_owned()
    }
}

fn align4(offset: usize) -> usize {
    offset.saturating_add(3) & !3
}

fn u16_at(data: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        data.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        data.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A node as the resource compiler writes it.
    fn node(key: &str, text: bool, value: &[u8], children: &[Vec<u8>]) -> Vec<u8> {
        let mut out = vec![0u8; 6];
        for unit in key.encode_utf16().chain([0]) {
            out.extend_from_slice(&unit.to_le_bytes());
        }
        out.resize(align4(out.len()), 0);
        out.extend_from_slice(value);
        out.resize(align4(out.len()), 0);
        for child in children {
            out.extend_from_slice(child);
            out.resize(align4(out.len()), 0);
        }
        let length = out.len() as u16;
        let value_length = if text { value.len() / 2 } else { value.len() } as u16;
        out[0..2].copy_from_slice(&length.to_le_bytes());
        out[2..4].copy_from_slice(&value_length.to_le_bytes());
        out[4..6].copy_from_slice(&u16::from(text).to_le_bytes());
        out
    }

    fn text(value: &str) -> Vec<u8> {
        value
            .encode_utf16()
            .chain([0])
            .flat_map(u16::to_le_bytes)
            .collect()
    }

    fn fixed(file: [u16; 4], product: [u16; 4]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&FIXED_SIGNATURE.to_le_bytes());
        out.extend_from_slice(&0x0001_0000u32.to_le_bytes());
        for v in [file, product] {
            out.extend_from_slice(&((u32::from(v[0]) << 16) | u32::from(v[1])).to_le_bytes());
            out.extend_from_slice(&((u32::from(v[2]) << 16) | u32::from(v[3])).to_le_bytes());
        }
        out.resize(52, 0);
        out
    }

    #[test]
    fn the_string_table_wins_over_the_fixed_part() {
        let strings = node(
            "StringFileInfo",
            true,
            &[],
            &[node(
                "040904b0",
                true,
                &[],
                &[
                    node("CompanyName", true, &text("NVIDIA Corporation"), &[]),
                    node("FileVersion", true, &text("6.14.11.8089"), &[]),
                    node("ProductVersion", true, &text("11.8.89"), &[]),
                ],
            )],
        );
        let root = node(
            "VS_VERSION_INFO",
            false,
            &fixed([6, 14, 11, 8089], [11, 8, 0, 89]),
            &[strings],
        );
        let versions = parse(&root);
        assert_eq!(versions.file_version.as_deref(), Some("6.14.11.8089"));
        assert_eq!(versions.product_version.as_deref(), Some("11.8.89"));
    }

    #[test]
    fn without_strings_the_fixed_part_gives_the_versions() {
        let root = node(
            "VS_VERSION_INFO",
            false,
            &fixed([8, 9, 4, 19], [8, 9, 4, 19]),
            &[],
        );
        let versions = parse(&root);
        assert_eq!(versions.file_version.as_deref(), Some("8.9.4.19"));
        assert_eq!(versions.product_version.as_deref(), Some("8.9.4.19"));
    }

    proptest! {
        #[test]
        fn arbitrary_blocks_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse(&bytes);
        }
    }
}
