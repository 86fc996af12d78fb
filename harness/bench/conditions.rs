//! The state each selected GPU was measured in, read from NVML before `bench` starts and again
//! at its end: other users' compute processes, ECC error counts, retired pages and row
//! remapping pending, clocks event (throttle) reasons, persistence mode and applications
//! clocks. A GPU another program computes on makes `bench` refuse ([`Busy`]) unless
//! `--allow-busy`; every result records the state of its GPU(s), so `compare` can tell a busy
//! night from a regression ([`Conditions::disturbance`]).
//!
//! NVML is asked in a child process (`stackbench __gpu-state`, as `__gpu`), which reads each
//! device with `check`'s `driver.health` reading ([`crate::check::worker::nvml::health`]) and
//! adds what only bench needs. stackbench's own processes (this one and its descendants: the
//! reader, the workers) are never counted as another program. NVML has no call that reads
//! locked clocks (`nvmlDeviceSetGpuLockedClocks` has no getter); a lock shows as the
//! applications-clocks reason among the clocks event reasons.

use crate::check::worker::nvml::clocks::clock_event_names;
use crate::check::worker::nvml::health::{self, Reading};
use crate::check::worker::outcome::LibraryError;
use crate::trust::Policy;
use nvml_wrapper::enum_wrappers::device::{Clock, EccCounter, MemoryError};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// How long NVML may take to answer for every device.
const NVML_TIMEOUT: Duration = Duration::from_secs(15);

/// A compute process on a GPU, as NVML lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct GpuProcess {
    pub pid: u32,
    /// Its executable's name (`nvmlSystemGetProcessName`), where NVML gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Device memory it holds, bytes (absent where NVML cannot say, as under WDDM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_memory_bytes: Option<u64>,
}

impl GpuProcess {
    /// `pid 48213 python3 (40960 MiB)`.
    pub fn text(&self) -> String {
        let name = self.name.as_deref().unwrap_or("?");
        match self.used_memory_bytes {
            Some(bytes) => format!("pid {} {name} ({} MiB)", self.pid, bytes >> 20),
            None => format!("pid {} {name}", self.pid),
        }
    }
}

/// One GPU's state at one moment. A reading NVML does not support, or that failed, is absent
/// (a failure is also listed in `errors`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DeviceState {
    /// The NVML index (the CUDA ordinal in PCI bus order).
    pub index: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Compute processes of other programs on it; stackbench's own are left out.
    #[serde(default)]
    pub processes: Vec<GpuProcess>,
    /// Volatile ECC counts (since the driver loaded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_corrected: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_uncorrected: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages_pending_retirement: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_remap_pending: Option<bool>,
    /// The clocks event reasons holding the clocks back, by name (idle and applications
    /// clocks are not among them).
    #[serde(default)]
    pub throttle_reasons: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence_mode: Option<bool>,
    /// Applications clocks, MHz (`nvmlDeviceGetApplicationsClock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applications_sm_mhz: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applications_memory_mhz: Option<u32>,
    /// Queries that failed: `call: NAME (code): text`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// The state a result was measured in: its GPU before the run and at its end (absent when the
/// end could not be read).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Conditions {
    pub before: DeviceState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<DeviceState>,
}

/// The GPUs' state before a run and at its end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Readings {
    pub before: Vec<DeviceState>,
    pub after: Vec<DeviceState>,
}

/// GPUs another program computes on: `bench` will not measure them (exit 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: its figures would be that program's as much as the software's; wait for it to finish or stop it (nvidia-smi lists it), choose another GPU with --devices, or give --allow-busy to measure anyway (every row then records the processes)", busy_text(.devices))]
pub struct Busy {
    pub devices: Vec<DeviceState>,
}

/// `GPU 0 is in use by 2 other processes: pid 48213 python3 (40960 MiB), ...`.
fn busy_text(devices: &[DeviceState]) -> String {
    let each: Vec<String> = devices
        .iter()
        .map(|d| {
            let listed: Vec<String> = d.processes.iter().map(GpuProcess::text).collect();
            format!(
                "GPU {} is in use by {}: {}",
                d.index,
                processes(d.processes.len()),
                listed.join(", ")
            )
        })
        .collect();
    each.join("; ")
}

/// "1 other process", "2 other processes".
fn processes(n: usize) -> String {
    match n {
        1 => "1 other process".to_owned(),
        n => format!("{n} other processes"),
    }
}

/// The GPUs of `before` that another program computes on, as the error refusing them.
pub fn refuse_busy(before: &[DeviceState]) -> Result<(), Busy> {
    let devices: Vec<DeviceState> = before
        .iter()
        .filter(|d| !d.processes.is_empty())
        .cloned()
        .collect();
    if devices.is_empty() {
        Ok(())
    } else {
        Err(Busy { devices })
    }
}

