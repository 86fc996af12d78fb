//! A node of several GPUs through the driver: peer access as the node and its faults allow it,
//! enabled one way per context, copies between devices that move every byte at the rate
//! `stackbench_simgpu::node` models (one way and both ways at once), and a kernel reading a
//! peer's memory over the link.

mod driver_support;

use driver_support::{fails, function, host, ok};
use stackbench_simgpu::clock::{LAUNCH_LATENCY, MEMOP_LATENCY};
use stackbench_simgpu::driver::*;
use stackbench_simgpu::node::peer_gbs;
use stackbench_simgpu::profile::Profile;
use std::ffi::c_void;
use std::ptr::null_mut;

/// Eight small GPUs on NVSwitches, two NUMA nodes, no variation: modelled times are exact.
const HGX: &str = r#"
[[device]]
memory_gib = 1
noise = 0.0
run_sigma = 0.0
boot_sigma = 0.0
ramp_ms = 0.0

[node]
gpus = 8
nvswitch = true
numa_node = [0, 0, 0, 0, 1, 1, 1, 1]
"#;

/// Four GPUs on PCIe switches, two NUMA nodes, no variation.
const PCIE: &str = r#"
[[device]]
memory_gib = 1
noise = 0.0
run_sigma = 0.0
boot_sigma = 0.0
ramp_ms = 0.0

[node]
gpus = 4
pcie_gbs = 55.0
numa_node = [0, 0, 1, 1]
"#;

/// Bytes of each timed copy.
const BYTES: usize = 64 << 20;

/// `profile` with `faults` as its `[faults]`.
fn with_faults(profile: &str, faults: &str) -> String {
    format!("{profile}\n[faults]\n{faults}\n")
}

/// A host of `profile`, initialised, with every device's primary context retained.
fn node(profile: &str) -> Vec<*mut c_void> {
    host(profile);
    ok(cuInit(0));
    let mut count = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDeviceGetCount(&mut count) });
    (0..count)
        .map(|dev| {
            let mut ctx = null_mut();
            // SAFETY: a valid out-pointer.
            ok(unsafe { cuDevicePrimaryCtxRetain(&mut ctx, dev) });
            ctx
        })
        .collect()
}

fn can_access(a: i32, b: i32) -> i32 {
    let mut can = -1;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDeviceCanAccessPeer(&mut can, a, b) });
    can
}

fn p2p(attribute: i32, a: i32, b: i32) -> Result<i32, CUresult> {
    let mut value = -1;
    // SAFETY: a valid out-pointer.
    match unsafe { cuDeviceGetP2PAttribute(&mut value, attribute, a, b) } {
        0 => Ok(value),
        status => Err(status),
    }
}

fn attribute(attribute: i32, dev: i32) -> i32 {
    let mut value = -1;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDeviceGetAttribute(&mut value, attribute, dev) });
    value
}

/// `bytes` of device memory on the current context's device.
fn alloc(bytes: usize) -> u64 {
    let mut ptr = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuMemAlloc_v2(&mut ptr, bytes) });
    ptr
}

/// A stream and two timing events of the current context.
fn stream_and_events() -> (*mut c_void, *mut c_void, *mut c_void) {
    let (mut stream, mut start, mut stop) = (null_mut(), null_mut(), null_mut());
    // SAFETY: valid out-pointers.
    unsafe {
        ok(cuStreamCreate(&mut stream, 1));
        ok(cuEventCreate(&mut start, 0));
        ok(cuEventCreate(&mut stop, 0));
    }
    (stream, start, stop)
}

/// Seconds between two completed events.
fn seconds(start: *mut c_void, stop: *mut c_void) -> f64 {
    ok(cuEventSynchronize(stop));
    let mut ms = f32::NAN;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuEventElapsedTime_v2(&mut ms, start, stop) });
    f64::from(ms) * 1e-3
}

/// Writes `data` to device memory at `ptr` (of the current context's device).
fn put(ptr: u64, data: &[u8]) {
    // SAFETY: `data` holds the bytes copied.
    ok(unsafe { cuMemcpyHtoD_v2(ptr, data.as_ptr().cast(), data.len()) });
}

