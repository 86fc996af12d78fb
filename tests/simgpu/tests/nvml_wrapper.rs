//! The built shared object loaded as stackbench loads NVML: by nvml-wrapper 0.13 from a path
//! (`Nvml::builder().lib_path(...)`), which looks every symbol up at load. Each test runs in a
//! process of its own (the shared object reads its profile once per process), with
//! `STACKBENCH_SIM_PROFILE` set for it.

mod nvml_child;

use nvml_child::{with_profile, Profile};
use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, RetirementCause, TemperatureSensor,
};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::{nvml_sym, nvml_try, NvmlError};
use nvml_wrapper::{Device, Nvml};
use std::path::PathBuf;

/// The shared object `cargo test` built beside this test (the cdylib of the crate), or the one
/// `SIMGPU_LIBRARY` names.
fn library() -> PathBuf {
    if let Some(path) = std::env::var_os("SIMGPU_LIBRARY") {
        return path.into();
    }
    let exe = std::env::current_exe().expect("the test binary");
    let deps = exe.parent().expect("target/<profile>/deps");
    [deps, deps.parent().unwrap_or(deps)]
        .iter()
        .map(|dir| dir.join("libstackbench_simgpu.so"))
        .find(|path| path.exists())
        .expect("libstackbench_simgpu.so beside the test binary: cargo test -p simgpu builds it")
}

fn open() -> Result<Nvml, NvmlError> {
    Nvml::builder().lib_path(library().as_os_str()).init()
}

/// `nvmlDeviceGetRemappedRows` as stackbench calls it (health.rs: through the raw table).
fn remapped_rows(device: &Device) -> Result<[u32; 4], NvmlError> {
    let function = nvml_sym(device.nvml().lib().nvmlDeviceGetRemappedRows.as_ref())?;
    let mut rows = [0u32; 4];
    let [a, b, c, d] = &mut rows;
    // SAFETY: a handle of the live NVML, four live outputs, the signature nvml.h gives.
    nvml_try(unsafe { function(device.handle(), a, b, c, d) })?;
    Ok(rows)
}

/// The clocks event reasons as stackbench reads them (clocks.rs: either name).
fn clocks_event_reasons(device: &Device) -> Result<u64, NvmlError> {
    let lib = device.nvml().lib();
    let function = nvml_sym(lib.nvmlDeviceGetCurrentClocksEventReasons.as_ref())
        .or_else(|_| nvml_sym(lib.nvmlDeviceGetCurrentClocksThrottleReasons.as_ref()))?;
    let mut reasons = 0;
    // SAFETY: as in `remapped_rows`.
    nvml_try(unsafe { function(device.handle(), &mut reasons) })?;
    Ok(reasons)
}

