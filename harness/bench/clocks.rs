//! `bench --lock-clocks`: the selected GPUs' clocks locked where fleets lock them for
//! benchmarks, before anything is measured, and reset after the run (NVML's
//! `nvmlDeviceSetGpuLockedClocks` and `nvmlDeviceSetMemoryLockedClocks`; root only). The SM
//! clock is locked at the clock the card sustains at its power limit, NVML's TDP clock limit
//! id (`NVML_CLOCK_LIMIT_ID_TDP`, as nvbench's `--lock-gpu-clocks base` asks for), so that a
//! power cap has as little as possible to take; where the driver refuses the limit id, at the
//! default applications clock (on an H100, the maximum). The memory clock is locked at its
//! default applications clock where the GPU can (from Ampere on). GPUs are addressed by UUID,
//! which no `CUDA_VISIBLE_DEVICES` renumbers; each lock is read back and recorded as read.
//!
//! The locks are held by a small process of stackbench's own, `stackbench __clocks hold IDS`:
//! it locks, answers, then waits for its standard input to close, and resets. bench holds that
//! pipe's only writer, so the reset comes however bench ends: at the end of the run, on an
//! interrupt (SIGINT, SIGTERM, SIGHUP, where a reset helper also runs: [`crate::lifetime`]), or
//! killed outright (SIGKILL, the OOM killer), when the kernel closes the pipe. The holder
//! stays in the node's namespace and clears the death signal every child is given, so that it
//! outlives bench by the reset and no longer (an alarm bounds it). Holding NVML open for the
//! run, it keeps the driver's state where persistence mode is off; bench warns all the same.
//!
//! A lock is a request: NVML documents its SW power cap reason as "reducing the clocks below
//! requested clocks". After the run, each lock records where its GPU's results ran held back
//! below it (the lowest SM clock, and the reasons), and bench says so.

use crate::bench::model::BenchResult;
use crate::process::Sight;
use crate::trust::Policy;
use nvml_wrapper::enum_wrappers::device::{Clock, ClockLimitId};
use nvml_wrapper::enums::device::GpuLockedClocksSetting;
use nvml_wrapper::{Device, Nvml};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitCode};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// How long the holder may take to lock or to reset.
const HELPER_TIMEOUT: Duration = Duration::from_secs(30);

/// The clock an SM lock asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockTarget {
    /// NVML's TDP clock limit id: the clock the card sustains at its power limit.
    Tdp,
    /// The default applications clock: the driver refused the TDP limit id.
    DefaultApplications,
}

/// Where a locked GPU's results ran below the lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldBelow {
    /// The lowest SM clock NVML read during their samples, MHz.
    pub lowest_sm_mhz: u32,
    /// The results that ran a sample held back.
    pub results: usize,
    /// The clocks event reasons that held them back, by name (`sw_power_cap`).
    pub reasons: Vec<String>,
}

/// The clocks one GPU was locked at for a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockedClocks {
    /// The GPU's ordinal.
    pub index: u32,
    /// The GPU it was locked on, by NVML's UUID (schema minor 7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// The SM (graphics) clock, MHz: from minor 7 the clock NVML read once locked, before, the
    /// clock asked for.
    pub sm_mhz: u32,
    /// The memory clock, MHz; absent where the GPU cannot lock it (before Ampere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mhz: Option<u32>,
    /// What the SM lock asked for (minor 7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<LockTarget>,
    /// Whether persistence mode was on when it was locked (minor 7; absent where NVML could
    /// not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence_mode: Option<bool>,
    /// Where the GPU's results ran held back below the lock (minor 7; absent: nowhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_below: Option<HeldBelow>,
}

/// Why the clocks could not be locked (exit status 2: the run measures nothing unlocked).
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("--lock-clocks needs root: NVML lets only root lock a GPU's clocks; run bench as root, or without --lock-clocks")]
    NotRoot,
    #[error("--lock-clocks: no GPU to lock (NVML lists none here)")]
    NoGpu,
    #[error("--lock-clocks: the clocks could not be locked: {0}; nothing was measured")]
    Failed(String),
}

/// What the holder (or the reset helper) answers, one JSON line each: the locks, then the
/// reset.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Locked(Vec<LockedClocks>),
    Reset,
    Failed(String),
}

