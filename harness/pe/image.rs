//! The parts of a DLL file that [`super`] reads: its headers, `.rdata`, the fatbinary and the
//! sections holding the import, export and resource tables, each read on its own rather than
//! the whole file mapped.
//!
//! Small parts are copied into memory with `pread`: mapping a file and faulting its pages in
//! costs more than copying a few hundred kilobytes (28 µs against 7 µs for the 110 KB `.rdata`
//! of `cudart64_110.dll`, headers and `open` included). Large ones are taken from one mapping
//! of the file, made only when a part needs it, of which the reader touches only the pages it
//! reads.
//! [`Image`] serves the parts to the `object` crate as a file whose other bytes are absent: a
//! version resource whose data lay outside the resource section would not be read (linkers put
//! it inside).

use object::read::pe::{ImageNtHeaders, PeFile};
use object::read::ReadRef;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;

/// Parts this large or larger come from the mapping.
const MAP_FROM: u64 = 4 << 20;

/// Whether a part of `size` bytes comes from the mapping: then the reader touches only what it
/// needs of it, and searches a large `.rdata` in the file instead (see [`super::names`]).
pub(super) fn is_mapped(size: u32) -> bool {
    u64::from(size) >= MAP_FROM
}

/// Bytes read first: the DOS and NT headers and the section table fit in them (a table that
/// does not is read again, whole).
const HEAD: u64 = 4096;

/// Sections the reader looks at whole, by name: the DLL names among `.rdata`'s strings and the
/// fatbinary (section names are cut to 8 bytes). The sections holding the import, export and
/// resource tables are read too, whatever their names.
const WHOLE_SECTIONS: [&[u8]; 2] = [b".rdata", b".nv_fatb"];

/// `ranges` sorted, overlapping and touching ones joined: each byte of the file is read once,
/// however many section headers name it (a PE may have 65,535, all over one range).
fn merged(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for range in ranges {
        match out.last_mut() {
            Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
            _ => out.push(range),
        }
    }
    out
}

/// A DLL file as its parts.
pub(crate) struct Image {
    len: u64,
    parts: Vec<Part>,
    map: Option<memmap2::Mmap>,
    /// Whether large parts may come from a mapping: only when no one but us or root can change
    /// the file (see [`crate::elf::file`]); else every part is copied.
    may_map: bool,
}

/// A byte range of the file and where its bytes are.
struct Part {
    range: Range<u64>,
    bytes: Bytes,
}

enum Bytes {
    /// Copied into 8-byte words; the part's first byte is at `skew`, so that each byte's
    /// address has the alignment its file offset has (as in a mapping of the whole file).
    Copied { words: Vec<u64>, skew: usize },
    /// In the mapping at the part's own offset.
    Mapped,
}

impl Image {
    /// Reads the parts of `file` (`len` bytes): its headers first, then the sections they
    /// name, large ones from a mapping where `may_map`. A file that is not PE, or whose headers
    /// do not parse, is its first bytes alone, for the reader to say what is wrong with them.
    pub(crate) fn read(file: &File, len: u64, may_map: bool) -> io::Result<Image> {
        let mut image = Image {
            len,
            parts: Vec::new(),
            map: None,
            may_map,
        };
        image.add(file, 0..HEAD.min(len))?;
        if !image.from(0).is_some_and(super::is_pe) {
            return Ok(image);
        }
        // The NT headers can lie past the first bytes read, and the section table past them:
        // the head is read again, longer, until it holds both (twice at most).
        let mut head = HEAD.min(len);
        while let Some(end) = image
            .headers_end(head)
            .map(|end| end.min(len))
            .filter(|&end| end > head)
        {
            head = end;
            image.parts.clear();
            image.add(file, 0..head)?;
        }
        let wanted = match object::read::pe::optional_header_magic(&image) {
            Ok(object::pe::IMAGE_NT_OPTIONAL_HDR32_MAGIC) => {
                image.wanted::<object::pe::ImageNtHeaders32>()
            }
            Ok(object::pe::IMAGE_NT_OPTIONAL_HDR64_MAGIC) => {
                image.wanted::<object::pe::ImageNtHeaders64>()
            }
            _ => Vec::new(),
        };
        for range in wanted {
            image.add(file, range)?;
        }
        Ok(image)
    }

