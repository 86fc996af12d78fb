//! `ncclCommInitRank`: one rank of a communicator across processes, on the calling thread's
//! current device (as NCCL's `cudaGetDevice`), joined with the other ranks through the root of
//! its unique id ([`super::link`]), with the INFO lines NCCL's initialisation writes: the
//! network the process chose at its first call ([`super::net`]), the ring's edges.

use super::comm::{bus_id, cuda_failure, init_line, rank_events, ring_lines, state, Clique, Comm};
use super::debug;
use super::wire::{BadId, Handle, Info, UniqueId};
use super::{
    group, guarded, link, net, topology, NcclResult, INTERNAL_ERROR, INVALID_ARGUMENT,
    INVALID_USAGE, REMOTE_ERROR,
};
use crate::driver;
use crate::driver::collective;
use crate::profile::Profile;
use std::ffi::{c_int, c_void};

/// The calling thread's current device, as `cudaGetDevice` gives it (0 without a current
/// context).
fn current_device() -> Result<usize, NcclResult> {
    let mut device: c_int = 0;
    // SAFETY: a valid out-pointer.
    match unsafe { driver::cuCtxGetDevice(&mut device) } {
        0 => Ok(device as usize),
        code if code == driver::errors::Code::INVALID_CONTEXT.0 => Ok(0),
        code => Err(cuda_failure(0, driver::errors::Code(code))),
    }
}

/// NCCL's `commId` of a unique id: a hash of its bytes, the same in every process.
fn comm_id(id: &UniqueId) -> u64 {
    (id.internal.iter()).fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b as u8)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// This rank's record: where it is, its network, and the transports and rates from its device
/// to each of its node's.
fn record(profile: &Profile, rank: usize, nranks: usize, device: usize, net: net::Net) -> Info {
    let peers = (0..profile.device.len())
        .map(|d| {
            let transport = topology::transport(profile, debug::env(), device, d);
            (transport, topology::rate_gbs(profile, transport, device, d))
        })
        .collect();
    let bus = u64::from_str_radix(&bus_id(device), 16).unwrap_or(0);
    Info {
        rank: rank as u32,
        nranks: nranks as u32,
        address: profile.node.address,
        pid: std::process::id(),
        device: device as u32,
        bus_id: bus,
        ib: net.ib,
        gdr: net.gdr,
        ib_gbs: net.ib_gbs,
        socket_gbs: net.socket_gbs,
        peers,
    }
}

/// `ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)`: rank
/// `rank` of `nranks` on the calling thread's current device, joined with the other ranks
/// (in this process or others) through the root of `commId`; blocks until all have checked
/// in. The process's network is chosen at its first call ([`net::chosen`]). Inside a group it
/// still blocks at the call (NCCL would defer it to the group's end), so the simulator refuses
/// it there rather than hang a thread that initialises several ranks.
///
/// # Safety
/// `comm` must be null or valid for one pointer write.
#[no_mangle]
pub unsafe extern "C" fn ncclCommInitRank(
    comm: *mut *mut c_void,
    nranks: c_int,
    comm_id: UniqueId,
    rank: c_int,
) -> NcclResult {
    guarded(|| {
        if comm.is_null() {
            let text = "CommInitRank : newcomm argument is NULL";
            debug::warn("misc/argcheck.cc:29", 0, text);
            return Err(INVALID_ARGUMENT);
        }
        if group::grouped() {
            let text = "ncclCommInitRank inside a group is not simulated (it would block at \
                        the call, not at ncclGroupEnd)";
            eprintln!("stackbench simulated NCCL: {text}");
            debug::warn("init.cc:1892", 0, text);
            return Err(INVALID_USAGE);
        }
        let (n, r) = match (usize::try_from(nranks), usize::try_from(rank)) {
            (Ok(n), Ok(r)) if n >= 1 && r < n => (n, r),
            _ => {
                let text = format!("Invalid rank requested : {rank}/{nranks}");
                debug::warn("init.cc:1780", 0, &text);
                return Err(INVALID_ARGUMENT);
            }
        };
        let handle = Handle::decode(&comm_id).map_err(|bad| bad_id(&bad))?;
        let profile = collective::profile().map_err(|code| cuda_failure(0, code))?;
        let device = current_device()?;
        net::bootstrap(profile.node.address, device);
        debug::announce(device);
        let net = net::chosen(&profile, device).map_err(|net::NoNet| INVALID_USAGE)?;
        let raw = state().next_handle();
        let id = self::comm_id(&comm_id);
        init_line("ncclCommInitRank", raw, r, n, device, id, "START");
        let link = link::join(handle, record(&profile, r, n, device, net), device)?;
        let dup = (link.table.iter()).find(|i| {
            i.rank as usize != r && i.address == profile.node.address && i.device as usize == device
        });
        if let Some(dup) = dup {
            link.close();
            let text = format!(
                "Duplicate GPU detected : rank {r} and rank {} both on CUDA device {}",
                dup.rank,
                bus_id(device)
            );
            debug::warn("init.cc:858", device, &text);
            return Err(INVALID_USAGE);
        }
        let Some(ring) = net::ring(&link.table) else {
            link.close();
            debug::warn("init.cc:1074", device, "NET/Socket : socket progress error");
            return Err(REMOTE_ERROR);
        };
        let (arrive, done) = rank_events(device).inspect_err(|_| link.close())?;
        let devices: Vec<usize> = link.table.iter().map(|i| i.device as usize).collect();
        ring_lines(&ring, &devices, r);
        init_line("ncclCommInitRank", raw, r, n, device, id, "COMPLETE");
        let mut state = state();
        state.last_clique += 1;
        let clique = state.last_clique;
        let entry = Clique {
            devices,
            ring,
            profile,
            live: 1,
            queues: Vec::new(),
            link: Some(link),
        };
        state.cliques.insert(clique, entry);
        let rank = Comm {
            clique,
            rank: r,
            device,
            arrive,
            done,
        };
        state.comms.insert(raw, rank);
        // SAFETY: valid for one pointer write by the caller's contract.
        unsafe { comm.write(raw as *mut c_void) };
        Ok(())
    })
}

/// NCCL's answer to a unique id that is none.
fn bad_id(bad: &BadId) -> NcclResult {
    let (text, code) = match bad {
        BadId::Family(family) => (
            format!(
                "ncclSocketInit: connecting to address  with family {family} is neither \
                 AF_INET(2) nor AF_INET6(10)"
            ),
            INTERNAL_ERROR,
        ),
        BadId::Address(address) => (
            format!(
                "the unique id names {address}, outside 127.0.0.0/8: the simulated NCCL \
                 connects to the loopback only"
            ),
            INVALID_ARGUMENT,
        ),
        BadId::Marker => (
            "the unique id is none that ncclGetUniqueId of the simulated NCCL made".into(),
            INVALID_ARGUMENT,
        ),
    };
    if !matches!(bad, BadId::Family(_)) {
        eprintln!("stackbench simulated NCCL: {text}");
    }
    debug::warn("misc/socket.cc:405", 0, &text);
    code
}
