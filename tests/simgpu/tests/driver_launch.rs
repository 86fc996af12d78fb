//! `cuLaunchKernel` with NVRTC's own PTX for stackbench's kernels: parameters read through
//! `kernelParams` as the driver reads them, results bit for bit what the GPU computes, and
//! repeated identical launches reused but timed every one.

mod driver_support;

use driver_support::{
    alloc, context, download, elapsed, event, fails, floats, function, launch_vector_add, ok,
    stream, upload, vector_add_function, QUIET,
};
use stackbench_simgpu::driver::*;
use std::ffi::c_void;
use std::ptr::null_mut;

#[test]
fn the_vector_add_adds_bit_for_bit() {
    context(QUIET);
    let n = 3000;
    let (a, b) = (floats(n, 1), floats(n, 2));
    let (da, db, dc) = (upload(&a), upload(&b), alloc(4 * n));
    let f = vector_add_function();
    ok(launch_vector_add(f, (da, db, dc), n as u64, null_mut()));
    ok(cuCtxSynchronize());
    let c = download(dc, n);
    for i in 0..n {
        assert_eq!(c[i].to_bits(), (a[i] + b[i]).to_bits(), "element {i}");
    }
}

#[test]
fn the_tiled_matmul_matches_fma_in_order() {
    context(QUIET);
    let (m, n, k) = (40usize, 24usize, 36usize);
    let (a, b) = (floats(m * k, 3), floats(k * n, 4));
    let (da, db, dc) = (upload(&a), upload(&b), alloc(4 * m * n));
    let f = function("matmul_tiled.nvrtc-12.9.compute_121.ptx", "matmul_tiled");
    let (mut pa, mut pb, mut pc) = (da, db, dc);
    let (mut im, mut in_, mut ik) = (m as i32, n as i32, k as i32);
    let mut params: [*mut c_void; 6] = [
        (&mut pa as *mut u64).cast(),
        (&mut pb as *mut u64).cast(),
        (&mut pc as *mut u64).cast(),
        (&mut im as *mut i32).cast(),
        (&mut in_ as *mut i32).cast(),
        (&mut ik as *mut i32).cast(),
    ];
    let grid = (n.div_ceil(16) as u32, m.div_ceil(16) as u32);
    // SAFETY: six pointers to the kernel's parameters.
    ok(unsafe {
        cuLaunchKernel(
            f,
            grid.0,
            grid.1,
            1,
            16,
            16,
            1,
            0,
            null_mut(),
            params.as_mut_ptr(),
            null_mut(),
        )
    });
    let c = download(dc, m * n);
    for row in 0..m {
        for col in 0..n {
            let sum = (0..k).fold(0f32, |sum, i| a[row * k + i].mul_add(b[i * n + col], sum));
            assert_eq!(c[row * n + col].to_bits(), sum.to_bits(), "C[{row}][{col}]");
        }
    }
}

#[test]
fn identical_launches_are_reused_but_all_timed() {
    let sim = context(QUIET);
    let s = stream();
    let n = 4096;
    let (a, b) = (floats(n, 5), floats(n, 6));
    let (da, db, dc) = (upload(&a), upload(&b), alloc(4 * n));
    let f = vector_add_function();
    let (start, stop) = (event(), event());
    ok(cuEventRecord(start, s));
    ok(launch_vector_add(f, (da, db, dc), n as u64, s));
    ok(cuEventRecord(stop, s));
    ok(cuEventSynchronize(stop));
    let once = elapsed(start, stop);
    assert_eq!(sim.interpreted(), 1);
    ok(cuEventRecord(start, s));
    for _ in 0..16 {
        ok(launch_vector_add(f, (da, db, dc), n as u64, s));
    }
    ok(cuEventRecord(stop, s));
    ok(cuEventSynchronize(stop));
    let sixteen = elapsed(start, stop);
    assert!(
        (sixteen - 16.0 * once).abs() <= 1e-6 * sixteen,
        "{sixteen} vs 16 x {once}"
    );
    assert_eq!(
        sim.interpreted(),
        2,
        "run once more to see that it changes nothing"
    );
    assert_eq!(sim.launches(), 17);
    let c = download(dc, n);
    assert!((0..n).all(|i| c[i].to_bits() == (a[i] + b[i]).to_bits()));
    // A new input runs it again.
    let fresh = floats(n, 7);
    // SAFETY: the allocation holds n floats.
    ok(unsafe { cuMemcpyHtoD_v2(da, fresh.as_ptr().cast(), 4 * n) });
    ok(launch_vector_add(f, (da, db, dc), n as u64, s));
    ok(cuStreamSynchronize(s));
    assert_eq!(sim.interpreted(), 3);
    let c = download(dc, n);
    assert!((0..n).all(|i| c[i].to_bits() == (fresh[i] + b[i]).to_bits()));
}

