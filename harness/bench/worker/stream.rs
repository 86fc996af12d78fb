//! The benchmark's own stream, its gate, and the CUDA events that time work on it (driver API,
//! cudarc's `result` layer), each destroyed when dropped.

use super::gate::Gate;
use crate::check::worker::outcome::{Call, Outcome};
use cudarc::driver::result::{self as cu, stream::StreamKind};
use cudarc::driver::sys::{self, CUevent, CUevent_flags, CUstream};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long the GPU may take to pass the gate once the host opened it, when it is tried.
const PROBE: Duration = Duration::from_secs(1);

/// A non-blocking stream in the current context, with the gate that holds it while a sample is
/// enqueued, when the device has one.
pub struct Stream {
    raw: CUstream,
    gate: Result<Gate, String>,
}

impl Stream {
    /// A new stream; its gate is tried once (held and opened on an empty sample) and left out,
    /// with the reason, where `driver` (the `libcuda.so.1` in use) refuses it, or where the GPU
    /// does not see it open within [`PROBE`] (then the stream stuck behind it is left, and its
    /// word never freed, and a fresh stream is made).
    pub fn new(driver: Option<&Path>) -> Result<Stream, Outcome> {
        let raw = cu::stream::create(StreamKind::NonBlocking).call("cuStreamCreate")?;
        let gate = match driver {
            None => Err("no driver library was named".to_owned()),
            Some(driver) => Gate::new(driver).map_err(|e| e.reason),
        };
        let mut stream = Stream {
            raw,
            gate: Err(String::new()),
        };
        stream.gate = match gate {
            Err(why) => Err(why),
            Ok(gate) => match gate.hold(&stream, || ()) {
                Err(refused) => Err(refused.reason),
                Ok(_) if stream.settles_within(PROBE)? => Ok(gate),
                Ok(_) => {
                    std::mem::forget(gate);
                    let fresh = cu::stream::create(StreamKind::NonBlocking);
                    stream.raw = fresh.call("cuStreamCreate")?;
                    Err(format!(
                        "the GPU did not see the stream's gate open within {} ms",
                        PROBE.as_millis()
                    ))
                }
            },
        };
        Ok(stream)
    }

    pub fn raw(&self) -> CUstream {
        self.raw
    }

    /// Why samples on this stream are timed without a gate (launch gaps then count as GPU
    /// time), if they are.
    pub fn ungated(&self) -> Option<&str> {
        self.gate.as_ref().err().map(String::as_str)
    }

    /// Waits for everything enqueued so far (`cuStreamSynchronize`).
    pub fn synchronize(&self) -> Result<(), Outcome> {
        // SAFETY: a live stream of this context.
        unsafe { cu::stream::synchronize(self.raw) }.call("cuStreamSynchronize")
    }

    /// Whether everything enqueued so far completes within `limit` (`cuStreamQuery`, polled).
    fn settles_within(&self, limit: Duration) -> Result<bool, Outcome> {
        let began = Instant::now();
        loop {
            // SAFETY: a live stream of this context.
            match unsafe { sys::cuStreamQuery(self.raw) } {
                sys::CUresult::CUDA_SUCCESS => return Ok(true),
                sys::CUresult::CUDA_ERROR_NOT_READY if began.elapsed() < limit => {
                    std::thread::sleep(Duration::from_micros(100))
                }
                sys::CUresult::CUDA_ERROR_NOT_READY => return Ok(false),
                error => return error.result().call("cuStreamQuery").map(|()| true),
            }
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // Every hold of the gate was opened; wait until the GPU has passed them all, so the
        // gate's word (freed after this) is read no more.
        let _ = self.synchronize();
        // SAFETY: created in `new` and destroyed once, here.
        let _ = unsafe { cu::stream::destroy(self.raw) };
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

/// The GPU time between the events, the host time from just before the first was recorded to
/// the moment the second was reached, and whether the stream was held at its gate until
/// everything between them was enqueued.
#[derive(Debug, Clone, Copy)]
pub struct Timed {
    pub gpu: Duration,
    pub host: Duration,
    pub held: bool,
}

impl Timer {
    pub fn new() -> Result<Timer, Outcome> {
        Ok(Timer {
            start: Event::new()?,
            stop: Event::new()?,
        })
    }

    /// With the stream held at its gate: records the start event, lets `enqueue` put work on
    /// `stream`, records the stop event; then opens the gate and waits for the stop event.
    pub fn time(
        &self,
        stream: &Stream,
        enqueue: impl FnOnce() -> Result<(), Outcome>,
    ) -> Result<Timed, Outcome> {
        let began = Instant::now();
        let sample = || {
            self.start.record(stream)?;
            enqueue()?;
            self.stop.record(stream)
        };
        let held = match &stream.gate {
            Ok(gate) => {
                let (enqueued, held) = gate.hold(stream, sample)?;
                enqueued?;
                held
            }
            Err(_) => {
                sample()?;
                false
            }
        };
        // SAFETY: a live event just recorded.
        unsafe { cu::event::synchronize(self.stop.0) }.call("cuEventSynchronize")?;
        let host = began.elapsed();
        // SAFETY: both events are live and were recorded on the same stream, and have completed.
        let ms =
            unsafe { cu::event::elapsed(self.start.0, self.stop.0) }.call("cuEventElapsedTime")?;
        Ok(Timed {
            gpu: Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3),
            host,
            held,
        })
    }
}
