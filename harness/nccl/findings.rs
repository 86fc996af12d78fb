//! `nccl_transport_fallback`: NCCL staging data through host memory (SHM) or a network
//! transport between two GPUs that the node's topology says reach each other over NVLink or
//! PCIe peer to peer. Every correctness check still passes; collectives run several times
//! slower. The likely cause is named from what else was seen, root cause first: the driver
//! refusing peer access (`peer_access_denied`), `NCCL_P2P_DISABLE` in the environment, else
//! PCIe ACS / the IOMMU or a container without IPC.

use super::log::{Edge, Seen};
use crate::diagnose::finding::{Cause, Finding, Severity};
use crate::schema::check::CombinationReport;
use crate::schema::node::{NodePair, NodeReport};

/// The fallbacks of every combination whose `nccl.transport` recorded NCCL's log.
pub fn from_checks(combinations: &[CombinationReport], node: &NodeReport) -> Vec<Finding> {
    combinations
        .iter()
        .filter_map(|c| {
            let result = c.checks.iter().find(|r| r.id == "nccl.transport")?;
            let seen: Seen =
                serde_json::from_value(result.details.get("nccl_log")?.clone()).ok()?;
            let devices: Vec<u32> =
                serde_json::from_value(result.details.get("devices")?.clone()).ok()?;
            transport_fallback(&c.name, &seen, &devices, node)
        })
        .collect()
}

/// The finding for one combination's NCCL, if any edge fell back. `devices[r]` is rank `r`'s
/// GPU.
pub fn transport_fallback(
    combination: &str,
    seen: &Seen,
    devices: &[u32],
    node: &NodeReport,
) -> Option<Finding> {
    let device = |rank: u32| devices.get(rank as usize).copied();
    let fell_back: Vec<(&Edge, &NodePair, u32, u32)> = seen
        .edges
        .iter()
        .filter(|e| e.transport.is_fallback())
        .filter_map(|e| {
            let (a, b) = (device(e.from_rank)?, device(e.to_rank)?);
            let pair = node
                .pairs
                .iter()
                .find(|p| (p.a, p.b) == (a.min(b), a.max(b)))?;
            reachable(pair).then_some((e, pair, a, b))
        })
        .collect();
    if fell_back.is_empty() {
        return None;
    }
    let denied = fell_back
        .iter()
        .any(|(_, pair, _, _)| pair.can_access.contains(&Some(false)));
    let disabled = seen
        .environment
        .iter()
        .find(|line| line.starts_with("NCCL_P2P_DISABLE") || line.starts_with("NCCL_P2P_LEVEL"));
    let mut evidence: Vec<String> = fell_back
        .iter()
        .take(6)
        .map(|(edge, pair, a, b)| {
            format!(
                "GPU {a} -> GPU {b}: NCCL says \"{}\"; NVML: P2P read {}, NVLink {}",
                edge.line,
                pair.nvml.read.as_deref().unwrap_or("unknown"),
                pair.nvml.nvlink.as_deref().unwrap_or("unknown"),
            )
        })
        .collect();
    if fell_back.len() > 6 {
        evidence.push(format!("... and {} more ring edge(s)", fell_back.len() - 6));
    }
    evidence.extend(seen.environment.iter().map(|line| format!("NCCL: {line}")));
    let (cause, fix) = if denied {
        (
            "the driver refuses peer access between them (see peer_access_denied)".to_owned(),
            "fix peer access first (peer_access_denied): NCCL takes P2P once cuDeviceCanAccessPeer says yes".to_owned(),
        )
    } else if let Some(line) = disabled {
        (
            format!("the environment forbids P2P ({line})"),
            "unset NCCL_P2P_DISABLE (and NCCL_P2P_LEVEL) in the job's environment, or in /etc/nccl.conf".to_owned(),
        )
    } else {
        (
            "PCIe ACS or the IOMMU redirecting peer traffic, or a container without IPC between its GPU processes".to_owned(),
            "check PCIe ACS (`lspci -vvv | grep ACSCtl`, off in the BIOS) and `iommu=pt`; run containers with `--ipc=host` (or a shared /dev/shm large enough); `nvidia-smi topo -p2p r` should show OK".to_owned(),
        )
    };
    let via = fell_back[0].0.via.as_str();
    Some(
        Finding::new(
            Severity::Error,
            Cause::NcclTransportFallback,
            format!(
                "{combination}: NCCL moves data between {} pair(s) of GPUs via {via} although NVML says they reach each other directly; collectives pass but run several times slower; likely cause: {cause}",
                fell_back.len()
            ),
            fix,
        )
        .evidence(evidence),
    )
}

/// Whether NVML says the pair reaches each other directly: over NVLink, or P2P reads over PCIe.
fn reachable(pair: &NodePair) -> bool {
    let ok = |status: &Option<String>| status.as_deref() == Some("ok");
    ok(&pair.nvml.nvlink) || ok(&pair.nvml.read)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nccl::log::parse;
    use crate::schema::node::P2pStatus;

    fn node(can_access: bool) -> NodeReport {
        NodeReport {
            pairs: vec![NodePair {
                a: 0,
                b: 1,
                topology: Some("internal".into()),
                nvml: P2pStatus {
                    read: Some("ok".into()),
                    write: Some("ok".into()),
                    nvlink: Some("ok".into()),
                    atomics: Some("ok".into()),
                },
                can_access: [Some(can_access), Some(can_access)],
                performance_rank: None,
                native_atomics: None,
                enable_error: None,
            }],
            ..Default::default()
        }
    }

    const SHM: &str = "h:1:1 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via SHM/direct/direct\n";
    const P2P: &str = "h:1:1 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM\n";

    #[test]
    fn shm_between_linked_gpus_is_named_with_the_denied_peer_access_first() {
        let finding = transport_fallback("sim", &parse(SHM), &[0, 1], &node(false)).unwrap();
        assert_eq!(finding.cause, Cause::NcclTransportFallback);
        assert!(
            finding.message.contains("peer_access_denied"),
            "{}",
            finding.message
        );
        assert!(finding.evidence[0].contains("via SHM/direct/direct"));
    }

    #[test]
    fn p2p_disabled_by_the_environment_is_the_cause_when_peer_access_works() {
        let log = format!("h:1:1 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1.\n{SHM}");
        let finding = transport_fallback("sim", &parse(&log), &[0, 1], &node(true)).unwrap();
        assert!(
            finding.fix.contains("unset NCCL_P2P_DISABLE"),
            "{}",
            finding.fix
        );
    }

    #[test]
    fn p2p_or_unlinked_pairs_are_no_finding() {
        assert!(transport_fallback("sim", &parse(P2P), &[0, 1], &node(true)).is_none());
        let mut apart = node(true);
        apart.pairs[0].nvml = P2pStatus::default();
        assert!(transport_fallback("sim", &parse(SHM), &[0, 1], &apart).is_none());
    }

    #[test]
    fn ranks_map_to_the_devices_they_ran_on() {
        // Ranks 0 and 1 ran on GPUs 3 and 5: the node has no pair (0, 1) to compare with.
        assert!(transport_fallback("sim", &parse(SHM), &[3, 5], &node(false)).is_none());
    }
}
