//! The simulated CUPTI through its exported functions, each test on a host of its own: kernel
//! records laid out as NVIDIA's header declares them (compiled with `cc`), carrying the
//! kernels' names, launch shapes, streams and correlation ids and their start and end on the
//! model timeline that CUDA events also read; buffers handed out and back as CUPTI's contract
//! says; and CUPTI held by another profiler (`cupti_busy`).

mod driver_support;

use driver_support::{
    alloc, context, elapsed, event, launch_vector_add, ok, stream, vector_add_function, QUIET,
};
use stackbench_simgpu::clock::{Peak, LAUNCH_LATENCY};
use stackbench_simgpu::driver::library::{enqueue, Work};
use stackbench_simgpu::driver::*;
use stackbench_simgpu::libs::cupti::record::{ActivityKernel10, KERNEL_BYTES};
use stackbench_simgpu::libs::cupti::*;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_void, CStr};
use std::mem::{offset_of, size_of_val};
use std::path::PathBuf;
use std::process::Command;
use std::ptr::null_mut;

/// `CUPTI_ACTIVITY_KIND_KERNEL`, `CONCURRENT_KERNEL` and `MEMCPY`.
const KERNEL: u32 = 3;
const CONCURRENT_KERNEL: u32 = 10;
const MEMCPY: u32 = 1;

/// QUIET's bandwidth, bytes per second.
const BANDWIDTH: f64 = 1000e9;

