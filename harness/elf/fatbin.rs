//! NVIDIA fatbinary containers (`.nv_fatbin`, and those embedded in a large-model data section
//! such as cuFFT's `.ldata`): the SASS and PTX entries and their architectures.
//!
//! Owns the walk over container and entry headers. Payloads are never decompressed; of an
//! uncompressed cubin only its section names are read (does it hold a kernel at all?), so
//! listing the architectures of a 700 MB library touches only a few pages per entry.
//!
//! Layout (little-endian), checked field by field against NVIDIA's `cuobjdump` 13.5 on the
//! CUDA 11, 12 and 13 libraries of the fixture toolkits (cuDNN 8.9 and 9.28, cuBLAS 12.9): the
//! target names and the number of entries per target agree exactly.
//! - Container header, 16 bytes: magic `u32` 0xBA55ED50 @0, version `u16` @4 (1), header size
//!   `u16` @6 (16), size of the entries after the header `u64` @8. Containers follow each other
//!   with no gap in every library seen; padding up to an 8-byte aligned magic is tolerated.
//! - Entry header, `header size` bytes (64 for SASS up to sm_90, 96 from sm_100; 72-96 for PTX):
//!   kind `u16` @0 (1 PTX, 2 ELF/SASS), `u16` @2 (0x0101), header size `u32` @4, payload size
//!   `u64` @8 (padded to 8), compressed size `u32` @16, offset of the options block `u32` @20,
//!   code version minor/major `u16` @24/@26 (1.7 for cubins, 8.x for PTX), `sm_arch` `u32` @28,
//!   object name offset/length `u32` @32/@36 (0 in NVIDIA's libraries), flags `u64` @40,
//!   uncompressed size `u64` @56. The next entry starts at `entry + header size + payload size`.
//! - Flags: 0x1 64-bit, 0x10 Linux host, 0x2000 compressed (LZ-style), 0x8000 compressed with
//!   zstd (payload starts 28 b5 2f fd), 0x10_0000 architecture-specific (`sm_90a`: all 1375
//!   such entries of cuBLAS 12.9), 0x20_0000 family-specific (`compute_120f`); 0x100_0000 is
//!   set on every sm_100+ cubin, meaning unknown.

use super::window::Window;
use std::path::Path;

/// Magic number of a fatbinary container header.
pub const CONTAINER_MAGIC: u32 = 0xBA55_ED50;
const MAGIC_BYTES: [u8; 4] = CONTAINER_MAGIC.to_le_bytes();
/// Size of the fixed container header.
const CONTAINER_HEADER_LEN: usize = 16;
/// Shortest entry header we can read an architecture from (`sm_arch` ends at byte 32).
const ENTRY_MIN_HEADER_LEN: usize = 32;

/// Entry flag: code for a 64-bit host.
pub const FLAG_64BIT: u64 = 0x1;
/// Entry flag: the payload is compressed (NVIDIA's LZ-style scheme).
pub const FLAG_COMPRESSED: u64 = 0x2000;
/// Entry flag: the payload is compressed with zstd (CUDA 12.8 and later).
pub const FLAG_COMPRESSED_ZSTD: u64 = 0x8000;
/// Entry flag: architecture-specific target (`sm_90a`), not forward compatible.
pub const FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;
/// Entry flag: family-specific target (`compute_120f`), usable within its major family only.
pub const FLAG_FAMILY_SPECIFIC: u64 = 0x20_0000;

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntryKind {
    /// PTX text (kind 1), JIT-compiled by the driver.
    Ptx,
    /// A cubin ELF with SASS (kind 2).
    Sass,
    /// Any other kind (for example LTO-IR), with its raw code.
    Other(u16),
}

impl EntryKind {
    /// The kind for a raw entry-header code.
    pub fn from_raw(kind: u16) -> Self {
        match kind {
            1 => EntryKind::Ptx,
            2 => EntryKind::Sass,
            other => EntryKind::Other(other),
        }
    }
}

