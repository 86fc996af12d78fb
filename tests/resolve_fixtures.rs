//! `resolve` and `compat` on the real NVIDIA fixture libraries (`ci/fetch-toolkits`).
//!
//! The search contexts here have no ld.so.cache and no default directories, so the results do
//! not depend on the host's own libraries.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;
use common::toolkits;

use stackbench::compat::{self, ComputeCapability, CudaVersion, DriverVerdict, KernelSupport};
use stackbench::elf;
use stackbench::resolve::{self, AttemptResult, Requester, SearchContext, SearchStep};
use std::path::{Path, PathBuf};

const SITE: &str = "lib/python3.11/site-packages";
const I386_DRIVER: &str = "driver-535/i386/usr/lib/i386-linux-gnu/nvidia/current";
const AMD64_DRIVER: &str = "driver-535/amd64/usr/lib/x86_64-linux-gnu/nvidia/current";

fn bare() -> SearchContext {
    SearchContext::bare("ELF64", "x86_64")
}

fn requester_for(path: &Path, info: &elf::ElfInfo) -> Requester {
    Requester {
        path: path.to_path_buf(),
        rpath: info.rpath.clone(),
        runpath: info.runpath.clone(),
    }
}

fn dir_string(path: PathBuf) -> String {
    path.to_string_lossy().into_owned()
}

#[test]
fn cudnn8_for_cuda12_cannot_reach_cublas12_only_cublas11() {
    let venv = toolkits().join("venv-cudnn8-cu12-cublas11").join(SITE);
    let ops = venv.join("nvidia/cudnn/lib/libcudnn_ops_infer.so.8");
    let info = elf::read_path(&ops).expect("libcudnn_ops_infer.so.8 reads");
    assert_eq!(
        info.runpath,
        [
            "$ORIGIN",
            "$ORIGIN/../../cublas/lib",
            "$ORIGIN/../../nvrtc/lib"
        ]
    );
    // Opened at run time, so only its read-only data names them.
    for name in ["libcublasLt.so.12", "libcublas.so.12", "libnvrtc.so"] {
        assert!(
            info.dlopen_names.iter().any(|n| n == name),
            "{name} not in {:?}",
            info.dlopen_names
        );
        assert!(!info.needed.iter().any(|n| n == name));
    }
    // The names it opens say it was built for CUDA 12.
    assert_eq!(
        compat::cuda_major_of_names(info.dlopen_names.iter().map(String::as_str)),
        Some(12)
    );

    let requester = requester_for(&ops, &info);
    let cublas_dir = ops.parent().unwrap().join("../../cublas/lib");

    let wanted = resolve::resolve("libcublasLt.so.12", &requester, &bare());
    assert_eq!(wanted.found, None, "{wanted:#?}");
    assert!(wanted.attempts.iter().all(|a| a.via == SearchStep::Runpath));
    assert!(
        wanted
            .attempts
            .iter()
            .any(|a| a.path == cublas_dir.join("libcublasLt.so.12")
                && a.result == AttemptResult::Missing),
        "cublas/lib was not tried: {wanted:#?}"
    );
    assert_eq!(
        wanted.error.as_deref(),
        Some("libcublasLt.so.12: cannot open shared object file: No such file or directory")
    );

    // What is reachable is CUDA 11's cuBLAS: built for CUDA 12, only CUDA 11 cuBLAS present.
    let present = resolve::resolve("libcublasLt.so.11", &requester, &bare());
    assert_eq!(
        present.found,
        Some(cublas_dir.join("libcublasLt.so.11")),
        "{present:#?}"
    );
    assert_eq!(present.attempts_via(SearchStep::Runpath).count(), 2);
    let real = present.real.expect("found libraries have a real path");
    assert_eq!(
        real,
        venv.join("nvidia/cublas/lib/libcublasLt.so.11")
            .canonicalize()
            .unwrap()
    );
    assert_eq!(compat::cuda_major_of_soname("libcublasLt.so.11"), Some(11));

    // Its RUNPATH's nvrtc directory does not exist either: plain libnvrtc.so is not found.
    let nvrtc = resolve::resolve("libnvrtc.so", &requester, &bare());
    assert_eq!(nvrtc.found, None);
    assert_eq!(nvrtc.attempts.len(), 3);
}

