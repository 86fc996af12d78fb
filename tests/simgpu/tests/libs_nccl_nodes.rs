//! The simulated NCCL across processes and simulated nodes: each rank a process of its own
//! (this test binary, run again as a child for one rank), the ranks of one node sharing its
//! profile (its address in 127.0.0.0/8, its network), the root of `ncclGetUniqueId` in the
//! parent. Every collective's answers on every rank, against a reference written here; the
//! transport between nodes (InfiniBand through a `libibverbs.so.1` the loader finds on
//! `LD_LIBRARY_PATH`, else sockets), its INFO lines and its rate; GPUDirect RDMA off;
//! `corrupt_receive`; a rank that leaves; a peer that sends garbage; ids and arguments refused.
//! Every child is bounded in time.

mod driver_support;

use driver_support::{elapsed, event, host, ok};
use stackbench_simgpu::driver::*;
use stackbench_simgpu::libs::nccl::collective::*;
use stackbench_simgpu::libs::nccl::comm::*;
use stackbench_simgpu::libs::nccl::group::*;
use stackbench_simgpu::libs::nccl::model::LATENCY;
use stackbench_simgpu::libs::nccl::rank::ncclCommInitRank;
use stackbench_simgpu::libs::nccl::reference::Shape;
use stackbench_simgpu::libs::nccl::root::ncclGetUniqueId;
use stackbench_simgpu::libs::nccl::topology::Transport;
use stackbench_simgpu::libs::nccl::types::{DataType, Function, RedOp};
use stackbench_simgpu::libs::nccl::wire::{self, Frame, Handle, Info, UniqueId, UNIQUE_ID_BYTES};
use stackbench_simgpu::libs::nccl::*;
use std::ffi::{c_int, c_void, CStr};
use std::io::{Read, Write};
use std::net::{SocketAddrV4, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::ptr::null_mut;
use std::time::{Duration, Instant};

const FLOAT32: c_int = 7;
const INT32: c_int = 2;
const SUM: c_int = 0;
const MAX: c_int = 2;

/// Set in a child to `<test>`; the child's rank, the ranks, its device and the id in hex.
const CHILD: &str = "SIMGPU_NODES_CHILD";
const RANK: &str = "SIMGPU_NODES_RANK";
const NRANKS: &str = "SIMGPU_NODES_NRANKS";
const DEVICE: &str = "SIMGPU_NODES_DEVICE";
const ID: &str = "SIMGPU_NODES_ID";

/// How long a child may run.
const CHILD_LIMIT: Duration = Duration::from_secs(90);

/// A simulated node: its address (`127.0.0.<last>`), its ranks, what its profile adds
/// (`[network]` and `[faults]` lines), and whether its processes find `libibverbs.so.1`.
struct Node {
    last: u8,
    ranks: usize,
    network: &'static str,
    faults: &'static str,
    verbs: bool,
}

impl Node {
    fn new(last: u8, ranks: usize) -> Node {
        Node {
            last,
            ranks,
            network: "",
            faults: "",
            verbs: false,
        }
    }

    fn profile(&self) -> String {
        format!(
            "[[device]]\nmemory_gib = 1\nnoise = 0.0\nrun_sigma = 0.0\nboot_sigma = 0.0\n\
             [node]\ngpus = {}\nnvswitch = true\naddress = \"127.0.0.{}\"\n\
             [network]\n{}\n[faults]\n{}\n",
            self.ranks, self.last, self.network, self.faults
        )
    }
}

/// What a rank's process left: its rank, its stdout and stderr, and its NCCL debug file.
struct Ran {
    rank: usize,
    output: String,
    log: String,
}

impl Ran {
    /// The texts of its INFO lines.
    fn infos(&self) -> Vec<&str> {
        (self.log.lines())
            .filter_map(|l| l.split_once(" NCCL INFO ").map(|(_, text)| text))
            .collect()
    }

    /// How many of its INFO lines are `text`.
    fn count(&self, text: &str) -> usize {
        self.infos().iter().filter(|l| **l == text).count()
    }

    /// The numbers after `key` in its stdout's lines (after libtest's own words, in a line).
    fn numbers(&self, key: &str) -> Vec<f64> {
        (self.output.lines())
            .filter_map(|l| l.split_once(key)?.1.trim().parse().ok())
            .collect()
    }
}

/// A `libibverbs.so.1` the loader can open (an empty one: the simulator only opens it) in a
/// directory of its own.
fn verbs_dir(dir: &Path) -> PathBuf {
    let lib = dir.join("verbs");
    std::fs::create_dir_all(&lib).unwrap();
    let built = Command::new("cc")
        .args([
            "-shared",
            "-x",
            "c",
            "/dev/null",
            "-Wl,-soname,libibverbs.so.1",
            "-o",
        ])
        .arg(lib.join("libibverbs.so.1"))
        .status()
        .unwrap();
    assert!(
        built.success(),
        "cc could not build a stand-in libibverbs.so.1"
    );
    lib
}

/// A child's id argument: the id's bytes in hex.
fn hex(id: &UniqueId) -> String {
    id.internal
        .iter()
        .map(|c| format!("{:02x}", *c as u8))
        .collect()
}

fn unhex(text: &str) -> UniqueId {
    let mut id = UniqueId {
        internal: [0; UNIQUE_ID_BYTES],
    };
    for (i, byte) in id.internal.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap() as _;
    }
    id
}