/// One entry of a fatbinary container, from its header alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatbinEntry {
    pub kind: EntryKind,
    /// `sm_arch`: 90 for `sm_90`.
    pub arch: u32,
    /// Variant from the flags: `'a'` (architecture-specific, `sm_90a`) or `'f'`
    /// (family-specific, `compute_120f`).
    pub variant: Option<char>,
    pub compressed: bool,
    /// Bytes of (padded, possibly compressed) payload after the entry header.
    pub payload_size: u64,
    /// Offset of the entry header in the section.
    pub offset: u64,
    /// Raw flags field of the entry header.
    pub flags: u64,
    /// False only for an uncompressed cubin with no `.text.<kernel>` section: code that no
    /// launch can use (cuFFTW's and NPP core's single sm_75 cubin). Unknown counts as true.
    pub holds_kernels: bool,
}

impl FatbinEntry {
    /// The target name as `cuobjdump` lists it: `sm_90a` for SASS, `compute_120f` for PTX,
    /// `None` for other kinds.
    ///
    /// SASS names carry `a` but not `f`: a family-specific cubin runs exactly where a plain
    /// one of the same `sm_XY` runs (same major, minor >= Y), and `cuobjdump --list-elf`
    /// names it `sm_XY`. For PTX, `f` matters (it JIT-compiles only within the family).
    pub fn target_name(&self) -> Option<String> {
        let (prefix, suffix) = self.name_parts()?;
        Some(match suffix {
            Some(c) => format!("{prefix}_{}{c}", self.arch),
            None => format!("{prefix}_{}", self.arch),
        })
    }

    fn name_parts(&self) -> Option<(&'static str, Option<char>)> {
        match self.kind {
            EntryKind::Sass => Some(("sm", self.variant.filter(|&v| v == 'a'))),
            EntryKind::Ptx => Some(("compute", self.variant)),
            EntryKind::Other(_) => None,
        }
    }
}

/// The variant a flags field declares; `a` wins if both bits are set.
fn variant(flags: u64) -> Option<char> {
    if flags & FLAG_ARCH_SPECIFIC != 0 {
        Some('a')
    } else if flags & FLAG_FAMILY_SPECIFIC != 0 {
        Some('f')
    } else {
        None
    }
}

/// Why a fatbinary could not be read to its end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FatbinError {
    #[error(
        "no fatbinary container at offset {offset} (found {found:#010x}, expected 0xba55ed50)"
    )]
    BadMagic { offset: u64, found: u32 },
    #[error("fatbinary truncated: {what} at offset {offset} runs past the end of the section")]
    Truncated { offset: u64, what: &'static str },
    #[error("malformed fatbinary at offset {offset}: {reason}")]
    Malformed { offset: u64, reason: &'static str },
}

/// The result of walking a `.nv_fatbin` section: every entry read, and the error that stopped
/// the walk early, if one did (the entries before it are kept).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FatbinScan {
    pub entries: Vec<FatbinEntry>,
    /// Number of containers whose header was read.
    pub containers: usize,
    pub error: Option<FatbinError>,
}

/// Reads every entry header of a `.nv_fatbin` section; fails on the first inconsistency.
///
/// Use [`scan`] to keep the entries found before a corrupt tail.
pub fn entries(section: &[u8]) -> Result<Vec<FatbinEntry>, FatbinError> {
    let scan = scan(section);
    match scan.error {
        Some(error) => Err(error),
        None => Ok(scan.entries),
    }
}

/// Walks a `.nv_fatbin` section, keeping the entries read before any error.
///
/// An empty section has no entries and no error. The section must start with a container;
/// after each container, padding up to the next 8-byte aligned magic is skipped, and bytes
/// with no further magic end the walk.
pub fn scan(section: &[u8]) -> FatbinScan {
    scan_window(&mut Window::slice(section))
}

