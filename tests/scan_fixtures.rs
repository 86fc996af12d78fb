//! The scan of the real fixture toolkits (`ci/fetch-toolkits`), through the library API, checked
//! against what the files themselves contain.
//!
//! Every expected value here was read from the fixture files with other tools first:
//! `readelf -hd` (class, machine, DT_NEEDED, DT_RPATH/DT_RUNPATH, DT_SONAME), `strings -a`
//! (names opened at run time: the library names in the file that are not its soname or in
//! DT_NEEDED), NVIDIA's `cuobjdump --list-elf/--list-ptx` (SASS and PTX targets), `ls -l`
//! (symlink chains), and the layouts' metadata (`version.json`, `conda-meta/*.json`, wheel
//! `METADATA`). Where `cuobjdump` 13.5 cannot read a library (it refuses `sm_35` cubins and stops
//! at cuDNN 8.9.2's `sm_90` cubins with "Invalid ELF"), the targets were read from the
//! fatbinary entry headers with an independent script, and the `sm_90` cubins were
//! decompressed and checked to be valid `EM_CUDA` ELF files for `sm_90`.
//!
//! The scan runs once for all cases.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use rstest::rstest;
use stackbench::discover::{Host, Options};
use stackbench::model::{
    Installation, Layout, Library, ScanReport, SearchRoot, Source, VersionSource,
};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The scan of the fixtures, `--root <fixtures> --no-system`, run once.
fn report() -> &'static ScanReport {
    static REPORT: OnceLock<ScanReport> = OnceLock::new();
    REPORT.get_or_init(|| {
        let options = Options {
            roots: vec![toolkits()],
            system: false,
        };
        stackbench::scan::scan(&options, &Host::default())
    })
}

fn installation(root: &str) -> &'static Installation {
    let want = toolkits().join(root);
    report()
        .installations
        .iter()
        .find(|i| i.root == want)
        .unwrap_or_else(|| {
            let roots: Vec<_> = report().installations.iter().map(|i| &i.root).collect();
            panic!("no installation at {}; found {roots:?}", want.display())
        })
}

fn library(root: &str, name: &str) -> &'static Library {
    let installation = installation(root);
    let found: Vec<&Library> = installation
        .libraries
        .iter()
        .filter(|l| l.name == name)
        .collect();
    match found.as_slice() {
        [one] => one,
        _ => panic!(
            "expected one {name} in {root}, found {}: {:?}",
            found.len(),
            found.iter().map(|l| &l.path).collect::<Vec<_>>()
        ),
    }
}

fn at(relative: &str) -> PathBuf {
    toolkits().join(relative)
}

