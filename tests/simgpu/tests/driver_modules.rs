//! `cuModuleLoadData`: PTX is JIT-"compiled" for the simulated device, as a real driver does for
//! a GPU newer than the toolkit; a CUBIN never runs on it (209); PTX newer than the driver's
//! CUDA version is refused (222), as NVRTC output on an older driver is; PTX the interpreter
//! cannot take is 218 with the line and instruction in `cuModuleLoadDataEx`'s JIT error log.

mod driver_support;

use driver_support::{context, fails, load_status, ok, ptx};
use stackbench_simgpu::driver::*;
use std::ffi::CString;
use std::ptr::null_mut;

fn profile(cuda: &str, cc: &str) -> String {
    format!(
        "[[device]]\nmemory_gib = 1\ncuda_version = \"{cuda}\"\ncompute_capability = \"{cc}\"\n"
    )
}

#[test]
fn a_cubin_has_no_code_for_this_gpu() {
    context(&profile("13.0", "15.0"));
    let mut cubin = b"\x7fELF\x02\x01\x01\x33".to_vec();
    cubin.resize(4096, 0);
    fails(load_status(&cubin), "CUDA_ERROR_NO_BINARY_FOR_GPU");
    let mut fatbin = 0xba55_ed50_u32.to_le_bytes().to_vec();
    fatbin.resize(4096, 1);
    fails(load_status(&fatbin), "CUDA_ERROR_NO_BINARY_FOR_GPU");
}

#[test]
fn ptx_newer_than_the_driver_is_an_unsupported_version() {
    // NVRTC 13.0 writes PTX ISA 9.0; a CUDA 12.9 driver reads up to 8.8.
    context(&profile("12.9", "15.0"));
    let text = ptx("vector_add.nvrtc-13.0.compute_121.ptx");
    fails(
        load_status(text.as_bytes_with_nul()),
        "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
    );
    context(&profile("12.8", "15.0"));
    let text = ptx("matmul_tiled.nvrtc-12.9.compute_121.ptx");
    fails(
        load_status(text.as_bytes_with_nul()),
        "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
    );
}

#[test]
fn text_that_is_not_ptx_is_invalid() {
    context(&profile("13.0", "15.0"));
    fails(load_status(b"not PTX at all\0"), "CUDA_ERROR_INVALID_PTX");
    fails(
        load_status(b".version 8.0\n.target sm_90\nnonsense\0"),
        "CUDA_ERROR_INVALID_PTX",
    );
    fails(
        load_status(b".version 8.0\n\xff\xfe\0"),
        "CUDA_ERROR_INVALID_IMAGE",
    );
    fails(load_status(b"\0"), "CUDA_ERROR_INVALID_PTX");
}

/// `cuModuleLoadDataEx` of `text` with an error log of `size` bytes: its answer and the log.
fn load_with_log(text: &[u8], size: usize) -> (CUresult, String, usize) {
    let mut log = vec![0xaau8; size.max(1)];
    let mut options = [5, 6];
    let mut values = [log.as_mut_ptr().cast(), size as *mut std::ffi::c_void];
    let mut module = null_mut();
    // SAFETY: a NUL-terminated text, two options with their values, a buffer of `size` bytes.
    let status = unsafe {
        cuModuleLoadDataEx(
            &mut module,
            text.as_ptr().cast(),
            2,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    let written = values[1] as usize;
    let text = std::ffi::CStr::from_bytes_until_nul(&log)
        .map(|t| t.to_string_lossy().into_owned())
        .unwrap_or_default();
    (status, text, written)
}

#[test]
fn an_instruction_the_interpreter_lacks_fills_the_jit_error_log() {
    context(&profile("13.0", "15.0"));
    let kernel = b".version 8.0\n.target sm_90\n.address_size 64\n\
        .visible .entry k()\n{\n\tbrkpt.magic;\n\tret;\n}\n\0";
    let (status, log, written) = load_with_log(kernel, 4096);
    fails(status, "CUDA_ERROR_INVALID_PTX");
    assert_eq!(
        log,
        "stackbench simulated GPU: ptx input, line 6; error: unsupported instruction \
         `brkpt.magic` (a limit of the simulator's PTX interpreter, not of a driver)"
    );
    assert_eq!(written, log.len());
    // A buffer too small holds what fits and its NUL.
    let (_, short, written) = load_with_log(kernel, 11);
    assert_eq!((short.as_str(), written), ("stackbench", 10));
    // PTX that loads leaves the log empty.
    let (status, log, written) = load_with_log(
        ptx("vector_add.nvrtc-13.0.compute_121.ptx").as_bytes_with_nul(),
        64,
    );
    ok(status);
    assert_eq!((log.as_str(), written), ("", 0));
}

#[test]
fn every_fixture_nvrtc_s_ptx_loads_on_a_driver_as_new() {
    for (cuda, file) in [
        ("11.8", "vector_add.nvrtc-11.8.compute_90.ptx"),
        ("12.9", "matmul_tiled.nvrtc-12.9.compute_121.ptx"),
        ("13.0", "vector_add.nvrtc-13.0.compute_121.ptx"),
        ("13.0", "matmul_tiled.nvrtc-11.8.compute_90.ptx"),
    ] {
        context(&profile(cuda, "15.0"));
        ok(load_status(ptx(file).as_bytes_with_nul()));
    }
}

#[test]
fn ptx_for_a_newer_architecture_is_invalid_on_this_one() {
    context(&profile("13.0", "9.0"));
    let text = ptx("vector_add.nvrtc-12.9.compute_121.ptx");
    fails(
        load_status(text.as_bytes_with_nul()),
        "CUDA_ERROR_INVALID_PTX",
    );
    ok(load_status(
        ptx("vector_add.nvrtc-11.8.compute_90.ptx").as_bytes_with_nul(),
    ));
}

#[test]
fn functions_by_name() {
    context(&profile("13.0", "15.0"));
    let text = ptx("matmul_tiled.nvrtc-13.0.compute_121.ptx");
    let mut module = null_mut();
    // SAFETY: a NUL-terminated PTX text and a valid out-pointer.
    ok(unsafe { cuModuleLoadData(&mut module, text.as_ptr().cast()) });
    let (mut first, mut again) = (null_mut(), null_mut());
    let name = CString::new("matmul_tiled").unwrap();
    // SAFETY: valid out-pointers and a C string.
    ok(unsafe { cuModuleGetFunction(&mut first, module, name.as_ptr()) });
    // SAFETY: as above.
    ok(unsafe { cuModuleGetFunction(&mut again, module, name.as_ptr()) });
    assert_eq!(first, again);
    let missing = CString::new("vector_add").unwrap();
    // SAFETY: as above.
    let status = unsafe { cuModuleGetFunction(&mut first, module, missing.as_ptr()) };
    fails(status, "CUDA_ERROR_NOT_FOUND");
    ok(cuModuleUnload(module));
    // SAFETY: as above.
    let status = unsafe { cuModuleGetFunction(&mut first, module, name.as_ptr()) };
    fails(status, "CUDA_ERROR_INVALID_HANDLE");
    fails(cuModuleUnload(module), "CUDA_ERROR_INVALID_HANDLE");
}
