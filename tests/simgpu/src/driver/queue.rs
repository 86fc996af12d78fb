//! Streams as ordered queues of work, and the one place work runs ([`Inner::advance`]).
//!
//! Work on a stream runs in order, as soon as nothing ahead of it waits: a wait on a host word
//! (`cuStreamWaitValue32`) holds its queue until the word satisfies it, a wait on an event until
//! that event's work is done, a collective's part across processes until its output has come
//! ([`super::collective`]), and a kernel named by `faults.kernel_hang` (or a collective under
//! `faults.nccl_hang`) never completes. Each device also has its legacy null stream, which
//! waits for the earlier work of every blocking stream (created without
//! `CU_STREAM_NON_BLOCKING`), as they wait for its earlier work. Among everything that may run,
//! the earliest enqueued runs first, so a run is deterministic.
//!
//! In time, each stream is ready at the end of its last work (for the null stream, of every
//! blocking stream's too, and for a blocking stream, of the null stream's too); a wait on an
//! event makes it ready no earlier than the event's stamp, even one of another device. Work on
//! the SMs starts when its stream is ready and the SMs are free; a copy on its copy engine (see
//! [`crate::clock`]); an event's record stamps the later of its stream's ready time and the
//! SMs' timeline.

use super::collective::Collective;
use super::errors::Code;
use super::launch::Pending;
use super::library::{Body, Work};
use super::Inner;
use crate::libs::cupti::activity as cupti;
use crate::state::Sim;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};

/// The key of a device's null stream is this, or'ed with its index.
const NULL_STREAM: u64 = 0x4e << 48;

/// `cuStreamWaitValue32`'s conditions (the low two bits of its flags).
const WAIT_GEQ: u32 = 0;
const WAIT_EQ: u32 = 1;
const WAIT_AND: u32 = 2;

/// What a stream's queue holds.
pub(super) enum Op {
    Launch(Box<Pending>),
    /// A simulated library's work (a GEMM, a convolution, an FFT, ...).
    Library(Box<Work>),
    /// One rank's part of a collective (see [`super::collective`]).
    Collective(Box<Collective>),
    /// The send of a rank's input to its peers in other processes (see
    /// [`super::collective`]): no time.
    Send(Body),
    /// Work that never completes: a collective whose peers never arrive (`faults.nccl_hang`).
    Never,
    /// A copy to device or pinned memory at `dst`.
    Copy {
        dst: u64,
        src: Source,
        bytes: usize,
        /// Host to device or device to host: timed over PCIe.
        pcie: bool,
    },
    Memset {
        dst: u64,
        value: u8,
        bytes: usize,
    },
    /// `cuEventRecord`: the event's `generation`-th record.
    Record {
        event: u64,
        generation: u64,
    },
    /// `cuStreamWaitValue32` on the 32-bit word at `address`.
    WaitValue {
        address: u64,
        value: u32,
        flags: u32,
    },
    /// `cuStreamWaitEvent`: until the event's `generation`-th record is done.
    WaitEvent {
        event: u64,
        generation: u64,
    },
    /// Nothing: done once everything before it is (a synchronous call waits for it).
    Marker,
}

/// Where a piece of work was enqueued: its stream and its place in the order of enqueueing.
#[derive(Clone, Copy)]
struct Issued {
    stream: u64,
    seq: u64,
}

/// A kernel's launch shape, as CUPTI records it (all 0 for a library kernel, whose shape the
/// simulator does not model).
#[derive(Clone, Copy, Default)]
pub(super) struct Shape {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Shared memory the kernel declares, and that given at launch, bytes.
    pub static_shared: u32,
    pub dynamic_shared: u32,
}

/// Where a copy reads from.
pub(super) enum Source {
    /// Bytes taken from pageable host memory when the copy was enqueued.
    Staged(Vec<u8>),
    /// Device or pinned memory, read when the copy runs.
    Device(u64),
}

