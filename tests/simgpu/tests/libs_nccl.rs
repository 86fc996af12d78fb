//! The simulated NCCL through its exported functions, each test on a host of its own (or, where
//! NCCL's environment matters, in a process of its own): every collective, data type and
//! operation against a reference written here from NCCL's documentation, on 2 and 8 GPUs; in
//! place; stream order; the time model; the INFO lines for NVLink, a denied pair,
//! `NCCL_P2P_DISABLE` and both transports off; the hang of an ungrouped call; argument errors;
//! the faults.

mod driver_support;

use driver_support::{event, host, ok};
use proptest::prelude::*;
use stackbench_simgpu::driver::*;
use stackbench_simgpu::libs::nccl::collective::*;
use stackbench_simgpu::libs::nccl::comm::*;
use stackbench_simgpu::libs::nccl::debug::hostname;
use stackbench_simgpu::libs::nccl::group::*;
use stackbench_simgpu::libs::nccl::model::LATENCY;
use stackbench_simgpu::libs::nccl::*;
use std::ffi::{c_int, c_void, CStr};
use std::process::Command;
use std::ptr::{null, null_mut};
use std::sync::mpsc;
use std::time::Duration;

/// `n` GPUs on NVSwitches (H100-like links: 18 x 25 GB/s), with `noise` and `faults`.
fn hgx(n: usize, noise: f64, faults: &str) -> String {
    format!(
        "[[device]]\nmemory_gib = 1\nnoise = {noise}\nrun_sigma = 0.0\nboot_sigma = 0.0\n\
         [node]\ngpus = {n}\nnvswitch = true\n[faults]\n{faults}\n"
    )
}

/// `ncclDataType_t`s and `ncclRedOp_t`s by number.
const TYPES: std::ops::Range<c_int> = 0..10;
const OPS: std::ops::Range<c_int> = 0..5;
const FLOAT32: c_int = 7;
const SUM: c_int = 0;
const MAX: c_int = 2;

#[track_caller]
fn nccl_ok(code: NcclResult) {
    // SAFETY: NCCL's static text.
    let text = unsafe { CStr::from_ptr(ncclGetErrorString(code)) };
    assert_eq!(code, 0, "{text:?}");
}

/// The last WARN's text.
fn last_error() -> String {
    // SAFETY: the library's NUL-terminated text.
    unsafe { CStr::from_ptr(ncclGetLastError(null_mut())) }
        .to_string_lossy()
        .into_owned()
}

/// Device `d`'s primary context, current.
fn on(d: usize) {
    let mut ctx = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDevicePrimaryCtxRetain(&mut ctx, d as c_int) });
    ok(cuCtxSetCurrent(ctx));
}

/// A host of `profile` with communicators over its first `n` devices, and a stream on each.
fn clique(profile: &str, n: usize) -> (Vec<*mut c_void>, Vec<*mut c_void>) {
    host(profile);
    let mut comms = vec![null_mut(); n];
    // SAFETY: room for n communicators, no device list.
    nccl_ok(unsafe { ncclCommInitAll(comms.as_mut_ptr(), n as c_int, null()) });
    let streams = (0..n)
        .map(|d| {
            on(d);
            driver_support::stream()
        })
        .collect();
    (comms, streams)
}

/// `bytes` copied to new memory on device `d` (`extra` more bytes after them, zeroed).
fn upload(d: usize, bytes: &[u8], extra: usize) -> u64 {
    on(d);
    let ptr = driver_support::alloc(bytes.len() + extra);
    // SAFETY: the allocation holds the bytes.
    ok(unsafe { cuMemcpyHtoD_v2(ptr, bytes.as_ptr().cast(), bytes.len()) });
    ptr
}

/// `len` bytes of device `d`'s memory at `ptr`.
fn download(d: usize, ptr: u64, len: usize) -> Vec<u8> {
    on(d);
    let mut out = vec![0u8; len];
    // SAFETY: `out` holds len bytes.
    ok(unsafe { cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), ptr, len) });
    out
}

/// One element value as the test's reference holds it: exact.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Value {
    Int(i128),
    Float(f64),
}

/// Bytes per element of `ncclDataType_t` `t`.
fn size_of(t: c_int) -> usize {
    [1, 1, 4, 4, 8, 8, 2, 4, 8, 2][t as usize]
}

fn is_float(t: c_int) -> bool {
    t >= 6
}

