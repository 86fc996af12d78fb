//! The worker side of `bench`: runs as `stackbench __bench`, one process per combination with
//! its search path pinned as `check`'s workers are, and lives as long as that combination's
//! benchmarks (criterion asks it again and again).
//!
//! Its first line of input names the setup checks (`check`'s own: open the libraries, set up
//! the device, create the handles, compile the kernels); their results are its first answer.
//! Then each line is a [`Command`] and each answer a [`Reply`] on the protocol channel (the
//! original stdout; what libraries print goes to stderr). A command that fails is a `failed`
//! reply; the worker goes on. One workload is prepared at a time: preparing the next frees the
//! last one's memory (an NCCL worker keeps its communicators and their buffers, made once).

mod gate;
mod measure;
mod stream;
mod telemetry;
mod workloads;

use super::model::{CuptiCheck, Mode, StopReason, Verification, BITS};
use super::protocol::{Command, Limits, Measurement, Reply, Setup, Workload};
use crate::check::protocol::Component;
use crate::check::worker::device::DeviceBuffer;
use crate::check::worker::outcome::{Call, Outcome};
use crate::check::worker::session::{ImageKind, Session};
use crate::check::worker::{cupti, nvrtc, panicked, run_one};
use crate::nccl::api::Nccl;
use crate::nccl::clique::Clique;
use crate::nccl::collective::Collective;
use crate::probe::worker::{leave, plain_crashes, protocol_channel, send};
use crate::schema::check::CombinationReport;
use cudarc::driver::result as cu;
use cudarc::driver::sys::CUdevice_attribute;
use std::collections::HashSet;
use std::io::BufRead;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;
use std::time::Instant;
use stream::Stream;
use telemetry::Sampler;
use workloads::Run;

/// Runs the worker: the setup line, then one command per line until stdin closes.
pub fn run() -> ExitCode {
    plain_crashes();
    let mut lines = std::io::stdin().lock().lines();
    let setup: Setup = match lines.next().map(|l| l.map(|l| serde_json::from_str(&l))) {
        Some(Ok(Ok(setup))) => setup,
        _ => {
            eprintln!("stackbench __bench: no setup line on standard input");
            return ExitCode::from(2);
        }
    };
    let mut channel = match protocol_channel() {
        Ok(channel) => channel,
        Err(e) => {
            eprintln!("stackbench __bench: cannot set up the protocol channel: {e}");
            return ExitCode::from(2);
        }
    };
    let mut bench = Bench::new(setup, |reply| {
        if send(&mut channel, reply).is_err() {
            leave(3); // the parent is gone
        }
    });
    if send(&mut channel, &Reply::Ready).is_err() {
        leave(3);
    }
    for line in lines {
        let Ok(line) = line else { break };
        let reply = match serde_json::from_str::<Command>(&line) {
            Ok(command) => guarded(|| bench.answer(command)),
            Err(e) => Reply::Failed {
                reason: format!("not a command: {e}"),
            },
        };
        if send(&mut channel, &reply).is_err() {
            leave(3);
        }
    }
    leave(0)
}

/// The reply `answer` gives; a panic in it (a library's, or ours) is a failed reply, as a
/// panicking check is a failed check, and the worker goes on to the next command.
fn guarded(answer: impl FnOnce() -> Reply) -> Reply {
    catch_unwind(AssertUnwindSafe(answer)).unwrap_or_else(|panic| Reply::Failed {
        reason: panicked(panic.as_ref()),
    })
}

/// The worker's state: the checks' session (libraries, device, handles, kernels), the
/// benchmark's stream, the prepared workload, the L2 flush buffer, the NVML sampler, and the
/// NCCL communicators with the collective last verified on them.
struct Bench {
    session: Session,
    stream: Option<Stream>,
    prepared: Option<(Workload, Box<dyn Run>)>,
    flush: Option<DeviceBuffer<u8>>,
    sampler: Option<Result<Sampler, String>>,
    clique: Option<Communicators>,
    verified: Option<Workload>,
}

/// The NCCL communicators of every GPU of the request, with buffers of `buffers` bytes each,
/// or why they could not be made (kept, so a failed `ncclCommInitAll` is not tried again for
/// every size).
struct Communicators {
    buffers: u64,
    clique: Result<Clique, String>,
}

impl Bench {
    /// Runs the setup checks in order, as `check`'s worker would, telling `say` as each starts
    /// and ends (so the parent knows which one a crash or hang was).
    fn new(setup: Setup, mut say: impl FnMut(&Reply)) -> Bench {
        let ids = setup.check.run.clone();
        let mut session = Session::new(setup.check);
        let mut ran = HashSet::new();
        for id in ids {
            say(&Reply::Starting { id: id.clone() });
            let result = run_one(&id, &mut session, &mut ran);
            say(&Reply::Settled {
                result: result.clone(),
            });
            session.settled.push(result);
        }
        Bench {
            session,
            stream: None,
            prepared: None,
            flush: None,
            sampler: None,
            clique: None,
            verified: None,
        }
    }

