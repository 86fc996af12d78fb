//! The benchmark's own stream and the CUDA events that time work on it (driver API, cudarc's
//! `result` layer), each destroyed when dropped.

use crate::check::worker::outcome::{Call, Outcome};
use cudarc::driver::result::{self as cu, stream::StreamKind};
use cudarc::driver::sys::{CUevent, CUevent_flags, CUstream};
use std::time::{Duration, Instant};

/// A non-blocking stream in the current context.
pub struct Stream(CUstream);

impl Stream {
    pub fn new() -> Result<Stream, Outcome> {
        cu::stream::create(StreamKind::NonBlocking)
            .map(Stream)
            .call("cuStreamCreate")
    }

    pub fn raw(&self) -> CUstream {
        self.0
    }

    /// Waits for everything enqueued so far (`cuStreamSynchronize`).
    pub fn synchronize(&self) -> Result<(), Outcome> {
        // SAFETY: a live stream of this context.
        unsafe { cu::stream::synchronize(self.0) }.call("cuStreamSynchronize")
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: created in `new` and destroyed once, here.
        let _ = unsafe { cu::stream::destroy(self.0) };
    }
}

/// A timing event.
struct Event(CUevent);

impl Event {
    fn new() -> Result<Event, Outcome> {
        cu::event::create(CUevent_flags::CU_EVENT_DEFAULT)
            .map(Event)
            .call("cuEventCreate")
    }

    fn record(&self, stream: &Stream) -> Result<(), Outcome> {
        // SAFETY: a live event and stream of the current context.
        unsafe { cu::event::record(self.0, stream.raw()) }.call("cuEventRecord")
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created in `new` and destroyed once, here, after its last use.
        let _ = unsafe { cu::event::destroy(self.0) };
    }
}

/// The two events around the work of one sample.
pub struct Timer {
    start: Event,
    stop: Event,
}

/// The GPU time between the events and the host time from just before the first was recorded
/// to the moment the second was reached.
#[derive(Debug, Clone, Copy)]
pub struct Timed {
    pub gpu: Duration,
    pub host: Duration,
}

impl Timer {
    pub fn new() -> Result<Timer, Outcome> {
        Ok(Timer {
            start: Event::new()?,
            stop: Event::new()?,
        })
    }

    /// Records the start event, lets `enqueue` put work on `stream`, records the stop event and
    /// waits for it.
    pub fn time(
        &self,
        stream: &Stream,
        enqueue: impl FnOnce() -> Result<(), Outcome>,
    ) -> Result<Timed, Outcome> {
        let began = Instant::now();
        self.start.record(stream)?;
        enqueue()?;
        self.stop.record(stream)?;
        // SAFETY: a live event just recorded.
        unsafe { cu::event::synchronize(self.stop.0) }.call("cuEventSynchronize")?;
        let host = began.elapsed();
        // SAFETY: both events are live and were recorded on the same stream, and have completed.
        let ms =
            unsafe { cu::event::elapsed(self.start.0, self.stop.0) }.call("cuEventElapsedTime")?;
        Ok(Timed {
            gpu: Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3),
            host,
        })
    }
}
