//! What NCCL says of itself with `NCCL_DEBUG=INFO`: the transport of every ring edge
//! (`Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM`), the algorithm and protocol of each collective
//! (`AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE ...`, NCCL 2.23 and later; rank 0's
//! `1048576 Bytes -> Algo 1 proto 2 time ...` before), the settings it took from the
//! environment, and its warnings.
//!
//! The worker's parent makes a private directory for these lines ([`LogDir`]) and tells NCCL to
//! write them there, one file a worker process; the worker reads its own ([`DebugLog`]). NCCL
//! would otherwise print them on standard output. The parent, not the worker, removes the
//! directory: a worker that crashes, hangs or is killed cannot.

use crate::lifetime::Scratch;
use crate::trust::identity::Identity;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;

/// The subsystems asked for: INIT (transports), GRAPH (rings), TUNING (algorithms), ENV, NET
/// (the network between nodes: which one, its devices, GPUDirect RDMA).
pub const SUBSYS: &str = "INIT,GRAPH,TUNING,ENV,NET";
/// The most of the log read back: its last 4 MiB.
const MOST: u64 = 4 << 20;
/// The log's file in its directory; NCCL puts the process's id for `%p`.
const FILE: &str = "nccl.%p.log";

/// Whether a worker running the checks `ids` reads NCCL's debug log: any NCCL check past the
/// library's load.
pub fn wanted(ids: &[String]) -> bool {
    ids.iter()
        .any(|id| id.starts_with("nccl.") && id != "nccl.load")
}

/// The directory of a combination's workers' NCCL debug logs, made by their parent: writable by
/// the workers' user alone, removed when dropped or when a signal ends the run.
pub struct LogDir(Scratch);

impl LogDir {
    /// A directory for workers that run as `user` (as ourselves when `None`).
    pub fn new(user: Option<&Identity>) -> std::io::Result<LogDir> {
        let dir = Scratch::new("stackbench-nccl-", 0o700)?;
        Ok(LogDir(dir.made_over(user.map(|u| (u.uid, u.gid)))?))
    }

    /// The worker's settings for NCCL (over the user's own for these three): `NCCL_DEBUG=INFO`,
    /// [`SUBSYS`], and `NCCL_DEBUG_FILE` in this directory.
    pub fn settings(&self) -> [(&'static str, OsString); 3] {
        [
            ("NCCL_DEBUG", "INFO".into()),
            ("NCCL_DEBUG_SUBSYS", SUBSYS.into()),
            ("NCCL_DEBUG_FILE", self.0.path().join(FILE).into()),
        ]
    }
}

/// This worker's NCCL debug log, where its parent's [`LogDir`] put it.
pub struct DebugLog {
    path: PathBuf,
}

impl DebugLog {
    /// The log the parent set up (`NCCL_DEBUG_FILE` ending in our [`FILE`]) for this process;
    /// `None` when it set up none.
    pub fn of_this_process() -> Option<DebugLog> {
        let file = PathBuf::from(std::env::var_os("NCCL_DEBUG_FILE")?);
        let dir = file
            .parent()
            .filter(|_| file.file_name() == Some(FILE.as_ref()))?;
        let name = FILE.replace("%p", &std::process::id().to_string());
        Some(DebugLog {
            path: dir.join(name),
        })
    }

    /// What NCCL has written so far (its last 4 MiB), parsed.
    pub fn read(&self) -> Result<Seen, String> {
        let path = &self.path;
        let (mut file, len) = crate::hostfs::open(path)
            .map_err(|e| format!("NCCL wrote no debug log at {}: {e}", path.display()))?;
        if len > MOST {
            use std::io::Seek;
            file.seek(std::io::SeekFrom::Start(len - MOST))
                .map_err(|e| e.to_string())?;
        }
        let mut bytes = Vec::new();
        file.take(MOST)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(parse(&String::from_utf8_lossy(&bytes)))
    }
}

/// How NCCL moves data over one ring edge, by the first part of its `via`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// `P2P/...`: peer to peer over NVLink or PCIe (CUMEM, IPC, direct pointers).
    P2p,
    /// `SHM/...`: staged through host shared memory.
    Shm,
    /// `NET/...`: through a network transport (sockets, IB).
    Net,
    /// Anything else NCCL names.
    Other,
}

impl Transport {
    fn of(via: &str) -> Transport {
        match via.split('/').next().unwrap_or_default() {
            "P2P" => Transport::P2p,
            "SHM" => Transport::Shm,
            "NET" => Transport::Net,
            _ => Transport::Other,
        }
    }

    /// Whether this transport stages through the host or a network: several times slower than
    /// P2P between GPUs that can reach each other.
    pub fn is_fallback(self) -> bool {
        matches!(self, Transport::Shm | Transport::Net)
    }
}

/// One ring edge as NCCL reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    pub from_rank: u32,
    pub to_rank: u32,
    pub transport: Transport,
    /// NCCL's words after `via` (`P2P/CUMEM/read`).
    pub via: String,
    /// The line that says so.
    pub line: String,
}

