//! `check --quick`: the node health check a scheduler runs (Slurm's HealthCheckProgram or
//! Prolog, a Kubernetes readiness probe). It owns which of the checks run (those that say
//! whether the node can take GPU work, nothing that sweeps a library), which combination they
//! run in, and the verdict on what they found: healthy, unhealthy (drain the node) or could
//! not run, with a one-line reason that names the GPU and the cause.

use super::combination::Combination;
use super::protocol::Component;
use super::spec::PER_DEVICE;
use crate::schema::check::{CheckReport, CheckResult, CombinationReport, Status};
use serde_json::Value;

/// The checks `--quick` runs, in this order: the driver loads and initialises and lists every
/// GPU; NVML initialises and agrees with it; one tiny kernel (the vector add, compiled by
/// NVRTC) runs on each GPU with its result verified; then NVML's health, read after the GPU
/// has worked so that its clocks event reasons are those of a GPU in use, not an idle one.
pub const CHECKS: &[&str] = &[
    "driver.library",
    "driver.init",
    "driver.devices",
    "driver.nvml",
    "nvrtc.load",
    "nvrtc.compile_vector_add",
    "nvrtc.launch_vector_add",
    "driver.health",
];

/// Clocks event reasons that mean a fault (NVML: the hardware cuts the clocks by half or
/// more), as `driver.health` names them; software power capping and thermal control are a
/// card doing its job.
const FAULT_CLOCK_EVENTS: [&str; 3] = ["HW slowdown", "HW thermal", "power brake"];

/// The one combination `--quick` runs in: the node's health does not depend on the toolkit,
/// so the first that can compile the kernel (has NVRTC), else the first.
pub fn pick(combinations: Vec<Combination>) -> Vec<Combination> {
    let has_nvrtc =
        |c: &Combination| (c.components.iter()).any(|f| f.component == Component::Nvrtc);
    let at = combinations.iter().position(has_nvrtc).unwrap_or(0);
    combinations.into_iter().skip(at).take(1).collect()
}

/// What the node's health check concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The node can take GPU work.
    Healthy,
    /// A check failed or a GPU is faulty: drain the node.
    Unhealthy,
    /// Nothing could say either way: no driver, or no kernel could be built.
    CouldNotRun,
}

impl Verdict {
    /// How the verdict starts its line.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Healthy => "healthy",
            Verdict::Unhealthy => "unhealthy",
            Verdict::CouldNotRun => "could not run",
        }
    }
}

/// The verdict and why: every problem found, each naming its GPU where it has one.
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    pub verdict: Verdict,
    /// What was found wrong (unhealthy), or why nothing could be said (could not run), or
    /// what passed (healthy); the first comes first in the line.
    pub reasons: Vec<String>,
}

impl Health {
    /// One line, for a drain reason: `unhealthy: GPU 0 (GPU-...): ... (+2 more)`.
    pub fn line(&self) -> String {
        let first = self.reasons.first().map(String::as_str).unwrap_or_default();
        match self.reasons.len() {
            0 | 1 => format!("{}: {first}", self.verdict.name()),
            n => format!("{}: {first} (+{} more)", self.verdict.name(), n - 1),
        }
    }
}

/// Judges a `--quick` run: unhealthy when a check failed, NVML's health shows a fault, or the
/// driver and NVML disagree on how many GPUs there are; could not run when there was no driver
/// to check or a check was skipped (no NVRTC to build the kernel with); else healthy. The GPU
/// counts are not compared when `CUDA_VISIBLE_DEVICES` is set (`visible_devices`, a Slurm job's
/// or a container's): the driver then sees only the GPUs it names, and NVML still lists all.
pub fn judge(report: &CheckReport, visible_devices: Option<&str>) -> Health {
    let could_not_run = |reason: String| Health {
        verdict: Verdict::CouldNotRun,
        reasons: vec![reason],
    };
    let Some(combination) = report.combinations.first() else {
        return could_not_run("no combination was checked".into());
    };
    if combination.driver.is_none() {
        let why = combination
            .check("driver.library")
            .map_or("no libcuda.so.1 found", |c| c.reason.as_str());
        return could_not_run(format!("driver.library: {why}"));
    }
    let gpus = Gpus::of(combination);
    let mut problems: Vec<String> = (combination.checks.iter())
        .filter(|c| c.status == Status::Fail)
        .map(|c| format!("{}{} failed: {}", gpus.prefix(c), c.id, cause(&c.reason)))
        .collect();
    if visible_devices.is_none() {
        problems.extend(visibility(combination));
    }
    problems.extend(health_faults(combination, &gpus));
    if !problems.is_empty() {
        return Health {
            verdict: Verdict::Unhealthy,
            reasons: problems,
        };
    }
    if let Some(skipped) = (combination.checks.iter()).find(|c| c.status == Status::Skip) {
        return could_not_run(format!(
            "{}{} skipped: {} (in {})",
            gpus.prefix(skipped),
            skipped.id,
            skipped.reason,
            combination.name
        ));
    }
    let warnings: Vec<String> = (combination.checks.iter())
        .filter(|c| c.status == Status::Warn)
        .map(|c| format!("{} warns: {}", c.id, cause(&c.reason)))
        .collect();
    let passed = combination.checks.len() - warnings.len();
    let mut reasons = vec![format!(
        "{}, {passed} checks passed in {:.1} s ({}{})",
        gpus.summary(),
        combination.duration_ms / 1e3,
        combination.name,
        if report.simulated { ", SIMULATED" } else { "" }
    )];
    reasons.extend(warnings);
    Health {
        verdict: Verdict::Healthy,
        reasons,
    }
}

