//! The driver API (`cu*`) at NVIDIA's C ABI, with the semantics `cuda.h` documents: devices and
//! their attributes, primary contexts, memory (real host memory at device addresses no host
//! pointer can take, every access checked), streams as ordered queues, events on the model
//! timeline, PTX modules and `cuLaunchKernel`, and peer access between the devices of a node.
//!
//! Work is executed, not timed: each stream's queue runs as soon as nothing ahead of it waits
//! (a `cuStreamWaitValue32` on a word not yet written, a kernel that hangs), advanced at every
//! API call and while the host waits. Host-side waits return as soon as their queue has
//! drained; durations come from [`crate::clock`].
//!
//! Every call is counted for `lost_after_calls`, and a panic never crosses the C ABI: it is
//! `CUDA_ERROR_UNKNOWN`.

mod attributes;
pub mod collective;
mod context;
mod copy;
mod device;
mod entry;
pub mod errors;
mod event;
mod launch;
pub mod library;
mod memop;
mod memory;
mod module;
mod peer;
mod private;
mod queue;
mod stream;

pub use context::{
    cuCtxGetCurrent, cuCtxGetDevice, cuCtxSetCurrent, cuCtxSynchronize, cuDevicePrimaryCtxRelease,
    cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRetain,
};
pub use copy::{
    cuMemcpyDtoDAsync_v2, cuMemcpyDtoD_v2, cuMemcpyDtoHAsync_v2, cuMemcpyDtoH_v2,
    cuMemcpyHtoDAsync_v2, cuMemcpyHtoD_v2, cuMemsetD8Async, cuMemsetD8_v2,
};
pub use device::{
    cuDeviceGet, cuDeviceGetAttribute, cuDeviceGetCount, cuDeviceGetName, cuDeviceGetPCIBusId,
    cuDeviceGetUuid, cuDeviceGetUuid_v2, cuDeviceTotalMem_v2, cuDriverGetVersion, cuInit,
};
pub use errors::{cuGetErrorName, cuGetErrorString, CUresult};
pub use event::{
    cuEventCreate, cuEventDestroy_v2, cuEventElapsedTime, cuEventElapsedTime_v2, cuEventQuery,
    cuEventRecord, cuEventSynchronize,
};
pub use launch::cuLaunchKernel;
pub use memory::{
    cuMemAlloc_v2, cuMemFreeHost, cuMemFree_v2, cuMemGetInfo_v2, cuMemHostAlloc,
    cuMemHostGetDevicePointer_v2,
};
pub use module::{cuModuleGetFunction, cuModuleLoadData, cuModuleLoadDataEx, cuModuleUnload};
pub use peer::{
    cuCtxDisablePeerAccess, cuCtxEnablePeerAccess, cuDeviceCanAccessPeer, cuDeviceGetP2PAttribute,
    cuMemcpyPeer, cuMemcpyPeerAsync,
};
pub use private::cuGetExportTable;
pub use stream::{
    cuStreamCreate, cuStreamDestroy_v2, cuStreamQuery, cuStreamSynchronize, cuStreamWaitEvent,
    cuStreamWaitValue32_v2,
};

use crate::clock::Clock;
use crate::profile::{self, Profile};
use errors::Code;
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Says that this `libcuda.so.1` is the simulator: stackbench looks it up with `dlsym` to label
/// its runs "simulated".
#[no_mangle]
pub extern "C" fn stackbenchSimulated() -> i32 {
    1
}

/// The driver's state in one simulated host.
#[derive(Default)]
pub struct Driver {
    inner: Mutex<Inner>,
}

impl Driver {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Everything behind the driver's one lock.
#[derive(Default)]
struct Inner {
    /// `cuInit` succeeded.
    initialized: bool,
    profile: Profile,
    gpus: Vec<Gpu>,
    memory: memory::Space,
    streams: queue::Streams,
    events: HashMap<u64, event::Event>,
    modules: HashMap<u64, module::Loaded>,
    functions: HashMap<u64, module::Function>,
    /// Peer access enabled, `(from, to)`: the context of device `from` reaches `to`'s memory.
    peers: HashSet<(usize, usize)>,
    /// The last handle given out; handles are never reused.
    last_handle: u64,
}

/// One simulated device and its primary context.
struct Gpu {
    profile: profile::Device,
    /// `cuDevicePrimaryCtxRetain` minus `Release`; the context is active while above 0.
    retained: u32,
    clock: Clock,
    /// A sticky error (an illegal address in a kernel): every later call in the context
    /// answers it.
    sticky: Option<Code>,
    /// A non-sticky error of asynchronous work, answered once by the next synchronisation.
    deferred: Option<Code>,
    /// The last launch, to reuse its run (see [`launch`]).
    memo: Option<launch::Memo>,
    /// The last copy and memset, not to redo them (see [`memop`]).
    memops: memop::Memops,
    /// Bytes of device memory allocated.
    used: u64,
}

/// What a handle names (the top bits of its value, so that handles of different kinds never
/// coincide and a stream passed as an event is an invalid handle).
#[derive(Clone, Copy)]
enum Kind {
    Stream = 0x57,
    Event = 0xe7,
    Module = 0x3d,
    Function = 0xf7,
}

impl Inner {
    /// A new handle of `kind`.
    fn handle(&mut self, kind: Kind) -> u64 {
        self.last_handle += 1;
        (kind as u64) << 48 | self.last_handle
    }

    /// Sets a sticky error on `gpu` and drops the work queued there, which will never run.
    fn fault(&mut self, gpu: usize, code: Code) {
        self.gpus[gpu].sticky.get_or_insert(code);
        self.streams.clear(gpu);
    }
}
