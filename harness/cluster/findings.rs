//! What a job's ranks reported, turned into findings that name the node and the cause:
//!
//! - `nccl_net_fallback`: a node whose NCCL chose sockets between nodes (`Using network
//!   Socket`), and so every pair of ranks across nodes with it moves data over `NET/Socket`;
//!   the cause from what NCCL said there and what its process mapped (no `libibverbs.so.1`, or
//!   rdma-core without a device);
//! - `gdr_disabled`: a node whose NCCL said GPUDirect RDMA is disabled for its HCA, so data
//!   between nodes is staged through host memory;
//! - `nccl_rank_missing`: ranks that never joined the rendezvous before the deadline, by node;
//! - `nccl_bandwidth_low`: a collective far below what the nodes' RDMA ports allow
//!   ([`super::fabric`]);
//! - `nccl_slow_node` and `nccl_slow_link`: the node, or the pair of nodes, whose all-reduce
//!   falls far below the fastest pair's ([`super::pairs`]).

use crate::diagnose::finding::{Cause, Finding, Severity};
use crate::diagnose::network::{PACKAGES, SOCKETS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one rank saw of the network between nodes (`nccl.transport`'s `ranks`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankNet {
    pub rank: u32,
    pub host: String,
    /// The GPU it ran on.
    pub device: u32,
    /// The network NCCL chose there (`IB`, `Socket`), from `Using network ...`.
    pub network: Option<String>,
    /// The `libibverbs.so.1` mapped into its process, if NCCL loaded one.
    pub verbs: Option<String>,
    /// NCCL's lines about that network ([`crate::nccl::log::Seen::net`]).
    pub net: Vec<String>,
    /// `NCCL_NET` as NCCL took it from the environment (`IB`, `Socket`), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced: Option<String>,
}

/// One ring edge between ranks, with their nodes (`nccl.transport`'s `edges`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerEdge {
    pub from_rank: u32,
    pub to_rank: u32,
    pub from_host: String,
    pub to_host: String,
    /// NCCL's words after `via` (`NET/IB/0/GDRDMA`).
    pub via: String,
    pub line: String,
}

/// A rank that never joined (`nccl.init`'s `missing`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissingRank {
    pub rank: u32,
    /// Its node, when the scheduler says where it was placed.
    pub host: Option<String>,
}

/// The findings of a `check --nodes` run, from its combinations' `nccl.init`,
/// `nccl.transport`, `nccl.node_pairs` and collectives' details.
pub fn from_checks(combinations: &[crate::schema::check::CombinationReport]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for combination in combinations {
        let detail = |id: &str, key: &str| {
            (combination.checks.iter())
                .find(|c| c.id == id)
                .and_then(|c| c.details.get(key))
                .cloned()
        };
        if let Some(missing) = detail("nccl.init", "missing") {
            let missing: Vec<MissingRank> = serde_json::from_value(missing).unwrap_or_default();
            let rendezvous = detail("nccl.init", "rendezvous")
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            findings.extend(never_joined(&missing, &rendezvous));
        }
        let failed: Vec<RankNet> = detail("nccl.init", "failed")
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        findings.extend(net_unavailable(&failed));
        let ranks: Vec<RankNet> = detail("nccl.transport", "ranks")
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        let edges: Vec<PeerEdge> = detail("nccl.transport", "edges")
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        findings.extend(net_fallback(&ranks, &edges));
        findings.extend(gdr_disabled(&ranks));
        let pairs: Vec<super::pairs::PairRun> = detail("nccl.node_pairs", "pairs")
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        findings.extend(super::pairs::findings(&pairs));
        findings.extend(combination.checks.iter().filter_map(|c| {
            let bus = c.details.get("bus_gbs")?.as_f64()?;
            let ceiling = serde_json::from_value(c.details.get("ceiling")?.clone()).ok()?;
            super::fabric::judge(&c.id, bus, &ceiling)
        }));
    }
    findings
}

/// Each node's ranks, in rank order.
fn by_host(ranks: &[RankNet]) -> BTreeMap<&str, Vec<&RankNet>> {
    let mut hosts: BTreeMap<&str, Vec<&RankNet>> = BTreeMap::new();
    for rank in ranks {
        hosts.entry(rank.host.as_str()).or_default().push(rank);
    }
    hosts
}

fn rank_list(ranks: &[&RankNet]) -> String {
    super::ranges(&ranks.iter().map(|r| r.rank).collect::<Vec<_>>())
}