/// `v` encoded as type `t` (integers wrapping).
fn encode(t: c_int, v: Value) -> Vec<u8> {
    let (i, f) = match v {
        Value::Int(i) => (i, i as f64),
        Value::Float(f) => (f as i128, f),
    };
    match t {
        0 => (i as i8).to_le_bytes().to_vec(),
        1 => (i as u8).to_le_bytes().to_vec(),
        2 => (i as i32).to_le_bytes().to_vec(),
        3 => (i as u32).to_le_bytes().to_vec(),
        4 => (i as i64).to_le_bytes().to_vec(),
        5 => (i as u64).to_le_bytes().to_vec(),
        6 => half::f16::from_f64(f).to_le_bytes().to_vec(),
        7 => (f as f32).to_le_bytes().to_vec(),
        8 => f.to_le_bytes().to_vec(),
        _ => half::bf16::from_f64(f).to_le_bytes().to_vec(),
    }
}

/// Small values, exact in every type and under any product of 8 of them: -1, 1, 2 (1, 2 for
/// unsigned types).
fn value(t: c_int, seed: usize) -> Value {
    let unsigned = t == 1 || t == 3 || t == 5;
    let choices: &[i128] = if unsigned { &[1, 2] } else { &[-1, 1, 2] };
    let v = choices[(seed.wrapping_mul(2_654_435_761) >> 7) % choices.len()];
    if is_float(t) {
        Value::Float(v as f64)
    } else {
        Value::Int(v)
    }
}

/// The reduction of `values` by `op` as NCCL documents it, exact.
fn reduce(t: c_int, op: c_int, values: &[Value]) -> Value {
    let n = values.len();
    if is_float(t) {
        let xs: Vec<f64> = values
            .iter()
            .map(|v| if let Value::Float(f) = v { *f } else { 0.0 })
            .collect();
        Value::Float(match op {
            0 => xs.iter().sum(),
            1 => xs.iter().product(),
            2 => xs.iter().cloned().fold(f64::MIN, f64::max),
            3 => xs.iter().cloned().fold(f64::MAX, f64::min),
            _ => xs.iter().sum::<f64>() / n as f64,
        })
    } else {
        let xs: Vec<i128> = values
            .iter()
            .map(|v| if let Value::Int(i) = v { *i } else { 0 })
            .collect();
        Value::Int(match op {
            0 => xs.iter().sum(),
            1 => xs.iter().product(),
            2 => *xs.iter().max().unwrap(),
            3 => *xs.iter().min().unwrap(),
            _ => xs.iter().sum::<i128>() / n as i128,
        })
    }
}

/// Which collective.
#[derive(Clone, Copy, Debug)]
enum Coll {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast(c_int),
}

impl Coll {
    fn reduces(self) -> bool {
        matches!(self, Coll::AllReduce | Coll::ReduceScatter)
    }
}

/// Runs `coll` of `count` elements of type `t` under `op` over the clique, inside a group, in
/// place or not; each rank's output as read back, and the expected one.
fn run(
    comms: &[*mut c_void],
    streams: &[*mut c_void],
    coll: Coll,
    t: c_int,
    op: c_int,
    count: usize,
    in_place: bool,
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let n = comms.len();
    let size = size_of(t);
    let (in_elems, out_elems) = match coll {
        Coll::AllGather => (count, n * count),
        Coll::ReduceScatter => (n * count, count),
        _ => (count, count),
    };
    let inputs: Vec<Vec<Value>> = (0..n)
        .map(|r| {
            (0..in_elems)
                .map(|i| value(t, r * 7919 + i * 31 + t as usize))
                .collect()
        })
        .collect();
    let expected: Vec<Vec<Value>> = (0..n)
        .map(|r| match coll {
            Coll::AllReduce => (0..count)
                .map(|i| reduce(t, op, &inputs.iter().map(|x| x[i]).collect::<Vec<_>>()))
                .collect(),
            Coll::AllGather => inputs.concat(),
            Coll::ReduceScatter => (0..count)
                .map(|i| {
                    reduce(
                        t,
                        op,
                        &inputs.iter().map(|x| x[r * count + i]).collect::<Vec<_>>(),
                    )
                })
                .collect(),
            Coll::Broadcast(root) => inputs[root as usize].clone(),
        })
        .collect();
    let bytes = |vs: &[Value]| vs.iter().flat_map(|v| encode(t, *v)).collect::<Vec<u8>>();
    let mut buffers = Vec::new();
    nccl_ok(ncclGroupStart());
    for r in 0..n {
        // In place as NCCL defines it: all-gather's input at the rank's block of the output,
        // reduce-scatter's output at the rank's block of the input, else the same buffer.
        let block = (r * count * size) as u64;
        let (send, recv) = if in_place {
            match coll {
                Coll::AllGather => {
                    let mut whole = vec![0u8; out_elems * size];
                    whole[r * count * size..][..in_elems * size]
                        .copy_from_slice(&bytes(&inputs[r]));
                    let base = upload(r, &whole, 0);
                    (base + block, base)
                }
                Coll::ReduceScatter => {
                    let base = upload(r, &bytes(&inputs[r]), 0);
                    (base, base + block)
                }
                _ => {
                    let base = upload(r, &bytes(&inputs[r]), 0);
                    (base, base)
                }
            }
        } else {
            (
                upload(r, &bytes(&inputs[r]), 0),
                upload(r, &vec![0xa5; out_elems * size], 0),
            )
        };
        buffers.push(recv);
        let (sp, rp) = (send as *const c_void, recv as *mut c_void);
        let code = match coll {
            Coll::AllReduce => ncclAllReduce(sp, rp, count, t, op, comms[r], streams[r]),
            Coll::AllGather => ncclAllGather(sp, rp, count, t, comms[r], streams[r]),
            Coll::ReduceScatter => ncclReduceScatter(sp, rp, count, t, op, comms[r], streams[r]),
            Coll::Broadcast(root) => ncclBroadcast(sp, rp, count, t, root, comms[r], streams[r]),
        };
        nccl_ok(code);
    }
    nccl_ok(ncclGroupEnd());
    let got = (0..n)
        .map(|r| {
            on(r);
            ok(cuStreamSynchronize(streams[r]));
            download(r, buffers[r], out_elems * size)
        })
        .collect();
    (got, expected.iter().map(|e| bytes(e)).collect())
}

