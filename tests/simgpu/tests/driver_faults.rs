//! The faults of the profile that belong to the driver, as a real host shows them: a kernel
//! that never completes, a launch that fails with an illegal address, wrong results, memory
//! that runs out (in driver_memory.rs), and a GPU that falls off the bus.

mod driver_support;

use driver_support::{
    alloc, context, download, event, fails, floats, function, launch_vector_add, ok, stream,
    upload, vector_add_function, QUIET,
};
use stackbench_simgpu::driver::*;
use std::ffi::c_void;
use std::ptr::null_mut;

fn with_faults(faults: &str) -> String {
    format!("{QUIET}\n[faults]\n{faults}\n")
}

#[test]
fn a_hung_kernel_never_completes() {
    let sim = context(&with_faults("kernel_hang = \"vector_add\""));
    let (held, other) = (stream(), stream());
    let (da, dc) = (upload(&[1.0; 64]), alloc(256));
    let f = vector_add_function();
    let done = event();
    ok(launch_vector_add(f, (da, da, dc), 64, held));
    ok(cuEventRecord(done, held));
    ok(cuMemsetD8Async(dc, 0, 256, held));
    for _ in 0..100 {
        fails(cuStreamQuery(held), "CUDA_ERROR_NOT_READY");
        fails(cuEventQuery(done), "CUDA_ERROR_NOT_READY");
    }
    // Other streams go on.
    ok(cuMemsetD8Async(da, 0, 256, other));
    ok(cuStreamSynchronize(other));
    assert_eq!(
        sim.launches(),
        1,
        "it was launched: NVML sees a kernel running"
    );
    assert_eq!(sim.interpreted(), 0);
}

#[test]
fn a_launch_error_is_an_illegal_address_from_then_on() {
    context(&with_faults("launch_error = \"vector_add\""));
    let (da, dc) = (upload(&[1.0; 64]), alloc(256));
    let f = vector_add_function();
    ok(launch_vector_add(f, (da, da, dc), 64, null_mut()));
    fails(cuCtxSynchronize(), "CUDA_ERROR_ILLEGAL_ADDRESS");
    fails(cuCtxSynchronize(), "CUDA_ERROR_ILLEGAL_ADDRESS");
    let mut out = [0f32; 64];
    // SAFETY: `out` holds 256 bytes.
    let status = unsafe { cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), dc, 256) };
    fails(status, "CUDA_ERROR_ILLEGAL_ADDRESS");
    fails(
        launch_vector_add(f, (da, da, dc), 64, null_mut()),
        "CUDA_ERROR_ILLEGAL_ADDRESS",
    );
}

#[test]
fn wrong_results_perturb_three_elements_of_the_vector_add() {
    context(&with_faults("wrong_results = \"vector_add\""));
    let n = 1001;
    let (a, b) = (floats(n, 10), floats(n, 11));
    let (da, db, dc) = (upload(&a), upload(&b), alloc(4 * n));
    ok(launch_vector_add(
        vector_add_function(),
        (da, db, dc),
        n as u64,
        null_mut(),
    ));
    let c = download(dc, n);
    let wrong: Vec<usize> = (0..n)
        .filter(|&i| c[i].to_bits() != (a[i] + b[i]).to_bits())
        .collect();
    assert_eq!(wrong, [0, 500, 1000]);
    for i in wrong {
        let relative = ((c[i] - (a[i] + b[i])) / (a[i] + b[i])).abs();
        assert!(relative > 0.2, "element {i} off by {relative} only");
    }
}

#[test]
fn wrong_results_perturb_the_matmul_and_not_the_vector_add() {
    context(&with_faults("wrong_results = \"matmul\""));
    let (m, n, k) = (20usize, 20usize, 8usize);
    let (da, db, dc) = (
        upload(&floats(m * k, 12)),
        upload(&floats(k * n, 13)),
        alloc(4 * m * n),
    );
    let f = function("matmul_tiled.nvrtc-13.0.compute_121.ptx", "matmul_tiled");
    let run = |f| {
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
        // SAFETY: six pointers to the kernel's parameters.
        ok(unsafe {
            cuLaunchKernel(
                f,
                2,
                2,
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
        download(dc, m * n)
    };
    let perturbed = run(f);
    let (a, b) = (download(da, m * k), download(db, k * n));
    let want: Vec<f32> = (0..m * n)
        .map(|e| (0..k).fold(0f32, |s, i| a[(e / n) * k + i].mul_add(b[i * n + e % n], s)))
        .collect();
    let wrong: Vec<usize> = (0..m * n).filter(|&e| perturbed[e] != want[e]).collect();
    assert_eq!(wrong, [0, 200, 399]);
    // The vector add is untouched.
    let x = floats(100, 14);
    let (dx, dy) = (upload(&x), alloc(400));
    ok(launch_vector_add(
        vector_add_function(),
        (dx, dx, dy),
        100,
        null_mut(),
    ));
    let y = download(dy, 100);
    assert!((0..100).all(|i| y[i] == x[i] + x[i]));
}

#[test]
fn a_lost_gpu_answers_unknown_error_to_every_call() {
    let sim = host_lost_after(12);
    // cuInit, retain, set current: 3 calls.
    let a = alloc(64); // 4
    for _ in 0..8 {
        ok(cuMemsetD8_v2(a, 0, 64)); // 5..12
    }
    assert!(sim.lost());
    fails(cuMemsetD8_v2(a, 0, 64), "CUDA_ERROR_UNKNOWN");
    fails(cuCtxSynchronize(), "CUDA_ERROR_UNKNOWN");
    fails(cuInit(0), "CUDA_ERROR_UNKNOWN");
    let mut count = 0;
    // SAFETY: a valid out-pointer.
    fails(
        unsafe { cuDeviceGetCount(&mut count) },
        "CUDA_ERROR_UNKNOWN",
    );
    // What never reaches the GPU still answers.
    let mut version = 0;
    // SAFETY: as above.
    ok(unsafe { cuDriverGetVersion(&mut version) });
}

fn host_lost_after(calls: u64) -> &'static stackbench_simgpu::state::Sim {
    context(&with_faults(&format!("lost_after_calls = {calls}")))
}