/// [`scan`] of a section seen through a [`Window`].
pub(crate) fn scan_window(section: &mut Window<'_>) -> FatbinScan {
    let mut out = FatbinScan::default();
    let mut pos = 0usize;
    while pos < section.len() {
        if read_u32(section, pos) != Some(CONTAINER_MAGIC) {
            if pos == 0 {
                out.error = Some(match read_u32(section, 0) {
                    Some(found) => FatbinError::BadMagic { offset: 0, found },
                    None => FatbinError::Truncated {
                        offset: 0,
                        what: "container header",
                    },
                });
                break;
            }
            match next_magic(section, pos) {
                Some(next) => pos = next,
                None => break,
            }
        }
        match read_container(section, pos, &mut out.entries) {
            Ok(end) => {
                out.containers += 1;
                pos = end;
            }
            Err(error) => {
                out.error = Some(error);
                break;
            }
        }
    }
    out
}

/// Reads the container at `start`, pushing its entries; returns the offset where it ends.
fn read_container(
    section: &mut Window<'_>,
    start: usize,
    entries: &mut Vec<FatbinEntry>,
) -> Result<usize, FatbinError> {
    let at = |offset: usize| offset as u64;
    let truncated = |offset: usize, what| FatbinError::Truncated {
        offset: at(offset),
        what,
    };
    let malformed = |offset: usize, reason| FatbinError::Malformed {
        offset: at(offset),
        reason,
    };
    let (Some(header_len), Some(fat_size)) = (
        read_u16(section, start.saturating_add(6)),
        read_u64(section, start.saturating_add(8)),
    ) else {
        return Err(truncated(start, "container header"));
    };
    let header_len = usize::from(header_len);
    if header_len < CONTAINER_HEADER_LEN {
        return Err(malformed(start, "container header shorter than 16 bytes"));
    }
    let first = start
        .checked_add(header_len)
        .ok_or_else(|| malformed(start, "container header size overflows"))?;
    let end = usize::try_from(fat_size)
        .ok()
        .and_then(|size| first.checked_add(size))
        .ok_or_else(|| malformed(start, "container size overflows"))?;
    if first > section.len() {
        return Err(truncated(start, "container header"));
    }
    let mut pos = first;
    while pos < end {
        if end - pos < ENTRY_MIN_HEADER_LEN {
            return Err(malformed(
                pos,
                "entry header crosses the end of its container",
            ));
        }
        let (Some(kind), Some(entry_len), Some(payload_size), Some(arch)) = (
            read_u16(section, pos),
            read_u32(section, pos.saturating_add(4)),
            read_u64(section, pos.saturating_add(8)),
            read_u32(section, pos.saturating_add(28)),
        ) else {
            return Err(truncated(pos, "entry header"));
        };
        let entry_len = usize::try_from(entry_len).unwrap_or(usize::MAX);
        if entry_len < ENTRY_MIN_HEADER_LEN {
            return Err(malformed(pos, "entry header shorter than 32 bytes"));
        }
        let header_end = pos
            .checked_add(entry_len)
            .ok_or_else(|| malformed(pos, "entry header size overflows"))?;
        let next = usize::try_from(payload_size)
            .ok()
            .and_then(|size| header_end.checked_add(size))
            .ok_or_else(|| malformed(pos, "entry payload size overflows"))?;
        if next > end {
            return Err(malformed(pos, "entry runs past the end of its container"));
        }
        if header_end > section.len() {
            return Err(truncated(pos, "entry header"));
        }
        let flags = if entry_len >= 48 {
            read_u64(section, pos.saturating_add(40)).unwrap_or(0)
        } else {
            0
        };
        let kind = EntryKind::from_raw(kind);
        let compressed = flags & (FLAG_COMPRESSED | FLAG_COMPRESSED_ZSTD) != 0;
        let holds_kernels = kind != EntryKind::Sass
            || compressed
            || next > section.len()
            || cubin_holds_kernels(section, header_end, next - header_end);
        entries.push(FatbinEntry {
            kind,
            arch,
            variant: variant(flags),
            compressed,
            payload_size,
            offset: at(pos),
            flags,
            holds_kernels,
        });
        if next > section.len() {
            return Err(truncated(pos, "entry payload"));
        }
        pos = next;
    }
    if end > section.len() {
        return Err(truncated(start, "container"));
    }
    Ok(end)
}