#[test]
fn i386_libcuda_first_on_the_path_is_skipped() {
    let root = toolkits();
    let (i386, amd64) = (root.join(I386_DRIVER), root.join(AMD64_DRIVER));
    let mut ctx = bare();
    ctx.ld_library_path = vec![dir_string(i386.clone()), dir_string(amd64.clone())];

    let r = resolve::resolve("libcuda.so.1", &Requester::default(), &ctx);
    assert_eq!(r.attempts.len(), 2, "{r:#?}");
    assert_eq!(r.attempts[0].path, i386.join("libcuda.so.1"));
    assert_eq!(r.attempts[0].via, SearchStep::LdLibraryPath);
    assert_eq!(
        r.attempts[0].result,
        AttemptResult::WrongClass {
            found: "ELF32".into()
        }
    );
    assert_eq!(r.attempts[1].result, AttemptResult::Accepted);
    assert_eq!(r.found, Some(amd64.join("libcuda.so.1")));
    let real = r.real.unwrap();
    assert_eq!(
        real.file_name().unwrap().to_str(),
        Some("libcuda.so.535.261.03")
    );

    // The driver version in the real file's name feeds the compatibility rules.
    let version = real
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .trim_start_matches("libcuda.so.");
    assert_eq!(
        compat::driver_cuda_version(version),
        Some(CudaVersion::new(12, 2))
    );

    // Only the 32-bit copy on the path: nothing found, and glibc's message.
    ctx.ld_library_path = vec![dir_string(i386.clone())];
    let r = resolve::resolve("libcuda.so.1", &Requester::default(), &ctx);
    assert_eq!(r.found, None);
    assert_eq!(r.attempts.len(), 1);
    assert!(matches!(
        r.attempts[0].result,
        AttemptResult::WrongClass { ref found } if found == "ELF32"
    ));
    assert_eq!(
        r.error.as_deref(),
        Some("libcuda.so.1: wrong ELF class: ELFCLASS32")
    );

    // A 32-bit process takes the i386 copy and skips the amd64 one.
    let mut ctx32 = SearchContext::bare("ELF32", "i386");
    ctx32.ld_library_path = vec![dir_string(amd64.clone()), dir_string(i386.clone())];
    let r = resolve::resolve("libcuda.so.1", &Requester::default(), &ctx32);
    assert_eq!(
        r.attempts[0].result,
        AttemptResult::WrongClass {
            found: "ELF64".into()
        }
    );
    assert_eq!(r.found, Some(i386.join("libcuda.so.1")));
}

#[test]
fn driver_535_rules() {
    let driver = "535.261.03";
    let cuda = compat::driver_cuda_version(driver).unwrap();
    assert_eq!(cuda, CudaVersion::new(12, 2));
    // 12020 is what this libcuda's cuDriverGetVersion answers (GUIDE section 4).
    assert_eq!(CudaVersion::from_api(12020), Some(cuda));
    assert_eq!(
        compat::runtime_on_driver(CudaVersion::new(13, 0), cuda, Some(driver)),
        DriverVerdict::TooOld
    );
    assert_eq!(DriverVerdict::TooOld.error_code(), Some(35));
    assert_eq!(
        compat::runtime_error(35).unwrap().runtime_name,
        Some("cudaErrorInsufficientDriver")
    );
    assert_eq!(
        compat::runtime_on_driver(CudaVersion::new(12, 9), cuda, Some(driver)),
        DriverVerdict::MinorVersionCompatible
    );
    assert_eq!(
        compat::runtime_on_driver(CudaVersion::new(11, 8), cuda, Some(driver)),
        DriverVerdict::Supported
    );
}

/// cuDNN 8.9's `libcudnn_ops_infer.so.8`, either build: SASS sm_50 to sm_90 and PTX compute_90
/// (17 kernels each). `cuobjdump --list-elf/--list-ptx` lists exactly these for the CUDA 11
/// build; on the CUDA 12 build every cuobjdump 13.x stops with "Invalid ELF" after the first
/// kernel, and a separate scan of the `.nv_fatbin` containers finds the same lists as for
/// CUDA 11 (so sm_90 SASS is there too).
#[test]
fn cudnn8_kernels_on_hopper_and_blackwell() {
    let root = toolkits();
    let expected_sass = [
        "sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90",
    ];
    for venv in ["venv-cu11", "venv-cudnn8-cu12-cublas11"] {
        let ops = root
            .join(venv)
            .join(SITE)
            .join("nvidia/cudnn/lib/libcudnn_ops_infer.so.8");
        let info = elf::read_path(&ops).unwrap();
        assert_eq!(info.sass, expected_sass, "{venv}");
        assert_eq!(info.ptx, ["compute_90"], "{venv}");
        assert_eq!(info.fatbin_problem, None, "{venv}");

        let support = |major, minor| {
            compat::kernel_support(ComputeCapability::new(major, minor), &info.sass, &info.ptx)
        };
        let sass = |arch: &str| KernelSupport::Sass { arch: arch.into() };
        let jit = KernelSupport::PtxJit {
            from: "compute_90".into(),
        };
        assert_eq!(support(9, 0), sass("sm_90"), "H100, {venv}");
        assert_eq!(support(8, 9), sass("sm_86"), "L40, {venv}");
        assert_eq!(support(8, 0), sass("sm_80"), "A100, {venv}");
        assert_eq!(support(10, 0), jit, "B200, {venv}");
        assert_eq!(support(12, 0), jit, "RTX 50, {venv}");
        assert_eq!(support(3, 7), KernelSupport::None, "K80, {venv}");
    }
}
