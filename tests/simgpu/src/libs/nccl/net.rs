//! The network a process uses between nodes, and the ring of a communicator across processes.
//!
//! NCCL initialises its network once per process, at its first communicator, and so does the
//! simulator, at the first `ncclCommInitRank` ([`chosen`]), from the profile of that call:
//!
//! - InfiniBand when the node has HCAs (`[network] hcas` ≥ 1) and `libibverbs.so` or
//!   `libibverbs.so.1` loads: a real `dlopen(RTLD_NOW)` through the process's search path
//!   (`LD_LIBRARY_PATH` included), whose handle is kept, as NCCL keeps it. The HCAs are
//!   `mlx5_0`, `mlx5_1`, ..., together `hcas x hca_gbps / 8` GB/s; GPUDirect RDMA as
//!   `[network] gdr` says;
//! - else sockets, over `lo` at the node's address, at `socket_gbs`;
//!
//! unless `NCCL_NET` says which, as NCCL's does: `Socket` keeps the process off InfiniBand;
//! `IB` where InfiniBand does not start, or a name NCCL has no network for, is a WARN ("Failed
//! to initialize any NET plugin") and `ncclInvalidUsage` from every `ncclCommInitRank` of the
//! process, with no fallback.
//!
//! An edge of the ring between two nodes ([`between`]) goes over InfiniBand when both ends use
//! it, at the smaller of their rates, halved unless both have GPUDirect RDMA; else over sockets,
//! at the smaller of their socket rates. An edge within a node has the transport and rate the
//! sending rank's profile gives it ([`super::topology`]), by P2P through CUMEM rather than a
//! direct pointer between ranks of different processes.

use super::debug::{self, BOOTSTRAP, INIT, NET};
use super::topology::{Ring, Transport};
use super::wire::{socket_name, Info};
use crate::profile::Profile;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Once, OnceLock};

/// A process's network between nodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Net {
    /// InfiniBand, else sockets.
    pub ib: bool,
    /// GPUDirect RDMA works (meaningful with `ib`).
    pub gdr: bool,
    /// The HCAs' rate together, GB/s (0 without `ib`).
    pub ib_gbs: f64,
    /// The sockets' rate, GB/s.
    pub socket_gbs: f64,
}

/// NCCL's bootstrap interface, as its INFO line names it: `lo:127.0.0.2<0>`.
fn interface(address: Ipv4Addr) -> String {
    format!("lo:{}", socket_name(SocketAddr::from((address, 0))))
}

/// Writes the line of NCCL's bootstrap network, once per process (at `ncclGetUniqueId` or the
/// first `ncclCommInitRank`).
pub fn bootstrap(address: Ipv4Addr, device: usize) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let line = format!("Bootstrap: Using {}", interface(address));
        debug::info(BOOTSTRAP, device, &line);
    });
}

/// The process's network: chosen, with NCCL's INFO lines, at the first call.
pub fn chosen(profile: &Profile, device: usize) -> Result<Net, NoNet> {
    static CHOSEN: OnceLock<Result<Net, NoNet>> = OnceLock::new();
    *CHOSEN.get_or_init(|| choose(profile, device, debug::env().net.as_deref()))
}

/// `NCCL_NET` named a network this process cannot use: NCCL initialises no other, and every
/// communicator fails with `ncclInvalidUsage`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoNet;

/// Whether `libibverbs.so` or `libibverbs.so.1` loads, as NCCL tries them.
fn verbs_load() -> bool {
    [c"libibverbs.so", c"libibverbs.so.1"].iter().any(|name| {
        // SAFETY: a NUL-terminated name. The handle is never closed: NCCL keeps its own for
        // the life of the process.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW) };
        !handle.is_null()
    })
}

/// The network of this process: InfiniBand where it works and `forced` (`NCCL_NET`, any case)
/// does not say `Socket`, else sockets; [`NoNet`] when `forced` names one that does not work
/// (or none NCCL has), after NCCL's WARN.
fn choose(profile: &Profile, device: usize, forced: Option<&str>) -> Result<Net, NoNet> {
    let network = &profile.network;
    let line = |text: &str| debug::info(INIT | NET, device, text);
    let is = |name: &str| forced.is_some_and(|f| f.eq_ignore_ascii_case(name));
    let ib = if is("Socket") {
        false
    } else if network.hcas == 0 {
        line("NET/IB : No device found.");
        false
    } else if !verbs_load() {
        line("Failed to open libibverbs.so[.1]");
        false
    } else {
        true
    };
    if forced.is_some() && !(is("Socket") || is("IB") && ib) {
        debug::warn("net.cc:626", device, "Failed to initialize any NET plugin");
        return Err(NoNet);
    }
    let oob = interface(profile.node.address);
    if ib {
        let hcas: String = (0..network.hcas)
            .map(|i| format!(" [{i}]mlx5_{i}:1/IB"))
            .collect();
        line(&format!("NET/IB : Using{hcas} ; OOB {oob}"));
        line("Using network IB");
        let gdr = if network.gdr { "Enabled" } else { "Disabled" };
        for i in 0..network.hcas {
            line(&format!(
                "NET/IB : GPU Direct RDMA {gdr} for HCA {i} 'mlx5_{i}'"
            ));
        }
    } else {
        line(&format!("NET/Socket : Using [0]{oob}"));
        line("Using network Socket");
    }
    Ok(Net {
        ib,
        gdr: ib && network.gdr,
        ib_gbs: if ib {
            f64::from(network.hcas) * network.hca_gbps / 8.0
        } else {
            0.0
        },
        socket_gbs: network.socket_gbs,
    })
}