    /// Where the headers end, read from the `head` bytes read so far: the end of the NT
    /// signature and file header when `head` does not hold them, else the end of the section
    /// table; `None` when `head` ends before the DOS header's pointer to the NT headers.
    fn headers_end(&self, head: u64) -> Option<u64> {
        let nt = u64::from(
            object::pe::ImageDosHeader::parse(self)
                .ok()?
                .nt_headers_offset(),
        );
        // The 4-byte signature, then the file header; the section table follows the optional
        // header, 40 bytes a section.
        let file_header_end = nt + 4 + std::mem::size_of::<object::pe::ImageFileHeader>() as u64;
        if file_header_end > head {
            return Some(file_header_end);
        }
        let header = self.read_at::<object::pe::ImageFileHeader>(nt + 4).ok()?;
        let optional = u64::from(header.size_of_optional_header.get(object::LittleEndian));
        let sections = u64::from(header.number_of_sections.get(object::LittleEndian));
        Some(file_header_end + optional + 40 * sections)
    }

    /// The file ranges of the sections the reader looks at that lie within the file.
    fn wanted<Pe: ImageNtHeaders>(&self) -> Vec<Range<u64>> {
        let Ok(pe) = PeFile::<Pe, &Image>::parse(self) else {
            return Vec::new();
        };
        let directories = pe.data_directories();
        let addresses: Vec<u32> = [
            object::pe::IMAGE_DIRECTORY_ENTRY_IMPORT,
            object::pe::IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT,
            object::pe::IMAGE_DIRECTORY_ENTRY_EXPORT,
            object::pe::IMAGE_DIRECTORY_ENTRY_RESOURCE,
        ]
        .into_iter()
        .filter_map(|id| directories.get(id))
        .map(|d| d.virtual_address.get(object::LittleEndian))
        .collect();
        let mut wanted = Vec::new();
        for section in pe.section_table().iter() {
            let name = section.raw_name();
            let whole = WHOLE_SECTIONS.iter().any(|w| name.starts_with(w));
            if !whole && !addresses.iter().any(|&va| section.contains_rva(va)) {
                continue;
            }
            let (offset, size) = section.pe_file_range();
            let range = u64::from(offset)..u64::from(offset) + u64::from(size);
            if range.is_empty() || range.end > self.len {
                continue;
            }
            wanted.push(range);
        }
        merged(wanted)
    }

    /// Reads `range` of `file` as a part: copied, or taken from the mapping when large and the
    /// file may be mapped.
    #[allow(clippy::disallowed_methods)] // a file hostfs opened, mapped only where ours alone
    fn add(&mut self, file: &File, range: Range<u64>) -> io::Result<()> {
        let size = range.end - range.start;
        if size >= MAP_FROM && self.may_map {
            if self.map.is_none() {
                let len = usize::try_from(self.len).map_err(io::Error::other)?;
                // SAFETY: as for `elf::file::bytes`: read-only and private, of a file no one but
                // us or root can change; every read is bounds-checked against its part.
                let map = unsafe { memmap2::MmapOptions::new().len(len).map(file)? };
                // What is read of it lies far apart (tables, fatbinary entry headers): each
                // touch maps one page rather than the pages around it, which cost more to map
                // and unmap than they save.
                let _ = map.advise(memmap2::Advice::Random);
                self.map = Some(map);
            }
            self.parts.push(Part {
                range,
                bytes: Bytes::Mapped,
            });
            return Ok(());
        }
        let skew = (range.start % 8) as usize;
        let mut words = vec![0u64; (skew + size as usize).div_ceil(8)];
        let buf = object::pod::bytes_of_slice_mut(&mut words);
        file.read_exact_at(&mut buf[skew..skew + size as usize], range.start)?;
        self.parts.push(Part {
            range,
            bytes: Bytes::Copied { words, skew },
        });
        Ok(())
    }

    /// The bytes from `offset` to the end of the part that holds it and reaches furthest
    /// (the headers' part can hold the start of a section that a part of its own holds whole).
    fn from(&self, offset: u64) -> Option<&[u8]> {
        let part = self
            .parts
            .iter()
            .filter(|p| p.range.contains(&offset))
            .max_by_key(|p| p.range.end)?;
        let size = (part.range.end - part.range.start) as usize;
        let bytes = match &part.bytes {
            Bytes::Copied { words, skew } => {
                object::pod::bytes_of_slice(words).get(*skew..*skew + size)?
            }
            Bytes::Mapped => self
                .map
                .as_ref()?
                .get(part.range.start as usize..part.range.end as usize)?,
        };
        bytes.get((offset - part.range.start) as usize..)
    }
}

