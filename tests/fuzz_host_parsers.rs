//! Fuzz targets for every parser of host input (GUIDE.md sections 3, 14 and 16): the bytes of
//! shared objects and DLLs, wheel and conda metadata, the loader's cache and configuration,
//! NCCL's debug log, and the files of `/proc` and `/sys` that any user of a shared node, or the
//! maker of an image read with `--sysroot`, controls. Each target feeds a parser arbitrary input
//! and real input mutated (a shared object `cc` builds here, a minimal DLL, a cache, a sysfs
//! tree as a real host lays it out) and asserts that it returns, and where it is cheap, a
//! property of what it returns: names found are strings of the input, a seed reads as it did
//! unmutated, a file reads as its bytes do.
//!
//! It runs in the normal suite, so it is bounded: each target has its own case count
//! ([`config`]), sized so the binary takes seconds in release mode on a 2-core machine, and
//! no target writes a regression file at run time (`failure_persistence: None`). An input a
//! target once found is kept below as a plain `#[test]` with its bytes. Nothing here measures
//! time: a parser that loops forever hangs the binary, and CI's timeout names it.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

use proptest::prelude::*;
use proptest::test_runner::Config;
use stackbench::discover::{self, ldcache, ldconf, metadata, nvidia, Host};
use stackbench::elf::{self, banner, dlopen, fatbin};
use stackbench::pe;
use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `cases` cases, no regression file written (a failure prints its input; keep it below as a
/// `#[test]`), and shrinking bounded so a failure is reported in seconds.
fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4096,
        ..Config::default()
    }
}

/// Bytes made of pieces parsers look for (magics, prefixes, separators) and random runs
/// between them: random bytes alone almost never reach past a parser's first check.
fn tokens(dictionary: &'static [&'static [u8]], most: usize) -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        2 => proptest::sample::select(dictionary).prop_map(<[u8]>::to_vec),
        1 => proptest::collection::vec(any::<u8>(), 0..24),
        1 => (0usize..dictionary.len(), any::<u8>(), any::<usize>()).prop_map(move |(i, x, at)| {
            // A dictionary piece with one byte changed.
            let mut piece = dictionary[i].to_vec();
            if !piece.is_empty() {
                let n = piece.len();
                piece[at % n] ^= x;
            }
            piece
        }),
    ];
    proptest::collection::vec(piece, 0..most).prop_map(|pieces| pieces.concat())
}

/// Text made of `dictionary`'s pieces and random runs, as [`tokens`].
fn text_tokens(dictionary: &'static [&'static str], most: usize) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => proptest::sample::select(dictionary).prop_map(str::to_owned),
        1 => any::<String>(),
        1 => "[ -~]{0,12}",
    ];
    proptest::collection::vec(piece, 0..most).prop_map(|pieces| pieces.concat())
}

/// One change to a seed file.
#[derive(Debug, Clone)]
enum Mutation {
    /// `xor` into the byte at this fraction of the file.
    Flip { at: usize, xor: u8 },
    /// Cut the file to `at` bytes (modulo its length).
    Cut { at: usize },
    /// Write `value`, `width` bytes little-endian, at a field the seed's layout names.
    Field { field: usize, value: u64 },
}

/// Values a header field is set to: the edges of every width, and small numbers.
fn field_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(0x7fff),
        Just(0xffff),
        Just(0x7fff_ffff),
        Just(u64::from(u32::MAX)),
        Just(1 << 40),
        Just(i64::MAX as u64),
        Just(u64::MAX),
        0u64..0x10000,
        any::<u64>(),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 1u8..=255).prop_map(|(at, xor)| Mutation::Flip { at, xor }),
        1 => any::<usize>().prop_map(|at| Mutation::Cut { at }),
        4 => (any::<usize>(), field_value()).prop_map(|(field, value)| Mutation::Field { field, value }),
    ]
}

/// `seed` with `mutations` applied; `fields` are the seed's header fields, `(offset, width)`.
fn mutate(seed: &[u8], fields: &[(usize, usize)], mutations: &[Mutation]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for m in mutations {
        match *m {
            Mutation::Flip { at, xor } if !bytes.is_empty() => {
                let n = bytes.len();
                bytes[at % n] ^= xor;
            }
            Mutation::Cut { at } => {
                let n = bytes.len();
                bytes.truncate(at % (n + 1));
            }
            Mutation::Field { field, value } if !fields.is_empty() => {
                let (offset, width) = fields[field % fields.len()];
                let le = value.to_le_bytes();
                if let Some(slot) = bytes.get_mut(offset..offset + width) {
                    slot.copy_from_slice(&le[..width]);
                }
            }
            _ => {}
        }
    }
    bytes
}

/// The NUL-terminated strings of `data` (a string at its very end has no NUL and is left out).
fn c_strings(data: &[u8]) -> Vec<&[u8]> {
    let mut strings: Vec<&[u8]> = data.split(|b| *b == 0).collect();
    strings.pop();
    strings
}

/// A fatbinary container with one PTX entry for `compute_80`, laid out as nvcc writes it.
fn fatbin_container() -> Vec<u8> {
    let (header, payload) = (80usize, 24usize);
    let mut entry = vec![0u8; header + payload];
    entry[0..2].copy_from_slice(&1u16.to_le_bytes());
    entry[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
    entry[4..8].copy_from_slice(&(header as u32).to_le_bytes());
    entry[8..16].copy_from_slice(&(payload as u64).to_le_bytes());
    entry[28..32].copy_from_slice(&80u32.to_le_bytes());
    entry[40..48].copy_from_slice(&0x2011u64.to_le_bytes());
    let mut out = 0xba55_ed50u32.to_le_bytes().to_vec();
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(&(entry.len() as u64).to_le_bytes());
    out.extend_from_slice(&entry);
    out
}

// ---------------------------------------------------------------------------------------------
// ELF

/// A small real shared object, built once by `cc -shared`: a soname (`libnccl...`, so that its
/// banner is read, as NCCL's is), a DT_NEEDED (libm), the symbol versions it needs, a name it may
/// dlopen, NCCL's banner, and a `.nv_fatbin` section holding a real container layout. Without
/// a C compiler, `/bin/true` (an ELF executable).
fn elf_seed() -> &'static [u8] {
    static SEED: OnceLock<Vec<u8>> = OnceLock::new();
    SEED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let fatbin: Vec<String> = fatbin_container()
            .iter()
            .map(|b| format!("{b:#04x}"))
            .collect();
        let source = format!(
            "#include <math.h>\n\
             __attribute__((used, section(\".nv_fatbin\"), aligned(8)))\n\
             static const unsigned char fatbin[] = {{{}}};\n\
             const char *const names[] = {{\"libcuda.so.1\", \"libnvrtc.so.12\", \"NCCL version 2.27.5+cuda12.9\"}};\n\
             double seed_fn(double x) {{ return cos(x) + names[0][0]; }}\n",
            fatbin.join(",")
        );
        let c = dir.path().join("seed.c");
        let so = dir.path().join("libnccl_seed.so.1");
        fs::write(&c, source).unwrap();
        let built = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-Wl,-soname,libnccl_seed.so.1", "-o"])
            .arg(&so)
            .arg(&c)
            .arg("-lm")
            .status()
            .is_ok_and(|s| s.success());
        match built {
            true => fs::read(&so).unwrap(),
            false => fs::read("/bin/true").unwrap(),
        }
    })
}

