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