/// The next 8-byte aligned container magic at or after `from`.
fn next_magic(section: &mut Window<'_>, from: usize) -> Option<usize> {
    let finder = memchr::memmem::Finder::new(&MAGIC_BYTES);
    let mut pos = from.checked_add(7)? & !7;
    while let Some(hit) = section.find(&finder, pos) {
        if hit % 8 == 0 {
            return Some(hit);
        }
        pos = (hit + 8) & !7;
    }
    None
}

/// Finds the containers embedded in a data section (x86-64's large-model `.ldata`, where cuFFT
/// for CUDA 13 keeps ~24,000 of them while its `.nv_fatbin` holds one kernel-free cubin).
///
/// The section holds other data too, and its containers need not be 8-byte aligned within it,
/// so a magic at any offset whose container does not read whole is taken for data and skipped:
/// no error is reported, and only well-formed containers (version 1, a 16-byte header) count.
pub fn scan_embedded(section: &[u8]) -> FatbinScan {
    scan_embedded_window(&mut Window::slice(section))
}

/// [`scan_embedded`] of a section seen through a [`Window`].
pub(crate) fn scan_embedded_window(section: &mut Window<'_>) -> FatbinScan {
    let finder = memchr::memmem::Finder::new(&MAGIC_BYTES);
    let mut out = FatbinScan::default();
    let mut pos = 0usize;
    while let Some(start) = section.find(&finder, pos) {
        let header = (read_u16(section, start + 4), read_u16(section, start + 6));
        let mut found = Vec::new();
        match read_container(section, start, &mut found) {
            Ok(end) if header == (Some(1), Some(CONTAINER_HEADER_LEN as u16)) => {
                out.entries.append(&mut found);
                out.containers += 1;
                pos = end.max(start + 1);
            }
            _ => pos = start + 1,
        }
    }
    out
}

/// Whether every entry is a cubin without kernels: GPU code that no launch can use, so no
/// GPU lacks kernels in it. An empty list is not kernel-free (there is no GPU code at all).
pub fn kernel_free(entries: &[FatbinEntry]) -> bool {
    !entries.is_empty() && entries.iter().all(|e| !e.holds_kernels)
}

/// Whether the uncompressed cubin (an ELF64 payload) of `len` bytes at `start` of `section`
/// has a `.text.<kernel>` section; anything that does not read as one counts as holding
/// kernels. Its section headers are read at once, then each name.
fn cubin_holds_kernels(section: &mut Window<'_>, start: usize, len: usize) -> bool {
    const SECTION_HEADER_LEN: usize = 64;
    let elf64_le = |ident: &[u8]| ident.starts_with(b"\x7fELF\x02\x01");
    if !section.up_to(start, 6).is_some_and(elf64_le) || len < 6 {
        return true;
    }
    let mut names = || -> Option<bool> {
        let at = |offset: usize| Some(start.checked_add(offset)?).filter(|_| offset < len);
        let field = |section: &mut Window<'_>, offset: usize, size: usize| {
            let offset = at(offset)?;
            (offset.checked_add(size)? <= start + len).then_some(())?;
            section.at(offset, size).map(<[u8]>::to_vec)
        };
        let u64_at = |section: &mut Window<'_>, offset| {
            let bytes = field(section, offset, 8)?;
            usize::try_from(u64::from_le_bytes(bytes.try_into().ok()?)).ok()
        };
        let table = u64_at(section, 0x28)?;
        let counts = field(section, 0x3c, 4)?;
        let count = usize::from(u16::from_le_bytes([counts[0], counts[1]]));
        let strings_index = usize::from(u16::from_le_bytes([counts[2], counts[3]]));
        let header = |i: usize| table.checked_add(i.checked_mul(SECTION_HEADER_LEN)?);
        let strings = u64_at(section, header(strings_index)?.checked_add(0x18)?)?;
        // Every name offset, from one read of the headers (at most 65,535 x 64 bytes).
        let headers = match count {
            0 => Vec::new(),
            _ => field(section, header(0)?, count.checked_mul(SECTION_HEADER_LEN)?)?,
        };
        let mut any = false;
        for entry in headers.chunks_exact(SECTION_HEADER_LEN) {
            let name = usize::try_from(u32::from_le_bytes(entry[..4].try_into().ok()?)).ok()?;
            let name = strings.checked_add(name)?;
            if name > len {
                return None;
            }
            let text = section.at(start + name, (len - name).min(6));
            any |= text.is_some_and(|name| name.starts_with(b".text."));
        }
        Some(any)
    };
    names().unwrap_or(true)
}