impl Readings {
    /// The conditions of device `index`: its state before and after (none when it was not
    /// read before).
    pub fn of(&self, index: u32) -> Option<Conditions> {
        let find = |states: &[DeviceState]| states.iter().find(|d| d.index == index).cloned();
        Some(Conditions {
            before: find(&self.before)?,
            after: find(&self.after),
        })
    }
}

impl Conditions {
    /// Every other program seen on the GPU, before or at the end, each once.
    pub fn processes(&self) -> Vec<&GpuProcess> {
        let mut seen: Vec<&GpuProcess> = self.before.processes.iter().collect();
        for p in self.after.iter().flat_map(|a| &a.processes) {
            if !seen.iter().any(|s| s.pid == p.pid) {
                seen.push(p);
            }
        }
        seen
    }

    /// What may have moved the figures, in short phrases: other programs on the GPU, clocks
    /// held back, ECC errors that grew during the run; empty for a clean GPU.
    pub fn disturbance(&self) -> Vec<String> {
        let mut found = Vec::new();
        let processes = self.processes();
        if !processes.is_empty() {
            let late = processes.len() - self.before.processes.len();
            let appeared = if late > 0 {
                format!(", {late} appeared during the run")
            } else {
                String::new()
            };
            found.push(format!(
                "busy: {}{appeared}",
                self::processes(processes.len())
            ));
        }
        let mut reasons = self.before.throttle_reasons.clone();
        for r in self.after.iter().flat_map(|a| &a.throttle_reasons) {
            if !reasons.contains(r) {
                reasons.push(r.clone());
            }
        }
        if !reasons.is_empty() {
            found.push(format!("throttled: {}", reasons.join(", ")));
        }
        let grew = |before: Option<u64>, after: Option<u64>| match (before, after) {
            (Some(b), Some(a)) if a > b => Some(a - b),
            _ => None,
        };
        if let Some(after) = &self.after {
            let kinds = [
                (
                    self.before.ecc_uncorrected,
                    after.ecc_uncorrected,
                    "uncorrected",
                ),
                (self.before.ecc_corrected, after.ecc_corrected, "corrected"),
            ];
            for (before, after, kind) in kinds {
                if let Some(n) = grew(before, after) {
                    found.push(format!("ECC +{n} {kind}"));
                }
            }
        }
        found
    }

    /// The short form views show: `clean`, or the disturbances and the processes
    /// (`busy: 2 other processes (pid 48213 python3 (40960 MiB), ...)`).
    pub fn short(&self) -> String {
        let disturbance = self.disturbance();
        if disturbance.is_empty() {
            return "clean".to_owned();
        }
        let listed: Vec<String> = self.processes().iter().map(|p| p.text()).collect();
        let mut text = disturbance.join("; ");
        if !listed.is_empty() {
            text.push_str(&format!(" ({})", listed.join(", ")));
        }
        text
    }
}

/// Reads the state of `devices` through `<worker> __gpu-state` with the NVML of `driver_dir`
/// (else the loader's), stackbench's own processes left out; `None` when NVML did not answer.
pub fn read(
    worker: &Path,
    driver_dir: Option<&Path>,
    trust: &Policy,
    devices: &[u32],
) -> Option<Vec<DeviceState>> {
    let list: Vec<String> = devices.iter().map(u32::to_string).collect();
    let mut command = crate::process::worker_command(worker);
    command.arg("__gpu-state").arg(list.join(","));
    crate::gpu::driver_search_path(&mut command, driver_dir, trust);
    let out =
        crate::process::output_within(command, None, crate::process::Sight::Node, NVML_TIMEOUT)?;
    let mut states: Vec<DeviceState> = serde_json::from_str(&out).ok()?;
    let me = std::process::id();
    for state in &mut states {
        state
            .processes
            .retain(|p| !crate::process::descends_from(p.pid, me));
    }
    Some(states)
}

/// The child side: reads the devices listed in `request` (`0,3`) and prints their states as
/// JSON; exit 2 when NVML cannot be initialised or the list is not one.
pub fn report_from_nvml(request: &str) -> std::process::ExitCode {
    let indices: Result<Vec<u32>, _> = request.split(',').map(|i| i.trim().parse()).collect();
    let (Ok(indices), Ok(nvml)) = (indices, Nvml::init()) else {
        return std::process::ExitCode::from(2);
    };
    let states: Vec<DeviceState> = indices.iter().map(|&i| read_device(&nvml, i)).collect();
    match serde_json::to_string(&states) {
        Ok(json) => {
            println!("{json}");
            std::process::ExitCode::SUCCESS
        }
        Err(_) => std::process::ExitCode::from(2),
    }
}