/// `nccl_net_fallback` for every node whose NCCL chose sockets while the job spans nodes.
pub fn net_fallback(ranks: &[RankNet], edges: &[PeerEdge]) -> Vec<Finding> {
    let hosts = by_host(ranks);
    if hosts.len() < 2 {
        return Vec::new();
    }
    let mut findings = Vec::new();
    for (host, on) in &hosts {
        // Sockets asked for (NCCL_NET=Socket) are no fallback.
        let asked =
            |r: &RankNet| (r.forced.as_deref()).is_some_and(|f| f.eq_ignore_ascii_case("Socket"));
        let sockets: Vec<&&RankNet> = (on.iter())
            .filter(|r| r.network.as_deref() == Some("Socket") && !asked(r))
            .collect();
        let Some(first) = sockets.first() else {
            continue;
        };
        let across: Vec<&PeerEdge> = (edges.iter())
            .filter(|e| e.from_host != e.to_host)
            .filter(|e| e.from_host == *host || e.to_host == *host)
            .collect();
        let others: Vec<&str> = (hosts.keys()).filter(|h| *h != host).copied().collect();
        let cause = match &first.verbs {
            None => "libibverbs.so.1 (rdma-core) could not be opened there".to_owned(),
            Some(path) => {
                format!("rdma-core loads there ({path}) but NCCL found no RDMA device it can use")
            }
        };
        let mut evidence: Vec<String> = (first.net.iter())
            .map(|line| format!("rank {} on {host}: NCCL says \"{line}\"", first.rank))
            .collect();
        evidence.push(format!(
            "rank {} on {host}: NCCL says \"Using network Socket\"; libibverbs.so.1 {}",
            first.rank,
            first
                .verbs
                .as_deref()
                .map_or("is not mapped in its process".to_owned(), |p| format!(
                    "is mapped from {p}"
                ))
        ));
        evidence.extend(across.iter().take(4).map(|e| {
            format!(
                "rank {} ({}) -> rank {} ({}): \"{}\"",
                e.from_rank, e.from_host, e.to_rank, e.to_host, e.line
            )
        }));
        if across.len() > 4 {
            evidence.push(format!(
                "... and {} more edge(s) across nodes",
                across.len() - 4
            ));
        }
        let fix = match first.verbs {
            None => format!("on {host}, install rdma-core and its providers ({PACKAGES}); `ibv_devinfo` should then list the HCA, and NCCL_NET=IB makes a missing one an error rather than a silent fallback"),
            Some(_) => format!("on {host}, check that the HCA is up (`ibv_devinfo`: state PORT_ACTIVE), that its kernel driver (mlx5_ib) is loaded, and that NCCL_IB_HCA, if set, names it; NCCL_NET=IB makes a missing one an error rather than a silent fallback"),
        };
        findings.push(
            Finding::new(
                Severity::Error,
                Cause::NcclNetFallback,
                format!(
                    "{host}: NCCL uses sockets between nodes (NET/Socket): {cause}; the traffic of its rank(s) {} with {} moves at socket speed: {SOCKETS}",
                    rank_list(on),
                    others.join(", ")
                ),
                fix,
            )
            .evidence(evidence),
        );
    }
    findings
}

/// `nccl_net_unavailable` for every node where `NCCL_NET` named a network that did not start:
/// `failed` holds the ranks whose `ncclCommInitRank` failed, each with what its NCCL said.
pub fn net_unavailable(failed: &[RankNet]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (host, on) in by_host(failed) {
        let Some(first) = (on.iter()).find(|r| r.forced.is_some() && r.network.is_none()) else {
            continue;
        };
        let forced = first.forced.as_deref().unwrap_or_default();
        let ib = forced.eq_ignore_ascii_case("IB");
        let why = match (ib, &first.verbs) {
            (true, None) => "libibverbs.so.1 (rdma-core) could not be opened there".to_owned(),
            (true, Some(path)) => {
                format!("rdma-core loads there ({path}) but NCCL found no RDMA device it can use")
            }
            (false, _) => "NCCL has no network of that name there: the plugin that brings it (NCCL_NET_PLUGIN, libnccl-net*.so) did not load".to_owned(),
        };
        let mut evidence = vec![format!(
            "rank {} on {host}: NCCL says \"NCCL_NET set by environment to {forced}.\"",
            first.rank
        )];
        evidence.extend(
            (first.net.iter())
                .map(|line| format!("rank {} on {host}: NCCL says \"{line}\"", first.rank)),
        );
        let fix = if ib {
            format!("on {host}, install rdma-core and its providers ({PACKAGES}) and check that `ibv_devinfo` lists an ACTIVE port; or unset NCCL_NET there, and NCCL falls back to sockets between nodes, an order of magnitude slower")
        } else {
            format!("on {host}, install the network plugin NCCL_NET={forced} needs where NCCL's loader finds it (or name it in NCCL_NET_PLUGIN), or unset NCCL_NET")
        };
        findings.push(
            Finding::new(
                Severity::Error,
                Cause::NcclNetUnavailable,
                format!(
                    "{host}: NCCL_NET={forced}, and that network does not start there ({why}): NCCL tries no other, and ncclCommInitRank fails on its rank(s) {} with \"invalid usage\" (\"Failed to initialize any NET plugin\")",
                    rank_list(&on)
                ),
                fix,
            )
            .evidence(evidence),
        );
    }
    findings
}

