//! The NCCL checks of `check --nodes`: this worker is one rank of a job across nodes, on its
//! one GPU. `nccl.init` meets the other ranks at the rendezvous, shares rank 0's unique id and
//! joins the communicator (`ncclCommInitRank`); each collective is verified on every rank for
//! that rank's part of the whole job and timed at the largest size; `nccl.transport` gathers
//! every rank's account of its ring edges and of the network between nodes. Every rank sends
//! its verdict of each check to rank 0, whose worker's results are the job's.

use super::driver;
use super::outcome::{Checked, Outcome};
use super::session::Session;
use crate::check::protocol::Component;
use crate::cluster::fabric::{self, Ceiling};
use crate::cluster::findings::{MissingRank, PeerEdge, RankNet};
use crate::cluster::pairs::{self, PairRun};
use crate::cluster::rendezvous::{self, Hello, NotGathered, Root, START_GRACE};
use crate::cluster::{placement, ranges, SweepSize, WorldRequest};
use crate::nccl::api::{Nccl, UniqueId};
use crate::nccl::member::{self, Member};
use crate::nccl::{self, collective, log::DebugLog};
use crate::schema::check::Status;
use collective::Collective;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Runs of the largest size timed for bus bandwidth (nccl-tests' `-n`).
const TIMED_RUNS: u64 = 5;

/// `bench --nodes`: runs back to back in one sample on a GPU (nccl-tests' `-n`), and runs
/// before a size's first sample (nccl-tests' `-w`). On the simulated driver one of each: its
/// collectives have no clock to ramp and each run costs the host's CPU every rank's output.
const SWEEP_RUNS: u64 = 20;
const SWEEP_WARM_UP: u64 = 5;

/// This rank's way to rank 0, or rank 0's to every other rank.
enum Link {
    Root(Root),
    Member(rendezvous::Member),
}

/// What `nccl.init` leaves for the checks after it.
struct Joined {
    nccl: Nccl,
    member: Member,
    link: Link,
    world: WorldRequest,
    /// Each rank's node, by rank.
    hosts: Vec<String>,
    sizes: Vec<usize>,
    /// On rank 0: what the links between the nodes allow, where sysfs says.
    ceiling: Option<Ceiling>,
    simulated: bool,
}

/// One rank's verdict on a check, as it sends it to rank 0.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Said {
    status: Status,
    reason: String,
    details: BTreeMap<String, Value>,
}

impl From<&Outcome> for Said {
    fn from(o: &Outcome) -> Said {
        Said {
            status: o.status,
            reason: o.reason.clone(),
            details: o.details.clone(),
        }
    }
}

/// Every rank's verdict on one check, by rank (rank 0's own first).
type Verdicts = Vec<(u32, Result<Said, String>)>;

/// Sends this rank's `mine` of `step` to rank 0 and answers it; on rank 0, gathers every rank's
/// and answers what `combine` makes of them all.
fn exchange(
    link: &mut Link,
    world: &WorldRequest,
    step: &str,
    mine: Outcome,
    combine: impl FnOnce(Verdicts) -> Outcome,
) -> Outcome {
    match link {
        Link::Member(member) => match member.report(step, json!(Said::from(&mine))) {
            Ok(()) => mine,
            Err(e) => Outcome::fail(format!(
                "{}; and its report could not reach rank 0: {e}",
                mine.reason
            )),
        },
        Link::Root(root) => {
            let deadline = Instant::now() + Duration::from_millis(world.step_ms);
            let mut all: Verdicts = vec![(0, Ok(Said::from(&mine)))];
            all.extend(
                root.collect(step, deadline)
                    .into_iter()
                    .map(|(rank, said)| {
                        let said = said.and_then(|v| {
                            serde_json::from_value::<Said>(v)
                                .map_err(|e| format!("an unreadable report: {e}"))
                        });
                        (rank, said)
                    }),
            );
            combine(all)
        }
    }
}

/// `rank 5 (sim2)`.
fn who(hosts: &[String], rank: u32) -> String {
    match hosts.get(rank as usize) {
        Some(host) => format!("rank {rank} ({host})"),
        None => format!("rank {rank}"),
    }
}

/// Rank 0's verdict when every rank must pass: the ranks that did not, by name, else `pass`.
fn all_pass(all: &Verdicts, hosts: &[String], pass: impl FnOnce() -> Outcome) -> Outcome {
    let bad: Vec<String> = all
        .iter()
        .filter_map(|(rank, said)| match said {
            Ok(s) if s.status.satisfies() => None,
            Ok(s) => Some(format!("{}: {}", who(hosts, *rank), s.reason)),
            Err(e) => Some(format!("{}: no report ({e})", who(hosts, *rank))),
        })
        .collect();
    if bad.is_empty() {
        return pass();
    }
    let mut reason = format!(
        "{} of {} rank(s) did not pass: {}",
        bad.len(),
        all.len(),
        bad.iter().take(4).cloned().collect::<Vec<_>>().join("; ")
    );
    if bad.len() > 4 {
        reason.push_str(&format!("; and {} more", bad.len() - 4));
    }
    Outcome::fail(reason)
}