/// The header fields of an ELF64 little-endian file: the file header's table offsets, counts
/// and sizes, and each section's and program header's offset, size, address, link and type.
fn elf_fields(seed: &[u8]) -> Vec<(usize, usize)> {
    let u16_at = |at: usize| usize::from(u16::from_le_bytes([seed[at], seed[at + 1]]));
    let u64_at = |at: usize| u64::from_le_bytes(seed[at..at + 8].try_into().unwrap()) as usize;
    let mut fields = vec![
        (0x04, 1),
        (0x05, 1),
        (0x10, 2),
        (0x12, 2),
        (0x20, 8), // e_phoff
        (0x28, 8), // e_shoff
        (0x34, 2),
        (0x36, 2), // e_phentsize
        (0x38, 2), // e_phnum
        (0x3a, 2), // e_shentsize
        (0x3c, 2), // e_shnum
        (0x3e, 2), // e_shstrndx
    ];
    let (phoff, phnum) = (u64_at(0x20), u16_at(0x38));
    for i in 0..phnum {
        let at = phoff + 56 * i;
        fields.extend([
            (at, 4),
            (at + 8, 8),
            (at + 16, 8),
            (at + 32, 8),
            (at + 40, 8),
        ]);
    }
    let (shoff, shnum) = (u64_at(0x28), u16_at(0x3c));
    for i in 0..shnum {
        let at = shoff + 64 * i;
        fields.extend([
            (at, 4),
            (at + 4, 4),
            (at + 16, 8),
            (at + 24, 8),
            (at + 32, 8),
            (at + 40, 4),
            (at + 44, 4),
            (at + 56, 8),
        ]);
    }
    fields
}

/// The seed's ELF facts, read once: what every unchanged copy must read as.
fn elf_seed_info() -> &'static elf::ElfInfo {
    static INFO: OnceLock<elf::ElfInfo> = OnceLock::new();
    INFO.get_or_init(|| elf::read_bytes(elf_seed()).expect("the seed shared object reads"))
}

/// What the ELF reader says of `bytes`, errors as their message (ElfError has no `PartialEq`).
fn elf_said(bytes: &[u8]) -> Result<elf::ElfInfo, String> {
    elf::read_bytes(bytes).map_err(|e| e.to_string())
}

#[test]
fn the_elf_seed_is_read_whole() {
    let info = elf_seed_info();
    if info.soname.as_deref() == Some("libnccl_seed.so.1") {
        assert!(
            info.needed.iter().any(|n| n.starts_with("libm.so")),
            "{info:?}"
        );
        assert!(
            info.dlopen_names.contains(&"libcuda.so.1".to_owned()),
            "{info:?}"
        );
        assert_eq!(info.ptx, ["compute_80"], "{info:?}");
        assert_eq!(
            info.built_for.as_ref().map(|b| b.version.as_str()),
            Some("2.27.5")
        );
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn elf_arbitrary_bytes(bytes in prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..2048),
        // Past the identification bytes, so the headers are read.
        proptest::collection::vec(any::<u8>(), 0..2048).prop_map(|mut b| {
            let ident = [0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
            b.splice(0..0, ident);
            b
        }),
    ]) {
        let said = elf_said(&bytes);
        // The same bytes at another alignment read the same.
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(&bytes);
        prop_assert_eq!(said, elf_said(&shifted[1..]));
    }
}

proptest! {
    #![proptest_config(config(1536))]

    #[test]
    fn elf_real_shared_object_mutated(mutations in proptest::collection::vec(mutation(), 1..4)) {
        let seed = elf_seed();
        let bytes = mutate(seed, &elf_fields(seed), &mutations);
        let said = elf_said(&bytes);
        if bytes == seed {
            prop_assert_eq!(said, Ok(elf_seed_info().clone()));
        } else if let Ok(info) = said {
            // Every dlopen name is a NUL-terminated string of the file.
            let strings = c_strings(&bytes);
            for name in &info.dlopen_names {
                prop_assert!(strings.contains(&name.as_bytes()), "{name} is not in the file");
            }
        }
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// A file reads as its bytes do: `read_path` (mapped or copied) and `read_bytes` agree.
    #[test]
    fn elf_file_reads_as_its_bytes(mutations in proptest::collection::vec(mutation(), 0..3)) {
        let seed = elf_seed();
        let bytes = mutate(seed, &elf_fields(seed), &mutations);
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&bytes).unwrap();
        let from_path = elf::read_path(file.path()).map_err(|e| e.to_string());
        match (elf_said(&bytes), from_path) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(_), Err(_)) => {}
            (a, b) => prop_assert!(false, "bytes say {:?}, the file {:?}", a, b),
        }
    }
}

