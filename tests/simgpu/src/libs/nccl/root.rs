//! The root `ncclGetUniqueId` starts, as NCCL's bootstrap root: a thread of the calling
//! process listening on its node's address. Ranks check in with their records ([`Info`]); once
//! all `nranks` have, it sends each the table of all, by rank. It then serves the
//! communicator's collectives as a star, each by its sequence number: when every rank has
//! called it, it tells each whether they called it alike ([`super::group::agreement`]); when
//! every rank's input has come, it computes every rank's output with the simulator's reference
//! ([`super::reference`], reducing in rank order, the ring's) and sends each its own, ranks of
//! other processes first (so the root's own process has the others' sent before its rank can
//! finish and exit).
//!
//! Bounds: ranks must check in within [`CHECK_IN`]; every rank must call (and then send its
//! input to) a collective within [`ROUND`] of the first. A rank that leaves (destroyed,
//! aborted, its process gone) while a collective is under way, or before one begins, or that
//! sends garbage, fails the communicator: the root tells every rank left why (NCCL's WARN text,
//! [`Frame::Fail`]) and closes. It ends once every rank has gone, or on failure; its reader
//! threads end within [`wire::POLL`] of it.

use super::debug;
use super::group::agreement;
use super::reference::{self, Shape};
use super::wire::{self, socket_name, Broken, Frame, Handle, Info, UniqueId};
use super::{guarded, put, NcclResult, SYSTEM_ERROR, UNHANDLED_CUDA_ERROR};
use crate::driver::collective;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the root waits for every rank to check in.
pub const CHECK_IN: Duration = Duration::from_secs(120);
/// How long the root waits for every rank's call of a collective, and then for every rank's
/// input, from the first.
pub const ROUND: Duration = Duration::from_secs(120);

/// `ncclGetUniqueId(ncclUniqueId *uniqueId)`: starts a root on the node's address (its
/// profile's `[node] address`) and writes the id that reaches it.
///
/// # Safety
/// `unique_id` must be null or valid for one `ncclUniqueId` write.
#[no_mangle]
pub unsafe extern "C" fn ncclGetUniqueId(unique_id: *mut UniqueId) -> NcclResult {
    guarded(|| {
        if unique_id.is_null() {
            debug::warn(
                "misc/argcheck.cc:29",
                0,
                "GetUniqueId : out argument is NULL",
            );
            return Err(super::INVALID_ARGUMENT);
        }
        let profile = collective::profile().map_err(|code| {
            debug::warn("init.cc:117", 0, &format!("Cuda failure {}", code.0));
            UNHANDLED_CUDA_ERROR
        })?;
        let address = profile.node.address;
        super::net::bootstrap(address, 0);
        let handle = start(address)?;
        // SAFETY: the caller's contract.
        unsafe { put(unique_id, handle.encode(), "GetUniqueId", "out") }
    })
}

/// Starts a root listening on `address`; the handle its id carries.
fn start(address: Ipv4Addr) -> Result<Handle, NcclResult> {
    let failed = |call: &str, e: std::io::Error| {
        let text = format!("Call to {call} failed: {}", wire::error_text(&e));
        debug::warn("misc/socket.cc:458", 0, &text);
        SYSTEM_ERROR
    };
    let listener = wire::listen(address).map_err(|e| failed("bind", e))?;
    let root = match listener.local_addr() {
        Ok(SocketAddr::V4(root)) => root,
        Ok(SocketAddr::V6(_)) => return Err(SYSTEM_ERROR),
        Err(e) => return Err(failed("getsockname", e)),
    };
    listener
        .set_nonblocking(true)
        .map_err(|e| failed("fcntl", e))?;
    let mut seed = u64::from(std::process::id()) ^ u64::from(root.port()) << 32;
    seed ^= std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let magic = crate::clock::splitmix64(&mut seed);
    std::thread::Builder::new()
        .name("nccl-root".into())
        .spawn(move || serve(listener, magic))
        .map_err(|e| {
            let text = format!("Call to pthread_create failed: {e}");
            debug::warn("misc/socket.cc:458", 0, &text);
            SYSTEM_ERROR
        })?;
    Ok(Handle { magic, root })
}

/// What a connection's reader tells the root.
enum Event {
    Frame(usize, Frame),
    Gone(usize, Broken),
}

/// A rank's (or a stray) connection to the root.
struct Conn {
    writer: TcpStream,
    peer: String,
    rank: Option<usize>,
    stop: Arc<AtomicBool>,
}

