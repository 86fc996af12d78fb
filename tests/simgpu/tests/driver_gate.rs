//! `cuStreamWaitValue32_v2`, as stackbench's bench gate uses it: a stream held at a word of
//! pinned memory runs nothing behind the wait until the host writes the word, and the time its
//! events measure is the work's own, not the host's wait.

mod driver_support;

use driver_support::{alloc, context, download, elapsed, event, fails, ok, stream, QUIET};
use stackbench_simgpu::clock::MEMOP_LATENCY;
use stackbench_simgpu::driver::*;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU32, Ordering};

const GEQ: u32 = 0;
const EQ: u32 = 1;
const AND: u32 = 2;
const NOR: u32 = 3;

/// A word of pinned, device-mapped memory, set to `value`: the host's view and its device
/// address.
fn word(value: u32) -> (&'static AtomicU32, u64) {
    let mut host: *mut c_void = null_mut();
    // SAFETY: a valid out-pointer; DEVICEMAP | PORTABLE as the gate asks.
    ok(unsafe { cuMemHostAlloc(&mut host, 4, 0x3) });
    let mut device = 0;
    // SAFETY: as above.
    ok(unsafe { cuMemHostGetDevicePointer_v2(&mut device, host, 0) });
    // SAFETY: page-aligned pinned memory, never freed in these tests.
    let word = unsafe { &*host.cast::<AtomicU32>() };
    word.store(value, Ordering::Release);
    (word, device)
}

#[test]
fn a_held_stream_runs_nothing_until_the_word_is_written() {
    context(QUIET);
    let s = stream();
    let (gate, address) = word(0);
    let a = alloc(1 << 20);
    let (start, stop) = (event(), event());
    ok(cuStreamWaitValue32_v2(s, address, 1, GEQ));
    ok(cuEventRecord(start, s));
    ok(cuMemsetD8Async(a, 0x3f, 1 << 20, s));
    ok(cuEventRecord(stop, s));
    for _ in 0..3 {
        fails(cuStreamQuery(s), "CUDA_ERROR_NOT_READY");
        fails(cuEventQuery(stop), "CUDA_ERROR_NOT_READY");
    }
    // The null stream does not wait for a non-blocking stream: the memset has not run.
    assert_eq!(download(a, 1)[0], 0.0);
    gate.store(1, Ordering::Release);
    ok(cuStreamQuery(s));
    ok(cuEventQuery(stop));
    assert_eq!(download(a, 1)[0].to_bits(), 0x3f3f_3f3f);
    // The events measured the memset alone.
    let model = MEMOP_LATENCY + (1 << 20) as f64 / 1000e9;
    assert!((f64::from(elapsed(start, stop)) - model * 1e3).abs() < 1e-6);
}

#[test]
fn a_synchronisation_waits_for_the_host_to_open_the_gate() {
    context(QUIET);
    let s = stream();
    let (gate, address) = word(6);
    let a = alloc(64);
    ok(cuStreamWaitValue32_v2(s, address, 7, GEQ));
    ok(cuMemsetD8Async(a, 1, 64, s));
    let opener = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(20));
        gate.store(7, Ordering::Release);
    });
    ok(cuStreamSynchronize(s));
    opener.join().unwrap();
    assert_eq!(download(a, 1)[0].to_bits(), 0x0101_0101);
}

#[test]
fn geq_is_cyclic() {
    context(QUIET);
    let s = stream();
    // (int32_t)(0xffffffff - 1) = -2: not yet.
    let (gate, address) = word(u32::MAX);
    ok(cuStreamWaitValue32_v2(s, address, 1, GEQ));
    fails(cuStreamQuery(s), "CUDA_ERROR_NOT_READY");
    // The word wraps to 1: (int32_t)(1 - 1) = 0.
    gate.store(1, Ordering::Release);
    ok(cuStreamQuery(s));
    // (int32_t)(5 - 0xfffffff0) = 21: already past.
    gate.store(5, Ordering::Release);
    ok(cuStreamWaitValue32_v2(s, address, 0xffff_fff0, GEQ));
    ok(cuStreamQuery(s));
}

#[test]
fn eq_and_and_nor() {
    context(QUIET);
    let s = stream();
    let (gate, address) = word(0b0100);
    ok(cuStreamWaitValue32_v2(s, address, 0b0100, EQ));
    ok(cuStreamWaitValue32_v2(s, address, 0b0110, AND));
    ok(cuStreamQuery(s));
    // ~(0b0100 | !0b0100) == 0: held.
    ok(cuStreamWaitValue32_v2(s, address, !0b0100, NOR));
    fails(cuStreamQuery(s), "CUDA_ERROR_NOT_READY");
    // ~(0 | !0b0100) == 0b0100: open.
    gate.store(0, Ordering::Release);
    ok(cuStreamQuery(s));
}

#[test]
fn the_word_must_be_device_or_pinned_memory() {
    context(QUIET);
    let s = stream();
    let local = AtomicU32::new(0);
    let status = cuStreamWaitValue32_v2(s, &local as *const AtomicU32 as u64, 1, GEQ);
    fails(status, "CUDA_ERROR_INVALID_VALUE");
    let (_, address) = word(0);
    fails(
        cuStreamWaitValue32_v2(s, address + 2, 1, GEQ),
        "CUDA_ERROR_INVALID_VALUE",
    );
    fails(
        cuStreamWaitValue32_v2(s, address, 1, 1 << 5),
        "CUDA_ERROR_INVALID_VALUE",
    );
    // Device memory can be waited on too.
    let a = alloc(4);
    ok(cuMemsetD8_v2(a, 0, 4));
    ok(cuStreamWaitValue32_v2(s, a, 0, EQ));
    ok(cuStreamSynchronize(s));
}

#[test]
fn the_null_stream_waits_for_blocking_streams_only() {
    context(QUIET);
    let mut blocking = null_mut();
    // SAFETY: a valid out-pointer; flags 0: ordered with the null stream.
    ok(unsafe { cuStreamCreate(&mut blocking, 0) });
    let free = stream();
    let (gate, address) = word(0);
    let (a, b) = (alloc(4), alloc(4));
    ok(cuStreamWaitValue32_v2(blocking, address, 1, GEQ));
    ok(cuMemsetD8_v2(a, 1, 4));
    ok(cuMemsetD8Async(b, 1, 4, free));
    fails(cuStreamQuery(null_mut()), "CUDA_ERROR_NOT_READY");
    ok(cuStreamQuery(free));
    gate.store(1, Ordering::Release);
    ok(cuCtxSynchronize());
    assert_eq!(download(a, 1)[0].to_bits(), 0x0101_0101);
}