/// `nccl.init` for a rank of a job.
pub fn init(s: &mut Session, world: WorldRequest) -> Checked {
    let library = s.library(Component::Nccl).map_err(Outcome::fail)?;
    let nccl = Nccl::bind(library).map_err(Outcome::fail)?;
    let version = (s.settled.iter())
        .find(|r| r.id == "nccl.load")
        .and_then(|r| r.details.get("version"))
        .and_then(|v| v.as_str())
        .unwrap_or("unknown")
        .to_owned();
    let simulated = s.driver.as_ref().is_some_and(driver::is_simulated);
    let size = world.world.size as usize;
    let step = world.sweep.map_or(nccl::STEP, |sweep| sweep.step);
    let sizes = collective::sizes(nccl::largest(simulated), step);
    let capacity = (Collective::ALL.iter())
        .flat_map(|c| sizes.iter().map(|&b| c.shape(b, size).bytes))
        .max()
        .unwrap_or(0);
    let w = &world.world;
    let hello = Hello {
        job: w.job.clone(),
        rank: w.rank,
        size: w.size,
        host: w.host.clone(),
        nccl: version,
        token: world.token.clone(),
    };
    let (host, port) = (&world.rendezvous.0, world.rendezvous.1);
    let at = format!("{host}:{port}");
    let deadline = Instant::now() + Duration::from_millis(world.join_ms);
    let (mut link, start) = if w.rank == 0 {
        gather(&nccl, &world, &hello, deadline)?
    } else {
        let mut member =
            rendezvous::Member::join(host, port, &hello, deadline).map_err(Outcome::fail)?;
        let start = member
            .started(deadline + START_GRACE)
            .map_err(Outcome::fail)?;
        (Link::Member(member), start)
    };
    let hosts: Vec<String> = serde_json::from_value(start["hosts"].clone()).unwrap_or_default();
    let id = (start["id"].as_str())
        .and_then(unhex)
        .map(|internal| UniqueId { internal })
        .ok_or_else(|| Outcome::fail("rank 0's start holds no NCCL unique id"))?;
    let device = s.request.device;
    let joined = Member::join(nccl, device, capacity, id, (w.rank as usize, size));
    let mine = match &joined {
        Ok(_) => Outcome::pass(format!(
            "{} joined the communicator on GPU {device}",
            who(&hosts, w.rank)
        )),
        Err(e) => not_joined(s, &world, e),
    }
    .detail(
        "ports",
        json!(fabric::active_ports(&crate::discover::Host::current())),
    );
    let (mut ceiling, mut failed) = (None, Vec::new());
    let outcome = exchange(&mut link, &world, "nccl.init", mine, |all| {
        ceiling = fabric::ceiling(&ports_by_host(&all, &hosts));
        failed = failed_networks(&all);
        all_pass(&all, &hosts, || {
            Outcome::pass(format!(
                "ncclCommInitRank made one communicator of {size} rank(s) on {}; {}",
                placement(&hosts),
                ceiling.as_ref().map_or_else(
                    || "no ceiling across nodes: a node without an active RDMA port in /sys/class/infiniband, or one node".to_owned(),
                    |c| format!("the links allow {} across nodes", c.describe())
                )
            ))
        })
    })
    .detail("ceiling", json!(ceiling))
    .detail("hosts", json!(hosts))
    .detail("rendezvous", at)
    .detail("buffer_bytes", capacity);
    let outcome = match failed.is_empty() {
        true => outcome,
        false => outcome.detail("failed", json!(failed)),
    };
    if let Ok(member) = joined {
        s.keep(Joined {
            nccl,
            member,
            link,
            world,
            hosts,
            sizes,
            ceiling,
            simulated,
        });
    }
    Ok(outcome)
}

/// Rank 0's side of the start: every rank joined before `deadline`, NCCL's unique id made, and
/// sent to each with every rank's node; else a failure naming the ranks that never came.
/// This rank's `nccl.init` when `ncclCommInitRank` failed: NCCL's last warning beside its
/// error code, and what it said of its network (for `nccl_net_unavailable`).
fn not_joined(s: &Session, world: &WorldRequest, error: &str) -> Outcome {
    let Ok((me, seen)) = rank_net(s, world) else {
        return Outcome::fail(error);
    };
    let reason = match seen.warnings.last() {
        Some(warning) => format!("{error}; NCCL says \"{warning}\""),
        None => error.to_owned(),
    };
    Outcome::fail(reason).detail("rank", json!(me))
}