#[test]
fn nvml_wrapper_reads_everything_stackbench_reads() {
    let test = "nvml_wrapper_reads_everything_stackbench_reads";
    with_profile(test, "", Profile::Default, || {
        let nvml = open().expect("nvmlInit_v2");
        // Every symbol behind a call stackbench makes (harness/gpu.rs, check's driver.nvml
        // and driver.health, the bench telemetry, the probe), found at load.
        let lib = nvml.lib();
        let found = [
            ("nvmlInit_v2", lib.nvmlInit_v2.is_ok()),
            ("nvmlShutdown", lib.nvmlShutdown.is_ok()),
            ("nvmlErrorString", lib.nvmlErrorString.is_ok()),
            (
                "nvmlSystemGetDriverVersion",
                lib.nvmlSystemGetDriverVersion.is_ok(),
            ),
            (
                "nvmlSystemGetCudaDriverVersion_v2",
                lib.nvmlSystemGetCudaDriverVersion_v2.is_ok(),
            ),
            ("nvmlDeviceGetCount_v2", lib.nvmlDeviceGetCount_v2.is_ok()),
            (
                "nvmlDeviceGetHandleByIndex_v2",
                lib.nvmlDeviceGetHandleByIndex_v2.is_ok(),
            ),
            (
                "nvmlDeviceGetHandleByPciBusId_v2",
                lib.nvmlDeviceGetHandleByPciBusId_v2.is_ok(),
            ),
            ("nvmlDeviceGetName", lib.nvmlDeviceGetName.is_ok()),
            ("nvmlDeviceGetUUID", lib.nvmlDeviceGetUUID.is_ok()),
            (
                "nvmlDeviceGetCudaComputeCapability",
                lib.nvmlDeviceGetCudaComputeCapability.is_ok(),
            ),
            (
                "nvmlDeviceGetMemoryInfo_v2",
                lib.nvmlDeviceGetMemoryInfo_v2.is_ok(),
            ),
            (
                "nvmlDeviceGetPersistenceMode",
                lib.nvmlDeviceGetPersistenceMode.is_ok(),
            ),
            ("nvmlDeviceGetEccMode", lib.nvmlDeviceGetEccMode.is_ok()),
            (
                "nvmlDeviceGetTotalEccErrors",
                lib.nvmlDeviceGetTotalEccErrors.is_ok(),
            ),
            (
                "nvmlDeviceGetRetiredPagesPendingStatus",
                lib.nvmlDeviceGetRetiredPagesPendingStatus.is_ok(),
            ),
            (
                "nvmlDeviceGetRemappedRows",
                lib.nvmlDeviceGetRemappedRows.is_ok(),
            ),
            (
                "nvmlDeviceGetCurrentClocksEventReasons",
                lib.nvmlDeviceGetCurrentClocksEventReasons.is_ok(),
            ),
            ("nvmlDeviceGetClockInfo", lib.nvmlDeviceGetClockInfo.is_ok()),
            (
                "nvmlDeviceGetTemperature",
                lib.nvmlDeviceGetTemperature.is_ok(),
            ),
            (
                "nvmlDeviceGetPowerUsage",
                lib.nvmlDeviceGetPowerUsage.is_ok(),
            ),
        ];
        let missing: Vec<&str> = found
            .iter()
            .filter(|(_, ok)| !ok)
            .map(|(name, _)| *name)
            .collect();
        assert!(missing.is_empty(), "not exported: {missing:?}");

        // driver.nvml
        assert_eq!(nvml.sys_driver_version().unwrap(), "580.95.05");
        assert_eq!(nvml.sys_cuda_driver_version().unwrap(), 13000);
        assert_eq!(nvml.device_count().unwrap(), 1);

        // __gpu
        let device = nvml.device_by_index(0).unwrap();
        let name = device.name().unwrap();
        assert!(name.contains("simulated"), "{name}");
        let cc = device.cuda_compute_capability().unwrap();
        assert_eq!((cc.major, cc.minor), (15, 0));
        let uuid = device.uuid().unwrap();
        assert!(uuid.starts_with("GPU-") && uuid.len() == 40, "{uuid}");
        assert_eq!(device.memory_info().unwrap().total, 80 << 30);

        // driver.health
        assert!(device.is_in_persistent_mode().unwrap());
        assert!(device.is_ecc_enabled().unwrap().currently_enabled);
        for (kind, counter) in [
            (MemoryError::Uncorrected, EccCounter::Volatile),
            (MemoryError::Uncorrected, EccCounter::Aggregate),
            (MemoryError::Corrected, EccCounter::Aggregate),
        ] {
            assert_eq!(device.total_ecc_errors(kind, counter).unwrap(), 0);
        }
        assert!(!device.are_pages_pending_retired().unwrap());
        assert!(device
            .retired_pages(RetirementCause::DoubleBitEccError)
            .unwrap()
            .is_empty());
        assert_eq!(remapped_rows(&device).unwrap(), [0, 0, 0, 0]);
        assert_eq!(clocks_event_reasons(&device).unwrap(), 0x1, "idle");

        // The bench telemetry: a second NVML on the device at the driver's PCI address, as
        // the sampler opens it while the check's is still held.
        let pci = device.pci_info().unwrap();
        let bus = format!("{:x}:{:x}:{:x}.0", pci.domain, pci.bus, pci.device);
        let sampler = open().expect("a second nvmlInit_v2");
        let same = sampler.device_by_pci_bus_id(bus.as_str()).unwrap();
        // SAFETY: the handles are only compared, never used.
        let (a, b) = unsafe { (same.handle(), device.handle()) };
        assert_eq!(a, b);
        assert_eq!(same.clock_info(Clock::SM).unwrap(), 1980);
        assert_eq!(same.temperature(TemperatureSensor::Gpu).unwrap(), 45);
        assert_eq!(same.power_usage().unwrap(), 72_000);
        assert_eq!(clocks_event_reasons(&same).unwrap(), 0x1);
        drop(sampler);
        // The first is still initialised after the second's nvmlShutdown.
        assert_eq!(nvml.device_count().unwrap(), 1);
        drop(nvml);
    });
}

