//! Reading a Windows DLL (PE) without loading it: machine, imports and delay-load imports,
//! exports, the version resource, DLL names it may load at run time, and the GPU
//! architectures in its fatbinary section, exactly as [`crate::elf`] does for shared objects.
//!
//! The `object` crate reads the headers and tables; the version resource is in [`version`],
//! DLL names among strings in [`names`]. Every read is bounds-checked: arbitrary bytes give a
//! [`PeError`], never a panic.

mod image;
pub mod names;
pub mod version;

use crate::elf::fatbin;
use object::pe;
use object::read::pe::{ImageNtHeaders, PeFile, PeFile32, PeFile64};
use object::read::ReadRef;
use object::LittleEndian as LE;
use std::fs::File;
use std::path::Path;

/// A PE section name holds 8 bytes: `.nv_fatbin` is cut to this.
const FATBIN_SECTION: &[u8] = b".nv_fatb";

/// What a DLL says about itself, read from its bytes alone.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PeInfo {
    /// `PE32` (32-bit) or `PE32+` (64-bit).
    pub class: String,
    /// `x86_64`, `i386`, `aarch64`: the names [`crate::elf`] gives the same machines.
    pub machine: String,
    /// The DLLs it imports: the loader must find each before the DLL loads (else error 126).
    pub imports: Vec<String>,
    /// The DLLs it delay-loads: found at first call, not at load.
    pub delay_imports: Vec<String>,
    /// How many functions it exports.
    pub exports: usize,
    /// The version resource's `FileVersion`.
    pub file_version: Option<String>,
    /// The version resource's `ProductVersion`.
    pub product_version: Option<String>,
    /// DLL names among its strings that it does not import: what it may `LoadLibrary`.
    pub runtime_names: Vec<String>,
    /// SASS targets (`sm_90`), sorted, unique.
    pub sass: Vec<String>,
    /// PTX targets (`compute_90`), sorted, unique.
    pub ptx: Vec<String>,
    /// Why the fatbinary section could not be read to its end.
    pub fatbin_problem: Option<String>,
    /// Its GPU code holds no kernel at all (see [`fatbin::kernel_free`]).
    pub kernel_free: bool,
}

/// Why a file could not be read as a DLL.
#[derive(Debug, thiserror::Error)]
pub enum PeError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// Not a regular file (a FIFO, a device), or larger than any DLL: never read.
    #[error("{0}")]
    Refused(crate::hostfs::ReadError),
    #[error("not a PE file")]
    NotPe,
    #[error("truncated PE file: {0}")]
    Truncated(String),
    #[error("malformed PE file: {0}")]
    Malformed(String),
}

/// True when `bytes` begin as a PE file does (`MZ`).
pub fn is_pe(bytes: &[u8]) -> bool {
    bytes.starts_with(b"MZ")
}

/// Reads a DLL from its bytes.
pub fn read_bytes(bytes: &[u8]) -> Result<PeInfo, PeError> {
    check_magic(bytes.get(..2).unwrap_or(bytes))?;
    crate::elf::with_aligned(bytes, |data| read(data, None))
}

/// Reads a DLL from a file: only its headers and the sections the facts are in (see
/// [`image`]), not the whole file.
///
/// A DLL whose tables point outside those sections (damaged, or laid out as no linker lays
/// one out: import names in another section than the imports) is read again through a mapping
/// of the whole file, so that what is said of it is what its bytes say.
pub fn read_path(path: &Path) -> Result<PeInfo, PeError> {
    let io = |source| PeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (file, len) = crate::elf::open_regular(path).map_err(from_file_error)?;
    let may_map = crate::elf::file::only_ours_to_change(path);
    let image = image::Image::read(&file, len, may_map).map_err(io)?;
    let head = image.read_bytes_at(0, 2.min(len)).unwrap_or_default();
    check_magic(head)?;
    if let Ok(info) = read(&image, Some(&file)) {
        return Ok(info);
    }
    drop(image);
    let whole = crate::elf::file::bytes(path).map_err(from_file_error)?;
    crate::elf::with_aligned(&whole, |data| read(data, None))
}

