//! Events read the model timeline: the time between two events is the modelled duration of the
//! work between them (roofline of the profile, fixed costs, seeded noise), whatever the host
//! did meanwhile.

mod driver_support;

use driver_support::{alloc, context, elapsed, event, fails, ok, stream, QUIET};
use stackbench_simgpu::clock::{MEMOP_LATENCY, PCIE_BYTES_PER_SECOND};
use stackbench_simgpu::driver::*;
use std::ffi::c_void;
use std::ptr::null_mut;

/// QUIET's bandwidth, bytes per second.
const BANDWIDTH: f64 = 1000e9;

/// Milliseconds between events around `work` on `stream`.
fn timed(stream: *mut c_void, work: impl FnOnce()) -> f32 {
    let (start, stop) = (event(), event());
    ok(cuEventRecord(start, stream));
    work();
    ok(cuEventRecord(stop, stream));
    ok(cuEventSynchronize(stop));
    elapsed(start, stop)
}

#[track_caller]
fn close(got: f32, want_seconds: f64, relative: f64) {
    let want = want_seconds * 1e3;
    assert!(
        (f64::from(got) - want).abs() <= want * relative,
        "{got} ms, the model says {want} ms"
    );
}

#[test]
fn memsets_and_copies_take_their_modelled_time() {
    context(QUIET);
    let s = stream();
    let bytes = 64 << 20;
    let (a, b) = (alloc(bytes), alloc(bytes));
    let memset = timed(s, || ok(cuMemsetD8Async(a, 7, bytes, s)));
    close(memset, MEMOP_LATENCY + bytes as f64 / BANDWIDTH, 1e-5);
    let copy = timed(s, || ok(cuMemcpyDtoDAsync_v2(b, a, bytes, s)));
    close(copy, MEMOP_LATENCY + 2.0 * bytes as f64 / BANDWIDTH, 1e-5);
    let several = timed(s, || {
        for _ in 0..10 {
            ok(cuMemsetD8Async(a, 7, bytes, s));
        }
    });
    close(
        several,
        10.0 * (MEMOP_LATENCY + bytes as f64 / BANDWIDTH),
        1e-5,
    );
    // Host transfers over PCIe, on the null stream.
    let data = vec![0u8; 1 << 20];
    let upload = timed(null_mut(), || {
        // SAFETY: `data` holds the bytes copied.
        ok(unsafe { cuMemcpyHtoD_v2(a, data.as_ptr().cast(), data.len()) })
    });
    close(
        upload,
        MEMOP_LATENCY + data.len() as f64 / PCIE_BYTES_PER_SECOND,
        1e-5,
    );
}

#[test]
fn noise_is_seeded_and_small() {
    let profile = |seed: u64| {
        format!(
            "[[device]]\nmemory_gib = 1\nnoise = 0.005\nrun_sigma = 0.0\nboot_sigma = 0.0\n\
             ramp_ms = 0.0\nseed = {seed}\n"
        )
    };
    let run = |seed| {
        context(&profile(seed));
        let s = stream();
        let a = alloc(256 << 20);
        (0..5)
            .map(|_| timed(s, || ok(cuMemsetD8Async(a, 0, 256 << 20, s))))
            .collect::<Vec<_>>()
    };
    let first = run(1);
    assert_eq!(first, run(1), "the same seed gives the same times");
    assert_ne!(first, run(2));
    // The default profile's 3350 GB/s, within six standard deviations of noise.
    for ms in first {
        close(ms, MEMOP_LATENCY + (256 << 20) as f64 / 3350e9, 0.03);
    }
}

#[test]
fn slowdown_multiplies_every_duration() {
    context(&QUIET.replace("noise = 0.0", "noise = 0.0\nslowdown = 3.0"));
    let s = stream();
    let a = alloc(1 << 20);
    let ms = timed(s, || ok(cuMemsetD8Async(a, 0, 1 << 20, s)));
    close(
        ms,
        3.0 * (MEMOP_LATENCY + (1 << 20) as f64 / BANDWIDTH),
        1e-5,
    );
}

#[test]
fn events_answer_as_the_driver_documents() {
    context(QUIET);
    let (start, stop) = (event(), event());
    let mut ms = 0.0;
    // Never recorded: done, but no time.
    ok(cuEventQuery(start));
    ok(cuEventSynchronize(start));
    // SAFETY: a valid out-pointer.
    let status = unsafe { cuEventElapsedTime(&mut ms, start, stop) };
    fails(status, "CUDA_ERROR_INVALID_HANDLE");
    let mut untimed = null_mut();
    // SAFETY: as above; CU_EVENT_DISABLE_TIMING.
    ok(unsafe { cuEventCreate(&mut untimed, 0x2) });
    ok(cuEventRecord(start, null_mut()));
    ok(cuEventRecord(untimed, null_mut()));
    ok(cuEventSynchronize(untimed));
    // SAFETY: as above.
    let status = unsafe { cuEventElapsedTime(&mut ms, start, untimed) };
    fails(status, "CUDA_ERROR_INVALID_HANDLE");
    ok(cuEventRecord(stop, null_mut()));
    ok(cuEventSynchronize(stop));
    assert_eq!(elapsed(start, stop), 0.0, "nothing ran between them");
    ok(cuEventDestroy_v2(stop));
    fails(cuEventQuery(stop), "CUDA_ERROR_INVALID_HANDLE");
    // SAFETY: as above; an unknown flag.
    fails(
        unsafe { cuEventCreate(&mut untimed, 0x40) },
        "CUDA_ERROR_INVALID_VALUE",
    );
}
