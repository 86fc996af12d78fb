//! Where a bench run's files go: `bench-<host>-<gpu>-<date>` in the results directory, in
//! JSON (canonical), CSV and Markdown; a second run the same day gets `-2`, never overwriting.

use super::format::Format;
use crate::bench::model::BenchReport;
use std::path::{Path, PathBuf};

/// The extensions written, with the format of each.
pub const FORMATS: [(&str, Format); 3] = [
    ("json", Format::Json),
    ("csv", Format::Csv),
    ("md", Format::Markdown),
];

/// Lower-case letters, digits and dashes only.
fn slug(text: &str) -> String {
    let mut slug = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    slug.trim_end_matches('-').to_owned()
}

/// The GPU's short name: `NVIDIA H100 80GB HBM3` is `h100`; `nogpu` without one.
fn gpu_name(report: &BenchReport) -> String {
    report
        .gpu
        .devices
        .first()
        .map(|d| {
            let name = d
                .name
                .trim_start_matches("NVIDIA ")
                .trim_start_matches("Tesla ");
            slug(name.split_whitespace().next().unwrap_or(name))
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "nogpu".to_owned())
}

/// `bench-<host>-<gpu>-<date>`.
pub fn stem(report: &BenchReport) -> String {
    let host = slug(&report.host.hostname);
    let date = report.started.get(..10).unwrap_or("undated");
    format!(
        "bench-{}-{}-{date}",
        if host.is_empty() { "host" } else { &host },
        gpu_name(report)
    )
}

/// The first stem in `dir` (`stem`, `stem-2`, ...) with none of the files taken.
pub fn free_stem(dir: &Path, stem: &str) -> PathBuf {
    let taken = |candidate: &str| {
        FORMATS
            .iter()
            .any(|(ext, _)| dir.join(format!("{candidate}.{ext}")).exists())
    };
    let mut candidate = stem.to_owned();
    let mut n = 2;
    while taken(&candidate) {
        candidate = format!("{stem}-{n}");
        n += 1;
    }
    dir.join(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_host_gpu_and_day() {
        assert_eq!(slug("node-01.cluster"), "node-01-cluster");
        assert_eq!(slug("NVIDIA_H100"), "nvidia-h100");
        let mut report: BenchReport = serde_json::from_value(serde_json::json!({
            "schema": "stackbench.bench/v1", "started": "2026-11-23T04:00:00Z",
            "host": {"hostname": "gpu-7", "os": "linux", "arch": "x86_64", "stackbench_version": "0.1.0"},
            "gpu": {"source": "nvml", "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}], "driver_version": "580.95.05", "note": null},
            "target": "sm_90", "driver_dir": null, "quick": true, "combinations": [], "benchmarks": []
        }))
        .unwrap();
        assert_eq!(stem(&report), "bench-gpu-7-h100-2026-11-23");
        report.gpu.devices.clear();
        assert_eq!(stem(&report), "bench-gpu-7-nogpu-2026-11-23");
    }

    #[test]
    fn a_second_run_the_same_day_does_not_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(free_stem(dir.path(), "b"), dir.path().join("b"));
        std::fs::write(dir.path().join("b.csv"), "").unwrap();
        assert_eq!(free_stem(dir.path(), "b"), dir.path().join("b-2"));
        std::fs::write(dir.path().join("b-2.json"), "").unwrap();
        assert_eq!(free_stem(dir.path(), "b"), dir.path().join("b-3"));
    }
}