/// Reads frames from one connection until it closes or the root stops it.
fn reader(conn: usize, mut stream: TcpStream, events: Sender<Event>, stop: Arc<AtomicBool>) {
    loop {
        let event = match wire::read(&mut stream, || !stop.load(Ordering::Relaxed)) {
            Ok(frame) => Event::Frame(conn, frame),
            Err(broken) => Event::Gone(conn, broken),
        };
        let gone = matches!(event, Event::Gone(..));
        if events.send(event).is_err() || gone {
            return;
        }
    }
}

/// One collective under way: each rank's call and input.
struct Round {
    shapes: Vec<Option<Shape>>,
    accepted: bool,
    inputs: Vec<Option<Vec<u8>>>,
    since: Instant,
}

/// The root's state.
struct Root {
    conns: Vec<Conn>,
    events: Sender<Event>,
    inbox: Receiver<Event>,
    magic: u64,
    /// Each rank's record and connection, once checked in.
    ranks: Vec<Option<(Info, usize)>>,
    /// Ranks not gone.
    live: Vec<bool>,
    rounds: BTreeMap<u64, Round>,
    /// Why the first rank that left is gone.
    left: Option<String>,
}

/// The root's thread: check-in, then collectives, then closing every connection.
fn serve(listener: TcpListener, magic: u64) {
    let (events, inbox) = mpsc::channel();
    let mut root = Root {
        conns: Vec::new(),
        events,
        inbox,
        magic,
        ranks: Vec::new(),
        live: Vec::new(),
        rounds: BTreeMap::new(),
        left: None,
    };
    if root.check_in(&listener).is_ok() {
        drop(listener);
        root.collectives();
    }
    for conn in &root.conns {
        conn.stop.store(true, Ordering::Relaxed);
        let _ = conn.writer.shutdown(Shutdown::Both);
    }
}

/// The root is done: the communicator failed, or every rank has gone.
struct Done;

impl Root {
    /// Accepts connections and their records until every rank has checked in (then sends the
    /// table) or [`CHECK_IN`] has passed.
    fn check_in(&mut self, listener: &TcpListener) -> Result<(), Done> {
        let deadline = Instant::now() + CHECK_IN;
        loop {
            while let Ok((stream, address)) = listener.accept() {
                self.admit(stream, address);
            }
            if Instant::now() > deadline {
                let (n, nranks) = (self.ranks.iter().flatten().count(), self.ranks.len());
                let text = format!(
                    "Bootstrap Root : {n} of {nranks} ranks checked in within {} s: the \
                     simulated root gives up (NCCL's would wait on)",
                    CHECK_IN.as_secs()
                );
                eprintln!("stackbench simulated NCCL: {text}");
                return Err(self.fail(&text));
            }
            let event = match self.inbox.recv_timeout(Duration::from_millis(10)) {
                Ok(event) => event,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return Err(Done),
            };
            match event {
                Event::Frame(conn, Frame::Hello { magic, info }) => {
                    self.hello(conn, magic, info)?
                }
                Event::Frame(conn, _) | Event::Gone(conn, Broken::Garbage(_)) => {
                    let text = format!(
                        "socketFinalizeAccept: didn't receive a valid magic from {}",
                        self.conns[conn].peer
                    );
                    debug::warn("misc/socket.cc:487", 0, &text);
                    if self.conns[conn].rank.is_some() {
                        return Err(self.fail(&text));
                    }
                    self.drop_conn(conn);
                }
                Event::Gone(conn, broken) => {
                    if self.conns[conn].rank.is_some() {
                        let text = broken.text(&self.conns[conn].peer, false);
                        return Err(self.fail(&text));
                    }
                    self.drop_conn(conn);
                }
            }
            if !self.ranks.is_empty() && self.ranks.iter().all(Option::is_some) {
                return self.send_table();
            }
        }
    }