const FATBIN_WORDS: &[&[u8]] = &[
    b"\x50\xed\x55\xba",
    b"\x50\xed\x55\xba\x01\x00\x10\x00",
    b"\x01\x00\x01\x01",
    b"\x02\x00\x01\x01",
    b"\x40\x00\x00\x00",
    b"\x50\x00\x00\x00",
    b"\x00\x00\x00\x00\x00\x00\x00\x00",
    b"\xff\xff\xff\xff\xff\xff\xff\xff",
    b"\x11\x20\x00\x00\x00\x00\x00\x00",
    b"\x7fELF\x02\x01\x01",
    b"\x00",
];

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn fatbin_scan(section in prop_oneof![
        tokens(FATBIN_WORDS, 24),
        (proptest::collection::vec(mutation(), 0..4)).prop_map(|m| {
            let mut two = fatbin_container();
            two.resize(two.len().next_multiple_of(8), 0);
            two.extend(fatbin_container());
            mutate(&two, &[(6, 2), (8, 8), (20, 4), (24, 8), (48, 4)], &m)
        }),
    ]) {
        let scan = fatbin::scan(&section);
        for entry in &scan.entries {
            prop_assert!((entry.offset as usize) < section.len());
        }
        prop_assert!(scan.containers * 16 <= section.len());
        let _ = fatbin::architectures(&scan.entries);
        let _ = fatbin::kernel_free(&scan.entries);
        let embedded = fatbin::scan_embedded(&section);
        for entry in &embedded.entries {
            prop_assert!((entry.offset as usize) < section.len());
        }
        prop_assert!(embedded.error.is_none());
        // A clean walk from the start finds no fewer containers embedded.
        if scan.error.is_none() && section.len() % 8 == 0 {
            prop_assert!(embedded.containers <= section.len());
        }
    }
}

const STRING_WORDS: &[&[u8]] = &[
    b"\0",
    b"lib",
    b".so",
    b".so.1",
    b".12.9",
    b"libcuda.so.1",
    b"libnvrtc-builtins.so.12.9",
    b"NCCL version ",
    b"2.27.5",
    b"+cuda",
    b"12.9",
    b" compiled with CUDA ",
    b"%s",
    b"/",
    b".dll",
    b"z\0l\0i\0b\0.\0d\0l\0l\0",
];

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn dlopen_names_and_nccl_banner(data in prop_oneof![
        3 => tokens(STRING_WORDS, 32),
        1 => proptest::collection::vec(any::<u8>(), 0..1024),
    ]) {
        let names = dlopen::library_names(&data);
        let strings = c_strings(&data);
        for name in &names {
            prop_assert!(strings.contains(&name.as_bytes()), "{name} is not a string of the data");
            prop_assert!(dlopen::is_library_name(name.as_bytes()));
        }
        prop_assert!(names.windows(2).all(|w| w[0] < w[1]), "not sorted and unique: {:?}", names);
        if let Some(built) = banner::nccl(&data, 0) {
            prop_assert!(strings.contains(&built.said.as_bytes()), "{:?}", built);
            prop_assert!(built.said.contains(&built.version) && built.said.contains(&built.cuda));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// PE

/// A minimal PE32+ DLL: `.rdata` holds an import of `KERNEL32.dll`, an export directory naming
/// `seed.dll` with one function, and the strings `zlibwapi.dll` and `cudnn_ops64_9.dll`;
/// `.nv_fatb` holds a fatbinary container with one PTX entry.
fn pe_seed() -> Vec<u8> {
    let mut b = vec![0u8; 0x600];
    let put16 =
        |b: &mut Vec<u8>, at: usize, v: u16| b[at..at + 2].copy_from_slice(&v.to_le_bytes());
    let put32 =
        |b: &mut Vec<u8>, at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let put64 =
        |b: &mut Vec<u8>, at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
    let put = |b: &mut Vec<u8>, at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
    put(&mut b, 0, b"MZ");
    put32(&mut b, 0x3c, 0x80);
    put(&mut b, 0x80, b"PE\0\0");
    let file = 0x84;
    put16(&mut b, file, 0x8664);
    put16(&mut b, file + 2, 2);
    put16(&mut b, file + 16, 240);
    put16(&mut b, file + 18, 0x2022);
    let opt = 0x98;
    put16(&mut b, opt, 0x20b);
    put64(&mut b, opt + 24, 0x1_8000_0000);
    put32(&mut b, opt + 32, 0x1000);
    put32(&mut b, opt + 36, 0x200);
    put16(&mut b, opt + 40, 6);
    put16(&mut b, opt + 48, 6);
    put32(&mut b, opt + 56, 0x3000);
    put32(&mut b, opt + 60, 0x200);
    put16(&mut b, opt + 68, 2);
    put32(&mut b, opt + 108, 16);
    // Data directories: export, import.
    put32(&mut b, opt + 112, 0x10a0);
    put32(&mut b, opt + 116, 0xa0);
    put32(&mut b, opt + 120, 0x1000);
    put32(&mut b, opt + 124, 40);
    let sections = opt + 240;
    put(&mut b, sections, b".rdata");
    put32(&mut b, sections + 8, 0x200);
    put32(&mut b, sections + 12, 0x1000);
    put32(&mut b, sections + 16, 0x200);
    put32(&mut b, sections + 20, 0x200);
    put32(&mut b, sections + 36, 0x4000_0040);
    put(&mut b, sections + 40, b".nv_fatb");
    put32(&mut b, sections + 48, 0x200);
    put32(&mut b, sections + 52, 0x2000);
    put32(&mut b, sections + 56, 0x200);
    put32(&mut b, sections + 60, 0x400);
    put32(&mut b, sections + 76, 0x4000_0040);
    // .rdata at file 0x200 is RVA 0x1000.
    let at = |rva: usize| rva - 0x1000 + 0x200;
    put32(&mut b, at(0x1000), 0x1040);
    put32(&mut b, at(0x1000) + 12, 0x1080);
    put32(&mut b, at(0x1000) + 16, 0x1050);
    put64(&mut b, at(0x1040), 0x1060);
    put64(&mut b, at(0x1050), 0x1060);
    put(&mut b, at(0x1062), b"LoadLibraryA\0");
    put(&mut b, at(0x1080), b"KERNEL32.dll\0");
    let export = at(0x10a0);
    put32(&mut b, export + 12, 0x10e0);
    put32(&mut b, export + 16, 1);
    put32(&mut b, export + 20, 1);
    put32(&mut b, export + 24, 1);
    put32(&mut b, export + 28, 0x1100);
    put32(&mut b, export + 32, 0x1110);
    put32(&mut b, export + 36, 0x1120);
    put(&mut b, at(0x10e0), b"seed.dll\0");
    put32(&mut b, at(0x1100), 0x1000);
    put32(&mut b, at(0x1110), 0x1130);
    put(&mut b, at(0x1130), b"seed_fn\0");
    put(
        &mut b,
        at(0x1140),
        b"\0zlibwapi.dll\0cudnn_ops64_9.dll\0seed.dll\0",
    );
    put(&mut b, 0x400, &fatbin_container());
    b
}

/// The header fields of [`pe_seed`]: `e_lfanew`, the file and optional headers' counts and
/// sizes, the data directories, each section's sizes and places, and the import and export
/// tables' pointers and counts.
fn pe_fields() -> Vec<(usize, usize)> {
    let mut fields = vec![
        (0x3c, 4),
        (0x86, 2),
        (0x94, 2),
        (0x98, 2),
        (0x98 + 56, 4),
        (0x98 + 60, 4),
        (0x98 + 108, 4),
    ];
    fields.extend((0..16).flat_map(|d| [(0x98 + 112 + 8 * d, 4), (0x98 + 116 + 8 * d, 4)]));
    for s in 0..2 {
        let at = 0x188 + 40 * s;
        fields.extend([(at + 8, 4), (at + 12, 4), (at + 16, 4), (at + 20, 4)]);
    }
    fields.extend([(0x200, 4), (0x20c, 4), (0x210, 4), (0x240, 8), (0x250, 8)]);
    fields.extend((12..40).step_by(4).map(|f| (0x2a0 + f, 4)));
    fields.extend([
        (0x300, 4),
        (0x310, 4),
        (0x320, 2),
        (0x406, 2),
        (0x408, 8),
        (0x414, 4),
        (0x418, 8),
    ]);
    fields
}

fn pe_said(bytes: &[u8]) -> Result<pe::PeInfo, String> {
    pe::read_bytes(bytes).map_err(|e| e.to_string())
}

#[test]
fn the_pe_seed_is_read_whole() {
    let info = pe::read_bytes(&pe_seed()).unwrap();
    assert_eq!(info.class, "PE32+");
    assert_eq!(info.machine, "x86_64");
    assert_eq!(info.imports, ["KERNEL32.dll"]);
    assert_eq!(info.exports, 1);
    assert_eq!(info.runtime_names, ["cudnn_ops64_9.dll", "zlibwapi.dll"]);
    assert_eq!(info.ptx, ["compute_80"]);
    assert_eq!(info.fatbin_problem, None);
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn pe_arbitrary_bytes(bytes in prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..2048),
        // A DOS header that points at an NT signature, then anything.
        (proptest::collection::vec(any::<u8>(), 0..2048), 0x40u32..0x100).prop_map(|(tail, nt)| {
            let mut b = vec![0u8; nt as usize];
            b[..2].copy_from_slice(b"MZ");
            b[0x3c..0x40].copy_from_slice(&nt.to_le_bytes());
            b.extend_from_slice(b"PE\0\0");
            b.extend(tail);
            b
        }),
    ]) {
        let said = pe_said(&bytes);
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(&bytes);
        prop_assert_eq!(said, pe_said(&shifted[1..]));
        let mut names = Vec::new();
        pe::names::collect_dll_names(&bytes, &mut names);
        let _ = pe::version::parse(&bytes);
    }
}