#[test]
fn a_kernel_that_updates_its_input_runs_every_time() {
    let sim = context(QUIET);
    let n = 1000;
    let (a, c0) = (floats(n, 8), floats(n, 9));
    let (da, dc) = (upload(&a), upload(&c0));
    let f = vector_add_function();
    for _ in 0..3 {
        // c = a + c
        ok(launch_vector_add(f, (da, dc, dc), n as u64, null_mut()));
    }
    let c = download(dc, n);
    assert_eq!(sim.interpreted(), 3);
    for i in 0..n {
        let want = a[i] + (a[i] + (a[i] + c0[i]));
        assert_eq!(c[i].to_bits(), want.to_bits(), "element {i}");
    }
}

#[test]
fn launches_the_driver_refuses() {
    context(QUIET);
    let f = vector_add_function();
    let d = alloc(16);
    let (mut pa, mut n) = (d, 4u64);
    let mut params: [*mut c_void; 4] = [
        (&mut pa as *mut u64).cast(),
        (&mut pa as *mut u64).cast(),
        (&mut pa as *mut u64).cast(),
        (&mut n as *mut u64).cast(),
    ];
    let p = params.as_mut_ptr();
    let mut extra: [*mut c_void; 1] = [null_mut()];
    let launch = |block: u32, params: *mut *mut c_void, extra: *mut *mut c_void| {
        // SAFETY: params is null or four pointers to the parameters; extra is null or a list.
        unsafe { cuLaunchKernel(f, 1, 1, 1, block, 1, 1, 0, null_mut(), params, extra) }
    };
    fails(launch(2048, p, null_mut()), "CUDA_ERROR_INVALID_VALUE");
    fails(launch(0, p, null_mut()), "CUDA_ERROR_INVALID_VALUE");
    fails(
        launch(32, null_mut(), null_mut()),
        "CUDA_ERROR_INVALID_VALUE",
    );
    fails(
        launch(32, null_mut(), extra.as_mut_ptr()),
        "CUDA_ERROR_NOT_SUPPORTED",
    );
    fails(
        launch(32, p, extra.as_mut_ptr()),
        "CUDA_ERROR_INVALID_VALUE",
    );
    // SAFETY: as above, with 1 KiB of dynamic shared memory over the limit.
    let status =
        unsafe { cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 49 * 1024, null_mut(), p, null_mut()) };
    fails(status, "CUDA_ERROR_INVALID_VALUE");
    ok(launch(32, p, null_mut()));
    ok(cuCtxSynchronize());
}

#[test]
fn a_kernel_past_its_buffer_is_an_illegal_address_for_good() {
    context(QUIET);
    let f = vector_add_function();
    let s = stream();
    let (da, db, dc) = (upload(&[1.0; 100]), upload(&[2.0; 100]), alloc(400));
    // Twice as many elements as the buffers hold.
    ok(launch_vector_add(f, (da, db, dc), 200, s));
    fails(cuStreamSynchronize(s), "CUDA_ERROR_ILLEGAL_ADDRESS");
    fails(cuCtxSynchronize(), "CUDA_ERROR_ILLEGAL_ADDRESS");
    let mut ptr = 0;
    // SAFETY: a valid out-pointer.
    fails(
        unsafe { cuMemAlloc_v2(&mut ptr, 4) },
        "CUDA_ERROR_ILLEGAL_ADDRESS",
    );
    fails(cuMemFree_v2(da), "CUDA_ERROR_ILLEGAL_ADDRESS");
    // Releasing the primary context destroys it, and the error with it.
    ok(cuDevicePrimaryCtxRelease_v2(0));
    let mut ctx = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDevicePrimaryCtxRetain(&mut ctx, 0) });
    ok(cuCtxSetCurrent(ctx));
    ok(cuCtxSynchronize());
}
