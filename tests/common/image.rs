//! A root file system laid out as NVIDIA's CUDA runtime container image
//! (`nvidia/cuda:12.9.1-runtime-ubuntu24.04`, as `docker export` unpacks it), built from the
//! fixture packages: the toolkit's runtime libraries under `/usr/local/cuda-12.9` (real files,
//! hard-linked from the fixtures), `lib64 -> targets/x86_64-linux/lib`, the image's absolute
//! alternatives links (`/usr/local/cuda -> /etc/alternatives/cuda -> /usr/local/cuda-12.9`), its
//! `ld.so.conf.d` entries (`000_cuda.conf`, `988_cuda-12.conf`, `nvidia.conf` with
//! `/usr/local/nvidia/lib` and `lib64`), an unused `cuda-compat` copy, the base layer's C
//! libraries, and, for a running container, the files the NVIDIA Container Toolkit injects
//! (`libcuda.so.1 -> libcuda.so.535.261.03`, `libnvidia-ml.so.1`, `/usr/bin/nvidia-smi`, the
//! host's `/proc/driver/nvidia/version`). Used by `tests/sysroot_images.rs` and
//! `benches/doctor.rs`.

use super::{fixture, rdma_core, DRIVER_AMD64, TOOLKIT, TOOLKIT_LIB};
use std::path::Path;

/// The toolkit's library directory inside the image.
const CUDA_LIB: &str = "usr/local/cuda-12.9/targets/x86_64-linux/lib";
/// The runtime image's CUDA libraries (the runtime, cuBLAS, NVRTC and its builtins), with their soname links.
const RUNTIME: &[(&str, &str)] = &[
    ("libcudart.so.12.9.79", "libcudart.so.12"),
    ("libcublas.so.12.9.1.4", "libcublas.so.12"),
    ("libcublasLt.so.12.9.1.4", "libcublasLt.so.12"),
    ("libnvrtc.so.12.9.86", "libnvrtc.so.12"),
    ("libnvrtc-builtins.so.12.9.86", "libnvrtc-builtins.so.12.9"),
];
/// The base layer's C and C++ libraries the CUDA libraries need, taken from this machine.
const BASE: &[&str] = &[
    "libc.so.6",
    "libm.so.6",
    "libdl.so.2",
    "libpthread.so.0",
    "librt.so.1",
    "libgcc_s.so.1",
    "libstdc++.so.6",
    "ld-linux-x86-64.so.2",
];
/// The `/proc/driver/nvidia/version` of the host the container runs on.
const PROC_535: &str = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  Wed Jun  4 19:38:45 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
/// The image's environment, as `docker inspect --format '{{json .Config.Env}}'` lists it.
pub const IMAGE_ENV: &[(&str, &str)] = &[
    ("PATH", "/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
    ("NVARCH", "x86_64"),
    ("NVIDIA_REQUIRE_CUDA", "cuda>=12.9 brand=tesla,driver>=535,driver<536"),
    ("CUDA_VERSION", "12.9.1"),
    ("LD_LIBRARY_PATH", "/usr/local/nvidia/lib:/usr/local/nvidia/lib64"),
    ("NVIDIA_VISIBLE_DEVICES", "all"),
    ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
];

/// Puts `from` at `to` without copying where the file system allows.
fn place(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).unwrap();
    }
}

fn write(root: &Path, inside: &str, text: &[u8]) {
    let path = root.join(inside);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn link(root: &Path, inside: &str, target: &str) {
    let path = root.join(inside);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, path).unwrap();
}

