//! Embeds the real GPU runs committed under `results/` (every `bench-*.json`) in the binary: the
//! reference `compare` learns each benchmark's variation between boots from, where a host has no
//! history of its own (`harness/compare/reference.rs`). Which of them are real bench runs is
//! decided when they are read; this only lists the files.

use std::path::Path;

fn main() {
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("results");
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