fn gather(
    nccl: &Nccl,
    world: &WorldRequest,
    hello: &Hello,
    deadline: Instant,
) -> Result<(Link, Value), Outcome> {
    let (w, (host, port)) = (&world.world, &world.rendezvous);
    let mut root = match Root::gather(host, *port, hello, deadline) {
        Ok(root) => root,
        Err(NotGathered::Listen(why)) => return Err(Outcome::fail(why)),
        Err(NotGathered::Missing { ranks, turned_away }) => {
            let missing: Vec<MissingRank> = (ranks.iter())
                .map(|&rank| MissingRank {
                    rank,
                    host: w.host_of(rank).map(str::to_owned),
                })
                .collect();
            let mut on: Vec<&str> = (missing.iter())
                .map(|m| m.host.as_deref().unwrap_or("unplaced"))
                .collect();
            on.sort_unstable();
            on.dedup();
            return Err(Outcome::fail(format!(
                "rank(s) {} (on {}) never joined the rendezvous at {host}:{port} within {} s; the ranks that did were stopped",
                ranges(&ranks),
                on.join(", "),
                world.join_ms as f64 / 1e3
            ))
            .detail("missing", json!(missing))
            .detail("rendezvous", format!("{host}:{port}"))
            .detail("turned_away", json!(turned_away)));
        }
    };
    let id = member::unique_id(nccl).map_err(|e| {
        root.abort(&format!("rank 0 could not make NCCL's unique id: {e}"));
        Outcome::fail(e)
    })?;
    let hosts: Vec<String> = std::iter::once(w.host.clone())
        .chain(root.hellos().map(|h| h.host.clone()))
        .collect();
    let start = json!({"id": hex(&id.internal), "hosts": hosts});
    if let Some((rank, e)) = root.start(&start).first() {
        root.abort("a rank could not be sent the start");
        return Err(Outcome::fail(format!(
            "rank 0 could not send rank {rank} the start: {e}"
        )));
    }
    Ok((Link::Root(root), start))
}

/// Each node's active RDMA ports, as its first rank to report them saw them.
/// The network of each rank whose `ncclCommInitRank` failed, as it said (`nccl_net_unavailable`
/// reads them).
fn failed_networks(all: &Verdicts) -> Vec<RankNet> {
    (all.iter())
        .filter_map(|(_, said)| said.as_ref().ok())
        .filter(|said| !said.status.satisfies())
        .filter_map(|said| serde_json::from_value(said.details.get("rank")?.clone()).ok())
        .collect()
}

fn ports_by_host(all: &Verdicts, hosts: &[String]) -> Vec<(String, Vec<fabric::Port>)> {
    let mut nodes: Vec<(String, Vec<fabric::Port>)> = Vec::new();
    for (rank, said) in all {
        let (Some(host), Ok(said)) = (hosts.get(*rank as usize), said) else {
            continue;
        };
        if nodes.iter().any(|(h, _)| h == host) {
            continue;
        }
        let ports = (said.details.get("ports"))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        nodes.push((host.clone(), ports));
    }
    nodes
}

fn joined(s: &mut Session) -> Result<&mut Joined, Outcome> {
    s.kept_mut::<Joined>()
        .ok_or_else(|| Outcome::fail("no communicator: nccl.init did not pass in this worker"))
}

/// `nccl.all_reduce` and the others, across the job: this rank's output verified at every
/// size, then `TIMED_RUNS` at the largest timed; rank 0 answers for every rank, with the bus
/// bandwidth of the slowest.
pub fn verify(s: &mut Session, collective: Collective) -> Checked {
    let j = joined(s)?;
    // Every rank calls every collective whatever its own output was: NCCL matches the calls
    // of all ranks in order, so one rank stopping early would hang or mismatch the others.
    let mut wrong = None;
    let mut verified = Vec::new();
    for &bytes in &j.sizes {
        match j.member.verify(collective, bytes) {
            Ok(v) => verified.push(v.shape.bytes),
            Err(e) => {
                let shape = j.member.shape(collective, bytes);
                wrong.get_or_insert(format!("at {} B: {e}", shape.map_or(bytes, |s| s.bytes)));
            }
        }
    }
    let largest = *j.sizes.last().unwrap_or(&8);
    // Every rank times every size whatever its own verification said: a rank that stopped
    // calling would leave the others waiting in the collective.
    let timed = j.member.time_runs(collective, largest, TIMED_RUNS);
    let swept = (j.world.sweep).map(|sweep| time_sweep(j, collective, sweep.samples));
    let mine = match (wrong, timed, swept) {
        (Some(wrong), _, _) => Outcome::fail(wrong),
        (None, Err(e), _) | (None, _, Some(Err(e))) => Outcome::fail(e),
        (None, Ok(ns), swept) => {
            let pass = Outcome::pass(format!(
                "FP32 results match the host bit for bit at {} sizes",
                verified.len()
            ))
            .detail("sizes_bytes", json!(verified))
            .detail("bytes", verified.last().copied().unwrap_or(0))
            .detail("time_ns", ns / TIMED_RUNS as f64);
            match swept {
                Some(Ok(sweep)) => pass.detail("sweep", json!(sweep)),
                _ => pass,
            }
        }
    };
    let (hosts, size) = (j.hosts.clone(), j.world.world.size as usize);
    let ceiling = j.ceiling.clone();
    let outcome = exchange(&mut j.link, &j.world, collective.id(), mine, |all| {
        all_pass(&all, &hosts, || {
            let pass = against(bandwidth(collective, &all, &hosts, size), ceiling.as_ref());
            match slowest_samples(&all) {
                sweep if sweep.is_empty() => pass,
                sweep => pass.detail("sweep", json!(sweep)),
            }
        })
    });
    Ok(outcome)
}