/// The locks of a run, held by the holder process until the guard is dropped (or bench ends).
pub struct Guard {
    holder: Child,
    /// The holder's standard input: closing it asks for the reset.
    reset: Option<ChildStdin>,
    answers: Receiver<Answer>,
    /// The reset a signal runs (the signal's end of the run kills the holder first).
    _on_interrupt: crate::lifetime::Registered,
}

/// The helper command for `action` (`hold` or `reset`) on the GPUs `ids`, with the driver's
/// NVML.
fn helper(
    worker: &Path,
    driver_dir: Option<&Path>,
    trust: &Policy,
    action: &str,
    ids: &str,
) -> Command {
    let mut command = crate::process::worker_command(worker);
    command.arg("__clocks").arg(action).arg(ids);
    crate::gpu::driver_search_path(&mut command, driver_dir, trust);
    command
}

/// The GPUs `devices` (ordinals) as the helpers address them: by UUID where `gpu` lists one,
/// else by ordinal; comma-separated.
fn ids(devices: &[u32], gpu: &crate::gpu::GpuInfo) -> String {
    let id = |index: u32| {
        (gpu.devices.iter().find(|d| d.index == index))
            .and_then(|d| d.uuid.clone())
            .unwrap_or_else(|| index.to_string())
    };
    let each: Vec<String> = devices.iter().map(|&i| id(i)).collect();
    each.join(",")
}

/// Locks the clocks of `devices` (ordinals of `gpu`) and keeps them locked until the guard is
/// dropped or bench ends, however it ends.
pub fn lock(
    worker: &Path,
    driver_dir: Option<&Path>,
    trust: &Policy,
    devices: &[u32],
    gpu: &crate::gpu::GpuInfo,
) -> Result<(Guard, Vec<LockedClocks>), LockError> {
    if !trust.me.is_root() {
        return Err(LockError::NotRoot);
    }
    if devices.is_empty() {
        return Err(LockError::NoGpu);
    }
    let ids = ids(devices, gpu);
    // Armed before locking: a signal between the two still resets.
    let on_signal = helper(worker, driver_dir, trust, "reset", &ids);
    let on_interrupt = crate::lifetime::on_interrupt(move || {
        let answer = crate::process::output_within(on_signal, None, Sight::Node, HELPER_TIMEOUT)
            .and_then(|out| serde_json::from_str::<Answer>(&out).ok());
        if !matches!(answer, Some(Answer::Reset)) {
            eprintln!("bench: interrupted; the locked clocks may not have been reset; reset them with `nvidia-smi -rgc -rmc`");
        }
    });
    let hold = helper(worker, driver_dir, trust, "hold", &ids);
    let (holder, stdin) = crate::process::start_conversation::<Answer>(hold, None, Sight::Node)
        .map_err(|e| LockError::Failed(format!("stackbench __clocks hold did not start: {e}")))?;
    let guard = Guard {
        holder: holder.child,
        reset: Some(stdin),
        answers: holder.events,
        _on_interrupt: on_interrupt,
    };
    match guard.answers.recv_timeout(HELPER_TIMEOUT) {
        Ok(Answer::Locked(locked)) => {
            for l in locked.iter().filter(|l| l.persistence_mode == Some(false)) {
                eprintln!(
                    "bench: persistence mode is off on GPU {}: the driver drops a lock when no program holds the GPU (bench holds it while it runs); turn it on with `nvidia-smi -pm 1` or nvidia-persistenced",
                    l.index
                );
            }
            Ok((guard, locked))
        }
        Ok(Answer::Failed(why)) => Err(LockError::Failed(why)),
        Ok(Answer::Reset) => Err(LockError::Failed(
            "the holder reset instead of locking".into(),
        )),
        Err(_) => Err(LockError::Failed(
            "the holder (stackbench __clocks hold) crashed or did not answer".into(),
        )),
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        drop(self.reset.take());
        let answer = self.answers.recv_timeout(HELPER_TIMEOUT);
        let _ = crate::process::exit_within(&mut self.holder, HELPER_TIMEOUT);
        let why = match answer {
            Ok(Answer::Reset) => return,
            Ok(Answer::Failed(why)) => why,
            _ => "the holder (stackbench __clocks hold) did not answer".to_owned(),
        };
        eprintln!("bench: the locked clocks could not be reset ({why}); reset them with `nvidia-smi -rgc -rmc`");
    }
}

