//! The copy matrices, measured as nvbandwidth measures them: per GPU, host to device and back
//! with pinned memory on the GPU's NUMA node, one way and both ways at once; per ordered pair,
//! copy-engine copies (`cuMemcpyPeerAsync` between peer-enabled contexts) and SM copies (a
//! kernel on the source GPU storing into the peer's memory), one way and both ways. Every copy
//! is timed with CUDA events on its own stream (the median of the repetitions) and verified bit
//! for bit once timed.

use super::worker::call;
use super::NodeRequest;
use crate::schema::node::{Copy, Engine, NodeReport};
use cudarc::driver::sys::{
    self, CUcontext, CUdevice, CUdevice_P2PAttribute, CUdevice_attribute, CUdeviceptr, CUevent,
    CUfunction, CUmodule, CUstream,
};
use std::cell::RefCell;
use std::collections::HashSet;
use std::ffi::{c_int, c_void};

/// The SM copy kernel: a grid-stride copy of `n` u32 (`src`, `dst`, `n`), PTX 7.0 for sm_70
/// so that every driver since CUDA 11 JIT-compiles it for its GPU.
const PEER_COPY_PTX: &str = include_str!("peer_copy.ptx");
/// Threads per block, and the most blocks, of an SM copy.
const BLOCK: u32 = 256;
const MAX_BLOCKS: u32 = 1024;

/// One GPU opened for the probe: its primary context, two streams (a copy both ways on one
/// GPU takes both), and the copy kernel.
struct Gpu {
    index: u32,
    device: CUdevice,
    context: CUcontext,
    streams: [CUstream; 2],
    kernel: Result<CUfunction, String>,
}

/// The selected GPUs, each with its primary context retained until dropped, and the peer
/// access enabled between them.
pub struct Node {
    gpus: Vec<Gpu>,
    enabled: RefCell<HashSet<(u32, u32)>>,
}

impl Node {
    /// Initialises the driver and retains each device's primary context; loads the SM copy
    /// kernel into each where `copy_kernel` asks (the copy matrices need it, NCCL does not).
    pub fn open(indices: &[u32], copy_kernel: bool) -> Result<Node, String> {
        // SAFETY: cuInit takes no pointers.
        call("cuInit", unsafe { sys::cuInit(0) })?;
        let mut node = Node {
            gpus: Vec::new(),
            enabled: RefCell::default(),
        };
        for &index in indices {
            let mut device: CUdevice = 0;
            // SAFETY: a valid out-pointer.
            call("cuDeviceGet", unsafe {
                sys::cuDeviceGet(&mut device, index as c_int)
            })?;
            let mut context: CUcontext = std::ptr::null_mut();
            // SAFETY: a valid out-pointer and a device from cuDeviceGet.
            call("cuDevicePrimaryCtxRetain", unsafe {
                sys::cuDevicePrimaryCtxRetain(&mut context, device)
            })?;
            let mut gpu = Gpu {
                index,
                device,
                context,
                streams: [std::ptr::null_mut(); 2],
                kernel: Err("the SM copy kernel was not loaded".to_owned()),
            };
            node.current_context(context)?;
            for stream in &mut gpu.streams {
                // SAFETY: a valid out-pointer; flag 1 is CU_STREAM_NON_BLOCKING.
                call("cuStreamCreate", unsafe { sys::cuStreamCreate(stream, 1) })?;
            }
            if copy_kernel {
                gpu.kernel = load_kernel();
            }
            node.gpus.push(gpu);
        }
        Ok(node)
    }

    fn gpu(&self, index: u32) -> Option<&Gpu> {
        self.gpus.iter().find(|g| g.index == index)
    }