/// `bench --nodes`: this rank's `samples` samples of `collective` at each size, after a
/// warm-up, each the mean of its batch's runs from CUDA events on this rank's stream.
fn time_sweep(j: &Joined, collective: Collective, samples: u32) -> Result<Vec<SweepSize>, String> {
    let (warm_up, runs) = if j.simulated {
        (1, 1)
    } else {
        (SWEEP_WARM_UP, SWEEP_RUNS)
    };
    (j.sizes.iter())
        .map(|&bytes| {
            j.member.time_runs(collective, bytes, warm_up)?;
            let samples_ns = (0..samples)
                .map(|_| Ok(j.member.time_runs(collective, bytes, runs)? / runs as f64))
                .collect::<Result<_, String>>()?;
            let bytes = j.member.shape(collective, bytes)?.bytes;
            Ok(SweepSize { bytes, samples_ns })
        })
        .collect()
}

/// The job's sweep from every rank's: each sample the slowest rank's (a collective ends for
/// the job when its last rank is done); empty when a rank sent none, or sent another shape.
fn slowest_samples(all: &Verdicts) -> Vec<SweepSize> {
    let sweeps: Option<Vec<Vec<SweepSize>>> = (all.iter())
        .map(|(_, said)| {
            let sweep = said.as_ref().ok()?.details.get("sweep")?;
            serde_json::from_value(sweep.clone()).ok()
        })
        .collect();
    let Some((first, rest)) = sweeps.as_deref().and_then(<[_]>::split_first) else {
        return Vec::new();
    };
    let mut job = first.clone();
    for sweep in rest {
        let same = sweep.len() == job.len()
            && (sweep.iter().zip(&job))
                .all(|(a, b)| a.bytes == b.bytes && a.samples_ns.len() == b.samples_ns.len());
        if !same {
            return Vec::new();
        }
        for (size, theirs) in job.iter_mut().zip(sweep) {
            for (ns, their) in size.samples_ns.iter_mut().zip(&theirs.samples_ns) {
                *ns = ns.max(*their);
            }
        }
    }
    job
}

/// Rank 0's pass for a collective every rank verified: the bus bandwidth of the slowest rank's
/// time (the collective ends when its last rank does), by nccl-tests' definitions.
fn bandwidth(collective: Collective, all: &Verdicts, hosts: &[String], size: usize) -> Outcome {
    let detail = |said: &Said, key: &str| said.details.get(key).and_then(Value::as_f64);
    let times: Vec<(u32, f64)> = (all.iter())
        .filter_map(|(rank, said)| Some((*rank, detail(said.as_ref().ok()?, "time_ns")?)))
        .collect();
    let slowest = times.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
    let first = all.first().and_then(|(_, s)| s.as_ref().ok());
    let bytes = first.and_then(|s| detail(s, "bytes")).unwrap_or(0.0);
    let sizes = first.and_then(|s| s.details.get("sizes_bytes")).cloned();
    let Some((rank, ns)) = slowest.filter(|(_, ns)| *ns > 0.0) else {
        return Outcome::pass(format!(
            "FP32 results match the host bit for bit on all {size} rank(s); no rank timed it"
        ));
    };
    let algorithm = bytes / ns;
    let bus = algorithm * collective.bus_factor(size);
    Outcome::pass(format!(
        "FP32 results match the host bit for bit on all {size} rank(s) on {}; bus bandwidth {bus:.2} GB/s at {} B (the slowest, {}: {:.1} us a run, {TIMED_RUNS} runs)",
        placement(hosts),
        bytes,
        who(hosts, rank),
        ns / 1e3
    ))
    .detail("bus_gbs", bus)
    .detail("algorithm_gbs", algorithm)
    .detail("bytes", bytes)
    .detail("slowest_rank", rank)
    .detail("time_ns", json!(times.iter().map(|(r, t)| json!({"rank": r, "ns": t})).collect::<Vec<_>>()))
    .detail("sizes_bytes", sizes.unwrap_or(Value::Null))
}

/// A pass with its bus bandwidth held against what the links allow, where sysfs said.
fn against(pass: Outcome, ceiling: Option<&Ceiling>) -> Outcome {
    let (Some(ceiling), Some(bus)) = (ceiling, pass.details.get("bus_gbs").and_then(Value::as_f64))
    else {
        return pass;
    };
    let reason = format!(
        "{}; {:.0}% of the {} the links allow",
        pass.reason,
        bus / ceiling.gbs * 100.0,
        ceiling.describe()
    );
    Outcome { reason, ..pass }.detail("ceiling", json!(ceiling))
}

