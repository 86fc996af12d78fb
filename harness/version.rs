//! What `stackbench --version` says: the release, the commit and date of the build, the target,
//! and the oldest glibc the binary runs on, read from the binary's own symbol versions.

use crate::model::VersionNeed;
use std::path::{Path, PathBuf};

/// The release, as in Cargo.toml.
pub const RELEASE: &str = env!("CARGO_PKG_VERSION");
/// The git commit the binary was built from (`-dirty` when its sources differed from it).
pub const COMMIT: &str = env!("STACKBENCH_COMMIT");
/// The target triple it was built for.
pub const TARGET: &str = env!("STACKBENCH_TARGET");
/// When it was built, in seconds since the Unix epoch.
const BUILD_EPOCH: &str = env!("STACKBENCH_BUILD_EPOCH");

/// The text `--version` prints: a first line like rustc's, then one fact per line.
pub fn describe() -> String {
    let built = BUILD_EPOCH
        .parse()
        .map_or_else(|_| "unknown".to_owned(), crate::timestamp::rfc3339);
    let short = COMMIT.get(..12).unwrap_or(COMMIT);
    let date = built.get(..10).unwrap_or(&built);
    format!(
        "stackbench {RELEASE} ({short} {date})\ncommit: {COMMIT}\nbuilt: {built}\ntarget: {TARGET}\nglibc: {}\n",
        glibc_line(),
    )
}

/// The oldest glibc this very binary runs on, or why that is unknown.
fn glibc_line() -> String {
    let Some(exe) = this_binary() else {
        return "unknown (cannot find this binary: /proc is not mounted and argv[0] is no path)"
            .to_owned();
    };
    match oldest_glibc_of(&exe) {
        Ok(Some(version)) => format!("{version} or newer"),
        Ok(None) => "not needed (no GLIBC symbol versions)".to_owned(),
        Err(e) => format!("unknown ({e})"),
    }
}

/// This binary's file: `/proc/self/exe`, else (in a chroot without /proc) `argv[0]` where it
/// names a file.
fn this_binary() -> Option<PathBuf> {
    std::env::current_exe().ok().or_else(|| {
        let argv0 = PathBuf::from(std::env::args_os().next()?);
        (argv0.components().count() > 1 && argv0.is_file()).then_some(argv0)
    })
}

/// The oldest glibc an ELF file at `path` runs on: the newest `GLIBC_x.y` it needs.
pub fn oldest_glibc_of(path: &Path) -> Result<Option<String>, crate::elf::ElfError> {
    Ok(newest_glibc(&crate::elf::read_path(path)?.version_needs))
}

/// The newest `GLIBC_x.y[.z]` among the versions needed, without its prefix.
fn newest_glibc(needs: &[VersionNeed]) -> Option<String> {
    needs
        .iter()
        .flat_map(|need| &need.versions)
        .filter_map(|v| v.strip_prefix("GLIBC_"))
        .filter_map(|v| {
            let parts: Option<Vec<u32>> = v.split('.').map(|p| p.parse().ok()).collect();
            parts.map(|parts| (parts, v))
        })
        .max()
        .map(|(_, v)| v.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(file: &str, versions: &[&str]) -> VersionNeed {
        VersionNeed {
            file: file.into(),
            versions: versions.iter().map(|v| (*v).to_owned()).collect(),
        }
    }

    #[test]
    fn newest_glibc_compares_versions_as_numbers_across_libraries() {
        let needs = [
            need("libc.so.6", &["GLIBC_2.9", "GLIBC_2.2.5", "GLIBC_PRIVATE"]),
            need("libm.so.6", &["GLIBC_2.27"]),
            need("libgcc_s.so.1", &["GCC_3.0"]),
            need("libpthread.so.0", &["GLIBC_2.12"]),
        ];
        assert_eq!(newest_glibc(&needs).as_deref(), Some("2.27"));
        assert_eq!(newest_glibc(&[need("libgcc_s.so.1", &["GCC_4.2.0"])]), None);
    }

    #[test]
    fn this_test_binary_needs_a_glibc_and_describe_names_it() {
        let exe = std::env::current_exe().unwrap();
        let version = oldest_glibc_of(&exe).unwrap().expect("a glibc build");
        assert!(version.starts_with("2."), "{version}");
        let text = describe();
        assert!(
            text.starts_with(&format!("stackbench {RELEASE} (")),
            "{text}"
        );
        assert!(text.contains(&format!("commit: {COMMIT}\n")), "{text}");
        assert!(text.contains("\nbuilt: 20"), "{text}");
        assert!(
            text.contains(&format!("\nglibc: {version} or newer\n")),
            "{text}"
        );
    }
}