/// One stream.
pub(super) struct Stream {
    pub gpu: usize,
    /// Created without `CU_STREAM_NON_BLOCKING`: ordered with the null stream.
    pub blocking: bool,
    null: bool,
    /// `cuStreamDestroy` was called: the handle is gone, the work still runs.
    destroyed: bool,
    queue: VecDeque<(u64, Op)>,
    /// When its last work ended on its device's timelines, seconds.
    ready: f64,
}

/// Every stream, by handle (null streams by [`Streams::null`]), and the order of enqueueing.
#[derive(Default)]
pub(super) struct Streams {
    map: HashMap<u64, Stream>,
    last_seq: u64,
}

impl Streams {
    /// The key of `gpu`'s null stream.
    pub fn null(gpu: usize) -> u64 {
        NULL_STREAM | gpu as u64
    }

    /// A new stream under `key`.
    pub fn create(&mut self, key: u64, gpu: usize, blocking: bool) {
        let stream = Stream {
            gpu,
            blocking,
            null: false,
            destroyed: false,
            queue: VecDeque::new(),
            ready: 0.0,
        };
        self.map.insert(key, stream);
    }

    /// The live stream with handle `key` (not destroyed), or a null stream.
    pub fn get(&self, key: u64) -> Option<&Stream> {
        self.map.get(&key).filter(|s| !s.destroyed)
    }

    /// Destroys the stream `key`: its handle is invalid from now on, its work still runs.
    pub fn destroy(&mut self, key: u64) {
        if let Some(stream) = self.map.get_mut(&key) {
            stream.destroyed = true;
        }
    }

    /// Enqueues `op` on the stream `key` (made at first use for a null stream of `gpu`); its
    /// place in the order of everything enqueued.
    pub fn push(&mut self, key: u64, gpu: usize, op: Op) -> u64 {
        self.last_seq += 1;
        let stream = self.map.entry(key).or_insert_with(|| Stream {
            gpu,
            blocking: true,
            null: true,
            destroyed: false,
            queue: VecDeque::new(),
            ready: 0.0,
        });
        stream.queue.push_back((self.last_seq, op));
        self.last_seq
    }

    /// When the next work of stream `key` may start: the end of its own last work, and for the
    /// legacy null stream and the blocking streams, of each other's too.
    pub fn ready(&self, key: u64) -> f64 {
        let Some(stream) = self.map.get(&key) else {
            return 0.0;
        };
        let ordered = |other: &Stream| {
            other.gpu == stream.gpu
                && ((stream.null && other.blocking) || (stream.blocking && other.null))
        };
        (self.map.values())
            .filter(|other| ordered(other))
            .fold(stream.ready, |ready, other| ready.max(other.ready))
    }

    /// Records that the last work of stream `key` ended at `time`.
    pub fn set_ready(&mut self, key: u64, time: f64) {
        if let Some(stream) = self.map.get_mut(&key) {
            stream.ready = time;
        }
    }

    /// Whether the stream `key` has nothing left to do.
    pub fn drained(&self, key: u64) -> bool {
        self.map.get(&key).is_none_or(|s| s.queue.is_empty())
    }

    /// Whether the work enqueued on `key` as `seq` and before is done.
    pub fn done(&self, key: u64, seq: u64) -> bool {
        self.map
            .get(&key)
            .and_then(|s| s.queue.front())
            .is_none_or(|(first, _)| *first > seq)
    }

    /// Whether every stream of `gpu` has drained.
    pub fn idle(&self, gpu: usize) -> bool {
        (self.map.values()).all(|s| s.gpu != gpu || s.queue.is_empty())
    }

    /// Drops the work queued on `gpu` (it faulted: nothing more runs there).
    pub fn clear(&mut self, gpu: usize) {
        for stream in self.map.values_mut().filter(|s| s.gpu == gpu) {
            stream.queue.clear();
        }
    }

