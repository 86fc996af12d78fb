//! Every exporter's output for one small, hand-built report, kept as insta snapshots.
//!
//! The report is fixed (host, paths, versions), so the snapshots change only when an exporter
//! does. Review a change with `INSTA_UPDATE=always cargo test --test report_snapshots` and a
//! diff of `tests/snapshots/`.

use stackbench::model::*;
use stackbench::report::exporter;
use stackbench::report::format::Format;
use stackbench::tags::SCAN_SCHEMA;
use std::path::PathBuf;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn paths(items: &[&str]) -> Vec<PathBuf> {
    items.iter().map(PathBuf::from).collect()
}

/// Two installations: a runfile toolkit (cudart, cuBLASLt) and a pip environment with cuDNN 8
/// (one library damaged), plus a problem outside any installation.
fn report() -> ScanReport {
    let toolkit_lib = "/usr/local/cuda-12.9/targets/x86_64-linux/lib";
    let cudart = Library {
        name: "cudart".into(),
        soname: Some("libcudart.so.12".into()),
        path: format!("{toolkit_lib}/libcudart.so.12").into(),
        real_path: format!("{toolkit_lib}/libcudart.so.12.9.79").into(),
        symlink_chain: vec![
            format!("{toolkit_lib}/libcudart.so.12").into(),
            format!("{toolkit_lib}/libcudart.so.12.9.79").into(),
        ],
        aliases: vec![format!("{toolkit_lib}/libcudart.so").into()],
        version: Some("12.9.79".into()),
        version_source: Some(VersionSource::FileName),
        size: 741_088,
        elf_class: Some("ELF64".into()),
        machine: Some("x86_64".into()),
        needed: strings(&["libc.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1"]),
        version_needs: vec![VersionNeed {
            file: "libc.so.6".into(),
            versions: strings(&["GLIBC_2.2.5", "GLIBC_2.17"]),
        }],
        version_defs: strings(&["libcudart.so.12"]),
        dlopen_deps: strings(&["libcuda.so.1"]),
        ..Library::default()
    };
    let cublaslt = Library {
        name: "cublasLt".into(),
        soname: Some("libcublasLt.so.12".into()),
        path: format!("{toolkit_lib}/libcublasLt.so.12").into(),
        real_path: format!("{toolkit_lib}/libcublasLt.so.12.9.1.4").into(),
        symlink_chain: vec![
            format!("{toolkit_lib}/libcublasLt.so.12").into(),
            format!("{toolkit_lib}/libcublasLt.so.12.9.1.4").into(),
        ],
        version: Some("12.9.1.4".into()),
        version_source: Some(VersionSource::FileName),
        size: 749_205_904,
        elf_class: Some("ELF64".into()),
        machine: Some("x86_64".into()),
        needed: strings(&["libdl.so.2", "libc.so.6"]),
        runpath: strings(&["$ORIGIN"]),
        dlopen_deps: strings(&["libcuda.so.1", "libnvrtc.so.12"]),
        sass: strings(&["sm_80", "sm_90", "sm_90a", "sm_120"]),
        ptx: strings(&["compute_52", "compute_120"]),
        ..Library::default()
    };
    let site = "/opt/venv/lib/python3.11/site-packages";
    let cudnn_lib = format!("{site}/nvidia/cudnn/lib");
    let ops_infer = Library {
        name: "cudnn_ops_infer".into(),
        soname: Some("libcudnn_ops_infer.so.8".into()),
        path: format!("{cudnn_lib}/libcudnn_ops_infer.so.8").into(),
        real_path: format!("{cudnn_lib}/libcudnn_ops_infer.so.8").into(),
        symlink_chain: paths(&[&format!("{cudnn_lib}/libcudnn_ops_infer.so.8")]),
        version: Some("8.9.2.26".into()),
        version_source: Some(VersionSource::WheelMetadata),
        size: 90_621_456,
        elf_class: Some("ELF64".into()),
        machine: Some("x86_64".into()),
        needed: strings(&["libstdc++.so.6", "libc.so.6"]),
        runpath: strings(&[
            "$ORIGIN",
            "$ORIGIN/../../cublas/lib",
            "$ORIGIN/../../nvrtc/lib",
        ]),
        dlopen_deps: strings(&[
            "libcublas.so.12",
            "libcublasLt.so.12",
            "libcuda.so.1",
            "libnvrtc.so",
        ]),
        sass: strings(&["sm_50", "sm_86", "sm_90"]),
        ptx: strings(&["compute_90"]),
        ..Library::default()
    };
    let damaged_path = format!("{cudnn_lib}/libcudnn_cnn_infer.so.8");
    let cnn_infer = Library {
        name: "cudnn_cnn_infer".into(),
        path: damaged_path.clone().into(),
        real_path: damaged_path.clone().into(),
        symlink_chain: paths(&[&damaged_path]),
        version: Some("8.9.2.26".into()),
        version_source: Some(VersionSource::WheelMetadata),
        size: 1000,
        problems: vec![Problem {
            kind: ProblemKind::Truncated,
            path: damaged_path.clone().into(),
            message: "truncated ELF file: section headers end at byte 647551272, past the end \
                      of the 1000-byte file; the file is cut short; reinstall the package it \
                      came from"
                .into(),
        }],
        ..Library::default()
    };
    ScanReport {
        schema: SCAN_SCHEMA.into(),
        host: HostInfo {
            hostname: "gpu-host-01".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            stackbench_version: "0.1.0".into(),
            boot_id: None,
        },
        searched: vec![
            SearchRoot {
                path: "/usr/local/cuda-12.9".into(),
                source: Source::UsrLocal,
            },
            SearchRoot {
                path: site.into(),
                source: Source::Python,
            },
        ],
        installations: vec![
            Installation {
                root: "/usr/local/cuda-12.9".into(),
                layout: Layout::Toolkit,
                cuda_version: Some("12.9".into()),
                driver_version: None,
                sources: vec![Source::LdSoConf, Source::UsrLocal],
                libraries: vec![cublaslt, cudart],
                problems: vec![],
                platforms: Vec::new(),
            },
            Installation {
                root: site.into(),
                layout: Layout::Pip,
                cuda_version: None,
                driver_version: None,
                sources: vec![Source::Python],
                libraries: vec![cnn_infer, ops_infer],
                problems: vec![Problem {
                    kind: ProblemKind::BrokenSymlink,
                    path: format!("{site}/nvidia/cublas/lib/libcublas.so.12").into(),
                    message: "symlink points at nothing: libcublas.so.12 -> \
                              libcublas.so.12.9.1.4; reinstall or remove the link"
                        .into(),
                }],
                platforms: Vec::new(),
            },
        ],
        problems: vec![Problem {
            kind: ProblemKind::Unreadable,
            path: "/opt/private".into(),
            message: "Permission denied (os error 13)".into(),
        }],
    }
}

