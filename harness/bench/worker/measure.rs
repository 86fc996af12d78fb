//! Taking samples: GPU work timed with CUDA events on the benchmark's stream, held at its gate
//! while a sample is enqueued, cold (L2 flushed before each sample, one run per sample) or
//! batch (runs back to back between one pair of events, the time divided by their number); NCCL
//! collectives in batches timed on every rank's stream; CPU work timed with the host clock. Sampling stops by [`StopRule`]; the noise it watches covers
//! every sample, and a capped, evenly spread subsample is kept ([`Kept`]).

use super::stream::{Stream, Timed, Timer};
use super::telemetry::{self, Reading, Sampler};
use super::workloads::Run;
use crate::bench::model::{Mode, StopReason, Telemetry};
use crate::bench::stats::{Kept, Running, StopRule, KEPT_SAMPLES};
use crate::check::worker::device::DeviceBuffer;
use crate::check::worker::outcome::{Call, Outcome};
use crate::nccl::clique::Clique;
use crate::nccl::collective::Collective;
use cudarc::driver::result as cu;
use std::time::{Duration, Instant};

/// How long one batch-mode sample should take at least, so the events' resolution (about half
/// a microsecond) stays out of the figure.
const BATCH_SAMPLE: Duration = Duration::from_millis(1);

/// The most runs in one batch-mode sample: what is enqueued behind a held stream must fit in
/// its launch queue, which blocks the host at about a thousand pending launches.
pub const MAX_BATCH: u64 = 256;

/// GPU time spent running the workload before the first sample: a card idle until now runs
/// its first milliseconds at a lower clock while its boost ramps up.
const WARM_UP: Duration = Duration::from_millis(20);

/// The host time warm-up may take at most, for a workload slow to enqueue.
const WARM_UP_HOST: Duration = Duration::from_secs(2);

/// How many samples in a row may have their gate opened by the watchdog at one run each
/// before the workload counts as untimeable (a host stalled for a second now and then is not).
const STALLS: u32 = 3;

/// One sample: time per run (GPU or host), host time per run, and when it ran.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub time_ns: f64,
    pub host_ns: f64,
    pub window: (Instant, Instant),
}

/// Samples of one workload.
#[derive(Debug)]
pub struct Samples {
    pub kept: Kept<Sample>,
    /// Every sample's time per run.
    pub running: Running,
    pub batch: u64,
    pub stopped_by: Option<StopReason>,
    /// What the figures should be read with (a gate that could not hold, a batch cut short).
    pub notes: Vec<String>,
}

impl Samples {
    fn new(batch: u64) -> Samples {
        Samples {
            kept: Kept::new(KEPT_SAMPLES),
            running: Running::default(),
            batch,
            stopped_by: None,
            notes: Vec::new(),
        }
    }

    fn push(&mut self, time: Duration, host: Duration, window: (Instant, Instant)) {
        let runs = self.batch as f64;
        let time_ns = time.as_secs_f64() * 1e9 / runs;
        self.running.push(time_ns);
        self.kept.push(Sample {
            time_ns,
            host_ns: host.as_secs_f64() * 1e9 / runs,
            window,
        });
    }