/// Reads `len` bytes of device memory at `ptr`.
fn get(ptr: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    // SAFETY: `out` holds the bytes copied.
    ok(unsafe { cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), ptr, len) });
    out
}

/// Deterministic bytes.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 11) as u8)
        .collect()
}

/// The modelled seconds of a copy of `bytes` between `a` and `b` (larger `slow_device` factor
/// `slow`), peer access enabled or not.
fn model(profile: &str, a: usize, b: usize, enabled: bool, slow: f64, bytes: usize) -> f64 {
    let profile = Profile::parse(profile).unwrap();
    slow * MEMOP_LATENCY + bytes as f64 / (peer_gbs(&profile, a, b, enabled) * 1e9)
}

#[track_caller]
fn close(got: f64, want: f64, relative: f64) {
    assert!(
        (got - want).abs() <= want * relative,
        "{got} s, the model says {want} s"
    );
}

/// Times one `cuMemcpyPeerAsync` of `BYTES` from device `from` to device `to` on a stream of
/// device `on`, checking that every byte arrived; seconds.
fn timed_peer_copy(ctxs: &[*mut c_void], from: usize, to: usize, on: usize) -> f64 {
    ok(cuCtxSetCurrent(ctxs[from]));
    let src = alloc(BYTES);
    let data = pattern(BYTES, from as u8 * 16 + to as u8);
    put(src, &data);
    ok(cuCtxSetCurrent(ctxs[to]));
    let dst = alloc(BYTES);
    ok(cuCtxSetCurrent(ctxs[on]));
    let (stream, start, stop) = stream_and_events();
    ok(cuEventRecord(start, stream));
    ok(cuMemcpyPeerAsync(
        dst, ctxs[to], src, ctxs[from], BYTES, stream,
    ));
    ok(cuEventRecord(stop, stream));
    let time = seconds(start, stop);
    ok(cuCtxSetCurrent(ctxs[to]));
    assert!(get(dst, BYTES) == data, "{from} -> {to}: bytes differ");
    for ptr in [src, dst] {
        ok(cuMemFree_v2(ptr));
    }
    time
}

/// Enables peer access from `from`'s context to `to`'s.
fn enable(ctxs: &[*mut c_void], from: usize, to: usize) -> CUresult {
    ok(cuCtxSetCurrent(ctxs[from]));
    cuCtxEnablePeerAccess(ctxs[to], 0)
}

#[test]
fn an_hgx_node_lets_every_pair_reach_each_other_over_nvlink() {
    let ctxs = node(HGX);
    assert_eq!(ctxs.len(), 8);
    for a in 0..8 {
        for b in 0..8 {
            assert_eq!(can_access(a, b), i32::from(a != b), "{a} -> {b}");
        }
        assert_eq!(attribute(134, a), i32::from(a >= 4), "HOST_NUMA_ID");
        assert_eq!(attribute(41, a), 1, "UNIFIED_ADDRESSING");
    }
    assert_eq!(p2p(1, 0, 5), Ok(0), "PERFORMANCE_RANK: NVLink");
    assert_eq!(
        (p2p(2, 0, 5), p2p(3, 0, 5), p2p(4, 0, 5)),
        (Ok(1), Ok(1), Ok(1))
    );
    fails(p2p(2, 3, 3).unwrap_err(), "CUDA_ERROR_INVALID_DEVICE");
    fails(p2p(9, 0, 1).unwrap_err(), "CUDA_ERROR_INVALID_VALUE");

    ok(enable(&ctxs, 0, 1));
    fails(
        enable(&ctxs, 0, 1),
        "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
    );
    fails(enable(&ctxs, 0, 0), "CUDA_ERROR_INVALID_DEVICE");
    fails(
        cuCtxEnablePeerAccess(ctxs[2], 1),
        "CUDA_ERROR_INVALID_VALUE",
    );
    // One way only: 1 -> 0 is not enabled until 1 asks.
    ok(cuCtxSetCurrent(ctxs[1]));
    fails(
        cuCtxDisablePeerAccess(ctxs[0]),
        "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
    );
    ok(enable(&ctxs, 1, 0));
    ok(cuCtxDisablePeerAccess(ctxs[0]));
    // Releasing device 1's primary context ends 0 -> 1; retained again, it can be enabled anew.
    ok(cuDevicePrimaryCtxRelease_v2(1));
    let mut ctx = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDevicePrimaryCtxRetain(&mut ctx, 1) });
    ok(enable(&ctxs, 0, 1));
}

