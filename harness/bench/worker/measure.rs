//! Taking samples: GPU work timed with CUDA events on the benchmark's stream, cold (L2 flushed
//! with a write of the device's L2 size before each sample, one run per sample) or batch (runs
//! back to back between one pair of events, the time divided by their number); CPU work timed
//! with the host clock. Sampling stops by [`StopRule`].

use super::stream::{Stream, Timer};
use super::telemetry::{self, Reading, Sampler};
use super::workloads::Run;
use crate::bench::model::{Mode, StopReason, Telemetry};
use crate::bench::stats::StopRule;
use crate::check::worker::device::DeviceBuffer;
use crate::check::worker::outcome::{Call, Outcome};
use cudarc::driver::result as cu;
use std::time::{Duration, Instant};

/// How long one batch-mode sample should take at least, so the events' resolution (about half
/// a microsecond) and launch gaps stay out of the figure.
const BATCH_SAMPLE: Duration = Duration::from_millis(1);

/// The most runs in one batch-mode sample.
const MAX_BATCH: u64 = 10_000;

/// Samples of one workload.
#[derive(Debug, Default)]
pub struct Samples {
    /// Time per run, ns.
    pub times_ns: Vec<f64>,
    /// Host time per run, ns.
    pub host_ns: Vec<f64>,
    /// When each sample ran.
    pub windows: Vec<(Instant, Instant)>,
    pub batch: u64,
    pub stopped_by: Option<StopReason>,
}

impl Samples {
    fn push(&mut self, time: Duration, host: Duration, window: (Instant, Instant)) {
        let runs = self.batch as f64;
        self.times_ns.push(time.as_secs_f64() * 1e9 / runs);
        self.host_ns.push(host.as_secs_f64() * 1e9 / runs);
        self.windows.push(window);
    }
}

/// The runs per batch-mode sample: enough for [`BATCH_SAMPLE`] at the speed of one run.
pub fn batch_size(one_run: Duration) -> u64 {
    if one_run.is_zero() {
        return MAX_BATCH;
    }
    (BATCH_SAMPLE.as_secs_f64() / one_run.as_secs_f64())
        .ceil()
        .clamp(1.0, MAX_BATCH as f64) as u64
}

/// Enqueues `runs` runs of `run` on `stream`.
pub fn enqueue_runs(run: &dyn Run, stream: &Stream, runs: u64) -> Result<(), Outcome> {
    (0..runs).try_for_each(|_| run.enqueue(stream))
}

/// Samples GPU work until `rule` says stop, with NVML readings alongside when a sampler is
/// given. `flush` is the L2-sized buffer cold mode writes before each sample.
pub fn gpu(
    run: &dyn Run,
    stream: &Stream,
    mode: Mode,
    rule: &StopRule,
    flush: Option<&DeviceBuffer<u8>>,
    sampler: Option<&Sampler>,
) -> Result<(Samples, Option<Telemetry>), Outcome> {
    let timer = Timer::new()?;
    // A warm run, timed, sizes the batch.
    let one = timer.time(stream, || run.enqueue(stream))?.gpu;
    let mut samples = Samples {
        batch: match mode {
            Mode::Cold => 1,
            Mode::Batch => batch_size(one),
        },
        ..Samples::default()
    };
    if let Some(sampler) = sampler {
        sampler.begin();
    }
    let started = Instant::now();
    let sampled = loop {
        if mode == Mode::Cold {
            if let Some(flush) = flush {
                let value = (samples.times_ns.len() % 251) as u8 + 1;
                // SAFETY: the buffer is live and holds that many bytes; stream-ordered before the
                // sample's start event.
                if let Err(e) =
                    unsafe { cu::memset_d8_async(flush.ptr(), value, flush.bytes(), stream.raw()) }
                        .call("cuMemsetD8Async")
                {
                    break Err(e);
                }
            }
        }
        let begin = Instant::now();
        match timer.time(stream, || enqueue_runs(run, stream, samples.batch)) {
            Ok(timed) => samples.push(timed.gpu, timed.host, (begin, Instant::now())),
            Err(e) => break Err(e),
        }
        if let Some(reason) = rule.verdict(&samples.times_ns, started.elapsed()) {
            samples.stopped_by = Some(reason);
            break Ok(());
        }
    };
    let readings: Vec<Reading> = sampler.map(Sampler::end).unwrap_or_default();
    sampled?;
    let telemetry = sampler.map(|_| telemetry::summarize(&readings, &samples.windows));
    Ok((samples, telemetry))
}

/// Samples CPU work (`work` is one run) with the host clock until `rule` says stop, after one
/// warm-up run.
pub fn cpu(
    rule: &StopRule,
    mut work: impl FnMut() -> Result<(), Outcome>,
) -> Result<Samples, Outcome> {
    work()?;
    let mut samples = Samples {
        batch: 1,
        ..Samples::default()
    };
    let started = Instant::now();
    loop {
        let begin = Instant::now();
        work()?;
        let took = begin.elapsed();
        samples.push(took, took, (begin, Instant::now()));
        if let Some(reason) = rule.verdict(&samples.times_ns, started.elapsed()) {
            samples.stopped_by = Some(reason);
            return Ok(samples);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_last_a_millisecond() {
        assert_eq!(batch_size(Duration::from_micros(10)), 100);
        assert_eq!(batch_size(Duration::from_millis(3)), 1);
        assert_eq!(batch_size(Duration::from_nanos(1)), MAX_BATCH);
        assert_eq!(batch_size(Duration::ZERO), MAX_BATCH);
    }

    #[test]
    fn cpu_work_stops_on_the_rule_and_says_why() {
        let rule = StopRule {
            min_samples: 3,
            min_time: Duration::ZERO,
            max_noise: 10.0,
            time_limit: Duration::from_secs(5),
        };
        let mut runs = 0;
        let samples = cpu(&rule, || {
            runs += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(samples.times_ns.len(), 3);
        assert_eq!(runs, 4, "one warm-up run, then the samples");
        assert_eq!(samples.stopped_by, Some(StopReason::Noise));
    }

    #[test]
    fn cpu_work_that_fails_fails_the_measurement() {
        let rule = crate::bench::protocol::Limits::standard(1.0).rule();
        let failed = cpu(&rule, || Err(Outcome::fail("nvrtcCompileProgram failed")));
        assert_eq!(failed.unwrap_err().reason, "nvrtcCompileProgram failed");
    }
}
