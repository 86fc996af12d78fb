//! The Activity API's state in one simulated host: the buffer callbacks, the kernel kind
//! enabled, and the records of kernels the device completed while it was, until a flush hands
//! them to the client in the buffers it gives.
//!
//! The driver reports every kernel and every library kernel when it completes on the model
//! timeline ([`kernel`]); a record is kept when `CUPTI_ACTIVITY_KIND_KERNEL` or
//! `CONCURRENT_KERNEL` is enabled then. `cuptiActivityFlushAll` asks for buffers with the
//! buffer-requested callback, writes the records into them and hands each back with the
//! buffer-completed callback and its valid size, on the calling thread, before it returns (the
//! records are all complete: the work they describe has finished). Records that find no
//! buffer (a null one, or one too small for a record) are dropped and counted, as CUPTI does.
//!
//! Another profiler holding CUPTI (the profile's `cupti_busy`) is answered as CUPTI answers a
//! second client while Nsight Systems, Nsight Compute or compute-sanitizer holds it:
//! `cuptiSubscribe` and `cuptiActivityEnable` return
//! `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED` (`cupti_result.h`: the same code "is used
//! when application is launched using NVIDIA tools"; PyTorch's issue 117935 shows activities
//! refused with it under an injected CUPTI client).

use super::record::{self, ActivityKernel10, KERNEL_BYTES, KIND_CONCURRENT_KERNEL, KIND_KERNEL};
use super::result::Error;
use crate::state::Sim;
use crate::trace;
use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// `CUpti_BuffersCallbackRequestFunc`.
pub type BufferRequested =
    unsafe extern "C" fn(buffer: *mut *mut u8, size: *mut usize, max_num_records: *mut usize);

/// `CUpti_BuffersCallbackCompleteFunc`.
pub type BufferCompleted = unsafe extern "C" fn(
    context: *mut c_void,
    stream_id: u32,
    buffer: *mut u8,
    size: usize,
    valid_size: usize,
);

/// `CUPTI_ACTIVITY_KIND_COUNT` of CUDA 13.0: kinds 1 to 55 exist.
const KIND_COUNT: u32 = 56;

/// A kernel the device completed, as the driver reports it.
#[derive(Debug, Clone, Copy)]
pub struct Kernel<'a> {
    /// The kernel's name: a PTX `.entry`, or the library kernel's.
    pub name: &'a str,
    /// Its start and end on the device's model timeline, seconds.
    pub start: f64,
    pub end: f64,
    pub device: u32,
    pub context: u32,
    pub stream: u32,
    pub correlation: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub static_shared: u32,
    pub dynamic_shared: u32,
}

/// A record kept until a flush: the fields of a [`Kernel`], its name interned.
#[derive(Debug, Clone, Copy)]
struct Kept {
    kind: u32,
    name: &'static CStr,
    start: u64,
    end: u64,
    device: u32,
    context: u32,
    stream: u32,
    correlation: u32,
    grid: [u32; 3],
    block: [u32; 3],
    static_shared: u32,
    dynamic_shared: u32,
}

/// One host's Activity API state.
#[derive(Default)]
struct Host {
    callbacks: Option<(BufferRequested, BufferCompleted)>,
    /// The kernel kind enabled, if any.
    kind: Option<u32>,
    kept: Vec<Kept>,
    dropped: usize,
    /// A `cuptiSubscribe` is in force.
    subscribed: bool,
}

/// Every host's state, by the host's address (tests give threads hosts of their own; the
/// shared object has one).
static HOSTS: Mutex<Vec<(usize, Host)>> = Mutex::new(Vec::new());

/// Kernel names, interned: a record's name stays valid for the life of the process.
static NAMES: Mutex<Option<HashMap<String, &'static CStr>>> = Mutex::new(None);