proptest! {
    #![proptest_config(config(1536))]

    #[test]
    fn pe_minimal_dll_mutated(mutations in proptest::collection::vec(mutation(), 1..4)) {
        let seed = pe_seed();
        let bytes = mutate(&seed, &pe_fields(), &mutations);
        let said = pe_said(&bytes);
        if bytes == seed {
            prop_assert_eq!(said, pe_said(&seed));
        } else if let Ok(info) = said {
            for name in info.imports.iter().chain(&info.runtime_names) {
                prop_assert!(name.len() <= bytes.len());
            }
        }
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// A DLL reads from its file (its headers and sections, or the whole file mapped) as its
    /// bytes do.
    #[test]
    fn pe_file_reads_as_its_bytes(mutations in proptest::collection::vec(mutation(), 0..3)) {
        let bytes = mutate(&pe_seed(), &pe_fields(), &mutations);
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&bytes).unwrap();
        let from_path = pe::read_path(file.path()).map_err(|e| e.to_string());
        match (pe_said(&bytes), from_path) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(_), Err(_)) => {}
            (a, b) => prop_assert!(false, "bytes say {:?}, the file {:?}", a, b),
        }
    }
}

/// A `VS_VERSIONINFO` node: key, value (text or binary), children.
fn version_node(key: &str, value: &[u8], text: bool, children: &[Vec<u8>]) -> Vec<u8> {
    let mut b = vec![0u8; 6];
    for unit in key.encode_utf16().chain([0]) {
        b.extend_from_slice(&unit.to_le_bytes());
    }
    b.resize(b.len().next_multiple_of(4), 0);
    b.extend_from_slice(value);
    b.resize(b.len().next_multiple_of(4), 0);
    for child in children {
        b.extend_from_slice(child);
        b.resize(b.len().next_multiple_of(4), 0);
    }
    let value_len = if text { value.len() / 2 } else { value.len() };
    let len = b.len() as u16;
    b[0..2].copy_from_slice(&len.to_le_bytes());
    b[2..4].copy_from_slice(&(value_len as u16).to_le_bytes());
    b[4..6].copy_from_slice(&u16::from(text).to_le_bytes());
    b
}

fn utf16z(text: &str) -> Vec<u8> {
    text.encode_utf16()
        .chain([0])
        .flat_map(u16::to_le_bytes)
        .collect()
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn pe_version_resource(
        mutations in proptest::collection::vec(mutation(), 0..4),
        fields in proptest::collection::vec((0usize..200, 1usize..3), 0..4),
    ) {
        let string = version_node("FileVersion", &utf16z("8.9.4.25"), true, &[]);
        let table = version_node("040904B0", &[], true, &[string]);
        let info = version_node("StringFileInfo", &[], true, &[table]);
        let mut fixed = vec![0u8; 52];
        fixed[..4].copy_from_slice(&0xFEEF_04BDu32.to_le_bytes());
        let seed = version_node("VS_VERSION_INFO", &fixed, false, &[info]);
        let versions = pe::version::parse(&seed);
        prop_assert_eq!(versions.file_version.as_deref(), Some("8.9.4.25"));
        let fields: Vec<(usize, usize)> = fields.iter().map(|&(at, w)| (at * 2, w * 2)).collect();
        let bytes = mutate(&seed, &fields, &mutations);
        let _ = pe::version::parse(&bytes);
    }
}

// ---------------------------------------------------------------------------------------------
// Wheels and conda