/// The name of a CUPTI status.
fn name(status: i32) -> String {
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: a valid out-pointer.
    unsafe { cuptiGetResultString(status, &mut text) };
    // SAFETY: a static NUL-terminated string ("<unknown>" for unknown codes).
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

#[track_caller]
fn cupti_ok(status: i32) {
    assert_eq!(status, 0, "{}", name(status));
}

#[track_caller]
fn cupti_fails(status: i32, expected: &str) {
    assert_eq!(name(status), expected);
}

/// What a test's buffer callbacks were handed, on the test's own thread (CUPTI calls them on
/// the thread that flushes).
#[derive(Default)]
struct Delivered {
    /// Each buffer handed back: its records (copied), its size and its valid size.
    buffers: Vec<(Vec<ActivityKernel10>, usize, usize)>,
    /// Bytes of each buffer handed out; 0 hands out a null buffer.
    size: usize,
    /// The `maxNumRecords` each buffer allows (0: as many as fit).
    max: usize,
}

thread_local! {
    static DELIVERED: RefCell<Delivered> = RefCell::new(Delivered {
        size: 1 << 16,
        ..Delivered::default()
    });
}

/// The buffer-requested callback: a buffer of `Delivered::size` bytes, 8-aligned.
unsafe extern "C" fn requested(buffer: *mut *mut u8, size: *mut usize, max: *mut usize) {
    let (bytes, most) = DELIVERED.with(|d| (d.borrow().size, d.borrow().max));
    let memory = if bytes == 0 {
        null_mut()
    } else {
        Box::leak(vec![0u64; bytes / 8].into_boxed_slice())
            .as_mut_ptr()
            .cast()
    };
    // SAFETY: CUPTI passes three valid places to write.
    unsafe {
        *buffer = memory;
        *size = bytes;
        *max = most;
    }
}

/// The buffer-completed callback: walks the buffer with `cuptiActivityGetNextRecord`, keeping
/// copies of its records, and checks that the walk ends as CUPTI's does.
unsafe extern "C" fn completed(_: *mut c_void, _: u32, buffer: *mut u8, size: usize, valid: usize) {
    let mut records = Vec::new();
    let mut record: *mut u8 = null_mut();
    loop {
        // SAFETY: the buffer this CUPTI filled, and the previous record of the walk.
        let status = unsafe { cuptiActivityGetNextRecord(buffer, valid, &mut record) };
        if status != 0 {
            assert_eq!(name(status), "CUPTI_ERROR_MAX_LIMIT_REACHED");
            break;
        }
        // SAFETY: a whole record inside the buffer's valid bytes.
        records.push(unsafe { record.cast::<ActivityKernel10>().read_unaligned() });
    }
    DELIVERED.with(|d| d.borrow_mut().buffers.push((records, size, valid)));
}

/// Registers the test's callbacks and enables `kind`.
fn start(kind: u32) {
    cupti_ok(cuptiActivityRegisterCallbacks(
        Some(requested),
        Some(completed),
    ));
    cupti_ok(cuptiActivityEnable(kind));
}

/// Flushes, and every record delivered so far.
fn flushed() -> Vec<ActivityKernel10> {
    cupti_ok(cuptiActivityFlushAll(1));
    DELIVERED.with(|d| {
        (d.borrow().buffers.iter())
            .flat_map(|(records, _, _)| records.clone())
            .collect()
    })
}

/// The kernel name a record points to.
fn kernel_name(record: &ActivityKernel10) -> String {
    // SAFETY: CUPTI's names live as long as the process.
    unsafe { CStr::from_ptr(record.name) }
        .to_string_lossy()
        .into_owned()
}

/// Three device buffers of `n` floats.
fn vectors(n: u64) -> (u64, u64, u64) {
    let bytes = n as usize * 4;
    (alloc(bytes), alloc(bytes), alloc(bytes))
}

#[test]
fn kernel_records_name_the_launches_and_time_them_on_the_model_timeline() {
    context(QUIET);
    start(CONCURRENT_KERNEL);
    let (s, add) = (stream(), vector_add_function());
    let n = 1 << 20;
    let buffers = vectors(n);
    let (begin, end) = (event(), event());
    ok(cuEventRecord(begin, s));
    for _ in 0..3 {
        ok(launch_vector_add(add, buffers, n, s));
    }
    ok(cuEventRecord(end, s));
    ok(cuEventSynchronize(end));
    let records = flushed();
    assert_eq!(records.len(), 3);
    for r in &records {
        assert_eq!(kernel_name(r), "vector_add");
        assert_eq!(r.kind, CONCURRENT_KERNEL);
        assert_eq!((r.gridX, r.gridY, r.blockX, r.blockY), (4096, 1, 256, 1));
        assert_eq!((r.deviceId, r.contextId), (0, 1));
        // A created stream's id, the same for every launch on it; not the null stream's 7.
        assert_eq!(r.streamId, records[0].streamId);
        assert_ne!(r.streamId, 7);
        // 12 bytes an element at QUIET's 1000 GB/s, and the launch's fixed cost, no noise.
        let model = LAUNCH_LATENCY + 12.0 * n as f64 / BANDWIDTH;
        let ns = (r.end - r.start) as f64;
        assert!(
            (ns - model * 1e9).abs() <= 2.0,
            "{ns} ns, the model says {model} s"
        );
        assert_eq!(r.completed, r.end);
    }
    // Back to back on one stream, in order; correlation ids count up as they were issued.
    for pair in records.windows(2) {
        assert_eq!(pair[0].end, pair[1].start);
        assert!(pair[0].correlationId < pair[1].correlationId);
    }
    // The events around the launches read the same timeline.
    let span = (records[2].end - records[0].start) as f64;
    let events = f64::from(elapsed(begin, end)) * 1e6;
    assert!(
        (events / span - 1.0).abs() < 1e-5,
        "{events} ns vs {span} ns"
    );
    cupti_ok(cuptiActivityDisable(CONCURRENT_KERNEL));
}

#[test]
fn only_kernels_completed_while_a_kernel_kind_is_enabled_are_recorded() {
    context(QUIET);
    let (add, n) = (vector_add_function(), 1024);
    let buffers = vectors(n);
    ok(launch_vector_add(add, buffers, n, null_mut()));
    ok(cuCtxSynchronize());
    start(KERNEL);
    ok(launch_vector_add(add, buffers, n, null_mut()));
    ok(cuCtxSynchronize());
    cupti_ok(cuptiActivityDisable(KERNEL));
    ok(launch_vector_add(add, buffers, n, null_mut()));
    ok(cuCtxSynchronize());
    let records = flushed();
    assert_eq!(records.len(), 1);
    assert_eq!((records[0].kind, records[0].streamId), (KERNEL, 7));
    assert_eq!(records[0].gridX, 4);
}

#[test]
fn library_kernels_are_recorded_under_their_names() {
    context(QUIET);
    start(CONCURRENT_KERNEL);
    let work = Work {
        name: "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3".to_owned(),
        bytes: 3_000_000,
        flops: 2_000_000_000,
        peak: Peak::Fp32,
        body: Box::new(|_| Ok(())),
    };
    enqueue(null_mut(), work).unwrap();
    ok(cuCtxSynchronize());
    let records = flushed();
    assert_eq!(records.len(), 1);
    assert_eq!(
        kernel_name(&records[0]),
        "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3"
    );
    // 2 GFLOP at QUIET's 10 TFLOP/s outweigh 3 MB at 1000 GB/s.
    let ns = (records[0].end - records[0].start) as f64;
    assert!((ns - (LAUNCH_LATENCY + 2e-4) * 1e9).abs() <= 2.0, "{ns}");
}

#[test]
fn records_fill_the_buffers_handed_out_and_those_without_one_are_dropped() {
    context(QUIET);
    start(CONCURRENT_KERNEL);
    let (add, n) = (vector_add_function(), 256);
    let buffers = vectors(n);
    let launch = |times| {
        for _ in 0..times {
            ok(launch_vector_add(add, buffers, n, null_mut()));
        }
        ok(cuCtxSynchronize());
    };
    // Room for two records and a half, or at most one record a buffer.
    DELIVERED.with(|d| d.borrow_mut().size = 2 * KERNEL_BYTES + 100);
    launch(5);
    let records = flushed();
    let shapes: Vec<_> = DELIVERED.with(|d| {
        (d.borrow().buffers.iter())
            .map(|(r, size, valid)| (r.len(), *size, *valid))
            .collect()
    });
    let (size, two, one) = (2 * KERNEL_BYTES + 100, 2 * KERNEL_BYTES, KERNEL_BYTES);
    assert_eq!(
        shapes,
        [(2, size, two), (2, size, two), (1, size, one)],
        "records of {KERNEL_BYTES} bytes"
    );
    assert_eq!(records.len(), 5);
    DELIVERED.with(|d| d.borrow_mut().max = 1);
    launch(2);
    assert_eq!(flushed().len(), 7);
    // A null buffer: the records are dropped and counted.
    DELIVERED.with(|d| d.borrow_mut().size = 0);
    launch(3);
    assert_eq!(flushed().len(), 7);
    let mut dropped = 0;
    // SAFETY: a valid out-pointer.
    cupti_ok(unsafe { cuptiActivityGetNumDroppedRecords(null_mut(), 0, &mut dropped) });
    assert_eq!(dropped, 3);
}

#[test]
fn the_walk_refuses_what_is_not_a_record_of_its_buffer() {
    let mut words = [0u64; 64];
    let buffer: *mut u8 = words.as_mut_ptr().cast();
    let mut record: *mut u8 = null_mut();
    // SAFETY: the buffer holds 512 zeroed bytes.
    let status = unsafe { cuptiActivityGetNextRecord(buffer, 512, &mut record) };
    cupti_fails(status, "CUPTI_ERROR_INVALID_KIND");
    // SAFETY: an empty buffer is never read.
    let status = unsafe { cuptiActivityGetNextRecord(buffer, 0, &mut record) };
    cupti_fails(status, "CUPTI_ERROR_MAX_LIMIT_REACHED");
    // A kernel record cut short by the valid size.
    // SAFETY: the buffer's first four bytes.
    unsafe { buffer.cast::<u32>().write(CONCURRENT_KERNEL) };
    // SAFETY: as above.
    let status = unsafe { cuptiActivityGetNextRecord(buffer, KERNEL_BYTES - 8, &mut record) };
    cupti_fails(status, "CUPTI_ERROR_INVALID_KIND");
    // SAFETY: null buffers are refused before anything is read.
    let status = unsafe { cuptiActivityGetNextRecord(null_mut(), 512, &mut record) };
    cupti_fails(status, "CUPTI_ERROR_INVALID_PARAMETER");
}

#[test]
fn the_activity_api_refuses_what_cupti_refuses() {
    context(QUIET);
    cupti_fails(cuptiActivityFlushAll(0), "CUPTI_ERROR_INVALID_OPERATION");
    cupti_fails(
        cuptiActivityRegisterCallbacks(Some(requested), None),
        "CUPTI_ERROR_INVALID_PARAMETER",
    );
    start(CONCURRENT_KERNEL);
    cupti_fails(cuptiActivityEnable(KERNEL), "CUPTI_ERROR_NOT_COMPATIBLE");
    cupti_fails(cuptiActivityEnable(MEMCPY), "CUPTI_ERROR_NOT_SUPPORTED");
    cupti_fails(cuptiActivityEnable(0), "CUPTI_ERROR_INVALID_KIND");
    cupti_fails(cuptiActivityEnable(56), "CUPTI_ERROR_INVALID_KIND");
    cupti_ok(cuptiActivityEnable(CONCURRENT_KERNEL));
    let mut version = 0;
    // SAFETY: a valid out-pointer.
    cupti_ok(unsafe { cuptiGetVersion(&mut version) });
    assert_eq!(version, 130_001);
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: a valid out-pointer.
    cupti_fails(
        unsafe { cuptiGetResultString(47, &mut text) },
        "CUPTI_ERROR_INVALID_PARAMETER",
    );
    // SAFETY: a valid out-pointer; the message is static.
    cupti_ok(unsafe { cuptiGetErrorMessage(39, &mut text) });
    // SAFETY: as above.
    let message = unsafe { CStr::from_ptr(text) }.to_string_lossy();
    assert!(message.contains("Nsight Systems"), "{message}");
}

#[test]
fn one_subscriber_at_a_time() {
    context(QUIET);
    let mut first = null_mut();
    let mut second = null_mut();
    // SAFETY: valid out-pointers.
    cupti_ok(unsafe { cuptiSubscribe(&mut first, None, null_mut()) });
    cupti_fails(
        // SAFETY: as above.
        unsafe { cuptiSubscribe(&mut second, None, null_mut()) },
        "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
    );
    cupti_ok(cuptiUnsubscribe(first));
    cupti_fails(cuptiUnsubscribe(first), "CUPTI_ERROR_INVALID_PARAMETER");
    // SAFETY: as above.
    cupti_ok(unsafe { cuptiSubscribe(&mut second, None, null_mut()) });
}

#[test]
fn a_profiler_holding_cupti_refuses_subscribers_and_activities() {
    context(&format!("{QUIET}\n[faults]\ncupti_busy = true\n"));
    cupti_ok(cuptiActivityRegisterCallbacks(
        Some(requested),
        Some(completed),
    ));
    let busy = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
    cupti_fails(cuptiActivityEnable(CONCURRENT_KERNEL), busy);
    cupti_fails(cuptiActivityEnable(KERNEL), busy);
    let mut subscriber = null_mut();
    // SAFETY: a valid out-pointer.
    cupti_fails(
        unsafe { cuptiSubscribe(&mut subscriber, None, null_mut()) },
        busy,
    );
    // Nothing is recorded.
    let (add, n) = (vector_add_function(), 256);
    ok(launch_vector_add(add, vectors(n), n, null_mut()));
    ok(cuCtxSynchronize());
    assert!(flushed().is_empty());
}

/// Where the fixture toolkits are (`ci/fetch-toolkits`).
fn toolkits() -> PathBuf {
    std::env::var_os("STACKBENCH_TOOLKITS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.toolkits"),
        PathBuf::from,
    )
}