/// An algorithm and protocol NCCL chose for a collective at a size.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Choice {
    /// NCCL's name of the collective (`AllReduce`); absent in NCCL before 2.23's lines.
    pub collective: Option<String>,
    pub bytes: u64,
    /// `RING`, `TREE`, `NVLS`, ...
    pub algorithm: String,
    /// `SIMPLE`, `LL`, `LL128`.
    pub protocol: String,
}

/// What the log showed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Seen {
    /// `NCCL version 2.28.9+cuda13.0`, as NCCL printed it.
    pub version: Option<String>,
    /// Each ordered pair of ranks' slowest transport over every channel.
    pub edges: Vec<Edge>,
    pub choices: Vec<Choice>,
    /// Settings NCCL took from the environment (`NCCL_P2P_DISABLE set by environment to 1.`).
    pub environment: Vec<String>,
    /// `NCCL WARN` lines.
    pub warnings: Vec<String>,
    /// The network between nodes NCCL chose (`Using network IB`): `IB`, `Socket`, a plugin's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// What NCCL said of that network: its devices (`NET/IB : Using [0]mlx5_0:1/IB ...`),
    /// GPUDirect RDMA (`NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'`), rdma-core
    /// (`Failed to open libibverbs.so[.1]`), a plugin (`NET/Plugin ...`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub net: Vec<String>,
}

impl Seen {
    /// `NCCL_NET` as NCCL said it took it (`NCCL_NET set by environment to IB.`).
    pub fn forced_net(&self) -> Option<String> {
        (self.environment.iter()).find_map(|line| {
            let value = line.strip_prefix("NCCL_NET set by environment to ")?;
            Some(value.trim().trim_end_matches('.').to_owned())
        })
    }
}

/// Reads NCCL's debug lines; lines of any other shape are passed over.
pub fn parse(text: &str) -> Seen {
    let mut seen = Seen::default();
    let mut edges: BTreeMap<(u32, u32), Edge> = BTreeMap::new();
    // What is already listed, so that a log of millions of lines costs one look-up a line.
    let mut environment = std::collections::HashSet::new();
    let mut choices = std::collections::HashSet::new();
    for line in text.lines() {
        if let Some((_, warning)) = line.split_once(" NCCL WARN ") {
            seen.warnings.push(warning.trim().to_owned());
            continue;
        }
        let Some((_, info)) = line.split_once(" NCCL INFO ") else {
            continue;
        };
        let info = info.trim();
        if let Some(version) = info.strip_prefix("NCCL version ") {
            seen.version.get_or_insert_with(|| version.to_owned());
        } else if let Some(network) = info.strip_prefix("Using network ") {
            seen.network
                .get_or_insert_with(|| network.trim().to_owned());
        } else if is_net(info) {
            if !seen.net.iter().any(|n| n == info) && seen.net.len() < 64 {
                seen.net.push(info.to_owned());
            }
        } else if info.contains(" set by environment to ") {
            if environment.insert(info) {
                seen.environment.push(info.to_owned());
            }
        } else if let Some(edge) = edge(info) {
            let key = (edge.from_rank, edge.to_rank);
            match edges.get(&key) {
                Some(known) if known.transport >= edge.transport => {}
                _ => {
                    edges.insert(key, edge);
                }
            }
        } else if let Some(choice) = choice(info) {
            if choices.insert(choice.clone()) {
                seen.choices.push(choice);
            }
        }
    }
    seen.edges = edges.into_values().collect();
    seen
}

/// Whether `info` is NCCL's word on its network between nodes (not a ring edge over it).
fn is_net(info: &str) -> bool {
    (info.starts_with("NET/") && !info.contains(" via "))
        || info.starts_with("Failed to open libibverbs")
        || info.contains("GPU Direct RDMA")
}

/// `Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read` (or `Channel 00 : 0[1a000] -> ...`).
fn edge(info: &str) -> Option<Edge> {
    let rest = info.strip_prefix("Channel ")?;
    let (_, rest) = rest.split_once(" : ")?;
    let (from, rest) = rest.split_once(" -> ")?;
    let (to, via) = rest.split_once(" via ")?;
    let rank = |s: &str| s.split('[').next()?.trim().parse::<u32>().ok();
    let via = via.split_whitespace().next()?.to_owned();
    Some(Edge {
        from_rank: rank(from)?,
        to_rank: rank(to)?,
        transport: Transport::of(&via),
        via,
        line: info.to_owned(),
    })
}

/// `AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}`, or before
/// NCCL 2.23 `1048576 Bytes -> Algo 1 proto 2 time 36.2`.
fn choice(info: &str) -> Option<Choice> {
    let (head, tail) = info.split_once(" Bytes -> Algo ")?;
    let (collective, bytes) = match head.rsplit_once(": ") {
        Some((name, bytes)) => (Some(name.trim().to_owned()), bytes),
        None => (None, head),
    };
    let mut words = tail.split_whitespace();
    let algorithm = words.next()?;
    let protocol = (words.next()? == "proto").then(|| words.next())??;
    Some(Choice {
        collective,
        bytes: bytes.trim().parse().ok()?,
        algorithm: algorithm_name(algorithm),
        protocol: protocol_name(protocol),
    })
}