    /// A new connection and its reader.
    fn admit(&mut self, stream: TcpStream, address: SocketAddr) {
        let peer = socket_name(address);
        let (Ok(()), Ok(writer)) = (wire::prepare(&stream), stream.try_clone()) else {
            return;
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (conn, events, flag) = (self.conns.len(), self.events.clone(), stop.clone());
        let spawned = std::thread::Builder::new()
            .name("nccl-root-conn".into())
            .spawn(move || reader(conn, stream, events, flag));
        if spawned.is_ok() {
            self.conns.push(Conn {
                writer,
                peer,
                rank: None,
                stop,
            });
        }
    }

    /// Stops reading a connection that is no rank's.
    fn drop_conn(&mut self, conn: usize) {
        self.conns[conn].stop.store(true, Ordering::Relaxed);
        let _ = self.conns[conn].writer.shutdown(Shutdown::Both);
    }

    /// A rank's record: checked against the id's magic and the ranks before it.
    fn hello(&mut self, conn: usize, magic: u64, info: Info) -> Result<(), Done> {
        let peer = self.conns[conn].peer.clone();
        if magic != self.magic || self.conns[conn].rank.is_some() {
            let text = format!("socketFinalizeAccept: didn't receive a valid magic from {peer}");
            debug::warn("misc/socket.cc:487", 0, &text);
            self.drop_conn(conn);
            return Ok(());
        }
        let (rank, nranks) = (info.rank as usize, info.nranks as usize);
        if self.ranks.is_empty() && nranks > 0 {
            self.ranks = vec![None; nranks];
            self.live = vec![true; nranks];
        }
        if nranks != self.ranks.len() || rank >= nranks {
            let text = format!(
                "Bootstrap Root : mismatch in info from procs, nranks {} vs {nranks}, nroots 1 \
                 vs 1, iroot 0 vs 0",
                self.ranks.len()
            );
            debug::warn("bootstrap.cc:322", 0, &text);
            self.drop_conn(conn);
            return Err(self.fail(&text));
        }
        if self.ranks[rank].is_some() {
            let text =
                format!("Bootstrap Root : rank {rank} of {nranks} ranks has already checked in");
            debug::warn("bootstrap.cc:327", 0, &text);
            self.drop_conn(conn);
            return Err(self.fail(&text));
        }
        self.conns[conn].rank = Some(rank);
        self.ranks[rank] = Some((info, conn));
        Ok(())
    }

    /// Sends every rank the table.
    fn send_table(&mut self) -> Result<(), Done> {
        let table = Frame::Table(self.ranks.iter().flatten().map(|r| r.0.clone()).collect());
        for rank in 0..self.ranks.len() {
            self.send(rank, &table)?;
        }
        Ok(())
    }

    /// Sends `frame` to `rank`; a rank that cannot be reached fails the communicator.
    fn send(&mut self, rank: usize, frame: &Frame) -> Result<(), Done> {
        let Some((_, conn)) = self.ranks[rank] else {
            return Ok(());
        };
        let conn = &mut self.conns[conn];
        match wire::write(&mut conn.writer, frame) {
            Ok(()) => Ok(()),
            Err(broken) => {
                let text = broken.text(&conn.peer, true);
                self.live[rank] = false;
                Err(self.fail(&text))
            }
        }
    }

    /// Tells every rank left that the communicator failed, and why.
    fn fail(&mut self, text: &str) -> Done {
        let frame = Frame::Fail { text: text.into() };
        for (info, conn) in self.ranks.iter().flatten() {
            if self.live[info.rank as usize] {
                let _ = wire::write(&mut self.conns[*conn].writer, &frame);
            }
        }
        Done
    }

    /// Serves collectives until every rank has gone or the communicator fails.
    fn collectives(&mut self) {
        while self.live.iter().any(|live| *live) {
            let event = match self.inbox.recv_timeout(wire::POLL) {
                Ok(event) => event,
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(late) = self.late() {
                        eprintln!("stackbench simulated NCCL: {late}");
                        self.fail(&late);
                        return;
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return,
            };
            if self.event(event).is_err() {
                return;
            }
        }
    }

    /// Why the oldest collective under way is overdue, if it is.
    fn late(&self) -> Option<String> {
        let (seq, round) = self
            .rounds
            .iter()
            .find(|(_, r)| r.since.elapsed() > ROUND)?;
        let (what, missing) = if round.accepted {
            ("input", round.inputs.iter().filter(|i| i.is_none()).count())
        } else {
            ("call", round.shapes.iter().filter(|s| s.is_none()).count())
        };
        Some(format!(
            "collective {seq}: {missing} of {} ranks' {what} not in within {} s: the simulated \
             root gives up (NCCL would hang)",
            self.ranks.len(),
            ROUND.as_secs()
        ))
    }

    fn event(&mut self, event: Event) -> Result<(), Done> {
        let (conn, what) = match event {
            Event::Frame(conn, frame) => (conn, Ok(frame)),
            Event::Gone(conn, broken) => (conn, Err(broken)),
        };
        let Some(rank) = self.conns[conn].rank else {
            return Ok(());
        };
        let peer = self.conns[conn].peer.clone();
        match what {
            Err(Broken::Garbage(_)) => Err(self.fail("NET/Socket : socket progress error")),
            Err(broken) => {
                self.live[rank] = false;
                let text = broken.text(&peer, false);
                if self.rounds.is_empty() {
                    self.left.get_or_insert(text);
                    Ok(())
                } else {
                    Err(self.fail(&text))
                }
            }
            Ok(Frame::Call { seq, shape }) => self.call(rank, seq, shape),
            Ok(Frame::Data { seq, bytes }) => self.data(rank, &peer, seq, bytes),
            Ok(_) => Err(self.fail("NET/Socket : socket progress error")),
        }
    }

    /// Rank `rank` has called collective `seq`.
    fn call(&mut self, rank: usize, seq: u64, shape: Shape) -> Result<(), Done> {
        if let Some(left) = self.left.clone() {
            return Err(self.fail(&left));
        }
        let n = self.ranks.len();
        let round = self.rounds.entry(seq).or_insert_with(|| Round {
            shapes: vec![None; n],
            accepted: false,
            inputs: vec![None; n],
            since: Instant::now(),
        });
        if round.accepted || round.shapes[rank].is_some() || shape.nranks != n {
            return Err(self.fail("NET/Socket : socket progress error"));
        }
        round.shapes[rank] = Some(shape);
        let Some(shapes) = round.shapes.iter().copied().collect::<Option<Vec<Shape>>>() else {
            return Ok(());
        };
        let first = shapes[0];
        let odd = shapes
            .iter()
            .position(|s| agreement(s) != agreement(&first));
        let answer = match odd {
            None => {
                round.accepted = true;
                round.since = Instant::now();
                Frame::Accepted { seq }
            }
            Some(odd) => {
                self.rounds.remove(&seq);
                let text = format!(
                    "{}: the ranks disagree: rank 0 called (function, type, count, op, root) = \
                     {:?}, rank {odd} {:?}; NCCL would hang or corrupt memory",
                    first.function.call(),
                    agreement(&first),
                    agreement(&shapes[odd])
                );
                Frame::Refused { seq, text }
            }
        };
        (0..n).try_for_each(|r| self.send(r, &answer))
    }

    /// Rank `rank`'s input to collective `seq` has come from `peer`.
    fn data(&mut self, rank: usize, peer: &str, seq: u64, bytes: Vec<u8>) -> Result<(), Done> {
        let Some(round) = self.rounds.get_mut(&seq).filter(|r| r.accepted) else {
            return Err(self.fail("NET/Socket : socket progress error"));
        };
        let Some(shape) = round.shapes[rank] else {
            return Err(self.fail("NET/Socket : socket progress error"));
        };
        let expected = if shape.reads(rank) {
            shape.input_elements() * shape.datatype.size()
        } else {
            0
        };
        if bytes.len() != expected || round.inputs[rank].is_some() {
            let text = format!(
                "NET/Socket : peer {peer} message truncated : receiving {} bytes instead of \
                 {expected}. If you believe your socket network is in a healthy state, there \
                 may be a mismatch in collective sizes or environment settings (e.g. \
                 NCCL_PROTO, NCCL_ALGO) between ranks",
                bytes.len()
            );
            return Err(self.fail(&text));
        }
        round.inputs[rank] = Some(bytes);
        if round.inputs.iter().any(Option::is_none) {
            return Ok(());
        }
        let inputs: Vec<Vec<u8>> = (round.inputs.iter_mut())
            .map(|input| input.take().unwrap_or_default())
            .collect();
        self.rounds.remove(&seq);
        let order: Vec<usize> = (0..self.ranks.len()).collect();
        let mut outputs = reference::outputs(&shape, &inputs, &order);
        // Ranks of other processes first: the root's own process may end once its rank has its
        // output.
        let me = std::process::id();
        let mut ranks = order;
        ranks.sort_by_key(|&r| self.ranks[r].as_ref().is_some_and(|(i, _)| i.pid == me));
        for r in ranks {
            let bytes = std::mem::take(&mut outputs[r]);
            if self.live[r] {
                self.send(r, &Frame::Output { seq, bytes })?;
            }
        }
        Ok(())
    }
}
