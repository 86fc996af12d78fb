//! The driver checks: the `libcuda.so.1` a program of the combination gets, `cuInit`, the driver
//! against the runtime by NVIDIA's rules, and every device (whose primary context the GPU checks
//! then use).

use super::outcome::{Call, Checked, Outcome};
use super::session::{Gpu, Session};
use crate::compat::{self, ComputeCapability, CudaVersion, DriverVerdict};
use crate::diagnose::driver::is_under;
use crate::machine::OWN_CLASS;
use crate::probe::{calls, dl::Library};
use cudarc::driver::result::{self as cu, device};
use cudarc::driver::sys::CUdevice_attribute;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

/// `driver.library`: present, not a stub, the right class, loads; its `cuDriverGetVersion`.
pub fn library(s: &mut Session) -> Checked {
    let Some(path) = s.request.driver.clone() else {
        return Err(Outcome::fail(
            "no libcuda.so.1: NVIDIA driver not installed (the loader finds none on \
             LD_LIBRARY_PATH, in ld.so.cache or the default directories); install the driver, \
             or give --driver-dir DIR",
        ));
    };
    let real = crate::hostfs::real_path(&path).unwrap_or_else(|_| path.clone());
    let version = driver_file_version(&real);
    let mut details = BTreeMap::from([
        ("path".to_owned(), json!(path.display().to_string())),
        ("real_path".to_owned(), json!(real.display().to_string())),
        (
            "driver_version".to_owned(),
            json!(version.clone().unwrap_or_default()),
        ),
    ]);
    if is_under(&path, "stubs") {
        return Err(Outcome::fail(format!(
            "{} is the toolkit's link-time stub, not a driver: every call returns \
             CUDA_ERROR_STUB_LIBRARY (34); remove its directory from the search path",
            path.display()
        ))
        .details_from(&details));
    }
    let elf = crate::elf::read_path(&real)
        .map_err(|e| Outcome::fail(format!("cannot read {}: {e}", real.display())))?;
    if elf.class != OWN_CLASS {
        return Err(Outcome::fail(format!(
            "wrong ELF class: {} is {} ({}), this program is {OWN_CLASS}: install the driver's \
             {OWN_CLASS} libraries (on Debian, the amd64 libcuda1)",
            path.display(),
            elf.class,
            elf.machine
        ))
        .details_from(&details));
    }
    let library = Library::open(&path)
        .map_err(|e| Outcome::fail(format!("dlopen {}: {e}", path.display())))?;
    let cuda = match calls::cu_driver_get_version(&library) {
        None => {
            return Err(Outcome::fail(format!(
                "{} does not export cuDriverGetVersion: not an NVIDIA driver library",
                path.display()
            )))
        }
        Some(Err(code)) => {
            return Err(Outcome::fail(format!(
                "cuDriverGetVersion returned {code}{}",
                compat::driver_error(code)
                    .and_then(|e| e.driver_name)
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            )))
        }
        Some(Ok(v)) => CudaVersion::from_api(v as u32),
    };
    let simulated = is_simulated(&library);
    s.driver = Some(library);
    s.driver_cuda = cuda;
    if let Some(cuda) = cuda {
        details.insert("cuda_version".into(), json!(cuda.to_string()));
    }
    if simulated {
        details.insert("simulated".into(), json!(true));
    }
    let supports = cuda.map_or_else(|| "?".to_owned(), |c| c.to_string());
    let what = format!(
        "libcuda.so.1 {} (supports CUDA {supports}) from {}{}",
        version.as_deref().unwrap_or("of unknown version"),
        path.display(),
        if simulated {
            ": stackbench's SIMULATED driver (tests/simgpu), not a GPU's"
        } else {
            ""
        }
    );
    let outcome = if is_under(&path, "compat") {
        Outcome::warn(format!(
            "{what}: a forward-compatibility driver, which works only on data-centre GPUs \
             (CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804, elsewhere)"
        ))
    } else {
        Outcome::pass(what)
    };
    Ok(outcome.details_from(&details))
}