/// The part of a reason before its fix.
fn cause(reason: &str) -> &str {
    reason.split("; ").next().unwrap_or_default()
}

/// The GPUs `driver.devices` listed: ordinal, UUID, name.
struct Gpus {
    listed: Vec<(u64, String, String)>,
}

impl Gpus {
    fn of(combination: &CombinationReport) -> Gpus {
        let listed = (combination.checks.iter())
            .filter(|c| c.id == "driver.devices")
            .filter_map(|c| c.details.get("devices")?.as_array())
            .next()
            .into_iter()
            .flatten()
            .map(|d| {
                let text = |key: &str| d[key].as_str().unwrap_or_default().to_owned();
                (
                    d["ordinal"].as_u64().unwrap_or(0),
                    text("uuid"),
                    text("name"),
                )
            })
            .collect();
        Gpus { listed }
    }

    /// `GPU 3 (GPU-...)`, by ordinal.
    fn name(&self, ordinal: u64) -> String {
        match self.listed.iter().find(|(o, _, _)| *o == ordinal) {
            Some((_, uuid, _)) if !uuid.is_empty() => format!("GPU {ordinal} ({uuid})"),
            _ => format!("GPU {ordinal}"),
        }
    }

    /// `GPU n (uuid): ` for a per-device check (its own GPU, or the one GPU of a run on one),
    /// nothing for the others.
    fn prefix(&self, check: &CheckResult) -> String {
        if !PER_DEVICE.contains(&check.id.as_str()) {
            return String::new();
        }
        match (&check.device, self.listed.as_slice()) {
            (Some(device), _) => format!("{}: ", self.name(u64::from(device.index))),
            (None, [(ordinal, _, _)]) => format!("{}: ", self.name(*ordinal)),
            (None, _) => String::new(),
        }
    }

    /// `2 GPUs (NVIDIA H100 80GB HBM3)`.
    fn summary(&self) -> String {
        let mut names: Vec<&str> = self.listed.iter().map(|(_, _, n)| n.as_str()).collect();
        names.dedup();
        let count = match self.listed.len() {
            1 => "1 GPU".to_owned(),
            n => format!("{n} GPUs"),
        };
        format!("{count} ({})", names.join(", "))
    }
}

/// A GPU NVML lists that the driver does not (or the other way): one fell off the bus, or
/// `CUDA_VISIBLE_DEVICES` hides it.
fn visibility(combination: &CombinationReport) -> Option<String> {
    let nvml = combination
        .check("driver.nvml")?
        .details
        .get("device_count")?
        .as_u64()?;
    let driver = combination
        .check("driver.devices")?
        .details
        .get("devices")?
        .as_array()?
        .len() as u64;
    (nvml != driver).then(|| {
        format!(
            "NVML lists {nvml} GPU(s) but the driver sees {driver}: a GPU fell off the bus or \
             is hidden (CUDA_VISIBLE_DEVICES); nvidia-smi and dmesg (Xid) say which"
        )
    })
}

