//! Copies and memsets, synchronous and asynchronous, with the host synchronisation the driver
//! documents ("API synchronization behavior"): a synchronous copy from the host returns once it
//! is done; a copy to the host returns once it has landed (the asynchronous one too, unless the
//! destination is pinned); device-to-device copies and memsets to device memory are queued
//! work, on the null stream for the synchronous calls. Every device range must lie within one
//! allocation, or the call is `CUDA_ERROR_INVALID_VALUE`, as the driver answers.

use super::entry::{call, enter, wait};
use super::errors::{CUresult, Code};
use super::queue::{Op, Source};
use super::Inner;
use crate::clock::Direction;
use crate::state::Sim;
use std::ffi::c_void;

impl Inner {
    /// Checks that `[address, address + bytes)` is device or pinned memory; whether pinned.
    fn range(&self, address: u64, bytes: usize) -> Result<bool, Code> {
        let alloc = self
            .memory
            .find(address, bytes)
            .ok_or(Code::INVALID_VALUE)?;
        Ok(alloc.gpu.is_none())
    }

    /// Whether host memory at `address` is pinned (`cuMemHostAlloc`) for `bytes`.
    fn pinned(&self, address: u64, bytes: usize) -> bool {
        self.range(address, bytes) == Ok(true)
    }
}

/// Enqueues `op` on `stream` (NULL: the current context's null stream) and, when `synchronous`,
/// waits until it is done.
pub(super) fn enqueue(
    sim: &'static Sim,
    stream: *mut c_void,
    op: Op,
    synchronous: bool,
) -> Result<(), Code> {
    let (key, gpu, seq) = {
        let mut inner = enter(sim)?;
        let current = inner.current()?;
        let (key, gpu) = inner.stream(stream, current)?;
        let seq = inner.streams.push(key, gpu, op);
        inner.advance(sim);
        (key, gpu, seq)
    };
    if !synchronous {
        return Ok(());
    }
    wait(sim, |inner| match inner.gpus[gpu].sticky {
        Some(code) => Some(Err(code)),
        None => inner.streams.done(key, seq).then_some(Ok(())),
    })
}

/// Copies `bytes` from device or pinned memory at `src` to host memory at `dst`, once the work
/// before it on `stream` is done.
///
/// # Safety
/// `dst` must be valid for `bytes` of writes.
unsafe fn to_host(
    sim: &'static Sim,
    stream: *mut c_void,
    dst: *mut c_void,
    src: u64,
    bytes: usize,
) -> Result<(), Code> {
    enqueue(sim, stream, Op::Marker, true)?;
    let mut inner = enter(sim)?;
    let gpu = inner.current()?;
    let alloc = inner.memory.find(src, bytes).ok_or(Code::INVALID_VALUE)?;
    // SAFETY: the source lies within the live allocation; `dst` holds `bytes` by the caller's
    // contract, and is host memory the allocation cannot overlap unless pinned, which `copy`
    // allows.
    unsafe {
        let from = alloc.data().add((src - alloc.base) as usize);
        std::ptr::copy(from, dst.cast::<u8>(), bytes);
    }
    let (key, on) = inner.stream(stream, gpu)?;
    let (ready, rate) = (inner.streams.ready(key), inner.profile.node.pcie_gbs * 1e9);
    let clock = &mut inner.gpus[on].clock;
    let slow = clock.slow();
    let end = clock.transfer(Direction::Out, ready, bytes, rate, slow);
    clock.settle();
    inner.streams.set_ready(key, end);
    Ok(())
}

/// Takes `bytes` of host memory at `src` for a copy: read when the copy runs if pinned, else
/// copied now (the staging the driver does for pageable memory).
///
/// # Safety
/// `src` must be valid for `bytes` of reads.
unsafe fn source(inner: &Inner, src: *const c_void, bytes: usize) -> Result<Source, Code> {
    if src.is_null() {
        return Err(Code::INVALID_VALUE);
    }
    if inner.pinned(src as u64, bytes) {
        return Ok(Source::Device(src as u64));
    }
    // SAFETY: by the caller's contract.
    Ok(Source::Staged(unsafe {
        std::slice::from_raw_parts(src.cast::<u8>(), bytes).to_vec()
    }))
}

/// A copy from host memory, on `stream`.
///
/// # Safety
/// `src` must be valid for `bytes` of reads.
unsafe fn from_host(
    sim: &'static Sim,
    stream: *mut c_void,
    dst: u64,
    src: *const c_void,
    bytes: usize,
    synchronous: bool,
) -> Result<(), Code> {
    let op = {
        let inner = enter(sim)?;
        inner.current()?;
        inner.range(dst, bytes)?;
        Op::Copy {
            dst,
            // SAFETY: by the caller's contract.
            src: unsafe { source(&inner, src, bytes) }?,
            bytes,
            pcie: true,
        }
    };
    enqueue(sim, stream, op, synchronous)
}

