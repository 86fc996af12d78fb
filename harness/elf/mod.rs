//! Reading a shared object without loading it: identity, dynamic section, symbol versions,
//! names opened at run time, and the GPU architectures in its `.nv_fatbin`.
//!
//! Owns the ELF side (headers, `DT_*` entries, `.gnu.version_r`/`.gnu.version_d`); fatbinary
//! containers are in [`fatbin`], run-time library names in [`dlopen`], a library's own banner
//! (NCCL's version and CUDA) in [`banner`]. Every read is
//! bounds-checked: arbitrary bytes give an [`ElfError`], never a panic.

pub mod banner;
mod budgeted;
pub mod dlopen;
pub mod fatbin;
pub(crate) mod file;
pub(crate) mod window;

pub(crate) use file::open_regular;

use crate::model::{BuiltFor, VersionNeed};
use object::elf;
use object::read::elf::{Dyn, FileHeader, ProgramHeader, SectionHeader, SectionTable};
use object::read::{ReadRef, StringTable};
use object::Endianness;
use std::fs::File;
use std::ops::Range;
use std::path::Path;
use window::Window;

/// Name of the section holding fatbinary containers.
pub(crate) const FATBIN_SECTION: &[u8] = b".nv_fatbin";
/// x86-64's large-model data sections, where a library too big for the small code model keeps
/// its fatbinary containers (cuFFT for CUDA 13: 286 MB, nearly all of it `.ldata`).
const LARGE_DATA_SECTIONS: [&[u8]; 2] = [b".ldata", b".lrodata"];

/// What a shared object says about itself, read from its bytes alone.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ElfInfo {
    /// `ELF32` or `ELF64`.
    pub class: String,
    /// `x86_64`, `i386`, `aarch64`, ...
    pub machine: String,
    pub soname: Option<String>,
    pub needed: Vec<String>,
    pub rpath: Vec<String>,
    pub runpath: Vec<String>,
    pub version_needs: Vec<VersionNeed>,
    pub version_defs: Vec<String>,
    /// Library names in read-only data: what it may `dlopen` at run time.
    pub dlopen_names: Vec<String>,
    /// SASS targets (`sm_90`), sorted, unique.
    pub sass: Vec<String>,
    /// PTX targets (`compute_90`), sorted, unique.
    pub ptx: Vec<String>,
    /// Why `.nv_fatbin` could not be read to its end; `sass` and `ptx` hold what came before.
    pub fatbin_problem: Option<String>,
    /// Its GPU code holds no kernel at all (see [`fatbin::kernel_free`]).
    pub kernel_free: bool,
    /// NCCL's version and the CUDA it was built for, from its banner (read for `libnccl*` only).
    pub built_for: Option<BuiltFor>,
}

/// Why a file could not be read as a shared object.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// Not a regular file (a FIFO, a device), or larger than any library: never read.
    #[error("{0}")]
    Refused(crate::hostfs::ReadError),
    #[error("not an ELF file")]
    NotElf,
    #[error("truncated ELF file: {0}")]
    Truncated(String),
    #[error("malformed ELF file: {0}")]
    Malformed(String),
}

/// Reads a shared object from its bytes.
pub fn read_bytes(bytes: &[u8]) -> Result<ElfInfo, ElfError> {
    let class = check_ident(bytes)?;
    with_aligned(bytes, |data| match class {
        Class::Elf32 => read_elf::<elf::FileHeader32<Endianness>, _>(data, Contents::Slice(data)),
        Class::Elf64 => read_elf::<elf::FileHeader64<Endianness>, _>(data, Contents::Slice(data)),
    })
}

/// Reads a shared object from a file by positioned reads of the parts it needs: its structure
/// within [`budgeted::HEADERS`], its contents a [`Window`] at a time. What it holds does not
/// grow with the file's size, and another user truncating the file meanwhile makes it an error
/// for that file, never a signal.
pub fn read_path(path: &Path) -> Result<ElfInfo, ElfError> {
    with_file(path, |class, structure, contents| match class {
        Class::Elf32 => read_elf::<elf::FileHeader32<Endianness>, _>(structure, contents),
        Class::Elf64 => read_elf::<elf::FileHeader64<Endianness>, _>(structure, contents),
    })
}

/// The walk over the `.nv_fatbin` section of the shared object at `path` (empty without one):
/// its headers and entry headers only, by positioned reads.
pub(crate) fn read_fatbin_section(path: &Path) -> Result<fatbin::FatbinScan, ElfError> {
    fn scan<'data, Elf: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
        structure: R,
        contents: Contents<'_>,
    ) -> Result<fatbin::FatbinScan, ElfError> {
        let range = Headers::<Elf, R>::parse(structure)?.section_range(FATBIN_SECTION)?;
        Ok(range
            .and_then(|range| contents.window(range))
            .map(|mut section| fatbin::scan_window(&mut section))
            .unwrap_or_default())
    }
    with_file(path, |class, structure, contents| match class {
        Class::Elf32 => scan::<elf::FileHeader32<Endianness>, _>(structure, contents),
        Class::Elf64 => scan::<elf::FileHeader64<Endianness>, _>(structure, contents),
    })
}

/// Opens the shared object at `path` and gives `read` its class, its structure (read as the
/// `object` crate asks, within [`budgeted::HEADERS`]) and its contents; a structure that asks
/// for more is [`ElfError::Malformed`], said so.
fn with_file<T>(
    path: &Path,
    read: impl FnOnce(Class, &budgeted::Budgeted<'_>, Contents<'_>) -> Result<T, ElfError>,
) -> Result<T, ElfError> {
    let (file, len) = file::open_regular(path)?;
    let only_ours = file::only_ours_to_change(path);
    let _share = crate::hostfs::share(window::MOST_HELD as u64 + budgeted::HEADERS);
    let mut ident = vec![0; usize::try_from(len.min(64)).unwrap_or(64)];
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut ident, 0).map_err(|source| {
        ElfError::Io {
            path: path.to_path_buf(),
            source,
        }
    })?;
    let class = check_ident(&ident)?;
    let structure = budgeted::Budgeted::new(&file, len);
    read(class, &structure, Contents::File(&file, only_ours)).map_err(|error| {
        match structure.refused() {
            true => ElfError::Malformed(format!(
                "its headers, dynamic section and symbol versions ask for more than the {} MiB \
             that any library's take",
                budgeted::HEADERS >> 20
            )),
            false => error,
        }
    })
}

