//! Version metadata that layouts keep beside their libraries: a toolkit's `version.json`,
//! a conda environment's `conda-meta/*.json`, a wheel's `*.dist-info/METADATA` and `RECORD`.

use crate::hostfs;
use crate::model::{Problem, ProblemKind, VersionSource};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Versions an installation's metadata gives, keyed so libraries can look theirs up.
#[derive(Debug, Default)]
pub struct Metadata {
    /// The CUDA version the metadata states for the whole installation (`12.9.1`).
    pub cuda_version: Option<String>,
    /// Version per file (canonical path), from conda-meta or a wheel's RECORD.
    pub by_file: HashMap<PathBuf, String>,
    /// Version per `version.json` component key (`cuda_cudart`).
    pub by_component: HashMap<String, String>,
    /// Where these versions came from.
    pub source: Option<VersionSource>,
    pub problems: Vec<Problem>,
    /// What the packages say they were built for, with the file that says it
    /// ([`crate::model::Installation::platforms`]).
    pub platforms: Vec<String>,
}

/// Reads a runfile toolkit's `version.json`.
pub fn toolkit(root: &Path) -> Metadata {
    let mut meta = Metadata {
        source: Some(VersionSource::VersionJson),
        ..Metadata::default()
    };
    let path = root.join("version.json");
    let text = match hostfs::read_to_string(&path, hostfs::TEXT) {
        Ok(text) => text,
        Err(e) if e.is_not_found() => return meta,
        Err(e) => {
            meta.problems.push(unread(&path, &e));
            return meta;
        }
    };
    #[derive(Deserialize)]
    struct Component {
        version: String,
    }
    match serde_json::from_str::<HashMap<String, Component>>(&text) {
        Ok(components) => {
            for (key, component) in components {
                if key == "cuda" {
                    meta.cuda_version = Some(component.version);
                } else {
                    meta.by_component.insert(key, component.version);
                }
            }
        }
        Err(e) => meta.problems.push(malformed(&path, e)),
    }
    meta
}

/// Reads a conda environment's `conda-meta/*.json` package records.
pub fn conda(prefix: &Path) -> Metadata {
    #[derive(Deserialize)]
    struct Record {
        name: String,
        version: String,
        #[serde(default)]
        files: Listed,
        #[serde(default)]
        subdir: Option<String>,
    }
    let mut meta = Metadata {
        source: Some(VersionSource::CondaMeta),
        ..Metadata::default()
    };
    for path in files_with_extension(&prefix.join("conda-meta"), "json") {
        // Parsed as it is read: of a record's text only what a finding needs is kept.
        let reader = match hostfs::reader(&path, hostfs::LISTING) {
            Ok(reader) => reader,
            Err(e) => {
                meta.problems.push(unread(&path, &e));
                continue;
            }
        };
        match serde_json::from_reader::<_, Record>(reader) {
            Ok(record) if record.files.count > RECORD_LINES => meta.problems.push(Problem {
                kind: ProblemKind::TooLarge,
                path: path.clone(),
                message: format!(
                    "skipped: lists {} files, more than {RECORD_LINES} for a package record; versions fall back to file names",
                    record.files.count
                ),
            }),
            Ok(record) => {
                if record.name == "cuda-version"
                    || (record.name == "cuda-cudart" && meta.cuda_version.is_none())
                {
                    meta.cuda_version = Some(record.version.clone());
                }
                let mut libraries = record.files.libraries.iter().peekable();
                if let (Some(subdir), Some(_)) = (&record.subdir, libraries.peek()) {
                    meta.platforms
                        .push(format!("{}: subdir {subdir}", shown(prefix, &path)));
                }
                for file in libraries {
                    meta.by_file
                        .insert(prefix.join(file), record.version.clone());
                }
            }
            Err(e) => meta.problems.push(malformed(&path, e)),
        }
    }
    meta
}

/// Of a conda record's `files`, the libraries (`.so`), at most [`RECORD_LINES`] of them, and
/// how many files it lists: a list of millions costs its count, not its names.
#[derive(Default)]
struct Listed {
    libraries: Vec<String>,
    count: usize,
}

impl<'de> Deserialize<'de> for Listed {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Files;
        impl<'de> serde::de::Visitor<'de> for Files {
            type Value = Listed;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of file names")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Listed, A::Error> {
                let mut listed = Listed::default();
                while let Some(file) = seq.next_element::<String>()? {
                    listed.count += 1;
                    if file.contains(".so") && listed.libraries.len() < RECORD_LINES {
                        listed.libraries.push(file);
                    }
                }
                Ok(listed)
            }
        }
        deserializer.deserialize_seq(Files)
    }
}