fn owned(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn searched_only_the_root() {
    assert_eq!(
        report().searched,
        [SearchRoot {
            path: toolkits(),
            source: Source::Root
        }]
    );
}

#[test]
fn finds_exactly_the_eight_installations() {
    let roots: Vec<PathBuf> = report()
        .installations
        .iter()
        .map(|i| i.root.clone())
        .collect();
    // `usr/local/cuda -> cuda-12.9`, `cuda-12.9/lib64 -> targets/x86_64-linux/lib` and the
    // venvs' `lib64 -> lib` name the same directories again: each is one installation.
    let expected: Vec<PathBuf> = [
        CONDA,
        DRIVER_AMD64,
        DRIVER_I386,
        TOOLKIT,
        VENV_CU11,
        VENV_CU12,
        VENV_CUDNN8,
        VENV_NCCL_CU13,
    ]
    .iter()
    .map(|r| at(r))
    .collect();
    assert_eq!(roots, expected);
}

#[test]
fn clean_fixtures_have_no_problems() {
    let problems: Vec<_> = report().all_problems().collect();
    assert!(problems.is_empty(), "{problems:#?}");
}

#[rstest]
#[case::conda(CONDA, Layout::Conda, Some("13.0"), None)]
#[case::driver_amd64(DRIVER_AMD64, Layout::Driver, None, Some("535.261.03"))]
#[case::driver_i386(DRIVER_I386, Layout::Driver, None, Some("535.261.03"))]
#[case::toolkit(TOOLKIT, Layout::Toolkit, Some("12.9"), None)]
#[case::venv_cu11(VENV_CU11, Layout::Pip, Some("11.8"), None)]
#[case::venv_cu12(VENV_CU12, Layout::Pip, Some("12.9"), None)]
// cuDNN 8.9.2 for CUDA 12 beside cuBLAS 11: no runtime wheel, nothing states a CUDA version.
#[case::venv_cudnn8(VENV_CUDNN8, Layout::Pip, None, None)]
#[case::venv_nccl_cu13(VENV_NCCL_CU13, Layout::Pip, Some("12.9"), None)]
fn installations(
    #[case] root: &str,
    #[case] layout: Layout,
    #[case] cuda_version: Option<&str>,
    #[case] driver_version: Option<&str>,
) {
    let i = installation(root);
    assert_eq!(i.layout, layout);
    assert_eq!(i.cuda_version.as_deref(), cuda_version);
    assert_eq!(i.driver_version.as_deref(), driver_version);
    assert_eq!(i.sources, [Source::Root]);
    assert!(i.problems.is_empty(), "{:?}", i.problems);
}

#[rstest]
#[case::conda(CONDA, &[
    "checkpoint", "cudart", "cudnn", "cudnn_adv", "cudnn_cnn", "cudnn_engines_precompiled",
    "cudnn_engines_runtime_compiled", "cudnn_engines_tensor_ir", "cudnn_ext", "cudnn_graph",
    "cudnn_heuristic", "cudnn_ops", "cupti", "nccl", "nvperf_host", "nvperf_target", "nvrtc",
    "nvrtc-builtins", "nvrtc-builtins.alt", "nvrtc.alt",
    "pcsamplingutil",
])]
#[case::driver_amd64(DRIVER_AMD64, &["cuda", "nvidia-ml"])]
#[case::driver_i386(DRIVER_I386, &["cuda"])]
#[case::toolkit(TOOLKIT, &[
    "checkpoint", "cublas", "cublasLt", "cudart", "cudnn", "cudnn_adv", "cudnn_cnn",
    "cudnn_engines_precompiled", "cudnn_engines_runtime_compiled", "cudnn_engines_tensor_ir",
    "cudnn_ext", "cudnn_graph", "cudnn_heuristic", "cudnn_ops", "cupti", "nvblas",
    "nvperf_host", "nvperf_target", "nvrtc", "nvrtc-builtins", "nvrtc-builtins.alt", "nvrtc.alt",
    "pcsamplingutil",
])]
#[case::venv_cu11(VENV_CU11, &[
    "checkpoint", "cublas", "cublasLt", "cudart", "cudnn", "cudnn_adv_infer", "cudnn_adv_train",
    "cudnn_cnn_infer", "cudnn_cnn_train", "cudnn_ops_infer", "cudnn_ops_train", "cupti",
    "nvblas", "nvperf_host", "nvperf_target", "nvrtc", "nvrtc-builtins", "pcsamplingutil",
])]
#[case::venv_cu12(VENV_CU12, &[
    "checkpoint", "cublas", "cublasLt", "cudart", "cudnn", "cudnn_adv", "cudnn_cnn",
    "cudnn_engines_precompiled", "cudnn_engines_runtime_compiled", "cudnn_engines_tensor_ir",
    "cudnn_ext", "cudnn_graph", "cudnn_heuristic", "cudnn_ops", "cupti", "nccl", "nvblas",
    "nvperf_host", "nvperf_target", "nvrtc", "nvrtc-builtins", "nvrtc-builtins.alt", "nvrtc.alt",
    "pcsamplingutil",
])]
#[case::venv_cudnn8(VENV_CUDNN8, &[
    "cublas", "cublasLt", "cudnn", "cudnn_adv_infer", "cudnn_adv_train", "cudnn_cnn_infer",
    "cudnn_cnn_train", "cudnn_ops_infer", "cudnn_ops_train", "nvblas",
])]
#[case::venv_nccl_cu13(VENV_NCCL_CU13, &["cudart", "nccl"])]
fn library_names(#[case] root: &str, #[case] names: &[&str]) {
    let found: Vec<&str> = installation(root)
        .libraries
        .iter()
        .map(|l| l.name.as_str())
        .collect();
    assert_eq!(found, names);
}