/// Every field of `ActivityKernel10` with its offset and size here.
fn rust_layout() -> BTreeMap<String, (usize, usize)> {
    // SAFETY: every field is an integer, an array of them or a raw pointer: all zeros is valid.
    let k: ActivityKernel10 = unsafe { std::mem::zeroed() };
    macro_rules! fields {
        ($($f:ident),* $(,)?) => {
            BTreeMap::from([$(
                (stringify!($f).to_owned(), (offset_of!(ActivityKernel10, $f), size_of_val(&{ k.$f }))),
            )*])
        };
    }
    let mut fields = fields!(
        kind,
        cacheConfig,
        sharedMemoryConfig,
        registersPerThread,
        partitionedGlobalCacheRequested,
        partitionedGlobalCacheExecuted,
        start,
        end,
        completed,
        deviceId,
        contextId,
        streamId,
        gridX,
        gridY,
        gridZ,
        blockX,
        blockY,
        blockZ,
        staticSharedMemory,
        dynamicSharedMemory,
        localMemoryPerThread,
        localMemoryTotal,
        correlationId,
        gridId,
        name,
        reserved0,
        queued,
        submitted,
        launchType,
        isSharedMemoryCarveoutRequested,
        sharedMemoryCarveoutRequested,
        padding,
        sharedMemoryExecuted,
        graphNodeId,
        shmemLimitConfig,
        graphId,
        pAccessPolicyWindow,
        channelID,
        channelType,
        clusterX,
        clusterY,
        clusterZ,
        clusterSchedulingPolicy,
        localMemoryTotal_v2,
        maxPotentialClusterSize,
        maxActiveClusters,
        isDeviceLaunched,
        padding3,
    );
    fields.insert("sizeof".to_owned(), (0, KERNEL_BYTES));
    fields
}

