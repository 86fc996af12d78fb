//! The transport NCCL picks between two ranks, the ring it builds over them, and the ring's
//! bus bandwidth (the model in [`super`]'s doc).

use super::debug::Env;
use crate::node;
use crate::profile::Profile;

/// How one rank sends to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Into the peer's memory: over NVLink (`nvlink`) or PCIe; `read`: NCCL's P2P read mode
    /// (NVLink between compute capability 8.0 GPUs); `direct`: the peer's pointer used as it is
    /// (ranks of one process, unless `NCCL_P2P_DIRECT_DISABLE=1`), else mapped through cuMem.
    P2p {
        nvlink: bool,
        read: bool,
        direct: bool,
    },
    /// Through a buffer in host memory.
    Shm,
    /// Through sockets, within the node.
    Net,
    /// Between nodes, through their network ([`super::net`]): InfiniBand (`ib`, with
    /// GPUDirect RDMA on both ends: `gdr`) or sockets.
    Nic { ib: bool, gdr: bool },
}

impl Transport {
    /// How NCCL's INFO line names it after `via`.
    pub fn label(self) -> String {
        match self {
            Transport::P2p { read, direct, .. } => {
                let kind = if direct { "direct pointer" } else { "CUMEM" };
                format!("P2P/{kind}{}", if read { "/read" } else { "" })
            }
            Transport::Shm => "SHM/direct/direct".into(),
            Transport::Net | Transport::Nic { ib: false, .. } => "NET/Socket/0".into(),
            Transport::Nic { ib: true, gdr } => {
                format!("NET/IB/0{}", if gdr { "/GDRDMA" } else { "" })
            }
        }
    }

    /// The path type of NCCL's graph search (`NVL`, `PXB`, `SYS`, `NET`).
    pub fn path_type(self) -> &'static str {
        match self {
            Transport::P2p { nvlink: true, .. } => "NVL",
            Transport::P2p { nvlink: false, .. } => "PXB",
            Transport::Shm => "SYS",
            Transport::Net | Transport::Nic { .. } => "NET",
        }
    }
}

/// The transport between devices `a` and `b` (see the model in [`super`]).
pub fn transport(profile: &Profile, env: &Env, a: usize, b: usize) -> Transport {
    let p2p = env.p2p_disable != Some(1) && node::can_access_peer(profile, a, b);
    if p2p {
        let nvlink = profile.node.nvswitch;
        let ampere = |d: usize| profile.device[d].compute_capability() == (8, 0);
        Transport::P2p {
            nvlink,
            read: nvlink && ampere(a) && ampere(b),
            direct: env.p2p_direct_disable != Some(1),
        }
    } else if env.shm_disable != Some(1) {
        Transport::Shm
    } else {
        Transport::Net
    }
}

/// The rate, GB/s, of `transport` from device `a` to `b` of one node: NVLink
/// `min(links up) x nvlink_gbs`, P2P over PCIe `pcie_gbs`, SHM `pcie_gbs / 2`, NET (sockets
/// within the node) `pcie_gbs / 4`; divided by the pair's `slow_link` factor and the larger
/// `slow_device` factor of the two. (An edge between nodes has [`super::net::between`]'s rate.)
pub fn rate_gbs(profile: &Profile, transport: Transport, a: usize, b: usize) -> f64 {
    let pcie = profile.node.pcie_gbs;
    let nominal = match transport {
        Transport::P2p { .. } => node::link_gbs(profile, a, b, true),
        Transport::Shm => pcie / 2.0,
        Transport::Net | Transport::Nic { .. } => pcie / 4.0,
    };
    let slow = node::slow_device(profile, a).max(node::slow_device(profile, b));
    nominal / (node::slow_link(profile, a, b) * slow)
}

/// A communicator's ring.
#[derive(Debug, Clone, PartialEq)]
pub struct Ring {
    /// Ranks in ring order, starting at rank 0.
    pub order: Vec<usize>,
    /// The transport from `order[i]` to the next rank of the ring.
    pub edges: Vec<Transport>,
    /// The slowest edge's rate, GB/s (infinite for one rank, which sends nothing).
    pub bus_gbs: f64,
}

impl Ring {
    /// The slowest transport of the ring (the graph's path type).
    pub fn slowest(&self) -> Option<Transport> {
        let rank = |t: &Transport| match t {
            Transport::P2p { nvlink: true, .. } => 0,
            Transport::P2p { nvlink: false, .. } => 1,
            Transport::Shm => 2,
            Transport::Net | Transport::Nic { .. } => 3,
        };
        self.edges.iter().copied().max_by_key(rank)
    }
}

