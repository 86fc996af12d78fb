//! What `driver.health` reads from each device (persistence mode, ECC error counts, page
//! retirement, row remapping, clocks event reasons), how it reads them, and the verdict on them
//! (from what [`super::findings`] gathers): a failure when a query failed, a warning per kind of
//! problem, else a pass saying what was checked, with every device's readings as details.

use super::clocks::{clock_event_names, clocks_event_reasons};
use super::count_devices;
use super::findings::Findings;
use crate::check::worker::outcome::{LibraryError, Outcome};
use nvml_wrapper::enum_wrappers::device::{EccCounter, MemoryError};
use nvml_wrapper::error::{nvml_sym, nvml_try, NvmlError};
use nvml_wrapper::{Device, Nvml};
use serde_json::{json, Value};

/// One query's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Reading<T> {
    Value(T),
    /// The device (or this NVML) does not support the query: a note, not a warning.
    NotSupported,
    /// The query failed: `call: NAME (code): text`.
    Failed(String),
}

impl<T> Reading<T> {
    /// A query's result as a reading; a symbol this NVML lacks counts as not supported.
    fn of(call: &str, result: Result<T, NvmlError>) -> Reading<T> {
        match result {
            Ok(value) => Reading::Value(value),
            Err(NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_)) => {
                Reading::NotSupported
            }
            Err(e) => Reading::Failed(format!("{call}: {}", e.describe())),
        }
    }

    /// As a detail: the value, `"not supported"`, or the error.
    fn to_json(&self, value: impl Fn(&T) -> Value) -> Value {
        match self {
            Reading::Value(v) => value(v),
            Reading::NotSupported => json!("not supported"),
            Reading::Failed(e) => json!(format!("error: {e}")),
        }
    }
}

/// `nvmlDeviceGetRemappedRows`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Remapping {
    pub corrected_rows: u32,
    pub uncorrected_rows: u32,
    pub pending: bool,
    pub failed: bool,
}

/// Everything `driver.health` reads from one device.
#[derive(Debug, Clone, PartialEq)]
pub struct Readings {
    pub persistence: Reading<bool>,
    /// `nvmlDeviceGetEccMode`'s current mode, where it answers.
    pub ecc_on: Option<bool>,
    /// Not read (not supported) while ECC is off.
    pub ecc_volatile_uncorrected: Reading<u64>,
    /// Lifetime counts, for the details only.
    pub ecc_aggregate_uncorrected: Option<u64>,
    pub ecc_aggregate_corrected: Option<u64>,
    pub pages_pending_retirement: Reading<bool>,
    pub remapping: Reading<Remapping>,
    /// The clocks event (throttle) reasons bitmask, as NVML gives it.
    pub clocks_event_reasons: Reading<u64>,
}

/// One device: its readings, or why it could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceHealth {
    pub index: u32,
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub readings: Result<Readings, Unread>,
}

/// Why a device's handle could not be had.
#[derive(Debug, Clone, PartialEq)]
pub enum Unread {
    /// This user or container may not query it: a note.
    Denied(String),
    /// Anything else: a failure.
    Failed(String),
}

/// Reads one device's health; never fails as a whole.
pub fn read_device(nvml: &Nvml, index: u32) -> DeviceHealth {
    let device = match nvml.device_by_index(index) {
        Ok(device) => device,
        Err(e) => {
            let reason = format!("nvmlDeviceGetHandleByIndex_v2: {}", e.describe());
            return DeviceHealth {
                index,
                name: None,
                uuid: None,
                readings: Err(match e {
                    NvmlError::NoPermission => Unread::Denied(reason),
                    _ => Unread::Failed(reason),
                }),
            };
        }
    };
    let ecc = |kind, counter| device.total_ecc_errors(kind, counter);
    let ecc_on = device
        .is_ecc_enabled()
        .ok()
        .map(|mode| mode.currently_enabled);
    let readings = Readings {
        persistence: Reading::of(
            "nvmlDeviceGetPersistenceMode",
            device.is_in_persistent_mode(),
        ),
        ecc_on,
        ecc_volatile_uncorrected: match ecc_on {
            Some(false) => Reading::NotSupported,
            _ => Reading::of(
                "nvmlDeviceGetTotalEccErrors",
                ecc(MemoryError::Uncorrected, EccCounter::Volatile),
            ),
        },
        ecc_aggregate_uncorrected: ecc(MemoryError::Uncorrected, EccCounter::Aggregate).ok(),
        ecc_aggregate_corrected: ecc(MemoryError::Corrected, EccCounter::Aggregate).ok(),
        pages_pending_retirement: Reading::of(
            "nvmlDeviceGetRetiredPagesPendingStatus",
            device.are_pages_pending_retired(),
        ),
        remapping: Reading::of("nvmlDeviceGetRemappedRows", remapped_rows(&device)),
        clocks_event_reasons: Reading::of(
            "nvmlDeviceGetCurrentClocksEventReasons",
            clocks_event_reasons(&device),
        ),
    };
    DeviceHealth {
        index,
        name: device.name().ok(),
        uuid: device.uuid().ok(),
        readings: Ok(readings),
    }
}