#[test]
fn every_collective_type_and_operation_gives_the_reference_s_answer_on_2_and_8_gpus() {
    for n in [2, 8] {
        let (comms, streams) = clique(&hgx(8, 0.0, ""), n);
        for t in TYPES {
            for op in OPS {
                for coll in [Coll::AllReduce, Coll::ReduceScatter] {
                    let (got, want) = run(&comms, &streams, coll, t, op, 5, false);
                    assert_eq!(got, want, "{coll:?} type {t} op {op} on {n} GPUs");
                }
            }
            for coll in [Coll::AllGather, Coll::Broadcast(n as c_int - 1)] {
                let (got, want) = run(&comms, &streams, coll, t, SUM, 7, false);
                assert_eq!(got, want, "{coll:?} type {t} on {n} GPUs");
            }
        }
    }
}

/// Type `t`'s elements of `bytes`, as numbers.
fn decode(t: c_int, bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks(size_of(t))
        .map(|b| match t {
            6 => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
            7 => f64::from(f32::from_le_bytes(b.try_into().unwrap())),
            8 => f64::from_le_bytes(b.try_into().unwrap()),
            _ => half::bf16::from_le_bytes([b[0], b[1]]).to_f64(),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn in_place_gives_what_out_of_place_gives(
        n in 2usize..=8,
        count in 1usize..200,
        which in 0usize..4,
        t in TYPES,
        op in OPS,
    ) {
        let (comms, streams) = clique(&hgx(8, 0.0, ""), n);
        let colls = [Coll::AllReduce, Coll::AllGather, Coll::ReduceScatter, Coll::Broadcast(1)];
        let coll = colls[which];
        let (in_place, want) = run(&comms, &streams, coll, t, op, count, true);
        let (out_of_place, _) = run(&comms, &streams, coll, t, op, count, false);
        prop_assert_eq!(&in_place, &out_of_place);
        // NCCL's float average sums each input times 1/n rounded to the type, which is
        // exact only when n is a power of two.
        let rounded = coll.reduces() && is_float(t) && op == 4 && !n.is_power_of_two();
        if rounded {
            for (got, want) in in_place.iter().zip(&want) {
                for (g, w) in decode(t, got).into_iter().zip(decode(t, want)) {
                    prop_assert!((g - w).abs() <= 1e-2 * w.abs(), "{} against {}", g, w);
                }
            }
        } else {
            prop_assert_eq!(in_place, want);
        }
    }
}

#[test]
fn every_rank_s_part_waits_for_the_last_rank_s_stream() {
    let (comms, streams) = clique(&hgx(2, 0.0, ""), 2);
    let input = 3.0f32.to_le_bytes();
    let (a, b) = (upload(0, &input, 0), upload(1, &input, 0));
    // Rank 1's stream waits for a word the host writes later.
    on(1);
    let gate = driver_support::alloc(4);
    ok(cuMemsetD8_v2(gate, 0, 4));
    ok(cuStreamWaitValue32_v2(streams[1], gate, 1, 0));
    nccl_ok(ncclGroupStart());
    nccl_ok(ncclAllReduce(
        a as *const c_void,
        a as *mut c_void,
        1,
        FLOAT32,
        SUM,
        comms[0],
        streams[0],
    ));
    nccl_ok(ncclAllReduce(
        b as *const c_void,
        b as *mut c_void,
        1,
        FLOAT32,
        SUM,
        comms[1],
        streams[1],
    ));
    nccl_ok(ncclGroupEnd());
    on(0);
    assert_eq!(
        cuStreamQuery(streams[0]),
        600,
        "rank 0 waits for rank 1 (CUDA_ERROR_NOT_READY)"
    );
    assert_eq!(download(0, a, 4), input, "nothing written yet");
    ok(cuMemsetD8_v2(gate, 1, 1));
    ok(cuStreamSynchronize(streams[0]));
    assert_eq!(download(0, a, 4), 6.0f32.to_le_bytes());
}

/// Seconds per all-reduce of `bytes` (f32) over `n` ranks, as rank 0's events time `iterations`
/// of them after one to warm up.
fn timed_all_reduce(profile: &str, n: usize, bytes: usize, iterations: usize) -> f64 {
    let (comms, streams) = clique(profile, n);
    let buffers: Vec<u64> = (0..n).map(|r| upload(r, &vec![0u8; bytes], 0)).collect();
    let once = || {
        nccl_ok(ncclGroupStart());
        for r in 0..n {
            let p = buffers[r];
            nccl_ok(ncclAllReduce(
                p as *const c_void,
                p as *mut c_void,
                bytes / 4,
                FLOAT32,
                SUM,
                comms[r],
                streams[r],
            ));
        }
        nccl_ok(ncclGroupEnd());
    };
    once();
    on(0);
    let (start, stop) = (event(), event());
    ok(cuEventRecord(start, streams[0]));
    (0..iterations).for_each(|_| once());
    on(0);
    ok(cuEventRecord(stop, streams[0]));
    ok(cuEventSynchronize(stop));
    f64::from(driver_support::elapsed(start, stop)) * 1e-3 / iterations as f64
}

/// The model's time of an all-reduce of `bytes` over `n` ranks at `bus_gbs`.
fn model_seconds(n: usize, bytes: usize, bus_gbs: f64) -> f64 {
    LATENCY + 2.0 * (n as f64 - 1.0) / n as f64 * bytes as f64 / (bus_gbs * 1e9)
}

#[test]
fn the_bus_bandwidth_is_the_ring_s_slowest_link_within_the_noise() {
    let bytes = 4 << 20;
    let healthy = timed_all_reduce(&hgx(8, 0.01, ""), 8, bytes, 20);
    let expected = model_seconds(8, bytes, 450.0);
    assert!(
        (healthy / expected - 1.0).abs() < 0.04,
        "{healthy} s against {expected} s"
    );
    // nccl-tests' busbw from the time, latency included: 1.75 x 4 MiB / 24.3 µs = 302 GB/s.
    let (busbw, model_busbw) = (
        1.75 * bytes as f64 / healthy,
        1.75 * bytes as f64 / expected,
    );
    assert!((busbw / model_busbw - 1.0).abs() < 0.04, "{busbw} B/s");
    assert!((model_busbw / 1e9 - 302.0).abs() < 1.0, "{model_busbw}");
    // Exact without noise, and two ranks move 2 x 1/2 of the buffer.
    let two = timed_all_reduce(&hgx(2, 0.0, ""), 2, bytes, 3);
    assert!(
        (two / model_seconds(2, bytes, 450.0) - 1.0).abs() < 1e-4,
        "{two}"
    );
    let slow = timed_all_reduce(&hgx(8, 0.0, "slow_link = [[3, 6, 2.0]]"), 8, bytes, 3);
    assert!(
        (slow / model_seconds(8, bytes, 225.0) - 1.0).abs() < 1e-4,
        "{slow}"
    );
    let link_down = timed_all_reduce(&hgx(8, 0.0, "nvlink_down = [[5, 0], [5, 1]]"), 8, bytes, 3);
    assert!(
        (link_down / model_seconds(8, bytes, 400.0) - 1.0).abs() < 1e-4,
        "{link_down}"
    );
    let denied = timed_all_reduce(&hgx(8, 0.0, "peer_access_denied = [[0, 5]]"), 8, bytes, 3);
    assert!(
        (denied / model_seconds(8, bytes, 12.5) - 1.0).abs() < 1e-4,
        "{denied}"
    );
    assert!(
        denied > 20.0 * healthy,
        "SHM through the host is far slower"
    );
}

#[test]
fn the_other_collectives_move_nccl_tests_bus_bytes() {
    let (comms, streams) = clique(&hgx(4, 0.0, ""), 4);
    let count = 1 << 18;
    let buffers: Vec<u64> = (0..4)
        .map(|r| upload(r, &vec![0u8; 4 * count * 4], 0))
        .collect();
    let time = |coll: Coll| {
        on(0);
        let (start, stop) = (event(), event());
        ok(cuEventRecord(start, streams[0]));
        nccl_ok(ncclGroupStart());
        for r in 0..4 {
            let (s, p) = (buffers[r] as *const c_void, buffers[r] as *mut c_void);
            nccl_ok(match coll {
                Coll::AllGather => ncclAllGather(s, p, count, FLOAT32, comms[r], streams[r]),
                Coll::ReduceScatter => {
                    ncclReduceScatter(s, p, count, FLOAT32, SUM, comms[r], streams[r])
                }
                _ => ncclBroadcast(s, p, count, FLOAT32, 0, comms[r], streams[r]),
            });
        }
        nccl_ok(ncclGroupEnd());
        on(0);
        ok(cuEventRecord(stop, streams[0]));
        ok(cuEventSynchronize(stop));
        f64::from(driver_support::elapsed(start, stop)) * 1e-3
    };
    let close = |got: f64, bus_bytes: f64| {
        let want = LATENCY + bus_bytes / 450e9;
        assert!((got / want - 1.0).abs() < 1e-4, "{got} against {want}");
    };
    let total = (4 * count * 4) as f64;
    close(time(Coll::AllGather), 0.75 * total);
    close(time(Coll::ReduceScatter), 0.75 * total);
    close(time(Coll::Broadcast(0)), (count * 4) as f64);
}

/// Set in a child process to the case it runs.
const CHILD: &str = "SIMGPU_NCCL_CHILD";

/// Runs `body` in a fresh process (this test binary, filtered to `test`) with `profile` and
/// `env`; in the parent, the child's debug file's text ("" when it wrote none).
fn in_child(
    test: &str,
    case: &str,
    profile: &str,
    env: &[(&str, &str)],
    body: impl FnOnce(),
) -> Option<String> {
    let which = format!("{test}/{case}");
    if let Ok(running) = std::env::var(CHILD) {
        if running == which {
            body();
        }
        return None;
    }
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("simgpu-nccl-{}-{case}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("profile.toml"), profile).unwrap();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, &which)
        .env("STACKBENCH_SIM_PROFILE", dir.join("profile.toml"))
        .env("NCCL_DEBUG_FILE", dir.join("nccl.%h.%p.log"));
    for name in [
        "NCCL_DEBUG",
        "NCCL_DEBUG_SUBSYS",
        "NCCL_P2P_DISABLE",
        "NCCL_SHM_DISABLE",
        "NCCL_P2P_DIRECT_DISABLE",
    ] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    let child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let output =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && output.contains("1 passed"),
        "{which}:\n{output}"
    );
    let log = dir.join(format!("nccl.{}.{pid}.log", hostname()));
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    Some(text)
}

/// In a child: communicators over every device and one grouped all-reduce of 1 MiB.
fn init_and_all_reduce() {
    let n = 8;
    let mut comms = vec![null_mut(); n];
    // SAFETY: room for n communicators.
    nccl_ok(unsafe { ncclCommInitAll(comms.as_mut_ptr(), n as c_int, null()) });
    nccl_ok(ncclGroupStart());
    for (r, comm) in comms.iter().enumerate() {
        let p = upload(r, &vec![0u8; 1 << 20], 0);
        nccl_ok(ncclAllReduce(
            p as *const c_void,
            p as *mut c_void,
            1 << 18,
            FLOAT32,
            SUM,
            *comm,
            null_mut(),
        ));
    }
    nccl_ok(ncclGroupEnd());
    comms.into_iter().for_each(|c| nccl_ok(ncclCommDestroy(c)));
}

/// Asserts that every line has NCCL's prefix and returns the texts after it.
fn texts(log: &str) -> Vec<String> {
    let prefix = format!("{}:", hostname());
    log.lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            assert!(line.starts_with(&prefix), "{line}");
            let (_, text) = line
                .split_once(" NCCL INFO ")
                .unwrap_or_else(|| panic!("{line}"));
            let fields: Vec<&str> = line.split(' ').take(2).collect();
            assert_eq!(fields[0].split(':').count(), 3, "{line}");
            assert!(
                fields[1].starts_with('[') && fields[1].ends_with(']'),
                "{line}"
            );
            text.to_owned()
        })
        .collect()
}

