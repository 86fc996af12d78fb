//! Damaged pip installations: a file a wheel's `RECORD` lists that is gone, or whose size (and,
//! with `--verify-hashes`, whose SHA-256) is not what the wheel installed. pip itself never
//! checks again after installing; an interrupted upgrade, a disk cleaner or a hand-deleted
//! library leaves the package "installed" and broken, and `pip install` says it is satisfied.

use super::finding::{Cause, Finding, Severity};
use super::wheel::{self, Wheel};
use super::Context;
use crate::discover::metadata::is_library_file;
use crate::model::{Installation, Layout};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Read;
use std::path::Path;

/// One `damaged_installation` finding per damaged NVIDIA wheel in each pip environment.
pub fn check(ctx: &Context) -> Vec<Finding> {
    ctx.scan
        .installations
        .iter()
        .filter(|i| i.layout == Layout::Pip)
        .flat_map(|i| damaged_wheels(i, ctx.verify_hashes))
        .collect()
}

/// What is wrong with one file a RECORD lists.
#[derive(Debug, PartialEq)]
enum Damage {
    Missing,
    Size { recorded: u64, found: u64 },
    Hash,
}

fn damaged_wheels(installation: &Installation, verify_hashes: bool) -> Vec<Finding> {
    let site_packages = &installation.root;
    wheel::wheels(site_packages)
        .iter()
        .filter_map(|wheel| {
            let damaged: Vec<(String, Damage)> = wheel
                .record
                .lines()
                .filter_map(parse_line)
                .filter_map(|entry| {
                    let damage = inspect(&site_packages.join(entry.file), &entry, verify_hashes)?;
                    Some((entry.file.to_string(), damage))
                })
                .collect();
            finding(installation, wheel, &damaged)
        })
        .collect()
}

/// One RECORD line: the file, its `sha256=` digest (URL-safe base64, unpadded) and size.
#[derive(Debug, PartialEq)]
struct Entry<'a> {
    file: &'a str,
    sha256: &'a str,
    size: u64,
}

/// A RECORD line of the package's own files that records a digest and a size; other lines
/// (the dist-info's metadata and licence, RECORD itself, `.pyc` files, anything malformed)
/// say nothing to check.
fn parse_line(line: &str) -> Option<Entry<'_>> {
    // Paths with commas are quoted (csv); NVIDIA's never are, and such a line is skipped.
    let mut parts = line.split(',');
    let (file, hash, size) = (parts.next()?, parts.next()?, parts.next()?);
    let metadata = file
        .split('/')
        .next()
        .is_some_and(|top| top.ends_with(".dist-info"));
    if parts.next().is_some() || file.starts_with('"') || metadata {
        return None;
    }
    Some(Entry {
        file,
        sha256: hash.strip_prefix("sha256=")?,
        size: size.trim().parse().ok()?,
    })
}

/// The damage to `path`, if any.
fn inspect(path: &Path, entry: &Entry, verify_hashes: bool) -> Option<Damage> {
    let Ok(meta) = fs::metadata(path) else {
        return Some(Damage::Missing);
    };
    if meta.len() != entry.size {
        return Some(Damage::Size {
            recorded: entry.size,
            found: meta.len(),
        });
    }
    if verify_hashes && sha256_of(path).is_some_and(|digest| digest != entry.sha256) {
        return Some(Damage::Hash);
    }
    None
}

/// A file's SHA-256 as RECORD writes it; `None` when it cannot be read.
fn sha256_of(path: &Path) -> Option<String> {
    let (mut file, _) = crate::hostfs::open(path).ok()?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let got = file.read(&mut buf).ok()?;
        if got == 0 {
            break;
        }
        hasher.update(&buf[..got]);
    }
    Some(base64_url_unpadded(&hasher.finalize()))
}

/// URL-safe base64 without padding, as wheel RECORDs write digests (PEP 376, 427).
fn base64_url_unpadded(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}

/// The finding for one wheel's damaged files: an error when a library is among them. It names
/// the first damaged library (else file); its evidence names every damaged file.
fn finding(
    installation: &Installation,
    wheel: &Wheel,
    damaged: &[(String, Damage)],
) -> Option<Finding> {
    let (first, _) = damaged.first()?;
    let (libraries, others): (Vec<_>, Vec<_>) =
        damaged.iter().partition(|(file, _)| is_library_file(file));
    let severity = if libraries.is_empty() {
        Severity::Warning
    } else {
        Severity::Error
    };
    let named = libraries.first().map_or(first, |(file, _)| file);
    let name = named.rsplit('/').next().unwrap_or(named);
    let evidence = damaged
        .iter()
        .map(|(file, damage)| {
            let path = installation.root.join(file);
            let path = path.display();
            match damage {
                Damage::Missing => format!("{path}: in RECORD, missing"),
                Damage::Size { recorded, found } => {
                    format!("{path}: {found} bytes, RECORD says {recorded}")
                }
                Damage::Hash => format!("{path}: SHA-256 differs from RECORD's"),
            }
        })
        .collect();
    let what = match (libraries.is_empty(), others.is_empty()) {
        (false, true) => told(&libraries, "of its libraries"),
        (true, _) => told(&others, "of its files"),
        (false, false) => format!(
            "{} and {}",
            told(&libraries, "of its libraries"),
            told(
                &others,
                if others.len() == 1 {
                    "other file"
                } else {
                    "other files"
                }
            )
        ),
    };
    Some(
        Finding::new(
            severity,
            Cause::DamagedInstallation,
            format!("{} {} is damaged: {what}", wheel.name, wheel.version),
            wheel.reinstall(&installation.root),
        )
        .library(name, installation.root.join(named))
        .installation(installation.root.clone())
        .evidence(evidence),
    )
}

/// How many of `damaged` (`5 of its libraries`) are missing, changed, or either.
fn told(damaged: &[&(String, Damage)], what: &str) -> String {
    let missing = damaged
        .iter()
        .filter(|(_, d)| *d == Damage::Missing)
        .count();
    let state = if missing == damaged.len() {
        "missing"
    } else if missing == 0 {
        "changed"
    } else {
        "missing or changed"
    };
    let verb = if damaged.len() == 1 { "is" } else { "are" };
    format!("{} {what} {verb} {state}", damaged.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn record_lines_are_read_and_lines_without_a_digest_are_not() {
        assert_eq!(
            parse_line("nvidia/cuda_runtime/lib/libcudart.so.12,sha256=abc_-,707904"),
            Some(Entry {
                file: "nvidia/cuda_runtime/lib/libcudart.so.12",
                sha256: "abc_-",
                size: 707904
            })
        );
        assert_eq!(parse_line("nvidia_x-1.dist-info/RECORD,,"), None);
        assert_eq!(
            parse_line("nvidia_x-1.dist-info/License.txt,sha256=x,1"),
            None
        );
        assert_eq!(parse_line("\"a,b.so\",sha256=x,1"), None);
        assert_eq!(parse_line("a.so,md5=x,1"), None);
    }

    #[test]
    fn digests_are_written_as_record_writes_them() {
        // sha256("") in RECORD's encoding.
        assert_eq!(
            base64_url_unpadded(&Sha256::digest(b"")),
            "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
        assert_eq!(base64_url_unpadded(b"\xfb\xff"), "-_8");
        assert_eq!(base64_url_unpadded(b"abc"), "YWJj");
    }

    proptest! {
        #[test]
        fn arbitrary_record_lines_never_panic(line in ".{0,200}") {
            let _ = parse_line(&line);
        }
    }
}