/// `nccl.node_pairs` across the job: the first rank of each node runs an all-reduce with the
/// first rank of each neighbour in the ring of nodes ([`pairs::rounds`]), on a communicator of
/// the two made from an id of rank 0's, verified and timed at the largest size; rank 0 puts
/// both sides of each pair together (the slower time) and names a slow node or link.
pub fn node_pairs(s: &mut Session) -> Checked {
    let device = s.request.device;
    let j = joined(s)?;
    let nodes = first_ranks(&j.hosts);
    let rounds = pairs::rounds(nodes.len());
    if rounds.is_empty() {
        return Err(Outcome::skip(format!(
            "{} node(s): pairs of nodes are held against each other from {} nodes",
            nodes.len(),
            pairs::FEWEST
        )));
    }
    if nodes.len() > pairs::MOST {
        return Err(Outcome::skip(format!(
            "{} nodes: pairs are timed on {} nodes at most (each pair's NCCL id is a thread and a socket of rank 0's); run the job on fewer nodes to time them",
            nodes.len(),
            pairs::MOST
        )));
    }
    let order: Vec<(usize, usize)> = rounds.iter().flatten().copied().collect();
    let ids = pair_ids(j, order.len())?;
    let me = j.world.world.rank;
    let bytes = *j.sizes.last().unwrap_or(&8);
    let mine = match nodes.iter().position(|(_, rank)| *rank == me) {
        None => Outcome::pass(format!(
            "{}: its node's first rank times its node's pairs",
            who(&j.hosts, me)
        )),
        Some(node) => {
            let runs: Vec<Value> = (order.iter().zip(&ids).enumerate())
                .filter(|(_, ((a, b), _))| *a == node || *b == node)
                .map(|(pair, (&(a, _), id))| {
                    let side = usize::from(a != node);
                    match time_pair(j.nccl, device, bytes, *id, side) {
                        Ok(ns) => json!({"pair": pair, "ns": ns, "bytes": bytes}),
                        Err(e) => json!({"pair": pair, "error": e}),
                    }
                })
                .collect();
            Outcome::pass(format!(
                "{} ran the all-reduce of its node's {} pair(s)",
                who(&j.hosts, me),
                runs.len()
            ))
            .detail("runs", json!(runs))
        }
    };
    let hosts = j.hosts.clone();
    Ok(exchange(
        &mut j.link,
        &j.world,
        "nccl.node_pairs",
        mine,
        |all| all_pass(&all, &hosts, || pairs_verdict(&all, &order, &nodes, bytes)),
    ))
}

/// Each node and its first rank, in rank order.
fn first_ranks(hosts: &[String]) -> Vec<(String, u32)> {
    let mut nodes: Vec<(String, u32)> = Vec::new();
    for (rank, host) in hosts.iter().enumerate() {
        if !nodes.iter().any(|(h, _)| h == host) {
            nodes.push((host.clone(), rank as u32));
        }
    }
    nodes
}

/// The unique ids of `count` pairs: rank 0 makes them (their bootstrap roots live in its
/// process) and sends them to every rank.
fn pair_ids(j: &mut Joined, count: usize) -> Result<Vec<UniqueId>, Outcome> {
    let body = match &mut j.link {
        Link::Root(root) => {
            let made: Result<Vec<UniqueId>, String> =
                (0..count).map(|_| member::unique_id(&j.nccl)).collect();
            let body = match &made {
                Ok(ids) => {
                    json!({"pair_ids": ids.iter().map(|id| hex(&id.internal)).collect::<Vec<_>>()})
                }
                Err(e) => {
                    json!({"error": format!("rank 0 could not make the pairs' unique ids: {e}")})
                }
            };
            if let Some((rank, e)) = root.start(&body).first() {
                return Err(Outcome::fail(format!(
                    "rank 0 could not send rank {rank} the pairs' unique ids: {e}"
                )));
            }
            body
        }
        Link::Member(member) => {
            let deadline = Instant::now() + Duration::from_millis(j.world.step_ms);
            member.started(deadline).map_err(Outcome::fail)?
        }
    };
    if let Some(e) = body["error"].as_str() {
        return Err(Outcome::fail(e));
    }
    let ids: Option<Vec<UniqueId>> = (body["pair_ids"].as_array())
        .and_then(|all| {
            (all.iter())
                .map(|id| {
                    id.as_str()
                        .and_then(unhex)
                        .map(|internal| UniqueId { internal })
                })
                .collect()
        })
        .filter(|ids: &Vec<UniqueId>| ids.len() == count);
    ids.ok_or_else(|| Outcome::fail(format!("rank 0 did not send {count} pair ids")))
}

/// One side of a pair: joins its communicator of two as `side`, verifies an all-reduce of
/// `bytes` and times [`TIMED_RUNS`] of it; ns a run.
fn time_pair(
    nccl: Nccl,
    device: u32,
    bytes: usize,
    id: UniqueId,
    side: usize,
) -> Result<f64, String> {
    let capacity = Collective::AllReduce.shape(bytes, 2).bytes;
    let pair = Member::join(nccl, device, capacity, id, (side, 2))?;
    pair.verify(Collective::AllReduce, bytes)?;
    Ok(pair.time_runs(Collective::AllReduce, bytes, TIMED_RUNS)? / TIMED_RUNS as f64)
}