/// Reads the `METADATA` and `RECORD` of NVIDIA's wheels (`nvidia_*.dist-info`) in a site-packages.
pub fn wheels(site_packages: &Path) -> Metadata {
    let mut meta = Metadata {
        source: Some(VersionSource::WheelMetadata),
        ..Metadata::default()
    };
    for dist_info in nvidia_dist_infos(site_packages) {
        let metadata_path = dist_info.join("METADATA");
        let text = match hostfs::read_to_string(&metadata_path, hostfs::TEXT) {
            Ok(text) => text,
            Err(e) => {
                meta.problems.push(unread(&metadata_path, &e));
                continue;
            }
        };
        let Some((name, version)) = name_and_version(&text) else {
            meta.problems.push(Problem {
                kind: ProblemKind::MalformedMetadata,
                path: metadata_path,
                message: "wheel METADATA has no Name and Version; reinstall the wheel".into(),
            });
            continue;
        };
        if name.starts_with("nvidia-cuda-runtime") {
            meta.cuda_version = Some(version.clone());
        }
        let wheel_path = dist_info.join("WHEEL");
        if let Ok(wheel) = hostfs::read_to_string(&wheel_path, hostfs::TEXT) {
            let tags = wheel.lines().filter_map(|l| l.strip_prefix("Tag:"));
            for tag in tags {
                let from = shown(site_packages, &wheel_path);
                meta.platforms.push(format!("{from}: Tag: {}", tag.trim()));
            }
        }
        let record_path = dist_info.join("RECORD");
        let record = match read_record(&record_path) {
            Ok(text) => text,
            Err(e) if e.is_not_found() => String::new(),
            Err(e) => {
                meta.problems.push(unread(&record_path, &e));
                String::new()
            }
        };
        for line in record.lines() {
            let file = line.split(',').next().unwrap_or("");
            if is_library_file(file) {
                meta.by_file
                    .insert(site_packages.join(file), version.clone());
            }
        }
    }
    meta
}

/// The most lines of a wheel's `RECORD` read (one per file the wheel installed) and the most
/// files a conda package record may list: NVIDIA's packages list at most a few thousand (CCCL's
/// headers). A listing past it is refused.
pub const RECORD_LINES: usize = 100_000;

/// The text of a wheel's `RECORD` (`file,hash,size` lines), read line by line within
/// [`hostfs::LISTING`] bytes and [`RECORD_LINES`] lines.
pub fn read_record(path: &Path) -> Result<String, hostfs::ReadError> {
    hostfs::read_lines(path, hostfs::LISTING, RECORD_LINES)
}

/// Whether a path a RECORD lists is a shared library or a DLL, by its file name.
pub fn is_library_file(file: &str) -> bool {
    let name = file.rsplit('/').next().unwrap_or(file).to_ascii_lowercase();
    name.contains(".so") || name.ends_with(".dll")
}

/// The `nvidia_*.dist-info` directories of a site-packages, sorted; none when it cannot be read.
pub fn nvidia_dist_infos(site_packages: &Path) -> Vec<PathBuf> {
    hostfs::entries(site_packages)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("nvidia_") && n.ends_with(".dist-info"))
        })
        .collect()
}

/// `Name` and `Version` from a wheel's METADATA (RFC 822 style headers).
pub fn name_and_version(text: &str) -> Option<(String, String)> {
    let header = |key: &str| {
        text.lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
    };
    Some((header("Name:")?, header("Version:")?))
}

/// `path` as evidence: below `root`, where it is.
fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    hostfs::entries(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect()
}

/// A metadata file that exists but was not read (a FIFO, a device, too large, unreadable).
pub fn unread(path: &Path, error: &hostfs::ReadError) -> Problem {
    Problem {
        kind: ProblemKind::of_read_error(error),
        path: path.to_path_buf(),
        message: format!("{error}; versions fall back to file names"),
    }
}

fn malformed(path: &Path, e: impl std::fmt::Display) -> Problem {
    Problem {
        kind: ProblemKind::MalformedMetadata,
        path: path.to_path_buf(),
        message: format!("cannot read version metadata ({e}); versions fall back to file names"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::fs;

    #[test]
    fn reads_wheel_headers() {
        let text =
            "Metadata-Version: 2.1\nName: nvidia-cublas-cu12\nVersion: 12.9.1.4\n\nName: body\n";
        assert_eq!(
            name_and_version(text),
            Some(("nvidia-cublas-cu12".into(), "12.9.1.4".into()))
        );
        assert_eq!(name_and_version("Name: x\n"), None);
    }

    #[test]
    fn malformed_files_become_problems() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("version.json"), "{not json").unwrap();
        let meta = toolkit(dir.path());
        assert_eq!(meta.problems[0].kind, ProblemKind::MalformedMetadata);
        fs::create_dir(dir.path().join("conda-meta")).unwrap();
        fs::write(dir.path().join("conda-meta/x-1-0.json"), "[]").unwrap();
        assert_eq!(conda(dir.path()).problems.len(), 1);
        fs::create_dir(dir.path().join("nvidia_x-1.dist-info")).unwrap();
        assert_eq!(wheels(dir.path()).problems.len(), 1);
    }

    #[test]
    fn a_conda_record_listing_more_files_than_any_package_is_too_large() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("conda-meta")).unwrap();
        let files = |n: usize| {
            (0..n)
                .map(|i| format!("\"lib/lib{i}.so\""))
                .collect::<Vec<_>>()
                .join(",")
        };
        let record = |n| {
            format!(
                r#"{{"name":"cuda-cudart","version":"12.9.79","files":[{}]}}"#,
                files(n)
            )
        };
        fs::write(dir.path().join("conda-meta/a-1-0.json"), record(3)).unwrap();
        let meta = conda(dir.path());
        assert!(meta.problems.is_empty(), "{:?}", meta.problems);
        assert_eq!(meta.by_file.len(), 3);
        fs::write(
            dir.path().join("conda-meta/a-1-0.json"),
            record(RECORD_LINES + 1),
        )
        .unwrap();
        let meta = conda(dir.path());
        assert_eq!(meta.problems.len(), 1);
        assert_eq!(meta.problems[0].kind, ProblemKind::TooLarge);
        assert!(meta.by_file.is_empty());
    }

    proptest! {
        #[test]
        fn metadata_headers_never_panic(text in ".{0,400}") {
            let _ = name_and_version(&text);
        }
    }
}