const INFO: [(&str, &str); 2] = [
    ("NCCL_DEBUG", "INFO"),
    ("NCCL_DEBUG_SUBSYS", "INIT,GRAPH,TUNING"),
];

#[test]
fn nvlink_peers_connect_by_p2p_and_say_so() {
    let Some(log) = in_child(
        "nvlink_peers_connect_by_p2p_and_say_so",
        "nvlink",
        &hgx(8, 0.0, ""),
        &INFO,
        init_and_all_reduce,
    ) else {
        return;
    };
    let lines = texts(&log);
    let count = |needle: &str| lines.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(count("NCCL version 2.28.9+cuda13.0"), 1);
    assert_eq!(count(" - Init START"), 8);
    assert_eq!(count(" - Init COMPLETE"), 8);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("ncclCommInitAll comm 0x")
                && l.contains("rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 50000 commId 0x")),
        "{log}"
    );
    assert_eq!(count("Channel 00/02 : 0 1 2 3 4 5 6 7"), 1, "{log}");
    assert_eq!(count("Channel 01/02 : 0 1 2 3 4 5 6 7"), 1);
    assert_eq!(
        count(" via P2P/direct pointer"),
        16,
        "two channels per rank"
    );
    assert_eq!(
        count("Channel 01/0 : 7[7] -> 0[0] via P2P/direct pointer"),
        1
    );
    assert_eq!(count("Connected all rings"), 8);
    assert_eq!(
        count("Pattern 4, crossNic 0, nChannels 2, bw 225.000000/225.000000, type NVL/PIX"),
        8
    );
    assert_eq!(
        count("AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}"),
        1,
        "{log}"
    );
    assert_eq!(count("SHM") + count("NET/") + count("NCCL_P2P_DISABLE"), 0);
}