/// Rank 0's `nccl.node_pairs` once every rank reported: each pair's bus bandwidth from its
/// slower side, then the slow nodes and links ([`pairs::judge`]).
fn pairs_verdict(
    all: &Verdicts,
    order: &[(usize, usize)],
    nodes: &[(String, u32)],
    bytes: usize,
) -> Outcome {
    let mut sides: Vec<Vec<Result<f64, String>>> = vec![Vec::new(); order.len()];
    for (_, said) in all {
        let runs = (said.as_ref().ok())
            .and_then(|s| s.details.get("runs"))
            .and_then(Value::as_array);
        for run in runs.into_iter().flatten() {
            let Some(side) = (run["pair"].as_u64()).and_then(|p| sides.get_mut(p as usize)) else {
                continue;
            };
            side.push(match (run["ns"].as_f64(), run["error"].as_str()) {
                (Some(ns), _) => Ok(ns),
                (None, e) => Err(e.unwrap_or("no time").to_owned()),
            });
        }
    }
    let runs: Vec<PairRun> = (order.iter().zip(sides))
        .map(|(&(a, b), sides)| {
            let slower = match sides.len() {
                2 => sides
                    .into_iter()
                    .try_fold(0.0f64, |m, t| t.map(|t| m.max(t))),
                n => Err(format!("{n} of its 2 sides reported")),
            };
            let (bus_gbs, error) = match slower {
                Ok(ns) if ns > 0.0 => (
                    Some(bytes as f64 / ns * Collective::AllReduce.bus_factor(2)),
                    None,
                ),
                Ok(_) => (None, Some("no time".to_owned())),
                Err(e) => (None, Some(e)),
            };
            PairRun {
                a: nodes[a].0.clone(),
                b: nodes[b].0.clone(),
                bus_gbs,
                error,
            }
        })
        .collect();
    let failed: Vec<String> = (runs.iter())
        .filter_map(|r| Some(format!("{} and {}: {}", r.a, r.b, r.error.as_ref()?)))
        .collect();
    let judged = pairs::judge(&runs);
    let outcome = match (&judged, failed.is_empty()) {
        (_, false) => Outcome::fail(format!(
            "{} of {} pair(s) of nodes did not run: {}",
            failed.len(),
            runs.len(),
            failed.join("; ")
        )),
        (Some(j), true) if !j.slow_nodes.is_empty() || !j.slow_links.is_empty() => {
            let mut slow: Vec<String> = (j.slow_nodes.iter())
                .map(|n| format!("node {n}"))
                .collect();
            slow.extend(j.slow_links.iter().map(|l| format!("the link {} - {}", l.a, l.b)));
            Outcome::warn(format!(
                "slow: {}; an all-reduce of {bytes} B between each pair of neighbouring nodes, below {:.0}% of the fastest pair's {:.1} GB/s ({} and {})",
                slow.join(", "),
                pairs::SLOW * 100.0,
                j.fastest.bus_gbs.unwrap_or_default(),
                j.fastest.a,
                j.fastest.b
            ))
        }
        _ => Outcome::pass(format!(
            "no pair of the {} pair(s) of neighbouring nodes below {:.0}% of the fastest's bus bandwidth (an all-reduce of {bytes} B)",
            runs.len(),
            pairs::SLOW * 100.0
        )),
    };
    outcome.detail("pairs", json!(runs)).detail("bytes", bytes)
}

/// This rank's network as its NCCL said in its debug log so far, with the `libibverbs.so.1`
/// mapped in this process; and all NCCL said.
fn rank_net(
    s: &Session,
    world: &WorldRequest,
) -> Result<(RankNet, crate::nccl::log::Seen), Outcome> {
    let seen = s
        .kept::<DebugLog>()
        .ok_or_else(|| Outcome::fail("the worker could not set up NCCL's debug log"))?
        .read()
        .map_err(Outcome::fail)?;
    let verbs = crate::probe::dl::mapped_objects()
        .into_iter()
        .find(|m| {
            m.soname.as_deref() == Some("libibverbs.so.1")
                || m.name.file_name().is_some_and(|n| n == "libibverbs.so.1")
        })
        .map(|m| m.name.display().to_string());
    let w = &world.world;
    let me = RankNet {
        rank: w.rank,
        host: w.host.clone(),
        device: s.request.device,
        network: seen.network.clone(),
        verbs,
        net: seen.net.clone(),
        forced: seen.forced_net(),
    };
    Ok((me, seen))
}