/// `gdr_disabled` for every node whose NCCL said GPUDirect RDMA is disabled.
pub fn gdr_disabled(ranks: &[RankNet]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (host, on) in by_host(ranks) {
        let said: Vec<(u32, &String)> = (on.iter())
            .flat_map(|r| {
                (r.net.iter())
                    .filter(|l| l.contains("GPU Direct RDMA Disabled"))
                    .map(move |l| (r.rank, l))
            })
            .collect();
        let Some((_, line)) = said.first() else {
            continue;
        };
        let hca = line.split_once(" for ").map_or("its HCA", |(_, hca)| hca);
        findings.push(
            Finding::new(
                Severity::Warning,
                Cause::GdrDisabled,
                format!(
                    "{host}: GPUDirect RDMA is disabled for {hca}: NCCL stages the traffic of rank(s) {} to other nodes through host memory, slower and with more CPU",
                    rank_list(&on)
                ),
                format!("on {host}, load nvidia_peermem (`modprobe nvidia_peermem`, shipped with the driver), or use DMA-BUF (the open kernel module on Linux 5.12 or later, NCCL_DMABUF_ENABLE=1); `lsmod | grep nvidia_peermem` shows which"),
            )
            .evidence(
                said.iter()
                    .take(4)
                    .map(|(rank, line)| format!("rank {rank} on {host}: NCCL says \"{line}\""))
                    .collect(),
            ),
        );
    }
    findings
}