    /// Drops every stream of `gpu` (its context was destroyed).
    pub fn remove_gpu(&mut self, gpu: usize) {
        self.map.retain(|_, s| s.gpu != gpu);
    }

    /// The stream whose first piece of work runs next: of those whose first piece may run now,
    /// the earliest enqueued.
    fn next(&self, ready: impl Fn(&Op) -> bool) -> Option<u64> {
        // Per device, the earliest work of its null stream and of its blocking streams.
        let mut null_first: HashMap<usize, u64> = HashMap::new();
        let mut blocking_first: HashMap<usize, u64> = HashMap::new();
        for stream in self.map.values() {
            let Some((seq, _)) = stream.queue.front() else {
                continue;
            };
            if stream.null {
                null_first.insert(stream.gpu, *seq);
            } else if stream.blocking {
                let first = blocking_first.entry(stream.gpu).or_insert(*seq);
                *first = (*first).min(*seq);
            }
        }
        let limit = |stream: &Stream| {
            let first = match (stream.null, stream.blocking) {
                (true, _) => blocking_first.get(&stream.gpu),
                (false, true) => null_first.get(&stream.gpu),
                (false, false) => None,
            };
            first.copied().unwrap_or(u64::MAX)
        };
        (self.map.iter())
            .filter_map(|(key, stream)| {
                let (seq, op) = stream.queue.front()?;
                (*seq < limit(stream) && ready(op)).then_some((*seq, *key))
            })
            .min()
            .map(|(_, key)| key)
    }

    /// Takes the first piece of work of stream `key`, with the device it runs on and its
    /// place in the order of enqueueing.
    fn pop(&mut self, key: u64) -> Option<(usize, u64, Op)> {
        let stream = self.map.get_mut(&key)?;
        let (seq, op) = stream.queue.pop_front()?;
        Some((stream.gpu, seq, op))
    }

    /// Forgets destroyed streams that have drained.
    fn reap(&mut self) {
        self.map.retain(|_, s| !(s.destroyed && s.queue.is_empty()));
    }
}

impl Inner {
    /// Runs every piece of work that may run, in order, until none may.
    pub(super) fn advance(&mut self, sim: &Sim) {
        while let Some(key) = self.streams.next(|op| self.ready(op)) {
            if let Some((gpu, seq, op)) = self.streams.pop(key) {
                self.run(sim, gpu, Issued { stream: key, seq }, op);
            }
        }
        self.streams.reap();
    }

    /// Whether `op`, first on its stream, may run now.
    fn ready(&self, op: &Op) -> bool {
        match op {
            Op::Launch(pending) => pending.name() != self.profile.faults.kernel_hang,
            Op::Library(work) => work.name != self.profile.faults.kernel_hang,
            Op::Collective(part) => {
                part.name != self.profile.faults.kernel_hang
                    && part.gate.as_ref().is_none_or(|open| open())
            }
            Op::Never => false,
            Op::WaitValue {
                address,
                value,
                flags,
            } => self.word(*address).is_none_or(|word| match flags & 0x3 {
                WAIT_GEQ => word.wrapping_sub(*value) as i32 >= 0,
                WAIT_EQ => word == *value,
                WAIT_AND => word & value != 0,
                _ => !(word | value) != 0,
            }),
            Op::WaitEvent { event, generation } => {
                (self.events.get(event)).is_none_or(|e| e.completed >= *generation)
            }
            _ => true,
        }
    }