const METADATA_WORDS: &[&str] = &[
    "Name:",
    "Version:",
    "Name: nvidia-cublas-cu12\n",
    "Version: 12.9.1.4\n",
    "\n",
    "\r\n",
    " ",
    "Metadata-Version: 2.1\n",
    ":",
    "\u{feff}",
    "\t",
    "é",
];

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn wheel_metadata_name_and_version(text in text_tokens(METADATA_WORDS, 24)) {
        if let Some((name, version)) = metadata::name_and_version(&text) {
            // Both are header values: trimmed text of the input's header lines.
            prop_assert!(text.contains(&name) && text.contains(&version));
            prop_assert_eq!(name.trim(), name.as_str());
            prop_assert_eq!(version.trim(), version.as_str());
        }
    }
}

const RECORD_WORDS: &[&str] = &[
    "nvidia/cublas/lib/libcublas.so.12,sha256=abc,1234\n",
    "nvidia/cudnn/bin/cudnn64_9.dll,,\n",
    "../../bin/x,,\n",
    "/etc/passwd.so,,\n",
    ",",
    "\n",
    "\"",
    ".so",
    ".DLL",
    "/",
    "..",
];

proptest! {
    #![proptest_config(config(128))]

    /// A site-packages holding one NVIDIA wheel whose METADATA and RECORD are the input.
    #[test]
    fn wheel_metadata_and_record(
        metadata_text in prop_oneof![
            Just("Metadata-Version: 2.1\nName: nvidia-cuda-runtime-cu12\nVersion: 12.9.79\n\n".to_owned()),
            text_tokens(METADATA_WORDS, 16),
        ],
        record in text_tokens(RECORD_WORDS, 32),
        wheel in text_tokens(&["Tag:", " py3-none-manylinux_2_27_x86_64", "\n", "Tag: "], 8),
    ) {
        let site = tempfile::tempdir().unwrap();
        let dist = site.path().join("nvidia_cuda_runtime_cu12-12.9.79.dist-info");
        fs::create_dir(&dist).unwrap();
        fs::write(dist.join("METADATA"), &metadata_text).unwrap();
        fs::write(dist.join("RECORD"), &record).unwrap();
        fs::write(dist.join("WHEEL"), &wheel).unwrap();
        let meta = metadata::wheels(site.path());
        let listed: Vec<PathBuf> = record
            .lines()
            .map(|l| site.path().join(l.split(',').next().unwrap_or("")))
            .collect();
        for (file, version) in &meta.by_file {
            prop_assert!(listed.contains(file), "{} is not a file RECORD lists", file.display());
            prop_assert!(metadata_text.contains(version.as_str()));
        }
        match metadata::name_and_version(&metadata_text) {
            Some(_) => prop_assert!(meta.problems.is_empty(), "{:?}", meta.problems),
            None => prop_assert!(meta.by_file.is_empty()),
        }
    }
}

