//! The simulated NCCL 2.28.9 (`libnccl.so.2`, `NCCL_VERSION_CODE` 22809): communicators over
//! the simulated node's GPUs in one process (`ncclCommInitAll`) or across processes and
//! simulated nodes (`ncclGetUniqueId`, `ncclCommInitRank`), groups, and the collectives
//! all-reduce, all-gather, reduce-scatter and broadcast, computed on the host by the
//! simulator's own reference ([`reference`]) and put on each rank's stream as NCCL's kernels
//! are ([`crate::driver::collective`]), with the INFO and WARN lines NCCL writes ([`debug`]).
//!
//! As with real NCCL, one thread driving several communicators must group its calls: a
//! collective of a communicator of several ranks happens once every rank of its clique (the
//! communicators one `ncclCommInitAll` made) has called it, from any thread; the call (or the
//! `ncclGroupEnd` holding it) blocks until then, so one thread calling it for one rank outside
//! a group waits forever, as NCCL does ([`group`]).
//!
//! # Across processes
//!
//! `ncclGetUniqueId` starts a root in the calling process ([`root`]), listening on its
//! profile's `[node] address` (in 127.0.0.0/8: every socket stays on the loopback, [`wire`]);
//! the id carries its address. `ncclCommInitRank` makes rank `rank` of `nranks` on the calling
//! thread's current device: it connects to the root, checks in with its record (node address,
//! device, bus id, network, rates) and blocks until every rank has, within 120 s ([`link`]).
//! Processes whose profiles give the same address are one simulated node. The root then
//! serves the communicator's collectives as a star: it tells every rank once all have called
//! one (and whether alike), takes each rank's input when the rank's stream reaches the
//! collective, computes every rank's output with the reference and sends each its own; the
//! rank's part completes when its output has come. A rank that leaves or sends garbage, or a
//! collective not called by every rank within 120 s, fails the communicator: every collective
//! under way ends with its output unwritten, and every call from then on, and
//! `ncclCommGetAsyncError`, answer `ncclRemoteError`, with NCCL's WARN
//! (`socketProgress: Connection closed by remote peer 127.0.0.1<40123>`).
//!
//! # Time
//!
//! Every rank's part of a collective starts when the last rank's stream reaches it (across
//! processes, whose timelines are their own: when its own stream reaches it), and lasts
//!
//! ```text
//! slowdown x (LATENCY + edge_bytes / (bus_gbs x 1e9)) x (1 + noise x z)
//! ```
//!
//! with `LATENCY` = 8 µs, `slowdown` and `noise` the rank's device's (`z` a standard normal drawn
//! per rank and call; no ramp, no throttling, no `run_sigma`/`boot_sigma`: links do not move
//! with the SM clock), and `edge_bytes` what each edge of the ring carries, counted from the
//! ring algorithm's steps for `n` ranks and `count` elements per call ([`model::edge_bytes`]):
//!
//! - all-reduce: `2 (n - 1)` steps of `count x type size / n` (a reduce-scatter, then an
//!   all-gather, around the ring);
//! - all-gather and reduce-scatter: `n - 1` steps of `count x type size`, one rank's part each;
//! - broadcast: `count x type size`, pipelined down the chain from the root;
//! - one rank: nothing crosses a link.
//!
//! The harness turns times into bus bandwidth with nccl-tests' factors instead (its own
//! reading of `doc/PERFORMANCE.md`); the two meet only where both are right.
//!
//! `bus_gbs` is the rate of the ring's slowest edge. In one process the ring holds the
//! communicator's slowest pair ([`topology::ring`]); across processes it is in rank order (each
//! node's ranks in a row) and every rank computes the same one ([`net::ring`]). An edge from
//! device `a` to `b` of one node goes by the transport NCCL picks ([`topology::transport`]):
//!
//! - P2P when the driver allows peer access (`cuDeviceCanAccessPeer`: not a pair of
//!   `faults.peer_access_denied`, a ready fabric on an `nvswitch` node) and `NCCL_P2P_DISABLE`
//!   is not 1: over NVLink on an `nvswitch` node at `min(links up on a, on b) x nvlink_gbs`,
//!   else over PCIe at `pcie_gbs` (by a direct pointer within a process, through CUMEM
//!   between processes);
//! - else SHM, through host memory, at `pcie_gbs / 2`, unless `NCCL_SHM_DISABLE` is 1;
//! - else NET (sockets) at `pcie_gbs / 4`;
//!
//! each divided by the pair's `slow_link` factor and the larger `slow_device` factor of the two.
//! So an 8-GPU H100-like `nvswitch` node's all-reduce of `S` bytes takes
//! `8 µs + 2 x 7/8 x S / 450e9 s`, a bus bandwidth of `1.75 S / t`.
//!
//! An edge between nodes goes by the network each end's process chose ([`net`]): InfiniBand
//! (`NET/IB/0`, `/GDRDMA` with GPUDirect RDMA on both ends) when both ends use it, at the
//! smaller of their `hcas x hca_gbps / 8` GB/s, halved unless both have GPUDirect RDMA; else
//! sockets (`NET/Socket/0`) at the smaller of their `socket_gbs`. So two H100-like nodes on one
//! NDR HCA each run the ring at 50 GB/s, at 25 without GPUDirect RDMA, at 3.125 over 25 GbE.
//!
//! The algorithm is always RING on two channels, protocol LL up to 64 KiB (`count x type size`)
//! and SIMPLE above; the protocol does not change the time.
//!
//! # Faults
//!
//! `faults.nccl_hang` (`all_reduce`, `all_gather`, `reduce_scatter`, `broadcast`): that
//! collective is enqueued and never completes on any rank, as a kernel waiting for a peer that
//! never comes (across processes: on the ranks of the faulty node, which send nothing, so the
//! others' fail once the root gives up on them); `faults.wrong_results` naming the call
//! (`ncclAllReduce`, ...): every rank's output (across processes: every output of the node's
//! ranks) has the second-highest bit of its first, middle and last elements flipped;
//! `faults.corrupt_copy = [[src, dst]]` with both in a communicator of one process: the output
//! of the rank on `dst` arrives with bits flipped as a corrupted copy's
//! ([`crate::node::flip_bits`]), unless it is a broadcast's root; `faults.corrupt_receive`:
//! every output the node's ranks receive from other processes arrives so, a broadcast's root's
//! excepted.