/// `nvmlDeviceGetRemappedRows` (NVML of driver R450 and later), which nvml-wrapper does not
/// wrap; a library without the symbol gives `FailedToLoadSymbol`.
fn remapped_rows(device: &Device) -> Result<Remapping, NvmlError> {
    let function = nvml_sym(device.nvml().lib().nvmlDeviceGetRemappedRows.as_ref())?;
    let (mut corrected, mut uncorrected, mut pending, mut failed) = (0, 0, 0, 0);
    // SAFETY: the handle comes from nvmlDeviceGetHandleByIndex_v2 of the NVML that is still
    // initialised (the device borrows it), the function has this signature in every NVML that
    // exports it (nvml.h: four `unsigned int *` outputs), and the outputs are live locals.
    let status = unsafe {
        function(
            device.handle(),
            &mut corrected,
            &mut uncorrected,
            &mut pending,
            &mut failed,
        )
    };
    nvml_try(status)?;
    Ok(Remapping {
        corrected_rows: corrected,
        uncorrected_rows: uncorrected,
        pending: pending != 0,
        failed: failed != 0,
    })
}

/// The verdict of `driver.health` on every device's readings: a failure when a query failed,
/// a warning per kind of problem (joined into one reason), else a pass listing what was
/// checked. Queries a device does not support are noted in the details.
pub fn judge_health(devices: &[DeviceHealth]) -> Outcome {
    if devices.is_empty() {
        return Outcome::skip("NVML lists no device: nothing to check");
    }
    let mut findings = Findings::default();
    for device in devices {
        findings.add(device);
    }
    let warnings = findings.warnings();
    let outcome = if !findings.failures.is_empty() {
        Outcome::fail(
            [findings.failures.as_slice(), &warnings]
                .concat()
                .join("; "),
        )
    } else if !warnings.is_empty() {
        Outcome::warn(warnings.join("; "))
    } else {
        Outcome::pass(format!(
            "{}: {}",
            count_devices(devices.len()),
            findings.checked()
        ))
    };
    let listed: Vec<Value> = devices.iter().map(listing).collect();
    let outcome = outcome.detail("devices", listed);
    if findings.notes.is_empty() {
        outcome
    } else {
        outcome.detail("not_supported", findings.notes)
    }
}