/// A file that could not be opened or read as a [`PeError`].
fn from_file_error(error: crate::elf::ElfError) -> PeError {
    match error {
        crate::elf::ElfError::Io { path, source } => PeError::Io { path, source },
        crate::elf::ElfError::Refused(why) => PeError::Refused(why),
        other => PeError::Truncated(other.to_string()),
    }
}

/// `head`, the first two bytes (or fewer) of a file, must be `MZ`.
fn check_magic(head: &[u8]) -> Result<(), PeError> {
    match head.len() {
        0 | 1 => Err(PeError::Truncated(format!(
            "{} bytes, shorter than the MZ magic",
            head.len()
        ))),
        _ if is_pe(head) => Ok(()),
        _ => Err(PeError::NotPe),
    }
}

/// Reads a DLL through `data`: its bytes, or the parts of its `file`, in which a large `.rdata`
/// is searched for DLL names.
fn read<'data, R: ReadRef<'data>>(data: R, file: Option<&File>) -> Result<PeInfo, PeError> {
    let magic = object::read::pe::optional_header_magic(data).map_err(|e| malformed(data, e))?;
    match magic {
        pe::IMAGE_NT_OPTIONAL_HDR32_MAGIC => read_pe(
            &PeFile32::parse(data).map_err(|e| malformed(data, e))?,
            "PE32",
            file,
        ),
        pe::IMAGE_NT_OPTIONAL_HDR64_MAGIC => read_pe(
            &PeFile64::parse(data).map_err(|e| malformed(data, e))?,
            "PE32+",
            file,
        ),
        other => Err(PeError::Malformed(format!(
            "unknown optional header magic {other:#x}"
        ))),
    }
}

/// A parse error: truncated when the file is shorter than the headers it declares
/// (`SizeOfHeaders`), else malformed.
fn malformed<'data, R: ReadRef<'data>>(data: R, error: object::read::Error) -> PeError {
    let len = data.len().unwrap_or(0);
    // SizeOfHeaders sits 60 bytes into the optional header, after the 4-byte signature and the
    // 20-byte file header, in PE32 and PE32+ alike.
    let headers = pe::ImageDosHeader::parse(data).ok().and_then(|dos| {
        let at = u64::from(dos.nt_headers_offset()) + 24 + 60;
        let size = data.read_bytes_at(at, 4).ok()?;
        Some(u64::from(u32::from_le_bytes([
            size[0], size[1], size[2], size[3],
        ])))
    });
    match headers {
        Some(size) if len >= size => PeError::Malformed(error.to_string()),
        _ => PeError::Truncated(format!("{len} bytes: {error}")),
    }
}

