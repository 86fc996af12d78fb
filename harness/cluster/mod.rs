//! NCCL across nodes (`check --nodes`): one process per GPU under the scheduler that started
//! the job ([`world`]), the ranks meeting at a rendezvous of our own with a deadline
//! ([`rendezvous`]), and what their reports show: which transport each pair of ranks got, and
//! why it fell back ([`findings`]), and what the links between the nodes allow ([`fabric`]).

pub mod fabric;
pub mod findings;
pub mod pairs;
pub mod rendezvous;
pub mod world;

use serde::{Deserialize, Serialize};
use world::World;

/// What a rank's worker is told of its job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorldRequest {
    pub world: World,
    /// Where rank 0 listens.
    pub rendezvous: (String, u16),
    /// How long the ranks wait for each other to join, ms.
    pub join_ms: u64,
    /// How long rank 0 waits for every rank's report of one check, ms.
    pub step_ms: u64,
    /// The job's rendezvous token ([`TOKEN_VAR`]), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Token>,
    /// `bench --nodes`: each collective timed at every size of a sweep; absent for `check`,
    /// which times the largest size only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
    /// `--net`: `NCCL_NET` for every rank's worker (`IB`, `Socket`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<String>,
}

/// How `bench --nodes` times each collective: at every size from 8 B up, each size this many
/// times the last (nccl-tests' `-f`), `samples` times. Every rank must run the same sweep: a
/// collective completes only when every rank calls it, so the counts are fixed, never decided
/// by a rank's own noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sweep {
    pub step: usize,
    pub samples: u32,
}

/// One size of a sweep (nccl-tests' size, as `Shape::bytes` rounds it): its samples' times
/// per run, ns, in the order taken; in rank 0's account of the job, each sample the slowest
/// rank's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSize {
    pub bytes: usize,
    pub samples_ns: Vec<f64>,
}

/// The variable that gives every rank of a job the same secret: rank 0 turns away a hello
/// without it. The scheduler's job id is no secret: without a token, anyone who can reach rank
/// 0's port and knows the id could take a rank's place before it joins.
pub const TOKEN_VAR: &str = "STACKBENCH_RENDEZVOUS_TOKEN";

/// A rendezvous token: compared in constant time, never printed.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Token(String);

impl Token {
    /// The token `value` gives: 16 to 256 bytes (a random 128-bit value in hex is 32), else
    /// `None`.
    pub fn new(value: String) -> Option<Token> {
        (16..=256).contains(&value.len()).then_some(Token(value))
    }

    /// Whether `other` is the same token, in time that does not depend on where they differ.
    pub fn matches(&self, other: Option<&Token>) -> bool {
        let Some(other) = other else {
            return false;
        };
        let (a, b) = (self.0.as_bytes(), other.0.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

/// Each node with its ranks, in the order of their first rank: `sim1 (ranks 0-3), sim2 (ranks
/// 4-7)`; `hosts` is each rank's node, by rank.
pub fn placement(hosts: &[String]) -> String {
    let mut by_host: Vec<(&str, Vec<u32>)> = Vec::new();
    for (rank, host) in hosts.iter().enumerate() {
        match by_host.iter_mut().find(|(h, _)| h == host) {
            Some((_, ranks)) => ranks.push(rank as u32),
            None => by_host.push((host, vec![rank as u32])),
        }
    }
    by_host
        .iter()
        .map(|(host, ranks)| format!("{host} (ranks {})", ranges(ranks)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many nodes `hosts` (each rank's node) name.
pub fn node_count(hosts: &[String]) -> usize {
    let mut nodes: Vec<&String> = hosts.iter().collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes.len()
}

/// Ranks as runs: `0-3, 5, 7-8`.
pub fn ranges(ranks: &[u32]) -> String {
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for rank in sorted {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == rank => *end = rank,
            _ => runs.push((rank, rank)),
        }
    }
    runs.iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranks_read_as_runs() {
        assert_eq!(super::ranges(&[7, 0, 1, 2, 3, 5, 8]), "0-3, 5, 7-8");
        assert_eq!(super::ranges(&[]), "");
    }
}