/// Sorted, unique SASS (`sm_90a`) and PTX (`compute_90`) target names, in numeric order of
/// architecture (`sm_90` < `sm_90a` < `sm_100`); named as by [`FatbinEntry::target_name`].
pub fn architectures(entries: &[FatbinEntry]) -> (Vec<String>, Vec<String>) {
    let mut sass = Vec::new();
    let mut ptx = Vec::new();
    for e in entries {
        if let Some((_, suffix)) = e.name_parts() {
            let list = if e.kind == EntryKind::Sass {
                &mut sass
            } else {
                &mut ptx
            };
            list.push((e.arch, suffix));
        }
    }
    let names = |mut v: Vec<(u32, Option<char>)>, prefix: &str| {
        v.sort_unstable();
        v.dedup();
        v.into_iter()
            .map(|(arch, suffix)| match suffix {
                Some(c) => format!("{prefix}_{arch}{c}"),
                None => format!("{prefix}_{arch}"),
            })
            .collect::<Vec<_>>()
    };
    (names(sass, "sm"), names(ptx, "compute"))
}

/// Reads the `.nv_fatbin` entry headers of a shared object on disk: only the ELF headers,
/// the section headers and the entry headers are touched.
///
/// A file without a `.nv_fatbin` section gives an empty scan. Containers embedded in `.ldata`
/// are not read here (nor by `cuobjdump`, which this matches); `elf::read_path` reads both.
pub fn scan_file(path: &Path) -> Result<FatbinScan, super::ElfError> {
    super::read_fatbin_section(path)
}

/// SASS and PTX target names of a shared object's `.nv_fatbin` on disk (see [`scan_file`] and
/// [`architectures`]); entries after a corrupt tail are left out.
pub fn list_architectures_of_file(
    path: &Path,
) -> Result<(Vec<String>, Vec<String>), super::ElfError> {
    let scan = scan_file(path)?;
    Ok(architectures(&scan.entries))
}

fn read_u16(data: &mut Window<'_>, offset: usize) -> Option<u16> {
    Some(u16::from_le_bytes(data.at(offset, 2)?.try_into().ok()?))
}

fn read_u32(data: &mut Window<'_>, offset: usize) -> Option<u32> {
    Some(u32::from_le_bytes(data.at(offset, 4)?.try_into().ok()?))
}