/// Each lock of `locked` with where `results` ran held back below it, telling the user.
pub fn held_below(locked: &mut [LockedClocks], results: &[BenchResult]) {
    for lock in locked {
        let mut held = results
            .iter()
            .filter(|r| r.device_index() == lock.index)
            .filter_map(|r| r.telemetry.as_ref())
            .filter(|t| !t.throttled_samples.is_empty());
        let Some(first) = held.next() else {
            continue;
        };
        let (mut lowest, mut count) = (first.sm_clock_mhz_min, 1);
        let mut reasons: BTreeSet<String> = first.throttle_reasons.iter().cloned().collect();
        for t in held {
            lowest = match (lowest, t.sm_clock_mhz_min) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            count += 1;
            reasons.extend(t.throttle_reasons.iter().cloned());
        }
        let below = HeldBelow {
            lowest_sm_mhz: lowest.unwrap_or(lock.sm_mhz).min(lock.sm_mhz),
            results: count,
            reasons: reasons.into_iter().collect(),
        };
        eprintln!(
            "bench: GPU {}'s clocks were held below their lock ({} MHz) in {} result(s), to {} MHz at the lowest ({}): a lock does not hold against power or thermal limits, and those figures are the throttled clock's",
            lock.index,
            lock.sm_mhz,
            below.results,
            below.lowest_sm_mhz,
            below.reasons.join(", ")
        );
        lock.held_below = Some(below);
    }
}

/// The child side, `__clocks hold|reset IDS` (UUIDs or ordinals, comma-separated): holds the
/// locks for the run, or resets them; answers as JSON lines. Exit 2 when the request is not
/// one.
pub fn from_nvml(action: &str, request: &str) -> ExitCode {
    let ids: Vec<&str> = request.split(',').map(str::trim).collect();
    let valid = |id: &&str| id.starts_with("GPU-") || id.parse::<u32>().is_ok();
    if !ids.iter().all(valid) {
        return ExitCode::from(2);
    }
    match action {
        "hold" => hold(&ids),
        "reset" => {
            say(&match Nvml::init() {
                Ok(nvml) => reset_each(&nvml, &ids),
                Err(e) => Answer::Failed(format!("NVML did not initialise: {e}")),
            });
            ExitCode::SUCCESS
        }
        _ => ExitCode::from(2),
    }
}

/// Writes `answer` as one line of JSON.
fn say(answer: &Answer) {
    if let Ok(json) = serde_json::to_string(answer) {
        println!("{json}");
    }
}

/// Locks, answers, waits for standard input to close, resets, answers.
fn hold(ids: &[&str]) -> ExitCode {
    // bench holds the only writer of our standard input and the reset must come however it
    // ends, killed outright included: this process must not die with it.
    // SAFETY: prctl(PR_SET_PDEATHSIG, 0) only clears this process's death signal.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, 0) };
    let nvml = match Nvml::init() {
        Ok(nvml) => nvml,
        Err(e) => {
            say(&Answer::Failed(format!("NVML did not initialise: {e}")));
            return ExitCode::SUCCESS;
        }
    };
    let answer = lock_each(&nvml, ids);
    let locked = matches!(answer, Answer::Locked(_));
    say(&answer);
    if locked {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
    }
    // A driver that hangs in the reset does not keep this process past the run for long.
    // SAFETY: alarm(2) has no preconditions; SIGALRM's default action ends the process.
    unsafe { libc::alarm(HELPER_TIMEOUT.as_secs() as libc::c_uint) };
    say(&reset_each(&nvml, ids));
    ExitCode::SUCCESS
}

/// The device `id` names: a UUID, else an ordinal.
fn device<'n>(nvml: &'n Nvml, id: &str) -> Result<Device<'n>, nvml_wrapper::error::NvmlError> {
    match id.parse::<u32>() {
        Ok(index) => nvml.device_by_index(index),
        Err(_) => nvml.device_by_uuid(id),
    }
}