#[test]
fn a_denied_pair_connects_through_shared_memory() {
    let profile = hgx(8, 0.0, "peer_access_denied = [[1, 2]]");
    let Some(log) = in_child(
        "a_denied_pair_connects_through_shared_memory",
        "denied",
        &profile,
        &INFO,
        init_and_all_reduce,
    ) else {
        return;
    };
    let lines = texts(&log);
    let count = |needle: &str| lines.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(
        count("Channel 00 : 1[1] -> 2[2] via SHM/direct/direct"),
        1,
        "{log}"
    );
    assert_eq!(count("via SHM/direct/direct"), 2);
    assert_eq!(count("via P2P/direct pointer"), 14);
    assert_eq!(count("type SYS/PIX"), 8);
}

#[test]
fn p2p_disabled_by_the_environment_is_shared_memory_everywhere() {
    let env = [INFO[0], INFO[1], ("NCCL_P2P_DISABLE", "1")];
    let Some(log) = in_child(
        "p2p_disabled_by_the_environment_is_shared_memory_everywhere",
        "p2p",
        &hgx(8, 0.0, ""),
        &env,
        init_and_all_reduce,
    ) else {
        return;
    };
    let lines = texts(&log);
    let count = |needle: &str| lines.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(
        count("NCCL_P2P_DISABLE set by environment to 1"),
        1,
        "{log}"
    );
    assert_eq!(count("via SHM/direct/direct"), 16);
    assert_eq!(count("via P2P"), 0);
}