/// A conda-meta record: JSON as conda writes it, its values from the input.
fn conda_record() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        "[ -~]{0,12}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        Just("null".to_owned()),
        Just("12".to_owned()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        proptest::collection::vec("[a-z/._]{0,16}(\\.so(\\.[0-9])?)?", 0..6)
            .prop_map(|files| serde_json::to_string(&files).unwrap()),
    ];
    let key = proptest::sample::select(vec!["name", "version", "files", "subdir", "depends", "x"]);
    proptest::collection::vec((key, value), 0..8).prop_map(|pairs| {
        let body: Vec<String> = pairs
            .iter()
            .map(|(k, v)| format!("{}: {v}", serde_json::to_string(k).unwrap()))
            .collect();
        format!("{{{}}}", body.join(", "))
    })
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn conda_meta_records(
        record in prop_oneof![
            3 => conda_record(),
            1 => text_tokens(&["{", "}", "[", "]", "\"name\"", "\"files\"", ":", ",", "\"a.so\"", "1e999", "\\u0000"], 24),
        ],
        depth in 0usize..200,
    ) {
        let prefix = tempfile::tempdir().unwrap();
        let meta_dir = prefix.path().join("conda-meta");
        fs::create_dir(&meta_dir).unwrap();
        fs::write(meta_dir.join("pkg-1-0.json"), &record).unwrap();
        // A record nested deeper than any parser should follow.
        fs::write(meta_dir.join("deep-1-0.json"), format!("{}{}", "[".repeat(depth), "]".repeat(depth))).unwrap();
        let meta = metadata::conda(prefix.path());
        let parsed: Option<serde_json::Value> = serde_json::from_str(&record).ok();
        for (file, version) in &meta.by_file {
            prop_assert!(file.starts_with(prefix.path()));
            let said = parsed.as_ref().and_then(|v| v.get("version")).and_then(|v| v.as_str());
            prop_assert_eq!(Some(version.as_str()), said);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The loader's cache and configuration

/// A new-format ld.so.cache with `entries`, after an old-format table when `old` (glibc before
/// 2.32 writes both).
fn ld_cache(entries: &[(&str, &str)], old: bool) -> Vec<u8> {
    const HEADER: usize = 48;
    let strings_at = HEADER + entries.len() * 24;
    let (mut strings, mut table) = (Vec::new(), Vec::new());
    for (soname, path) in entries {
        let key = strings_at + strings.len();
        strings.extend_from_slice(soname.as_bytes());
        strings.push(0);
        let value = strings_at + strings.len();
        strings.extend_from_slice(path.as_bytes());
        strings.push(0);
        table.extend_from_slice(&0x0303i32.to_le_bytes());
        table.extend_from_slice(&(key as u32).to_le_bytes());
        table.extend_from_slice(&(value as u32).to_le_bytes());
        table.extend_from_slice(&[0; 12]);
    }
    let mut new = b"glibc-ld.so.cache1.1".to_vec();
    new.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    new.extend_from_slice(&(strings.len() as u32).to_le_bytes());
    new.resize(HEADER, 0);
    new.extend(table);
    new.extend(strings);
    if !old {
        return new;
    }
    let mut out = b"ld.so-1.7.0\0".to_vec();
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&[0; 12]);
    out.resize(32, 0);
    out.extend(new);
    out
}

const LD_CACHE_ENTRIES: &[(&str, &str)] = &[
    ("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
    ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"),
    (
        "libnvidia-ml.so.1",
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
    ),
];

proptest! {
    #![proptest_config(config(1536))]

    #[test]
    fn ld_so_cache(
        old in any::<bool>(),
        mutations in proptest::collection::vec(mutation(), 0..4),
        arbitrary in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let seed = ld_cache(LD_CACHE_ENTRIES, old);
        let base = if old { 32 } else { 0 };
        let mut fields = vec![(12, 4), (base + 20, 4), (base + 24, 4)];
        fields.extend((0..3).flat_map(|i| {
            let at = base + 48 + 24 * i;
            [(at, 4), (at + 4, 4), (at + 8, 4)]
        }));
        let bytes = mutate(&seed, &fields, &mutations);
        match ldcache::parse(&bytes) {
            Ok(entries) => {
                let strings = c_strings(&bytes);
                for entry in &entries {
                    prop_assert!(strings.iter().any(|s| s.ends_with(entry.soname.as_bytes())));
                }
                if bytes == seed {
                    let sonames: Vec<&str> = entries.iter().map(|e| e.soname.as_str()).collect();
                    prop_assert_eq!(sonames, ["libcuda.so.1", "libc.so.6", "libnvidia-ml.so.1"]);
                }
            }
            Err(_) => prop_assert_ne!(&bytes, &seed),
        }
        let _ = ldcache::parse(&arbitrary);
        let mut magic = b"glibc-ld.so.cache1.1".to_vec();
        magic.extend(&arbitrary);
        let _ = ldcache::parse(&magic);
    }
}

const LD_CONF_WORDS: &[&str] = &[
    "include /etc/ld.so.conf.d/*.conf\n",
    "include ld.so.conf.d/*.conf\n",
    "include /etc/ld.so.conf\n",
    "include *\n",
    "include\n",
    "/usr/local/cuda/lib64\n",
    "/opt/x # comment\n",
    "/usr/lib/x86_64-linux-gnu\n",
    "#",
    " ",
    "\n",
    "*",
    "/",
    "..",
    "hwcap 1 x\n",
];

/// An ld.so.conf's text: pieces of [`LD_CONF_WORDS`], then one of its lines repeated up to 12
/// times (a file that names itself or a glob of its neighbours many times).
fn ld_conf_text() -> impl Strategy<Value = String> {
    (
        text_tokens(LD_CONF_WORDS, 12),
        proptest::sample::select(LD_CONF_WORDS),
        0usize..12,
    )
        .prop_map(|(text, line, times)| text + &line.repeat(times))
}

proptest! {
    #![proptest_config(config(96))]

    /// `/etc/ld.so.conf` and two included files, each any text of include lines, directories
    /// and comments (an include may name itself, its includer or a glob of all of them).
    #[test]
    fn ld_so_conf(
        main in ld_conf_text(),
        a in ld_conf_text(),
        b in ld_conf_text(),
    ) {
        let root = tempfile::tempdir().unwrap();
        let etc = root.path().join("etc");
        fs::create_dir_all(etc.join("ld.so.conf.d")).unwrap();
        fs::write(etc.join("ld.so.conf"), &main).unwrap();
        fs::write(etc.join("ld.so.conf.d/a.conf"), &a).unwrap();
        fs::write(etc.join("ld.so.conf.d/b.conf"), &b).unwrap();
        let dirs = ldconf::directories(&etc.join("ld.so.conf"), root.path());
        // Each directory is a line of one of the files, placed below the root.
        let named: Vec<PathBuf> = [&main, &a, &b]
            .iter()
            .flat_map(|text| text.lines())
            .map(|line| line.split('#').next().unwrap_or("").trim())
            .filter(|line| line.starts_with('/'))
            .filter_map(|line| line.split_whitespace().next())
            .map(|word| discover::under(root.path(), Path::new(word)))
            .collect();
        for dir in &dirs {
            prop_assert!(named.contains(dir), "{} is named by no file", dir.display());
        }
        let mut unique = dirs.clone();
        unique.sort();
        unique.dedup();
        prop_assert_eq!(unique.len(), dirs.len());
    }
}

// ---------------------------------------------------------------------------------------------
// NCCL's debug log

const NCCL_WORDS: &[&str] = &[
    "node1:4242:4242 [0] NCCL INFO ",
    "node1:4242:4242 [0] NCCL WARN ",
    " NCCL INFO ",
    " NCCL WARN ",
    "NCCL version 2.27.7+cuda12.9",
    "NCCL_P2P_DISABLE set by environment to 1.",
    "NCCL_NET set by environment to IB.",
    "Channel 00/0 : ",
    "Channel 00 : ",
    "0[0] -> 1[1] via ",
    " -> ",
    " via ",
    "[",
    "]",
    "P2P/CUMEM/read",
    "SHM/direct/direct",
    "NET/Socket/0",
    "NET/IB : Using [0]mlx5_0:1/IB",
    "Using network IB",
    "GPU Direct RDMA Disabled",
    "AllReduce: ",
    "1048576 Bytes -> Algo ",
    " Bytes -> Algo ",
    "RING proto SIMPLE channel{Lo..Hi}={0..1}",
    "1 proto 2 time 36.2",
    "proto",
    "4294967295",
    "4294967296",
    "18446744073709551616",
    ": ",
    "\n",
    "\r\n",
    " ",
];

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn nccl_debug_log(text in text_tokens(NCCL_WORDS, 48)) {
        let seen = stackbench::nccl::log::parse(&text);
        if let Some(version) = &seen.version {
            prop_assert!(text.contains(version.as_str()));
        }
        for warning in &seen.warnings {
            prop_assert!(text.contains(warning.as_str()));
        }
        for edge in &seen.edges {
            prop_assert!(text.contains(edge.line.as_str()) && edge.line.contains(&edge.via));
        }
        let mut pairs: Vec<(u32, u32)> = seen.edges.iter().map(|e| (e.from_rank, e.to_rank)).collect();
        pairs.dedup();
        prop_assert_eq!(pairs.len(), seen.edges.len(), "one edge per pair of ranks");
        prop_assert!(seen.net.len() <= 64);
        let _ = seen.forced_net();
    }
}

// ---------------------------------------------------------------------------------------------
// /proc and /sys

/// A bridge's configuration space: 256 bytes, then extended capabilities (AER at 0x100, ACS
/// at 0x148 with control `control`), the rest any bytes.
fn pci_config(control: u16) -> Vec<u8> {
    let mut bytes = vec![0u8; 4096];
    bytes[0x100..0x104].copy_from_slice(&(1u32 | (0x148 << 20)).to_le_bytes());
    bytes[0x148..0x14c].copy_from_slice(&0x000du32.to_le_bytes());
    bytes[0x14e..0x150].copy_from_slice(&control.to_le_bytes());
    bytes
}

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn pci_config_acs(
        control in any::<u16>(),
        mutations in proptest::collection::vec(mutation(), 0..4),
        arbitrary in proptest::collection::vec(any::<u8>(), 0..4200),
        headers in proptest::collection::vec((0usize..0x3c0, any::<u32>()), 0..16),
    ) {
        let seed = pci_config(control);
        prop_assert_eq!(stackbench::diagnose::rdma::acs::acs_control(&seed), Some(control));
        let fields = [(0x100, 4), (0x104, 4), (0x148, 4), (0x14c, 4)];
        let _ = stackbench::diagnose::rdma::acs::acs_control(&mutate(&seed, &fields, &mutations));
        let _ = stackbench::diagnose::rdma::acs::acs_control(&arbitrary);
        // Capability headers at dword places, any ids and next pointers: loops included.
        let mut chained = vec![0u8; 4096];
        for (slot, header) in headers {
            let at = 0x100 + 4 * (slot % 0x3c0);
            chained[at..at + 4].copy_from_slice(&header.to_le_bytes());
        }
        let _ = stackbench::diagnose::rdma::acs::acs_control(&chained);
    }
}