/// Where versions come from, short for the table below.
const WHEEL: VersionSource = VersionSource::WheelMetadata;
const NAME: VersionSource = VersionSource::FileName;
const VJSON: VersionSource = VersionSource::VersionJson;
const META: VersionSource = VersionSource::CondaMeta;

#[rustfmt::skip]
#[rstest]
// pip wheels: the version is the wheel's (METADATA + RECORD), not the file name's `.so.8`.
#[case(VENV_CU11,   "cudart",          "libcudart.so.11.0",         "11.8.89",   WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU11,   "cublas",          "libcublas.so.11",           "11.11.3.6", WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU11,   "cublasLt",        "libcublasLt.so.11",         "11.11.3.6", WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU11,   "nvrtc",           "libnvrtc.so.11.2",          "11.8.89",   WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU11,   "nvrtc-builtins",  "libnvrtc-builtins.so.11.8", "11.8.89",   WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU11,   "cupti",           "libcupti.so.11.8",          "11.8.87",   WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU11,   "cudnn",           "libcudnn.so.8",             "8.9.6.50",  WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU11,   "cudnn_ops_infer", "libcudnn_ops_infer.so.8",   "8.9.6.50",  WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU11,   "cudnn_cnn_infer", "libcudnn_cnn_infer.so.8",   "8.9.6.50",  WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU12,   "cudart",          "libcudart.so.12",           "12.9.79",   WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU12,   "cublasLt",        "libcublasLt.so.12",         "12.9.1.4",  WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU12,   "nvrtc",           "libnvrtc.so.12",            "12.9.86",   WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU12,   "nvrtc.alt",       "libnvrtc.alt.so.12",        "12.9.86",   WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU12,   "cupti",           "libcupti.so.12",            "12.9.79",   WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU12,   "cudnn",           "libcudnn.so.9",             "9.28.0.42", WHEEL, "ELF64", "x86_64")]
#[case(VENV_CU12,   "cudnn_engines_precompiled", "libcudnn_engines_precompiled.so.9", "9.28.0.42", WHEEL, "ELF64", "x86_64")]
#[case(VENV_CUDNN8, "cudnn_ops_infer", "libcudnn_ops_infer.so.8",   "8.9.2.26",  WHEEL, "ELF64", "x86_64")]
#[case(VENV_CUDNN8, "cublas",          "libcublas.so.11",           "11.11.3.6", WHEEL, "ELF64", "x86_64")]
// The runfile toolkit: full versions in the real files' names; version.json for the rest.
#[case(TOOLKIT,     "cudart",          "libcudart.so.12",           "12.9.79",   NAME,  "ELF64", "x86_64")]
#[case(TOOLKIT,     "cublas",          "libcublas.so.12",           "12.9.1.4",  NAME,  "ELF64", "x86_64")]
#[case(TOOLKIT,     "nvrtc",           "libnvrtc.so.12",            "12.9.86",   NAME,  "ELF64", "x86_64")]
#[case(TOOLKIT,     "nvrtc-builtins",  "libnvrtc-builtins.so.12.9", "12.9.86",   NAME,  "ELF64", "x86_64")]
#[case(TOOLKIT,     "nvrtc.alt",       "libnvrtc.alt.so.12",        "12.9.86",   NAME,  "ELF64", "x86_64")]
#[case(TOOLKIT,     "nvrtc-builtins.alt", "libnvrtc-builtins.alt.so.12.9", "12.9.86", NAME, "ELF64", "x86_64")]
#[case(TOOLKIT,     "cupti",           "libcupti.so.12",            "2025.2.1",  NAME,  "ELF64", "x86_64")]
#[case(TOOLKIT,     "cudnn",           "libcudnn.so.9",             "9.28.0",    NAME,  "ELF64", "x86_64")]
#[case(TOOLKIT,     "pcsamplingutil",  "libpcsamplingutil.so",      "12.9.79",   VJSON, "ELF64", "x86_64")]
#[case(TOOLKIT,     "checkpoint",      "libcheckpoint.so",          "12.9.79",   VJSON, "ELF64", "x86_64")]
// conda: file names where they carry a full version, conda-meta for unversioned names.
#[case(CONDA,       "cudart",          "libcudart.so.13",           "13.0.96",   NAME,  "ELF64", "x86_64")]
#[case(CONDA,       "nvrtc",           "libnvrtc.so.13",            "13.0.88",   NAME,  "ELF64", "x86_64")]
#[case(CONDA,       "nvrtc.alt",       "libnvrtc.alt.so.13",        "13.0.88",   NAME,  "ELF64", "x86_64")]
#[case(CONDA,       "cupti",           "libcupti.so.13",            "2025.3.1",  NAME,  "ELF64", "x86_64")]
#[case(CONDA,       "checkpoint",      "libcheckpoint.so",          "13.0.85",   META,  "ELF64", "x86_64")]
#[case(CONDA,       "cudnn_ops",       "libcudnn_ops.so.9",         "9.28.0",    NAME,  "ELF64", "x86_64")]
// The driver: Debian's libcuda1/libnvidia-ml1 535.261.03, amd64 and the 32-bit i386 build.
#[case(DRIVER_AMD64, "cuda",           "libcuda.so.1",              "535.261.03", NAME, "ELF64", "x86_64")]
#[case(DRIVER_AMD64, "nvidia-ml",      "libnvidia-ml.so.1",         "535.261.03", NAME, "ELF64", "x86_64")]
#[case(DRIVER_I386,  "cuda",           "libcuda.so.1",              "535.261.03", NAME, "ELF32", "i386")]
fn identity_and_version(
    #[case] root: &str,
    #[case] name: &str,
    #[case] soname: &str,
    #[case] version: &str,
    #[case] version_source: VersionSource,
    #[case] elf_class: &str,
    #[case] machine: &str,
) {
    let l = library(root, name);
    assert_eq!(l.soname.as_deref(), Some(soname), "soname of {name}");
    assert_eq!(l.version.as_deref(), Some(version), "version of {name}");
    assert_eq!(
        l.version_source,
        Some(version_source),
        "version source of {name}"
    );
    assert_eq!(l.elf_class.as_deref(), Some(elf_class));
    assert_eq!(l.machine.as_deref(), Some(machine));
    assert!(l.problems.is_empty(), "{:?}", l.problems);
    let size = std::fs::metadata(&l.real_path).unwrap().len();
    assert_eq!(l.size, size, "size of {}", l.real_path.display());
}