/// One device as the details list it: index, name and UUID, then every reading, or why it
/// could not be read.
fn listing(device: &DeviceHealth) -> Value {
    let on_off = |on: bool| json!(if on { "on" } else { "off" });
    let mut entry = serde_json::Map::new();
    entry.insert("index".into(), json!(device.index));
    if let Some(name) = &device.name {
        entry.insert("name".into(), json!(name));
    }
    if let Some(uuid) = &device.uuid {
        entry.insert("uuid".into(), json!(uuid));
    }
    let r = match &device.readings {
        Ok(r) => r,
        Err(Unread::Denied(reason) | Unread::Failed(reason)) => {
            entry.insert("error".into(), json!(reason));
            return Value::Object(entry);
        }
    };
    entry.insert(
        "persistence_mode".into(),
        r.persistence.to_json(|&on| on_off(on)),
    );
    if let Some(on) = r.ecc_on {
        entry.insert("ecc_mode".into(), on_off(on));
    }
    entry.insert(
        "ecc_volatile_uncorrected".into(),
        r.ecc_volatile_uncorrected.to_json(|&n| json!(n)),
    );
    if let Some(n) = r.ecc_aggregate_uncorrected {
        entry.insert("ecc_aggregate_uncorrected".into(), json!(n));
    }
    if let Some(n) = r.ecc_aggregate_corrected {
        entry.insert("ecc_aggregate_corrected".into(), json!(n));
    }
    entry.insert(
        "pages_pending_retirement".into(),
        r.pages_pending_retirement.to_json(|&p| json!(p)),
    );
    entry.insert(
        "remapped_rows".into(),
        r.remapping.to_json(|m| {
            json!({
                "corrected": m.corrected_rows,
                "uncorrected": m.uncorrected_rows,
                "pending": m.pending,
                "failed": m.failed,
            })
        }),
    );
    entry.insert(
        "clocks_event_reasons".into(),
        r.clocks_event_reasons.to_json(|&bits| {
            json!({
                "bits": format!("{bits:#x}"),
                "holding_back": clock_event_names(bits),
            })
        }),
    );
    Value::Object(entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::check::Status;
    use rstest::rstest;

    fn healthy() -> Readings {
        Readings {
            persistence: Reading::Value(true),
            ecc_on: Some(true),
            ecc_volatile_uncorrected: Reading::Value(0),
            ecc_aggregate_uncorrected: Some(0),
            ecc_aggregate_corrected: Some(3),
            pages_pending_retirement: Reading::Value(false),
            remapping: Reading::Value(Remapping::default()),
            clocks_event_reasons: Reading::Value(0x1),
        }
    }

    fn device(index: u32, readings: Readings) -> DeviceHealth {
        DeviceHealth {
            index,
            name: Some("NVIDIA H100 80GB HBM3".into()),
            uuid: Some("GPU-6e2b3c4d-5e6f-7081-92a3-b4c5d6e7f809".into()),
            readings: Ok(readings),
        }
    }

    fn consumer() -> Readings {
        Readings {
            ecc_on: None,
            ecc_volatile_uncorrected: Reading::NotSupported,
            ecc_aggregate_uncorrected: None,
            ecc_aggregate_corrected: None,
            pages_pending_retirement: Reading::NotSupported,
            remapping: Reading::NotSupported,
            ..healthy()
        }
    }

    #[rstest]
    #[case::healthy(
        vec![device(0, healthy())],
        Status::Pass,
        "1 device: persistence on, no ECC errors, no retired pages or pending remaps, not throttled"
    )]
    #[case::consumer_gpu(
        vec![device(0, consumer()), device(1, consumer())],
        Status::Pass,
        "2 devices: persistence on, not throttled"
    )]
    #[case::hopper(
        vec![device(0, Readings { pages_pending_retirement: Reading::NotSupported, ..healthy() })],
        Status::Pass,
        "1 device: persistence on, no ECC errors, no pending row remaps, not throttled"
    )]
    #[case::applications_clocks_are_fine(
        vec![device(0, Readings { clocks_event_reasons: Reading::Value(0x2), ..healthy() })],
        Status::Pass,
        "1 device: persistence on, no ECC errors, no retired pages or pending remaps, not throttled"
    )]
    #[case::persistence_off(
        vec![device(0, Readings { persistence: Reading::Value(false), ..healthy() }),
             device(1, Readings { persistence: Reading::Value(false), ..healthy() })],
        Status::Warn,
        "persistence mode off on devices 0, 1: each process's first CUDA call pays driver \
         initialisation; enable it with `nvidia-smi -pm 1` or run nvidia-persistenced"
    )]
    #[case::ecc(
        vec![device(0, Readings { ecc_volatile_uncorrected: Reading::Value(2), ..healthy() }),
             device(1, healthy()),
             device(2, Readings { ecc_volatile_uncorrected: Reading::Value(1), ..healthy() })],
        Status::Warn,
        "uncorrected ECC errors since the driver loaded: 2 on device 0 and 1 on device 2 \
         (nvidia-smi -q -d ECC shows where; reset the GPU, and if they recur the board needs \
         service)"
    )]
    #[case::pages(
        vec![device(0, Readings { pages_pending_retirement: Reading::Value(true), ..healthy() })],
        Status::Warn,
        "pages pending retirement on device 0: reset the GPU or reboot to retire them"
    )]
    #[case::remapping(
        vec![device(0, Readings { remapping: Reading::Value(Remapping { uncorrected_rows: 1, pending: true, failed: true, ..Remapping::default() }), ..healthy() })],
        Status::Warn,
        "row remapping failed on device 0: reset the GPU (nvidia-smi -r, or reboot); if it \
         recurs the board needs service; row remapping pending on device 0: reset the GPU \
         (nvidia-smi -r, or reboot) to apply it"
    )]
    #[case::throttled(
        vec![device(0, Readings { clocks_event_reasons: Reading::Value(0x1 | 0x4 | 0x8), ..healthy() }),
             device(1, Readings { clocks_event_reasons: Reading::Value(0x40 | 0x80 | 0x20 | 0x10 | 0x100 | 0x1000), ..healthy() })],
        Status::Warn,
        "clocks throttled on device 0 (HW slowdown, SW power cap) and device 1 (HW thermal, \
         power brake, SW thermal, sync boost, display clocks, unknown reason 0x1000): check \
         cooling, power and the power limit (nvidia-smi -q -d PERFORMANCE)"
    )]
    #[case::several(
        vec![device(0, Readings { persistence: Reading::Value(false), clocks_event_reasons: Reading::Value(0x4), ..healthy() })],
        Status::Warn,
        "clocks throttled on device 0 (SW power cap): check cooling, power and the power limit \
         (nvidia-smi -q -d PERFORMANCE); persistence mode off on device 0: each process's first \
         CUDA call pays driver initialisation; enable it with `nvidia-smi -pm 1` or run \
         nvidia-persistenced"
    )]
    #[case::query_failed(
        vec![device(0, Readings { persistence: Reading::Value(false), clocks_event_reasons: Reading::Failed("nvmlDeviceGetCurrentClocksEventReasons: NVML_ERROR_GPU_IS_LOST (15): device fell off the bus".into()), ..healthy() })],
        Status::Fail,
        "device 0: nvmlDeviceGetCurrentClocksEventReasons: NVML_ERROR_GPU_IS_LOST (15): device \
         fell off the bus; persistence mode off on device 0: each process's first CUDA call pays \
         driver initialisation; enable it with `nvidia-smi -pm 1` or run nvidia-persistenced"
    )]
    #[case::handle_failed(
        vec![DeviceHealth { index: 0, name: None, uuid: None, readings: Err(Unread::Failed("nvmlDeviceGetHandleByIndex_v2: NVML_ERROR_GPU_IS_LOST (15): gone".into())) }],
        Status::Fail,
        "device 0: nvmlDeviceGetHandleByIndex_v2: NVML_ERROR_GPU_IS_LOST (15): gone"
    )]
    #[case::handle_denied(
        vec![device(0, healthy()),
             DeviceHealth { index: 1, name: None, uuid: None, readings: Err(Unread::Denied("nvmlDeviceGetHandleByIndex_v2: NVML_ERROR_NO_PERMISSION (4)".into())) }],
        Status::Pass,
        "2 devices: persistence on, no ECC errors, no retired pages or pending remaps, not throttled"
    )]
    #[case::none(vec![], Status::Skip, "NVML lists no device: nothing to check")]
    fn health_verdicts(
        #[case] devices: Vec<DeviceHealth>,
        #[case] status: Status,
        #[case] reason: &str,
    ) {
        let outcome = judge_health(&devices);
        assert_eq!((outcome.status, outcome.reason.as_str()), (status, reason));
    }

    #[test]
    fn unsupported_queries_are_noted_and_counts_detailed() {
        let outcome = judge_health(&[device(0, consumer())]);
        assert_eq!(
            outcome.details["not_supported"],
            json!([
                "device 0: ECC error counts not supported",
                "device 0: page retirement not supported",
                "device 0: row remapping not supported"
            ])
        );
        let ecc_off = Readings {
            ecc_on: Some(false),
            ecc_volatile_uncorrected: Reading::NotSupported,
            ..healthy()
        };
        let outcome = judge_health(&[device(0, ecc_off)]);
        assert_eq!(
            outcome.reason,
            "1 device: persistence on, no retired pages or pending remaps, not throttled"
        );
        assert_eq!(
            outcome.details["not_supported"],
            json!(["device 0: ECC off"])
        );
        assert_eq!(outcome.details["devices"][0]["ecc_mode"], json!("off"));
        let outcome = judge_health(&[device(
            0,
            Readings {
                ecc_volatile_uncorrected: Reading::Value(4),
                ecc_aggregate_uncorrected: Some(9),
                clocks_event_reasons: Reading::Value(0x21),
                ..healthy()
            },
        )]);
        let listed = &outcome.details["devices"][0];
        assert_eq!(listed["ecc_volatile_uncorrected"], json!(4));
        assert_eq!(listed["ecc_aggregate_uncorrected"], json!(9));
        assert_eq!(listed["ecc_aggregate_corrected"], json!(3));
        assert_eq!(listed["name"], json!("NVIDIA H100 80GB HBM3"));
        assert_eq!(
            listed["clocks_event_reasons"],
            json!({ "bits": "0x21", "holding_back": ["SW thermal"] })
        );
        assert!(!outcome.details.contains_key("not_supported"));
    }
}