/// The runtime image's root file system; with `injected`, as a running container has it.
#[allow(clippy::disallowed_methods)] // the test reads this machine's own C library
pub fn runtime_image(injected: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let toolkit = fixture(TOOLKIT_LIB);
    for (file, soname) in RUNTIME {
        place(&toolkit.join(file), &root.join(CUDA_LIB).join(file));
        link(root, &format!("{CUDA_LIB}/{soname}"), file);
    }
    place(
        &fixture(&format!("{TOOLKIT}/version.json")),
        &root.join("usr/local/cuda-12.9/version.json"),
    );
    link(
        root,
        "usr/local/cuda-12.9/lib64",
        "targets/x86_64-linux/lib",
    );
    link(root, "etc/alternatives/cuda", "/usr/local/cuda-12.9");
    link(root, "etc/alternatives/cuda-12", "/usr/local/cuda-12.9");
    link(root, "usr/local/cuda", "/etc/alternatives/cuda");
    link(root, "usr/local/cuda-12", "/etc/alternatives/cuda-12");
    write(
        root,
        "etc/ld.so.conf",
        b"include /etc/ld.so.conf.d/*.conf\n",
    );
    write(
        root,
        "etc/ld.so.conf.d/000_cuda.conf",
        b"/usr/local/cuda/targets/x86_64-linux/lib\n",
    );
    write(
        root,
        "etc/ld.so.conf.d/988_cuda-12.conf",
        b"/usr/local/cuda-12/targets/x86_64-linux/lib\n",
    );
    write(
        root,
        "etc/ld.so.conf.d/nvidia.conf",
        b"/usr/local/nvidia/lib\n/usr/local/nvidia/lib64\n",
    );
    // cuda-compat-12-9 is in the image but on no search path: unused, so no finding.
    let mut compat = vec![0u8; 64];
    compat[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
    compat[18] = 62;
    compat.extend_from_slice(b"\x00575.57.08\x00");
    write(
        root,
        "usr/local/cuda-12.9/compat/libcuda.so.575.57.08",
        &compat,
    );
    link(
        root,
        "usr/local/cuda-12.9/compat/libcuda.so.1",
        "libcuda.so.575.57.08",
    );
    for name in BASE {
        let real = Path::new("/usr/lib/x86_64-linux-gnu")
            .join(name)
            .canonicalize()
            .unwrap();
        place(&real, &root.join("usr/lib/x86_64-linux-gnu").join(name));
    }
    link(root, "lib", "usr/lib");
    link(root, "lib64", "usr/lib64");
    write(root, ".dockerenv", b"");
    if injected {
        let lib = "usr/lib/x86_64-linux-gnu";
        for stem in ["libcuda.so", "libnvidia-ml.so"] {
            let file = format!("{stem}.535.261.03");
            place(
                &fixture(&format!("{DRIVER_AMD64}/{file}")),
                &root.join(lib).join(&file),
            );
            link(root, &format!("{lib}/{stem}.1"), &file);
        }
        write(root, "usr/bin/nvidia-smi", b"\x7fELF nvidia-smi");
        write(root, "proc/driver/nvidia/version", PROC_535.as_bytes());
    }
    dir
}

/// NCCL for CUDA 12 (the fixtures' `nvidia-nccl-cu12` wheel's `libnccl.so.2`), as a distribution
/// package lays it out.
const NCCL: &str = "venv-cu12/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2";
/// Where Debian's packages put libraries, which its base image's `ld.so.conf.d` names.
const MULTIARCH: &str = "usr/lib/x86_64-linux-gnu";

/// The runtime image with NCCL added (`libnccl2`'s layout); with `rdma`, rdma-core as Debian's
/// `libibverbs1`, `ibverbs-providers` and `rdma-core` packages install it (ci/fetch-rdma-core):
/// the image a multi-node training job runs in.
pub fn nccl_image(rdma: bool) -> tempfile::TempDir {
    let dir = runtime_image(false);
    let root = dir.path();
    place(&fixture(NCCL), &root.join(MULTIARCH).join("libnccl.so.2"));
    write(
        root,
        "etc/ld.so.conf.d/x86_64-linux-gnu.conf",
        b"/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n",
    );
    if rdma {
        copy_tree(&rdma_core().join("root"), root);
    }
    dir
}

/// Every file and link below `from` put at the same place below `to`.
fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            let _ = std::fs::remove_file(&target);
            std::os::unix::fs::symlink(std::fs::read_link(&source).unwrap(), &target).unwrap();
        } else if kind.is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&source, &target);
        } else {
            place(&source, &target);
        }
    }
}