#[rstest]
// Each library's path is its soname link; real_path is the file it finally names.
#[case(
    TOOLKIT,
    "cudart",
    "usr/local/cuda-12.9/targets/x86_64-linux/lib/libcudart.so.12",
    "usr/local/cuda-12.9/targets/x86_64-linux/lib/libcudart.so.12.9.79"
)]
#[case(
    TOOLKIT,
    "cublasLt",
    "usr/local/cuda-12.9/targets/x86_64-linux/lib/libcublasLt.so.12",
    "usr/local/cuda-12.9/targets/x86_64-linux/lib/libcublasLt.so.12.9.1.4"
)]
#[case(
    TOOLKIT,
    "cupti",
    "usr/local/cuda-12.9/targets/x86_64-linux/lib/libcupti.so.12",
    "usr/local/cuda-12.9/targets/x86_64-linux/lib/libcupti.so.2025.2.1"
)]
#[case(
    CONDA,
    "cudart",
    "conda/envs/cu13/lib/libcudart.so.13",
    "conda/envs/cu13/targets/x86_64-linux/lib/libcudart.so.13.0.96"
)]
#[case(
    VENV_CU12,
    "cudart",
    "venv-cu12/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12",
    "venv-cu12/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12"
)]
#[case(
    DRIVER_I386,
    "cuda",
    "driver-535/i386/usr/lib/i386-linux-gnu/nvidia/current/libcuda.so.1",
    "driver-535/i386/usr/lib/i386-linux-gnu/nvidia/current/libcuda.so.535.261.03"
)]
fn paths(#[case] root: &str, #[case] name: &str, #[case] path: &str, #[case] real_path: &str) {
    let l = library(root, name);
    assert_eq!(l.path, at(path));
    assert_eq!(l.real_path, at(real_path));
}