    fn answer(&mut self, command: Command) -> Reply {
        let answered = match command {
            Command::Prepare { workload } => self.prepare(workload),
            Command::Time {
                workload,
                iterations,
            } => self.time(&workload, iterations),
            Command::Measure {
                workload,
                mode,
                limits,
            } => self.measure(&workload, mode, &limits).map(Reply::Measured),
        };
        answered.unwrap_or_else(|failure| Reply::Failed {
            reason: failure.reason,
        })
    }

    /// Creates the stream on first use (the device's context is current by then).
    fn ensure_stream(&mut self) -> Result<(), Outcome> {
        self.session.gpu()?;
        if self.stream.is_none() {
            self.stream = Some(Stream::new(self.session.request.driver.as_deref())?);
        }
        Ok(())
    }

    fn prepare(&mut self, workload: Workload) -> Result<Reply, Outcome> {
        if let Workload::Compile { kernel, arch } = &workload {
            let target = self.compile_target(arch)?;
            nvrtc::build(*kernel, &target)?;
            return Ok(Reply::Prepared { verification: None });
        }
        if let Workload::Collective {
            collective,
            bytes,
            buffers,
        } = workload
        {
            self.verified = None;
            let verified = self
                .clique(buffers)?
                .verify(collective, bytes as usize)
                .map_err(Outcome::fail)?;
            self.verified = Some(workload);
            return Ok(Reply::Prepared {
                verification: Some(Verification {
                    passed: true,
                    precision: BITS.to_owned(),
                    max_relative_error: 0.0,
                    tolerance: 0.0,
                    compared: verified.elements,
                }),
            });
        }
        self.prepared = None;
        self.ensure_stream()?;
        let stream = self
            .stream
            .as_ref()
            .ok_or_else(|| Outcome::fail("no stream"))?;
        let (run, verification) = workloads::prepare(&self.session, &workload, stream)?;
        if verification.passed {
            // One more run keeps what the first one loaded (modules, cuBLAS's kernels and
            // workspace) out of the samples.
            run.enqueue(stream)?;
            stream.synchronize()?;
            self.prepared = Some((workload, run));
        }
        Ok(Reply::Prepared {
            verification: Some(verification),
        })
    }

    /// The communicators of every GPU of the request, with buffers of at least `buffers` bytes:
    /// made on first use, and again (the old ones freed first) for larger buffers.
    fn clique(&mut self, buffers: u64) -> Result<&Clique, Outcome> {
        if self.clique.as_ref().is_none_or(|c| c.buffers < buffers) {
            self.clique = None;
            let devices = self.session.request.gpus();
            let clique = self
                .session
                .library(Component::Nccl)
                .and_then(Nccl::bind)
                .and_then(|nccl| Clique::open(nccl, &devices, buffers as usize));
            self.clique = Some(Communicators { buffers, clique });
        }
        match self.clique.as_ref().map(|c| &c.clique) {
            Some(Ok(clique)) => Ok(clique),
            Some(Err(why)) => Err(Outcome::fail(why.clone())),
            None => Err(Outcome::fail("no communicators")),
        }
    }

    /// The communicators `workload`, a collective, was verified on, with its collective and
    /// size; a failure saying it was not verified otherwise.
    fn verified(&self, workload: &Workload) -> Result<(&Clique, Collective, usize), Outcome> {
        match (workload, &self.verified, &self.clique) {
            (
                Workload::Collective {
                    collective, bytes, ..
                },
                Some(verified),
                Some(Communicators {
                    clique: Ok(clique), ..
                }),
            ) if verified == workload => Ok((clique, *collective, *bytes as usize)),
            _ => Err(Outcome::fail(
                "not prepared (or its output did not verify): send prepare first",
            )),
        }
    }

    /// The prepared run of `workload`, or a failure saying it was not prepared.
    fn prepared(&self, workload: &Workload) -> Result<(&dyn Run, &Stream), Outcome> {
        match (&self.prepared, &self.stream) {
            (Some((prepared, run)), Some(stream)) if prepared == workload => {
                Ok((run.as_ref(), stream))
            }
            _ => Err(Outcome::fail(
                "not prepared (or its output did not verify): send prepare first",
            )),
        }
    }

