//! What the simulated NCCL asks of the driver: the host's profile without a current context,
//! private events on a device, and a collective put on several devices' streams at once,
//! ordered as NCCL's kernels are.
//!
//! A collective of `n` ranks is, on each rank's stream, in this order: a record of the rank's
//! `arrive` event; a wait for every other rank's `arrive` record (so no rank's part starts on
//! the model timeline before the last rank reached the collective, and none runs before every
//! rank's earlier work, its input included, is done); the rank's [`Collective`] part, whose
//! body writes that rank's output and whose time is given; a record of its `done` event.
//!
//! A rank whose peers are in other processes is put on its stream alone: its `send` reads its
//! input and hands it on when the stream reaches it (taking no time), and its part waits for
//! its `gate` (its output has come) before it runs. Its time starts when its own stream is
//! ready: the processes' timelines are their own.

use super::entry::{call, enter, wait};
use super::errors::Code;
use super::event::Event;
use super::library::{Body, DeviceMemory};
use super::queue::Op;
use super::{Inner, Kind};
use crate::profile::Profile;
use crate::state::Sim;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// One rank's part of a collective, as its stream runs it.
pub struct Collective {
    /// The kernel's name, as NCCL launches it (what CUPTI reports).
    pub name: String,
    /// Its modelled time on the links, seconds (see [`crate::clock::Clock::collective`]).
    pub seconds: f64,
    /// Writes the rank's output.
    pub body: Body,
    /// Whether the part may run yet (`None`: as soon as its stream reaches it).
    pub gate: Option<Gate>,
}

/// Whether a collective's part may run yet: its output has come from another process.
pub type Gate = Box<dyn Fn() -> bool + Send>;

/// A rank of a collective: its device, the stream the caller gave (NULL: the device's null
/// stream), its private events, what reads and sends its input to other processes (`None` in
/// one process) and its part.
pub struct Rank {
    pub gpu: usize,
    pub stream: *mut c_void,
    pub arrive: u64,
    pub done: u64,
    pub send: Option<Body>,
    pub part: Collective,
}

/// The profile of the simulated host (initialising the driver, as NCCL's runtime does).
pub fn profile() -> Result<Profile, Code> {
    let mut found = Err(Code::NOT_INITIALIZED);
    status(super::cuInit(0))?;
    status(call(|sim| {
        found = Ok(enter(sim)?.profile.clone());
        Ok(())
    }))?;
    found
}

/// A private timing event on `gpu`, whose primary context must be active.
pub fn event(gpu: usize) -> Result<u64, Code> {
    let mut made = Err(Code::INVALID_CONTEXT);
    status(call(|sim| {
        let mut inner = enter(sim)?;
        inner.active(gpu)?;
        let handle = inner.handle(Kind::Event);
        inner.events.insert(handle, Event::new(gpu, true));
        made = Ok(handle);
        Ok(())
    }))?;
    made
}

/// Runs whatever may run now on `sim`'s streams, as a GPU goes on without its host: called when
/// a rank's output has come from another process, so that its part and the work after it (the
/// next collective's send) run before the host next calls the driver. No driver call is
/// counted.
pub fn progress(sim: &'static Sim) {
    let _ = catch_unwind(AssertUnwindSafe(|| enter(sim).map(drop)));
}

/// Forgets a private event (a wait on it no longer waits).
pub fn forget(event: u64) {
    let _ = call(|sim| {
        enter(sim)?.events.remove(&event);
        Ok(())
    });
}

/// Waits until the work `event`'s last record follows is done, or its device has faulted.
pub fn synchronize(event: u64) -> Result<(), Code> {
    status(call(|sim| {
        let target = (enter(sim)?.events.get(&event)).map_or(0, |e| e.recorded);
        wait(sim, |inner| match inner.events.get(&event) {
            None => Some(Ok(())),
            Some(e) => match inner.gpus[e.gpu].sticky {
                Some(code) => Some(Err(code)),
                None => (e.completed >= target).then_some(Ok(())),
            },
        })
    }))
}

/// Puts a collective on its ranks' streams (see the module's doc), all or nothing: a stream
/// that is not of its rank's device is `CUDA_ERROR_INVALID_HANDLE`, a device with a sticky
/// error answers it. With `hang`, each rank's part (and its send) never runs, nor anything
/// after it.
pub fn enqueue(ranks: Vec<Rank>, hang: bool) -> Result<(), Code> {
    status(call(|sim| {
        let mut inner = enter(sim)?;
        let mut keys = Vec::with_capacity(ranks.len());
        for rank in &ranks {
            inner.active(rank.gpu)?;
            let (key, on) = inner.stream(rank.stream, rank.gpu)?;
            let owned = |e: u64| inner.events.get(&e).is_some_and(|e| e.gpu == rank.gpu);
            if on != rank.gpu || !owned(rank.arrive) || !owned(rank.done) {
                return Err(Code::INVALID_HANDLE);
            }
            keys.push(key);
        }
        let arrivals: Vec<u64> = (ranks.iter().zip(&keys))
            .map(|(rank, &key)| inner.record(key, rank.gpu, rank.arrive))
            .collect();
        for (i, (rank, &key)) in ranks.iter().zip(&keys).enumerate() {
            for (j, other) in ranks.iter().enumerate().filter(|(j, _)| *j != i) {
                let wait = Op::WaitEvent {
                    event: other.arrive,
                    generation: arrivals[j],
                };
                inner.streams.push(key, rank.gpu, wait);
            }
        }
        for (rank, key) in ranks.into_iter().zip(keys) {
            if hang {
                inner.streams.push(key, rank.gpu, Op::Never);
            } else {
                if let Some(send) = rank.send {
                    inner.streams.push(key, rank.gpu, Op::Send(send));
                }
                let part = Op::Collective(Box::new(rank.part));
                inner.streams.push(key, rank.gpu, part);
            }
            inner.record(key, rank.gpu, rank.done);
        }
        inner.advance(sim);
        Ok(())
    }))
}

impl Inner {
    /// `gpu`'s primary context is active and has no sticky error.
    fn active(&self, gpu: usize) -> Result<(), Code> {
        let state = self.gpus.get(gpu).ok_or(Code::INVALID_DEVICE)?;
        if state.retained == 0 {
            return Err(Code::INVALID_CONTEXT);
        }
        state.sticky.map_or(Ok(()), Err)
    }

    /// Enqueues a record of `event` on stream `key` of `gpu`; the record's generation.
    fn record(&mut self, key: u64, gpu: usize, event: u64) -> u64 {
        let generation = self.events.get_mut(&event).map_or(0, |e| {
            e.recorded += 1;
            e.recorded
        });
        self.streams
            .push(key, gpu, Op::Record { event, generation });
        generation
    }

    /// Runs a collective's send: it reads the rank's input and hands it on.
    pub(super) fn run_send(&mut self, send: Body) -> Result<(), Code> {
        send(&mut DeviceMemory::of(self))
    }

    /// Runs a collective's part on `gpu`: its body, then its modelled time.
    pub(super) fn run_collective(&mut self, gpu: usize, part: Collective) -> Result<(), Code> {
        let outcome = (part.body)(&mut DeviceMemory::of(self));
        self.gpus[gpu].clock.collective(part.seconds);
        outcome
    }
}

/// A driver status as a `Result`.
fn status(code: super::errors::CUresult) -> Result<(), Code> {
    match code {
        0 => Ok(()),
        code => Err(Code(code)),
    }
}