    /// Whether `rule` says stop now, noting why when it does.
    fn stop(&mut self, rule: &StopRule, elapsed: Duration) -> bool {
        self.stopped_by = rule.verdict(&self.running, elapsed);
        self.stopped_by.is_some()
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

/// The GPU time of `runs` runs, timed in gated chunks of at most [`MAX_BATCH`] runs; a chunk
/// whose gate the watchdog opened is timed again at half the size.
pub fn gpu_time(run: &dyn Run, stream: &Stream, runs: u64) -> Result<Duration, Outcome> {
    let timer = Timer::new()?;
    let mut total = Duration::ZERO;
    let (mut left, mut most, mut stalls) = (runs, MAX_BATCH, 0);
    while left > 0 {
        let chunk = left.min(most);
        let timed = timer.time(stream, || enqueue_runs(run, stream, chunk))?;
        if counts(&timed, stream, &mut most, &mut stalls)? {
            total += timed.gpu;
            left -= chunk;
        }
    }
    Ok(total)
}

/// Whether a sample counts: held throughout, or taken on a stream with no gate. Where the
/// watchdog opened its gate, the batch `most` is halved (or, at one run, the stall counted) and
/// the caller times it again; too many stalls in a row at one run fail.
fn counts(
    timed: &Timed,
    stream: &Stream,
    most: &mut u64,
    stalls: &mut u32,
) -> Result<bool, Outcome> {
    retry(timed.held || stream.ungated().is_some(), most, stalls)
}

/// [`counts`], given whether the sample was held.
fn retry(held: bool, most: &mut u64, stalls: &mut u32) -> Result<bool, Outcome> {
    if held {
        *stalls = 0;
        return Ok(true);
    }
    if *most > 1 {
        *most /= 2;
        return Ok(false);
    }
    *stalls += 1;
    if *stalls >= STALLS {
        return Err(Outcome::fail(format!(
            "the stream's gate was opened by its watchdog {STALLS} times in a row at a single \
             launch: the host could not enqueue one run within {} s",
            super::gate::WATCHDOG.as_secs()
        )));
    }
    Ok(false)
}

/// Samples GPU work until `rule` says stop, with NVML readings alongside when a sampler is
/// given. `flush` is the buffer cold mode writes before each sample to evict L2. A sample
/// whose gate the watchdog had to open (the launch queue filled behind it) is dropped and
/// the batch halved.
pub fn gpu(
    run: &dyn Run,
    stream: &Stream,
    mode: Mode,
    rule: &StopRule,
    flush: Option<&DeviceBuffer<u8>>,
    sampler: Option<&Sampler>,
) -> Result<(Samples, Option<Telemetry>), Outcome> {
    let timer = Timer::new()?;
    let one = warm_up(|runs| Ok(timer.time(stream, || enqueue_runs(run, stream, runs))?.gpu))?;
    let mut samples = Samples::new(match mode {
        Mode::Cold => 1,
        Mode::Batch => batch_size(one),
    });
    if let Some(why) = stream.ungated() {
        samples.notes.push(format!(
            "the stream could not be held while samples were enqueued ({why}): launch gaps count as GPU time"
        ));
    }
    if let Some(sampler) = sampler {
        sampler.begin();
    }
    let started = Instant::now();
    let mut stalls = 0;
    let sampled = loop {
        if mode == Mode::Cold {
            if let Some(flush) = flush {
                let value = (samples.running.count() % 251) as u8 + 1;
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
        let timed = match timer.time(stream, || enqueue_runs(run, stream, samples.batch)) {
            Ok(timed) => timed,
            Err(e) => break Err(e),
        };
        let batch = samples.batch;
        match counts(&timed, stream, &mut samples.batch, &mut stalls) {
            Ok(true) => samples.push(timed.gpu, timed.host, (begin, Instant::now())),
            Ok(false) if samples.batch < batch => samples.notes.push(format!(
                "the launch queue filled behind the held stream: batch cut from {batch} to {}",
                samples.batch
            )),
            Ok(false) => {}
            Err(e) => break Err(e),
        }
        if samples.stop(rule, started.elapsed()) {
            break Ok(());
        }
    };
    let readings: Vec<Reading> = sampler.map(Sampler::end).unwrap_or_default();
    sampled?;
    let windows: Vec<(Instant, Instant)> = samples.kept.items().iter().map(|s| s.window).collect();
    let telemetry = sampler.map(|_| telemetry::summarize(&readings, &windows));
    Ok((samples, telemetry))
}

/// Runs the work in doubling batches (`time` runs a batch and gives its GPU time) until
/// [`WARM_UP`] of GPU time has passed (or [`WARM_UP_HOST`] of host time); the last batch's time
/// per run, which sizes the batches.
fn warm_up(mut time: impl FnMut(u64) -> Result<Duration, Outcome>) -> Result<Duration, Outcome> {
    let began = Instant::now();
    let (mut runs, mut warmed) = (1u64, Duration::ZERO);
    loop {
        let gpu = time(runs)?;
        warmed += gpu;
        let one = gpu / runs as u32;
        if warmed >= WARM_UP || began.elapsed() >= WARM_UP_HOST {
            return Ok(one);
        }
        runs = (runs * 2).min(MAX_BATCH);
    }
}

/// Samples an NCCL collective on every GPU of `clique` until `rule` says stop, after a warm-up,
/// in batches of runs back to back (nccl-tests' `-n`) of at least [`BATCH_SAMPLE`]: each
/// sample's time is the slowest rank's, from CUDA events on each rank's stream. Nothing holds
/// the streams while a batch is enqueued: as in nccl-tests, launch gaps count. On the
/// `simulated` driver one run warms up and each sample is one run: its collectives have no
/// clock to ramp, its events no resolution to beat, and each run costs the host's CPU every
/// rank's output.
pub fn collective(
    clique: &Clique,
    collective: Collective,
    bytes: usize,
    rule: &StopRule,
    simulated: bool,
) -> Result<Samples, Outcome> {
    let time = |runs: u64| {
        let ns = (clique.time_runs(collective, bytes, runs)).map_err(Outcome::fail)?;
        Ok(Duration::from_secs_f64(ns.max(0.0) / 1e9))
    };
    let batch = if simulated {
        time(1)?;
        1
    } else {
        batch_size(warm_up(time)?)
    };
    let mut samples = Samples::new(batch);
    let started = Instant::now();
    loop {
        let begin = Instant::now();
        let gpu = time(samples.batch)?;
        samples.push(gpu, begin.elapsed(), (begin, Instant::now()));
        if samples.stop(rule, started.elapsed()) {
            return Ok(samples);
        }
    }
}

/// Samples CPU work (`work` is one run) with the host clock until `rule` says stop, after one
/// warm-up run.
pub fn cpu(
    rule: &StopRule,
    mut work: impl FnMut() -> Result<(), Outcome>,
) -> Result<Samples, Outcome> {
    work()?;
    let mut samples = Samples::new(1);
    let started = Instant::now();
    loop {
        let begin = Instant::now();
        work()?;
        let took = begin.elapsed();
        samples.push(took, took, (begin, Instant::now()));
        if samples.stop(rule, started.elapsed()) {
            return Ok(samples);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_the_watchdog_opened_halves_the_batch_then_fails_after_repeated_stalls() {
        let (mut most, mut stalls) = (8, 0);
        assert!(retry(true, &mut most, &mut stalls).unwrap());
        // The launch queue filled behind the gate: time again, at half the runs.
        assert!(!retry(false, &mut most, &mut stalls).unwrap());
        assert_eq!(most, 4);
        (0..2).for_each(|_| assert!(!retry(false, &mut most, &mut stalls).unwrap()));
        assert_eq!((most, stalls), (1, 0));
        // At one run a stall is the host's; one held sample forgives it, three in a row fail.
        assert!(!retry(false, &mut most, &mut stalls).unwrap());
        assert!(retry(true, &mut most, &mut stalls).unwrap());
        assert!(!retry(false, &mut most, &mut stalls).unwrap());
        assert!(!retry(false, &mut most, &mut stalls).unwrap());
        let failed = retry(false, &mut most, &mut stalls).unwrap_err();
        assert!(
            failed.reason.contains("3 times in a row"),
            "{}",
            failed.reason
        );
    }

    #[test]
    fn batches_last_a_millisecond_up_to_what_the_launch_queue_holds() {
        assert_eq!(batch_size(Duration::from_micros(10)), 100);
        assert_eq!(batch_size(Duration::from_millis(3)), 1);
        assert_eq!(batch_size(Duration::from_micros(1)), MAX_BATCH);
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
        assert_eq!(samples.kept.items().len(), 3);
        assert_eq!(samples.running.count(), 3);
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