#[test]
fn without_p2p_and_shm_ranks_talk_over_sockets() {
    let env = [
        INFO[0],
        INFO[1],
        ("NCCL_P2P_DISABLE", "1"),
        ("NCCL_SHM_DISABLE", "1"),
    ];
    let Some(log) = in_child(
        "without_p2p_and_shm_ranks_talk_over_sockets",
        "net",
        &hgx(8, 0.0, ""),
        &env,
        init_and_all_reduce,
    ) else {
        return;
    };
    let lines = texts(&log);
    let count = |needle: &str| lines.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(
        count("Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0"),
        1,
        "{log}"
    );
    assert_eq!(
        count("Channel 00/0 : 0[0] -> 1[1] [receive] via NET/Socket/0"),
        1
    );
    assert_eq!(count("via NET/Socket/0"), 32);
    assert_eq!(
        count("NCCL_SHM_DISABLE"),
        0,
        "ENV is not among the subsystems asked for"
    );
}

#[test]
fn the_default_subsystems_leave_out_tuning_and_graph() {
    let test = "the_default_subsystems_leave_out_tuning_and_graph";
    let Some(log) = in_child(
        test,
        "default",
        &hgx(8, 0.0, ""),
        &[("NCCL_DEBUG", "info"), ("NCCL_SHM_DISABLE", "0")],
        init_and_all_reduce,
    ) else {
        return;
    };
    let lines = texts(&log);
    assert!(
        lines.iter().any(|l| l.contains("via P2P/direct pointer")),
        "{log}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l == "NCCL_SHM_DISABLE set by environment to 0."),
        "{log}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("Algo RING") || l.starts_with("Pattern")),
        "{log}"
    );
}

#[test]
fn without_nccl_debug_nothing_is_written() {
    let test = "without_nccl_debug_nothing_is_written";
    if let Some(log) = in_child(test, "silent", &hgx(8, 0.0, ""), &[], init_and_all_reduce) {
        assert_eq!(log, "");
    }
}

/// Runs `body` on a thread of its own; whether it returned within two seconds.
fn returns(body: impl FnOnce() + Send + 'static) -> bool {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        body();
        let _ = done.send(());
    });
    finished.recv_timeout(Duration::from_secs(2)).is_ok()
}