pub mod collective;
pub mod comm;
pub mod debug;
pub mod group;
pub mod link;
pub mod model;
pub mod net;
pub mod rank;
pub mod reference;
pub mod root;
pub mod topology;
pub mod types;
pub mod wire;

use std::ffi::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// `ncclResult_t`.
pub type NcclResult = c_int;

/// The `ncclResult_t` codes.
pub const SUCCESS: NcclResult = 0;
pub const UNHANDLED_CUDA_ERROR: NcclResult = 1;
pub const SYSTEM_ERROR: NcclResult = 2;
pub const INTERNAL_ERROR: NcclResult = 3;
pub const INVALID_ARGUMENT: NcclResult = 4;
pub const INVALID_USAGE: NcclResult = 5;
pub const REMOTE_ERROR: NcclResult = 6;
pub const IN_PROGRESS: NcclResult = 7;

/// `NCCL_VERSION(2, 28, 9)`.
pub const VERSION_CODE: c_int = 22809;
/// What NCCL's version line says after "NCCL version ".
pub const VERSION_STRING: &str = "2.28.9+cuda13.0";

/// Runs one exported function: its result, `ncclInternalError` if it panicked.
fn guarded(body: impl FnOnce() -> Result<(), NcclResult>) -> NcclResult {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => SUCCESS,
        Ok(Err(code)) => code,
        Err(_) => INTERNAL_ERROR,
    }
}

/// Writes `value` through `out`, or fails as NCCL's `PtrCheck` does for `name` of `call`.
///
/// # Safety
/// `out` must be null or valid for one write of `T`.
unsafe fn put<T>(out: *mut T, value: T, call: &str, name: &str) -> Result<(), NcclResult> {
    if out.is_null() {
        debug::warn(
            "misc/argcheck.cc:29",
            0,
            &format!("{call} : {name} argument is NULL"),
        );
        return Err(INVALID_ARGUMENT);
    }
    // SAFETY: not null, valid for one write by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// `ncclGetVersion(int *version)`: 22809.
///
/// # Safety
/// `version` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn ncclGetVersion(version: *mut c_int) -> NcclResult {
    // SAFETY: the caller's contract.
    guarded(|| unsafe { put(version, VERSION_CODE, "ncclGetVersion", "version") })
}

/// `ncclGetErrorString(ncclResult_t)`: NCCL's texts.
#[no_mangle]
pub extern "C" fn ncclGetErrorString(code: NcclResult) -> *const c_char {
    let text: &'static std::ffi::CStr = match code {
        SUCCESS => c"no error",
        UNHANDLED_CUDA_ERROR => c"unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
        SYSTEM_ERROR => c"unhandled system error (run with NCCL_DEBUG=INFO for details)",
        INTERNAL_ERROR => c"internal error - please report this issue to the NCCL developers",
        INVALID_ARGUMENT => c"invalid argument (run with NCCL_DEBUG=WARN for details)",
        INVALID_USAGE => c"invalid usage (run with NCCL_DEBUG=WARN for details)",
        REMOTE_ERROR => c"remote process exited or there was a network error",
        IN_PROGRESS => c"NCCL operation in progress",
        _ => c"unknown result code",
    };
    text.as_ptr()
}

/// `ncclGetLastError(comm)` (the communicator is unused, as in NCCL): the last WARN's text,
/// empty before any.
#[no_mangle]
pub extern "C" fn ncclGetLastError(_comm: *mut std::ffi::c_void) -> *const c_char {
    debug::last_error()
}