/// Where a library's contents are read from: the bytes in hand, or its file (and whether only
/// we or root can change it, so that it may be mapped).
#[derive(Clone, Copy)]
enum Contents<'a> {
    Slice(&'a [u8]),
    File(&'a File, bool),
}

impl<'a> Contents<'a> {
    /// `range` of the contents, a window at a time; `None` when the range is not inside them.
    fn window(self, range: Range<usize>) -> Option<Window<'a>> {
        match self {
            Contents::Slice(bytes) => bytes.get(range).map(Window::slice),
            Contents::File(file, only_ours) => Some(Window::file(file, range, only_ours)),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Class {
    Elf32,
    Elf64,
}

/// Checks the identification bytes and that the file header fits.
fn check_ident(bytes: &[u8]) -> Result<Class, ElfError> {
    if bytes.is_empty() {
        return Err(ElfError::Truncated("empty file".into()));
    }
    if !bytes.starts_with(&elf::ELFMAG) {
        if bytes.len() < elf::ELFMAG.len() && elf::ELFMAG.starts_with(bytes) {
            return Err(ElfError::Truncated(format!(
                "{} bytes, shorter than the ELF magic",
                bytes.len()
            )));
        }
        return Err(ElfError::NotElf);
    }
    let ident = |i: usize| bytes.get(i).copied();
    let (Some(class), Some(encoding), Some(version)) = (ident(4), ident(5), ident(6)) else {
        return Err(ElfError::Truncated(format!(
            "{} bytes, shorter than the ELF identification",
            bytes.len()
        )));
    };
    let (class, header_len, name) = match class {
        1 => (Class::Elf32, 52, "ELF32"),
        2 => (Class::Elf64, 64, "ELF64"),
        other => return Err(ElfError::Malformed(format!("unknown ELF class {other}"))),
    };
    if !matches!(encoding, 1 | 2) {
        return Err(ElfError::Malformed(format!(
            "unknown data encoding {encoding}"
        )));
    }
    if version != 1 {
        return Err(ElfError::Malformed(format!(
            "unsupported ELF version {version}"
        )));
    }
    if bytes.len() < header_len {
        return Err(ElfError::Truncated(format!(
            "{} bytes, shorter than the {header_len}-byte {name} header",
            bytes.len()
        )));
    }
    Ok(class)
}

/// Runs `f` on `bytes`, copied first into an 8-byte aligned buffer if they are not aligned
/// (the `object` crate reads headers in place and needs their natural alignment).
pub(crate) fn with_aligned<T>(bytes: &[u8], f: impl FnOnce(&[u8]) -> T) -> T {
    if (bytes.as_ptr() as usize) % 8 == 0 {
        return f(bytes);
    }
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    let buf = object::pod::bytes_of_slice_mut(&mut words);
    match buf.get_mut(..bytes.len()) {
        Some(buf) => {
            buf.copy_from_slice(bytes);
            f(buf)
        }
        None => f(bytes),
    }
}

fn malformed(error: object::read::Error) -> ElfError {
    ElfError::Malformed(error.to_string())
}

/// The file header, program headers and section table, checked to lie inside the file.
struct Headers<'data, Elf: FileHeader<Endian = Endianness>, R: ReadRef<'data>> {
    data: R,
    endian: Endianness,
    header: &'data Elf,
    segments: &'data [Elf::ProgramHeader],
    sections: SectionTable<'data, Elf, R>,
}

impl<'data, Elf: FileHeader<Endian = Endianness>, R: ReadRef<'data>> Headers<'data, Elf, R> {
    fn parse(data: R) -> Result<Self, ElfError> {
        let header = Elf::parse(data).map_err(malformed)?;
        let endian = header.endian().map_err(malformed)?;
        let len = data
            .len()
            .map_err(|()| ElfError::Malformed("its length cannot be read".into()))?;
        let table_end = |offset: u64, count: u16, entsize: u16| {
            u64::from(count)
                .checked_mul(u64::from(entsize))
                .and_then(|size| offset.checked_add(size))
        };
        let phoff: u64 = header.e_phoff(endian).into();
        if phoff != 0 && header.e_phnum(endian) != 0 {
            match table_end(phoff, header.e_phnum(endian), header.e_phentsize(endian)) {
                Some(end) if end <= len => {}
                Some(end) => {
                    return Err(ElfError::Truncated(format!(
                        "program headers end at byte {end}, past the end of the {len}-byte file"
                    )))
                }
                None => return Err(ElfError::Malformed("program header table overflows".into())),
            }
        }
        let shoff: u64 = header.e_shoff(endian).into();
        if shoff != 0 {
            // With e_shnum 0 the count is in section 0, which must at least be there.
            let count = header.e_shnum(endian).max(1);
            match table_end(shoff, count, header.e_shentsize(endian)) {
                Some(end) if end <= len => {}
                Some(end) => {
                    return Err(ElfError::Truncated(format!(
                        "section headers end at byte {end}, past the end of the {len}-byte file"
                    )))
                }
                None => return Err(ElfError::Malformed("section header table overflows".into())),
            }
        }
        let segments = header.program_headers(endian, data).map_err(malformed)?;
        let sections = header.sections(endian, data).map_err(malformed)?;
        for (index, section) in sections.enumerate() {
            if section.sh_type(endian) == elf::SHT_NULL {
                continue;
            }
            let Some((offset, size)) = section.file_range(endian) else {
                continue;
            };
            let Some(end) = offset.checked_add(size) else {
                return Err(ElfError::Malformed(format!(
                    "section {} size overflows",
                    index.0
                )));
            };
            if end > len {
                let name = sections
                    .section_name(endian, section)
                    .map(|n| String::from_utf8_lossy(n).into_owned())
                    .unwrap_or_else(|_| format!("#{}", index.0));
                return Err(ElfError::Truncated(format!(
                    "section {name} ends at byte {end}, past the end of the {len}-byte file"
                )));
            }
        }
        for (index, segment) in segments.iter().enumerate() {
            let (offset, size) = segment.file_range(endian);
            let Some(end) = offset.checked_add(size) else {
                return Err(ElfError::Malformed(format!(
                    "segment {index} size overflows"
                )));
            };
            if end > len {
                return Err(ElfError::Truncated(format!(
                    "segment {index} ends at byte {end}, past the end of the {len}-byte file"
                )));
            }
        }
        Ok(Headers {
            data,
            endian,
            header,
            segments,
            sections,
        })
    }

    fn section_name(&self, section: &Elf::SectionHeader) -> Result<&'data [u8], ElfError> {
        self.sections
            .section_name(self.endian, section)
            .map_err(malformed)
    }

    fn section_range(&self, name: &[u8]) -> Result<Option<Range<usize>>, ElfError> {
        for section in self.sections.iter() {
            if self.section_name(section)? != name {
                continue;
            }
            let Some((offset, size)) = section.file_range(self.endian) else {
                return Ok(None);
            };
            return Ok(to_range(offset, size));
        }
        Ok(None)
    }

    /// The file range holding `size` bytes at virtual address `addr` (to the end of its
    /// segment when `size` is `None`).
    fn address_range(&self, addr: u64, size: Option<u64>) -> Option<Range<usize>> {
        let endian = self.endian;
        self.segments
            .iter()
            .filter(|s| s.p_type(endian) == elf::PT_LOAD)
            .find_map(|s| {
                let vaddr: u64 = s.p_vaddr(endian).into();
                let filesz: u64 = s.p_filesz(endian).into();
                let within = addr.checked_sub(vaddr).filter(|&d| d < filesz)?;
                let available = filesz - within;
                let size = size.unwrap_or(available);
                if size > available {
                    return None;
                }
                let offset: u64 = s.p_offset(endian).into();
                let offset = offset.checked_add(within)?;
                to_range(offset, size)
            })
    }

    /// The dynamic entries and their string table: from the `SHT_DYNAMIC` section, or from
    /// `PT_DYNAMIC` when the section headers are gone.
    fn dynamic(&self) -> Result<Option<Dynamic<'data, Elf::Dyn, R>>, ElfError> {
        let endian = self.endian;
        if let Some((dyns, link)) = self
            .sections
            .dynamic(endian, self.data)
            .map_err(malformed)?
        {
            let strings = self
                .sections
                .strings(endian, self.data, link)
                .map_err(malformed)?;
            return Ok(Some(Dynamic { dyns, strings }));
        }
        for segment in self.segments {
            let Some(dyns) = segment.dynamic(endian, self.data).map_err(malformed)? else {
                continue;
            };
            let value = |tag| {
                dyns.iter()
                    .take_while(|d| d.tag(endian) != elf::DT_NULL)
                    .find(|d| d.tag(endian) == tag)
                    .map(|d| d.val(endian))
            };
            let strings = match (value(elf::DT_STRTAB), value(elf::DT_STRSZ)) {
                (Some(addr), Some(size)) => {
                    let range = self.address_range(addr, Some(size)).ok_or_else(|| {
                        ElfError::Malformed("DT_STRTAB is outside every loaded segment".into())
                    })?;
                    StringTable::new(self.data, range.start as u64, range.end as u64)
                }
                _ => StringTable::default(),
            };
            return Ok(Some(Dynamic { dyns, strings }));
        }
        Ok(None)
    }

    /// File ranges of read-only, non-executable data: where `dlopen` names are kept.
    fn read_only_data(&self) -> Result<Vec<Range<usize>>, ElfError> {
        let endian = self.endian;
        let mut out = Vec::new();
        if self.sections.is_empty() {
            for segment in self.segments {
                let flags = segment.p_flags(endian).0;
                if segment.p_type(endian) == elf::PT_LOAD
                    && flags & elf::PF_R.0 != 0
                    && flags & (elf::PF_W.0 | elf::PF_X.0) == 0
                {
                    let (offset, size) = segment.file_range(endian);
                    out.extend(to_range(offset, size));
                }
            }
            return Ok(out);
        }
        for section in self.sections.iter() {
            let flags = section.sh_flags(endian).0;
            if section.sh_type(endian) != elf::SHT_PROGBITS
                || flags & elf::SHF_ALLOC.0 == 0
                || flags & (elf::SHF_WRITE.0 | elf::SHF_EXECINSTR.0) != 0
            {
                continue;
            }
            let name = self.section_name(section)?;
            let skip = [
                FATBIN_SECTION,
                b"__nv_relfatbin",
                b".nvFatBinSegment",
                b".dynstr",
                b".dynsym",
                b".gnu.version",
                b".eh_frame",
            ];
            if skip.iter().any(|prefix| name.starts_with(prefix)) {
                continue;
            }
            if let Some((offset, size)) = section.file_range(endian) {
                out.extend(to_range(offset, size));
            }
        }
        Ok(out)
    }

    /// Contents, string table and entry count of the section of type `kind`.
    fn version_section(
        &self,
        kind: elf::SectionType,
    ) -> Result<Option<VersionSection<'data, R>>, ElfError> {
        let endian = self.endian;
        let Some(section) = self.sections.iter().find(|s| s.sh_type(endian) == kind) else {
            return Ok(None);
        };
        let bytes = section.data(endian, self.data).map_err(malformed)?;
        let strings = self
            .sections
            .strings(endian, self.data, section.link(endian))
            .map_err(malformed)?;
        Ok(Some(VersionSection {
            bytes,
            strings,
            count: section.sh_info(endian),
        }))
    }
}