/// A device-to-device copy, on `stream`.
fn device_to_device(
    sim: &'static Sim,
    stream: *mut c_void,
    dst: u64,
    src: u64,
    bytes: usize,
) -> Result<(), Code> {
    {
        let inner = enter(sim)?;
        inner.current()?;
        inner.range(dst, bytes)?;
        inner.range(src, bytes)?;
    }
    let op = Op::Copy {
        dst,
        src: Source::Device(src),
        bytes,
        pcie: false,
    };
    enqueue(sim, stream, op, false)
}

/// A copy to host memory, on `stream`: queued work if `dst` is pinned and the call
/// asynchronous, else done before returning.
///
/// # Safety
/// `dst` must be valid for `bytes` of writes.
unsafe fn device_to_host(
    sim: &'static Sim,
    stream: *mut c_void,
    dst: *mut c_void,
    src: u64,
    bytes: usize,
    synchronous: bool,
) -> Result<(), Code> {
    let queued = {
        let inner = enter(sim)?;
        inner.current()?;
        inner.range(src, bytes)?;
        if dst.is_null() {
            return Err(Code::INVALID_VALUE);
        }
        !synchronous && inner.pinned(dst as u64, bytes)
    };
    if queued {
        let op = Op::Copy {
            dst: dst as u64,
            src: Source::Device(src),
            bytes,
            pcie: true,
        };
        return enqueue(sim, stream, op, false);
    }
    // SAFETY: by the caller's contract.
    unsafe { to_host(sim, stream, dst, src, bytes) }
}

/// A memset of device or pinned memory, on `stream`; a synchronous one to pinned memory is done
/// before returning.
fn memset(
    sim: &'static Sim,
    stream: *mut c_void,
    dst: u64,
    value: u8,
    bytes: usize,
    synchronous: bool,
) -> Result<(), Code> {
    let pinned = {
        let inner = enter(sim)?;
        inner.current()?;
        inner.range(dst, bytes)?
    };
    let op = Op::Memset { dst, value, bytes };
    enqueue(sim, stream, op, synchronous && pinned)
}

/// Runs a copy or memset call; `bytes` of 0 does nothing.
pub(super) fn memop(bytes: usize, body: impl FnOnce(&'static Sim) -> Result<(), Code>) -> CUresult {
    call(|sim| {
        if bytes == 0 {
            return enter(sim)?.current().map(drop);
        }
        body(sim)
    })
}

/// The null stream, as the synchronous calls use it.
const NULL: *mut c_void = std::ptr::null_mut();

/// `cuMemcpyHtoD_v2`.
///
/// # Safety
/// `src` must be valid for `bytes` of reads.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoD_v2(dst: u64, src: *const c_void, bytes: usize) -> CUresult {
    // SAFETY: the caller's contract, passed on.
    memop(bytes, |sim| unsafe {
        from_host(sim, NULL, dst, src, bytes, true)
    })
}

/// `cuMemcpyDtoH_v2`.
///
/// # Safety
/// `dst` must be valid for `bytes` of writes.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(dst: *mut c_void, src: u64, bytes: usize) -> CUresult {
    // SAFETY: the caller's contract, passed on.
    memop(bytes, |sim| unsafe {
        device_to_host(sim, NULL, dst, src, bytes, true)
    })
}

/// `cuMemcpyDtoD_v2`.
#[no_mangle]
pub extern "C" fn cuMemcpyDtoD_v2(dst: u64, src: u64, bytes: usize) -> CUresult {
    memop(bytes, |sim| device_to_device(sim, NULL, dst, src, bytes))
}

/// `cuMemcpyHtoDAsync_v2`.
///
/// # Safety
/// `src` must be valid for `bytes` of reads, until the copy has run if it is pinned.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: u64,
    src: *const c_void,
    bytes: usize,
    stream: *mut c_void,
) -> CUresult {
    // SAFETY: the caller's contract, passed on.
    memop(bytes, |sim| unsafe {
        from_host(sim, stream, dst, src, bytes, false)
    })
}

/// `cuMemcpyDtoHAsync_v2`.
///
/// # Safety
/// `dst` must be valid for `bytes` of writes, until the copy has run if it is pinned.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: u64,
    bytes: usize,
    stream: *mut c_void,
) -> CUresult {
    // SAFETY: the caller's contract, passed on.
    memop(bytes, |sim| unsafe {
        device_to_host(sim, stream, dst, src, bytes, false)
    })
}

/// `cuMemcpyDtoDAsync_v2`.
#[no_mangle]
pub extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: u64,
    src: u64,
    bytes: usize,
    stream: *mut c_void,
) -> CUresult {
    memop(bytes, |sim| device_to_device(sim, stream, dst, src, bytes))
}

/// `cuMemsetD8_v2`.
#[no_mangle]
pub extern "C" fn cuMemsetD8_v2(dst: u64, value: u8, bytes: usize) -> CUresult {
    memop(bytes, |sim| memset(sim, NULL, dst, value, bytes, true))
}

/// `cuMemsetD8Async`.
#[no_mangle]
pub extern "C" fn cuMemsetD8Async(
    dst: u64,
    value: u8,
    bytes: usize,
    stream: *mut c_void,
) -> CUresult {
    memop(bytes, |sim| memset(sim, stream, dst, value, bytes, false))
}