/// One device's state: `driver.health`'s readings, and the processes, the corrected ECC count
/// and the applications clocks.
fn read_device(nvml: &Nvml, index: u32) -> DeviceState {
    let mut state = DeviceState {
        index,
        ..DeviceState::default()
    };
    let health = health::read_device(nvml, index);
    state.uuid = health.uuid;
    let readings = match health.readings {
        Ok(readings) => readings,
        Err(health::Unread::Denied(e) | health::Unread::Failed(e)) => {
            state.errors.push(e);
            return state;
        }
    };
    let errors = &mut state.errors;
    state.persistence_mode = value(readings.persistence, errors);
    state.ecc_uncorrected = value(readings.ecc_volatile_uncorrected, errors);
    state.pages_pending_retirement = value(readings.pages_pending_retirement, errors);
    state.row_remap_pending = value(readings.remapping, errors).map(|r| r.pending);
    state.throttle_reasons = value(readings.clocks_event_reasons, errors)
        .map(clock_event_names)
        .unwrap_or_default();
    let Ok(device) = nvml.device_by_index(index) else {
        return state;
    };
    let errors = &mut state.errors;
    let processes = answer(
        "nvmlDeviceGetComputeRunningProcesses_v3",
        device.running_compute_processes(),
        errors,
    );
    state.ecc_corrected = answer(
        "nvmlDeviceGetTotalEccErrors",
        device.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile),
        errors,
    );
    let clock = |kind| device.applications_clock(kind);
    state.applications_sm_mhz = answer("nvmlDeviceGetApplicationsClock", clock(Clock::SM), errors);
    state.applications_memory_mhz = answer(
        "nvmlDeviceGetApplicationsClock",
        clock(Clock::Memory),
        errors,
    );
    state.processes = (processes.unwrap_or_default().into_iter())
        .map(|p| GpuProcess {
            pid: p.pid,
            name: nvml.sys_process_name(p.pid, 64).ok(),
            used_memory_bytes: match p.used_gpu_memory {
                UsedGpuMemory::Used(bytes) => Some(bytes),
                UsedGpuMemory::Unavailable => None,
            },
        })
        .collect();
    state
}

/// A query's answer; not supported (or a symbol this NVML lacks) is none, a failure is none
/// recorded in `errors`.
fn answer<T>(call: &str, result: Result<T, NvmlError>, errors: &mut Vec<String>) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_)) => None,
        Err(e) => {
            errors.push(format!("{call}: {}", e.describe()));
            None
        }
    }
}

/// A reading's value; a failure is recorded in `errors`.
fn value<T>(reading: Reading<T>, errors: &mut Vec<String>) -> Option<T> {
    match reading {
        Reading::Value(v) => Some(v),
        Reading::NotSupported => None,
        Reading::Failed(e) => {
            errors.push(e);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(pid: u32) -> GpuProcess {
        GpuProcess {
            pid,
            name: Some("python3".into()),
            used_memory_bytes: Some(40 << 30),
        }
    }

    fn clean(index: u32) -> DeviceState {
        DeviceState {
            index,
            ecc_corrected: Some(3),
            ecc_uncorrected: Some(0),
            persistence_mode: Some(true),
            ..DeviceState::default()
        }
    }

    #[test]
    fn a_clean_gpu_before_and_after_is_clean() {
        let conditions = Conditions {
            before: clean(0),
            after: Some(clean(0)),
        };
        assert!(conditions.disturbance().is_empty());
        assert_eq!(conditions.short(), "clean");
        assert_eq!(refuse_busy(&[clean(0), clean(1)]), Ok(()));
    }

    #[test]
    fn a_busy_gpu_is_refused_naming_each_process_and_the_fix() {
        let busy = DeviceState {
            processes: vec![process(48213), process(48220)],
            ..clean(1)
        };
        let error = refuse_busy(&[clean(0), busy]).unwrap_err();
        assert_eq!(error.devices.len(), 1);
        let text = error.to_string();
        assert!(
            text.starts_with(
                "GPU 1 is in use by 2 other processes: pid 48213 python3 (40960 MiB), pid 48220 \
                 python3 (40960 MiB): "
            ),
            "{text}"
        );
        assert!(text.contains("--allow-busy"), "{text}");
    }

    #[test]
    fn what_appears_during_the_run_throttles_or_errors_is_a_disturbance() {
        let after = DeviceState {
            processes: vec![process(48213), process(51000)],
            throttle_reasons: vec!["SW thermal".into()],
            ecc_corrected: Some(5),
            ecc_uncorrected: Some(1),
            ..clean(0)
        };
        let conditions = Conditions {
            before: DeviceState {
                processes: vec![process(48213)],
                ..clean(0)
            },
            after: Some(after),
        };
        assert_eq!(
            conditions.disturbance(),
            [
                "busy: 2 other processes, 1 appeared during the run",
                "throttled: SW thermal",
                "ECC +1 uncorrected",
                "ECC +2 corrected"
            ]
        );
        assert!(conditions
            .short()
            .ends_with("(pid 48213 python3 (40960 MiB), pid 51000 python3 (40960 MiB))"));
        let readings = Readings {
            before: vec![clean(0)],
            after: vec![],
        };
        assert_eq!(readings.of(0).map(|c| c.after), Some(None));
        assert_eq!(readings.of(1), None);
    }
}