/// Whether `library` is one of stackbench's simulated libraries: they alone export
/// `int stackbenchSimulated(void)`, which answers 1. Looked up on the library actually loaded,
/// so a real driver found first is never taken for it.
pub(super) fn is_simulated(library: &Library) -> bool {
    // SAFETY: the simulator declares it `int stackbenchSimulated(void)`; nothing else exports
    // that name.
    let function: Option<unsafe extern "C" fn() -> std::ffi::c_int> =
        unsafe { library.function(c"stackbenchSimulated") };
    // SAFETY: takes nothing, returns an int.
    function.is_some_and(|f| unsafe { f() } == 1)
}

/// The driver version in a driver library's real file name (`libcuda.so.535.261.03`).
pub(super) fn driver_file_version(real: &Path) -> Option<String> {
    let name = real.file_name()?.to_string_lossy().into_owned();
    let version = crate::catalog::classify(&name)?.version;
    (version.split('.').count() >= 2).then_some(version)
}

/// `driver.init`: `cuInit(0)`.
pub fn init(_s: &mut Session) -> Checked {
    cu::init().call("cuInit")?;
    Ok(Outcome::pass("cuInit(0) succeeded"))
}

/// `driver.version`: the driver's CUDA version against the runtime's, by NVIDIA's rules.
pub fn version(s: &mut Session) -> Checked {
    let (Some(driver), Some(runtime)) = (s.driver_cuda, s.runtime) else {
        return Err(Outcome::fail(
            "the driver's or the runtime's version is unknown (cuDriverGetVersion or \
             cudaRuntimeGetVersion did not answer)",
        ));
    };
    let driver_version = s
        .request
        .driver
        .as_deref()
        .and_then(|p| crate::hostfs::real_path(p).ok())
        .and_then(|p| driver_file_version(&p));
    let verdict = compat::runtime_on_driver(runtime, driver, driver_version.as_deref());
    let versions = format!("driver supports CUDA {driver}, runtime is {runtime}");
    let outcome = match verdict {
        DriverVerdict::Supported => Outcome::pass(versions),
        DriverVerdict::MinorVersionCompatible => Outcome::warn(format!(
            "{versions}: runs by minor version compatibility; features new in {runtime} may fail \
             with cudaErrorCallRequiresNewerDriver (36), and PTX from this toolkit's NVRTC may \
             not JIT-compile (cudaErrorUnsupportedPtxVersion, 222); upgrade the driver to one \
             for CUDA {runtime}"
        )),
        DriverVerdict::TooOld => {
            let needed = compat::minor_version_minimum(runtime.major)
                .map(|m| format!(" (>= {m})"))
                .unwrap_or_default();
            Outcome::fail(format!(
                "{versions}: cudaErrorInsufficientDriver (35), \"CUDA driver version is \
                 insufficient for CUDA runtime version\"; upgrade the driver to one for CUDA \
                 {}.x{needed}, or use a CUDA {}.x runtime",
                runtime.major, driver.major
            ))
        }
    };
    Ok(outcome
        .detail("driver_cuda", driver.to_string())
        .detail("runtime_cuda", runtime.to_string())
        .detail("verdict", serde_json::to_value(verdict).unwrap_or_default()))
}