/// The C program printing each field's offset and size from NVIDIA's header: Kernel9's fields
/// from `CUpti_ActivityKernel9`, Kernel10's two appended ones after it (see `record`'s
/// comment), one `name offset size` line each; then the constants this CUPTI answers with.
fn c_program(fields: &BTreeMap<String, (usize, usize)>) -> String {
    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <stdint.h>\n\
         #include <cupti_activity.h>\n\
         typedef struct __attribute__((__packed__)) __attribute__((aligned(8))) {\n\
         CUpti_ActivityKernel9 k9; uint8_t isDeviceLaunched; uint8_t padding3[7];\n\
         } Kernel10;\n\
         #define F(t, f) printf(#f \" %zu %zu\\n\", offsetof(t, f), sizeof(((t *)0)->f))\n\
         #define C(name) printf(#name \" %d\\n\", (int)name)\n\
         int main(void) {\n",
    );
    for field in fields.keys().filter(|f| *f != "sizeof") {
        let record = match field.as_str() {
            "isDeviceLaunched" | "padding3" => "Kernel10",
            _ => "CUpti_ActivityKernel9",
        };
        c.push_str(&format!("F({record}, {field});\n"));
    }
    c.push_str("printf(\"sizeof 0 %zu\\n\", sizeof(Kernel10));\n");
    for constant in [
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL",
        "CUPTI_ERROR_INVALID_PARAMETER",
        "CUPTI_ERROR_INVALID_OPERATION",
        "CUPTI_ERROR_MAX_LIMIT_REACHED",
        "CUPTI_ERROR_NOT_COMPATIBLE",
        "CUPTI_ERROR_INVALID_KIND",
        "CUPTI_ERROR_NOT_SUPPORTED",
        "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
        "CUPTI_ERROR_UNKNOWN",
    ] {
        c.push_str(&format!("C({constant});\n"));
    }
    c.push_str("return 0;\n}\n");
    c
}