#[test]
fn a_fabric_not_ready_refuses_peer_access_between_every_pair() {
    for state in ["in_progress", "insufficient_resources"] {
        let profile = with_faults(HGX, &format!("fabric_state = \"{state}\""));
        let ctxs = node(&profile);
        for a in 0..8 {
            for b in 0..8 {
                assert_eq!(can_access(a, b), 0, "{state}: {a} -> {b}");
            }
        }
        assert_eq!((p2p(2, 0, 1), p2p(3, 0, 1)), (Ok(0), Ok(0)));
        fails(enable(&ctxs, 0, 1), "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED");
        // Copies still work, staged through the host.
        let time = timed_peer_copy(&ctxs, 0, 1, 0);
        close(time, model(&profile, 0, 1, false, 1.0, BYTES), 1e-3);
    }
}

#[test]
fn a_denied_pair_is_refused_but_copies_at_the_staged_rate() {
    let profile = with_faults(HGX, "peer_access_denied = [[1, 2]]");
    let ctxs = node(&profile);
    assert_eq!((can_access(1, 2), can_access(2, 1)), (0, 0));
    assert_eq!((can_access(1, 3), can_access(0, 2)), (1, 1));
    fails(enable(&ctxs, 1, 2), "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED");
    fails(enable(&ctxs, 2, 1), "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED");
    let staged = timed_peer_copy(&ctxs, 1, 2, 1);
    close(staged, MEMOP_LATENCY + BYTES as f64 / 12.5e9, 1e-3);
    ok(enable(&ctxs, 1, 3));
    let direct = timed_peer_copy(&ctxs, 1, 3, 1);
    close(direct, MEMOP_LATENCY + BYTES as f64 / 450e9, 1e-3);
}

#[test]
fn a_pcie_only_node_allows_peers_over_pcie_without_atomics() {
    let ctxs = node(PCIE);
    assert_eq!((can_access(0, 3), can_access(2, 1)), (1, 1));
    assert_eq!(
        (p2p(1, 0, 3), p2p(2, 0, 3), p2p(3, 0, 3)),
        (Ok(1), Ok(1), Ok(0))
    );
    assert_eq!(attribute(134, 2), 1);
    ok(enable(&ctxs, 0, 3));
    close(
        timed_peer_copy(&ctxs, 0, 3, 0),
        MEMOP_LATENCY + BYTES as f64 / 55e9,
        1e-3,
    );
    close(
        timed_peer_copy(&ctxs, 3, 0, 3),
        MEMOP_LATENCY + BYTES as f64 / 27.5e9,
        1e-3,
    );
}

#[test]
fn peer_copies_move_every_byte_both_ways_at_the_modelled_rate() {
    let ctxs = node(HGX);
    ok(enable(&ctxs, 2, 6));
    // Pushed by 2 (enabled 2 -> 6) and pulled by 2 from 6: NVLink both ways.
    let push = timed_peer_copy(&ctxs, 2, 6, 2);
    let pull = timed_peer_copy(&ctxs, 6, 2, 2);
    for time in [push, pull] {
        close(time, model(HGX, 2, 6, true, 1.0, BYTES), 1e-3);
    }
    // Pushed by 6, which has not enabled 6 -> 2: staged.
    close(
        timed_peer_copy(&ctxs, 6, 2, 6),
        model(HGX, 6, 2, false, 1.0, BYTES),
        1e-3,
    );
    // cuMemcpyDtoD between devices (unified addressing), and the synchronous cuMemcpyPeer.
    ok(cuCtxSetCurrent(ctxs[6]));
    let far = alloc(4096);
    put(far, &pattern(4096, 9));
    ok(cuCtxSetCurrent(ctxs[2]));
    let near = alloc(4096);
    ok(cuMemcpyDtoD_v2(near, far, 4096));
    assert_eq!(get(near, 4096), pattern(4096, 9));
    put(near, &pattern(4096, 10));
    ok(cuMemcpyPeer(far, ctxs[6], near, ctxs[2], 4096));
    ok(cuCtxSynchronize());
    ok(cuCtxSetCurrent(ctxs[6]));
    assert_eq!(get(far, 4096), pattern(4096, 10));
    // A range outside the context's device memory is an invalid value.
    ok(cuCtxSetCurrent(ctxs[2]));
    fails(
        cuMemcpyPeer(far, ctxs[2], near, ctxs[2], 4096),
        "CUDA_ERROR_INVALID_VALUE",
    );
}