    fn current_context(&self, context: CUcontext) -> Result<(), String> {
        // SAFETY: a context retained by this node.
        call("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(context) })
    }

    /// GPU `index`'s first stream, its context made current: where other work of the node's
    /// GPUs (NCCL's collectives) goes.
    pub(crate) fn stream(&self, index: u32) -> Result<CUstream, String> {
        Ok(self.current(index)?.streams[0])
    }

    fn current(&self, index: u32) -> Result<&Gpu, String> {
        let gpu = self
            .gpu(index)
            .ok_or_else(|| format!("device {index} was not opened"))?;
        self.current_context(gpu.context)?;
        Ok(gpu)
    }

    /// `CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID` (CUDA 12.2 and later drivers).
    pub fn numa_node(&self, index: u32) -> Option<i32> {
        let gpu = self.gpu(index)?;
        let mut value: c_int = -1;
        // SAFETY: a valid out-pointer and device.
        let status = unsafe {
            sys::cuDeviceGetAttribute(
                &mut value,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID,
                gpu.device,
            )
        };
        (call("", status).is_ok() && value >= 0).then_some(value)
    }

    /// `cuDeviceCanAccessPeer(from, to)`.
    pub fn can_access(&self, from: u32, to: u32) -> Option<bool> {
        let (a, b) = (self.gpu(from)?, self.gpu(to)?);
        let mut can: c_int = 0;
        // SAFETY: a valid out-pointer and devices.
        let status = unsafe { sys::cuDeviceCanAccessPeer(&mut can, a.device, b.device) };
        call("", status).ok().map(|()| can != 0)
    }

    /// `cuDeviceGetP2PAttribute(attribute, from, to)`.
    pub fn p2p_attribute(
        &self,
        from: u32,
        to: u32,
        attribute: CUdevice_P2PAttribute,
    ) -> Option<i32> {
        let (a, b) = (self.gpu(from)?, self.gpu(to)?);
        let mut value: c_int = 0;
        // SAFETY: a valid out-pointer and devices.
        let status =
            unsafe { sys::cuDeviceGetP2PAttribute(&mut value, attribute, a.device, b.device) };
        call("", status).ok().map(|()| value)
    }

    /// Lets `from`'s context reach `to`'s memory (`cuCtxEnablePeerAccess`), where the driver
    /// says it can.
    pub fn enable_peer(&self, from: u32, to: u32) -> Result<(), String> {
        if self.can_access(from, to) != Some(true) {
            return Err(format!(
                "cuDeviceCanAccessPeer({from}, {to}) = 0: the driver refuses peer access"
            ));
        }
        let peer = self
            .gpu(to)
            .map(|g| g.context)
            .unwrap_or(std::ptr::null_mut());
        self.current(from)?;
        // SAFETY: a retained context of another device; flags must be 0.
        let status = unsafe { sys::cuCtxEnablePeerAccess(peer, 0) };
        match status {
            sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
            status => call(&format!("cuCtxEnablePeerAccess({from} -> {to})"), status),
        }?;
        self.enabled.borrow_mut().insert((from, to));
        Ok(())
    }

    /// Whether `from` may reach `to`'s memory (peer access enabled).
    fn reaches(&self, from: u32, to: u32) -> bool {
        self.enabled.borrow().contains(&(from, to))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        for gpu in &self.gpus {
            // SAFETY: the stream and context this node made and retained, released once.
            unsafe {
                sys::cuCtxSetCurrent(gpu.context);
                for stream in gpu.streams {
                    sys::cuStreamDestroy_v2(stream);
                }
                sys::cuDevicePrimaryCtxRelease_v2(gpu.device);
            }
        }
    }
}

/// The copy kernel, loaded into the current context.
fn load_kernel() -> Result<CUfunction, String> {
    let image = std::ffi::CString::new(PEER_COPY_PTX).map_err(|e| e.to_string())?;
    let mut module: CUmodule = std::ptr::null_mut();
    // SAFETY: a NUL-terminated PTX image and a valid out-pointer.
    call("cuModuleLoadData", unsafe {
        sys::cuModuleLoadData(&mut module, image.as_ptr().cast())
    })?;
    let mut function: CUfunction = std::ptr::null_mut();
    // SAFETY: a module just loaded; the kernel's name, NUL-terminated.
    call("cuModuleGetFunction", unsafe {
        sys::cuModuleGetFunction(&mut function, module, c"stackbench_peer_copy".as_ptr())
    })?;
    Ok(function)
}

/// Device memory of one GPU, freed when dropped.
pub(crate) struct DeviceBuffer {
    ptr: CUdeviceptr,
    context: CUcontext,
}

impl DeviceBuffer {
    pub(crate) fn new(node: &Node, index: u32, bytes: usize) -> Result<DeviceBuffer, String> {
        let gpu = node.current(index)?;
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: a valid out-pointer.
        call("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) })?;
        Ok(DeviceBuffer {
            ptr,
            context: gpu.context,
        })
    }

    /// Its device address.
    pub(crate) fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: memory this buffer allocated in this context, freed once.
        unsafe {
            sys::cuCtxSetCurrent(self.context);
            sys::cuMemFree_v2(self.ptr);
        }
    }
}

/// Pinned, portable host memory, freed when dropped.
struct HostBuffer {
    ptr: *mut u32,
    len: usize,
}

impl HostBuffer {
    /// `bytes` of pinned memory, placed on NUMA node `numa` where the kernel lets us ask.
    fn new(bytes: usize, numa: Option<i32>) -> Result<HostBuffer, String> {
        let _placed = numa.and_then(Preferred::node);
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; flag 1 is CU_MEMHOSTALLOC_PORTABLE.
        call("cuMemHostAlloc", unsafe {
            sys::cuMemHostAlloc(&mut ptr, bytes, 1)
        })?;
        Ok(HostBuffer {
            ptr: ptr.cast(),
            len: bytes / 4,
        })
    }