/// `nccl_rank_missing`, one finding for the ranks that never joined.
pub fn never_joined(missing: &[MissingRank], rendezvous: &str) -> Option<Finding> {
    if missing.is_empty() {
        return None;
    }
    let ranks: Vec<u32> = missing.iter().map(|m| m.rank).collect();
    let mut hosts: Vec<&str> = missing.iter().filter_map(|m| m.host.as_deref()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let placed = if hosts.is_empty() {
        "where the scheduler placed them is unknown".to_owned()
    } else {
        format!("placed on {}", hosts.join(", "))
    };
    Some(
        Finding::new(
            Severity::Error,
            Cause::NcclRankMissing,
            format!(
                "rank(s) {} never joined the job's rendezvous at {rendezvous} ({placed}): no collective ran, and every rank that did join was stopped",
                super::ranges(&ranks)
            ),
            format!("look at the job's log of rank(s) {} for why they did not start (a node down, a crash before stackbench ran, a firewall between them and {rendezvous}); `sacct -j <job>` or `kubectl logs` shows each task's end", super::ranges(&ranks)),
        )
        .evidence(
            missing
                .iter()
                .map(|m| {
                    format!(
                        "rank {}: {}",
                        m.rank,
                        m.host.as_deref().map_or("placement unknown".to_owned(), |h| format!("placed on {h}"))
                    )
                })
                .collect(),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(rank: u32, host: &str, network: &str, verbs: bool, net: &[&str]) -> RankNet {
        RankNet {
            rank,
            host: host.into(),
            device: rank % 4,
            network: Some(network.into()),
            verbs: verbs.then(|| "/usr/lib/libibverbs.so.1".into()),
            net: net.iter().map(|s| (*s).to_owned()).collect(),
            forced: None,
        }
    }

    #[test]
    fn a_forced_network_that_does_not_start_names_its_node_and_sockets_asked_for_are_no_fallback() {
        let failed = RankNet {
            network: None,
            forced: Some("IB".into()),
            ..rank(2, "n2", "", false, &["Failed to open libibverbs.so[.1]"])
        };
        let found = net_unavailable(&[
            failed.clone(),
            RankNet {
                rank: 3,
                ..failed.clone()
            },
        ]);
        let [f] = found.as_slice() else {
            panic!("one finding: {found:?}")
        };
        assert_eq!(f.cause, Cause::NcclNetUnavailable);
        assert!(
            f.message.starts_with("n2: NCCL_NET=IB, and that network does not start there (libibverbs.so.1 (rdma-core) could not be opened there)")
                && f.message.contains("rank(s) 2-3"),
            "{}",
            f.message
        );
        assert!(f.fix.contains("apt-get install libibverbs1"), "{}", f.fix);
        // A rank that failed for another reason, NCCL_NET unset: not this finding.
        let plain = RankNet {
            forced: None,
            ..failed
        };
        assert!(net_unavailable(&[plain]).is_empty());
        // NCCL_NET=Socket on both nodes: sockets between them, asked for, named by no finding.
        let asked = |r: u32, host: &str| RankNet {
            forced: Some("Socket".into()),
            ..rank(r, host, "Socket", false, &[])
        };
        let ranks = [
            asked(0, "n1"),
            asked(1, "n1"),
            asked(2, "n2"),
            asked(3, "n2"),
        ];
        let edges = [edge(1, 2, "NET/Socket/0"), edge(3, 0, "NET/Socket/0")];
        assert!(net_fallback(&ranks, &edges).is_empty());
    }

    fn edge(from: u32, to: u32, via: &str) -> PeerEdge {
        let host = |r: u32| if r < 2 { "n1" } else { "n2" };
        PeerEdge {
            from_rank: from,
            to_rank: to,
            from_host: host(from).into(),
            to_host: host(to).into(),
            via: via.into(),
            line: format!("Channel 00/0 : {from}[0] -> {to}[0] [send] via {via}"),
        }
    }

    #[test]
    fn the_node_without_rdma_core_is_named_not_its_peer() {
        let ranks = [
            rank(0, "n1", "IB", true, &[]),
            rank(1, "n1", "IB", true, &[]),
            rank(
                2,
                "n2",
                "Socket",
                false,
                &["Failed to open libibverbs.so[.1]"],
            ),
            rank(3, "n2", "Socket", false, &[]),
        ];
        let edges = [
            edge(1, 2, "NET/Socket/0"),
            edge(3, 0, "NET/Socket/0"),
            edge(0, 1, "P2P/CUMEM"),
        ];
        let findings = net_fallback(&ranks, &edges);
        assert_eq!(findings.len(), 1, "{findings:#?}");
        let f = &findings[0];
        assert_eq!(f.cause, Cause::NcclNetFallback);
        assert!(
            f.message.starts_with("n2: NCCL uses sockets"),
            "{}",
            f.message
        );
        assert!(
            f.message
                .contains("libibverbs.so.1 (rdma-core) could not be opened"),
            "{}",
            f.message
        );
        assert!(f.message.contains("rank(s) 2-3 with n1"), "{}", f.message);
        assert!(
            f.fix
                .contains("apt-get install libibverbs1 ibverbs-providers"),
            "{}",
            f.fix
        );
        assert!(f.evidence[0].contains("Failed to open libibverbs.so[.1]"));
        assert_eq!(
            f.evidence
                .iter()
                .filter(|e| e.contains(" -> rank "))
                .count(),
            2
        );
    }

    #[test]
    fn rdma_core_without_a_device_and_one_node_are_told_apart() {
        let ranks = [
            rank(0, "n1", "IB", true, &[]),
            rank(2, "n2", "Socket", true, &[]),
        ];
        let f = &net_fallback(&ranks, &[])[0];
        assert!(f.message.contains("no RDMA device"), "{}", f.message);
        assert!(f.fix.contains("ibv_devinfo"), "{}", f.fix);
        let one_node = [
            rank(0, "n1", "Socket", false, &[]),
            rank(1, "n1", "Socket", false, &[]),
        ];
        assert!(net_fallback(&one_node, &[]).is_empty());
    }

    #[test]
    fn gdr_disabled_names_the_node_and_the_hca() {
        let line = "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'";
        let ranks = [
            rank(0, "n1", "IB", true, &[]),
            rank(2, "n2", "IB", true, &[line]),
        ];
        let findings = gdr_disabled(&ranks);
        assert_eq!(findings.len(), 1);
        assert!(
            findings[0]
                .message
                .starts_with("n2: GPUDirect RDMA is disabled for HCA 0 'mlx5_0'"),
            "{}",
            findings[0].message
        );
        assert!(findings[0].fix.contains("nvidia_peermem"));
    }

    #[test]
    fn ranks_that_never_joined_are_named_with_their_node() {
        let missing = [
            MissingRank {
                rank: 5,
                host: Some("sim2".into()),
            },
            MissingRank {
                rank: 6,
                host: Some("sim2".into()),
            },
        ];
        let f = never_joined(&missing, "127.0.0.1:29500").unwrap();
        assert_eq!(f.cause, Cause::NcclRankMissing);
        assert!(
            f.message.starts_with("rank(s) 5-6 never joined"),
            "{}",
            f.message
        );
        assert!(f.message.contains("placed on sim2"), "{}", f.message);
        assert!(never_joined(&[], "x").is_none());
    }
}
