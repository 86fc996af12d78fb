#!/usr/bin/env python3
"""Regenerates the PTX test data of simgpu's interpreter from the fixture NVRTCs.

Each fixture NVRTC (CUDA 11.8, 12.9 and 13.0, under .toolkits/; run `ci/fetch-toolkits` if it is
missing) compiles stackbench's two kernels, with their sources read from harness/kernels.rs, for
the newest virtual architecture it supports (`--gpu-architecture=compute_XX`, the only option
stackbench passes besides the architecture), exactly as stackbench does for a GPU newer than its
toolkit. The PTX is written beside this script as

    <kernel>.nvrtc-<major>.<minor>.compute_<XX>.ptx

These files are real compiler output, never edited by hand. One more is not regenerated here:
`stackbench_peer_copy.nvvm.sm_70.ptx`, the harness's peer-copy kernel (NVVM output, PTX ISA 7.0,
sm_70), copied as given. Run from anywhere:

    python3 tests/simgpu/tests/data/regenerate.py
"""

import ctypes
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[3]
TOOLKITS = ROOT / ".toolkits"
NVRTCS = [
    TOOLKITS / "venv-cu11/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.11.2",
    TOOLKITS / "venv-cu12/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
    TOOLKITS / "conda/envs/cu13/lib/libnvrtc.so.13",
]
# (CUDA function name, Rust constant holding its source in harness/kernels.rs, file name).
KERNELS = [
    ("vector_add", "VECTOR_ADD_SOURCE", "vector_add.cu"),
    ("matmul_tiled", "TILED_MATMUL_SOURCE", "matmul_tiled.cu"),
]


def kernel_source(constant):
    text = (ROOT / "harness/kernels.rs").read_text()
    match = re.search(r'const %s: &str = r#"(.*?)"#;' % constant, text, re.S)
    if not match:
        sys.exit(f"harness/kernels.rs has no {constant}")
    return match.group(1)


def check(lib, status, what, program=None):
    if status == 0:
        return
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    message = lib.nvrtcGetErrorString(status).decode()
    log = ""
    if program is not None:
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(program, buf)
        log = buf.value.decode(errors="replace")
    sys.exit(f"{what}: {message}\n{log}")


def main():
    for path in NVRTCS:
        if not path.exists():
            sys.exit(f"{path} is missing: run ci/fetch-toolkits")
        # NVRTC dlopens its builtins library by soname; load it from beside NVRTC first, as
        # the conda environment's lib directory is not on the loader's path.
        for builtins in sorted(path.parent.glob("libnvrtc-builtins.so.*")):
            ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
        lib = ctypes.CDLL(str(path))
        major, minor = ctypes.c_int(), ctypes.c_int()
        check(lib, lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
        count = ctypes.c_int()
        check(lib, lib.nvrtcGetNumSupportedArchs(ctypes.byref(count)), "nvrtcGetNumSupportedArchs")
        archs = (ctypes.c_int * count.value)()
        check(lib, lib.nvrtcGetSupportedArchs(archs), "nvrtcGetSupportedArchs")
        arch = f"compute_{max(archs)}"
        for name, constant, file_name in KERNELS:
            program = ctypes.c_void_p()
            check(
                lib,
                lib.nvrtcCreateProgram(
                    ctypes.byref(program),
                    kernel_source(constant).encode(),
                    file_name.encode(),
                    0,
                    None,
                    None,
                ),
                "nvrtcCreateProgram",
            )
            options = (ctypes.c_char_p * 1)(f"--gpu-architecture={arch}".encode())
            check(lib, lib.nvrtcCompileProgram(program, 1, options), f"{name} for {arch}", program)
            size = ctypes.c_size_t()
            check(lib, lib.nvrtcGetPTXSize(program, ctypes.byref(size)), "nvrtcGetPTXSize")
            ptx = ctypes.create_string_buffer(size.value)
            check(lib, lib.nvrtcGetPTX(program, ptx), "nvrtcGetPTX")
            lib.nvrtcDestroyProgram(ctypes.byref(program))
            out = HERE / f"{name}.nvrtc-{major.value}.{minor.value}.{arch}.ptx"
            out.write_bytes(ptx.value)
            print(out.relative_to(ROOT))


if __name__ == "__main__":
    main()