fn lock_each(nvml: &Nvml, ids: &[&str]) -> Answer {
    let mut locked = Vec::new();
    for id in ids {
        let failed = |call: &str, e: nvml_wrapper::error::NvmlError| {
            Answer::Failed(format!("GPU {id}: {call}: {e}"))
        };
        let mut device = match device(nvml, id) {
            Ok(device) => device,
            Err(e) => return failed("nvmlDeviceGetHandle", e),
        };
        let tdp = GpuLockedClocksSetting::Symbolic {
            lower_bound: ClockLimitId::Tdp,
            upper_bound: ClockLimitId::Tdp,
        };
        let target = if device.set_gpu_locked_clocks(tdp).is_ok() {
            LockTarget::Tdp
        } else {
            let sm = match device.default_applications_clock(Clock::Graphics) {
                Ok(mhz) => mhz,
                Err(e) => return failed("nvmlDeviceGetDefaultApplicationsClock", e),
            };
            let setting = GpuLockedClocksSetting::Numeric {
                min_clock_mhz: sm,
                max_clock_mhz: sm,
            };
            if let Err(e) = device.set_gpu_locked_clocks(setting) {
                return failed("nvmlDeviceSetGpuLockedClocks", e);
            }
            LockTarget::DefaultApplications
        };
        // The memory clock locks from Ampere on; a GPU that cannot keeps its SM lock alone.
        let memory = device
            .default_applications_clock(Clock::Memory)
            .ok()
            .filter(|&mhz| device.set_mem_locked_clocks(mhz, mhz).is_ok());
        // Read back: NVML has no getter for a lock, and the TDP limit id names no clock.
        let sm = match device.clock_info(Clock::Graphics) {
            Ok(mhz) => mhz,
            Err(e) => return failed("nvmlDeviceGetClockInfo", e),
        };
        locked.push(LockedClocks {
            index: device.index().unwrap_or_default(),
            uuid: device.uuid().ok(),
            sm_mhz: sm,
            memory_mhz: memory.and_then(|_| device.clock_info(Clock::Memory).ok()),
            target: Some(target),
            persistence_mode: device.is_in_persistent_mode().ok(),
            held_below: None,
        });
    }
    Answer::Locked(locked)
}

fn reset_each(nvml: &Nvml, ids: &[&str]) -> Answer {
    let mut failures = Vec::new();
    for id in ids {
        match device(nvml, id) {
            Ok(mut device) => {
                if let Err(e) = device.reset_gpu_locked_clocks() {
                    failures.push(format!("GPU {id}: nvmlDeviceResetGpuLockedClocks: {e}"));
                }
                // A GPU without a memory lock answers NotSupported: nothing to reset.
                let _ = device.reset_mem_locked_clocks();
            }
            Err(e) => failures.push(format!("GPU {id}: {e}")),
        }
    }
    if failures.is_empty() {
        Answer::Reset
    } else {
        Answer::Failed(failures.join("; "))
    }
}

/// What the run asked for, as one comparable string: each GPU's lock without what the run then
/// met (`held_below`), so that a throttled run is the same environment as its unthrottled
/// peers.
pub fn setting(locked: &[LockedClocks]) -> String {
    let asked: Vec<LockedClocks> = (locked.iter())
        .map(|l| LockedClocks {
            held_below: None,
            ..l.clone()
        })
        .collect();
    describe(&asked)
}

/// `locked at SM 1590 MHz (TDP), memory 2619 MHz on GPU 0`, for reports and compare; with
/// `held below by SW power cap to 1351 MHz` where it was.
pub fn describe(locked: &[LockedClocks]) -> String {
    if locked.is_empty() {
        return "not locked".to_owned();
    }
    let each: Vec<String> = locked
        .iter()
        .map(|l| {
            let target = match l.target {
                Some(LockTarget::Tdp) => " (TDP)",
                Some(LockTarget::DefaultApplications) => " (default applications clock)",
                None => "",
            };
            let memory = l
                .memory_mhz
                .map(|m| format!(", memory {m} MHz"))
                .unwrap_or_default();
            let held = l
                .held_below
                .as_ref()
                .map(|h| {
                    format!(
                        ", held below by {} to {} MHz",
                        h.reasons.join(", "),
                        h.lowest_sm_mhz
                    )
                })
                .unwrap_or_default();
            format!(
                "SM {} MHz{target}{memory} on GPU {}{held}",
                l.sm_mhz, l.index
            )
        })
        .collect();
    format!("locked at {}", each.join("; "))
}