/// The root's port in `id`.
fn root_of(id: &UniqueId) -> SocketAddrV4 {
    let b = id.internal.map(|c| c as u8);
    SocketAddrV4::new(
        [b[12], b[13], b[14], b[15]].into(),
        u16::from_be_bytes([b[10], b[11]]),
    )
}

/// Runs `test` once per rank of `nodes` (rank order: node by node), each a process of this
/// binary with its node's profile, and returns what each left; `leaver`: a rank expected to
/// leave without finishing its test. Any other child that fails or outlives [`CHILD_LIMIT`]
/// fails the test.
fn cluster(test: &str, nodes: &[Node], leaver: Option<usize>) -> Vec<Ran> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("simgpu-nodes-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let verbs = nodes.iter().any(|n| n.verbs).then(|| verbs_dir(&dir));
    // The root lives in this process, on the first node's address.
    host(&nodes[0].profile());
    let mut id = UniqueId {
        internal: [0; UNIQUE_ID_BYTES],
    };
    // SAFETY: a valid out-pointer.
    nccl_ok(unsafe { ncclGetUniqueId(&mut id) });
    let nranks: usize = nodes.iter().map(|n| n.ranks).sum();
    let mut children: Vec<(usize, Child, PathBuf)> = Vec::new();
    let mut rank = 0;
    for (i, node) in nodes.iter().enumerate() {
        let profile = dir.join(format!("node{i}.toml"));
        std::fs::write(&profile, node.profile()).unwrap();
        for device in 0..node.ranks {
            let log = dir.join(format!("nccl.{rank}.log"));
            let mut command = Command::new(std::env::current_exe().unwrap());
            command
                .args([test, "--exact", "--nocapture", "--test-threads=1"])
                .env(CHILD, test)
                .env(RANK, rank.to_string())
                .env(NRANKS, nranks.to_string())
                .env(DEVICE, device.to_string())
                .env(ID, hex(&id))
                .env("STACKBENCH_SIM_PROFILE", &profile)
                .env("NCCL_DEBUG", "INFO")
                .env("NCCL_DEBUG_SUBSYS", "INIT,NET,BOOTSTRAP")
                .env("NCCL_DEBUG_FILE", &log)
                .env_remove("LD_LIBRARY_PATH")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            for name in [
                "NCCL_P2P_DISABLE",
                "NCCL_SHM_DISABLE",
                "NCCL_P2P_DIRECT_DISABLE",
            ] {
                command.env_remove(name);
            }
            if let (true, Some(verbs)) = (node.verbs, &verbs) {
                command.env("LD_LIBRARY_PATH", verbs);
            }
            children.push((rank, command.spawn().unwrap(), log));
            rank += 1;
        }
    }
    let started = Instant::now();
    let ran: Vec<Ran> = children
        .into_iter()
        .map(|(rank, mut child, log)| {
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break Some(status);
                }
                if started.elapsed() > CHILD_LIMIT {
                    child.kill().unwrap();
                    child.wait().unwrap();
                    break None;
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            let mut output = String::new();
            let _ = child.stdout.take().unwrap().read_to_string(&mut output);
            let _ = child.stderr.take().unwrap().read_to_string(&mut output);
            let log = std::fs::read_to_string(log).unwrap_or_default();
            let finished = if leaver == Some(rank) {
                output.contains("LEAVING")
            } else {
                output.contains("1 passed")
            };
            assert!(
                status.is_some_and(|s| s.success()) && finished,
                "rank {rank} ({status:?}):\n{output}\n{log}"
            );
            Ran { rank, output, log }
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    // The root ends once every rank has gone: its port is closed soon after.
    let root = root_of(&id);
    let closed = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        TcpStream::connect(root).is_err()
    });
    assert!(
        closed,
        "the root still listens on {root} after every rank has gone"
    );
    ran
}