fn read_u64(data: &mut Window<'_>, offset: usize) -> Option<u64> {
    Some(u64::from_le_bytes(data.at(offset, 8)?.try_into().ok()?))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One entry for [`container`]: kind, arch, flags, payload length, header length.
    #[derive(Clone, Copy)]
    pub(crate) struct Spec {
        pub kind: u16,
        pub arch: u32,
        pub flags: u64,
        pub payload: usize,
        pub header: u32,
    }

    pub(crate) fn sass(arch: u32) -> Spec {
        Spec {
            kind: 2,
            arch,
            flags: 0x2011,
            payload: 40,
            header: 64,
        }
    }

    pub(crate) fn ptx(arch: u32) -> Spec {
        Spec {
            kind: 1,
            arch,
            flags: 0x2011,
            payload: 24,
            header: 80,
        }
    }

    /// A container holding `entries`, laid out as nvcc does.
    pub(crate) fn container(entries: &[Spec]) -> Vec<u8> {
        let mut body = Vec::new();
        for e in entries {
            let start = body.len();
            body.resize(start + e.header as usize + e.payload, 0xcd);
            let h = &mut body[start..start + e.header as usize];
            h.fill(0);
            h[0..2].copy_from_slice(&e.kind.to_le_bytes());
            h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
            h[4..8].copy_from_slice(&e.header.to_le_bytes());
            h[8..16].copy_from_slice(&(e.payload as u64).to_le_bytes());
            h[28..32].copy_from_slice(&e.arch.to_le_bytes());
            if e.header >= 48 {
                h[40..48].copy_from_slice(&e.flags.to_le_bytes());
            }
        }
        let mut out = Vec::new();
        out.extend_from_slice(&CONTAINER_MAGIC.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Two containers, the first ending off an 8-byte boundary and padded with zeros.
    fn two_containers() -> Vec<u8> {
        let mut data = container(&[
            sass(80),
            Spec {
                payload: 41,
                ..sass(90)
            },
            Spec {
                flags: 0x10_2011,
                ..sass(90)
            },
        ]);
        assert_ne!(data.len() % 8, 0);
        data.resize(data.len().next_multiple_of(8) + 8, 0);
        data.extend(container(&[
            ptx(90),
            sass(100),
            Spec {
                flags: 0x20_8011,
                ..ptx(120)
            },
            Spec { kind: 8, ..ptx(90) },
        ]));
        data
    }

    #[test]
    fn reads_two_padded_containers() {
        let data = two_containers();
        let scan = scan(&data);
        assert_eq!(scan.error, None);
        assert_eq!(scan.containers, 2);
        let kinds: Vec<_> = scan
            .entries
            .iter()
            .map(|e| (e.kind, e.arch, e.variant))
            .collect();
        assert_eq!(
            kinds,
            [
                (EntryKind::Sass, 80, None),
                (EntryKind::Sass, 90, None),
                (EntryKind::Sass, 90, Some('a')),
                (EntryKind::Ptx, 90, None),
                (EntryKind::Sass, 100, None),
                (EntryKind::Ptx, 120, Some('f')),
                (EntryKind::Other(8), 90, None),
            ]
        );
        assert!(scan.entries.iter().all(|e| e.compressed));
        assert_eq!(scan.entries[1].payload_size, 41);
        assert_eq!(entries(&data).unwrap(), scan.entries);
    }

    #[test]
    fn names_targets_in_numeric_order() {
        let (sass, ptx) = architectures(&scan(&two_containers()).entries);
        assert_eq!(sass, ["sm_80", "sm_90", "sm_90a", "sm_100"]);
        assert_eq!(ptx, ["compute_90", "compute_120f"]);
    }

    #[test]
    fn family_sass_is_named_like_cuobjdump() {
        let entry = scan(&container(&[Spec {
            flags: 0x120_2011,
            ..sass(100)
        }]))
        .entries
        .remove(0);
        assert_eq!(entry.variant, Some('f'));
        assert_eq!(entry.target_name().as_deref(), Some("sm_100"));
    }

    #[test]
    fn keeps_entries_before_a_truncated_tail() {
        let data = two_containers();
        let cut = &data[..data.len() - 30];
        let scan = scan(cut);
        assert_eq!(scan.entries.len(), 6, "{:?}", scan.entries);
        assert!(
            matches!(scan.error, Some(FatbinError::Truncated { .. })),
            "{:?}",
            scan.error
        );
        assert!(entries(cut).is_err());
    }

    #[test]
    fn truncated_entry_header_is_reported() {
        let data = container(&[sass(80), sass(86)]);
        let cut = &data[..16 + 64 + 40 + 20];
        let scan = scan(cut);
        assert_eq!(scan.entries.len(), 1);
        assert_eq!(
            scan.error,
            Some(FatbinError::Truncated {
                offset: 16 + 64 + 40,
                what: "entry header"
            })
        );
    }

    #[test]
    fn bad_magic_at_start() {
        let mut data = container(&[sass(80)]);
        data[0] ^= 0xff;
        assert!(matches!(
            entries(&data),
            Err(FatbinError::BadMagic { offset: 0, .. })
        ));
        assert!(matches!(
            entries(&[0x50, 0xed]),
            Err(FatbinError::Truncated { offset: 0, .. })
        ));
    }

    #[test]
    fn empty_section_and_trailing_padding() {
        assert_eq!(scan(&[]), FatbinScan::default());
        let mut data = container(&[sass(75)]);
        data.extend([0u8; 13]);
        assert_eq!(entries(&data).unwrap().len(), 1);
    }

    #[test]
    fn entry_past_its_container_is_malformed() {
        let mut data = container(&[sass(80)]);
        data[8..16].copy_from_slice(&50u64.to_le_bytes());
        assert!(matches!(
            entries(&data),
            Err(FatbinError::Malformed { offset: 16, .. })
        ));
    }

    #[test]
    fn short_entry_header_is_malformed() {
        let mut data = container(&[sass(80)]);
        data[16 + 4..16 + 8].copy_from_slice(&0u32.to_le_bytes());
        assert!(matches!(entries(&data), Err(FatbinError::Malformed { .. })));
    }

    /// `base` with bytes overwritten at `edits` (positions wrap) and cut to `cut` (wrapping):
    /// the corruption the no-panic properties feed the readers.
    pub(crate) fn mutated(base: Vec<u8>, edits: &[(usize, u8)], cut: usize) -> Vec<u8> {
        let mut data = base;
        for &(i, b) in edits {
            let len = data.len();
            data[i % len] = b;
        }
        data.truncate(cut % (data.len() + 1));
        data
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_bytes(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = scan(&data);
            let _ = scan_embedded(&data);
            let _ = cubin_holds_kernels(&mut Window::slice(&data), 0, data.len());
        }

        #[test]
        fn never_panics_after_a_magic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut bytes = MAGIC_BYTES.to_vec();
            bytes.extend(data);
            let _ = scan(&bytes);
            let _ = scan_embedded(&bytes);
        }

        #[test]
        fn never_panics_on_a_cubin_header_of_arbitrary_bytes(
            data in proptest::collection::vec(any::<u8>(), 0..512),
        ) {
            let mut cubin = b"\x7fELF\x02\x01".to_vec();
            cubin.extend(data);
            let _ = cubin_holds_kernels(&mut Window::slice(&cubin), 0, cubin.len());
        }

        #[test]
        fn never_panics_on_corrupted_containers(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..16),
            cut in any::<usize>(),
        ) {
            let data = mutated(two_containers(), &edits, cut);
            let scan = scan(&data);
            prop_assert!(scan.entries.len() <= data.len() / 32 + 1);
            // Read from a file a window at a time, the walk finds what it finds in the slice.
            let mut file = tempfile::tempfile().unwrap();
            std::io::Write::write_all(&mut file, &[&[0u8; 8][..], &data].concat()).unwrap();
            let range = 8..8 + data.len();
            for mapped in [false, true] {
                let window = || Window::file(&file, range.clone(), mapped);
                prop_assert_eq!(&scan_window(&mut window()), &scan);
                prop_assert_eq!(scan_embedded_window(&mut window()), scan_embedded(&data));
            }
        }
    }
}
