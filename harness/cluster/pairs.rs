//! Which node or link between nodes is the slow one. A collective across the whole job runs at
//! the pace of its slowest link, and names none; so `check --nodes` also times an all-reduce
//! between the first ranks of each pair of neighbouring nodes (a ring: each node with the next,
//! the last with the first), in rounds in which no node is in two pairs. A pair below [`SLOW`]
//! of the fastest pair is slow. A node whose every pair is slow is the slow node (its ports, its
//! HCA, its GPU's PCIe link); a slow pair of two nodes that are fast with their other neighbours
//! is a slow link (a cable, a switch port). It needs three nodes: two make one pair, with
//! nothing to hold it against. [`SLOW`] is our rule: a link trained down or failing loses far
//! more than the few per cent that pairs of healthy links differ by.

use crate::diagnose::finding::{Cause, Finding, Severity};
use serde::{Deserialize, Serialize};

/// A pair below this share of the fastest pair's bus bandwidth is slow.
pub const SLOW: f64 = 0.75;

/// The fewest nodes whose pairs can be held against each other.
pub const FEWEST: usize = 3;

/// The most nodes whose pairs are timed: each pair's unique id is a bootstrap root (a thread and
/// a socket) in rank 0's process until the pair has joined.
pub const MOST: usize = 128;

/// The ring's pairs of `nodes` nodes (indices, the lower first where it comes first in the
/// ring), by round: no node in two pairs of one round. None below [`FEWEST`].
pub fn rounds(nodes: usize) -> Vec<Vec<(usize, usize)>> {
    if nodes < FEWEST {
        return Vec::new();
    }
    let mut rounds: Vec<Vec<(usize, usize)>> = Vec::new();
    for pair in (0..nodes).map(|i| (i, (i + 1) % nodes)) {
        let free = |round: &Vec<(usize, usize)>| {
            round
                .iter()
                .all(|&(a, b)| ![a, b].contains(&pair.0) && ![a, b].contains(&pair.1))
        };
        match rounds.iter_mut().find(|round| free(round)) {
            Some(round) => round.push(pair),
            None => rounds.push(vec![pair]),
        }
    }
    rounds
}

/// One pair's all-reduce, as rank 0 puts both sides' reports together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairRun {
    pub a: String,
    pub b: String,
    /// Bus bandwidth, GB/s, of the slower side's time; `None` when it did not run.
    pub bus_gbs: Option<f64>,
    /// Why it did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the pairs say, when any was measured (rank 0's, in memory).
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The fastest pair, the measure of the others.
    pub fastest: PairRun,
    /// Nodes whose every measured pair is slow.
    pub slow_nodes: Vec<String>,
    /// Slow pairs that no slow node explains.
    pub slow_links: Vec<PairRun>,
}

impl PairRun {
    fn has(&self, node: &str) -> bool {
        self.a == node || self.b == node
    }

    /// `sim2 and sim3: 12.4 GB/s`.
    fn describe(&self) -> String {
        match (self.bus_gbs, &self.error) {
            (Some(bus), _) => format!("{} and {}: {bus:.1} GB/s", self.a, self.b),
            (None, Some(e)) => format!("{} and {}: not measured ({e})", self.a, self.b),
            (None, None) => format!("{} and {}: not measured", self.a, self.b),
        }
    }
}

/// The slow nodes and links among `pairs`; `None` when no pair was measured.
pub fn judge(pairs: &[PairRun]) -> Option<Judged> {
    let measured: Vec<(&PairRun, f64)> = (pairs.iter())
        .filter_map(|p| Some((p, p.bus_gbs.filter(|b| b.is_finite() && *b > 0.0)?)))
        .collect();
    let &(fastest, top) = measured.iter().max_by(|x, y| x.1.total_cmp(&y.1))?;
    let slow = |bus: f64| bus < SLOW * top;
    let mut nodes: Vec<&str> = (measured.iter())
        .flat_map(|(p, _)| [p.a.as_str(), p.b.as_str()])
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    let slow_nodes: Vec<String> = (nodes.into_iter())
        .filter(|node| {
            let theirs: Vec<f64> = (measured.iter())
                .filter(|(p, _)| p.has(node))
                .map(|(_, bus)| *bus)
                .collect();
            theirs.len() >= 2 && theirs.iter().all(|&bus| slow(bus))
        })
        .map(str::to_owned)
        .collect();
    let slow_links = (measured.iter())
        .filter(|(p, bus)| slow(*bus) && !slow_nodes.iter().any(|n| p.has(n)))
        .map(|(p, _)| (*p).clone())
        .collect();
    Some(Judged {
        fastest: fastest.clone(),
        slow_nodes,
        slow_links,
    })
}

