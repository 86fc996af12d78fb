//! Which rank of which job this process is, read from the scheduler that started it: torchrun's
//! variables (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`), Slurm's
//! (`SLURM_PROCID`, `SLURM_NTASKS`, `SLURM_LOCALID`, `SLURMD_NODENAME`, the step's node list
//! and tasks per node), or a Kubernetes Indexed Job's (`JOB_COMPLETION_INDEX` for the rank,
//! `WORLD_SIZE` and `MASTER_ADDR`, the headless service name of pod 0, from its manifest).
//! torchrun's win where several are set: it runs under Slurm and renumbers the ranks.

use serde::{Deserialize, Serialize};

/// The port torchrun's rendezvous uses when `MASTER_PORT` is not set.
pub const DEFAULT_PORT: u16 = 29500;
/// The most ranks one job may have: a bound on everything sized by the world.
pub const MOST_RANKS: u32 = 65536;

/// The scheduler that started the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheduler {
    Torchrun,
    Slurm,
    Kubernetes,
}

/// This process's place in its job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct World {
    pub scheduler: Scheduler,
    pub rank: u32,
    pub size: u32,
    /// Its rank among the job's processes on this node: which of the node's GPUs it takes.
    pub local_rank: u32,
    /// This node's name as the scheduler knows it.
    pub host: String,
    /// The job's identity: ranks of another job are turned away at the rendezvous.
    pub job: String,
    /// Where rank 0 listens: `MASTER_ADDR`, else the first node of a Slurm step.
    pub rendezvous: Option<(String, u16)>,
    /// The node each rank is placed on, by rank, when the scheduler says (Slurm); empty else.
    pub hosts: Vec<String>,
}

/// Why the environment gives no usable world.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorldError {
    #[error("check --nodes runs as one process per GPU under a scheduler, and none started this one: run it with `srun --ntasks-per-node=<GPUs per node> stackbench check --nodes`, with torchrun-style variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), or in a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with WORLD_SIZE and MASTER_ADDR in its manifest)")]
    NoScheduler,
    #[error("{name}={value} is not {what}; fix the job's environment")]
    Invalid {
        name: &'static str,
        value: String,
        what: &'static str,
    },
    #[error("{name} is not set, and {scheduler} needs it for check --nodes; {fix}")]
    Missing {
        name: &'static str,
        scheduler: &'static str,
        fix: &'static str,
    },
    #[error("rank {rank} is not below the job's {size} rank(s) (at most {MOST_RANKS}); fix the job's environment")]
    RankOutOfRange { rank: u32, size: u32 },
}

impl World {
    /// The world `var` describes (each name to its value), on a node whose host name is
    /// `hostname`.
    pub fn from_env(
        var: impl Fn(&str) -> Option<String>,
        hostname: &str,
    ) -> Result<World, WorldError> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let world = if var("RANK").is_some() && var("WORLD_SIZE").is_some() {
            torchrun(&var, hostname)?
        } else if var("SLURM_PROCID").is_some() {
            slurm(&var, hostname)?
        } else if var("JOB_COMPLETION_INDEX").is_some() {
            kubernetes(&var, hostname)?
        } else {
            return Err(WorldError::NoScheduler);
        };
        if world.size == 0 || world.size > MOST_RANKS || world.rank >= world.size {
            return Err(WorldError::RankOutOfRange {
                rank: world.rank,
                size: world.size,
            });
        }
        Ok(world)
    }

    /// Where rank `rank` runs, as far as the scheduler says.
    pub fn host_of(&self, rank: u32) -> Option<&str> {
        self.hosts.get(rank as usize).map(String::as_str)
    }
}

/// This machine's host name (up to its first dot), `localhost` when it has none.
pub fn this_host() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length.
    let ok = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) } == 0;
    let end = buffer.iter().position(|&b| b == 0 || b == b'.');
    let name = String::from_utf8_lossy(&buffer[..end.unwrap_or(buffer.len())]).into_owned();
    if ok && !name.is_empty() {
        name
    } else {
        "localhost".to_owned()
    }
}