fn render(format: Format, color: bool) -> String {
    let bytes = exporter(format, color)
        .scan(&report())
        .expect("the report renders");
    String::from_utf8(bytes).expect("reports are UTF-8")
}

#[test]
fn terminal() {
    let text = render(Format::Terminal, false);
    assert!(!text.contains('\x1b'));
    insta::assert_snapshot!("terminal", text);
}

#[test]
fn terminal_color() {
    let text = render(Format::Terminal, true);
    assert!(text.contains("\x1b["));
    // The colour codes are the only difference from the plain report.
    let mut plain = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find('\x1b') {
        plain.push_str(&rest[..at]);
        let end = rest[at..].find('m').expect("an SGR sequence ends in m");
        rest = &rest[at + end + 1..];
    }
    plain.push_str(rest);
    assert_eq!(plain, render(Format::Terminal, false));
    // Escapes shown as text, so the snapshot file stays readable.
    insta::assert_snapshot!("terminal_color", text.replace('\x1b', "\\e"));
}

#[test]
fn csv() {
    insta::assert_snapshot!("csv", render(Format::Csv, false));
}

#[test]
fn markdown() {
    insta::assert_snapshot!("markdown", render(Format::Markdown, false));
}

#[test]
fn json() {
    let text = render(Format::Json, false);
    insta::assert_snapshot!("json", text);
}

#[test]
fn json_round_trips() {
    let text = render(Format::Json, false);
    let back: ScanReport = serde_json::from_str(&text).expect("the JSON reads back");
    assert_eq!(back, report());
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["schema"], SCAN_SCHEMA);
}

#[test]
fn color_changes_only_the_terminal_report() {
    for format in [Format::Json, Format::Csv, Format::Markdown] {
        assert_eq!(render(format, true), render(format, false), "{format:?}");
    }
}