#[track_caller]
fn nccl_ok(code: NcclResult) {
    // SAFETY: NCCL's static text.
    let text = unsafe { CStr::from_ptr(ncclGetErrorString(code)) };
    assert_eq!(code, 0, "{text:?}: {}", last_error());
}

/// The last WARN's text.
fn last_error() -> String {
    // SAFETY: the library's NUL-terminated text.
    unsafe { CStr::from_ptr(ncclGetLastError(null_mut())) }
        .to_string_lossy()
        .into_owned()
}

/// In a child: its rank of the communicator it joined, and a stream on its device.
struct Me {
    rank: usize,
    nranks: usize,
    comm: *mut c_void,
    stream: *mut c_void,
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap()
}

/// In a child: makes its device current and joins the communicator of its id.
fn join() -> Me {
    let (rank, nranks) = (var(RANK).parse().unwrap(), var(NRANKS).parse().unwrap());
    let device: usize = var(DEVICE).parse().unwrap();
    ok(cuInit(0));
    let mut ctx = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDevicePrimaryCtxRetain(&mut ctx, device as c_int) });
    ok(cuCtxSetCurrent(ctx));
    let mut comm = null_mut();
    // SAFETY: a valid out-pointer; the id by value.
    nccl_ok(unsafe {
        ncclCommInitRank(&mut comm, nranks as c_int, unhex(&var(ID)), rank as c_int)
    });
    let query = |f: unsafe extern "C" fn(*mut c_void, *mut c_int) -> NcclResult| {
        let mut v = -1;
        // SAFETY: a valid out-pointer.
        nccl_ok(unsafe { f(comm, &mut v) });
        v as usize
    };
    assert_eq!(query(ncclCommCount), nranks);
    assert_eq!(query(ncclCommUserRank), rank);
    assert_eq!(query(ncclCommCuDevice), device);
    Me {
        rank,
        nranks,
        comm,
        stream: driver_support::stream(),
    }
}

/// Which collective, and its root for a broadcast.
#[derive(Clone, Copy)]
enum Coll {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast(usize),
}

impl Me {
    /// Calls `coll` on `input` (`count` elements of `t`, under `op`) on the stream, grouped or
    /// not: its result, and the output once the stream is done (`None` when the call failed).
    fn call(
        &self,
        coll: Coll,
        input: &[u8],
        count: usize,
        t: c_int,
        op: c_int,
        grouped: bool,
    ) -> (NcclResult, Option<Vec<u8>>) {
        let out_len = match coll {
            Coll::AllGather => input.len() * self.nranks,
            Coll::ReduceScatter => input.len() / self.nranks,
            _ => input.len(),
        };
        let send = driver_support::alloc(input.len());
        let recv = driver_support::alloc(out_len);
        // SAFETY: the allocation holds the input.
        ok(unsafe { cuMemcpyHtoD_v2(send, input.as_ptr().cast(), input.len()) });
        let (s, r, c, st) = (
            send as *const c_void,
            recv as *mut c_void,
            self.comm,
            self.stream,
        );
        if grouped {
            nccl_ok(ncclGroupStart());
        }
        let mut code = match coll {
            Coll::AllReduce => ncclAllReduce(s, r, count, t, op, c, st),
            Coll::AllGather => ncclAllGather(s, r, count, t, c, st),
            Coll::ReduceScatter => ncclReduceScatter(s, r, count, t, op, c, st),
            Coll::Broadcast(root) => ncclBroadcast(s, r, count, t, root as c_int, c, st),
        };
        if grouped {
            code = ncclGroupEnd();
        }
        if code != 0 {
            return (code, None);
        }
        ok(cuStreamSynchronize(self.stream));
        let mut out = vec![0u8; out_len];
        // SAFETY: `out` holds out_len bytes.
        ok(unsafe { cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), recv, out_len) });
        (code, Some(out))
    }
}

fn floats(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_le_bytes).collect()
}

fn ints(values: impl IntoIterator<Item = i32>) -> Vec<u8> {
    values.into_iter().flat_map(i32::to_le_bytes).collect()
}

/// Rank `r`'s input of `n` small integers as f32 (exact under sums of a few ranks).
fn input(r: usize, n: usize) -> Vec<f32> {
    (0..n).map(|i| (r * 7 + i % 13) as f32).collect()
}

/// Whether this process is the child of `test`.
fn child_of(test: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|t| t == test)
}

/// Does nothing in a child of another test (run in its process by the harness's filter).
fn elsewhere() -> bool {
    std::env::var(CHILD).is_ok()
}