impl<'a> ReadRef<'a> for &'a Image {
    fn len(self) -> Result<u64, ()> {
        Ok(self.len)
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> Result<&'a [u8], ()> {
        if size == 0 {
            return Ok(&[]);
        }
        let size = usize::try_from(size).map_err(|_| ())?;
        self.from(offset).and_then(|b| b.get(..size)).ok_or(())
    }

    fn read_bytes_at_until(self, range: Range<u64>, delimiter: u8) -> Result<&'a [u8], ()> {
        let len = usize::try_from(range.end.saturating_sub(range.start)).map_err(|_| ())?;
        let bytes = self.from(range.start).ok_or(())?;
        let bytes = bytes.get(..len.min(bytes.len())).ok_or(())?;
        let end = memchr::memchr(delimiter, bytes).ok_or(())?;
        Ok(&bytes[..end])
    }
}

#[cfg(test)]
mod tests {
    use super::super::{read, read_bytes, read_path};
    use super::Image;
    use std::path::{Path, PathBuf};

    /// `path` read through its parts alone, without `read_path`'s whole-file retry, which must
    /// succeed and equal `read_bytes` of the whole file.
    fn read_parts(path: &Path) -> crate::pe::PeInfo {
        let file = std::fs::File::open(path).unwrap();
        let len = file.metadata().unwrap().len();
        let from_parts = read(&Image::read(&file, len, true).unwrap(), Some(&file))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // SAFETY: a read-only private mapping of a file nothing writes to.
        let whole = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        assert_eq!(
            from_parts,
            read_bytes(&whole).unwrap(),
            "{}",
            path.display()
        );
        from_parts
    }

    /// A PE32+ DLL with its NT headers at `nt`, `sections` empty sections and then `.rdata` at
    /// file offset `rdata_at` (`rdata_len` bytes) holding `zlibwapi.dll` at its end, the way a
    /// linker lays one out.
    fn dll(nt: usize, sections: u16, rdata_at: u32, rdata_len: u32) -> Vec<u8> {
        let mut b = vec![0u8; (rdata_at + rdata_len) as usize];
        let put16 =
            |b: &mut Vec<u8>, at: usize, v: u16| b[at..at + 2].copy_from_slice(&v.to_le_bytes());
        let put32 =
            |b: &mut Vec<u8>, at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        b[..2].copy_from_slice(b"MZ");
        put32(&mut b, 0x3c, nt as u32);
        b[nt..nt + 4].copy_from_slice(b"PE\0\0");
        let file_header = nt + 4;
        put16(&mut b, file_header, 0x8664);
        put16(&mut b, file_header + 2, sections + 1);
        put16(&mut b, file_header + 16, 240);
        put16(&mut b, file_header + 18, 0x2022);
        let optional = file_header + 20;
        put16(&mut b, optional, 0x20b);
        put32(&mut b, optional + 32, 0x1000);
        put32(&mut b, optional + 36, 0x200);
        put32(&mut b, optional + 56, 0x1000 * (u32::from(sections) + 2));
        put32(&mut b, optional + 60, 0x200);
        put32(&mut b, optional + 108, 16);
        let table = optional + 240;
        for i in 0..=usize::from(sections) {
            let entry = table + 40 * i;
            let last = i == usize::from(sections);
            let name: &[u8] = if last { b".rdata" } else { b".empty" };
            b[entry..entry + name.len()].copy_from_slice(name);
            put32(&mut b, entry + 8, if last { rdata_len } else { 0x10 });
            put32(&mut b, entry + 12, 0x1000 * (i as u32 + 1));
            if last {
                put32(&mut b, entry + 16, rdata_len);
                put32(&mut b, entry + 20, rdata_at);
            }
        }
        let name = b"\0zlibwapi.dll\0";
        let end = b.len();
        b[end - name.len()..].copy_from_slice(name);
        b
    }

