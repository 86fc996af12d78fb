//! `bench --lock-clocks`: the selected GPUs' SM and memory clocks locked at their default
//! applications clocks before anything is measured, as DCGM's diagnostics and Azure's node
//! health checks lock them (NVML's `nvmlDeviceSetGpuLockedClocks` and
//! `nvmlDeviceSetMemoryLockedClocks`; root only), and reset after the run: also when a worker
//! crashes (the run goes on and resets at its end) and when the run is interrupted (SIGINT,
//! SIGTERM, SIGHUP: the run's workers are ended, the clocks reset, then the signal ends the run
//! as it would have; see [`crate::lifetime`]). A SIGKILL leaves them locked until
//! `nvidia-smi -rgc -rmc` or a reboot.
//! The NVML calls are made in a helper process (`stackbench __clocks`) with the driver's NVML,
//! as the parent's other NVML calls are.

use crate::trust::Policy;
use nvml_wrapper::enum_wrappers::device::Clock;
use nvml_wrapper::enums::device::GpuLockedClocksSetting;
use nvml_wrapper::Nvml;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Duration;

/// How long the helper may take.
const HELPER_TIMEOUT: Duration = Duration::from_secs(30);

/// The clocks one GPU was locked at for a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockedClocks {
    /// The GPU's ordinal.
    pub index: u32,
    /// The SM (graphics) clock, MHz.
    pub sm_mhz: u32,
    /// The memory clock, MHz; absent where the GPU cannot lock it (before Ampere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mhz: Option<u32>,
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

/// What the helper answers: each GPU's clocks, or why it failed.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Locked(Vec<LockedClocks>),
    Reset,
    Failed(String),
}

/// The locks of a run, reset when dropped or when a signal ends the run.
pub struct Guard {
    reset: Command,
    /// The reset a signal runs; unregistered when the guard resets itself.
    _on_interrupt: crate::lifetime::Registered,
}

/// The helper command for `action` (`lock` or `reset`) on `devices`, with the driver's NVML.
fn helper(
    worker: &Path,
    driver_dir: Option<&Path>,
    trust: &Policy,
    action: &str,
    devices: &[u32],
) -> Command {
    let list: Vec<String> = devices.iter().map(u32::to_string).collect();
    let mut command = crate::process::worker_command(worker);
    command.arg("__clocks").arg(action).arg(list.join(","));
    crate::gpu::driver_search_path(&mut command, driver_dir, trust);
    command
}

/// Runs a helper `command` and reads its answer.
fn ask(command: Command) -> Answer {
    match crate::process::output_within(command, None, crate::process::Sight::Node, HELPER_TIMEOUT)
    {
        Some(out) => serde_json::from_str(&out).unwrap_or_else(|e| {
            Answer::Failed(format!("the helper's answer could not be read: {e}"))
        }),
        None => Answer::Failed("the helper (stackbench __clocks) crashed or did not answer".into()),
    }
}

/// Locks the clocks of `devices` at their default applications clocks, and keeps them locked
/// until the guard is dropped or a signal ends the run.
pub fn lock(
    worker: &Path,
    driver_dir: Option<&Path>,
    trust: &Policy,
    devices: &[u32],
) -> Result<(Guard, Vec<LockedClocks>), LockError> {
    if !trust.me.is_root() {
        return Err(LockError::NotRoot);
    }
    if devices.is_empty() {
        return Err(LockError::NoGpu);
    }
    let reset = || helper(worker, driver_dir, trust, "reset", devices);
    // Armed before locking: a signal between the two still resets.
    let on_signal = reset();
    let guard = Guard {
        reset: reset(),
        _on_interrupt: crate::lifetime::on_interrupt(move || {
            if let Answer::Failed(why) = ask(on_signal) {
                eprintln!("bench: interrupted; the locked clocks could not be reset ({why}); reset them with `nvidia-smi -rgc -rmc`");
            }
        }),
    };
    match ask(helper(worker, driver_dir, trust, "lock", devices)) {
        Answer::Locked(locked) => Ok((guard, locked)),
        Answer::Failed(why) => Err(LockError::Failed(why)),
        Answer::Reset => Err(LockError::Failed(
            "the helper reset instead of locking".into(),
        )),
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let reset = std::mem::replace(&mut self.reset, Command::new("true"));
        if let Answer::Failed(why) = ask(reset) {
            eprintln!("bench: the locked clocks could not be reset ({why}); reset them with `nvidia-smi -rgc -rmc`");
        }
    }
}

/// The child side, `__clocks lock|reset 0,3`: locks each listed GPU's SM clock (and its memory
/// clock, where it can) at its default applications clock, or resets both; prints the answer
/// as JSON. Exit 2 when the request is not one.
pub fn from_nvml(action: &str, request: &str) -> ExitCode {
    let indices: Result<Vec<u32>, _> = request.split(',').map(|i| i.trim().parse()).collect();
    let Ok(indices) = indices else {
        return ExitCode::from(2);
    };
    let answer = match (action, Nvml::init()) {
        (_, Err(e)) => Answer::Failed(format!("NVML did not initialise: {e}")),
        ("lock", Ok(nvml)) => lock_each(&nvml, &indices),
        ("reset", Ok(nvml)) => reset_each(&nvml, &indices),
        _ => return ExitCode::from(2),
    };
    match serde_json::to_string(&answer) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(_) => ExitCode::from(2),
    }
}

fn lock_each(nvml: &Nvml, indices: &[u32]) -> Answer {
    let mut locked = Vec::new();
    for &index in indices {
        let failed = |call: &str, e: nvml_wrapper::error::NvmlError| {
            Answer::Failed(format!("GPU {index}: {call}: {e}"))
        };
        let mut device = match nvml.device_by_index(index) {
            Ok(device) => device,
            Err(e) => return failed("nvmlDeviceGetHandleByIndex", e),
        };
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
        // The memory clock locks from Ampere on; a GPU that cannot keeps its SM lock alone.
        let memory = device
            .default_applications_clock(Clock::Memory)
            .ok()
            .filter(|&mhz| device.set_mem_locked_clocks(mhz, mhz).is_ok());
        locked.push(LockedClocks {
            index,
            sm_mhz: sm,
            memory_mhz: memory,
        });
    }
    Answer::Locked(locked)
}

fn reset_each(nvml: &Nvml, indices: &[u32]) -> Answer {
    let mut failures = Vec::new();
    for &index in indices {
        match nvml.device_by_index(index) {
            Ok(mut device) => {
                if let Err(e) = device.reset_gpu_locked_clocks() {
                    failures.push(format!("GPU {index}: nvmlDeviceResetGpuLockedClocks: {e}"));
                }
                // A GPU without a memory lock answers NotSupported: nothing to reset.
                let _ = device.reset_mem_locked_clocks();
            }
            Err(e) => failures.push(format!("GPU {index}: {e}")),
        }
    }
    if failures.is_empty() {
        Answer::Reset
    } else {
        Answer::Failed(failures.join("; "))
    }
}

/// `1980/2619 MHz on GPU 0`, for reports and compare.
pub fn describe(locked: &[LockedClocks]) -> String {
    if locked.is_empty() {
        return "not locked".to_owned();
    }
    let each: Vec<String> = locked
        .iter()
        .map(|l| match l.memory_mhz {
            Some(memory) => format!(
                "SM {} MHz, memory {memory} MHz on GPU {}",
                l.sm_mhz, l.index
            ),
            None => format!("SM {} MHz on GPU {}", l.sm_mhz, l.index),
        })
        .collect();
    format!("locked at {}", each.join("; "))
}