    fn words(&mut self) -> &mut [u32] {
        // SAFETY: `len` u32 of pinned memory this buffer owns, no copy in flight.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: memory from cuMemHostAlloc, freed once.
        unsafe { sys::cuMemFreeHost(self.ptr.cast()) };
    }
}

/// The calling thread's memory policy set to prefer one NUMA node until dropped.
struct Preferred;

impl Preferred {
    fn node(node: i32) -> Option<Preferred> {
        const MPOL_PREFERRED: libc::c_long = 1;
        let node = u32::try_from(node).ok().filter(|n| *n < 64)?;
        let mask: libc::c_ulong = 1 << node;
        // SAFETY: set_mempolicy reads `maxnode` bits of the mask, which lives across the call.
        let set = unsafe {
            libc::syscall(
                libc::SYS_set_mempolicy,
                MPOL_PREFERRED,
                &mask as *const _,
                64,
            )
        };
        (set == 0).then_some(Preferred)
    }
}

impl Drop for Preferred {
    fn drop(&mut self) {
        // SAFETY: MPOL_DEFAULT (0) takes no mask.
        unsafe { libc::syscall(libc::SYS_set_mempolicy, 0, std::ptr::null::<u64>(), 0) };
    }
}

/// An event of the current context, destroyed when dropped.
pub(crate) struct Event(CUevent);

impl Event {
    /// An event of GPU `index`'s context.
    pub(crate) fn new_on(node: &Node, index: u32) -> Result<Event, String> {
        node.current(index)?;
        Event::new()
    }

    fn new() -> Result<Event, String> {
        let mut event: CUevent = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; default flags.
        call("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut event, 0)
        })?;
        Ok(Event(event))
    }

    pub(crate) fn record(&self, stream: CUstream) -> Result<(), String> {
        // SAFETY: a live event and a stream of its context.
        call("cuEventRecord", unsafe {
            sys::cuEventRecord(self.0, stream)
        })
    }

    /// Milliseconds from `self` to `end`, once `end` has completed.
    pub(crate) fn until(&self, end: &Event) -> Result<f64, String> {
        // SAFETY: a live event.
        call("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(end.0)
        })?;
        let mut ms = 0f32;
        // SAFETY: two live events of one context, both recorded.
        call("cuEventElapsedTime", unsafe {
            sys::cuEventElapsedTime(&mut ms, self.0, end.0)
        })?;
        Ok(f64::from(ms))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        unsafe { sys::cuEventDestroy_v2(self.0) };
    }
}

/// Where a copy's bytes are.
#[derive(Clone, Copy)]
enum End {
    Host,
    Gpu(u32),
}

/// The word at `at` of the pattern a copy from `from` carries: distinct per source, so a copy
/// that moved the wrong buffer, or nothing, never verifies.
fn pattern(from: End, at: usize) -> u32 {
    let tag = match from {
        End::Host => 0xff,
        End::Gpu(i) => i & 0x7f,
    };
    (at as u32).wrapping_mul(0x9e37_79b1).rotate_left(7) ^ (tag << 24)
}

/// One GPU's buffers, allocated once and reused by every copy: a source holding the GPU's
/// pattern and a target on the GPU, and the same in pinned memory on its NUMA node.
struct Buffers {
    index: u32,
    src: DeviceBuffer,
    dst: DeviceBuffer,
    host_src: HostBuffer,
    host_dst: HostBuffer,
}

