//! The driver's devices as the profile describes them: count, names, UUIDs, attributes, memory,
//! PCI bus ids that NVML can find them by, versions, and the errors NVIDIA names.

mod driver_support;

use driver_support::{fails, host, name, ok};
use stackbench_simgpu::driver::*;
use stackbench_simgpu::state::{pci, uuid};
use std::ffi::{c_char, CStr};
use std::ptr::null_mut;

const TWO_DEVICES: &str = r#"
[[device]]
name = "stackbench simulated GPU (H100-like)"

[[device]]
name = "stackbench simulated GPU (small)"
compute_capability = "12.1"
memory_gib = 16
multiprocessors = 48
l2_mib = 24
cuda_version = "12.9"
"#;

fn attribute(attribute: i32, dev: i32) -> i32 {
    let mut value = -1;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDeviceGetAttribute(&mut value, attribute, dev) });
    value
}

fn text(fill: impl FnOnce(*mut c_char, i32) -> CUresult) -> String {
    let mut buffer = [0 as c_char; 256];
    ok(fill(buffer.as_mut_ptr(), buffer.len() as i32));
    // SAFETY: the driver NUL-terminated it.
    unsafe { CStr::from_ptr(buffer.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn every_device_of_the_profile_with_its_attributes() {
    let sim = host(TWO_DEVICES);
    let mut count = 0;
    // SAFETY: a valid out-pointer.
    fails(
        unsafe { cuDeviceGetCount(&mut count) },
        "CUDA_ERROR_NOT_INITIALIZED",
    );
    ok(cuInit(0));
    // SAFETY: as above.
    ok(unsafe { cuDeviceGetCount(&mut count) });
    assert_eq!(count, 2);
    let mut dev = -1;
    // SAFETY: as above.
    ok(unsafe { cuDeviceGet(&mut dev, 1) });
    assert_eq!(dev, 1);
    // SAFETY: as above.
    fails(
        unsafe { cuDeviceGet(&mut dev, 2) },
        "CUDA_ERROR_INVALID_DEVICE",
    );

    // SAFETY: the buffer holds `len` bytes.
    let names: Vec<String> = (0..2)
        .map(|d| text(|b, len| unsafe { cuDeviceGetName(b, len, d) }))
        .collect();
    assert_eq!(names[0], "stackbench simulated GPU (H100-like)");
    assert!(names[1].contains("simulated"));
    // A short buffer gets what fits, NUL-terminated.
    let mut short = [1 as c_char; 11];
    // SAFETY: the buffer holds 11 bytes.
    ok(unsafe { cuDeviceGetName(short.as_mut_ptr(), 11, 0) });
    // SAFETY: NUL-terminated by the driver.
    let cut = unsafe { CStr::from_ptr(short.as_ptr()) };
    assert_eq!(cut.to_bytes(), b"stackbench");

    // Compute capability, multiprocessors, L2, warp, block and shared-memory limits.
    assert_eq!((attribute(75, 0), attribute(76, 0)), (15, 0));
    assert_eq!((attribute(75, 1), attribute(76, 1)), (12, 1));
    assert_eq!(attribute(16, 0), 132);
    assert_eq!(attribute(16, 1), 48);
    assert_eq!(attribute(38, 0), 50 << 20);
    assert_eq!(attribute(38, 1), 24 << 20);
    assert_eq!(attribute(10, 0), 32);
    assert_eq!(attribute(1, 0), 1024);
    assert_eq!(attribute(8, 0), 48 * 1024);
    assert_eq!(attribute(13, 0), 1_980_000);
    let mut value = 0;
    // SAFETY: a valid out-pointer.
    fails(
        unsafe { cuDeviceGetAttribute(&mut value, 0, 0) },
        "CUDA_ERROR_INVALID_VALUE",
    );

    let mut bytes = 0;
    // SAFETY: as above.
    ok(unsafe { cuDeviceTotalMem_v2(&mut bytes, 1) });
    assert_eq!(bytes, 16 << 30);

    // PCI: distinct per device, the same through the attributes, the bus id and state::pci.
    for d in 0..2 {
        let location = pci(d as usize);
        assert_eq!(attribute(50, d), location.domain as i32);
        assert_eq!(attribute(33, d), location.bus as i32);
        assert_eq!(attribute(34, d), location.device as i32);
        // SAFETY: the buffer holds `len` bytes.
        let bus_id = text(|b, len| unsafe { cuDeviceGetPCIBusId(b, len, d) });
        assert_eq!(bus_id, location.bus_id());
    }
    assert_eq!(pci(0).bus_id(), "0000:17:00.0");
    assert_eq!(pci(1).bus_id(), "0000:2a:00.0");

    // UUIDs: distinct, the same as NVML's, through both names of the call.
    let profile = sim.profile.as_ref().unwrap();
    let mut uuids = Vec::new();
    for d in 0..2 {
        let (mut first, mut second) = ([0u8; 16], [0u8; 16]);
        // SAFETY: valid 16-byte out-pointers.
        ok(unsafe { cuDeviceGetUuid(&mut first, d) });
        // SAFETY: as above.
        ok(unsafe { cuDeviceGetUuid_v2(&mut second, d) });
        assert_eq!(first, second);
        assert_eq!(first, uuid(d as usize, &profile.device[d as usize]));
        uuids.push(first);
    }
    assert_ne!(uuids[0], uuids[1]);
}

#[test]
fn the_driver_version_is_the_profile_s_cuda_version() {
    host("[[device]]\ncuda_version = \"12.9\"\n");
    let mut version = 0;
    // SAFETY: a valid out-pointer; no cuInit needed.
    ok(unsafe { cuDriverGetVersion(&mut version) });
    assert_eq!(version, 12090);
    assert_eq!(stackbenchSimulated(), 1);
    fails(cuInit(1), "CUDA_ERROR_INVALID_VALUE");
    // No private tables, but an answer NVRTC's compile cache can take.
    let mut table = c"not touched".as_ptr().cast();
    // SAFETY: a valid out-pointer and a 16-byte id.
    let status = unsafe { cuGetExportTable(&mut table, &[0u8; 16]) };
    fails(status, "CUDA_ERROR_NOT_SUPPORTED");
    assert!(table.is_null());
}

#[test]
fn a_profile_that_does_not_parse_has_no_device() {
    host("[[device]]\nname = 3\n");
    fails(cuInit(0), "CUDA_ERROR_NO_DEVICE");
}

#[test]
fn contexts_must_be_retained_and_current() {
    host(TWO_DEVICES);
    ok(cuInit(0));
    let mut ptr = 0;
    // SAFETY: a valid out-pointer.
    fails(
        unsafe { cuMemAlloc_v2(&mut ptr, 16) },
        "CUDA_ERROR_INVALID_CONTEXT",
    );
    let mut ctx = null_mut();
    // SAFETY: as above.
    ok(unsafe { cuDevicePrimaryCtxRetain(&mut ctx, 1) });
    ok(cuCtxSetCurrent(ctx));
    let (mut current, mut dev) = (null_mut(), -1);
    // SAFETY: valid out-pointers.
    ok(unsafe { cuCtxGetCurrent(&mut current) });
    // SAFETY: as above.
    ok(unsafe { cuCtxGetDevice(&mut dev) });
    assert_eq!((current, dev), (ctx, 1));
    ok(cuCtxSynchronize());
    ok(cuDevicePrimaryCtxRelease_v2(1));
    fails(cuCtxSynchronize(), "CUDA_ERROR_INVALID_CONTEXT");
    fails(cuDevicePrimaryCtxRelease(1), "CUDA_ERROR_INVALID_CONTEXT");
}

#[test]
fn errors_have_nvidia_s_names_and_texts() {
    let text = |status| {
        let mut out = std::ptr::null();
        // SAFETY: a valid out-pointer.
        ok(unsafe { cuGetErrorString(status, &mut out) });
        // SAFETY: the driver's static string.
        unsafe { CStr::from_ptr(out) }.to_str().unwrap().to_owned()
    };
    assert_eq!(name(700), "CUDA_ERROR_ILLEGAL_ADDRESS");
    assert_eq!(text(700), "an illegal memory access was encountered");
    assert_eq!(name(222), "CUDA_ERROR_UNSUPPORTED_PTX_VERSION");
    assert_eq!(
        text(222),
        "the provided PTX was compiled with an unsupported toolchain."
    );
    assert_eq!(name(209), "CUDA_ERROR_NO_BINARY_FOR_GPU");
    assert_eq!(text(0), "no error");
    let mut out = c"not touched".as_ptr();
    // SAFETY: a valid out-pointer.
    fails(
        unsafe { cuGetErrorName(12345, &mut out) },
        "CUDA_ERROR_INVALID_VALUE",
    );
    assert!(out.is_null());
}