/// The transport and rate, GB/s, between ranks `a` and `b` of different nodes.
pub fn between(a: &Info, b: &Info) -> (Transport, f64) {
    if a.ib && b.ib {
        let gdr = a.gdr && b.gdr;
        let rate = a.ib_gbs.min(b.ib_gbs) / if gdr { 1.0 } else { 2.0 };
        (Transport::Nic { ib: true, gdr }, rate)
    } else {
        let rate = a.socket_gbs.min(b.socket_gbs);
        (
            Transport::Nic {
                ib: false,
                gdr: false,
            },
            rate,
        )
    }
}

/// The transport and rate from rank `a` to rank `b`; `None` when `a`'s record has no entry for
/// `b`'s device on their node.
fn edge(a: &Info, b: &Info) -> Option<(Transport, f64)> {
    if a.address != b.address {
        return Some(between(a, b));
    }
    let (transport, rate) = *a.peers.get(b.device as usize)?;
    let transport = match transport {
        Transport::P2p {
            nvlink,
            read,
            direct,
        } => Transport::P2p {
            nvlink,
            read,
            direct: direct && a.pid == b.pid,
        },
        other => other,
    };
    Some((transport, rate))
}

/// The ring over the ranks of `table`, in rank order (each node's ranks in a row), its speed
/// that of its slowest edge; `None` for a table whose records do not fit together.
pub fn ring(table: &[Info]) -> Option<Ring> {
    let n = table.len();
    let edges: Vec<(Transport, f64)> = if n < 2 {
        Vec::new()
    } else {
        (0..n)
            .map(|i| edge(&table[i], &table[(i + 1) % n]))
            .collect::<Option<_>>()?
    };
    Some(Ring {
        order: (0..n).collect(),
        bus_gbs: edges.iter().map(|e| e.1).fold(f64::INFINITY, f64::min),
        edges: edges.into_iter().map(|e| e.0).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_net_forces_sockets_and_a_forced_network_that_cannot_start_fails_init() {
        let mut profile = Profile::default();
        // No HCA: sockets, unless NCCL_NET insists on InfiniBand or names no network of NCCL's.
        profile.network.hcas = 0;
        let socket = choose(&profile, 0, None).unwrap();
        assert!(!socket.ib);
        assert!(!choose(&profile, 0, Some("socket")).unwrap().ib);
        assert_eq!(choose(&profile, 0, Some("IB")), Err(NoNet));
        assert_eq!(choose(&profile, 0, Some("gIB")), Err(NoNet));
        // HCAs: NCCL_NET=Socket keeps NCCL off them, whatever rdma-core would have done.
        profile.network.hcas = 2;
        assert!(!choose(&profile, 0, Some("Socket")).unwrap().ib);
    }

    fn rank(rank: u32, node: u8, ib: bool, gdr: bool) -> Info {
        let p2p = Transport::P2p {
            nvlink: true,
            read: false,
            direct: true,
        };
        Info {
            rank,
            nranks: 4,
            address: Ipv4Addr::new(127, 0, 0, node),
            pid: 100 + rank,
            device: rank % 2,
            bus_id: 0,
            ib,
            gdr,
            ib_gbs: if ib { 50.0 } else { 0.0 },
            socket_gbs: 3.125,
            peers: vec![(p2p, 450.0); 2],
        }
    }

    #[test]
    fn edges_between_nodes_go_by_ib_only_when_both_ends_have_it() {
        let ib = [
            rank(0, 2, true, true),
            rank(1, 2, true, true),
            rank(2, 3, true, true),
            rank(3, 3, true, true),
        ];
        let ring = ring(&ib).unwrap();
        assert_eq!(ring.order, [0, 1, 2, 3]);
        assert_eq!(ring.edges[1].label(), "NET/IB/0/GDRDMA");
        assert_eq!(ring.edges[0].label(), "P2P/CUMEM", "another process");
        assert_eq!(ring.bus_gbs, 50.0);
        let mut no_gdr = ib.clone();
        no_gdr[2].gdr = false;
        let ring = super::ring(&no_gdr).unwrap();
        assert_eq!(ring.edges[1].label(), "NET/IB/0");
        assert_eq!(ring.bus_gbs, 25.0);
        let mut socket = ib.clone();
        socket[3].ib = false;
        let ring = super::ring(&socket).unwrap();
        assert_eq!(ring.edges[3].label(), "NET/Socket/0");
        assert_eq!(ring.bus_gbs, 3.125);
        assert_eq!(super::ring(&ib[..1]).unwrap().bus_gbs, f64::INFINITY);
        let mut odd = ib.clone();
        odd[0].peers.clear();
        assert_eq!(super::ring(&odd), None);
    }
}