/// Every selected GPU's buffers, of the largest copy's size.
struct Pool(Vec<Buffers>);

impl Pool {
    fn new(node: &Node, indices: &[u32], bytes: usize) -> Result<Pool, String> {
        let mut pool = Vec::new();
        for &index in indices {
            let numa = node.numa_node(index);
            let mut host_src = HostBuffer::new(bytes, numa)?;
            for (at, word) in host_src.words().iter_mut().enumerate() {
                *word = pattern(End::Host, at);
            }
            let mut staging = HostBuffer::new(bytes, numa)?;
            for (at, word) in staging.words().iter_mut().enumerate() {
                *word = pattern(End::Gpu(index), at);
            }
            let src = DeviceBuffer::new(node, index, bytes)?;
            // SAFETY: `bytes` of pinned host memory into a device buffer of that size.
            call("cuMemcpyHtoD", unsafe {
                sys::cuMemcpyHtoD_v2(src.ptr, staging.ptr.cast(), bytes)
            })?;
            pool.push(Buffers {
                index,
                src,
                dst: DeviceBuffer::new(node, index, bytes)?,
                host_src,
                host_dst: staging,
            });
        }
        Ok(Pool(pool))
    }

    fn of(&self, index: u32) -> Result<&Buffers, String> {
        (self.0.iter())
            .find(|b| b.index == index)
            .ok_or_else(|| format!("no buffers on GPU {index}"))
    }
}

/// One direction of a copy on stream `lane` of GPU `on`, between pooled buffers (the two
/// directions of a copy both ways on one GPU take its two streams).
struct Transfer {
    on: u32,
    lane: usize,
    engine: Engine,
    from: End,
    to: End,
    bytes: usize,
}

impl Transfer {
    /// The source's device pointer and context (host: the pinned pointer, no context).
    fn source(&self, pool: &Pool) -> Result<(CUdeviceptr, CUcontext), String> {
        Ok(match self.from {
            End::Host => (
                pool.of(self.on)?.host_src.ptr as CUdeviceptr,
                std::ptr::null_mut(),
            ),
            End::Gpu(i) => {
                let b = &pool.of(i)?.src;
                (b.ptr, b.context)
            }
        })
    }

    /// The target's device pointer and context (host: the pinned pointer, no context).
    fn target(&self, pool: &Pool) -> Result<(CUdeviceptr, CUcontext), String> {
        Ok(match self.to {
            End::Host => (
                pool.of(self.on)?.host_dst.ptr as CUdeviceptr,
                std::ptr::null_mut(),
            ),
            End::Gpu(i) => {
                let b = &pool.of(i)?.dst;
                (b.ptr, b.context)
            }
        })
    }

    /// Clears the target, so that a copy that moves nothing never verifies.
    fn clear(&self, node: &Node, pool: &Pool) -> Result<(), String> {
        match self.to {
            End::Host => {
                let host = &pool.of(self.on)?.host_dst;
                // SAFETY: `len` u32 of pinned memory the pool owns; no copy is in flight.
                unsafe { std::ptr::write_bytes(host.ptr, 0, host.len) };
                Ok(())
            }
            End::Gpu(i) => {
                node.current(i)?;
                // SAFETY: a device buffer of at least `bytes`.
                call("cuMemsetD8", unsafe {
                    sys::cuMemsetD8_v2(pool.of(i)?.dst.ptr, 0, self.bytes)
                })
            }
        }
    }