/// The constants' values as this CUPTI uses them, by their C names.
fn rust_constants() -> Vec<String> {
    [
        ("CUPTI_ACTIVITY_KIND_MEMCPY", MEMCPY as i32),
        ("CUPTI_ACTIVITY_KIND_KERNEL", record::KIND_KERNEL as i32),
        (
            "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL",
            record::KIND_CONCURRENT_KERNEL as i32,
        ),
        (
            "CUPTI_ERROR_INVALID_PARAMETER",
            result::Error::INVALID_PARAMETER.0,
        ),
        (
            "CUPTI_ERROR_INVALID_OPERATION",
            result::Error::INVALID_OPERATION.0,
        ),
        (
            "CUPTI_ERROR_MAX_LIMIT_REACHED",
            result::Error::MAX_LIMIT_REACHED.0,
        ),
        (
            "CUPTI_ERROR_NOT_COMPATIBLE",
            result::Error::NOT_COMPATIBLE.0,
        ),
        ("CUPTI_ERROR_INVALID_KIND", result::Error::INVALID_KIND.0),
        ("CUPTI_ERROR_NOT_SUPPORTED", result::Error::NOT_SUPPORTED.0),
        (
            "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
            result::Error::MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED.0,
        ),
        ("CUPTI_ERROR_UNKNOWN", result::Error::UNKNOWN.0),
    ]
    .iter()
    .map(|(name, value)| format!("{name} {value}"))
    .collect()
}