/// The faults in `driver.health`'s readings, one line per GPU that has any: uncorrected ECC
/// errors, pages pending retirement, row remapping pending or failed, clocks cut by hardware.
/// Persistence mode off and software clock limits are warnings, not faults.
fn health_faults(combination: &CombinationReport, gpus: &Gpus) -> Vec<String> {
    let Some(devices) = combination
        .check("driver.health")
        .and_then(|c| c.details.get("devices"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    devices
        .iter()
        .filter_map(|device| {
            let faults = device_faults(device);
            (!faults.is_empty()).then(|| {
                let gpu = gpus.name(device["index"].as_u64().unwrap_or(0));
                format!("{gpu}: {} (driver.health)", faults.join(", "))
            })
        })
        .collect()
}

/// One device's faults, from its readings as `driver.health` lists them.
fn device_faults(device: &Value) -> Vec<String> {
    let mut faults = Vec::new();
    if let Some(n) = device["ecc_volatile_uncorrected"]
        .as_u64()
        .filter(|&n| n > 0)
    {
        faults.push(format!(
            "{n} uncorrected ECC error(s) since the driver loaded"
        ));
    }
    if device["pages_pending_retirement"] == true {
        faults.push("pages pending retirement".to_owned());
    }
    let rows = &device["remapped_rows"];
    if rows["failed"] == true {
        faults.push("row remapping failed".to_owned());
    }
    if rows["pending"] == true {
        faults.push("row remapping pending".to_owned());
    }
    let held: Vec<&str> = device["clocks_event_reasons"]["holding_back"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|name| FAULT_CLOCK_EVENTS.contains(name))
        .collect();
    if !held.is_empty() {
        faults.push(format!("clocks cut by {}", held.join(", ")));
    }
    faults
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::spec::spec;
    use crate::check::worker::nvml::clocks::clock_event_names;
    use crate::schema::check::{DriverUse, Origin};
    use serde_json::json;

    const UUID: &str = "GPU-6e2b3c4d-5e6f-7081-92a3-b4c5d6e7f809";

    fn result(id: &str, status: Status, reason: &str, details: Value) -> CheckResult {
        let mut result = CheckResult::new(id, status, reason);
        if let Value::Object(map) = details {
            result.details = map.into_iter().collect();
        }
        result
    }

    /// A healthy run of the quick checks on `gpus` GPUs, NVML listing `nvml` of them.
    fn healthy(gpus: u64, nvml: u64) -> Vec<CheckResult> {
        let listed: Vec<Value> = (0..gpus)
            .map(|o| json!({"ordinal": o, "uuid": UUID, "name": "NVIDIA H100 80GB HBM3"}))
            .collect();
        let health: Vec<Value> = (0..nvml)
            .map(|i| {
                json!({"index": i, "ecc_volatile_uncorrected": 0,
                            "pages_pending_retirement": false,
                            "remapped_rows": {"pending": false, "failed": false},
                            "clocks_event_reasons": {"bits": "0x0", "holding_back": []}})
            })
            .collect();
        CHECKS
            .iter()
            .map(|id| match *id {
                "driver.devices" => result(id, Status::Pass, "ok", json!({"devices": listed})),
                "driver.nvml" => result(id, Status::Pass, "ok", json!({"device_count": nvml})),
                "driver.health" => result(id, Status::Pass, "ok", json!({"devices": health})),
                _ => result(id, Status::Pass, "ok", json!({})),
            })
            .collect()
    }

    fn report(checks: Vec<CheckResult>, driver: bool) -> CheckReport {
        let json = json!({
            "schema": "stackbench.check/v1", "started": "2026-11-26T13:00:00Z",
            "host": {"hostname": "n1", "os": "linux", "arch": "x86_64",
                     "stackbench_version": "0.1.0"},
            "gpu": {"source": "nvml", "devices": []},
            "target": null, "driver_dir": null, "combinations": []
        });
        let mut report: CheckReport = serde_json::from_value(json).expect("a report");
        report.combinations.push(CombinationReport {
            name: "pip:torch".into(),
            origin: Origin::Installation,
            root: None,
            layout: None,
            cuda_version: None,
            search_path: String::new(),
            driver: driver.then(|| DriverUse {
                path: "/usr/lib/libcuda.so.1".into(),
                real_path: "/usr/lib/libcuda.so.580.95.05".into(),
                version: Some("580.95.05".into()),
                kernel_module: None,
            }),
            libraries: Vec::new(),
            checks,
            duration_ms: 420.0,
            simulated: false,
            loaded_as: None,
            environment: Vec::new(),
            left_out: Vec::new(),
        });
        report
    }

    fn with(
        mut checks: Vec<CheckResult>,
        id: &str,
        f: impl Fn(&mut CheckResult),
    ) -> Vec<CheckResult> {
        checks.iter_mut().filter(|c| c.id == id).for_each(f);
        checks
    }

    #[test]
    fn the_quick_checks_exist_and_each_needs_only_quick_checks_run_before_it() {
        for (at, id) in CHECKS.iter().enumerate() {
            let spec = spec(id).unwrap_or_else(|| panic!("{id}: no such check"));
            for need in spec.needs {
                assert!(CHECKS[..at].contains(need), "{id} needs {need} first");
            }
        }
    }

    #[test]
    fn the_fault_clock_events_are_named_as_driver_health_names_them() {
        assert_eq!(clock_event_names(0x8 | 0x40 | 0x80), FAULT_CLOCK_EVENTS);
    }

    #[test]
    fn a_healthy_node_says_what_passed() {
        let health = judge(&report(healthy(2, 2), true), None);
        assert_eq!(health.verdict, Verdict::Healthy);
        assert_eq!(
            health.line(),
            "healthy: 2 GPUs (NVIDIA H100 80GB HBM3), 8 checks passed in 0.4 s (pip:torch)"
        );
    }

    #[test]
    fn a_failed_launch_names_its_gpu() {
        let checks = with(healthy(1, 1), "nvrtc.launch_vector_add", |c| {
            c.status = Status::Fail;
            c.reason = "wrong results: 3 of 1048576 differ; check the GPU".into();
        });
        let health = judge(&report(checks, true), None);
        assert_eq!(health.verdict, Verdict::Unhealthy);
        assert_eq!(
            health.line(),
            format!("unhealthy: GPU 0 ({UUID}): nvrtc.launch_vector_add failed: wrong results: 3 of 1048576 differ")
        );
    }

    #[test]
    fn hardware_faults_in_nvml_health_are_unhealthy_software_limits_are_not() {
        let faulty = |device: Value| {
            with(healthy(1, 1), "driver.health", |c| {
                c.details.insert("devices".into(), json!([device.clone()]));
            })
        };
        let health = judge(
            &report(
                faulty(json!({"index": 0, "ecc_volatile_uncorrected": 2,
                          "pages_pending_retirement": true,
                          "remapped_rows": {"pending": true, "failed": false},
                          "clocks_event_reasons": {"holding_back": ["HW slowdown", "SW power cap"]}})),
                true,
            ),
            None,
        );
        assert_eq!(
            health.line(),
            format!(
                "unhealthy: GPU 0 ({UUID}): 2 uncorrected ECC error(s) since the driver loaded, \
                 pages pending retirement, row remapping pending, clocks cut by HW slowdown \
                 (driver.health)"
            )
        );
        let health = judge(
            &report(
                faulty(
                    json!({"index": 0, "ecc_volatile_uncorrected": "not supported",
                          "clocks_event_reasons": {"holding_back": ["SW power cap", "SW thermal"]}}),
                ),
                true,
            ),
            None,
        );
        assert_eq!(health.verdict, Verdict::Healthy, "{}", health.line());
    }

    #[test]
    fn the_gpu_counts_are_not_compared_where_cuda_visible_devices_hides_some() {
        let health = judge(&report(healthy(1, 2), true), Some("0"));
        assert_eq!(health.verdict, Verdict::Healthy, "{}", health.line());
    }

    #[test]
    fn a_gpu_nvml_lists_but_the_driver_does_not_is_unhealthy() {
        let health = judge(&report(healthy(1, 2), true), None);
        assert_eq!(health.verdict, Verdict::Unhealthy);
        assert!(
            health
                .line()
                .starts_with("unhealthy: NVML lists 2 GPU(s) but the driver sees 1"),
            "{}",
            health.line()
        );
    }

    #[test]
    fn no_driver_or_no_kernel_means_it_could_not_run() {
        let checks = with(healthy(1, 1), "driver.library", |c| {
            c.status = Status::Fail;
            c.reason = "no libcuda.so.1: NVIDIA driver not installed".into();
        });
        assert_eq!(
            judge(&report(checks, false), None).line(),
            "could not run: driver.library: no libcuda.so.1: NVIDIA driver not installed"
        );
        let checks = with(healthy(1, 1), "nvrtc.load", |c| {
            c.status = Status::Skip;
            c.reason = "NVRTC is not installed in this combination".into();
        });
        assert_eq!(
            judge(&report(checks, true), None).line(),
            "could not run: nvrtc.load skipped: NVRTC is not installed in this combination (in pip:torch)"
        );
    }

    #[test]
    fn the_line_counts_the_problems_it_does_not_show() {
        let checks = with(healthy(1, 2), "driver.init", |c| {
            c.status = Status::Fail;
            c.reason = "cuInit: CUDA_ERROR_NO_DEVICE (100); check CUDA_VISIBLE_DEVICES".into();
        });
        assert_eq!(
            judge(&report(checks, true), None).line(),
            "unhealthy: driver.init failed: cuInit: CUDA_ERROR_NO_DEVICE (100) (+1 more)"
        );
    }
}