/// Files of a host's `/proc`, `/sys` and `/etc` that stackbench reads, with real contents
/// (a DGX-like node: an H100 behind a PCIe switch beside a ConnectX-7, as `lspci -t` shows
/// on one) for the generator to change.
const SYS_FILES: &[(&str, &str)] = &[
    (
        "proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.261.03  Release Build  (dvs-builder@U16-I2-C03-12-4)  Tue Dec  9 01:02:03 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n",
    ),
    ("sys/module/nvidia/version", "535.261.03\n"),
    ("proc/sys/kernel/osrelease", "6.1.0-28-amd64\n"),
    (
        "proc/driver/nvidia/gpus/0000:18:00.0/information",
        "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 123\nBus Location: \t 0000:18:00.0\n",
    ),
    ("sys/devices/pci0000:00/0000:00:01.0/0000:17:00.0/0000:18:00.0/vendor", "0x10de\n"),
    ("sys/devices/pci0000:00/0000:00:01.0/0000:17:00.0/0000:18:00.0/class", "0x030200\n"),
    ("sys/devices/pci0000:00/0000:00:01.0/0000:17:00.0/0000:19:00.0/vendor", "0x15b3\n"),
    ("sys/devices/pci0000:00/0000:00:01.0/0000:17:00.0/0000:19:00.0/class", "0x020700\n"),
    ("sys/devices/pci0000:00/0000:00:01.0/0000:17:00.0/0000:19:00.0/iommu_group/type", "identity\n"),
    ("sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n"),
    ("sys/class/infiniband/mlx5_0/ports/1/phys_state", "5: LinkUp\n"),
    ("sys/class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)\n"),
    ("sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n"),
    ("proc/1/cgroup", "0::/init.scope\n"),
    (
        "var/lib/dpkg/status",
        "Package: nvidia-fabricmanager-535\nStatus: install ok installed\nVersion: 535.261.03-1\n\n",
    ),
    ("etc/cdi/nvidia.yaml", "cdiVersion: 0.5.0\n  - path: /usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03\n"),
    ("etc/nvidia-container-runtime/config.toml", "[nvidia-container-runtime]\nmode = \"cdi\"\n"),
    ("etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n/usr/local/cuda/lib64\n"),
];

const SYS_WORDS: &[&str] = &[
    "4: ACTIVE",
    "1: DOWN",
    "5: LinkUp",
    "400",
    " Gb/sec",
    "(4X NDR)",
    "NaN",
    "inf",
    "-1",
    "1e308",
    "0x10de",
    "0x030200",
    "0x0302",
    "DMA",
    "DMA-FQ",
    "identity",
    "NVRM version:",
    "Kernel Module",
    " Open Kernel Module ",
    "535.261.03",
    "5.12",
    "6.",
    ".",
    "-",
    "Model:",
    "Package:",
    "nvidia-fabricmanager-",
    "Status:",
    " installed",
    "Version:",
    "1:",
    "\n\n",
    "\n",
    " ",
    "\t",
    "libcuda.so.",
    "libnvidia-ml.so.",
    "docker",
    "[nvidia-container-runtime]",
    "mode = ",
    "\"",
];

/// One file's contents: the real one, changed, or any text or bytes.
fn sys_contents(real: &'static str) -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        3 => Just(Some(real.as_bytes().to_vec())),
        1 => Just(None),
        2 => text_tokens(SYS_WORDS, 8).prop_map(|t| Some(t.into_bytes())),
        1 => proptest::collection::vec(mutation(), 1..3)
            .prop_map(move |m| Some(mutate(real.as_bytes(), &[], &m))),
        1 => proptest::collection::vec(any::<u8>(), 0..64).prop_map(Some),
    ]
}