/// Runs `f` on `sim`'s state.
fn with<R>(sim: &Sim, f: impl FnOnce(&mut Host) -> R) -> R {
    let key = std::ptr::from_ref(sim) as usize;
    let mut hosts = lock(&HOSTS);
    let index = match hosts.iter().position(|(k, _)| *k == key) {
        Some(index) => index,
        None => {
            hosts.push((key, Host::default()));
            hosts.len() - 1
        }
    };
    f(&mut hosts[index].1)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `name` as a C string that lives as long as the process (NUL bytes dropped).
fn intern(name: &str) -> &'static CStr {
    let mut names = lock(&NAMES);
    let names = names.get_or_insert_with(HashMap::new);
    if let Some(interned) = names.get(name) {
        return interned;
    }
    let text = CString::new(name.replace('\0', "")).unwrap_or_default();
    let interned: &'static CStr = Box::leak(text.into_boxed_c_str());
    names.insert(name.to_owned(), interned);
    interned
}

/// Whether another profiler holds CUPTI on `sim` (the profile's `cupti_busy`).
fn busy(sim: &Sim) -> bool {
    (sim.profile.as_ref()).is_ok_and(|profile| profile.faults.cupti_busy)
}

/// `cuptiActivityRegisterCallbacks`.
pub fn register(
    sim: &Sim,
    requested: Option<BufferRequested>,
    completed: Option<BufferCompleted>,
) -> Result<(), Error> {
    let callbacks = requested.zip(completed).ok_or(Error::INVALID_PARAMETER)?;
    with(sim, |host| host.callbacks = Some(callbacks));
    Ok(())
}

/// Whether `kind` is a kernel kind; `Err` for a kind this CUPTI does not record or that does
/// not exist.
fn kernel_kind(kind: u32) -> Result<u32, Error> {
    match kind {
        KIND_KERNEL | KIND_CONCURRENT_KERNEL => Ok(kind),
        1..KIND_COUNT => Err(Error::NOT_SUPPORTED),
        _ => Err(Error::INVALID_KIND),
    }
}