/// `nccl_slow_node` and `nccl_slow_link`, from `nccl.node_pairs`' pairs.
pub fn findings(pairs: &[PairRun]) -> Vec<Finding> {
    let Some(judged) = judge(pairs) else {
        return Vec::new();
    };
    let top = judged.fastest.bus_gbs.unwrap_or_default();
    let against = format!(
        "against {top:.1} GB/s between the fastest pair ({} and {})",
        judged.fastest.a, judged.fastest.b
    );
    let evidence: Vec<String> = pairs.iter().map(PairRun::describe).collect();
    let mut findings: Vec<Finding> = (judged.slow_nodes.iter())
        .map(|node| {
            let theirs: Vec<String> = (pairs.iter())
                .filter(|p| p.has(node) && p.bus_gbs.is_some())
                .map(PairRun::describe)
                .collect();
            Finding::new(
                Severity::Warning,
                Cause::NcclSlowNode,
                format!(
                    "{node} is slow with each of its neighbours (all-reduce bus bandwidth {}), {against}",
                    theirs.join("; ")
                ),
                format!("drain {node} and check its HCA ports (`ibstat`: state and rate; `perfquery`: symbol and link-down counters), the PCIe links of its GPUs and HCAs (`lspci -vv`: LnkSta against LnkCap), and `nvidia-smi topo -m`"),
            )
            .evidence(evidence.clone())
        })
        .collect();
    findings.extend(judged.slow_links.iter().map(|link| {
        Finding::new(
            Severity::Warning,
            Cause::NcclSlowLink,
            format!(
                "the link between {} and {} is slow (all-reduce bus bandwidth {:.1} GB/s) while each is fast with its other neighbour, {against}",
                link.a,
                link.b,
                link.bus_gbs.unwrap_or_default()
            ),
            format!(
                "check the cables and switch ports between {} and {} (`perfquery` on both HCAs' ports, `ibdiagnet` for the fabric), then run nccl-tests' all_reduce_perf on the two alone",
                link.a, link.b
            ),
        )
        .evidence(evidence.clone())
    }));
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(a: &str, b: &str, bus: f64) -> PairRun {
        PairRun {
            a: a.into(),
            b: b.into(),
            bus_gbs: Some(bus),
            error: None,
        }
    }

    fn ring(buses: &[f64]) -> Vec<PairRun> {
        let n = buses.len();
        (0..n)
            .map(|i| run(&format!("n{i}"), &format!("n{}", (i + 1) % n), buses[i]))
            .collect()
    }

    #[test]
    fn every_ring_pair_once_and_no_node_twice_in_a_round() {
        assert!(rounds(2).is_empty());
        assert_eq!(rounds(3), [vec![(0, 1)], vec![(1, 2)], vec![(2, 0)]]);
        assert_eq!(rounds(4), [vec![(0, 1), (2, 3)], vec![(1, 2), (3, 0)]]);
        for n in 3..40 {
            let all = rounds(n);
            let mut pairs: Vec<(usize, usize)> = all.iter().flatten().copied().collect();
            pairs.sort_unstable();
            let mut ring: Vec<(usize, usize)> = (0..n).map(|i| (i, (i + 1) % n)).collect();
            ring.sort_unstable();
            assert_eq!(pairs, ring, "{n} nodes");
            for round in &all {
                let mut nodes: Vec<usize> = round.iter().flat_map(|&(a, b)| [a, b]).collect();
                nodes.sort_unstable();
                let before = nodes.len();
                nodes.dedup();
                assert_eq!(nodes.len(), before, "{n} nodes: {round:?}");
            }
            assert!(all.len() <= 3, "{n} nodes in {} rounds", all.len());
        }
    }

    #[test]
    fn a_node_slow_with_both_neighbours_is_the_slow_node_not_its_links() {
        // n2's pairs (n1, n2) and (n2, n3) at a quarter: its port trained at 100 of 400 Gb/s.
        let pairs = ring(&[49.0, 12.3, 12.4, 48.5]);
        let judged = judge(&pairs).unwrap();
        assert_eq!(judged.slow_nodes, ["n2"]);
        assert!(judged.slow_links.is_empty());
        assert_eq!(
            (judged.fastest.a.as_str(), judged.fastest.b.as_str()),
            ("n0", "n1")
        );
        let found = findings(&pairs);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].cause, Cause::NcclSlowNode);
        assert!(
            found[0].message.starts_with("n2 is slow"),
            "{}",
            found[0].message
        );
        assert!(found[0]
            .message
            .contains("n1 and n2: 12.3 GB/s; n2 and n3: 12.4 GB/s"));
        assert!(found[0]
            .message
            .contains("against 49.0 GB/s between the fastest pair (n0 and n1)"));
        assert_eq!(found[0].evidence.len(), 4);
    }

    #[test]
    fn one_slow_pair_between_fast_nodes_is_a_slow_link() {
        let pairs = ring(&[49.0, 20.0, 48.0]);
        let judged = judge(&pairs).unwrap();
        assert!(judged.slow_nodes.is_empty());
        assert_eq!(judged.slow_links, [pairs[1].clone()]);
        let found = findings(&pairs);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].cause, Cause::NcclSlowLink);
        assert!(found[0].message.contains("between n1 and n2"));
    }

    #[test]
    fn pairs_within_the_rule_of_each_other_and_unmeasured_pairs_name_nothing() {
        // 75% of the fastest is still fast; 74% is not.
        assert!(findings(&ring(&[40.0, 30.0, 40.0, 40.0])).is_empty());
        assert_eq!(findings(&ring(&[40.0, 29.6, 40.0, 40.0])).len(), 1);
        let mut unmeasured = ring(&[40.0, 39.0, 38.0]);
        unmeasured[1].bus_gbs = None;
        unmeasured[1].error = Some("ncclCommInitRank failed".into());
        assert!(findings(&unmeasured).is_empty());
        assert!(judge(&[]).is_none());
    }
}