/// A host's tree of `/proc`, `/sys` and `/etc` files, each real, changed or absent, with the
/// sysfs links between them, the bridges' configuration spaces, an ld.so.cache and the NCCL
/// variables that select devices.
#[derive(Debug)]
struct SysWorld {
    files: Vec<Option<Vec<u8>>>,
    peermem: bool,
    bridge_config: Option<Vec<u8>>,
    ld_cache: Vec<u8>,
    env: Vec<(&'static str, String)>,
}

fn sys_world() -> impl Strategy<Value = SysWorld> {
    let files: Vec<_> = SYS_FILES
        .iter()
        .map(|(_, real)| sys_contents(real))
        .collect();
    let config = prop_oneof![
        Just(None),
        any::<u16>().prop_map(|c| Some(pci_config(c))),
        (any::<u16>(), proptest::collection::vec(mutation(), 1..4)).prop_map(|(c, m)| {
            Some(mutate(
                &pci_config(c),
                &[(0x100, 4), (0x148, 4), (0x14c, 4)],
                &m,
            ))
        }),
        proptest::collection::vec(any::<u8>(), 0..512).prop_map(Some),
    ];
    let cache = proptest::collection::vec(mutation(), 0..3)
        .prop_map(|m| mutate(&ld_cache(LD_CACHE_ENTRIES, false), &[], &m));
    let value = text_tokens(
        &["mlx5", "mlx5_0", ":1", ",", "^", "=", "eth", "ib0", " ", ""],
        4,
    );
    let env = proptest::collection::vec(
        (
            proptest::sample::select(vec!["NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "LD_LIBRARY_PATH"]),
            value,
        ),
        0..3,
    );
    (files, any::<bool>(), config, cache, env).prop_map(
        |(files, peermem, bridge_config, ld_cache, env)| SysWorld {
            files,
            peermem,
            bridge_config,
            ld_cache,
            env,
        },
    )
}

impl SysWorld {
    /// Lays the world out below a fresh directory: the host it stands for.
    fn lay_out(&self) -> (tempfile::TempDir, Host) {
        let root = tempfile::tempdir().unwrap();
        let at = |p: &str| root.path().join(p);
        for ((path, _), contents) in SYS_FILES.iter().zip(&self.files) {
            fs::create_dir_all(at(path).parent().unwrap()).unwrap();
            if let Some(contents) = contents {
                fs::write(at(path), contents).unwrap();
            }
        }
        let bridge = "sys/devices/pci0000:00/0000:00:01.0/0000:17:00.0";
        fs::create_dir_all(at("sys/bus/pci/devices")).unwrap();
        fs::create_dir_all(at("sys/class/net/eth0")).unwrap();
        for function in ["0000:18:00.0", "0000:19:00.0"] {
            let link = at(&format!("sys/bus/pci/devices/{function}"));
            std::os::unix::fs::symlink(format!("/{bridge}/{function}"), link).unwrap();
        }
        let hca = at("sys/class/infiniband/mlx5_0/device");
        std::os::unix::fs::symlink(format!("/{bridge}/0000:19:00.0"), hca).unwrap();
        if let Some(config) = &self.bridge_config {
            fs::write(at(&format!("{bridge}/config")), config).unwrap();
            fs::write(at("sys/devices/pci0000:00/0000:00:01.0/config"), config).unwrap();
        }
        if self.peermem {
            fs::create_dir_all(at("sys/module/nvidia_peermem")).unwrap();
        }
        fs::write(at("etc/ld.so.cache"), &self.ld_cache).unwrap();
        fs::create_dir_all(at("usr/bin")).unwrap();
        fs::write(at("usr/bin/nv-fabricmanager"), b"").unwrap();
        let host = Host {
            sysroot: root.path().to_path_buf(),
            env: self
                .env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect::<HashMap<_, _>>(),
            ..Host::default()
        };
        (root, host)
    }
}

proptest! {
    #![proptest_config(config(96))]

    /// The driver's, the container's and the RDMA network's files of a host read below a
    /// sysroot, as `doctor --sysroot` reads a support bundle: every reader and rule returns.
    #[test]
    fn sysfs_and_proc_files(world in sys_world()) {
        let (_root, host) = world.lay_out();
        let driver = nvidia::read(&host);
        for module in &driver.modules {
            prop_assert!(nvidia::is_driver_version(&module.version), "{:?}", module);
        }
        let _ = discover::container::read(&host);
        let ports = stackbench::diagnose::rdma::ports(&host);
        prop_assert!(ports.len() <= 64 * 64);
        let active = stackbench::cluster::fabric::active_ports(&host);
        for port in &active {
            let listed = ports.iter().any(|p| format!("{}:{}", p.device, p.port) == port.name && p.active());
            prop_assert!(listed, "{:?} is no active port of {:?}", port, ports);
        }
        let scan: stackbench::model::ScanReport = serde_json::from_value(serde_json::json!({
            "schema": "stackbench.scan/v1",
            "host": {"hostname": "h", "os": "linux", "arch": "x86_64", "stackbench_version": "0"},
            "searched": [], "installations": [], "problems": [],
        }))
        .unwrap();
        let search = stackbench::resolve::SearchContext::bare("ELF64", "x86_64");
        let build = stackbench::toolchain::BuildFacts::default();
        let ctx = stackbench::diagnose::Context::new(&scan, &search, None, &[], None)
            .with_build(&host, &build, &[]);
        let _ = stackbench::diagnose::rdma::check(&ctx);
    }
}

proptest! {
    #![proptest_config(config(1024))]

    /// The small readers of host text: driver versions in `/proc` and in libraries, dpkg's
    /// status, CDI specs, kernel module versions, bus ids.
    #[test]
    fn host_text_readers(text in text_tokens(SYS_WORDS, 24), bytes in tokens(STRING_WORDS, 16)) {
        if let Some((version, line)) = nvidia::parse_proc_version(&text) {
            prop_assert!(nvidia::is_driver_version(&version) && text.contains(&line));
        }
        if let Some((package, version)) = nvidia::fabric_manager_package(&text) {
            prop_assert!(text.contains(&package) && text.contains(&version));
        }
        let (versions, line) = discover::container::driver_versions(&text);
        for version in &versions {
            prop_assert!(nvidia::is_driver_version(version));
        }
        prop_assert_eq!(versions.is_empty(), line.is_none());
        let _ = nvidia::version_key(&text);
        if let Some(version) = nvidia::embedded_version(&bytes) {
            prop_assert!(nvidia::is_driver_version(&version));
        }
        let _ = stackbench::gpu::normal_bus_id(&text);
        let _ = stackbench::devices::dcgm_bus_id(&text);
        let _ = stackbench::toolchain::toolkit::cuda_h_version(&text);
        let _ = stackbench::toolchain::toolkit::nvcc_release(&text);
        let _ = stackbench::toolchain::compiler::parse_version(&text);
        let _ = discover::container::grants(Some(&text), "compute");
    }
}

/// Found while writing `ld_so_conf`, whose generator repeats a line for it: an `ld.so.conf`
/// that includes itself `k` times was read `k`^8 times, every include followed to the depth
/// limit (5 lines took 15 s in release mode; these 16, days). A file is now read again only
/// nearer the top than before.
#[test]
fn an_ld_so_conf_including_itself_many_times_is_read_once() {
    const INCLUDES: usize = 16;
    let root = tempfile::tempdir().unwrap();
    let etc = root.path().join("etc");
    fs::create_dir_all(&etc).unwrap();
    let text = "include /etc/ld.so.conf\n".repeat(INCLUDES) + "/usr/local/cuda/lib64\n";
    fs::write(etc.join("ld.so.conf"), text).unwrap();
    let dirs = ldconf::directories(&etc.join("ld.so.conf"), root.path());
    assert_eq!(dirs, [root.path().join("usr/local/cuda/lib64")]);
}