const COUNT: usize = 1000;

#[test]
fn two_nodes_of_two_ranks_compute_every_collective_across_processes() {
    let test = "two_nodes_of_two_ranks_compute_every_collective_across_processes";
    if child_of(test) {
        let me = join();
        let (n, r) = (me.nranks, me.rank);
        let mine = input(r, COUNT);
        let sum: Vec<f32> = (0..COUNT)
            .map(|i| (0..n).map(|s| input(s, COUNT)[i]).sum())
            .collect();
        let all_reduce = me.call(
            Coll::AllReduce,
            &floats(mine.clone()),
            COUNT,
            FLOAT32,
            SUM,
            false,
        );
        assert_eq!(all_reduce, (0, Some(floats(sum.clone()))), "all-reduce");
        let grouped = me.call(
            Coll::AllReduce,
            &floats(mine.clone()),
            COUNT,
            FLOAT32,
            SUM,
            true,
        );
        assert_eq!(grouped, (0, Some(floats(sum))), "all-reduce in a group");
        let gathered: Vec<f32> = (0..n).flat_map(|s| input(s, COUNT)).collect();
        let all_gather = me.call(
            Coll::AllGather,
            &floats(mine.clone()),
            COUNT,
            FLOAT32,
            SUM,
            false,
        );
        assert_eq!(all_gather, (0, Some(floats(gathered))), "all-gather");
        let wide = input(r, n * COUNT);
        let part: Vec<f32> = (0..COUNT)
            .map(|i| (0..n).map(|s| input(s, n * COUNT)[r * COUNT + i]).sum())
            .collect();
        let scatter = me.call(
            Coll::ReduceScatter,
            &floats(wide),
            COUNT,
            FLOAT32,
            SUM,
            false,
        );
        assert_eq!(scatter, (0, Some(floats(part))), "reduce-scatter");
        let broadcast = me.call(
            Coll::Broadcast(2),
            &floats(mine),
            COUNT,
            FLOAT32,
            SUM,
            false,
        );
        assert_eq!(broadcast, (0, Some(floats(input(2, COUNT)))), "broadcast");
        let peaks = ints((0..8).map(|i| (r as i32 - 2) * i));
        let max = ints(
            (0..8)
                .map(|i| if i > 0 { i } else { 0 })
                .map(|i| i * (n as i32 - 3)),
        );
        let maxed = me.call(Coll::AllReduce, &peaks, 8, INT32, MAX, false);
        assert_eq!(maxed, (0, Some(max)), "int32 max");
        // Ranks that disagree are refused on every rank; the communicator goes on.
        let count = if r == 0 { 4 } else { 8 };
        let odd = me.call(
            Coll::AllReduce,
            &floats(vec![1.0; count]),
            count,
            FLOAT32,
            SUM,
            false,
        );
        assert_eq!(odd.0, INVALID_ARGUMENT);
        assert!(
            last_error().contains("the ranks disagree"),
            "{}",
            last_error()
        );
        let again = me.call(
            Coll::AllReduce,
            &floats(vec![1.0; 4]),
            4,
            FLOAT32,
            SUM,
            false,
        );
        assert_eq!(again, (0, Some(floats(vec![n as f32; 4]))));
        nccl_ok(ncclCommDestroy(me.comm));
        return;
    }
    if elsewhere() {
        return;
    }
    let ran = cluster(test, &[Node::new(2, 2), Node::new(3, 2)], None);
    // Two processes on one node reach each other by P2P through CUMEM, not a direct pointer.
    assert_eq!(
        ran[0].count("Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM"),
        1,
        "{}",
        ran[0].log
    );
    assert_eq!(ran[0].count("Channel 00/02 : 0 1 2 3"), 1);
    for r in &ran {
        let d = r.rank % 2;
        let fields = format!(
            "rank {} nranks 4 cudaDev {d} nvmlDev {d} busId {}",
            r.rank,
            ["17000", "2a000"][d]
        );
        let starts: Vec<&str> = (r.infos().into_iter())
            .filter(|l| l.starts_with("ncclCommInitRank comm 0x") && l.ends_with(" - Init START"))
            .collect();
        assert!(
            starts.len() == 1 && starts[0].contains(&fields),
            "{}",
            r.log
        );
        let bootstrap = format!("Bootstrap: Using lo:127.0.0.{}<0>", 2 + r.rank / 2);
        assert_eq!(r.count(&bootstrap), 1, "{}", r.log);
        assert_eq!(r.count("NET/IB : No device found."), 1, "{}", r.log);
        assert_eq!(r.count("Using network Socket"), 1);
    }
    // The commId is a hash of the id: the same on every rank.
    let id = |r: &Ran| {
        let start = r
            .infos()
            .into_iter()
            .find(|l| l.ends_with("Init START"))
            .unwrap();
        start
            .split(" commId ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .to_owned()
    };
    assert!(ran.iter().all(|r| id(r) == id(&ran[0])));
}

/// In a child: seconds per all-reduce of 4 MiB, as its stream's events time eight.
fn time_all_reduce(me: &Me) -> f64 {
    let bytes = 4 << 20;
    let buffer = driver_support::alloc(bytes);
    let (start, stop) = (event(), event());
    let once = || {
        let p = buffer as *mut c_void;
        nccl_ok(ncclAllReduce(
            p,
            p,
            bytes / 4,
            FLOAT32,
            SUM,
            me.comm,
            me.stream,
        ));
    };
    once();
    ok(cuEventRecord(start, me.stream));
    (0..8).for_each(|_| once());
    ok(cuEventRecord(stop, me.stream));
    ok(cuEventSynchronize(stop));
    f64::from(elapsed(start, stop)) * 1e-3 / 8.0
}

/// The model's time of an all-reduce of 4 MiB over 4 ranks at `bus_gbs`.
fn model_seconds(bus_gbs: f64) -> f64 {
    LATENCY + 2.0 * 3.0 / 4.0 * f64::from(4 << 20) / (bus_gbs * 1e9)
}

/// In a child: joins, times an all-reduce and prints its time.
fn timed_child() {
    let me = join();
    println!("SECONDS {}", time_all_reduce(&me));
    nccl_ok(ncclCommDestroy(me.comm));
}

#[track_caller]
fn assert_time(ran: &[Ran], bus_gbs: f64) {
    for r in ran {
        let seconds = r.numbers("SECONDS");
        assert_eq!(seconds.len(), 1, "{}", r.output);
        let want = model_seconds(bus_gbs);
        assert!(
            (seconds[0] / want - 1.0).abs() < 1e-3,
            "rank {}: {} s against {want} s at {bus_gbs} GB/s",
            r.rank,
            seconds[0]
        );
    }
}

fn ib(last: u8) -> Node {
    Node {
        network: "hcas = 1",
        verbs: true,
        ..Node::new(last, 2)
    }
}

#[test]
fn between_nodes_with_libibverbs_ib_carries_the_ring_with_gdr_at_the_hcas_rate() {
    let test = "between_nodes_with_libibverbs_ib_carries_the_ring_with_gdr_at_the_hcas_rate";
    if child_of(test) {
        return timed_child();
    }
    if elsewhere() {
        return;
    }
    let ran = cluster(test, &[ib(2), ib(3)], None);
    // 400 Gb/s: 50 GB/s, far below NVLink's 450 within a node.
    assert_time(&ran, 50.0);
    for r in &ran {
        assert_eq!(r.count("Using network IB"), 1, "{}", r.log);
        assert_eq!(r.count("Failed to open libibverbs.so[.1]"), 0);
        assert_eq!(
            r.count("NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'"),
            1
        );
        assert_eq!(r.count("Connected all rings, use ring PXN 0 GDR 1"), 1);
    }
    assert_eq!(
        ran[0].count("NET/IB : Using [0]mlx5_0:1/IB ; OOB lo:127.0.0.2<0>"),
        1
    );
    assert_eq!(
        ran[2].count("NET/IB : Using [0]mlx5_0:1/IB ; OOB lo:127.0.0.3<0>"),
        1
    );
    for c in 0..2 {
        let send = format!("Channel {c:02}/0 : 1[1] -> 2[0] [send] via NET/IB/0/GDRDMA");
        let receive = format!("Channel {c:02}/0 : 1[1] -> 2[0] [receive] via NET/IB/0/GDRDMA");
        assert_eq!(ran[1].count(&send), 1, "{}", ran[1].log);
        assert_eq!(ran[2].count(&receive), 1, "{}", ran[2].log);
        let back = format!("Channel {c:02}/0 : 3[1] -> 0[0] [receive] via NET/IB/0/GDRDMA");
        assert_eq!(ran[0].count(&back), 1, "{}", ran[0].log);
    }
    let net: usize = (ran.iter())
        .map(|r| r.infos().iter().filter(|l| l.contains(" via NET/")).count())
        .sum();
    assert_eq!(net, 8, "two edges between nodes, both ends, two channels");
}

#[test]
fn a_node_without_libibverbs_falls_back_to_sockets_for_the_whole_ring() {
    let test = "a_node_without_libibverbs_falls_back_to_sockets_for_the_whole_ring";
    if child_of(test) {
        return timed_child();
    }
    if elsewhere() {
        return;
    }
    let without = Node {
        verbs: false,
        ..ib(3)
    };
    let ran = cluster(test, &[ib(2), without], None);
    assert_time(&ran, 3.125);
    assert_eq!(ran[0].count("Using network IB"), 1, "{}", ran[0].log);
    for r in &ran[2..] {
        assert_eq!(r.count("Failed to open libibverbs.so[.1]"), 1, "{}", r.log);
        assert_eq!(r.count("NET/Socket : Using [0]lo:127.0.0.3<0>"), 1);
        assert_eq!(r.count("Using network Socket"), 1);
    }
    assert_eq!(
        ran[1].count("Channel 01/0 : 1[1] -> 2[0] [send] via NET/Socket/0"),
        1,
        "{}",
        ran[1].log
    );
    assert_eq!(
        ran[3].count("Channel 00/0 : 3[1] -> 0[0] [send] via NET/Socket/0"),
        1
    );
    assert!(ran
        .iter()
        .all(|r| r.count("Connected all rings, use ring PXN 0 GDR 0") == 1));
}

#[test]
fn gdr_off_on_one_node_is_said_there_and_halves_the_ib_rate() {
    let test = "gdr_off_on_one_node_is_said_there_and_halves_the_ib_rate";
    if child_of(test) {
        return timed_child();
    }
    if elsewhere() {
        return;
    }
    let no_gdr = Node {
        network: "hcas = 1\ngdr = false",
        ..ib(3)
    };
    let ran = cluster(test, &[ib(2), no_gdr], None);
    assert_time(&ran, 25.0);
    for r in &ran[2..] {
        let line = "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'";
        assert_eq!(r.count(line), 1, "{}", r.log);
    }
    assert_eq!(
        ran[0].count("NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'"),
        1
    );
    assert_eq!(
        ran[1].count("Channel 00/0 : 1[1] -> 2[0] [send] via NET/IB/0"),
        1,
        "{}",
        ran[1].log
    );
    assert_eq!(
        ran[0].count("Channel 01/0 : 3[1] -> 0[0] [receive] via NET/IB/0"),
        1
    );
    assert!(ran.iter().all(|r| !r.log.contains("GDRDMA")));
}

#[test]
fn corrupt_receive_flips_the_outputs_of_its_node_only() {
    let test = "corrupt_receive_flips_the_outputs_of_its_node_only";
    if child_of(test) {
        let me = join();
        let mine = input(me.rank, COUNT);
        let sum: Vec<f32> = (0..COUNT)
            .map(|i| (0..me.nranks).map(|s| input(s, COUNT)[i]).sum())
            .collect();
        let diff = |got: Vec<u8>, want: Vec<u8>| -> Vec<usize> {
            (0..got.len()).filter(|&i| got[i] != want[i]).collect()
        };
        let (_, got) = me.call(
            Coll::AllReduce,
            &floats(mine.clone()),
            COUNT,
            FLOAT32,
            SUM,
            false,
        );
        println!("ALLREDUCE {:?}", diff(got.unwrap(), floats(sum)));
        let (_, got) = me.call(
            Coll::Broadcast(2),
            &floats(mine),
            COUNT,
            FLOAT32,
            SUM,
            false,
        );
        println!(
            "BROADCAST {:?}",
            diff(got.unwrap(), floats(input(2, COUNT)))
        );
        nccl_ok(ncclCommDestroy(me.comm));
        return;
    }
    if elsewhere() {
        return;
    }
    let corrupt = Node {
        faults: "corrupt_receive = true",
        ..Node::new(3, 2)
    };
    let ran = cluster(test, &[Node::new(2, 2), corrupt], None);
    let lines = |r: &Ran, key: &str| {
        (r.output.lines())
            .find_map(|l| Some(l.split_once(key)?.1))
            .unwrap_or_else(|| panic!("{}", r.output))
            .trim()
            .to_owned()
    };
    for r in &ran {
        let flipped = if r.rank >= 2 { "[1000]" } else { "[]" };
        assert_eq!(lines(r, "ALLREDUCE"), flipped, "rank {}", r.rank);
        // The broadcast's root (rank 2) receives nothing.
        let flipped = if r.rank == 3 { "[1000]" } else { "[]" };
        assert_eq!(lines(r, "BROADCAST"), flipped, "rank {}", r.rank);
    }
}

#[test]
fn a_rank_that_leaves_fails_the_others_with_a_remote_error_within_the_bound() {
    let test = "a_rank_that_leaves_fails_the_others_with_a_remote_error_within_the_bound";
    if child_of(test) {
        let me = join();
        let buffer = driver_support::alloc(64) as *mut c_void;
        let call = || ncclAllReduce(buffer, buffer, 16, FLOAT32, SUM, me.comm, me.stream);
        if me.rank == 3 {
            // Its node's collective hangs: it never sends its input, and its process leaves.
            nccl_ok(call());
            println!("LEAVING");
            std::process::exit(0);
        }
        let started = Instant::now();
        ok(cuMemsetD8_v2(buffer as u64, 0x5a, 64));
        nccl_ok(call());
        ok(cuStreamSynchronize(me.stream));
        let mut untouched = [0u8; 64];
        // SAFETY: 64 bytes.
        ok(unsafe { cuMemcpyDtoH_v2(untouched.as_mut_ptr().cast(), buffer as u64, 64) });
        assert_eq!(untouched, [0x5a; 64], "the failed collective wrote nothing");
        let mut error = 0;
        // SAFETY: a valid out-pointer.
        nccl_ok(unsafe { ncclCommGetAsyncError(me.comm, &mut error) });
        assert_eq!(error, REMOTE_ERROR);
        assert_eq!(call(), REMOTE_ERROR);
        assert!(
            last_error().contains("Connection closed by remote peer"),
            "{}",
            last_error()
        );
        println!("FAILED AFTER {}", started.elapsed().as_secs_f64());
        nccl_ok(ncclCommDestroy(me.comm));
        return;
    }
    if elsewhere() {
        return;
    }
    let hanging = Node {
        faults: "nccl_hang = \"all_reduce\"",
        ..Node::new(4, 1)
    };
    let ran = cluster(test, &[Node::new(2, 2), Node::new(3, 1), hanging], Some(3));
    for r in &ran[..3] {
        let after = r.numbers("FAILED AFTER");
        assert!(after.len() == 1 && after[0] < 20.0, "{}", r.output);
        let warns = r.log.lines().filter(|l| l.contains(" NCCL WARN ")).count();
        assert!(warns >= 1, "{}", r.log);
        assert!(r
            .log
            .contains("NCCL WARN socketProgress: Connection closed by remote peer 127.0.0.1<"));
    }
}

#[test]
fn ids_and_arguments_are_refused_before_any_connection() {
    let test = "ids_and_arguments_are_refused_before_any_connection";
    if elsewhere() {
        return;
    }
    let _ = test;
    let node = Node::new(2, 2).profile();
    host(&node);
    let mut id = UniqueId {
        internal: [0; UNIQUE_ID_BYTES],
    };
    // SAFETY: a valid out-pointer.
    nccl_ok(unsafe { ncclGetUniqueId(&mut id) });
    assert_eq!(root_of(&id).ip().octets(), [127, 0, 0, 2]);
    // SAFETY: NULL is refused before any write.
    assert_eq!(unsafe { ncclGetUniqueId(null_mut()) }, INVALID_ARGUMENT);
    let mut comm = null_mut();
    let init = |comm: &mut *mut c_void, n: c_int, id: UniqueId, r: c_int| {
        // SAFETY: a valid out-pointer.
        unsafe { ncclCommInitRank(comm, n, id, r) }
    };
    assert_eq!(init(&mut comm, 0, id, 0), INVALID_ARGUMENT);
    assert_eq!(last_error(), "Invalid rank requested : 0/0");
    assert_eq!(init(&mut comm, 2, id, 2), INVALID_ARGUMENT);
    assert_eq!(init(&mut comm, 2, id, -1), INVALID_ARGUMENT);
    let zeros = UniqueId {
        internal: [0; UNIQUE_ID_BYTES],
    };
    assert_eq!(init(&mut comm, 2, zeros, 0), INTERNAL_ERROR);
    assert!(last_error().contains("is neither AF_INET(2) nor AF_INET6(10)"));
    let mut garbage = zeros;
    (garbage.internal.iter_mut().enumerate()).for_each(|(i, b)| *b = (i * 37 % 251) as _);
    assert_ne!(init(&mut comm, 2, garbage, 0), 0);
    let mut outside = id;
    outside.internal[12] = 10;
    assert_eq!(init(&mut comm, 2, outside, 0), INVALID_ARGUMENT);
    assert!(
        last_error().contains("outside 127.0.0.0/8"),
        "{}",
        last_error()
    );
    let mut unmarked = id;
    unmarked.internal[40] ^= 1;
    assert_eq!(init(&mut comm, 2, unmarked, 0), INVALID_ARGUMENT);
    // SAFETY: NULL is refused before anything.
    assert_eq!(
        unsafe { ncclCommInitRank(null_mut(), 2, id, 0) },
        INVALID_ARGUMENT
    );
    // Inside a group the simulator refuses it rather than block.
    nccl_ok(ncclGroupStart());
    assert_eq!(init(&mut comm, 2, id, 0), INVALID_USAGE);
    nccl_ok(ncclGroupEnd());
    assert!(comm.is_null(), "no communicator was made");
    // A profile with an address off the loopback is no host at all.
    host(&node.replace("127.0.0.2", "10.0.0.2"));
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { ncclGetUniqueId(&mut id) }, UNHANDLED_CUDA_ERROR);
}