/// Dynamic entries and the string table their string values point into.
struct Dynamic<'data, D, R: ReadRef<'data>> {
    dyns: &'data [D],
    strings: StringTable<'data, R>,
}

/// A symbol-version section (or its `DT_VER*` equivalent): bytes, strings, record count.
#[derive(Clone, Copy)]
struct VersionSection<'data, R: ReadRef<'data>> {
    bytes: &'data [u8],
    strings: StringTable<'data, R>,
    count: u32,
}

/// Most bytes of symbol-version records read through the dynamic entries, where no section
/// says where they end (a library's are a few kilobytes).
const VERSIONS_WITHOUT_SECTIONS: usize = 1 << 20;

fn to_range(offset: u64, size: u64) -> Option<Range<usize>> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(size).ok()?)?;
    Some(start..end)
}

fn read_elf<'data, Elf: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
    data: R,
    contents: Contents<'_>,
) -> Result<ElfInfo, ElfError> {
    let headers = Headers::<Elf, R>::parse(data)?;
    let endian = headers.endian;
    let big = matches!(endian, Endianness::Big);
    let mut info = ElfInfo {
        class: if headers.header.is_type_64() {
            "ELF64"
        } else {
            "ELF32"
        }
        .to_owned(),
        machine: machine_name(headers.header.e_machine(endian).0, big),
        ..ElfInfo::default()
    };

    // Dynamic section.
    let mut verneed: Option<(u64, u32)> = None;
    let mut verdef: Option<(u64, u32)> = None;
    let mut dynstr = StringTable::default();
    if let Some(Dynamic { dyns, strings }) = headers.dynamic()? {
        dynstr = strings;
        let string = |val: u64| -> Result<String, ElfError> {
            u32::try_from(val)
                .ok()
                .and_then(|offset| strings.get(offset).ok())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .ok_or_else(|| {
                    ElfError::Malformed(format!("dynamic string offset {val} is out of range"))
                })
        };
        let split = |s: String| s.split(':').map(str::to_owned).collect::<Vec<_>>();
        let count = |val: u64| u32::try_from(val).unwrap_or(u32::MAX);
        for d in dyns {
            let tag = d.tag(endian);
            let val = d.val(endian);
            match tag {
                elf::DT_NULL => break,
                elf::DT_SONAME => info.soname = Some(string(val)?),
                elf::DT_NEEDED => info.needed.push(string(val)?),
                elf::DT_RPATH => info.rpath.extend(split(string(val)?)),
                elf::DT_RUNPATH => info.runpath.extend(split(string(val)?)),
                elf::DT_VERNEED => verneed = Some((val, verneed.map_or(0, |v| v.1))),
                elf::DT_VERNEEDNUM => verneed = Some((verneed.map_or(0, |v| v.0), count(val))),
                elf::DT_VERDEF => verdef = Some((val, verdef.map_or(0, |v| v.1))),
                elf::DT_VERDEFNUM => verdef = Some((verdef.map_or(0, |v| v.0), count(val))),
                _ => {}
            }
        }
    }

    // Symbol versions: from the sections, or through the dynamic entries without them.
    let from_dynamic = |entry: Option<(u64, u32)>| {
        entry
            .filter(|&(addr, _)| addr != 0)
            .and_then(|(addr, count)| {
                let range = headers.address_range(addr, None)?;
                let size = range.len().min(VERSIONS_WITHOUT_SECTIONS);
                Some(VersionSection {
                    bytes: data.read_bytes_at(range.start as u64, size as u64).ok()?,
                    strings: dynstr,
                    count,
                })
            })
    };
    let needs = match headers.version_section(elf::SHT_GNU_VERNEED)? {
        Some(found) => Some(found),
        None if headers.sections.is_empty() => from_dynamic(verneed),
        None => None,
    };
    if let Some(v) = needs {
        info.version_needs = parse_verneed(v.bytes, v.strings, v.count, big)?;
    }
    let defs = match headers.version_section(elf::SHT_GNU_VERDEF)? {
        Some(found) => Some(found),
        None if headers.sections.is_empty() => from_dynamic(verdef),
        None => None,
    };
    if let Some(v) = defs {
        info.version_defs = parse_verdef(v.bytes, v.strings, v.count, big)?;
    }

    // Names opened at run time, less the static dependencies and the library itself; NCCL's
    // banner.
    let nccl = info
        .soname
        .as_deref()
        .is_some_and(|s| s.starts_with("libnccl"));
    let mut names = Vec::new();
    for range in headers.read_only_data()? {
        let Some(mut window) = contents.window(range) else {
            continue;
        };
        window.chunks(dlopen::CONTEXT, |bytes, own| {
            dlopen::collect_library_names(bytes, own, &mut names);
            if nccl && info.built_for.is_none() {
                info.built_for = banner::nccl(bytes, own);
            }
        });
    }
    names.retain(|n| !info.needed.contains(n) && info.soname.as_ref() != Some(n));
    names.sort_unstable();
    names.dedup();
    info.dlopen_names = names;

    // GPU code.
    let mut entries = Vec::new();
    if let Some(mut section) = headers
        .section_range(FATBIN_SECTION)?
        .and_then(|range| contents.window(range))
    {
        let scan = fatbin::scan_window(&mut section);
        entries = scan.entries;
        info.fatbin_problem = scan.error.map(|e| e.to_string());
    }
    for name in LARGE_DATA_SECTIONS {
        if let Some(mut section) = headers
            .section_range(name)?
            .and_then(|range| contents.window(range))
        {
            entries.extend(fatbin::scan_embedded_window(&mut section).entries);
        }
    }
    (info.sass, info.ptx) = fatbin::architectures(&entries);
    info.kernel_free = fatbin::kernel_free(&entries);
    Ok(info)
}