    /// The DLL names that [`read_parts`] finds in `bytes` written to a file.
    fn read_as_file(bytes: &[u8]) -> Vec<String> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, bytes).unwrap();
        read_parts(file.path()).runtime_names
    }

    /// Every DLL of the Windows fixture venvs (`ci/fetch-windows-toolkits`): its parts alone
    /// say what all its bytes say. The broken venv's cuDNN is the first venv's, hard-linked.
    #[test]
    fn every_fixture_dll_reads_from_its_parts_what_its_bytes_say() {
        let root = match std::env::var_os("STACKBENCH_WINDOWS_TOOLKITS") {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => Path::new(env!("CARGO_MANIFEST_DIR")).join(".toolkits-windows"),
        };
        let mut dlls = Vec::new();
        for venv in ["venv-cu11", "venv-cudnn8-cu11-cublas12"] {
            let packages = root.join(venv).join("Lib/site-packages/nvidia");
            let packages = std::fs::read_dir(&packages).unwrap_or_else(|e| {
                panic!("Windows fixtures missing: run ci/fetch-windows-toolkits ({e})")
            });
            for package in packages {
                let package = package.unwrap().path();
                if venv != "venv-cu11" && package.ends_with("cudnn") {
                    continue;
                }
                for file in std::fs::read_dir(package.join("bin")).into_iter().flatten() {
                    let path = file.unwrap().path();
                    if path.extension().is_some_and(|e| e == "dll") {
                        dlls.push(path);
                    }
                }
            }
        }
        assert_eq!(dlls.len(), 20, "{dlls:?}");
        for dll in dlls {
            read_parts(&dll);
        }
    }

    #[test]
    fn section_ranges_are_read_once_however_many_headers_name_them() {
        assert_eq!(
            super::merged(vec![8..16, 0..10, 0..10, 20..30, 16..18, 25..26]),
            [0..18, 20..30]
        );
        assert!(super::merged(Vec::new()).is_empty());
    }

    #[test]
    fn a_section_table_past_the_first_4_kb_is_read_whole() {
        // 120 sections: the table ends at byte 5,172.
        assert_eq!(
            read_as_file(&dll(0x40, 119, 0x1600, 0x400)),
            ["zlibwapi.dll"]
        );
    }

    #[test]
    fn a_section_starting_among_the_headers_bytes_is_read_to_its_end() {
        // `.rdata` from byte 512 to byte 8,704: its start lies in the first 4 KB read.
        assert_eq!(read_as_file(&dll(0x40, 0, 0x200, 0x2000)), ["zlibwapi.dll"]);
    }

    #[test]
    fn nt_headers_past_the_first_4_kb_are_read() {
        // The DOS stub runs to byte 4,352: the NT headers and the table follow it.
        assert_eq!(
            read_as_file(&dll(0x1100, 0, 0x1400, 0x400)),
            ["zlibwapi.dll"]
        );
    }

    #[test]
    fn import_names_in_another_section_are_read_from_the_whole_file() {
        // Descriptors in `.rdata`, the DLL's name in `.text` (past the first 4 KB), which the
        // parts leave out: they cannot name it; `read_path` reads the whole file again.
        let mut bytes = dll(0x40, 1, 0x1400, 0x200);
        let section = |i: usize| 0x40 + 24 + 240 + 40 * i;
        bytes[section(0)..section(0) + 8].copy_from_slice(b".text\0\0\0");
        bytes[section(0) + 8..section(0) + 12].copy_from_slice(&0x100u32.to_le_bytes());
        bytes[section(0) + 16..section(0) + 20].copy_from_slice(&0x100u32.to_le_bytes());
        bytes[section(0) + 20..section(0) + 24].copy_from_slice(&0x1200u32.to_le_bytes());
        bytes[0x1200..0x120d].copy_from_slice(b"nvcuda.dll\0\0\0");
        // The import directory (data directory 1) at `.rdata`'s RVA 0x2000: one descriptor
        // naming RVA 0x1000 (`.text`), then a null one.
        let directories = 0x40 + 24 + 112;
        bytes[directories + 8..directories + 12].copy_from_slice(&0x2000u32.to_le_bytes());
        bytes[directories + 12..directories + 16].copy_from_slice(&40u32.to_le_bytes());
        bytes[0x1400 + 12..0x1400 + 16].copy_from_slice(&0x1000u32.to_le_bytes());
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, &bytes).unwrap();
        let whole = read_bytes(&bytes).unwrap();
        assert_eq!(whole.imports, ["nvcuda.dll"]);
        let opened = std::fs::File::open(file.path()).unwrap();
        let parts = Image::read(&opened, bytes.len() as u64, true).unwrap();
        assert!(read(&parts, Some(&opened)).is_err());
        assert_eq!(read_path(file.path()).unwrap(), whole);
    }
}