#[test]
fn with_noise_the_measured_rate_is_within_five_percent_of_the_model() {
    let profile = HGX
        .replace("noise = 0.0", "noise = 0.005")
        .replace("run_sigma = 0.0", "run_sigma = 0.01")
        .replace("boot_sigma = 0.0", "boot_sigma = 0.01")
        .replace("ramp_ms = 0.0", "ramp_ms = 5.0");
    let ctxs = node(&profile);
    ok(enable(&ctxs, 4, 5));
    // The first copies run while the clocks ramp up (5 ms of model time), as on a card.
    for round in 0..6 {
        let time = timed_peer_copy(&ctxs, 4, 5, 4);
        if round >= 3 {
            close(time, model(&profile, 4, 5, true, 1.0, BYTES), 0.05);
        }
    }
}

#[test]
fn copies_both_ways_at_once_each_run_at_the_full_rate() {
    let ctxs = node(HGX);
    ok(enable(&ctxs, 0, 1));
    ok(enable(&ctxs, 1, 0));
    ok(cuCtxSetCurrent(ctxs[1]));
    let on_1 = [alloc(BYTES), alloc(BYTES)];
    let (s1, start_1, stop_1) = stream_and_events();
    ok(cuCtxSetCurrent(ctxs[0]));
    let on_0 = [alloc(BYTES), alloc(BYTES)];
    let (s0, start, stop_0) = stream_and_events();
    // Device 0 is ahead of device 1 in time: 1's copy must still wait for the common start.
    ok(cuMemcpyDtoDAsync_v2(on_0[1], on_0[0], BYTES, s0));
    ok(cuEventRecord(start, s0));
    ok(cuMemcpyPeerAsync(
        on_1[0], ctxs[1], on_0[0], ctxs[0], BYTES, s0,
    ));
    ok(cuEventRecord(stop_0, s0));
    ok(cuCtxSetCurrent(ctxs[1]));
    ok(cuStreamWaitEvent(s1, start, 0));
    ok(cuEventRecord(start_1, s1));
    ok(cuMemcpyPeerAsync(
        on_0[1], ctxs[0], on_1[1], ctxs[1], BYTES, s1,
    ));
    ok(cuEventRecord(stop_1, s1));
    let one_way = model(HGX, 0, 1, true, 1.0, BYTES);
    close(seconds(start, stop_0), one_way, 1e-3);
    close(seconds(start_1, stop_1), one_way, 1e-3);
    close(seconds(start, start_1) + 1e-9, 1e-9, 1e-3);

    // Host to device and device to host at once, on two streams of one device, from pinned
    // memory: each at pcie_gbs.
    ok(cuCtxSetCurrent(ctxs[0]));
    let (mut up, mut down) = (null_mut(), null_mut());
    // SAFETY: valid out-pointers.
    unsafe {
        ok(cuMemHostAlloc(&mut up, BYTES, 0));
        ok(cuMemHostAlloc(&mut down, BYTES, 0));
    }
    let (s2, start_2, stop_2) = stream_and_events();
    let (s3, start_3, stop_3) = stream_and_events();
    ok(cuEventRecord(start_2, s2));
    ok(cuStreamWaitEvent(s3, start_2, 0));
    ok(cuEventRecord(start_3, s3));
    // SAFETY: pinned buffers of BYTES, alive until the copies are done.
    unsafe {
        ok(cuMemcpyHtoDAsync_v2(on_0[0], up, BYTES, s2));
        ok(cuMemcpyDtoHAsync_v2(down, on_0[1], BYTES, s3));
    }
    ok(cuEventRecord(stop_2, s2));
    ok(cuEventRecord(stop_3, s3));
    let pcie = MEMOP_LATENCY + BYTES as f64 / 25e9;
    close(seconds(start_2, stop_2), pcie, 1e-3);
    close(seconds(start_3, stop_3), pcie, 1e-3);
    close(seconds(start_2, stop_3), pcie, 1e-3);
    ok(cuMemFreeHost(up));
    ok(cuMemFreeHost(down));
}