fn read_pe<'data, Pe: ImageNtHeaders, R: ReadRef<'data>>(
    dll: &PeFile<'data, Pe, R>,
    class: &str,
    file: Option<&File>,
) -> Result<PeInfo, PeError> {
    let data = dll.data();
    let len = data.len().unwrap_or(0);
    let bad = |e: object::read::Error| PeError::Malformed(e.to_string());
    let mut info = PeInfo {
        class: class.to_owned(),
        machine: machine_name(dll.nt_headers().file_header().machine.get(LE)),
        ..PeInfo::default()
    };
    let sections = dll.section_table();
    // A file cut short keeps its headers; its sections then end beyond it.
    for section in sections.iter() {
        let (offset, size) = section.pe_file_range();
        let end = u64::from(offset) + u64::from(size);
        if end > len {
            return Err(PeError::Truncated(format!(
                "section {} ends at byte {end}, the file has {len}",
                String::from_utf8_lossy(section.raw_name()),
            )));
        }
    }
    if let Some(table) = dll.import_table().map_err(bad)? {
        let mut descriptors = table.descriptors().map_err(bad)?;
        while let Some(descriptor) = descriptors.next().map_err(bad)? {
            let name = table.name(descriptor.name.get(LE)).map_err(bad)?;
            info.imports
                .push(String::from_utf8_lossy(name).into_owned());
        }
    }
    if let Some(table) = dll.delay_load_import_table().map_err(bad)? {
        let mut descriptors = table.descriptors().map_err(bad)?;
        while let Some(descriptor) = descriptors.next().map_err(bad)? {
            let name = table.name(descriptor.dll_name_rva.get(LE)).map_err(bad)?;
            info.delay_imports
                .push(String::from_utf8_lossy(name).into_owned());
        }
    }
    // The export directory names the DLL itself (`cudnn_cnn_infer64_8.dll`): not a dependency.
    let mut own_name = None;
    if let Some(table) = dll.export_table().map_err(bad)? {
        info.exports = table.name_pointers().len();
        own_name = table
            .name_from_pointer(table.directory().name.get(LE))
            .ok()
            .map(|n| String::from_utf8_lossy(n).into_owned());
    }
    let directories = dll.data_directories();
    if let Some(resources) = directories
        .resource_directory(data, &sections)
        .map_err(bad)?
    {
        let fixed = version::read(resources, &sections, data);
        info.file_version = fixed.file_version;
        info.product_version = fixed.product_version;
    }
    let mut runtime = Vec::new();
    for section in sections.iter() {
        let name = section.raw_name();
        if name.starts_with(FATBIN_SECTION) {
            let Ok(bytes) = section.pe_data(data) else {
                continue;
            };
            let scan = fatbin::scan(bytes);
            (info.sass, info.ptx) = fatbin::architectures(&scan.entries);
            info.kernel_free = fatbin::kernel_free(&scan.entries);
            info.fatbin_problem = scan.error.map(|e| e.to_string());
        } else if name == b".rdata" {
            let (offset, size) = section.pe_file_range();
            let from_file = file.filter(|_| image::is_mapped(size)).map(|f| {
                names::collect_dll_names_from_file(f, offset.into(), size.into(), &mut runtime)
            });
            if !matches!(from_file, Some(Ok(()))) {
                if let Ok(bytes) = section.pe_data(data) {
                    names::collect_dll_names(bytes, &mut runtime);
                }
            }
        }
    }
    let own = |n: &String| {
        own_name.as_ref().is_some_and(|o| o.eq_ignore_ascii_case(n))
            || info.imports.iter().any(|i| i.eq_ignore_ascii_case(n))
            || info.delay_imports.iter().any(|i| i.eq_ignore_ascii_case(n))
    };
    runtime.retain(|n| !own(n));
    // Case-insensitively, as Windows names files, without a lower-case copy per comparison.
    fn lower(s: &str) -> impl Iterator<Item = u8> + '_ {
        s.bytes().map(|c| c.to_ascii_lowercase())
    }
    runtime.sort_unstable_by(|a, b| lower(a).cmp(lower(b)));
    runtime.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
    info.runtime_names = runtime;
    Ok(info)
}

/// The name of a COFF machine, as [`crate::elf`] names the same machine.
pub fn machine_name(machine: pe::Machine) -> String {
    match machine {
        pe::IMAGE_FILE_MACHINE_AMD64 => "x86_64".into(),
        pe::IMAGE_FILE_MACHINE_I386 => "i386".into(),
        pe::IMAGE_FILE_MACHINE_ARM64 => "aarch64".into(),
        pe::IMAGE_FILE_MACHINE_ARMNT => "arm".into(),
        other => format!("machine_{:#06x}", other.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_file_that_is_not_pe_says_so() {
        assert!(matches!(
            read_bytes(b"\x7fELF\x02\x01"),
            Err(PeError::NotPe)
        ));
        assert!(matches!(read_bytes(b"M"), Err(PeError::Truncated(_))));
        assert!(read_bytes(b"MZ\0\0").is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let _ = read_bytes(&bytes);
        }

        #[test]
        fn arbitrary_bytes_after_a_pe_header_never_panic(
            tail in proptest::collection::vec(any::<u8>(), 0..4096),
            at in 0usize..512,
        ) {
            let mut bytes = b"MZ".to_vec();
            bytes.resize(0x40, 0);
            bytes[0x3c] = 0x40;
            bytes.extend_from_slice(b"PE\0\0");
            bytes.extend_from_slice(&tail);
            let len = bytes.len();
            if len > 0 {
                bytes[at % len] ^= 0xff;
            }
            let _ = read_bytes(&bytes);
        }
    }
}