/// The ring over the ranks on devices `devices` (rank `r` on `devices[r]`). Pairs slower than
/// the fastest are put on it first, slowest first (as many as a ring can hold), so its slowest
/// edge is the slowest pair of the whole communicator: one bad pair slows every collective, as
/// NCCL's rings must share one speed. The rest follow in rank order.
pub fn ring(profile: &Profile, env: &Env, devices: &[usize]) -> Ring {
    let n = devices.len();
    let rate = |a: usize, b: usize| {
        let t = transport(profile, env, devices[a], devices[b]);
        rate_gbs(profile, t, devices[a], devices[b])
    };
    let mut pairs: Vec<(f64, usize, usize)> = (0..n)
        .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
        .map(|(a, b)| (rate(a, b).min(rate(b, a)), a, b))
        .collect();
    let fastest = pairs.iter().fold(0.0f64, |m, p| m.max(p.0));
    pairs.retain(|p| p.0 < fastest);
    pairs.sort_by(|x, y| x.0.total_cmp(&y.0).then((x.1, x.2).cmp(&(y.1, y.2))));
    // A path cover: each accepted pair joins two chain ends of different chains.
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut chain: Vec<usize> = (0..n).collect();
    fn root(chain: &mut [usize], mut x: usize) -> usize {
        while chain[x] != x {
            x = chain[x];
        }
        x
    }
    for (_, a, b) in pairs {
        let (ra, rb) = (root(&mut chain, a), root(&mut chain, b));
        if next[a].len() < 2 && next[b].len() < 2 && ra != rb {
            next[a].push(b);
            next[b].push(a);
            chain[ra] = rb;
        }
    }
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    for start in 0..n {
        if seen[start] || next[start].len() == 2 {
            continue;
        }
        let (mut previous, mut at) = (usize::MAX, start);
        loop {
            seen[at] = true;
            order.push(at);
            match next[at].iter().find(|&&x| x != previous && !seen[x]) {
                Some(&x) => (previous, at) = (at, x),
                None => break,
            }
        }
    }
    let zero = order.iter().position(|&r| r == 0).unwrap_or(0);
    order.rotate_left(zero);
    let edges: Vec<Transport> = if n < 2 {
        Vec::new()
    } else {
        (0..n)
            .map(|i| {
                let (a, b) = (devices[order[i]], devices[order[(i + 1) % n]]);
                transport(profile, env, a, b)
            })
            .collect()
    };
    let bus_gbs = (0..edges.len())
        .map(|i| {
            let (a, b) = (devices[order[i]], devices[order[(i + 1) % n]]);
            rate_gbs(profile, edges[i], a, b)
        })
        .fold(f64::INFINITY, f64::min);
    Ring {
        order,
        edges,
        bus_gbs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hgx(faults: &str) -> Profile {
        Profile::parse(&format!(
            "[node]\ngpus = 8\nnvswitch = true\n[faults]\n{faults}\n"
        ))
        .unwrap()
    }

    fn plain() -> Env {
        Env::parse(|_| None)
    }

    #[test]
    fn a_healthy_node_rings_in_rank_order_over_nvlink() {
        let ring = ring(&hgx(""), &plain(), &[0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(ring.order, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(ring.bus_gbs, 450.0);
        assert_eq!(ring.edges[0].label(), "P2P/direct pointer");
    }

    #[test]
    fn the_slowest_pair_is_on_the_ring_and_sets_its_speed() {
        let devices = [0, 1, 2, 3, 4, 5, 6, 7];
        let denied = ring(&hgx("peer_access_denied = [[0, 4]]"), &plain(), &devices);
        assert_eq!(denied.order, [0, 4, 1, 2, 3, 5, 6, 7]);
        assert_eq!(denied.edges[0], Transport::Shm);
        assert_eq!(denied.bus_gbs, 12.5);
        let slow = ring(&hgx("slow_link = [[2, 6, 2.0]]"), &plain(), &devices);
        assert!(slow.order.windows(2).any(|w| w == [2, 6] || w == [6, 2]));
        assert_eq!(slow.bus_gbs, 225.0);
        let two = ring(
            &hgx("peer_access_denied = [[0, 1], [0, 2], [0, 3]]"),
            &plain(),
            &devices,
        );
        assert_eq!(two.bus_gbs, 12.5);
        assert_eq!(two.order.len(), 8);
    }

    #[test]
    fn the_environment_turns_p2p_and_shm_off() {
        let no_p2p = Env::parse(|n| (n == "NCCL_P2P_DISABLE").then(|| "1".into()));
        assert_eq!(transport(&hgx(""), &no_p2p, 0, 1), Transport::Shm);
        let neither = Env::parse(|n| n.ends_with("_DISABLE").then(|| "1".into()));
        assert_eq!(transport(&hgx(""), &neither, 0, 1), Transport::Net);
        assert_eq!(rate_gbs(&hgx(""), Transport::Net, 0, 1), 6.25);
        let pcie = Profile::parse("[node]\ngpus = 2\npcie_gbs = 55\n").unwrap();
        let over_pcie = transport(&pcie, &plain(), 0, 1);
        assert_eq!(over_pcie.path_type(), "PXB");
        assert_eq!(rate_gbs(&pcie, over_pcie, 0, 1), 55.0);
    }
}
