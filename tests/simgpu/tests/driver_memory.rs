//! Device and pinned memory: allocations at device addresses, copies and memsets checked
//! against the allocation they touch, and `out_of_memory_above_mib`.

mod driver_support;

use driver_support::{alloc, context, download, fails, ok, stream, upload, QUIET};
use stackbench_simgpu::driver::*;
use std::ffi::c_void;
use std::ptr::null_mut;

#[test]
fn allocations_copy_round_trip_and_free() {
    context(QUIET);
    let data: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
    let a = upload(&data);
    assert_eq!(download(a, 1000), data);
    // Device addresses are nowhere near the host's data.
    let host = data.as_ptr() as u64;
    assert!(a.abs_diff(host) > 1 << 20);
    let b = alloc(4000);
    assert_ne!(a, b);
    ok(cuMemcpyDtoD_v2(b, a, 4000));
    ok(cuMemsetD8_v2(a, 0, 4000));
    assert_eq!(download(b, 1000), data);
    assert_eq!(download(a, 1000), vec![0.0; 1000]);
    // Part of an allocation, at an offset.
    ok(cuMemsetD8_v2(b + 8, 0xff, 4));
    let words = download(b, 3);
    assert_eq!(words[2].to_bits(), u32::MAX);
    assert_eq!(words[1], data[1]);
    ok(cuMemFree_v2(a));
    ok(cuMemFree_v2(b));
    fails(cuMemFree_v2(b), "CUDA_ERROR_INVALID_VALUE");
    ok(cuCtxSynchronize());
}

#[test]
fn a_copy_outside_its_allocation_is_an_invalid_value() {
    context(QUIET);
    let a = alloc(1024);
    let mut out = vec![0u8; 2048];
    // SAFETY: `out` holds 2048 bytes.
    let status = unsafe { cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), a, 2048) };
    fails(status, "CUDA_ERROR_INVALID_VALUE");
    // SAFETY: as above.
    let status = unsafe { cuMemcpyHtoD_v2(a + 1000, out.as_ptr().cast(), 100) };
    fails(status, "CUDA_ERROR_INVALID_VALUE");
    fails(cuMemsetD8_v2(a - 4, 0, 8), "CUDA_ERROR_INVALID_VALUE");
    fails(cuMemcpyDtoD_v2(a, 0x1000, 8), "CUDA_ERROR_INVALID_VALUE");
    // None of it is sticky.
    ok(cuMemsetD8_v2(a, 1, 1024));
    ok(cuCtxSynchronize());
    fails(cuMemFree_v2(a + 4), "CUDA_ERROR_INVALID_VALUE");
}

#[test]
fn asynchronous_copies_run_in_stream_order() {
    context(QUIET);
    let s = stream();
    let data: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let (a, b) = (alloc(1024), alloc(1024));
    // SAFETY: `data` holds 1024 bytes; pageable, so staged at once.
    ok(unsafe { cuMemcpyHtoDAsync_v2(a, data.as_ptr().cast(), 1024, s) });
    ok(cuMemcpyDtoDAsync_v2(b, a, 1024, s));
    ok(cuMemsetD8Async(a, 0, 1024, s));
    let mut back = vec![0f32; 256];
    // SAFETY: `back` holds 1024 bytes; pageable, so done when this returns.
    ok(unsafe { cuMemcpyDtoHAsync_v2(back.as_mut_ptr().cast(), b, 1024, s) });
    assert_eq!(back, data);
    ok(cuStreamSynchronize(s));
    assert_eq!(download(a, 256), vec![0.0; 256]);
    ok(cuStreamDestroy_v2(s));
    fails(cuStreamSynchronize(s), "CUDA_ERROR_INVALID_HANDLE");
}