/// `name`'s value as a number, if set.
fn number(
    var: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<u32>, WorldError> {
    var(name)
        .map(|value| {
            value.trim().parse().map_err(|_| WorldError::Invalid {
                name,
                value,
                what: "a whole number",
            })
        })
        .transpose()
}

/// `MASTER_ADDR` and `MASTER_PORT` (29500 when unset).
fn master(var: &impl Fn(&str) -> Option<String>) -> Result<Option<(String, u16)>, WorldError> {
    let Some(address) = var("MASTER_ADDR") else {
        return Ok(None);
    };
    let port = match var("MASTER_PORT") {
        None => DEFAULT_PORT,
        Some(value) => value.trim().parse().map_err(|_| WorldError::Invalid {
            name: "MASTER_PORT",
            value,
            what: "a TCP port",
        })?,
    };
    Ok(Some((address.trim().to_owned(), port)))
}

fn torchrun(var: &impl Fn(&str) -> Option<String>, hostname: &str) -> Result<World, WorldError> {
    let rendezvous = master(var)?.ok_or(WorldError::Missing {
        name: "MASTER_ADDR",
        scheduler: "torchrun",
        fix: "torchrun sets it; set it to rank 0's host when starting ranks another way",
    })?;
    Ok(World {
        scheduler: Scheduler::Torchrun,
        rank: number(var, "RANK")?.unwrap_or(0),
        size: number(var, "WORLD_SIZE")?.unwrap_or(0),
        local_rank: number(var, "LOCAL_RANK")?.unwrap_or(0),
        host: hostname.to_owned(),
        job: var("TORCHELASTIC_RUN_ID").unwrap_or_else(|| "torchrun".into()),
        rendezvous: Some(rendezvous),
        hosts: Vec::new(),
    })
}

fn slurm(var: &impl Fn(&str) -> Option<String>, hostname: &str) -> Result<World, WorldError> {
    let size = number(var, "SLURM_STEP_NUM_TASKS")?
        .or(number(var, "SLURM_NTASKS")?)
        .ok_or(WorldError::Missing {
            name: "SLURM_NTASKS",
            scheduler: "Slurm",
            fix: "run it with srun, which sets it for every task",
        })?;
    let nodes = var("SLURM_STEP_NODELIST").or_else(|| var("SLURM_JOB_NODELIST"));
    let tasks = var("SLURM_STEP_TASKS_PER_NODE").or_else(|| var("SLURM_TASKS_PER_NODE"));
    let hosts = match (nodes, tasks) {
        (Some(nodes), Some(tasks)) => placement(&nodes, &tasks, size).unwrap_or_default(),
        _ => Vec::new(),
    };
    let step = var("SLURM_STEP_ID").unwrap_or_else(|| "0".into());
    let job = var("SLURM_JOB_ID").unwrap_or_else(|| "slurm".into());
    let rendezvous = match master(var)? {
        Some(at) => Some(at),
        None => hosts.first().map(|h| (h.clone(), DEFAULT_PORT)),
    };
    Ok(World {
        scheduler: Scheduler::Slurm,
        rank: number(var, "SLURM_PROCID")?.unwrap_or(0),
        size,
        local_rank: number(var, "SLURM_LOCALID")?.unwrap_or(0),
        host: var("SLURMD_NODENAME").unwrap_or_else(|| hostname.to_owned()),
        job: format!("{job}.{step}"),
        rendezvous,
        hosts,
    })
}

fn kubernetes(var: &impl Fn(&str) -> Option<String>, hostname: &str) -> Result<World, WorldError> {
    const FIX: &str = "set it in the Indexed Job's manifest (WORLD_SIZE: the completions x GPUs per pod; MASTER_ADDR: pod 0's name under the job's headless service)";
    let size = number(var, "WORLD_SIZE")?.ok_or(WorldError::Missing {
        name: "WORLD_SIZE",
        scheduler: "a Kubernetes Indexed Job",
        fix: FIX,
    })?;
    let rendezvous = master(var)?.ok_or(WorldError::Missing {
        name: "MASTER_ADDR",
        scheduler: "a Kubernetes Indexed Job",
        fix: FIX,
    })?;
    Ok(World {
        scheduler: Scheduler::Kubernetes,
        rank: number(var, "JOB_COMPLETION_INDEX")?.unwrap_or(0),
        size,
        local_rank: number(var, "LOCAL_RANK")?.unwrap_or(0),
        host: hostname.to_owned(),
        job: var("JOB_NAME").unwrap_or_else(|| "kubernetes".into()),
        rendezvous: Some(rendezvous),
        hosts: Vec::new(),
    })
}

/// Each rank's node under Slurm's default block distribution: the first node's tasks are
/// ranks 0.., the next node's follow. `None` when the two lists do not add up to `size` ranks.
fn placement(nodes: &str, tasks: &str, size: u32) -> Option<Vec<String>> {
    let nodes = expand_hostlist(nodes)?;
    let mut counts = Vec::new();
    for part in tasks.split(',') {
        let (count, times) = match part.split_once("(x") {
            Some((count, times)) => (count, times.strip_suffix(')')?.parse::<usize>().ok()?),
            None => (part, 1),
        };
        let count: u32 = count.trim().parse().ok()?;
        if counts.len() + times > nodes.len() {
            return None;
        }
        counts.extend(std::iter::repeat_n(count, times));
    }
    if counts.len() != nodes.len()
        || counts.iter().map(|&c| u64::from(c)).sum::<u64>() != u64::from(size)
    {
        return None;
    }
    Some(
        nodes
            .iter()
            .zip(counts)
            .flat_map(|(node, count)| std::iter::repeat_n(node.clone(), count as usize))
            .collect(),
    )
}

/// Slurm's compressed host list (`gpu[01-03,07],login1`) written out, in order; `None` for a
/// list it cannot read, or one of more than [`MOST_RANKS`] names.
pub fn expand_hostlist(list: &str) -> Option<Vec<String>> {
    let mut hosts = Vec::new();
    let mut rest = list.trim();
    while !rest.is_empty() {
        // A name runs to the next comma outside brackets.
        let end = {
            let mut depth = 0i32;
            rest.char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '[' => 1,
                        ']' => -1,
                        _ => 0,
                    };
                    c == ',' && depth == 0
                })
                .map_or(rest.len(), |(i, _)| i)
        };
        let item = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or("");
        match item.split_once('[') {
            None => hosts.push(item.to_owned()),
            Some((prefix, tail)) => {
                let (ranges, suffix) = tail.split_once(']')?;
                for range in ranges.split(',') {
                    let (low, high) = range.split_once('-').unwrap_or((range, range));
                    let width = low.len();
                    let (low, high): (u64, u64) = (low.parse().ok()?, high.parse().ok()?);
                    if high < low || high - low >= u64::from(MOST_RANKS) {
                        return None;
                    }
                    for n in low..=high {
                        hosts.push(format!("{prefix}{n:0width$}{suffix}"));
                        if hosts.len() > MOST_RANKS as usize {
                            return None;
                        }
                    }
                }
            }
        }
        if hosts.len() > MOST_RANKS as usize {
            return None;
        }
    }
    Some(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn world(pairs: &[(&str, &str)]) -> Result<World, WorldError> {
        let env: HashMap<&str, &str> = pairs.iter().copied().collect();
        World::from_env(|name| env.get(name).map(|v| (*v).to_owned()), "box7")
    }

    #[test]
    fn slurm_places_every_rank_on_its_node_and_rendezvouses_at_the_first() {
        let w = world(&[
            ("SLURM_PROCID", "5"),
            ("SLURM_NTASKS", "8"),
            ("SLURM_LOCALID", "1"),
            ("SLURMD_NODENAME", "sim2"),
            ("SLURM_JOB_ID", "42"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_JOB_NODELIST", "sim[1-2]"),
            ("SLURM_TASKS_PER_NODE", "4(x2)"),
        ])
        .unwrap();
        assert_eq!((w.rank, w.size, w.local_rank), (5, 8, 1));
        assert_eq!(w.host, "sim2");
        assert_eq!(w.job, "42.0");
        assert_eq!(w.host_of(3), Some("sim1"));
        assert_eq!(w.host_of(4), Some("sim2"));
        assert_eq!(w.rendezvous, Some(("sim1".into(), DEFAULT_PORT)));
    }

    #[test]
    fn torchrun_wins_over_slurm_and_master_addr_over_the_first_node() {
        let w = world(&[
            ("RANK", "3"),
            ("WORLD_SIZE", "16"),
            ("LOCAL_RANK", "3"),
            ("MASTER_ADDR", "10.0.0.1"),
            ("MASTER_PORT", "1234"),
            ("SLURM_PROCID", "0"),
        ])
        .unwrap();
        assert_eq!(w.scheduler, Scheduler::Torchrun);
        assert_eq!((w.rank, w.size, w.local_rank), (3, 16, 3));
        assert_eq!(w.rendezvous, Some(("10.0.0.1".into(), 1234)));
        assert_eq!(w.host, "box7");
    }

    #[test]
    fn an_indexed_job_needs_its_size_and_rendezvous_from_the_manifest() {
        let w = world(&[
            ("JOB_COMPLETION_INDEX", "2"),
            ("WORLD_SIZE", "4"),
            ("MASTER_ADDR", "bench-0.bench"),
        ])
        .unwrap();
        assert_eq!((w.scheduler, w.rank, w.size), (Scheduler::Kubernetes, 2, 4));
        let missing = world(&[("JOB_COMPLETION_INDEX", "2"), ("WORLD_SIZE", "4")]);
        assert!(matches!(
            missing,
            Err(WorldError::Missing {
                name: "MASTER_ADDR",
                ..
            })
        ));
    }

    #[test]
    fn nothing_bad_or_out_of_range_is_a_world() {
        assert_eq!(world(&[]), Err(WorldError::NoScheduler));
        assert!(matches!(
            world(&[("SLURM_PROCID", "x"), ("SLURM_NTASKS", "2")]),
            Err(WorldError::Invalid {
                name: "SLURM_PROCID",
                ..
            })
        ));
        assert_eq!(
            world(&[("SLURM_PROCID", "2"), ("SLURM_NTASKS", "2")]),
            Err(WorldError::RankOutOfRange { rank: 2, size: 2 })
        );
        let bad_port = world(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "a"),
            ("MASTER_PORT", "99999"),
        ]);
        assert!(matches!(
            bad_port,
            Err(WorldError::Invalid {
                name: "MASTER_PORT",
                ..
            })
        ));
    }

    #[test]
    fn host_lists_expand_as_slurm_writes_them() {
        assert_eq!(
            expand_hostlist("gpu[01-03,07],login1").unwrap(),
            ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]
        );
        assert_eq!(expand_hostlist("a[1-2]-ib").unwrap(), ["a1-ib", "a2-ib"]);
        assert_eq!(expand_hostlist("n[0-99999999]"), None);
        assert_eq!(expand_hostlist("n[3-1]"), None);
        assert_eq!(placement("a,b", "2,1", 3).unwrap(), ["a", "a", "b"]);
        assert_eq!(placement("a,b", "2(x2)", 3), None);
        assert_eq!(placement("a", "1(x5)", 5), None);
    }

    proptest::proptest! {
        #[test]
        fn any_host_list_reads_without_panicking(list in ".{0,60}", tasks in ".{0,20}") {
            let _ = placement(&list, &tasks, 8);
        }
    }
}