/// A stand-in for nvcc's `crt/host_defines.h`, which the runtime wheel's `cuda.h` chain
/// includes but does not ship: the qualifier macros as a host compiler sees them. None of them
/// touches a CUPTI record.
const HOST_DEFINES: &str = "#define __host__\n#define __device__\n#define __cudart_builtin__\n\
    #define __device_builtin__\n#define __device_builtin_texture_type__\n\
    #define __device_builtin_surface_type__\n#define CUDARTAPI\n#define CUDART_CB\n\
    #define __align__(n) __attribute__((aligned(n)))\n\
    #define __builtin_align__(a) __align__(a)\n#define __location__(a) __attribute__((a))\n";

#[test]
fn the_kernel_record_is_laid_out_as_nvidia_s_header_declares_it() {
    let nvidia = toolkits().join("venv-cu12/lib/python3.11/site-packages/nvidia");
    let (cupti, runtime) = (
        nvidia.join("cuda_cupti/include"),
        nvidia.join("cuda_runtime/include"),
    );
    assert!(
        cupti.join("cupti_activity.h").is_file() && runtime.join("cuda.h").is_file(),
        "NVIDIA's CUPTI 12.9 headers are missing under {}: fetch the fixtures with \
         ci/fetch-toolkits (or point STACKBENCH_TOOLKITS at them)",
        nvidia.display()
    );
    let dir = std::env::temp_dir().join(format!("simgpu-cupti-layout-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("crt")).unwrap();
    std::fs::write(dir.join("crt/host_defines.h"), HOST_DEFINES).unwrap();
    let fields = rust_layout();
    std::fs::write(dir.join("layout.c"), c_program(&fields)).unwrap();
    let compiled = Command::new("cc")
        .arg("-I")
        .arg(&dir)
        .arg("-I")
        .arg(&cupti)
        .arg("-I")
        .arg(&runtime)
        .arg(dir.join("layout.c"))
        .arg("-o")
        .arg(dir.join("layout"))
        .output()
        .unwrap_or_else(|e| panic!("cc is needed to compile NVIDIA's header: {e}"));
    assert!(
        compiled.status.success(),
        "cc failed on NVIDIA's header: {}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let run = Command::new(dir.join("layout")).output().unwrap();
    assert!(run.status.success());
    let text = String::from_utf8(run.stdout).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let mut c_fields = BTreeMap::new();
    let mut c_constants = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[..] {
            [field, offset, size] => {
                let number = |w: &str| w.parse::<usize>().unwrap();
                c_fields.insert(field.to_owned(), (number(offset), number(size)));
            }
            _ => c_constants.push(line.to_owned()),
        }
    }
    assert_eq!(fields.len(), 49, "every field and the size");
    assert_eq!(
        c_fields, fields,
        "(offset, size) of each field: NVIDIA's header (left), the simulator's record (right)"
    );
    assert_eq!(c_constants, rust_constants(), "NVIDIA's header (left)");
}