#[test]
fn pinned_memory_is_reached_at_its_host_address() {
    context(QUIET);
    let mut host: *mut c_void = null_mut();
    // SAFETY: a valid out-pointer; DEVICEMAP | PORTABLE.
    ok(unsafe { cuMemHostAlloc(&mut host, 4096, 0x3) });
    assert_eq!(host as usize % 4096, 0, "page-aligned");
    let mut device = 0;
    // SAFETY: as above.
    ok(unsafe { cuMemHostGetDevicePointer_v2(&mut device, host, 0) });
    assert_eq!(device, host as u64);
    // SAFETY: as above; flags must be 0.
    let status = unsafe { cuMemHostGetDevicePointer_v2(&mut device, host, 1) };
    fails(status, "CUDA_ERROR_INVALID_VALUE");
    let mut local = 0u32;
    let status =
        // SAFETY: as above; a stack variable is not pinned memory.
        unsafe { cuMemHostGetDevicePointer_v2(&mut device, (&mut local as *mut u32).cast(), 0) };
    fails(status, "CUDA_ERROR_INVALID_VALUE");
    // Memory operations reach it as device memory.
    let a = upload(&[1.5; 1024]);
    ok(cuMemcpyDtoD_v2(host as u64, a, 4096));
    ok(cuCtxSynchronize());
    // SAFETY: 4096 bytes of pinned memory the copy wrote.
    let seen = unsafe { std::slice::from_raw_parts(host.cast::<f32>(), 1024) };
    assert!(seen.iter().all(|x| *x == 1.5));
    ok(cuMemsetD8_v2(host as u64, 0, 4096));
    // SAFETY: as above.
    let first = unsafe { *host.cast::<u32>() };
    assert_eq!(first, 0, "a memset to pinned memory is synchronous");
    ok(cuMemFreeHost(host));
    fails(cuMemFreeHost(host), "CUDA_ERROR_INVALID_VALUE");
}

#[test]
fn allocations_beyond_the_fault_s_limit_are_out_of_memory() {
    context(&format!(
        "{QUIET}\n[faults]\nout_of_memory_above_mib = 64\n"
    ));
    let (mut free, mut total) = (0, 0);
    // SAFETY: valid out-pointers.
    ok(unsafe { cuMemGetInfo_v2(&mut free, &mut total) });
    assert_eq!((free, total), (64 << 20, 1 << 30));
    let a = alloc(48 << 20);
    let mut b = 0;
    // SAFETY: a valid out-pointer.
    fails(
        unsafe { cuMemAlloc_v2(&mut b, 32 << 20) },
        "CUDA_ERROR_OUT_OF_MEMORY",
    );
    let c = alloc(16 << 20);
    ok(cuMemFree_v2(a));
    let d = alloc(32 << 20);
    ok(cuMemFree_v2(c));
    ok(cuMemFree_v2(d));
    // Nothing sticky: the context goes on.
    ok(cuCtxSynchronize());
    // SAFETY: as above; zero bytes is an invalid value.
    fails(
        unsafe { cuMemAlloc_v2(&mut b, 0) },
        "CUDA_ERROR_INVALID_VALUE",
    );
}

#[test]
fn the_device_s_own_size_is_a_limit_too() {
    context(QUIET);
    let mut ptr = 0;
    // SAFETY: a valid out-pointer.
    let status = unsafe { cuMemAlloc_v2(&mut ptr, (1 << 30) + 1) };
    fails(status, "CUDA_ERROR_OUT_OF_MEMORY");
}

#[test]
fn repeated_copies_and_memsets_stay_right_when_memory_changes_between_them() {
    context(QUIET);
    let s = stream();
    let (a, b) = (upload(&[1.0; 256]), alloc(1024));
    for _ in 0..3 {
        ok(cuMemcpyDtoDAsync_v2(b, a, 1024, s));
    }
    ok(cuStreamSynchronize(s));
    assert_eq!(download(b, 256), vec![1.0; 256]);
    // The source changes: the same copy copies again.
    ok(cuMemsetD8Async(a, 0, 1024, s));
    ok(cuMemcpyDtoDAsync_v2(b, a, 1024, s));
    ok(cuStreamSynchronize(s));
    assert_eq!(download(b, 256), vec![0.0; 256]);
    // The target changes: the same copy (and memset) again restore it.
    ok(cuMemsetD8Async(a, 0x40, 1024, s));
    ok(cuMemcpyDtoDAsync_v2(b, a, 1024, s));
    ok(cuMemsetD8Async(b, 0, 4, s));
    ok(cuMemcpyDtoDAsync_v2(b, a, 1024, s));
    ok(cuStreamSynchronize(s));
    assert_eq!(download(b, 1)[0].to_bits(), 0x4040_4040);
    ok(cuMemsetD8Async(a, 0, 1024, s));
    ok(cuMemsetD8Async(a, 7, 4, s));
    ok(cuMemsetD8Async(a, 0, 1024, s));
    ok(cuStreamSynchronize(s));
    assert_eq!(download(a, 1)[0], 0.0);
    // Overlapping ranges of one allocation are copied every time.
    let data: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let c = upload(&data);
    ok(cuMemcpyDtoDAsync_v2(c + 4, c, 1020, s));
    ok(cuMemcpyDtoDAsync_v2(c + 4, c, 1020, s));
    ok(cuStreamSynchronize(s));
    let shifted = download(c, 4);
    assert_eq!(shifted, [0.0, 0.0, 0.0, 1.0]);
}
