//! Embeds the real GPU runs committed under `results/` (every `bench-*.json`) in the binary: the
//! reference `compare` learns each benchmark's variation between boots from, where a host has no
//! history of its own (`harness/compare/reference.rs`). Which of them are real bench runs is
//! decided when they are read; this only lists the files.
//!
//! Also stamps the build for `stackbench --version`: the git commit it was built from (`-dirty`
//! when the binary's sources differ from it) and when it was built (`SOURCE_DATE_EPOCH` where set,
//! for a reproducible build).

// The build reads this checkout, never a host: std's readers are its to use (clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let root = Path::new(&root);
    embed_reference_runs(root);
    stamp_build(root);
}

/// The binary's own sources: an edit to any of them is a new build with a new stamp.
const SOURCES: [&str; 4] = ["harness", "Cargo.toml", "Cargo.lock", "build.rs"];

/// `STACKBENCH_COMMIT`, `STACKBENCH_BUILD_EPOCH` and `STACKBENCH_TARGET` for the binary; a build outside a git
/// checkout (a source archive) takes the commit from `STACKBENCH_COMMIT`, else says `unknown`.
fn stamp_build(root: &Path) {
    for source in SOURCES {
        println!("cargo:rerun-if-changed={}", root.join(source).display());
    }
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    println!("cargo:rerun-if-env-changed=STACKBENCH_COMMIT");
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let commit = match git(&["rev-parse", "HEAD"]) {
        Some(head) => {
            // A new commit or branch moves HEAD: stamp again.
            for file in ["HEAD", "packed-refs", "refs"] {
                if let Some(path) = git(&["rev-parse", "--git-path", file]) {
                    println!("cargo:rerun-if-changed={}", root.join(path).display());
                }
            }
            let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
            status.extend(SOURCES);
            let dirty = git(&status).is_some_and(|changes| !changes.is_empty());
            format!("{head}{}", if dirty { "-dirty" } else { "" })
        }
        None => std::env::var("STACKBENCH_COMMIT").unwrap_or_else(|_| "unknown".into()),
    };
    let epoch = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        });
    println!("cargo:rustc-env=STACKBENCH_COMMIT={commit}");
    println!("cargo:rustc-env=STACKBENCH_BUILD_EPOCH={epoch}");
    println!(
        "cargo:rustc-env=STACKBENCH_TARGET={}",
        std::env::var("TARGET").unwrap()
    );
}

/// `REFERENCE_RUNS`: every committed bench file, by name and text.
fn embed_reference_runs(root: &Path) {
    let dir = root.join("results");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with("bench-") && name.ends_with(".json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let entries: String = files
        .iter()
        .map(|name| {
            format!(
                "    ({name:?}, include_str!({:?})),\n",
                dir.join(name).display().to_string()
            )
        })
        .collect();
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("reference_runs.rs");
    std::fs::write(
        out,
        format!("/// Each committed bench file under `results/`: its name and its text.\npub const REFERENCE_RUNS: &[(&str, &str)] = &[\n{entries}];\n"),
    )
    .unwrap();
}