/// `nccl.transport` across the job: every rank's ring edges and NCCL's word on the network
/// between nodes; rank 0 answers with each pair of nodes' transports. A pair of nodes that moves
/// data over sockets warns (the parent names the cause: `nccl_net_fallback`).
pub fn transport(s: &mut Session) -> Checked {
    let world = joined(s)?.world.clone();
    let (me, seen) = rank_net(s, &world)?;
    let j = joined(s)?;
    let w = &j.world.world;
    let mine = Outcome::pass(format!(
        "{} uses network {}",
        who(&j.hosts, w.rank),
        seen.network.as_deref().unwrap_or("(not said)")
    ))
    .detail("rank", json!(me))
    .detail("edges", json!(seen.edges));
    let hosts = j.hosts.clone();
    Ok(exchange(
        &mut j.link,
        &j.world,
        "nccl.transport",
        mine,
        |all| matrix(&all, &hosts),
    ))
}

/// Rank 0's `nccl.transport`: every rank's ring edges with their nodes, and each ordered pair
/// of nodes' transports.
fn matrix(all: &Verdicts, hosts: &[String]) -> Outcome {
    let mut ranks: Vec<RankNet> = Vec::new();
    let mut edges: Vec<PeerEdge> = Vec::new();
    let mut silent = Vec::new();
    for (rank, said) in all {
        let Ok(said) = said else {
            silent.push(*rank);
            continue;
        };
        if let Some(net) =
            (said.details.get("rank")).and_then(|v| serde_json::from_value(v.clone()).ok())
        {
            ranks.push(net);
        }
        let seen: Vec<crate::nccl::log::Edge> = (said.details.get("edges"))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        let host = |r: u32| hosts.get(r as usize).cloned().unwrap_or_else(|| "?".into());
        edges.extend(seen.into_iter().map(|e| PeerEdge {
            from_host: host(e.from_rank),
            to_host: host(e.to_rank),
            from_rank: e.from_rank,
            to_rank: e.to_rank,
            via: e.via,
            line: e.line,
        }));
    }
    edges.sort_by_key(|e| (e.from_rank, e.to_rank));
    edges.dedup_by_key(|e| (e.from_rank, e.to_rank));
    let mut pairs: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for e in &edges {
        let via = pairs
            .entry((e.from_host.clone(), e.to_host.clone()))
            .or_default();
        if !via.contains(&e.via) {
            via.push(e.via.clone());
        }
    }
    let summary: Vec<String> = pairs
        .iter()
        .map(|((a, b), via)| {
            let pair = if a == b {
                format!("within {a}")
            } else {
                format!("{a} -> {b}")
            };
            format!("{pair} via {}", via.join(", "))
        })
        .collect();
    let sockets = edges
        .iter()
        .any(|e| e.from_host != e.to_host && e.via.starts_with("NET/Socket"));
    let reason = if summary.is_empty() {
        "NCCL's INFO lines named no ring edge: its transports are unknown".to_owned()
    } else {
        format!("{} ring edge(s): {}", edges.len(), summary.join("; "))
    };
    let outcome = if !silent.is_empty() {
        Outcome::fail(format!(
            "{reason}; rank(s) {} sent no report",
            ranges(&silent)
        ))
    } else if sockets {
        Outcome::warn(format!("{reason}; data between nodes moves over sockets"))
    } else if summary.is_empty() {
        Outcome::warn(reason)
    } else {
        Outcome::pass(reason)
    };
    outcome
        .detail("ranks", json!(ranks))
        .detail("edges", json!(edges))
        .detail(
            "pairs",
            json!(pairs
                .iter()
                .map(|((a, b), via)| json!({"from_host": a, "to_host": b, "via": via}))
                .collect::<Vec<_>>()),
        )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 128]> {
    let mut out = [0u8; 128];
    if text.len() != 256 || !text.is_ascii() {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(status: Status, details: Value) -> Result<Said, String> {
        Ok(Said {
            status,
            reason: "r".into(),
            details: serde_json::from_value(details).unwrap(),
        })
    }

    #[test]
    fn the_job_s_sample_is_its_slowest_rank_s_and_a_rank_with_another_sweep_voids_it() {
        let sweep = |samples: [[f64; 2]; 2]| {
            json!({"sweep": [
                {"bytes": 8, "samples_ns": samples[0]},
                {"bytes": 512, "samples_ns": samples[1]},
            ]})
        };
        let all: Verdicts = vec![
            (0, said(Status::Pass, sweep([[1.0, 5.0], [7.0, 2.0]]))),
            (1, said(Status::Pass, sweep([[3.0, 2.0], [4.0, 9.0]]))),
        ];
        let job = slowest_samples(&all);
        let figures: Vec<(usize, Vec<f64>)> =
            job.into_iter().map(|s| (s.bytes, s.samples_ns)).collect();
        assert_eq!(figures, [(8, vec![3.0, 5.0]), (512, vec![7.0, 9.0])]);
        // A rank that sent one sample fewer, or no sweep at all: no figure for the job.
        let mut short = all.clone();
        short[1] = (
            1,
            said(
                Status::Pass,
                json!({"sweep": [{"bytes": 8, "samples_ns": [3.0]}]}),
            ),
        );
        assert!(slowest_samples(&short).is_empty());
        let mut none = all;
        none[1] = (1, said(Status::Pass, json!({})));
        assert!(slowest_samples(&none).is_empty());
    }

    fn hosts() -> Vec<String> {
        ["a", "a", "b", "b"].map(String::from).to_vec()
    }

    #[test]
    fn bus_bandwidth_is_the_slowest_rank_s_by_nccl_tests_factors() {
        let all: Verdicts = (0..4)
            .map(|r| {
                (
                    r,
                    said(
                        Status::Pass,
                        json!({"bytes": 1048576.0, "time_ns": if r == 2 { 2.0e6 } else { 1.0e6 }}),
                    ),
                )
            })
            .collect();
        let pass = all_pass(&all, &hosts(), || {
            bandwidth(Collective::AllReduce, &all, &hosts(), 4)
        });
        assert_eq!(pass.status, Status::Pass);
        // 1 MiB in 2 ms, times 2 (n - 1) / n.
        let bus = pass.details["bus_gbs"].as_f64().unwrap();
        assert!((bus - 1048576.0 / 2.0e6 * 1.5).abs() < 1e-9, "{bus}");
        assert!(pass.reason.contains("rank 2 (b)"), "{}", pass.reason);
    }

    #[test]
    fn a_failed_or_silent_rank_fails_the_job_by_name() {
        let mut all: Verdicts = (0..4).map(|r| (r, said(Status::Pass, json!({})))).collect();
        all[3] = (3, said(Status::Fail, json!({})));
        all[1] = (1, Err("the connection was closed".into()));
        let failed = all_pass(&all, &hosts(), || Outcome::pass("no"));
        assert_eq!(failed.status, Status::Fail);
        assert!(
            failed.reason.starts_with("2 of 4 rank(s) did not pass"),
            "{}",
            failed.reason
        );
        assert!(failed
            .reason
            .contains("rank 1 (a): no report (the connection was closed)"));
        assert!(failed.reason.contains("rank 3 (b): r"));
    }

    #[test]
    fn the_matrix_names_pairs_of_nodes_and_warns_at_sockets_between_them() {
        let edge = |from: u32, to: u32, via: &str| json!({"from_rank": from, "to_rank": to, "transport": "net", "via": via, "line": "l"});
        let all: Verdicts = vec![
            (
                0,
                said(
                    Status::Pass,
                    json!({"edges": [edge(0, 1, "P2P/CUMEM"), edge(1, 2, "NET/Socket/0")]}),
                ),
            ),
            (
                2,
                said(
                    Status::Pass,
                    json!({"edges": [edge(1, 2, "NET/Socket/0"), edge(3, 0, "NET/Socket/0")]}),
                ),
            ),
        ];
        let out = matrix(&all, &hosts());
        assert_eq!(out.status, Status::Warn);
        assert!(out.reason.contains("3 ring edge(s): within a via P2P/CUMEM; a -> b via NET/Socket/0; b -> a via NET/Socket/0"), "{}", out.reason);
        let ib: Verdicts = vec![(
            0,
            said(
                Status::Pass,
                json!({"edges": [edge(1, 2, "NET/IB/0/GDRDMA")]}),
            ),
        )];
        assert_eq!(matrix(&ib, &hosts()).status, Status::Pass);
    }

    #[test]
    fn each_node_s_ports_come_from_its_first_rank_and_set_the_ceiling_a_pass_is_held_to() {
        let port = |gbps: f64| json!([{"name": "mlx5_0:1", "gbps": gbps, "source": "s"}]);
        let all: Verdicts = vec![
            (0, said(Status::Pass, json!({"ports": port(400.0)}))),
            (1, said(Status::Pass, json!({"ports": port(100.0)}))),
            (2, said(Status::Pass, json!({"ports": port(200.0)}))),
            (3, Err("gone".into())),
        ];
        let nodes = ports_by_host(&all, &hosts());
        assert_eq!(nodes.len(), 2);
        assert_eq!((nodes[0].0.as_str(), nodes[0].1[0].gbps), ("a", 400.0));
        assert_eq!((nodes[1].0.as_str(), nodes[1].1[0].gbps), ("b", 200.0));
        let ceiling = fabric::ceiling(&nodes).unwrap();
        assert_eq!(ceiling.gbs, 25.0);
        let held = against(Outcome::pass("ok").detail("bus_gbs", 20.0), Some(&ceiling));
        assert!(
            held.reason.starts_with("ok; 80% of the 25.0 GB/s (b: "),
            "{}",
            held.reason
        );
        let back: Ceiling = serde_json::from_value(held.details["ceiling"].clone()).unwrap();
        assert_eq!(back, ceiling);
        assert_eq!(against(Outcome::pass("ok"), Some(&ceiling)).reason, "ok");
    }

    #[test]
    fn unique_ids_cross_as_hex() {
        let mut id = [0u8; 128];
        id[0] = 0xab;
        id[127] = 7;
        assert_eq!(unhex(&hex(&id)), Some(id));
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex(&"é".repeat(128)), None);
    }
}