/// NCCL's algorithm by name, its number (`NCCL_ALGO_*` in NCCL's order) turned into one.
fn algorithm_name(word: &str) -> String {
    const NAMES: [&str; 7] = [
        "TREE",
        "RING",
        "COLLNET_DIRECT",
        "COLLNET_CHAIN",
        "NVLS",
        "NVLS_TREE",
        "PAT",
    ];
    named(word, &NAMES)
}

/// NCCL's protocol by name (`NCCL_PROTO_*`: LL, LL128, SIMPLE).
fn protocol_name(word: &str) -> String {
    named(word, &["LL", "LL128", "SIMPLE"])
}

fn named(word: &str, names: &[&str]) -> String {
    word.parse::<usize>()
        .ok()
        .and_then(|i| names.get(i))
        .map_or_else(|| word.to_owned(), |name| (*name).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
node1:4242:4242 [0] NCCL INFO NCCL version 2.27.7+cuda12.9
node1:4242:4242 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1.
node1:4242:4250 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
node1:4242:4250 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/read
node1:4242:4250 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via SHM/direct/direct
node1:4242:4250 [1] NCCL INFO Channel 02/0 : 1[1] -> 0[0] via P2P/CUMEM/read
node1:4242:4250 [0] NCCL INFO Channel 00 : 0[1a000] -> 2[3d000] via NET/Socket/0
node1:4242:4242 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}
node1:4242:4242 [0] NCCL INFO 8 Bytes -> Algo 0 proto 0 time 12.5
node1:4242:4242 [0] NCCL INFO Connected all rings
node1:4242:4242 [0] NCCL WARN Cuda failure 'out of memory'
garbage without the marker
";

    #[test]
    fn each_pair_keeps_its_slowest_transport_with_its_line() {
        let seen = parse(LOG);
        let edge = |a, b| {
            seen.edges
                .iter()
                .find(|e| (e.from_rank, e.to_rank) == (a, b))
        };
        assert_eq!(edge(0, 1).unwrap().transport, Transport::P2p);
        let back = edge(1, 0).unwrap();
        assert_eq!(back.transport, Transport::Shm);
        assert_eq!(back.via, "SHM/direct/direct");
        assert!(back.line.starts_with("Channel 01/0 : 1[1] -> 0[0]"));
        assert_eq!(edge(0, 2).unwrap().transport, Transport::Net);
        assert_eq!(seen.edges.len(), 3);
    }

    #[test]
    fn algorithms_by_name_and_by_number() {
        let seen = parse(LOG);
        assert_eq!(
            seen.choices,
            vec![
                Choice {
                    collective: Some("AllReduce".into()),
                    bytes: 1 << 20,
                    algorithm: "RING".into(),
                    protocol: "SIMPLE".into()
                },
                Choice {
                    collective: None,
                    bytes: 8,
                    algorithm: "TREE".into(),
                    protocol: "LL".into()
                }
            ]
        );
    }

    #[test]
    fn version_environment_and_warnings() {
        let seen = parse(LOG);
        assert_eq!(seen.version.as_deref(), Some("2.27.7+cuda12.9"));
        assert_eq!(
            seen.environment,
            vec!["NCCL_P2P_DISABLE set by environment to 1."]
        );
        assert_eq!(seen.warnings, vec!["Cuda failure 'out of memory'"]);
    }

    #[test]
    fn the_network_between_nodes_and_what_nccl_said_of_it() {
        let log = "\
n2:7:7 [0] NCCL INFO Failed to open libibverbs.so[.1]
n2:7:7 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.3<0>
n2:7:7 [0] NCCL INFO Using network Socket
n2:7:9 [0] NCCL INFO Channel 00/0 : 3[3] -> 4[0] [send] via NET/Socket/0
n1:6:6 [1] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'
";
        let seen = parse(log);
        assert_eq!(seen.network.as_deref(), Some("Socket"));
        assert_eq!(seen.net.len(), 3, "{:?}", seen.net);
        assert!(seen.net[0].starts_with("Failed to open libibverbs"));
        assert_eq!(seen.edges[0].via, "NET/Socket/0");
        assert_eq!((seen.edges[0].from_rank, seen.edges[0].to_rank), (3, 4));
    }

    #[test]
    fn fallbacks_are_shm_and_network() {
        assert!(Transport::Shm.is_fallback() && Transport::Net.is_fallback());
        assert!(!Transport::P2p.is_fallback() && !Transport::Other.is_fallback());
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_without_panicking(text in ".{0,400}") {
            let _ = parse(&text);
        }
    }
}