#[test]
fn one_thread_calling_one_rank_outside_a_group_waits_forever() {
    let hung = !returns(|| {
        let (comms, streams) = clique(&hgx(2, 0.0, ""), 2);
        let p = upload(0, &[0u8; 64], 0);
        let _ = ncclAllReduce(
            p as *const c_void,
            p as *mut c_void,
            16,
            FLOAT32,
            SUM,
            comms[0],
            streams[0],
        );
    });
    assert!(hung, "an ungrouped collective of one rank of two returned");
    // A communicator of one rank has nobody to wait for.
    assert!(returns(|| {
        let (comms, streams) = clique(&hgx(2, 0.0, ""), 1);
        let p = upload(0, &[0u8; 64], 0);
        nccl_ok(ncclAllReduce(
            p as *const c_void,
            p as *mut c_void,
            16,
            FLOAT32,
            SUM,
            comms[0],
            streams[0],
        ));
    }));
}

#[test]
fn the_hang_fault_enqueues_a_collective_that_never_completes() {
    let hung = !returns(|| {
        let (comms, streams) = clique(&hgx(2, 0.0, "nccl_hang = \"all_reduce\""), 2);
        let p: Vec<u64> = (0..2).map(|r| upload(r, &[0u8; 64], 0)).collect();
        nccl_ok(ncclGroupStart());
        for r in 0..2 {
            nccl_ok(ncclAllGather(
                p[r] as *const c_void,
                p[r] as *mut c_void,
                8,
                FLOAT32,
                comms[r],
                streams[r],
            ));
        }
        nccl_ok(ncclGroupEnd());
        on(0);
        ok(cuStreamSynchronize(streams[0]));
        nccl_ok(ncclGroupStart());
        for r in 0..2 {
            nccl_ok(ncclAllReduce(
                p[r] as *const c_void,
                p[r] as *mut c_void,
                16,
                FLOAT32,
                SUM,
                comms[r],
                streams[r],
            ));
        }
        nccl_ok(ncclGroupEnd());
        comms.into_iter().for_each(|c| nccl_ok(ncclCommAbort(c)));
        on(0);
        ok(cuStreamSynchronize(streams[0]));
    });
    assert!(hung, "a synchronisation after the hung all-reduce returned");
}

#[test]
fn wrong_results_perturb_the_named_collective_only() {
    let (comms, streams) = clique(&hgx(2, 0.0, "wrong_results = \"ncclAllReduce\""), 2);
    let (got, want) = run(&comms, &streams, Coll::AllReduce, FLOAT32, SUM, 9, false);
    assert_ne!(got, want);
    let differing = (got[0].chunks(4).zip(want[0].chunks(4)))
        .filter(|(g, w)| g != w)
        .count();
    assert_eq!(differing, 3, "first, middle and last");
    let (got, want) = run(&comms, &streams, Coll::AllGather, FLOAT32, SUM, 9, false);
    assert_eq!(got, want);
}

#[test]
fn ranks_that_disagree_are_an_invalid_argument() {
    let (comms, streams) = clique(&hgx(2, 0.0, ""), 2);
    let p: Vec<u64> = (0..2).map(|r| upload(r, &[0u8; 64], 0)).collect();
    for (counts, ops) in [([16, 8], [SUM, SUM]), ([16, 16], [SUM, MAX])] {
        nccl_ok(ncclGroupStart());
        for r in 0..2 {
            nccl_ok(ncclAllReduce(
                p[r] as *const c_void,
                p[r] as *mut c_void,
                counts[r],
                FLOAT32,
                ops[r],
                comms[r],
                streams[r],
            ));
        }
        assert_eq!(ncclGroupEnd(), INVALID_ARGUMENT);
        assert!(
            last_error().contains("the ranks disagree"),
            "{}",
            last_error()
        );
    }
    // A broadcast's root must agree too; then matched calls run again.
    nccl_ok(ncclGroupStart());
    for r in 0..2 {
        nccl_ok(ncclBroadcast(
            p[r] as *const c_void,
            p[r] as *mut c_void,
            16,
            FLOAT32,
            r as c_int,
            comms[r],
            streams[r],
        ));
    }
    assert_eq!(ncclGroupEnd(), INVALID_ARGUMENT);
    let (got, want) = run(&comms, &streams, Coll::AllReduce, FLOAT32, SUM, 4, false);
    assert_eq!(got, want);
}

