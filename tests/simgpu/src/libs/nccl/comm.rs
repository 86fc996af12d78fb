//! Communicators: `ncclCommInitAll` (one clique of ranks over the node's devices, with the INFO
//! lines NCCL's initialisation writes; `ncclCommInitRank`, one rank of a communicator across
//! processes, is [`super::rank`]'s), their queries,
//! `ncclCommDestroy` (which waits for the communicator's collectives, as NCCL's does) and
//! `ncclCommAbort` (which does not). A communicator is an opaque pointer into a table, so an
//! unknown one is `ncclInvalidArgument`, never a dereference.

use super::debug::{self, GRAPH, INIT, NET, P2P, SHM};
use super::group::Queued;
use super::link::Link;
use super::topology::{self, Ring, Transport};
use super::{
    guarded, put, NcclResult, INVALID_ARGUMENT, INVALID_USAGE, REMOTE_ERROR, UNHANDLED_CUDA_ERROR,
};
use crate::driver::{self, collective};
use crate::profile::Profile;
use crate::state::pci;
use std::collections::{BTreeMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// NCCL's channels: the ring is used twice.
pub const CHANNELS: usize = 2;

/// One rank.
#[derive(Debug, Clone, Copy)]
pub struct Comm {
    pub clique: u64,
    pub rank: usize,
    pub device: usize,
    /// Private events: recorded when the rank's stream reaches a collective, and after it.
    pub arrive: u64,
    pub done: u64,
}

/// The ranks one `ncclCommInitAll` made, and their collectives waiting for every rank; or the
/// one rank of this process an `ncclCommInitRank` made, with its link to the others.
pub struct Clique {
    /// Rank `r`'s device (in whichever process).
    pub devices: Vec<usize>,
    pub ring: Ring,
    /// The host's profile when it was made (its faults).
    pub profile: Profile,
    /// Ranks of this process not yet destroyed.
    pub live: usize,
    /// Each rank's collectives, in call order, not yet matched by every rank (in process).
    pub queues: Vec<VecDeque<Queued>>,
    /// Across processes: the rank's link to the root, which matches its collectives.
    pub link: Option<Arc<Link>>,
}

/// Every communicator and clique, and the outcomes of collectives matched (by ticket).
pub struct State {
    pub comms: BTreeMap<usize, Comm>,
    pub cliques: BTreeMap<u64, Clique>,
    pub outcomes: BTreeMap<u64, Result<(), NcclResult>>,
    pub last_ticket: u64,
    last_comm: usize,
    pub(super) last_clique: u64,
}

static STATE: Mutex<State> = Mutex::new(State {
    comms: BTreeMap::new(),
    cliques: BTreeMap::new(),
    outcomes: BTreeMap::new(),
    last_ticket: 0,
    last_comm: 0x55cc_c000_0000,
    last_clique: 0,
});

/// Signalled whenever collectives are matched.
pub static MATCHED: Condvar = Condvar::new();

/// The table, locked.
pub fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

impl State {
    /// A new communicator's handle.
    pub(super) fn next_handle(&mut self) -> usize {
        self.last_comm += 0x1_0000;
        self.last_comm
    }

    /// The communicator `raw`, or `ncclInvalidArgument` as NCCL's `CommCheck` answers for
    /// `call`.
    pub fn comm(&self, raw: *mut c_void, call: &str) -> Result<Comm, NcclResult> {
        if raw.is_null() {
            debug::warn(
                "misc/argcheck.cc:29",
                0,
                &format!("{call} : comm argument is NULL"),
            );
            return Err(INVALID_ARGUMENT);
        }
        self.comms.get(&(raw as usize)).copied().ok_or_else(|| {
            debug::warn(
                "misc/argcheck.cc:37",
                0,
                "Error: corrupted comm object detected",
            );
            INVALID_ARGUMENT
        })
    }
}

/// NCCL's `busId` of device `d` as `%lx` prints it: the PCI address's hex digits (`17000`).
pub(super) fn bus_id(d: usize) -> String {
    let digits: String = (pci(d).bus_id().chars())
        .filter(char::is_ascii_hexdigit)
        .collect();
    format!("{:x}", u64::from_str_radix(&digits, 16).unwrap_or(0))
}

/// A WARN for a CUDA call that failed with `code`, and NCCL's answer to it.
pub(super) fn cuda_failure(device: usize, code: driver::errors::Code) -> NcclResult {
    debug::warn("init.cc:2077", device, &format!("Cuda failure {}", code.0));
    UNHANDLED_CUDA_ERROR
}

/// The INFO lines of rank `rank`'s ring on `devices`: the graph, its channels, the transport
/// of each edge it sends or receives on (NET's both ways, others' by the sender), and whether
/// its edges between nodes use GPUDirect RDMA.
pub(super) fn ring_lines(ring: &Ring, devices: &[usize], rank: usize) {
    let (n, d) = (devices.len(), devices[rank]);
    let Some(slowest) = ring.slowest() else {
        return;
    };
    let bw = ring.bus_gbs / CHANNELS as f64;
    let graph = format!(
        "Pattern 4, crossNic 0, nChannels {CHANNELS}, bw {bw:.6}/{bw:.6}, type {}/PIX, \
         sameChannels 1",
        slowest.path_type()
    );
    debug::info(GRAPH, d, &graph);
    let gpus: String = (ring.order.iter())
        .map(|&r| format!(" GPU/0-{}", bus_id(devices[r])))
        .collect();
    let width = (n - 1).to_string().len();
    for c in 0..CHANNELS {
        debug::info(GRAPH, d, &format!("{c:2} :{gpus}"));
        if rank == 0 {
            let ranks: String = ring.order.iter().map(|r| format!(" {r:width$}")).collect();
            debug::info(INIT, d, &format!("Channel {c:02}/{CHANNELS:02} :{ranks}"));
        }
    }
    let at = ring.order.iter().position(|&r| r == rank).unwrap_or(0);
    let (next, prev) = (ring.order[(at + 1) % n], ring.order[(at + n - 1) % n]);
    let edge =
        |from: usize, to: usize| format!("{from}[{}] -> {to}[{}]", devices[from], devices[to]);
    for c in 0..CHANNELS {
        match ring.edges[at] {
            Transport::P2p { .. } => {
                let line = format!(
                    "Channel {c:02}/0 : {} via {}",
                    edge(rank, next),
                    ring.edges[at].label()
                );
                debug::info(INIT | P2P, d, &line);
            }
            Transport::Shm => {
                let line = format!(
                    "Channel {c:02} : {} via {}",
                    edge(rank, next),
                    Transport::Shm.label()
                );
                debug::info(INIT | SHM, d, &line);
            }
            Transport::Net | Transport::Nic { .. } => {
                let line = format!(
                    "Channel {c:02}/0 : {} [send] via {}",
                    edge(rank, next),
                    ring.edges[at].label()
                );
                debug::info(INIT | NET, d, &line);
            }
        }
        let into = ring.edges[(at + n - 1) % n];
        if matches!(into, Transport::Net | Transport::Nic { .. }) {
            let line = format!(
                "Channel {c:02}/0 : {} [receive] via {}",
                edge(prev, rank),
                into.label()
            );
            debug::info(INIT | NET, d, &line);
        }
    }
    let gdr = !(ring.edges.iter()).any(|e| matches!(e, Transport::Nic { gdr: false, .. }));
    let line = format!("Connected all rings, use ring PXN 0 GDR {}", u8::from(gdr));
    debug::info(INIT, d, &line);
}

/// The devices `ncclCommInitAll` is given, checked as NCCL checks them.
///
/// # Safety
/// `devlist` must be null or valid for `ndev` ints.
unsafe fn devices(
    ndev: c_int,
    devlist: *const c_int,
    count: usize,
) -> Result<Vec<usize>, NcclResult> {
    let ndev = usize::try_from(ndev).map_err(|_| {
        debug::warn(
            "init.cc:2079",
            0,
            &format!("Invalid device count requested : {ndev}"),
        );
        INVALID_ARGUMENT
    })?;
    if devlist.is_null() {
        if ndev > count {
            // NCCL's cudaSetDevice(ndev ordinals) fails: cudaErrorInvalidDevice.
            debug::warn(
                "init.cc:2109",
                0,
                "Cuda failure 101 'invalid device ordinal'",
            );
            return Err(UNHANDLED_CUDA_ERROR);
        }
        return Ok((0..ndev).collect());
    }
    // SAFETY: valid for ndev ints by the caller's contract.
    let list = unsafe { std::slice::from_raw_parts(devlist, ndev) };
    let mut chosen = Vec::with_capacity(ndev);
    for &dev in list {
        let d = usize::try_from(dev)
            .ok()
            .filter(|d| *d < count)
            .ok_or_else(|| {
                debug::warn(
                    "init.cc:2089",
                    0,
                    &format!("Invalid device {dev} (totalnDev={count})"),
                );
                INVALID_ARGUMENT
            })?;
        if chosen.contains(&d) {
            return Err(INVALID_USAGE);
        }
        chosen.push(d);
    }
    Ok(chosen)
}

/// `ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)`: one communicator per
/// device (`devlist` NULL: devices `0 .. ndev`), rank `i` on the `i`-th; each device's primary
/// context retained for good, as NCCL's runtime does.
///
/// # Safety
/// `comms` must be null or valid for `ndev` pointer writes, `devlist` null or valid for `ndev`
/// ints.
#[no_mangle]
pub unsafe extern "C" fn ncclCommInitAll(
    comms: *mut *mut c_void,
    ndev: c_int,
    devlist: *const c_int,
) -> NcclResult {
    guarded(|| {
        if comms.is_null() {
            debug::warn(
                "misc/argcheck.cc:29",
                0,
                "CommInitAll : comms argument is NULL",
            );
            return Err(INVALID_ARGUMENT);
        }
        let profile = collective::profile().map_err(|code| cuda_failure(0, code))?;
        // SAFETY: the caller's contract.
        let devices = unsafe { devices(ndev, devlist, profile.device.len()) }?;
        let Some(&first) = devices.first() else {
            return Ok(());
        };
        debug::announce(first);
        let events = (devices.iter())
            .map(|&d| rank_events(d))
            .collect::<Result<Vec<_>, _>>()?;
        let ring = topology::ring(&profile, debug::env(), &devices);
        let mut state = state();
        state.last_clique += 1;
        let clique = state.last_clique;
        let comm_id = crate::clock::splitmix64(&mut (clique ^ u64::from(std::process::id())));
        let handles: Vec<usize> = (0..devices.len())
            .map(|rank| {
                let handle = state.next_handle();
                let (arrive, done) = events[rank];
                let comm = Comm {
                    clique,
                    rank,
                    device: devices[rank],
                    arrive,
                    done,
                };
                state.comms.insert(handle, comm);
                handle
            })
            .collect();
        let n = devices.len();
        let line = |rank: usize, stage: &str| {
            let (handle, d) = (handles[rank], devices[rank]);
            init_line("ncclCommInitAll", handle, rank, n, d, comm_id, stage);
        };
        (0..n).for_each(|rank| line(rank, "START"));
        (0..n).for_each(|rank| ring_lines(&ring, &devices, rank));
        (0..n).for_each(|rank| line(rank, "COMPLETE"));
        let queues = vec![VecDeque::new(); n];
        let entry = Clique {
            devices,
            ring,
            profile,
            live: n,
            queues,
            link: None,
        };
        state.cliques.insert(clique, entry);
        for (i, handle) in handles.into_iter().enumerate() {
            // SAFETY: valid for ndev pointer writes by the caller's contract.
            unsafe { comms.add(i).write(handle as *mut c_void) };
        }
        Ok(())
    })
}

/// Device `d`'s primary context retained for good (as NCCL's runtime retains it), and a rank's
/// private events on it.
pub(super) fn rank_events(d: usize) -> Result<(u64, u64), NcclResult> {
    let mut context = std::ptr::null_mut();
    // SAFETY: a valid out-pointer. Never released, as the runtime's.
    let retained = unsafe { driver::cuDevicePrimaryCtxRetain(&mut context, d as c_int) };
    if retained != 0 {
        return Err(cuda_failure(d, driver::errors::Code(retained)));
    }
    let event = || collective::event(d).map_err(|code| cuda_failure(d, code));
    Ok((event()?, event()?))
}

/// NCCL's line as `call` starts or completes (`stage`) rank `rank` of `n` on device `d`.
pub(super) fn init_line(
    call: &str,
    handle: usize,
    rank: usize,
    n: usize,
    d: usize,
    id: u64,
    stage: &str,
) {
    let text = format!(
        "{call} comm {handle:#x} rank {rank} nranks {n} cudaDev {d} nvmlDev {d} busId {} \
         commId {id:#x} - Init {stage}",
        bus_id(d)
    );
    debug::info(INIT, d, &text);
}

/// Removes the communicator `raw` and its events; the last of a clique removes the clique.
fn remove(raw: *mut c_void, call: &str, wait: bool) -> Result<(), NcclResult> {
    if raw.is_null() {
        return Ok(());
    }
    let comm = state().comm(raw, call)?;
    if wait {
        collective::synchronize(comm.done).map_err(|code| cuda_failure(comm.device, code))?;
    }
    let mut state = state();
    if state.comms.remove(&(raw as usize)).is_none() {
        return Err(INVALID_ARGUMENT);
    }
    collective::forget(comm.arrive);
    collective::forget(comm.done);
    let gone = state.cliques.get_mut(&comm.clique).is_some_and(|c| {
        c.live -= 1;
        c.live == 0
    });
    if gone {
        let link = state.cliques.remove(&comm.clique).and_then(|c| c.link);
        link.inspect(|link| link.close());
    }
    Ok(())
}

/// `ncclCommDestroy(comm)`: waits for the communicator's collectives to complete (forever for
/// one that never does), then frees it; NULL is a no-op.
#[no_mangle]
pub extern "C" fn ncclCommDestroy(comm: *mut c_void) -> NcclResult {
    guarded(|| remove(comm, "ncclCommDestroy", true))
}

/// `ncclCommAbort(comm)`: frees the communicator at once; NULL is a no-op.
#[no_mangle]
pub extern "C" fn ncclCommAbort(comm: *mut c_void) -> NcclResult {
    guarded(|| remove(comm, "ncclCommAbort", false))
}

/// Answers a query of communicator `raw` through `out`.
///
/// # Safety
/// `out` must be null or valid for one write of `T`.
unsafe fn query<T>(
    raw: *mut c_void,
    out: *mut T,
    call: &str,
    name: &str,
    f: impl FnOnce(&State, Comm) -> T,
) -> NcclResult {
    guarded(|| {
        let state = state();
        let comm = state.comm(raw, call)?;
        let value = f(&state, comm);
        // SAFETY: the caller's contract.
        unsafe { put(out, value, call, name) }
    })
}

/// `ncclCommCount(comm, int *count)`: its ranks.
///
/// # Safety
/// `count` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn ncclCommCount(comm: *mut c_void, count: *mut c_int) -> NcclResult {
    // SAFETY: the caller's contract.
    unsafe {
        query(comm, count, "CommCount", "count", |state, c| {
            state
                .cliques
                .get(&c.clique)
                .map_or(0, |k| k.devices.len() as c_int)
        })
    }
}