    /// Enqueues the copy once on its GPU's stream (that GPU's context current).
    fn enqueue(&self, node: &Node, pool: &Pool) -> Result<(), String> {
        let (src, src_context) = self.source(pool)?;
        let (dst, dst_context) = self.target(pool)?;
        let gpu = node.current(self.on)?;
        let (stream, bytes) = (gpu.streams[self.lane], self.bytes);
        match (self.engine, self.from, self.to) {
            // SAFETY (each arm): pinned host memory and device buffers of at least `bytes`,
            // each device buffer with its own context, on the GPU's own stream.
            (Engine::Ce, End::Host, End::Gpu(_)) => call("cuMemcpyHtoDAsync", unsafe {
                sys::cuMemcpyHtoDAsync_v2(dst, src as *const c_void, bytes, stream)
            }),
            (Engine::Ce, End::Gpu(_), End::Host) => call("cuMemcpyDtoHAsync", unsafe {
                sys::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src, bytes, stream)
            }),
            (Engine::Ce, End::Gpu(_), End::Gpu(_)) => call("cuMemcpyPeerAsync", unsafe {
                sys::cuMemcpyPeerAsync(dst, dst_context, src, src_context, bytes, stream)
            }),
            (Engine::Sm, End::Gpu(_), End::Gpu(_)) => {
                let kernel = gpu.kernel.clone()?;
                let words = (bytes / 4) as u64;
                let blocks = (words.div_ceil(u64::from(BLOCK)) as u32).clamp(1, MAX_BLOCKS);
                let (mut src, mut dst, mut n) = (src, dst, words);
                let mut params = [
                    (&mut src as *mut u64).cast::<c_void>(),
                    (&mut dst as *mut u64).cast::<c_void>(),
                    (&mut n as *mut u64).cast::<c_void>(),
                ];
                call("cuLaunchKernel", unsafe {
                    sys::cuLaunchKernel(
                        kernel,
                        blocks,
                        1,
                        1,
                        BLOCK,
                        1,
                        1,
                        0,
                        stream,
                        params.as_mut_ptr(),
                        std::ptr::null_mut(),
                    )
                })
            }
            _ => Err("no such copy".to_owned()),
        }
    }

    /// The first byte at which the target differs from the source's pattern, read back once
    /// its stream drained; `None` when every byte arrived unchanged.
    fn verify(&self, node: &Node, pool: &Pool) -> Result<Option<u64>, String> {
        let gpu = node.current(self.on)?;
        // SAFETY: the GPU's own stream.
        call("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(gpu.streams[self.lane])
        })?;
        let words = self.bytes / 4;
        match self.to {
            End::Host => {
                let host = &pool.of(self.on)?.host_dst;
                // SAFETY: `words` u32 of pinned memory, no copy in flight.
                let back = unsafe { std::slice::from_raw_parts(host.ptr, words) };
                Ok(first_difference(back, self.from))
            }
            End::Gpu(i) => {
                let mut back = vec![0u32; words];
                // SAFETY: a device buffer of at least `bytes` into a host vector of as many.
                call("cuMemcpyDtoH", unsafe {
                    sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), pool.of(i)?.dst.ptr, self.bytes)
                })?;
                Ok(first_difference(&back, self.from))
            }
        }
    }
}

/// The offset of the first byte of `back` that differs from the pattern `from` sends.
fn first_difference(back: &[u32], from: End) -> Option<u64> {
    let (at, word) = (back.iter().enumerate()).find(|(at, w)| **w != pattern(from, *at))?;
    let sent = pattern(from, at).to_le_bytes();
    let byte = (word.to_le_bytes().iter().zip(sent)).position(|(got, sent)| *got != sent)?;
    Some((at * 4 + byte) as u64)
}

/// Times `transfers` at once (each on its own stream, all released by one event), `repeat`
/// times; each transfer's median GB/s and its milliseconds in all.
fn time(
    node: &Node,
    pool: &Pool,
    transfers: &[Transfer],
    repeat: u32,
) -> Result<Vec<(f64, f64)>, String> {
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); transfers.len()];
    let mut busy = vec![0.0; transfers.len()];
    for _ in 0..repeat.max(1) {
        let first = &transfers[0];
        let go = Event::new_on(node, first.on)?;
        go.record(node.current(first.on)?.streams[first.lane])?;
        let mut marks = Vec::new();
        for transfer in transfers {
            let stream = node.current(transfer.on)?.streams[transfer.lane];
            // SAFETY: the stream waits on an event recorded on another stream (maybe another
            // GPU's, which the driver allows).
            call("cuStreamWaitEvent", unsafe {
                sys::cuStreamWaitEvent(stream, go.0, 0)
            })?;
            let (start, end) = (Event::new()?, Event::new()?);
            start.record(stream)?;
            transfer.enqueue(node, pool)?;
            node.current(transfer.on)?;
            end.record(stream)?;
            marks.push((transfer.on, start, end));
        }
        for (at, (on, start, end)) in marks.iter().enumerate() {
            node.current(*on)?;
            let ms = start.until(end)?;
            busy[at] += ms;
            samples[at].push(transfers[at].bytes as f64 / (ms * 1e-3) / 1e9);
        }
    }
    Ok(samples
        .iter()
        .zip(busy)
        .map(|(s, ms)| (crate::figures::median(&mut s.to_vec()), ms))
        .collect())
}