    fn time(&mut self, workload: &Workload, iterations: u64) -> Result<Reply, Outcome> {
        if let Workload::Compile { kernel, arch } = workload {
            let target = self.compile_target(arch)?;
            let began = Instant::now();
            for _ in 0..iterations {
                nvrtc::build(*kernel, &target)?;
            }
            return Ok(Reply::Timed {
                time_ns: began.elapsed().as_secs_f64() * 1e9,
            });
        }
        if let Workload::Collective { .. } = workload {
            let (clique, collective, bytes) = self.verified(workload)?;
            let time_ns =
                (clique.time_runs(collective, bytes, iterations)).map_err(Outcome::fail)?;
            return Ok(Reply::Timed { time_ns });
        }
        let (run, stream) = self.prepared(workload)?;
        let gpu = measure::gpu_time(run, stream, iterations)?;
        Ok(Reply::Timed {
            time_ns: gpu.as_secs_f64() * 1e9,
        })
    }

    fn measure(
        &mut self,
        workload: &Workload,
        mode: Mode,
        limits: &Limits,
    ) -> Result<Measurement, Outcome> {
        let rule = limits.rule();
        if let Workload::Compile { kernel, arch } = workload {
            let target = self.compile_target(arch)?;
            let mut samples = measure::cpu(&rule, || nvrtc::build(*kernel, &target).map(drop))?;
            let who = if self.session.gpu.is_some() {
                "device"
            } else {
                "target"
            };
            samples
                .notes
                .extend(target.why(who).map(|why| match target.kind() {
                    ImageKind::Ptx => format!("compiled to PTX for {}: {why}", target.arch()),
                    ImageKind::Cubin => format!("compiled for {}: {why}", target.arch()),
                }));
            return Ok(measurement(samples, None, None));
        }
        if let Workload::Collective { .. } = workload {
            let (clique, collective, bytes) = self.verified(workload)?;
            let simulated = CombinationReport::ran_simulated(&self.session.settled);
            let samples = measure::collective(clique, collective, bytes, &rule, simulated)?;
            return Ok(measurement(samples, None, None));
        }
        if mode == Mode::Cold && self.flush.is_none() {
            self.flush = Some(DeviceBuffer::alloc(flush_bytes(self.l2_bytes()?))?);
        }
        self.start_sampler();
        let (sampler, no_telemetry) = match &self.sampler {
            Some(Ok(sampler)) => (Some(sampler), None),
            Some(Err(why)) => (None, Some(why.clone())),
            None => (None, None),
        };
        let (run, stream) = self.prepared(workload)?;
        let (mut samples, telemetry) =
            measure::gpu(run, stream, mode, &rule, self.flush.as_ref(), sampler)?;
        samples.notes.extend(no_telemetry);
        let cupti = match (mode, workload) {
            (Mode::Batch, Workload::VectorAdd { .. } | Workload::Matmul { .. }) => self
                .cross_check(workload, samples.batch)
                .map_err(|e| {
                    samples
                        .notes
                        .push(format!("CUPTI cross-check: {}", e.reason))
                })
                .ok(),
            _ => None,
        };
        Ok(measurement(samples, telemetry, cupti))
    }

    /// What a compile benchmark for `arch` (`sm_90`) builds: what `nvrtc.compile_*` built for
    /// it, so bench and check compile alike (PTX for a device newer than this NVRTC).
    fn compile_target(&mut self, arch: &str) -> Result<nvrtc::Target, Outcome> {
        let cc = crate::compat::ComputeCapability::parse(arch)
            .ok_or_else(|| Outcome::fail(format!("not an architecture: {arch}")))?;
        nvrtc::target(&mut self.session, cc)
    }

    /// The device's L2 cache size (`CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE`).
    fn l2_bytes(&self) -> Result<usize, Outcome> {
        let device = self.session.gpu()?.device;
        // SAFETY: a device handle from cuDeviceGet and a valid attribute.
        let bytes = unsafe {
            cu::device::get_attribute(
                device,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
            )
        }
        .call("cuDeviceGetAttribute(L2_CACHE_SIZE)")?;
        Ok(bytes.max(1) as usize)
    }

    /// Starts the NVML sampler for the device, once; or keeps why there is none.
    fn start_sampler(&mut self) {
        if self.sampler.is_none() {
            let started = match (&self.session.request.nvml, self.pci_bus_id()) {
                (None, _) => Err("no NVML in this combination: no telemetry".to_owned()),
                (Some(_), Err(e)) => Err(format!("no telemetry: {}", e.reason)),
                (Some(path), Ok(bus)) => Sampler::start(path.clone(), bus),
            };
            self.sampler = Some(started);
        }
    }