/// The name of an `e_machine` value.
pub(crate) fn machine_name(machine: u16, big_endian: bool) -> String {
    match elf::Machine(machine) {
        elf::EM_X86_64 => "x86_64".into(),
        elf::EM_386 => "i386".into(),
        elf::EM_AARCH64 => "aarch64".into(),
        elf::EM_ARM => "arm".into(),
        elf::EM_PPC64 if big_endian => "ppc64".into(),
        elf::EM_PPC64 => "ppc64le".into(),
        elf::EM_RISCV => "riscv".into(),
        _ => format!("machine_{machine}"),
    }
}

/// Endian-aware bounds-checked reads for the version sections.
struct Reader<'a> {
    data: &'a [u8],
    big: bool,
}

impl Reader<'_> {
    fn bytes<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        self.data
            .get(offset..offset.checked_add(N)?)?
            .try_into()
            .ok()
    }

    fn u16(&self, offset: usize) -> Result<u16, ElfError> {
        let b = self.bytes::<2>(offset).ok_or_else(|| short(offset))?;
        Ok(if self.big {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    }

    fn u32(&self, offset: usize) -> Result<u32, ElfError> {
        let b = self.bytes::<4>(offset).ok_or_else(|| short(offset))?;
        Ok(if self.big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }
}

fn short(offset: usize) -> ElfError {
    ElfError::Malformed(format!(
        "symbol version record at offset {offset} runs past its section"
    ))
}

fn version_string<'data, R: ReadRef<'data>>(
    strings: StringTable<'data, R>,
    offset: u32,
) -> Result<String, ElfError> {
    strings
        .get(offset)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .map_err(|()| {
            ElfError::Malformed(format!("version string offset {offset} is out of range"))
        })
}

/// Advances `pos` by a record's `next` field; records are at least `min` bytes apart.
fn advance(pos: usize, next: u32, min: u32) -> Result<usize, ElfError> {
    if next < min {
        return Err(ElfError::Malformed(format!(
            "symbol version record at offset {pos} links {next} bytes ahead"
        )));
    }
    pos.checked_add(next as usize).ok_or_else(|| short(pos))
}

/// Parses `.gnu.version_r`: for each file, the version names needed from it.
/// `count` is the number of records (`sh_info`); 0 means "follow the links to the end".
fn parse_verneed<'data, R: ReadRef<'data>>(
    data: &[u8],
    strings: StringTable<'data, R>,
    count: u32,
    big: bool,
) -> Result<Vec<VersionNeed>, ElfError> {
    const VERNEED_LEN: u32 = 16;
    const VERNAUX_LEN: u32 = 16;
    let r = Reader { data, big };
    let mut out = Vec::new();
    let mut pos = 0usize;
    // Each record takes 16 bytes of the section: more than that is a loop through shared
    // records, which would otherwise cost quadratic time.
    let mut budget = data.len() / 16;
    while !data.is_empty() && (count == 0 || out.len() < count as usize) {
        let cnt = r.u16(pos.saturating_add(2))?;
        budget = budget.checked_sub(1 + usize::from(cnt)).ok_or_else(|| {
            ElfError::Malformed("more symbol version records than fit in .gnu.version_r".into())
        })?;
        let file = version_string(strings, r.u32(pos.saturating_add(4))?)?;
        let aux = r.u32(pos.saturating_add(8))?;
        let next = r.u32(pos.saturating_add(12))?;
        let mut versions = Vec::new();
        let mut a = pos.checked_add(aux as usize).ok_or_else(|| short(pos))?;
        for i in 0..cnt {
            versions.push(version_string(strings, r.u32(a.saturating_add(8))?)?);
            let anext = r.u32(a.saturating_add(12))?;
            if anext == 0 || i + 1 == cnt {
                break;
            }
            a = advance(a, anext, VERNAUX_LEN)?;
        }
        out.push(VersionNeed { file, versions });
        if next == 0 {
            break;
        }
        pos = advance(pos, next, VERNEED_LEN)?;
    }
    Ok(out)
}

/// Parses `.gnu.version_d`: the version names defined, without the base (the soname) entry.
fn parse_verdef<'data, R: ReadRef<'data>>(
    data: &[u8],
    strings: StringTable<'data, R>,
    count: u32,
    big: bool,
) -> Result<Vec<String>, ElfError> {
    const VERDEF_LEN: u32 = 20;
    let r = Reader { data, big };
    let mut out = Vec::new();
    let mut seen = 0usize;
    let mut pos = 0usize;
    while !data.is_empty() && (count == 0 || seen < count as usize) {
        let flags = r.u16(pos.saturating_add(2))?;
        let cnt = r.u16(pos.saturating_add(6))?;
        let aux = r.u32(pos.saturating_add(12))?;
        let next = r.u32(pos.saturating_add(16))?;
        seen += 1;
        if cnt > 0 && flags & elf::VER_FLG_BASE.0 == 0 {
            let a = pos.checked_add(aux as usize).ok_or_else(|| short(pos))?;
            out.push(version_string(strings, r.u32(a)?)?);
        }
        if next == 0 {
            break;
        }
        pos = advance(pos, next, VERDEF_LEN)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    /// Builds small shared objects: header, PT_LOAD + PT_DYNAMIC, `.dynstr`, `.dynamic`,
    /// `.gnu.version_r`, `.gnu.version_d`, `.rodata`, `.nv_fatbin`, `.shstrtab`.
    /// Addresses equal file offsets.
    struct Builder {
        is64: bool,
        big: bool,
        out: Vec<u8>,
    }

    struct Sh {
        name: &'static str,
        kind: u32,
        flags: u64,
        offset: usize,
        size: usize,
        link: u32,
        info: u32,
        entsize: u64,
    }

    impl Builder {
        fn u16(&mut self, v: u16) {
            let b = if self.big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            };
            self.out.extend_from_slice(&b);
        }
        fn u32(&mut self, v: u32) {
            let b = if self.big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            };
            self.out.extend_from_slice(&b);
        }
        fn word(&mut self, v: u64) {
            if self.is64 {
                let b = if self.big {
                    v.to_be_bytes()
                } else {
                    v.to_le_bytes()
                };
                self.out.extend_from_slice(&b);
            } else {
                self.u32(v as u32);
            }
        }
        fn align(&mut self) {
            self.out.resize(self.out.len().next_multiple_of(8), 0);
        }
    }

    struct Strings(Vec<u8>);

    impl Strings {
        fn add(&mut self, s: &str) -> u32 {
            let at = self.0.len() as u32;
            self.0.extend_from_slice(s.as_bytes());
            self.0.push(0);
            at
        }
    }

    const SONAME: &str = "libself.so.1";

    fn build(is64: bool, big: bool) -> Vec<u8> {
        let mut b = Builder {
            is64,
            big,
            out: Vec::new(),
        };
        let (ehsize, phentsize, shentsize) = if is64 { (64, 56, 64) } else { (52, 32, 40) };
        let phoff = ehsize;
        let phnum = 2;
        let mut dynstr = Strings(vec![0]);
        let soname = dynstr.add(SONAME);
        let libc = dynstr.add("libc.so.6");
        let libm = dynstr.add("libm.so.6");
        let runpath = dynstr.add("$ORIGIN:$ORIGIN/../lib:");
        let rpath = dynstr.add("/opt/x");
        let glibc_225 = dynstr.add("GLIBC_2.2.5");
        let glibc_214 = dynstr.add("GLIBC_2.14");
        let glibc_229 = dynstr.add("GLIBC_2.29");
        let v1 = dynstr.add("LIBSELF_1.0");
        let v2 = dynstr.add("LIBSELF_2.0");

        // Body, after the header and program headers.
        b.out.resize(phoff + phentsize * phnum, 0);
        b.align();
        let mut sections = Vec::new();
        let dynstr_off = b.out.len();
        b.out.extend_from_slice(&dynstr.0);
        sections.push(Sh {
            name: ".dynstr",
            kind: 3,
            flags: 2,
            offset: dynstr_off,
            size: dynstr.0.len(),
            link: 0,
            info: 0,
            entsize: 0,
        });
        b.align();

        let verneed_off = b.out.len();
        // libc.so.6: two versions; libm.so.6: one.
        for (file, versions, last) in [
            (libc, vec![glibc_225, glibc_214], false),
            (libm, vec![glibc_229], true),
        ] {
            b.u16(1);
            b.u16(versions.len() as u16);
            b.u32(file);
            b.u32(16);
            b.u32(if last {
                0
            } else {
                16 + 16 * versions.len() as u32
            });
            for (i, name) in versions.iter().enumerate() {
                b.u32(0);
                b.u16(0);
                b.u16(2 + i as u16);
                b.u32(*name);
                b.u32(if i + 1 == versions.len() { 0 } else { 16 });
            }
        }
        sections.push(Sh {
            name: ".gnu.version_r",
            kind: 0x6fff_fffe,
            flags: 2,
            offset: verneed_off,
            size: b.out.len() - verneed_off,
            link: 1,
            info: 2,
            entsize: 0,
        });
        b.align();

        let verdef_off = b.out.len();
        // Base (the soname), LIBSELF_1.0, LIBSELF_2.0 (with its parent as a second aux).
        for (i, (flags, names)) in [(1u16, vec![soname]), (0, vec![v1]), (0, vec![v2, v1])]
            .iter()
            .enumerate()
        {
            b.u16(1);
            b.u16(*flags);
            b.u16(i as u16 + 1);
            b.u16(names.len() as u16);
            b.u32(0);
            b.u32(20);
            b.u32(if i == 2 {
                0
            } else {
                20 + 8 * names.len() as u32
            });
            for (j, name) in names.iter().enumerate() {
                b.u32(*name);
                b.u32(if j + 1 == names.len() { 0 } else { 8 });
            }
        }
        sections.push(Sh {
            name: ".gnu.version_d",
            kind: 0x6fff_fffd,
            flags: 2,
            offset: verdef_off,
            size: b.out.len() - verdef_off,
            link: 1,
            info: 3,
            entsize: 0,
        });
        b.align();

        let rodata_off = b.out.len();
        b.out.extend_from_slice(
            b"fmt\0libcuda.so.1\0libnvrtc.so\0libfoo_%s.so\0libc.so.6\0libself.so.1\0/x/liby.so\0NCCL version 2.27.5+cuda12.9\0",
        );
        sections.push(Sh {
            name: ".rodata",
            kind: 1,
            flags: 2,
            offset: rodata_off,
            size: b.out.len() - rodata_off,
            link: 0,
            info: 0,
            entsize: 0,
        });
        b.align();

        let fatbin_off = b.out.len();
        b.out.extend(fatbin::tests::container(&[
            fatbin::tests::sass(80),
            fatbin::tests::ptx(90),
        ]));
        sections.push(Sh {
            name: ".nv_fatbin",
            kind: 1,
            flags: 2,
            offset: fatbin_off,
            size: b.out.len() - fatbin_off,
            link: 0,
            info: 0,
            entsize: 0,
        });
        b.align();

        let dynamic_off = b.out.len();
        let dyns: [(u64, u64); 12] = [
            (1, u64::from(libc)),
            (1, u64::from(libm)),
            (14, u64::from(soname)),
            (29, u64::from(runpath)),
            (15, u64::from(rpath)),
            (5, dynstr_off as u64),
            (10, dynstr.0.len() as u64),
            (0x6fff_fffe, verneed_off as u64),
            (0x6fff_ffff, 2),
            (0x6fff_fffc, verdef_off as u64),
            (0x6fff_fffd, 3),
            (0, 0),
        ];
        for (tag, val) in dyns {
            b.word(tag);
            b.word(val);
        }
        let dynamic_size = b.out.len() - dynamic_off;
        sections.push(Sh {
            name: ".dynamic",
            kind: 6,
            flags: 3,
            offset: dynamic_off,
            size: dynamic_size,
            link: 1,
            info: 0,
            entsize: if is64 { 16 } else { 8 },
        });
        b.align();

        sections.push(Sh {
            name: ".shstrtab",
            kind: 3,
            flags: 0,
            offset: 0,
            size: 0,
            link: 0,
            info: 0,
            entsize: 0,
        });
        let mut shstr = Strings(vec![0]);
        let names: Vec<u32> = sections.iter().map(|s| shstr.add(s.name)).collect();
        let shstr_off = b.out.len();
        b.out.extend_from_slice(&shstr.0);
        if let Some(last) = sections.last_mut() {
            last.offset = shstr_off;
            last.size = shstr.0.len();
        }
        b.align();
        let load_end = b.out.len();

        let shoff = b.out.len();
        let shnum = sections.len() + 1;
        b.out.resize(shoff + shentsize, 0); // SHN_UNDEF
        let all: Vec<_> = sections
            .iter()
            .zip(names)
            .map(|(s, n)| {
                (
                    n, s.kind, s.flags, s.offset, s.size, s.link, s.info, s.entsize,
                )
            })
            .collect();
        for (name, kind, flags, offset, size, link, info, entsize) in all {
            b.u32(name);
            b.u32(kind);
            b.word(flags);
            b.word(offset as u64);
            b.word(offset as u64);
            b.word(size as u64);
            b.u32(link);
            b.u32(info);
            b.word(8);
            b.word(entsize);
        }

        // File header and program headers, written over the reserved space.
        let body = std::mem::take(&mut b.out);
        b.out.extend_from_slice(&elf::ELFMAG);
        b.out
            .extend_from_slice(&[if is64 { 2 } else { 1 }, if big { 2 } else { 1 }, 1]);
        b.out.resize(16, 0);
        b.u16(3); // ET_DYN
        b.u16(if is64 { 62 } else { 3 });
        b.u32(1);
        b.word(0);
        b.word(phoff as u64);
        b.word(shoff as u64);
        b.u32(0);
        b.u16(ehsize as u16);
        b.u16(phentsize as u16);
        b.u16(phnum as u16);
        b.u16(shentsize as u16);
        b.u16(shnum as u16);
        b.u16(shnum as u16 - 1);
        for (kind, offset, size, flags) in [
            (1u32, 0u64, load_end as u64, 4u32),
            (2, dynamic_off as u64, dynamic_size as u64, 4),
        ] {
            b.u32(kind);
            if is64 {
                b.u32(flags);
            }
            b.word(offset);
            b.word(offset);
            b.word(offset);
            b.word(size);
            b.word(size);
            if !is64 {
                b.u32(flags);
            }
            b.word(8);
        }
        let header_len = b.out.len();
        let mut out = b.out;
        out.extend_from_slice(&body[header_len..]);
        out
    }

    /// The same file with its section headers gone (as `sstrip` leaves it).
    fn strip_sections(mut data: Vec<u8>, is64: bool, big: bool) -> Vec<u8> {
        let (shoff_at, shnum_at) = if is64 { (40, 60) } else { (32, 48) };
        let width = if is64 { 8 } else { 4 };
        data[shoff_at..shoff_at + width].fill(0);
        data[shnum_at..shnum_at + 4].fill(0);
        let _ = big;
        data
    }

    fn expected_needs() -> Vec<VersionNeed> {
        vec![
            VersionNeed {
                file: "libc.so.6".into(),
                versions: vec!["GLIBC_2.2.5".into(), "GLIBC_2.14".into()],
            },
            VersionNeed {
                file: "libm.so.6".into(),
                versions: vec!["GLIBC_2.29".into()],
            },
        ]
    }

    #[rstest]
    fn reads_a_built_library(#[values(false, true)] is64: bool, #[values(false, true)] big: bool) {
        let info = read_bytes(&build(is64, big)).unwrap();
        assert_eq!(info.class, if is64 { "ELF64" } else { "ELF32" });
        assert_eq!(info.machine, if is64 { "x86_64" } else { "i386" });
        assert_eq!(info.soname.as_deref(), Some(SONAME));
        assert_eq!(info.needed, ["libc.so.6", "libm.so.6"]);
        assert_eq!(info.runpath, ["$ORIGIN", "$ORIGIN/../lib", ""]);
        assert_eq!(info.rpath, ["/opt/x"]);
        assert_eq!(info.version_needs, expected_needs());
        assert_eq!(info.version_defs, ["LIBSELF_1.0", "LIBSELF_2.0"]);
        assert_eq!(info.dlopen_names, ["libcuda.so.1", "libnvrtc.so"]);
        assert_eq!(info.sass, ["sm_80"]);
        assert_eq!(info.ptx, ["compute_90"]);
        assert_eq!(info.fatbin_problem, None);
        // A banner is NCCL's only in NCCL's own library.
        assert_eq!(info.built_for, None);
    }

    #[rstest]
    fn falls_back_to_program_headers(
        #[values(false, true)] is64: bool,
        #[values(false, true)] big: bool,
    ) {
        let info = read_bytes(&strip_sections(build(is64, big), is64, big)).unwrap();
        assert_eq!(info.soname.as_deref(), Some(SONAME));
        assert_eq!(info.needed, ["libc.so.6", "libm.so.6"]);
        assert_eq!(info.runpath, ["$ORIGIN", "$ORIGIN/../lib", ""]);
        assert_eq!(info.version_needs, expected_needs());
        assert_eq!(info.version_defs, ["LIBSELF_1.0", "LIBSELF_2.0"]);
        // Without section names the whole read-only segment is searched.
        assert!(info.dlopen_names.contains(&"libcuda.so.1".to_owned()));
        assert!(!info.dlopen_names.contains(&SONAME.to_owned()));
        assert!(info.sass.is_empty());
    }

    #[test]
    fn misaligned_input_reads_the_same() {
        let data = build(true, false);
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(&data);
        assert_eq!(
            read_bytes(&shifted[1..]).unwrap(),
            read_bytes(&data).unwrap()
        );
    }

    #[rstest]
    #[case::empty(b"" as &[u8])]
    #[case::magic_prefix(b"\x7fEL")]
    #[case::ident_only(b"\x7fELF\x02\x01\x01\0")]
    #[case::short_header(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 62, 0])]
    fn short_input_is_truncated(#[case] data: &[u8]) {
        assert!(
            matches!(read_bytes(data), Err(ElfError::Truncated(_))),
            "{:?}",
            read_bytes(data)
        );
    }

    #[rstest]
    #[case::text(b"hello, world" as &[u8])]
    #[case::script(b"#!/bin/sh\n")]
    #[case::one_byte(b"x")]
    #[case::pe(b"MZ\x90\0")]
    fn other_files_are_not_elf(#[case] data: &[u8]) {
        assert!(matches!(read_bytes(data), Err(ElfError::NotElf)));
    }

    #[rstest]
    #[case::class(4, 3)]
    #[case::encoding(5, 0)]
    #[case::version(6, 2)]
    fn bad_ident_is_malformed(#[case] at: usize, #[case] value: u8) {
        let mut data = build(true, false);
        data[at] = value;
        assert!(matches!(read_bytes(&data), Err(ElfError::Malformed(_))));
    }

    #[test]
    fn cut_file_is_truncated() {
        let data = build(true, false);
        for len in [100, data.len() / 2, data.len() - 1] {
            let err = read_bytes(&data[..len]).unwrap_err();
            assert!(matches!(err, ElfError::Truncated(_)), "{len}: {err}");
        }
    }

    #[test]
    fn section_past_the_end_is_truncated() {
        // Section headers intact, but the file lost its middle: a section now ends past the end.
        let data = build(false, false);
        let shoff = u32::from_le_bytes(data[32..36].try_into().unwrap()) as usize;
        let mut cut = data[..200].to_vec();
        let headers = data[shoff..].to_vec();
        cut[32..36].copy_from_slice(&200u32.to_le_bytes());
        cut.extend_from_slice(&headers);
        let err = read_bytes(&cut).unwrap_err();
        assert!(
            matches!(err, ElfError::Truncated(ref m) if m.contains("section")),
            "{err}"
        );
    }

    #[test]
    fn bad_dynamic_string_is_malformed() {
        let mut data = build(true, false);
        // The first DT_NEEDED names libc.so.6, right after the soname in .dynstr.
        let libc_offset = 1 + SONAME.len() as u64 + 1;
        let info = read_bytes(&data).unwrap();
        assert_eq!(info.needed[0], "libc.so.6");
        let pos = data
            .windows(16)
            .rposition(|w| w[..8] == 1u64.to_le_bytes() && w[8..] == libc_offset.to_le_bytes())
            .unwrap();
        data[pos + 8..pos + 16].copy_from_slice(&0x00ff_ffff_u64.to_le_bytes());
        assert!(matches!(read_bytes(&data), Err(ElfError::Malformed(_))));
    }

    #[test]
    fn version_counts_beyond_the_section_are_malformed() {
        // One record claiming 1000 auxiliary entries in a 32-byte section.
        let mut data = vec![0u8; 32];
        data[0..2].copy_from_slice(&1u16.to_le_bytes());
        data[2..4].copy_from_slice(&1000u16.to_le_bytes());
        data[8..12].copy_from_slice(&16u32.to_le_bytes());
        let strings = StringTable::new(&b"\0libc.so.6\0"[..], 0, 11);
        assert!(matches!(
            parse_verneed(&data, strings, 1, false),
            Err(ElfError::Malformed(_))
        ));
        data[2..4].copy_from_slice(&1u16.to_le_bytes());
        data[4..8].copy_from_slice(&1u32.to_le_bytes());
        data[24..28].copy_from_slice(&1u32.to_le_bytes());
        let needs = parse_verneed(&data, strings, 1, false).unwrap();
        assert_eq!(needs[0].file, "libc.so.6");
        assert_eq!(needs[0].versions, ["libc.so.6"]);
    }

    #[test]
    fn read_path_reports_empty_and_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.so");
        std::fs::write(&empty, b"").unwrap();
        assert!(matches!(read_path(&empty), Err(ElfError::Truncated(_))));
        let missing = dir.path().join("missing.so");
        assert!(
            matches!(read_path(&missing), Err(ElfError::Io { ref path, .. }) if *path == missing)
        );
        // A directory, as a FIFO or a device, is refused before it is opened for reading.
        assert!(matches!(
            read_path(dir.path()),
            Err(ElfError::Refused(crate::hostfs::ReadError::NotRegular(
                "a directory"
            )))
        ));
        let lib = dir.path().join("libself.so.1");
        std::fs::write(&lib, build(true, false)).unwrap();
        assert_eq!(read_path(&lib).unwrap().soname.as_deref(), Some(SONAME));
        let scan = fatbin::scan_file(&lib).unwrap();
        assert_eq!(scan.entries.len(), 2);
        assert_eq!(
            fatbin::list_architectures_of_file(&lib).unwrap(),
            (vec!["sm_80".to_owned()], vec!["compute_90".to_owned()])
        );
    }

    /// `bytes` in a file of their own, read by positioned reads.
    fn read_as_file(bytes: &[u8]) -> Result<ElfInfo, ElfError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libself.so.1");
        std::fs::write(&path, bytes).unwrap();
        read_path(&path)
    }

    #[rstest]
    fn a_file_read_by_positioned_reads_says_what_its_bytes_say(
        #[values(false, true)] is64: bool,
        #[values(false, true)] big: bool,
        #[values(false, true)] stripped: bool,
    ) {
        let mut data = build(is64, big);
        if stripped {
            data = strip_sections(data, is64, big);
        }
        assert_eq!(read_as_file(&data).unwrap(), read_bytes(&data).unwrap());
    }

    #[test]
    fn system_libraries_read_by_positioned_reads_say_what_their_bytes_say() {
        for path in [
            "/bin/true",
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/lib64/libc.so.6",
        ] {
            let Ok(data) = std::fs::read(path) else {
                continue;
            };
            assert_eq!(
                read_path(Path::new(path)).ok(),
                read_bytes(&data).ok(),
                "{path}"
            );
        }
    }

    /// A library whose symbol versions claim 16 MiB, in a file grown sparse to hold them: read
    /// whole, its structure would be copied; read by parts, it is refused at the cap and said so.
    #[test]
    fn a_structure_larger_than_any_library_s_is_refused_not_read() {
        let mut data = build(true, false);
        let file = object::read::elf::ElfFile64::<Endianness>::parse(&*data).unwrap();
        let index = object::Object::section_by_name(&file, ".gnu.version_r")
            .map(|s| object::ObjectSection::index(&s).0)
            .unwrap();
        let shoff = u64::from_le_bytes(data[40..48].try_into().unwrap()) as usize;
        let size_at = shoff + index * 64 + 32;
        data[size_at..size_at + 8].copy_from_slice(&(16u64 << 20).to_le_bytes());
        data.resize(32 << 20, 0);
        let error = read_as_file(&data).unwrap_err().to_string();
        assert!(
            error.contains("ask for more than the 8 MiB that any library's take"),
            "{error}"
        );
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn reads_bin_true() {
        let Ok(data) = std::fs::read("/bin/true") else {
            return;
        };
        let info = read_bytes(&data).unwrap();
        assert_eq!(
            (info.class.as_str(), info.machine.as_str()),
            ("ELF64", "x86_64")
        );
        assert!(info.needed.iter().any(|n| n.starts_with("libc.so")));
        assert!(info
            .version_needs
            .iter()
            .any(|n| n.file.starts_with("libc.so")
                && n.versions.iter().any(|v| v.starts_with("GLIBC_"))));
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_bytes(data in proptest::collection::vec(any::<u8>(), 0..1024)) {
            let _ = read_bytes(&data);
        }

        #[test]
        fn never_panics_after_an_elf_ident(
            is64 in any::<bool>(),
            big in any::<bool>(),
            data in proptest::collection::vec(any::<u8>(), 0..1024),
        ) {
            let mut bytes = vec![0x7f, b'E', b'L', b'F', if is64 { 2 } else { 1 }, if big { 2 } else { 1 }, 1, 0];
            bytes.extend(data);
            let _ = read_bytes(&bytes);
        }

        #[test]
        fn never_panics_on_a_corrupted_library(
            is64 in any::<bool>(),
            big in any::<bool>(),
            stripped in any::<bool>(),
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..24),
            cut in any::<usize>(),
        ) {
            let mut data = build(is64, big);
            if stripped {
                data = strip_sections(data, is64, big);
            }
            let _ = read_bytes(&super::fatbin::tests::mutated(data, &edits, cut));
        }

        #[test]
        fn a_corrupted_library_read_as_a_file_says_what_its_bytes_say(
            is64 in any::<bool>(),
            big in any::<bool>(),
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..24),
            cut in any::<usize>(),
        ) {
            let data = super::fatbin::tests::mutated(build(is64, big), &edits, cut);
            if let Ok(info) = read_bytes(&data) {
                prop_assert_eq!(read_as_file(&data).ok(), Some(info));
            }
        }

        #[test]
        fn never_panics_on_a_corrupted_bin_true(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..24),
            cut in any::<usize>(),
        ) {
            if let Ok(data) = std::fs::read("/bin/true") {
                let _ = read_bytes(&super::fatbin::tests::mutated(data, &edits, cut));
            }
        }
    }
}