#[rstest]
// The runfile toolkit's soname chain: libcudart.so.12 -> libcudart.so.12.9.79.
#[case::toolkit_cudart(TOOLKIT, "cudart",
    &["usr/local/cuda-12.9/targets/x86_64-linux/lib/libcudart.so.12",
      "usr/local/cuda-12.9/targets/x86_64-linux/lib/libcudart.so.12.9.79"],
    &["usr/local/cuda-12.9/targets/x86_64-linux/lib/libcudart.so",
      "usr/local/cuda-12.9/targets/x86_64-linux/lib/libcudart.so.12.9.79"])]
#[case::driver_libcuda(DRIVER_AMD64, "cuda",
    &["driver-535/amd64/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1",
      "driver-535/amd64/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.535.261.03"],
    &["driver-535/amd64/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so",
      "driver-535/amd64/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.535.261.03"])]
// A wheel's library is a plain file: a chain of one, no other names.
#[case::wheel_plain_file(VENV_CU11, "cudnn_ops_infer",
    &["venv-cu11/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn_ops_infer.so.8"],
    &[])]
// conda's lib/libcudart.so.13 -> ../targets/x86_64-linux/lib/libcudart.so.13 -> libcudart.so.13.0.96:
// two links, three names, each a real path (no `..`, no name twice).
#[case::conda_cudart(CONDA, "cudart",
    &["conda/envs/cu13/lib/libcudart.so.13",
      "conda/envs/cu13/targets/x86_64-linux/lib/libcudart.so.13",
      "conda/envs/cu13/targets/x86_64-linux/lib/libcudart.so.13.0.96"],
    &["conda/envs/cu13/lib/libcudart.so",
      "conda/envs/cu13/lib/libcudart.so.13.0.96",
      "conda/envs/cu13/targets/x86_64-linux/lib/libcudart.so",
      "conda/envs/cu13/targets/x86_64-linux/lib/libcudart.so.13",
      "conda/envs/cu13/targets/x86_64-linux/lib/libcudart.so.13.0.96"])]
fn symlink_chains(
    #[case] root: &str,
    #[case] name: &str,
    #[case] chain: &[&str],
    #[case] aliases: &[&str],
) {
    let l = library(root, name);
    let expected: Vec<PathBuf> = chain.iter().map(|p| at(p)).collect();
    assert_eq!(l.symlink_chain, expected);
    let found: BTreeSet<&PathBuf> = l.aliases.iter().collect();
    let expected: Vec<PathBuf> = aliases.iter().map(|p| at(p)).collect();
    assert_eq!(found, expected.iter().collect::<BTreeSet<_>>());
}