    /// The device's PCI address as NVML takes it (`domain:bus:device.0`, hexadecimal).
    fn pci_bus_id(&self) -> Result<String, Outcome> {
        let device = self.session.gpu()?.device;
        let attribute = |a: CUdevice_attribute| {
            // SAFETY: as in `l2_bytes`.
            unsafe { cu::device::get_attribute(device, a) }.call("cuDeviceGetAttribute(PCI)")
        };
        Ok(format!(
            "{:x}:{:x}:{:x}.0",
            attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
            attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
            attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?
        ))
    }

    /// Runs one batch of the prepared workload under CUPTI's kernel activity, timed with CUDA
    /// events as the samples are, and compares the kernels' own durations with the events' time
    /// of the same launches.
    fn cross_check(&mut self, workload: &Workload, batch: u64) -> Result<CuptiCheck, Outcome> {
        if self.session.request.file(Component::Cupti).is_none() {
            return Err(Outcome::fail("no CUPTI in this combination"));
        }
        let (Some(prepared), Some(stream)) = (self.prepared.take(), self.stream.take()) else {
            return Err(Outcome::fail("not prepared"));
        };
        let runs = batch.clamp(1, measure::MAX_BATCH);
        let timer = stream::Timer::new();
        let mut event = None;
        let records = cupti::kernel_records(&mut self.session, || {
            let timed = timer?.time(&stream, || {
                measure::enqueue_runs(prepared.1.as_ref(), &stream, runs)
            })?;
            if !timed.held && stream.ungated().is_none() {
                return Err(Outcome::fail(
                    "the launch queue filled behind the held stream: the events' time is not the kernels'",
                ));
            }
            event = Some(timed.gpu);
            Ok(())
        });
        let same = &prepared.0 == workload;
        self.prepared = Some(prepared);
        self.stream = Some(stream);
        let records = records?;
        let (Some(event), true) = (event, same) else {
            return Err(Outcome::fail("not prepared"));
        };
        if records.is_empty() {
            return Err(Outcome::fail("CUPTI recorded no kernel"));
        }
        let kernels: f64 = records
            .iter()
            .map(|r| r.end.saturating_sub(r.start) as f64)
            .sum();
        let kernel_ns = kernels / runs as f64;
        Ok(CuptiCheck {
            kernel_ns,
            event_over_cupti: event.as_secs_f64() * 1e9 / runs as f64 / kernel_ns,
            launches: records.len(),
        })
    }
}

/// The bytes cold mode writes before each sample to evict L2: twice the device's L2, and at
/// least 256 MiB (a write of exactly the L2's size leaves part of it in a cache that is not
/// strictly LRU).
pub fn flush_bytes(l2_bytes: usize) -> usize {
    (2 * l2_bytes).max(256 << 20)
}

fn measurement(
    samples: measure::Samples,
    telemetry: Option<crate::bench::model::Telemetry>,
    cupti: Option<CuptiCheck>,
) -> Measurement {
    let kept = samples.kept.items();
    Measurement {
        samples_ns: kept.iter().map(|s| s.time_ns).collect(),
        host_ns: kept.iter().map(|s| s.host_ns).collect(),
        samples_taken: samples.running.count(),
        noise: samples.running.noise(),
        batch: samples.batch,
        stopped_by: samples.stopped_by.unwrap_or(StopReason::TimeLimit),
        telemetry,
        cupti,
        notes: samples.notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_that_panics_is_a_failed_reply() {
        let reply = guarded(|| panic!("cudarc: Unable to dynamically load cuStreamWaitValue32_v2"));
        assert_eq!(
            reply,
            Reply::Failed {
                reason: "panicked: cudarc: Unable to dynamically load cuStreamWaitValue32_v2"
                    .into()
            }
        );
        assert_eq!(guarded(|| Reply::Ready), Reply::Ready);
    }

    #[test]
    fn cold_samples_flush_twice_the_l2_and_never_less_than_256_mib() {
        // H100: 50 MiB of L2.
        assert_eq!(flush_bytes(50 << 20), 256 << 20);
        // A (future) 200 MiB L2.
        assert_eq!(flush_bytes(200 << 20), 400 << 20);
    }

    #[test]
    fn what_is_kept_of_many_samples_is_capped_and_counted() {
        let rule = crate::bench::stats::StopRule {
            min_samples: 20_000,
            min_time: std::time::Duration::ZERO,
            max_noise: f64::INFINITY,
            time_limit: std::time::Duration::from_secs(600),
        };
        let samples = measure::cpu(&rule, || Ok(())).unwrap();
        let m = measurement(samples, None, None);
        assert_eq!(m.samples_taken, 20_000);
        assert!(m.samples_ns.len() <= crate::bench::stats::KEPT_SAMPLES);
        assert!(m.samples_ns.len() >= crate::bench::stats::KEPT_SAMPLES / 2);
        assert_eq!(m.host_ns.len(), m.samples_ns.len());
    }
}
