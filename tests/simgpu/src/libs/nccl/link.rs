//! A rank's connection to its communicator's root ([`super::root`]): it checks in and gets the
//! table of every rank ([`join`]), then carries the rank's collectives. A writer thread sends,
//! in order, what the rank's calls and its stream hand it; a reader thread files the root's
//! answers and outputs by sequence number, and finds the communicator failed when the root
//! says so, closes, or sends garbage, or when an answer is more than [`REPLY`] late. A failure
//! is a WARN line (NCCL's text: `socketProgress: Connection closed by remote peer ...`) when
//! something waits on it, else at the next call, and `ncclRemoteError` for every call from then
//! on. Both threads end once the communicator is destroyed (the writer after sending what it
//! was handed, the reader within [`wire::POLL`]) or failed.

use super::debug::{self, INIT, NET};
use super::reference::Shape;
use super::root::{CHECK_IN, ROUND};
use super::wire::{self, socket_name, Broken, Frame, Handle, Info};
use super::{NcclResult, INVALID_ARGUMENT, REMOTE_ERROR, SYSTEM_ERROR};
use crate::driver::collective;
use crate::state::Sim;
use std::collections::BTreeMap;
use std::net::{Shutdown, SocketAddrV4, TcpStream};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Connection attempts refused before giving up (`NCCL_SOCKET_RETRY_CNT`'s default), the
/// `n`-th retry after `n` times [`RETRY_STEP`].
pub const CONNECT_RETRIES: u32 = 34;
pub const RETRY_STEP: Duration = Duration::from_millis(10);
/// How long a rank waits for the root's answer to a call or its output of a collective: the
/// root's own bound, and some.
pub const REPLY: Duration = ROUND.saturating_add(Duration::from_secs(10));

/// Where NCCL's socket WARNs come from.
const SOCKET: &str = "misc/socket.cc:60";

/// A rank's connection to its root.
pub struct Link {
    pub rank: usize,
    /// Every rank's record, by rank.
    pub table: Vec<Info>,
    /// The rank's device (its lines' prefix).
    device: usize,
    /// The root, as NCCL names a peer (`127.0.0.1<40123>`).
    root: String,
    /// The simulated host whose streams the rank's parts are on.
    sim: &'static Sim,
    /// To the writer thread; `None` once closed.
    outbox: Mutex<Option<Sender<Frame>>>,
    inbox: Mutex<Inbox>,
    changed: Condvar,
}

/// What the rank waits for and what has come.
#[derive(Default)]
struct Inbox {
    next_seq: u64,
    /// Calls sent whose answer has not come, and since when.
    calls: BTreeMap<u64, Instant>,
    answers: BTreeMap<u64, Result<(), String>>,
    /// Inputs sent whose output has not come: since when, and the output's length.
    inputs: BTreeMap<u64, (Instant, usize)>,
    outputs: BTreeMap<u64, Vec<u8>>,
    /// Why the communicator failed.
    failure: Option<String>,
    closing: bool,
}

/// Connects to the root at `root`, retrying while it refuses.
fn reach(root: SocketAddrV4, device: usize) -> Result<TcpStream, NcclResult> {
    let name = socket_name(root.into());
    let mut attempt = 0;
    loop {
        attempt += 1;
        let error = match wire::connect(root) {
            Ok(stream) => return Ok(stream),
            Err(e) => e,
        };
        let refused = matches!(
            error.kind(),
            std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::TimedOut
        );
        let why = wire::error_text(&error);
        if !refused {
            let text = format!("socketPollConnect to {name} failed with error {why}");
            debug::warn(SOCKET, device, &text);
            return Err(REMOTE_ERROR);
        }
        if attempt > CONNECT_RETRIES {
            let text = format!(
                "socketStartConnect: connect to {name} returned {why}, exceeded error retry \
                 count after {attempt} attempts"
            );
            debug::warn(SOCKET, device, &text);
            return Err(REMOTE_ERROR);
        }
        let sleep = RETRY_STEP * attempt;
        let text = format!(
            "socketStartConnect: connect to {name} returned {why}, retrying \
             ({attempt}/{CONNECT_RETRIES}) after sleep for {} msec",
            sleep.as_millis()
        );
        debug::info(INIT | NET, device, &text);
        std::thread::sleep(sleep);
    }
}

/// Checks rank `info` in with the root of `handle`, waits for every rank's (at most
/// [`CHECK_IN`] and some), and starts the link's threads.
pub fn join(handle: Handle, info: Info, device: usize) -> Result<Arc<Link>, NcclResult> {
    let mut stream = reach(handle.root, device)?;
    let root = socket_name(handle.root.into());
    let broken = |broken: Broken, sending: bool| {
        debug::warn(SOCKET, device, &broken.text(&root, sending));
        REMOTE_ERROR
    };
    let hello = Frame::Hello {
        magic: handle.magic,
        info: info.clone(),
    };
    wire::write(&mut stream, &hello).map_err(|b| broken(b, true))?;
    let wait = CHECK_IN + Duration::from_secs(5);
    let deadline = Instant::now() + wait;
    let table = match wire::read(&mut stream, || Instant::now() < deadline) {
        Ok(Frame::Table(table)) => table,
        Ok(Frame::Fail { text }) => {
            debug::warn(SOCKET, device, &text);
            return Err(REMOTE_ERROR);
        }
        Ok(_) => return Err(broken(Broken::Garbage(String::new()), false)),
        Err(Broken::Stopped) => {
            let text = format!(
                "no table from the root {root} within {} s: the simulated NCCL gives up",
                wait.as_secs()
            );
            eprintln!("stackbench simulated NCCL: {text}");
            debug::warn(SOCKET, device, &text);
            return Err(REMOTE_ERROR);
        }
        Err(b) => return Err(broken(b, false)),
    };
    let fits = table.len() == info.nranks as usize
        && (table.iter().enumerate()).all(|(r, i)| i.rank as usize == r && i.nranks == info.nranks)
        && table.get(info.rank as usize) == Some(&info);
    if !fits {
        return Err(broken(Broken::Garbage(String::new()), false));
    }
    let (outbox, frames) = mpsc::channel();
    let link = Arc::new(Link {
        rank: info.rank as usize,
        table,
        device,
        root,
        sim: crate::state::sim(),
        outbox: Mutex::new(Some(outbox)),
        inbox: Mutex::default(),
        changed: Condvar::new(),
    });
    let spawned = stream.try_clone().and_then(|writing| {
        let (for_writer, for_reader) = (link.clone(), link.clone());
        std::thread::Builder::new()
            .name("nccl-link-send".into())
            .spawn(move || writer(for_writer, writing, frames))?;
        std::thread::Builder::new()
            .name("nccl-link-recv".into())
            .spawn(move || reader(for_reader, stream))
    });
    if let Err(e) = spawned {
        link.close();
        let text = format!("Call to pthread_create failed: {e}");
        debug::warn(SOCKET, device, &text);
        return Err(SYSTEM_ERROR);
    }
    Ok(link)
}

/// Sends what the link is handed, in order, until it is closed or a write fails.
fn writer(link: Arc<Link>, mut stream: TcpStream, frames: Receiver<Frame>) {
    for frame in frames {
        if let Err(broken) = wire::write(&mut stream, &frame) {
            link.fail(&mut link.inbox(), broken.text(&link.root, true));
            break;
        }
    }
    let _ = stream.shutdown(Shutdown::Write);
}

/// Files what the root sends until the link is closed or fails, letting the rank's stream go
/// on after each output (or the failure).
fn reader(link: Arc<Link>, mut stream: TcpStream) {
    loop {
        let filed = match wire::read(&mut stream, || link.wait_on()) {
            Ok(frame) => link.receive(frame),
            Err(Broken::Stopped) => false,
            Err(broken) => {
                link.fail(&mut link.inbox(), broken.text(&link.root, false));
                false
            }
        };
        collective::progress(link.sim);
        if !filed {
            break;
        }
    }
    let _ = stream.shutdown(Shutdown::Read);
}

impl Link {
    fn inbox(&self) -> MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `frame` to the writer (nothing, once closed).
    fn send(&self, frame: Frame) {
        let outbox = self.outbox.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(outbox) = outbox.as_ref() {
            let _ = outbox.send(frame);
        }
    }

    /// Records the communicator's failure (the first one's text), with its WARN line if
    /// anything waits on it.
    fn fail(&self, inbox: &mut Inbox, text: String) {
        if inbox.failure.is_none() {
            let waiting = !inbox.calls.is_empty() || !inbox.inputs.is_empty();
            if waiting && !inbox.closing {
                debug::warn(SOCKET, self.device, &text);
            }
            inbox.failure = Some(text);
        }
        self.changed.notify_all();
    }

    /// Whether the reader waits on for the root's next frame: not once closed or failed, nor
    /// once an answer is more than [`REPLY`] late (which fails the communicator).
    fn wait_on(&self) -> bool {
        let mut inbox = self.inbox();
        if inbox.closing || inbox.failure.is_some() {
            return false;
        }
        let since = (inbox.calls.iter().map(|(seq, at)| (*seq, *at)))
            .chain(inbox.inputs.iter().map(|(seq, (at, _))| (*seq, *at)))
            .find(|(_, at)| at.elapsed() > REPLY);
        if let Some((seq, _)) = since {
            let text = format!(
                "collective {seq}: no answer from the root {} within {} s: the simulated NCCL \
                 gives up (NCCL would hang)",
                self.root,
                REPLY.as_secs()
            );
            eprintln!("stackbench simulated NCCL: {text}");
            self.fail(&mut inbox, text);
            return false;
        }
        true
    }

    /// Files a frame from the root; `false` once the communicator has failed.
    fn receive(&self, frame: Frame) -> bool {
        let mut inbox = self.inbox();
        let filed = match frame {
            Frame::Accepted { seq } if inbox.calls.remove(&seq).is_some() => {
                inbox.answers.insert(seq, Ok(()));
                Ok(())
            }
            Frame::Refused { seq, text } if inbox.calls.remove(&seq).is_some() => {
                inbox.answers.insert(seq, Err(text));
                Ok(())
            }
            Frame::Output { seq, bytes } => match inbox.inputs.remove(&seq) {
                Some((_, len)) if len == bytes.len() => {
                    inbox.outputs.insert(seq, bytes);
                    Ok(())
                }
                Some((_, len)) => Err(format!(
                    "NET/Socket : peer {} message truncated : receiving {} bytes instead of \
                     {len}. If you believe your socket network is in a healthy state, there \
                     may be a mismatch in collective sizes or environment settings (e.g. \
                     NCCL_PROTO, NCCL_ALGO) between ranks",
                    self.root,
                    bytes.len()
                )),
                None => Err("NET/Socket : socket progress error".into()),
            },
            Frame::Fail { text } => Err(text),
            _ => Err("NET/Socket : socket progress error".into()),
        };
        match filed {
            Ok(()) => {
                self.changed.notify_all();
                true
            }
            Err(text) => {
                self.fail(&mut inbox, text);
                false
            }
        }
    }

    /// `ncclRemoteError`, with its WARN, when the communicator has failed.
    pub fn check(&self) -> Result<(), NcclResult> {
        match &self.inbox().failure {
            Some(text) => {
                debug::warn(SOCKET, self.device, text);
                Err(REMOTE_ERROR)
            }
            None => Ok(()),
        }
    }

    /// Whether the communicator has failed (`ncclCommGetAsyncError`'s `ncclRemoteError`).
    pub fn failed(&self) -> bool {
        self.inbox().failure.is_some()
    }

    /// Tells the root this rank has called a collective of `shape`; its sequence number.
    pub fn begin(&self, shape: &Shape) -> Result<u64, NcclResult> {
        self.check()?;
        let mut inbox = self.inbox();
        let seq = inbox.next_seq;
        inbox.next_seq += 1;
        inbox.calls.insert(seq, Instant::now());
        self.send(Frame::Call { seq, shape: *shape });
        Ok(seq)
    }

    /// Waits for the root's answer to call `seq`: every rank called it alike (`Ok`), or not
    /// (`ncclInvalidArgument`, with the WARN saying how), or the communicator failed
    /// (`ncclRemoteError`).
    pub fn accepted(&self, seq: u64) -> Result<(), NcclResult> {
        let mut inbox = self.inbox();
        let deadline = Instant::now() + REPLY + wire::POLL * 2;
        loop {
            if let Some(answer) = inbox.answers.remove(&seq) {
                return answer.map_err(|text| {
                    eprintln!("stackbench simulated NCCL: {text}");
                    debug::warn("enqueue.cc:2560", self.device, &text);
                    INVALID_ARGUMENT
                });
            }
            if inbox.failure.is_some() {
                return Err(REMOTE_ERROR);
            }
            if Instant::now() > deadline {
                let text = format!(
                    "collective {seq}: no answer from the root {} within {} s",
                    self.root,
                    REPLY.as_secs()
                );
                self.fail(&mut inbox, text);
                return Err(REMOTE_ERROR);
            }
            inbox = (self.changed.wait_timeout(inbox, wire::POLL))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Sends the rank's input to collective `seq` (when its stream reaches it), whose output
    /// will be `output_len` bytes.
    pub fn post(&self, seq: u64, bytes: Vec<u8>, output_len: usize) {
        let mut inbox = self.inbox();
        if inbox.failure.is_none() {
            inbox.inputs.insert(seq, (Instant::now(), output_len));
            self.send(Frame::Data { seq, bytes });
        }
    }

    /// Whether the output of collective `seq` has come, or never will (the communicator
    /// failed, or was aborted with the collective under way).
    pub fn arrived(&self, seq: u64) -> bool {
        let inbox = self.inbox();
        inbox.outputs.contains_key(&seq) || inbox.failure.is_some() || inbox.closing
    }

    /// The output of collective `seq`, if it came.
    pub fn take(&self, seq: u64) -> Option<Vec<u8>> {
        self.inbox().outputs.remove(&seq)
    }

    /// Closes the link (the communicator is destroyed or aborted): the writer sends what it was
    /// handed and ends; the reader ends within [`wire::POLL`]; a collective still under way
    /// ends on its stream, its output unwritten, as NCCL's abort ends its kernels.
    pub fn close(&self) {
        self.inbox().closing = true;
        drop(
            self.outbox
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        self.changed.notify_all();
    }
}