/// GPU time each device is kept busy before it is measured, so that its clocks have ramped
/// up (nvbandwidth warms up too).
const WARM_UP_MS: f64 = 20.0;

/// Copies host to device on `index` until [`WARM_UP_MS`] of GPU time have passed (at most 64
/// copies).
fn warm_up(node: &Node, pool: &Pool, index: u32, bytes: usize) -> Result<(), String> {
    let transfer = Transfer {
        on: index,
        lane: 0,
        engine: Engine::Ce,
        from: End::Host,
        to: End::Gpu(index),
        bytes,
    };
    let mut busy = 0.0;
    for _ in 0..64 {
        busy += time(node, pool, std::slice::from_ref(&transfer), 1)?[0].1;
        if busy >= WARM_UP_MS {
            break;
        }
    }
    Ok(())
}

/// Measures every copy of the request into `report.copies`, each device warmed up first.
pub fn measure(node: &Node, request: &NodeRequest, report: &mut NodeReport) {
    let devices = &request.devices;
    let largest = request.copy_bytes.max(request.sm_bytes);
    let pool = match Pool::new(node, devices, largest) {
        Ok(pool) => pool,
        Err(e) => {
            report.notes.push(format!("no copy was measured: {e}"));
            return;
        }
    };
    for &d in devices {
        if let Err(e) = warm_up(node, &pool, d, request.copy_bytes) {
            report.notes.push(format!("GPU {d}: warm-up: {e}"));
        }
    }
    let mut run = |engine, directions: &[(u32, End, End)], bytes: usize| {
        let both_ways = directions.len() > 1;
        let transfers: Vec<Transfer> = (directions.iter().enumerate())
            .map(|(lane, &(on, from, to))| Transfer {
                on,
                lane,
                engine,
                from,
                to,
                bytes,
            })
            .collect();
        let unreachable = transfers.iter().find_map(|t| match (t.from, t.to) {
            (End::Gpu(a), End::Gpu(b)) if engine == Engine::Sm && !node.reaches(a, b) => Some(
                format!("peer access {a} -> {b} is not enabled: a kernel on {a} cannot store into {b}'s memory"),
            ),
            _ => None,
        });
        let outcome = match unreachable {
            Some(why) => Err(why),
            None => (|| {
                for t in &transfers {
                    t.clear(node, &pool)?;
                }
                let timed = time(node, &pool, &transfers, request.repeat)?;
                let verified: Result<Vec<Option<u64>>, String> =
                    transfers.iter().map(|t| t.verify(node, &pool)).collect();
                Ok((timed, verified?))
            })(),
        };
        for (at, t) in transfers.iter().enumerate() {
            let end = |e| match e {
                End::Host => None,
                End::Gpu(i) => Some(i),
            };
            let (gbs, first_wrong_byte, error) = match &outcome {
                Ok((timed, verified)) => (Some(timed[at].0), verified[at], None),
                Err(e) => (None, None, Some(e.clone())),
            };
            report.copies.push(Copy {
                engine,
                src: end(t.from),
                dst: end(t.to),
                both_ways,
                gbs,
                verified: gbs.is_some() && first_wrong_byte.is_none(),
                first_wrong_byte,
                peak_gbs: None,
                error,
            });
        }
    };
    for &d in devices {
        let gpu = End::Gpu(d);
        run(Engine::Ce, &[(d, End::Host, gpu)], request.copy_bytes);
        run(Engine::Ce, &[(d, gpu, End::Host)], request.copy_bytes);
        run(
            Engine::Ce,
            &[(d, End::Host, gpu), (d, gpu, End::Host)],
            request.copy_bytes,
        );
    }
    for &a in devices {
        for &b in devices.iter().filter(|&&b| b != a) {
            let (ga, gb) = (End::Gpu(a), End::Gpu(b));
            run(Engine::Ce, &[(a, ga, gb)], request.copy_bytes);
            run(Engine::Sm, &[(a, ga, gb)], request.sm_bytes);
            if a < b {
                run(Engine::Ce, &[(a, ga, gb), (b, gb, ga)], request.copy_bytes);
                run(Engine::Sm, &[(a, ga, gb), (b, gb, ga)], request.sm_bytes);
            }
        }
    }
}