    /// Reports a kernel that ran on `gpu` from `start` to now (model seconds) to CUPTI. Its
    /// stream id is 7 for the null stream and the stream handle's number plus 8 for the others:
    /// one id per stream, as CUPTI gives (its own numbering is undocumented). Its correlation
    /// id is its place in the order of enqueueing, as CUPTI's count the API calls that enqueue
    /// work.
    fn completed(&self, sim: &Sim, gpu: usize, issued: Issued, name: &str, start: f64, s: Shape) {
        let stream = if issued.stream == Streams::null(gpu) {
            7
        } else {
            ((issued.stream & 0xffff_ffff) as u32).wrapping_add(8)
        };
        let kernel = cupti::Kernel {
            name,
            start,
            end: self.gpus[gpu].clock.now(),
            device: gpu as u32,
            context: gpu as u32 + 1,
            stream,
            correlation: issued.seq as u32,
            grid: s.grid,
            block: s.block,
            static_shared: s.static_shared,
            dynamic_shared: s.dynamic_shared,
        };
        cupti::kernel(sim, &kernel);
    }

    /// The 32-bit word at `address` of device or pinned memory, as the host last wrote it.
    fn word(&self, address: u64) -> Option<u32> {
        let alloc = self.memory.find(address, 4)?;
        // SAFETY: the word lies within the live allocation, 4-aligned (checked when the wait
        // was enqueued); the host may write it at any time, hence the atomic load.
        let word = unsafe {
            &*alloc
                .data()
                .add((address - alloc.base) as usize)
                .cast::<AtomicU32>()
        };
        Some(word.load(Ordering::Acquire))
    }

    /// Runs `op`, enqueued as `issued`, on `gpu`, from when its stream is ready; an access to
    /// memory freed since it was enqueued is an illegal address. A kernel or library kernel that
    /// completes is reported to CUPTI.
    fn run(&mut self, sim: &Sim, gpu: usize, issued: Issued, op: Op) {
        let ready = self.streams.ready(issued.stream);
        let clock = &mut self.gpus[gpu].clock;
        if matches!(
            op,
            Op::Launch(_) | Op::Library(_) | Op::Collective(_) | Op::Memset { .. }
        ) {
            clock.wait_until(ready);
        }
        let start = clock.now();
        let outcome = match op {
            Op::Launch(pending) => {
                let (name, shape) = (pending.name().to_owned(), pending.shape());
                if self.execute(sim, gpu, *pending) {
                    self.completed(sim, gpu, issued, &name, start, shape);
                }
                Ok(self.gpus[gpu].clock.now())
            }
            Op::Library(work) => {
                let name = work.name.clone();
                let ran = self.run_library(gpu, *work);
                if ran.is_ok() {
                    self.completed(sim, gpu, issued, &name, start, Shape::default());
                }
                ran.map(|()| self.gpus[gpu].clock.now())
            }
            Op::Collective(part) => {
                let name = part.name.clone();
                let ran = self.run_collective(gpu, *part);
                if ran.is_ok() {
                    self.completed(sim, gpu, issued, &name, start, Shape::default());
                }
                ran.map(|()| self.gpus[gpu].clock.now())
            }
            Op::Send(send) => self.run_send(send).map(|()| ready),
            Op::Copy {
                dst,
                src,
                bytes,
                pcie,
            } => self.copy(gpu, ready, dst, &src, bytes, pcie),
            Op::Memset { dst, value, bytes } => {
                (self.memset(gpu, dst, value, bytes)).map(|()| self.gpus[gpu].clock.now())
            }
            Op::Record { event, generation } => {
                let stamp = ready.max(start);
                // A record overtaken by a later one of the same event (on another stream) leaves
                // the event as the later one made it.
                if let Some(event) = self.events.get_mut(&event) {
                    if generation >= event.completed {
                        event.completed = generation;
                        event.stamp = stamp;
                    }
                }
                Ok(stamp)
            }
            Op::WaitValue { address, .. } => {
                (self.word(address).map(|_| ready)).ok_or(Code::ILLEGAL_ADDRESS)
            }
            Op::WaitEvent { event, .. } => {
                Ok((self.events.get(&event)).map_or(ready, |e| ready.max(e.stamp)))
            }
            Op::Marker | Op::Never => Ok(ready),
        };
        match outcome {
            Ok(end) => self.streams.set_ready(issued.stream, end),
            Err(code) => self.fault(gpu, code),
        }
    }
}