#[test]
fn a_peer_that_sends_garbage_fails_the_communicator_with_a_remote_error() {
    if elsewhere() {
        return;
    }
    host(&Node::new(5, 1).profile());
    let mut id = UniqueId {
        internal: [0; UNIQUE_ID_BYTES],
    };
    // SAFETY: a valid out-pointer.
    nccl_ok(unsafe { ncclGetUniqueId(&mut id) });
    let handle = Handle::decode(&id).unwrap();
    // A stray connection's garbage is dropped; the root goes on.
    let mut stray = TcpStream::connect(handle.root).unwrap();
    stray.write_all(&[0xff; 16]).unwrap();
    let shape = Shape {
        function: Function::AllReduce,
        datatype: DataType::Float32,
        op: RedOp::Sum,
        count: 16,
        nranks: 2,
        root: 0,
    };
    // Rank 1, speaking the wire itself: it checks in, calls the all-reduce, then sends garbage.
    let peer = std::thread::spawn(move || {
        let mut stream = wire::connect(handle.root).unwrap();
        let info = Info {
            rank: 1,
            nranks: 2,
            address: [127, 0, 0, 6].into(),
            pid: 1,
            device: 0,
            bus_id: 0x17000,
            ib: false,
            gdr: false,
            ib_gbs: 0.0,
            socket_gbs: 3.125,
            peers: vec![(Transport::Shm, 12.5)],
        };
        let magic = handle.magic;
        wire::write(&mut stream, &Frame::Hello { magic, info }).unwrap();
        let table = wire::read(&mut stream, || true).unwrap();
        assert!(matches!(table, Frame::Table(t) if t.len() == 2));
        wire::write(&mut stream, &Frame::Call { seq: 0, shape }).unwrap();
        let accepted = wire::read(&mut stream, || true).unwrap();
        assert_eq!(accepted, Frame::Accepted { seq: 0 });
        stream
            .write_all(&[9, 0, 0, 0, 42, 1, 2, 3, 4, 5, 6, 7, 8])
            .unwrap();
        let told = wire::read(&mut stream, || true);
        assert!(matches!(told, Ok(Frame::Fail { .. })), "{told:?}");
    });
    ok(cuInit(0));
    let mut ctx = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDevicePrimaryCtxRetain(&mut ctx, 0) });
    ok(cuCtxSetCurrent(ctx));
    let mut comm = null_mut();
    // SAFETY: a valid out-pointer; the id by value.
    nccl_ok(unsafe { ncclCommInitRank(&mut comm, 2, id, 0) });
    let stream = driver_support::stream();
    let buffer = driver_support::alloc(64);
    ok(cuMemsetD8_v2(buffer, 0x5a, 64));
    let p = buffer as *mut c_void;
    let started = Instant::now();
    nccl_ok(ncclAllReduce(p, p, 16, FLOAT32, SUM, comm, stream));
    ok(cuStreamSynchronize(stream));
    assert!(started.elapsed() < Duration::from_secs(10));
    peer.join().unwrap();
    let mut error = 0;
    // SAFETY: a valid out-pointer.
    nccl_ok(unsafe { ncclCommGetAsyncError(comm, &mut error) });
    assert_eq!(error, REMOTE_ERROR);
    assert_eq!(
        ncclAllReduce(p, p, 16, FLOAT32, SUM, comm, stream),
        REMOTE_ERROR
    );
    assert_eq!(last_error(), "NET/Socket : socket progress error");
    let mut out = [0u8; 64];
    // SAFETY: 64 bytes.
    ok(unsafe { cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), buffer, 64) });
    assert_eq!(out, [0x5a; 64], "the failed all-reduce wrote nothing");
    nccl_ok(ncclCommDestroy(comm));
}