/// Every chain starts at the library's path and ends at its real path, and every name in it
/// but the last is a symlink: the chain shows links, not the same file twice.
#[test]
fn every_chain_is_links_to_the_real_file() {
    for l in report().installations.iter().flat_map(|i| &i.libraries) {
        let chain = &l.symlink_chain;
        assert_eq!(chain.first(), Some(&l.path), "{chain:?}");
        assert_eq!(chain.last(), Some(&l.real_path), "{chain:?}");
        let (last, links) = chain.split_last().unwrap();
        for link in links {
            let meta = std::fs::symlink_metadata(link).unwrap();
            assert!(
                meta.file_type().is_symlink(),
                "{} in the chain of {} is not a link: {chain:#?}",
                link.display(),
                l.path.display()
            );
        }
        assert!(!std::fs::symlink_metadata(last)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(last, &last.canonicalize().unwrap());
    }
}

#[rstest]
// cuDNN 8's cnn_infer needs zlib (on Windows: zlibwapi.dll, the classic "code 126").
#[case(VENV_CU11, "cudnn_cnn_infer", &[
    "libcudnn_ops_infer.so.8", "libz.so.1", "librt.so.1", "libpthread.so.0", "libdl.so.2",
    "libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6", "ld-linux-x86-64.so.2",
])]
#[case(VENV_CUDNN8, "cudnn_cnn_infer", &[
    "libcudnn_ops_infer.so.8", "libz.so.1", "librt.so.1", "libpthread.so.0", "libdl.so.2",
    "libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6", "ld-linux-x86-64.so.2",
])]
// cuDNN 8's ops_infer needs no CUDA library at all at link time: it opens them at run time.
#[case(VENV_CU11, "cudnn_ops_infer", &[
    "librt.so.1", "libpthread.so.0", "libdl.so.2", "libstdc++.so.6", "libm.so.6",
    "libgcc_s.so.1", "libc.so.6", "ld-linux-x86-64.so.2",
])]
#[case(VENV_CU12, "cudnn_adv", &[
    "libcudnn_ops.so.9", "libcudnn_graph.so.9", "libdl.so.2", "libpthread.so.0", "librt.so.1",
    "libz.so.1", "libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6",
    "ld-linux-x86-64.so.2",
])]
#[case(TOOLKIT, "cublas", &[
    "libcublasLt.so.12", "librt.so.1", "libpthread.so.0", "libdl.so.2", "libm.so.6",
    "libgcc_s.so.1", "libc.so.6", "ld-linux-x86-64.so.2",
])]
#[case(CONDA, "cudart", &[
    "libc.so.6", "ld-linux-x86-64.so.2", "libdl.so.2", "libpthread.so.0", "librt.so.1",
])]
#[case(DRIVER_I386, "cuda", &["libm.so.6", "libc.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1"])]
#[case(DRIVER_AMD64, "nvidia-ml", &["libpthread.so.0", "libm.so.6", "libdl.so.2", "libc.so.6", "librt.so.1"])]
fn dt_needed(#[case] root: &str, #[case] name: &str, #[case] needed: &[&str]) {
    assert_eq!(library(root, name).needed, owned(needed));
}

#[rstest]
#[case(VENV_CU11, "cudnn_ops_infer", &[], &["$ORIGIN", "$ORIGIN/../../cublas/lib", "$ORIGIN/../../nvrtc/lib"])]
#[case(VENV_CUDNN8, "cudnn_cnn_infer", &[], &["$ORIGIN", "$ORIGIN/../../cublas/lib", "$ORIGIN/../../nvrtc/lib"])]
#[case(VENV_CU12, "cudnn_adv", &[], &["$ORIGIN", "$ORIGIN/../../cublas/lib", "$ORIGIN/../../cuda_nvrtc/lib"])]
#[case(TOOLKIT, "cublasLt", &[], &["$ORIGIN"])]
#[case(VENV_CU11, "cublasLt", &[], &["$ORIGIN"])]
// cuDNN 9's front library uses the older DT_RPATH.
#[case(TOOLKIT, "cudnn", &["$ORIGIN"], &[])]
#[case(TOOLKIT, "cudart", &[], &[])]
#[case(DRIVER_AMD64, "cuda", &[], &[])]
fn search_paths(
    #[case] root: &str,
    #[case] name: &str,
    #[case] rpath: &[&str],
    #[case] runpath: &[&str],
) {
    let l = library(root, name);
    assert_eq!(l.rpath, owned(rpath), "rpath of {name}");
    assert_eq!(l.runpath, owned(runpath), "runpath of {name}");
}