#[test]
fn faults_read_through_nvml_wrapper() {
    let profile = "[faults]\necc_uncorrected = 2\nretired_pages = 3\nrow_remap_pending = true\n";
    let test = "faults_read_through_nvml_wrapper";
    with_profile(test, "", Profile::Toml(profile), || {
        let nvml = open().expect("nvmlInit_v2");
        let device = nvml.device_by_index(0).unwrap();
        let volatile = device.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile);
        assert_eq!(volatile.unwrap(), 2);
        let aggregate = device.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Aggregate);
        assert_eq!(aggregate.unwrap(), 2);
        assert!(device.are_pages_pending_retired().unwrap());
        let pages = device
            .retired_pages(RetirementCause::DoubleBitEccError)
            .unwrap();
        assert_eq!(pages.len(), 3);
        assert!(pages.iter().all(|p| p.address != 0 && p.timestamp != 0));
        let single = device.retired_pages(RetirementCause::MultipleSingleBitEccErrors);
        assert!(single.unwrap().is_empty());
        assert_eq!(remapped_rows(&device).unwrap(), [0, 1, 1, 0]);
    });
}

#[test]
fn an_unreadable_profile_fails_init_and_says_why() {
    let test = "an_unreadable_profile_fails_init_and_says_why";
    let output = with_profile(test, "", Profile::Missing, || {
        assert!(matches!(open(), Err(NvmlError::Unknown)));
    });
    if let Some(output) = output {
        assert!(
            output.contains("stackbench simgpu: nvmlInit_v2: STACKBENCH_SIM_PROFILE=")
                && output.contains("no-such-profile.toml"),
            "{output}"
        );
    }
}

#[test]
fn other_processes_are_listed_as_nvml_wrapper_reads_them() {
    let test = "other_processes_are_listed_as_nvml_wrapper_reads_them";
    let profile = "[node]\ngpus = 2\n[faults]\nother_processes = 2\n";
    with_profile(test, "busy", Profile::Toml(profile), || {
        let nvml = open().expect("nvmlInit_v2");
        let mut pids = Vec::new();
        for index in 0..2 {
            let device = nvml.device_by_index(index).unwrap();
            // nvmlDeviceGetComputeRunningProcesses_v3: asked for the count, then the list.
            let processes = device.running_compute_processes().unwrap();
            assert_eq!(processes.len(), 2, "{processes:?}");
            let mut held = 0;
            for p in &processes {
                let UsedGpuMemory::Used(bytes) = p.used_gpu_memory else {
                    panic!("no memory figure: {p:?}");
                };
                assert!(bytes >= 1 << 30, "{bytes}");
                held += bytes;
                assert_eq!((p.gpu_instance_id, p.compute_instance_id), (None, None));
                pids.push(p.pid);
            }
            let names: Vec<String> = processes
                .iter()
                .map(|p| nvml.sys_process_name(p.pid, 64).unwrap())
                .collect();
            assert_eq!(names, ["python3", "pt_main_thread"]);
            let memory = device.memory_info().unwrap();
            assert_eq!(memory.used, held);
            assert_eq!(memory.free, memory.total - held);
            assert_eq!(device.applications_clock(Clock::SM).unwrap(), 1980);
            assert_eq!(device.applications_clock(Clock::Memory).unwrap(), 2619);
        }
        pids.sort_unstable();
        pids.dedup();
        assert_eq!(pids.len(), 4, "every process of the node is its own");
        assert!(matches!(
            nvml.sys_process_name(std::process::id(), 64),
            Err(NvmlError::NotFound)
        ));
    });
    with_profile(test, "clean", Profile::Default, || {
        let nvml = open().expect("nvmlInit_v2");
        let device = nvml.device_by_index(0).unwrap();
        assert!(device.running_compute_processes().unwrap().is_empty());
        assert_eq!(device.memory_info().unwrap().used, 0);
    });
}