/// `driver.devices`: each device's name, UUID, compute capability and memory; then the primary
/// context of the requested device, made current for the GPU checks.
pub fn devices(s: &mut Session) -> Checked {
    let count = device::get_count().call("cuDeviceGetCount")?;
    if count < 1 {
        return Err(Outcome::fail(
            "cuDeviceGetCount: 0 devices (CUDA_VISIBLE_DEVICES may hide them)",
        ));
    }
    let mut listed = Vec::new();
    let mut chosen = None;
    for ordinal in 0..count {
        let dev = device::get(ordinal).call("cuDeviceGet")?;
        let name = device::get_name(dev).call("cuDeviceGetName")?;
        let uuid = device::get_uuid(dev).call("cuDeviceGetUuid")?;
        // SAFETY: `dev` came from cuDeviceGet.
        let (major, minor, l2, memory) = unsafe {
            (
                device::get_attribute(
                    dev,
                    CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                )
                .call("cuDeviceGetAttribute")?,
                device::get_attribute(
                    dev,
                    CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                )
                .call("cuDeviceGetAttribute")?,
                device::get_attribute(dev, CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
                    .call("cuDeviceGetAttribute")?,
                device::total_mem(dev).call("cuDeviceTotalMem")?,
            )
        };
        let cc = ComputeCapability::new(major as u32, minor as u32);
        let attribute = |attribute| {
            // SAFETY: `dev` came from cuDeviceGet.
            unsafe { device::get_attribute(dev, attribute) }.ok()
        };
        let uuid = format_uuid(&uuid.bytes.map(|b| b as u8));
        let bus_id = pci_bus_id(dev);
        listed.push(json!({
            "ordinal": ordinal,
            "name": name,
            "uuid": uuid,
            "pci_bus_id": bus_id,
            "compute_capability": format!("{major}.{minor}"),
            "memory_bytes": memory,
            "l2_bytes": l2,
            "multiprocessors": attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            "clock_khz": attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
            "memory_clock_khz": attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
            "memory_bus_bits": attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
        }));
        if ordinal as u32 == s.request.device {
            chosen = Some((dev, name, cc, uuid, memory));
        }
    }
    let Some((dev, name, cc, uuid, memory)) = chosen else {
        return Err(Outcome::fail(format!(
            "device {} was asked for; there are {count} (0 to {})",
            s.request.device,
            count - 1
        ))
        .detail("devices", listed));
    };
    // SAFETY: `dev` came from cuDeviceGet; the context is retained for the worker's life.
    let context = unsafe { cudarc::driver::result::primary_ctx::retain(dev) }
        .call("cuDevicePrimaryCtxRetain")?;
    // SAFETY: a context just retained.
    unsafe { cu::ctx::set_current(context) }.call("cuCtxSetCurrent")?;
    s.gpu = Some(Gpu {
        ordinal: s.request.device as i32,
        device: dev,
        context,
        name: name.clone(),
        cc,
    });
    Ok(Outcome::pass(format!(
        "{count} device(s); using {}: {name}, {uuid}, compute capability {cc}, {:.1} GiB",
        s.request.device,
        memory as f64 / (1u64 << 30) as f64
    ))
    .detail("devices", listed))
}

/// The device's PCI bus id (`0000:17:00.0`), normalised; `None` when the driver cannot say or
/// has no `cuDeviceGetPCIBusId` (looked up by hand: cudarc panics on a missing symbol).
fn pci_bus_id(dev: cudarc::driver::sys::CUdevice) -> Option<String> {
    type GetBusId = unsafe extern "C" fn(*mut std::ffi::c_char, std::ffi::c_int, i32) -> i32;
    // SAFETY: the driver's function of this prototype (cuda.h), when it exports it.
    let get: GetBusId = unsafe {
        crate::probe::dl::Library::loaded(c"libcuda.so.1")?.function(c"cuDeviceGetPCIBusId")?
    };
    let mut text = [0 as std::ffi::c_char; 32];
    // SAFETY: `text` holds 32 bytes, as the length says; `dev` came from cuDeviceGet.
    if unsafe { get(text.as_mut_ptr(), 32, dev) } != 0 {
        return None;
    }
    // SAFETY: the driver wrote a NUL-terminated string into `text` (32 bytes hold any bus id).
    let text = unsafe { std::ffi::CStr::from_ptr(text.as_ptr()) };
    crate::gpu::normal_bus_id(&text.to_string_lossy())
}

/// A UUID as `nvidia-smi -L` shows it: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub fn format_uuid(bytes: &[u8; 16]) -> String {
    format!("GPU-{}", crate::run_id::hyphenated(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_as_nvidia_smi_shows_them() {
        let bytes = [
            0x6e, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f, 0x70, 0x81, 0x92, 0xa3, 0xb4, 0xc5, 0xd6, 0xe7,
            0xf8, 0x09,
        ];
        assert_eq!(
            format_uuid(&bytes),
            "GPU-6e2b3c4d-5e6f-7081-92a3-b4c5d6e7f809"
        );
    }

    #[test]
    fn driver_versions_from_file_names() {
        assert_eq!(
            driver_file_version(Path::new("/x/libcuda.so.535.261.03")).as_deref(),
            Some("535.261.03")
        );
        assert_eq!(driver_file_version(Path::new("/x/libcuda.so.1")), None);
        assert_eq!(driver_file_version(Path::new("/x/libcuda.so")), None);
    }
}