#[rstest]
// cuDNN 8.9 for CUDA 11 opens cuBLAS 11, plain libnvrtc.so and the driver at run time.
#[case(VENV_CU11, "cudnn_ops_infer", &[
    "libcublas.so.11", "libcublasLt.so.11", "libcuda.so", "libcuda.so.1", "libnvrtc.so",
])]
// cuDNN 8.9.2 for CUDA 12 wants cuBLAS 12, and this environment only has cuBLAS 11.
#[case(VENV_CUDNN8, "cudnn_ops_infer", &[
    "libcublas.so.12", "libcublasLt.so.12", "libcuda.so", "libcuda.so.1", "libnvrtc.so",
])]
#[case(VENV_CU11, "cublasLt", &["libcuda.so.1", "libnvrtc.so"])]
#[case(VENV_CU11, "nvrtc", &["libnvrtc-builtins.so.11.8"])]
#[case(VENV_CU12, "cudnn_adv", &["libcublasLt.so.12", "libcuda.so.1"])]
#[case(TOOLKIT, "cudart", &["libcuda.so.1"])]
#[case(TOOLKIT, "nvrtc", &["libcuda.so.1", "libnvrtc-builtins.so.12.9"])]
// The alternative NVRTC build opens its own builtins.
#[case(VENV_CU12, "nvrtc.alt", &["libcuda.so.1", "libnvrtc-builtins.alt.so.12.9"])]
#[case(TOOLKIT, "cudnn", &[
    "libcudnn_adv.so", "libcudnn_cnn.so", "libcudnn_ext.so", "libcudnn_graph.so", "libcudnn_ops.so",
])]
#[case(CONDA, "cudnn_adv", &["libcublasLt.so.13", "libcuda.so.1"])]
#[case(DRIVER_AMD64, "nvidia-ml", &["libcuda.so.1"])]
#[case(DRIVER_I386, "cuda", &[
    "libEGL.so.1", "libGL.so.1", "libGLX_nvidia.so.0", "libnvidia-nvvm.so.4",
    "libnvidia-pkcs11-openssl3.so.535.261.03", "libnvidia-pkcs11.so.535.261.03",
    "libnvidia-ptxjitcompiler.so.1",
])]
fn opened_at_run_time(#[case] root: &str, #[case] name: &str, #[case] deps: &[&str]) {
    let l = library(root, name);
    assert_eq!(l.dlopen_deps, owned(deps));
    for needed in &l.needed {
        assert!(
            !l.dlopen_deps.contains(needed),
            "{needed} is in DT_NEEDED, not opened at run time"
        );
    }
}

const CUDNN8_SASS: &[&str] = &[
    "sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90",
];
const CUDNN9_SASS: &[&str] = &["sm_75", "sm_80", "sm_86", "sm_90a", "sm_100", "sm_120"];

