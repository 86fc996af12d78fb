//! Primary contexts, one per device, retained and released by count, and the calling thread's
//! current context (`cuCtxSetCurrent`), which every call on memory, streams, events and modules
//! works in. A context whose device has a sticky error answers that error to every such call.

use super::entry::{call, enter, wait};
use super::errors::{CUresult, Code};
use super::memop::Memops;
use super::Inner;
use std::cell::Cell;
use std::ffi::{c_int, c_void};

/// The top bits of a context handle; the low bits are the device's ordinal plus one.
const CONTEXT_TAG: u64 = 0xc7 << 48;

thread_local! {
    /// The calling thread's current context handle (0: none).
    static CURRENT: Cell<u64> = const { Cell::new(0) };
}

/// The handle of `gpu`'s primary context.
fn handle(gpu: usize) -> u64 {
    CONTEXT_TAG | (gpu as u64 + 1)
}

impl Inner {
    /// The device of the context a handle names, if it is one of ours and active.
    pub(super) fn context(&self, raw: u64) -> Option<usize> {
        let gpu = (raw & !CONTEXT_TAG).checked_sub(1)? as usize;
        let active = raw & CONTEXT_TAG == CONTEXT_TAG && self.gpus.get(gpu)?.retained > 0;
        active.then_some(gpu)
    }

    /// The device of the calling thread's current context; its sticky error, if it has one.
    pub(super) fn current(&self) -> Result<usize, Code> {
        let gpu = self
            .context(CURRENT.with(Cell::get))
            .ok_or(Code::INVALID_CONTEXT)?;
        match self.gpus[gpu].sticky {
            Some(code) => Err(code),
            None => Ok(gpu),
        }
    }

    /// What a synchronisation on `gpu` answers once its work is done: its sticky error, else
    /// the asynchronous error not yet reported (once).
    pub(super) fn settle(&mut self, gpu: usize) -> Result<(), Code> {
        let state = &mut self.gpus[gpu];
        match (state.sticky, state.deferred.take()) {
            (Some(code), _) | (None, Some(code)) => Err(code),
            (None, None) => Ok(()),
        }
    }

    /// Releases `gpu`'s primary context once; at the last release its memory, streams, events
    /// and modules are destroyed, and a sticky error with them.
    fn release(&mut self, gpu: usize) {
        let state = &mut self.gpus[gpu];
        state.retained = state.retained.saturating_sub(1);
        if state.retained > 0 {
            return;
        }
        state.sticky = None;
        state.deferred = None;
        state.memo = None;
        state.memops = Memops::default();
        state.used = 0;
        self.streams.remove_gpu(gpu);
        self.memory.remove_gpu(gpu);
        self.events.retain(|_, e| e.gpu != gpu);
        self.modules.retain(|_, m| m.gpu != gpu);
        self.functions.retain(|_, f| f.gpu != gpu);
        self.peers.retain(|&(from, to)| from != gpu && to != gpu);
    }
}

/// `cuDevicePrimaryCtxRetain`: the device's primary context, active from now on.
///
/// # Safety
/// `pctx` must be null or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(pctx: *mut *mut c_void, dev: c_int) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        let gpu = inner.device(dev)?;
        if pctx.is_null() {
            return Err(Code::INVALID_VALUE);
        }
        inner.gpus[gpu].retained += 1;
        // SAFETY: non-null, writable by the caller's contract.
        unsafe { *pctx = handle(gpu) as *mut c_void };
        Ok(())
    })
}

/// `cuDevicePrimaryCtxRelease_v2`.
#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxRelease_v2(dev: c_int) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        let gpu = inner.device(dev)?;
        if inner.gpus[gpu].retained == 0 {
            return Err(Code::INVALID_CONTEXT);
        }
        inner.release(gpu);
        Ok(())
    })
}

/// `cuDevicePrimaryCtxRelease`, the name before CUDA 11's `_v2`; the same call.
#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxRelease(dev: c_int) -> CUresult {
    cuDevicePrimaryCtxRelease_v2(dev)
}

/// `cuCtxSetCurrent`: makes `ctx` (or none, for NULL) the calling thread's current context.
#[no_mangle]
pub extern "C" fn cuCtxSetCurrent(ctx: *mut c_void) -> CUresult {
    call(|sim| {
        let inner = enter(sim)?;
        let raw = ctx as u64;
        if raw != 0 && inner.context(raw).is_none() {
            return Err(Code::INVALID_CONTEXT);
        }
        CURRENT.with(|c| c.set(raw));
        Ok(())
    })
}

/// `cuCtxGetCurrent`: the calling thread's current context, or NULL.
///
/// # Safety
/// `pctx` must be null or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetCurrent(pctx: *mut *mut c_void) -> CUresult {
    call(|sim| {
        let _inner = enter(sim)?;
        if pctx.is_null() {
            return Err(Code::INVALID_VALUE);
        }
        // SAFETY: non-null, writable by the caller's contract.
        unsafe { *pctx = CURRENT.with(Cell::get) as *mut c_void };
        Ok(())
    })
}

/// `cuCtxGetDevice`: the device of the current context.
///
/// # Safety
/// `device` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetDevice(device: *mut c_int) -> CUresult {
    call(|sim| {
        let gpu = enter(sim)?.current()?;
        if device.is_null() {
            return Err(Code::INVALID_VALUE);
        }
        // SAFETY: non-null, writable by the caller's contract.
        unsafe { *device = gpu as c_int };
        Ok(())
    })
}

/// `cuCtxSynchronize`: waits until every stream of the current context has drained; then its
/// sticky error, or an asynchronous error not yet reported.
#[no_mangle]
pub extern "C" fn cuCtxSynchronize() -> CUresult {
    call(|sim| {
        let gpu = enter(sim)?.current()?;
        wait(sim, |inner| {
            if inner.gpus[gpu].sticky.is_some() || inner.streams.idle(gpu) {
                Some(inner.settle(gpu))
            } else {
                None
            }
        })
    })
}