#[test]
fn arguments_are_checked_as_nccl_checks_them() {
    let (comms, streams) = clique(&hgx(4, 0.0, ""), 2);
    let p = upload(0, &[0u8; 64], 0) as *mut c_void;
    let (c, s) = (comms[0], streams[0]);
    assert_eq!(ncclAllReduce(p, p, 4, 12, SUM, c, s), INVALID_ARGUMENT);
    assert!(last_error().contains("invalid type 12"), "{}", last_error());
    assert_eq!(ncclAllReduce(p, p, 4, 10, SUM, c, s), INVALID_ARGUMENT);
    assert!(
        last_error().contains("ncclFloat8e4m3 (10) is not simulated"),
        "{}",
        last_error()
    );
    assert_eq!(ncclAllReduce(p, p, 4, FLOAT32, 5, c, s), INVALID_ARGUMENT);
    assert_eq!(ncclBroadcast(p, p, 4, FLOAT32, 2, c, s), INVALID_ARGUMENT);
    assert!(last_error().contains("invalid root 2 (root should be in the 0..1 range)"));
    assert_eq!(
        ncclAllReduce(p, p, 4, FLOAT32, SUM, null_mut(), s),
        INVALID_ARGUMENT
    );
    assert_eq!(
        ncclAllReduce(p, p, 4, FLOAT32, SUM, 0x1234 as *mut c_void, s),
        INVALID_ARGUMENT
    );
    nccl_ok(ncclAllReduce(p, p, 0, FLOAT32, SUM, c, s));
    assert_eq!(ncclGroupEnd(), INVALID_USAGE);
    // An error inside a group fails its end, and nothing of it runs.
    nccl_ok(ncclGroupStart());
    nccl_ok(ncclAllReduce(p, p, 4, FLOAT32, SUM, c, s));
    assert_eq!(
        ncclAllReduce(p, p, 4, FLOAT32, -1, comms[1], streams[1]),
        INVALID_ARGUMENT
    );
    assert_eq!(ncclGroupEnd(), INVALID_ARGUMENT);
    // A stream of another device is a CUDA error at launch.
    nccl_ok(ncclGroupStart());
    nccl_ok(ncclAllReduce(p, p, 4, FLOAT32, SUM, c, streams[1]));
    nccl_ok(ncclAllReduce(p, p, 4, FLOAT32, SUM, comms[1], streams[0]));
    assert_eq!(ncclGroupEnd(), UNHANDLED_CUDA_ERROR);
}

#[test]
fn communicators_know_their_rank_device_and_size() {
    host(&hgx(4, 0.0, ""));
    let mut comms = [null_mut(); 2];
    let devlist = [3, 1];
    // SAFETY: room for two communicators; two devices listed.
    nccl_ok(unsafe { ncclCommInitAll(comms.as_mut_ptr(), 2, devlist.as_ptr()) });
    let query = |f: unsafe extern "C" fn(*mut c_void, *mut c_int) -> NcclResult, c| {
        let mut v = -1;
        // SAFETY: a valid out-pointer.
        nccl_ok(unsafe { f(c, &mut v) });
        v
    };
    assert_eq!(query(ncclCommCount, comms[1]), 2);
    assert_eq!(query(ncclCommCuDevice, comms[0]), 3);
    assert_eq!(query(ncclCommUserRank, comms[1]), 1);
    assert_eq!(query(ncclCommGetAsyncError, comms[0]), 0);
    let mut version = 0;
    // SAFETY: a valid out-pointer.
    nccl_ok(unsafe { ncclGetVersion(&mut version) });
    assert_eq!(version, 22809);
    comms.into_iter().for_each(|c| nccl_ok(ncclCommDestroy(c)));
    assert_eq!(ncclCommDestroy(comms[0]), INVALID_ARGUMENT);
    nccl_ok(ncclCommDestroy(null_mut()));
    let mut more = [null_mut(); 8];
    let init = |n: c_int, list: *const c_int, more: &mut [*mut c_void]| {
        // SAFETY: room for 8; lists of n devices.
        unsafe { ncclCommInitAll(more.as_mut_ptr(), n, list) }
    };
    assert_eq!(init(2, [0, 4].as_ptr(), &mut more), INVALID_ARGUMENT);
    assert!(last_error().contains("Invalid device 4 (totalnDev=4)"));
    assert_eq!(init(2, [1, 1].as_ptr(), &mut more), INVALID_USAGE);
    assert_eq!(init(5, null(), &mut more), UNHANDLED_CUDA_ERROR);
    assert_eq!(init(-1, null(), &mut more), INVALID_ARGUMENT);
    // SAFETY: NULL is refused before any write.
    assert_eq!(
        unsafe { ncclCommInitAll(null_mut(), 2, null()) },
        INVALID_ARGUMENT
    );
    // SAFETY: NCCL's static texts.
    let text = |code| {
        unsafe { CStr::from_ptr(ncclGetErrorString(code)) }
            .to_str()
            .unwrap()
    };
    assert_eq!(
        text(1),
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details)"
    );
    assert_eq!(text(99), "unknown result code");
}