/// `ncclCommCuDevice(comm, int *device)`: its CUDA device.
///
/// # Safety
/// `device` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn ncclCommCuDevice(comm: *mut c_void, device: *mut c_int) -> NcclResult {
    // SAFETY: the caller's contract.
    unsafe {
        query(comm, device, "CommCuDevice", "devid", |_, c| {
            c.device as c_int
        })
    }
}

/// `ncclCommUserRank(comm, int *rank)`: its rank.
///
/// # Safety
/// `rank` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn ncclCommUserRank(comm: *mut c_void, rank: *mut c_int) -> NcclResult {
    // SAFETY: the caller's contract.
    unsafe { query(comm, rank, "CommUserRank", "rank", |_, c| c.rank as c_int) }
}

/// `ncclCommGetAsyncError(comm, ncclResult_t *asyncError)`: `ncclRemoteError` for a
/// communicator across processes that has failed ([`super::link`]), else `ncclSuccess` (the
/// simulator's other errors surface from the calls, and a hung collective is no error, as in
/// NCCL).
///
/// # Safety
/// `async_error` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn ncclCommGetAsyncError(
    comm: *mut c_void,
    async_error: *mut NcclResult,
) -> NcclResult {
    // SAFETY: the caller's contract.
    unsafe {
        query(
            comm,
            async_error,
            "ncclGetAsyncError",
            "asyncError",
            |state, c| {
                let link = state.cliques.get(&c.clique).and_then(|k| k.link.as_ref());
                if link.is_some_and(|link| link.failed()) {
                    REMOTE_ERROR
                } else {
                    super::SUCCESS
                }
            },
        )
    }
}