#[rstest]
// As `cuobjdump --list-elf` / `--list-ptx` list them.
#[case(VENV_CU11, "cudnn_ops_infer", CUDNN8_SASS, &["compute_90"])]
#[case(VENV_CU11, "cudnn_cnn_infer", CUDNN8_SASS, &["compute_52", "compute_90"])]
#[case(TOOLKIT, "cublas", &[
    "sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120",
], &["compute_120"])]
#[case(TOOLKIT, "cublasLt", &[
    "sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a",
    "sm_100", "sm_103", "sm_120", "sm_121",
], &["compute_52", "compute_120"])]
#[case(TOOLKIT, "cudnn_adv", CUDNN9_SASS, &["compute_120f"])]
#[case(VENV_CU12, "cudnn_cnn", CUDNN9_SASS, &["compute_120f"])]
#[case(CONDA, "cudnn_engines_tensor_ir", &[
    "sm_75", "sm_80", "sm_86", "sm_90", "sm_90a", "sm_100", "sm_103", "sm_107", "sm_120",
], &["compute_75", "compute_120f"])]
// cuDNN 9.28's tensor_ir engine for CUDA 12 has no .nv_fatbin section at all.
#[case(TOOLKIT, "cudnn_engines_tensor_ir", &[], &[])]
#[case(TOOLKIT, "cudart", &[], &[])]
#[case(DRIVER_AMD64, "cuda", &[], &[])]
// cuobjdump 13.5 refuses these ("Support for 'sm_35' has been removed"); read from the
// fatbinary entry headers.
#[case(VENV_CU11, "cublas", &[
    "sm_35", "sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90",
], &["compute_90"])]
// cuobjdump 13.5 stops at the first sm_90 cubin of cuDNN 8.9.2 with "Invalid ELF" and so lists
// SASS only up to sm_86; the entry headers (and the decompressed cubins, EM_CUDA with
// e_flags sm_90) show sm_90 SASS is there.
#[case(VENV_CUDNN8, "cudnn_ops_infer", CUDNN8_SASS, &["compute_90"])]
fn gpu_code(#[case] root: &str, #[case] name: &str, #[case] sass: &[&str], #[case] ptx: &[&str]) {
    let l = library(root, name);
    assert_eq!(l.sass, owned(sass), "SASS of {name}");
    assert_eq!(l.ptx, owned(ptx), "PTX of {name}");
}

#[test]
fn the_i386_driver_is_32_bit() {
    let l = library(DRIVER_I386, "cuda");
    assert_eq!(l.elf_class.as_deref(), Some("ELF32"));
    assert_eq!(l.machine.as_deref(), Some("i386"));
    let amd64 = library(DRIVER_AMD64, "cuda");
    assert_eq!(amd64.elf_class.as_deref(), Some("ELF64"));
    assert_eq!(amd64.machine.as_deref(), Some("x86_64"));
    assert_ne!(l.real_path, amd64.real_path);
}

#[test]
fn every_library_is_read() {
    for i in &report().installations {
        for l in &i.libraries {
            assert!(l.soname.is_some(), "{} has no soname", l.path.display());
            assert!(l.elf_class.is_some() && l.machine.is_some());
            assert!(l.version.is_some(), "{} has no version", l.path.display());
            assert!(!l.needed.is_empty(), "{} needs nothing", l.path.display());
            assert!(
                l.real_path.starts_with(&i.root),
                "{} is outside {}",
                l.real_path.display(),
                i.root.display()
            );
        }
    }
}

/// NCCL's banner, as `strings` shows it in each wheel's `libnccl.so.2` (`.rodata`); no other
/// library says what it was built for this way.
#[rstest]
#[case::cu12_venv(VENV_CU12, "2.27.5", "12.9", "NCCL version 2.27.5+cuda12.9")]
#[case::conda_cu13(CONDA, "2.27.7", "13.0", "NCCL version 2.27.7+cuda13.0")]
#[case::cu13_beside_cu12(VENV_NCCL_CU13, "2.27.7", "13.0", "NCCL version 2.27.7+cuda13.0")]
fn nccl_says_the_cuda_it_was_built_for(
    #[case] root: &str,
    #[case] version: &str,
    #[case] cuda: &str,
    #[case] said: &str,
) {
    let l = library(root, "nccl");
    assert_eq!(l.version.as_deref(), Some(version));
    let built = l.built_for.as_ref().expect("NCCL's banner");
    assert_eq!(
        (
            built.version.as_str(),
            built.cuda.as_str(),
            built.said.as_str()
        ),
        (version, cuda, said)
    );
    let others = report()
        .installations
        .iter()
        .flat_map(|i| &i.libraries)
        .filter(|l| l.name != "nccl" && l.built_for.is_some())
        .count();
    assert_eq!(others, 0);
}
