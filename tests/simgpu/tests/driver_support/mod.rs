//! What the driver's tests share: a simulated host of the test's own (each test runs on its
//! own thread, so tests with different profiles run side by side), calls that must succeed,
//! device memory, and the real NVRTC output under `data/`. Each test file uses a part of it.
#![allow(dead_code)]

use stackbench_simgpu::driver::*;
use stackbench_simgpu::profile::Profile;
use stackbench_simgpu::state::{use_on_this_thread, Sim};
use std::ffi::{c_void, CStr, CString};
use std::ptr::null_mut;

/// A small device without noise, so that modelled times are exact.
pub const QUIET: &str = r#"
[[device]]
name = "stackbench simulated GPU (test)"
memory_gib = 1
memory_bandwidth_gbs = 1000
fp32_tflops = 10
noise = 0.0
run_sigma = 0.0
boot_sigma = 0.0
ramp_ms = 0.0
"#;

/// A simulated host of `profile` (TOML) for the calling thread, not yet initialised.
pub fn host(profile: &str) -> &'static Sim {
    let sim = Box::leak(Box::new(Sim::new(Profile::parse(profile))));
    use_on_this_thread(sim);
    sim
}

/// A host of `profile` with device 0's primary context current.
pub fn context(profile: &str) -> &'static Sim {
    let sim = host(profile);
    ok(cuInit(0));
    let mut ctx = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDevicePrimaryCtxRetain(&mut ctx, 0) });
    ok(cuCtxSetCurrent(ctx));
    sim
}

/// The name of a status (`CUDA_ERROR_ILLEGAL_ADDRESS`).
pub fn name(status: CUresult) -> String {
    let mut text = std::ptr::null();
    // SAFETY: a valid out-pointer.
    if unsafe { cuGetErrorName(status, &mut text) } != 0 {
        return format!("unknown status {status}");
    }
    // SAFETY: the driver's static, NUL-terminated name.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

/// Asserts that a call succeeded.
#[track_caller]
pub fn ok(status: CUresult) {
    assert_eq!(status, 0, "{}", name(status));
}

/// Asserts that a call failed with `expected`.
#[track_caller]
pub fn fails(status: CUresult, expected: &str) {
    assert_eq!(name(status), expected);
}

/// `bytes` of device memory.
pub fn alloc(bytes: usize) -> u64 {
    let mut ptr = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuMemAlloc_v2(&mut ptr, bytes) });
    ptr
}

/// A copy of `data` in device memory.
pub fn upload(data: &[f32]) -> u64 {
    let ptr = alloc(std::mem::size_of_val(data));
    // SAFETY: the allocation holds exactly the slice's bytes.
    ok(unsafe { cuMemcpyHtoD_v2(ptr, data.as_ptr().cast(), std::mem::size_of_val(data)) });
    ptr
}

/// `n` floats read back from device memory.
pub fn download(ptr: u64, n: usize) -> Vec<f32> {
    let mut out = vec![0f32; n];
    // SAFETY: `out` holds n floats.
    ok(unsafe { cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), ptr, n * 4) });
    out
}

/// A non-blocking stream.
pub fn stream() -> *mut c_void {
    let mut stream = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuStreamCreate(&mut stream, 1) });
    stream
}

/// A timing event.
pub fn event() -> *mut c_void {
    let mut event = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuEventCreate(&mut event, 0) });
    event
}

/// Milliseconds between two completed events.
pub fn elapsed(start: *mut c_void, stop: *mut c_void) -> f32 {
    let mut ms = f32::NAN;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuEventElapsedTime_v2(&mut ms, start, stop) });
    ms
}

/// The PTX NVRTC wrote to `data/<file>`, as `cuModuleLoadData` takes it.
pub fn ptx(file: &str) -> CString {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(file);
    CString::new(std::fs::read(&path).unwrap()).unwrap()
}

/// `cuModuleLoadData`'s answer for `image`.
pub fn load_status(image: &[u8]) -> CUresult {
    let mut module = null_mut();
    // SAFETY: a NUL-terminated text or a complete image, and a valid out-pointer.
    unsafe { cuModuleLoadData(&mut module, image.as_ptr().cast()) }
}

/// Loads `file` and gets its kernel `kernel`.
pub fn function(file: &str, kernel: &str) -> *mut c_void {
    let text = ptx(file);
    let mut module = null_mut();
    // SAFETY: a NUL-terminated PTX text and valid out-pointers.
    ok(unsafe { cuModuleLoadData(&mut module, text.as_ptr().cast()) });
    let mut function = null_mut();
    let name = CString::new(kernel).unwrap();
    // SAFETY: as above.
    ok(unsafe { cuModuleGetFunction(&mut function, module, name.as_ptr()) });
    function
}

/// The vector add of stackbench's NVRTC 12.9 output.
pub fn vector_add_function() -> *mut c_void {
    function("vector_add.nvrtc-12.9.compute_121.ptx", "vector_add")
}

/// Launches the vector add `c = a + b` over `n` elements on `stream`, its parameters passed as
/// the driver reads them: a pointer to each.
pub fn launch_vector_add(
    function: *mut c_void,
    (a, b, c): (u64, u64, u64),
    n: u64,
    stream: *mut c_void,
) -> CUresult {
    let (mut a, mut b, mut c, mut n) = (a, b, c, n);
    let mut params: [*mut c_void; 4] = [
        (&mut a as *mut u64).cast(),
        (&mut b as *mut u64).cast(),
        (&mut c as *mut u64).cast(),
        (&mut n as *mut u64).cast(),
    ];
    let blocks = n.div_ceil(256).clamp(1, 65_535) as u32;
    // SAFETY: four pointers to the kernel's four 8-byte parameters.
    unsafe {
        cuLaunchKernel(
            function,
            blocks,
            1,
            1,
            256,
            1,
            1,
            0,
            stream,
            params.as_mut_ptr(),
            null_mut(),
        )
    }
}

/// `n` floats, deterministic, in [-1, 1), with a seed.
pub fn floats(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}