#[test]
fn a_down_link_a_slow_device_and_a_slow_link_lengthen_copies() {
    let profile = with_faults(
        HGX,
        "nvlink_down = [[3, 7]]\nslow_device = [[5, 1.15]]\nslow_link = [[0, 4, 1.4]]",
    );
    let ctxs = node(&profile);
    for (a, b) in [(3, 0), (0, 3), (5, 1), (0, 4), (4, 0), (1, 2)] {
        ok(enable(&ctxs, a, b));
        let slow = if a == 5 || b == 5 { 1.15 } else { 1.0 };
        let time = timed_peer_copy(&ctxs, a, b, a);
        close(time, model(&profile, a, b, true, slow, BYTES), 1e-3);
    }
    let time = |a, b| model(&profile, a, b, true, 1.0, BYTES) - MEMOP_LATENCY;
    close(time(1, 2) / time(3, 0), 17.0 / 18.0, 1e-9);
    close(time(0, 4) / time(1, 2), 1.4, 1e-9);
    // A slow device's host copies and memsets are slower too.
    ok(cuCtxSetCurrent(ctxs[5]));
    let ptr = alloc(BYTES);
    let (stream, start, stop) = stream_and_events();
    ok(cuEventRecord(start, stream));
    ok(cuMemsetD8Async(ptr, 1, BYTES, stream));
    ok(cuEventRecord(stop, stream));
    let memset = MEMOP_LATENCY + BYTES as f64 / 3350e9;
    close(seconds(start, stop), 1.15 * memset, 1e-3);
}

/// Launches the harness's peer-copy kernel (`n` u32 from `src` to `dst`) on `stream`.
fn launch_peer_copy(function: *mut c_void, src: u64, dst: u64, n: u64, stream: *mut c_void) {
    let (mut src, mut dst, mut n) = (src, dst, n);
    let mut params: [*mut c_void; 3] = [
        (&mut src as *mut u64).cast(),
        (&mut dst as *mut u64).cast(),
        (&mut n as *mut u64).cast(),
    ];
    // SAFETY: three pointers to the kernel's three 8-byte parameters.
    ok(unsafe {
        cuLaunchKernel(
            function,
            64,
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
    });
}

#[test]
fn the_peer_copy_kernel_reads_a_peer_over_the_link_once_access_is_enabled() {
    let ctxs = node(HGX);
    let n = 1usize << 18;
    ok(cuCtxSetCurrent(ctxs[1]));
    let src = alloc(4 * n);
    let data = pattern(4 * n, 77);
    put(src, &data);
    ok(cuCtxSetCurrent(ctxs[0]));
    let dst = alloc(4 * n);
    let kernel = function(
        "stackbench_peer_copy.nvvm.sm_70.ptx",
        "stackbench_peer_copy",
    );
    ok(cuCtxEnablePeerAccess(ctxs[1], 0));
    let (stream, start, stop) = stream_and_events();
    ok(cuEventRecord(start, stream));
    launch_peer_copy(kernel, src, dst, n as u64, stream);
    ok(cuEventRecord(stop, stream));
    let time = seconds(start, stop);
    assert!(get(dst, 4 * n) == data, "the kernel's copy differs");
    // Its 1 MiB over 18 links outlasts the roofline (2 MiB at 3.35 TB/s).
    let link = 4.0 * n as f64 / (peer_gbs(&Profile::parse(HGX).unwrap(), 0, 1, true) * 1e9);
    close(time, LAUNCH_LATENCY + link, 1e-3);

    // Without access, the peer's memory is an illegal address (sticky).
    ok(cuCtxDisablePeerAccess(ctxs[1]));
    launch_peer_copy(kernel, dst, src, n as u64, stream);
    fails(cuCtxSynchronize(), "CUDA_ERROR_ILLEGAL_ADDRESS");
    fails(cuCtxSynchronize(), "CUDA_ERROR_ILLEGAL_ADDRESS");
}
