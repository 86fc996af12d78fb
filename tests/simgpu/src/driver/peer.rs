//! Peer access between the devices of a node: whether the driver allows it
//! (`cuDeviceCanAccessPeer`, `cuDeviceGetP2PAttribute`, from [`crate::node`]), enabling it from
//! the current context to another (`cuCtxEnablePeerAccess`, one way, until either primary context
//! is released), and copies between two devices' memory (`cuMemcpyPeer`, `cuMemcpyPeerAsync`),
//! which work whether or not access is enabled (the driver stages them through the host when it
//! is not) and are timed as [`crate::node`] says.

use super::copy::{enqueue, memop};
use super::device::put;
use super::entry::{call, enter};
use super::errors::{CUresult, Code};
use super::queue::{Op, Source};
use super::Inner;
use crate::node;
use std::ffi::{c_int, c_uint, c_void};

/// `CUdevice_P2PAttribute`: `PERFORMANCE_RANK`, `ACCESS_SUPPORTED`, `NATIVE_ATOMIC_SUPPORTED`,
/// `CUDA_ARRAY_ACCESS_SUPPORTED`.
const PERFORMANCE_RANK: c_int = 1;
const ACCESS_SUPPORTED: c_int = 2;
const NATIVE_ATOMIC_SUPPORTED: c_int = 3;
const CUDA_ARRAY_ACCESS_SUPPORTED: c_int = 4;

/// `CUDA_ERROR_PEER_ACCESS_UNSUPPORTED`, `_ALREADY_ENABLED`, `_NOT_ENABLED`.
const PEER_ACCESS_UNSUPPORTED: Code = Code(217);
const PEER_ACCESS_ALREADY_ENABLED: Code = Code(704);
const PEER_ACCESS_NOT_ENABLED: Code = Code(705);

impl Inner {
    /// The devices of the current context and of the active context `peer`
    /// (`CUDA_ERROR_INVALID_CONTEXT` if it is not one), which must differ
    /// (`CUDA_ERROR_INVALID_DEVICE`).
    fn peer_pair(&self, peer: *mut c_void) -> Result<(usize, usize), Code> {
        let gpu = self.current()?;
        let other = self.context(peer as u64).ok_or(Code::INVALID_CONTEXT)?;
        if gpu == other {
            return Err(Code::INVALID_DEVICE);
        }
        Ok((gpu, other))
    }
}

/// `cuDeviceCanAccessPeer`: 1 when the driver lets `dev` reach `peer_dev`'s memory.
///
/// # Safety
/// `can_access_peer` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceCanAccessPeer(
    can_access_peer: *mut c_int,
    dev: c_int,
    peer_dev: c_int,
) -> CUresult {
    call(|sim| {
        let inner = enter(sim)?;
        let (a, b) = (inner.device(dev)?, inner.device(peer_dev)?);
        let can = node::can_access_peer(&inner.profile, a, b);
        // SAFETY: the caller's contract.
        unsafe { put(can_access_peer, c_int::from(can)) }
    })
}

/// `cuDeviceGetP2PAttribute` of the pair `src`, `dst` (which must differ): the performance rank
/// (0 over NVLink, 1 over PCIe), access and CUDA-array access (as `cuDeviceCanAccessPeer`), and
/// native atomics (over NVLink, when access is allowed).
///
/// # Safety
/// `value` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetP2PAttribute(
    value: *mut c_int,
    attrib: c_int,
    src: c_int,
    dst: c_int,
) -> CUresult {
    call(|sim| {
        let inner = enter(sim)?;
        let (a, b) = (inner.device(src)?, inner.device(dst)?);
        if a == b {
            return Err(Code::INVALID_DEVICE);
        }
        let profile = &inner.profile;
        let (access, nvlink) = (
            node::can_access_peer(profile, a, b),
            node::nvlink_between(profile, a, b),
        );
        let answer = match attrib {
            PERFORMANCE_RANK => c_int::from(!nvlink),
            ACCESS_SUPPORTED | CUDA_ARRAY_ACCESS_SUPPORTED => c_int::from(access),
            NATIVE_ATOMIC_SUPPORTED => c_int::from(access && nvlink),
            _ => return Err(Code::INVALID_VALUE),
        };
        // SAFETY: the caller's contract.
        unsafe { put(value, answer) }
    })
}

/// `cuCtxEnablePeerAccess`: the current context reaches the memory of `peer_context`'s device
/// from now on (flags must be 0).
#[no_mangle]
pub extern "C" fn cuCtxEnablePeerAccess(peer_context: *mut c_void, flags: c_uint) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        if flags != 0 {
            return Err(Code::INVALID_VALUE);
        }
        let (gpu, other) = inner.peer_pair(peer_context)?;
        if !node::can_access_peer(&inner.profile, gpu, other) {
            return Err(PEER_ACCESS_UNSUPPORTED);
        }
        if !inner.peers.insert((gpu, other)) {
            return Err(PEER_ACCESS_ALREADY_ENABLED);
        }
        inner.gpus[gpu].memo = None;
        Ok(())
    })
}

/// `cuCtxDisablePeerAccess`: the current context no longer reaches `peer_context`'s memory.
#[no_mangle]
pub extern "C" fn cuCtxDisablePeerAccess(peer_context: *mut c_void) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        let (gpu, other) = inner.peer_pair(peer_context)?;
        if !inner.peers.remove(&(gpu, other)) {
            return Err(PEER_ACCESS_NOT_ENABLED);
        }
        inner.gpus[gpu].memo = None;
        Ok(())
    })
}

/// A copy of `bytes` from `src` in `src_context`'s device memory to `dst` in `dst_context`'s,
/// on `stream` of the current context.
fn peer_copy(
    stream: *mut c_void,
    dst: u64,
    dst_context: *mut c_void,
    src: u64,
    src_context: *mut c_void,
    bytes: usize,
) -> CUresult {
    memop(bytes, |sim| {
        {
            let inner = enter(sim)?;
            inner.current()?;
            for (address, context) in [(dst, dst_context), (src, src_context)] {
                let gpu = inner.context(context as u64).ok_or(Code::INVALID_CONTEXT)?;
                let alloc = inner.memory.find(address, bytes);
                if alloc.and_then(|a| a.gpu) != Some(gpu) {
                    return Err(Code::INVALID_VALUE);
                }
            }
        }
        let op = Op::Copy {
            dst,
            src: Source::Device(src),
            bytes,
            pcie: false,
        };
        enqueue(sim, stream, op, false)
    })
}

/// `cuMemcpyPeer`: a copy between two devices, queued on the current context's null stream
/// (asynchronous with the host, as the driver documents).
#[no_mangle]
pub extern "C" fn cuMemcpyPeer(
    dst_device: u64,
    dst_context: *mut c_void,
    src_device: u64,
    src_context: *mut c_void,
    byte_count: usize,
) -> CUresult {
    let null = std::ptr::null_mut();
    peer_copy(
        null,
        dst_device,
        dst_context,
        src_device,
        src_context,
        byte_count,
    )
}

/// `cuMemcpyPeerAsync`: a copy between two devices, on `stream`.
#[no_mangle]
pub extern "C" fn cuMemcpyPeerAsync(
    dst_device: u64,
    dst_context: *mut c_void,
    src_device: u64,
    src_context: *mut c_void,
    byte_count: usize,
    stream: *mut c_void,
) -> CUresult {
    peer_copy(
        stream,
        dst_device,
        dst_context,
        src_device,
        src_context,
        byte_count,
    )
}