/// `cuptiActivityEnable`.
pub fn enable(sim: &Sim, kind: u32) -> Result<(), Error> {
    let kind = kernel_kind(kind)?;
    if busy(sim) {
        return Err(Error::MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    }
    with(sim, |host| match host.kind {
        Some(enabled) if enabled != kind => Err(Error::NOT_COMPATIBLE),
        _ => {
            host.kind = Some(kind);
            Ok(())
        }
    })
}

/// `cuptiActivityDisable`.
pub fn disable(sim: &Sim, kind: u32) -> Result<(), Error> {
    let kind = kernel_kind(kind)?;
    with(sim, |host| {
        if host.kind == Some(kind) {
            host.kind = None;
        }
    });
    Ok(())
}

/// Seconds on the model timeline as CUPTI's nanoseconds.
fn ns(seconds: f64) -> u64 {
    (seconds * 1e9).round() as u64
}

/// The driver's report of a completed kernel: kept if a kernel kind is enabled.
pub fn kernel(sim: &Sim, kernel: &Kernel<'_>) {
    with(sim, |host| {
        let Some(kind) = host.kind else {
            return;
        };
        host.kept.push(Kept {
            kind,
            name: intern(kernel.name),
            start: ns(kernel.start),
            end: ns(kernel.end),
            device: kernel.device,
            context: kernel.context,
            stream: kernel.stream,
            correlation: kernel.correlation,
            grid: kernel.grid,
            block: kernel.block,
            static_shared: kernel.static_shared,
            dynamic_shared: kernel.dynamic_shared,
        });
    });
}

impl Kept {
    /// The record CUPTI writes for it; fields the simulator does not model are 0 (CUPTI's
    /// "unknown" or "none" for each).
    fn record(&self) -> ActivityKernel10 {
        let int = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
        ActivityKernel10 {
            kind: self.kind,
            cacheConfig: 0,
            sharedMemoryConfig: 0,
            registersPerThread: 0,
            partitionedGlobalCacheRequested: 0,
            partitionedGlobalCacheExecuted: 0,
            start: self.start,
            end: self.end,
            completed: self.end,
            deviceId: self.device,
            contextId: self.context,
            streamId: self.stream,
            gridX: int(self.grid[0]),
            gridY: int(self.grid[1]),
            gridZ: int(self.grid[2]),
            blockX: int(self.block[0]),
            blockY: int(self.block[1]),
            blockZ: int(self.block[2]),
            staticSharedMemory: int(self.static_shared),
            dynamicSharedMemory: int(self.dynamic_shared),
            localMemoryPerThread: 0,
            localMemoryTotal: 0,
            correlationId: self.correlation,
            gridId: i64::from(self.correlation),
            name: self.name.as_ptr(),
            reserved0: std::ptr::null_mut(),
            queued: 0,
            submitted: 0,
            launchType: 0,
            isSharedMemoryCarveoutRequested: 0,
            sharedMemoryCarveoutRequested: 0,
            padding: 0,
            sharedMemoryExecuted: 0,
            graphNodeId: 0,
            shmemLimitConfig: 0,
            graphId: 0,
            pAccessPolicyWindow: std::ptr::null_mut(),
            channelID: 0,
            channelType: 0,
            clusterX: 0,
            clusterY: 0,
            clusterZ: 0,
            clusterSchedulingPolicy: 0,
            localMemoryTotal_v2: 0,
            maxPotentialClusterSize: 0,
            maxActiveClusters: 0,
            isDeviceLaunched: 0,
            padding3: [0; 7],
        }
    }
}

/// `cuptiActivityFlushAll`: every kept record into the client's buffers, each buffer handed
/// back before this returns, traced with the records written, the buffers and the records
/// dropped. Needs registered callbacks (`CUPTI_ERROR_INVALID_OPERATION`).
pub fn flush(sim: &Sim) -> Result<(), Error> {
    let (callbacks, kept) = with(sim, |host| (host.callbacks, std::mem::take(&mut host.kept)));
    let (requested, completed) = callbacks.ok_or(Error::INVALID_OPERATION)?;
    let mut rest = kept.as_slice();
    let mut buffers = 0usize;
    while !rest.is_empty() {
        let (mut buffer, mut size, mut max) = (std::ptr::null_mut(), 0usize, 0usize);
        // SAFETY: three valid places for the client to write, as CUPTI passes them.
        unsafe { requested(&mut buffer, &mut size, &mut max) };
        let fits = if buffer.is_null() {
            0
        } else {
            size / KERNEL_BYTES
        };
        let count = match max {
            0 => fits,
            max => fits.min(max),
        }
        .min(rest.len());
        if count == 0 {
            with(sim, |host| host.dropped += rest.len());
            break;
        }
        let (now, later) = rest.split_at(count);
        for (i, kept) in now.iter().enumerate() {
            // SAFETY: the client gave `size` bytes at `buffer`; record i ends within them.
            unsafe { record::write(buffer.add(i * KERNEL_BYTES), &kept.record()) };
        }
        // SAFETY: the buffer the client gave, `count` records of it written.
        unsafe { completed(std::ptr::null_mut(), 0, buffer, size, count * KERNEL_BYTES) };
        buffers += 1;
        rest = later;
    }
    trace::record(
        "cupti",
        "cuptiActivityFlushAll",
        &[
            ("records", (kept.len() - rest.len()).into()),
            ("buffers", buffers.into()),
            ("dropped", rest.len().into()),
        ],
    );
    Ok(())
}

/// `cuptiActivityGetNumDroppedRecords`: records that found no buffer since the last call.
pub fn dropped(sim: &Sim) -> usize {
    with(sim, |host| std::mem::take(&mut host.dropped))
}

/// `cuptiSubscribe`: one subscriber at a time, none while another profiler holds CUPTI.
pub fn subscribe(sim: &Sim) -> Result<(), Error> {
    if busy(sim) {
        return Err(Error::MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    }
    with(sim, |host| {
        if host.subscribed {
            return Err(Error::MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
        }
        host.subscribed = true;
        Ok(())
    })
}

/// `cuptiUnsubscribe`.
pub fn unsubscribe(sim: &Sim) -> Result<(), Error> {
    with(sim, |host| {
        if !host.subscribed {
            return Err(Error::INVALID_PARAMETER);
        }
        host.subscribed = false;
        Ok(())
    })
}
