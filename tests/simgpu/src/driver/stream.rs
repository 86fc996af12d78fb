//! Streams: creation and destruction, synchronisation and queries, and the two waits a stream
//! can be given: on an event, and on a 32-bit word of memory (`cuStreamWaitValue32_v2`), which
//! stackbench's bench gate uses to hold its stream while it enqueues a sample.

use super::device::put;
use super::entry::{call, enter, wait};
use super::errors::{CUresult, Code};
use super::queue::{Op, Streams};
use super::{Inner, Kind};
use std::ffi::{c_uint, c_void};

/// `CU_STREAM_NON_BLOCKING`.
const NON_BLOCKING: c_uint = 0x1;
/// `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD`, the null stream's other names (the
/// per-thread stream is taken as the legacy one).
const LEGACY: u64 = 0x1;
const PER_THREAD: u64 = 0x2;
/// `CU_STREAM_WAIT_VALUE_FLUSH`, allowed beside the condition in the low two bits.
const WAIT_FLUSH: c_uint = 1 << 30;

impl Inner {
    /// The stream `raw` names (NULL and its aliases: the null stream of `gpu`, the current
    /// device) and the device it runs on.
    pub(super) fn stream(&self, raw: *mut c_void, gpu: usize) -> Result<(u64, usize), Code> {
        match raw as u64 {
            0 | LEGACY | PER_THREAD => Ok((Streams::null(gpu), gpu)),
            key => (self.streams.get(key))
                .map(|s| (key, s.gpu))
                .ok_or(Code::INVALID_HANDLE),
        }
    }
}

/// `cuStreamCreate`: flags 0 (ordered with the null stream) or `CU_STREAM_NON_BLOCKING`.
///
/// # Safety
/// `ph_stream` must be null or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(ph_stream: *mut *mut c_void, flags: c_uint) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        let gpu = inner.current()?;
        if ph_stream.is_null() || flags & !NON_BLOCKING != 0 {
            return Err(Code::INVALID_VALUE);
        }
        let key = inner.handle(Kind::Stream);
        inner.streams.create(key, gpu, flags & NON_BLOCKING == 0);
        // SAFETY: the caller's contract.
        unsafe { put(ph_stream, key as *mut c_void) }
    })
}

/// `cuStreamDestroy_v2`: returns at once; work still queued on the stream runs.
#[no_mangle]
pub extern "C" fn cuStreamDestroy_v2(stream: *mut c_void) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        let gpu = inner.current()?;
        let (key, _) = inner.stream(stream, gpu)?;
        if key == Streams::null(gpu) {
            return Err(Code::INVALID_HANDLE);
        }
        inner.streams.destroy(key);
        Ok(())
    })
}

/// `cuStreamSynchronize`: waits until the stream has drained.
#[no_mangle]
pub extern "C" fn cuStreamSynchronize(stream: *mut c_void) -> CUresult {
    call(|sim| {
        let (key, gpu) = {
            let inner = enter(sim)?;
            let current = inner.current()?;
            inner.stream(stream, current)?
        };
        wait(sim, |inner| {
            if inner.gpus[gpu].sticky.is_some() || inner.streams.drained(key) {
                Some(inner.settle(gpu))
            } else {
                None
            }
        })
    })
}

/// `cuStreamQuery`: done, or `CUDA_ERROR_NOT_READY`.
#[no_mangle]
pub extern "C" fn cuStreamQuery(stream: *mut c_void) -> CUresult {
    call(|sim| {
        let inner = enter(sim)?;
        let current = inner.current()?;
        let (key, gpu) = inner.stream(stream, current)?;
        if let Some(code) = inner.gpus[gpu].sticky {
            return Err(code);
        }
        if inner.streams.drained(key) {
            Ok(())
        } else {
            Err(Code::NOT_READY)
        }
    })
}

/// `cuStreamWaitEvent`: later work on the stream waits until the event's captured work is done
/// (flags must be 0).
#[no_mangle]
pub extern "C" fn cuStreamWaitEvent(
    stream: *mut c_void,
    event: *mut c_void,
    flags: c_uint,
) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        let gpu = inner.current()?;
        let (key, on) = inner.stream(stream, gpu)?;
        let generation = (inner.events.get(&(event as u64)))
            .ok_or(Code::INVALID_HANDLE)?
            .recorded;
        if flags != 0 {
            return Err(Code::INVALID_VALUE);
        }
        let event = event as u64;
        inner
            .streams
            .push(key, on, Op::WaitEvent { event, generation });
        inner.advance(sim);
        Ok(())
    })
}

/// `cuStreamWaitValue32_v2`: later work on the stream waits until the 32-bit word at `addr`
/// (device or pinned memory, 4-aligned) satisfies the condition in `flags`: `GEQ` (cyclic:
/// `(int32_t)(*addr - value) >= 0`), `EQ`, `AND` (`*addr & value`), `NOR` (`~(*addr | value)`).
#[no_mangle]
pub extern "C" fn cuStreamWaitValue32_v2(
    stream: *mut c_void,
    addr: u64,
    value: u32,
    flags: c_uint,
) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        let gpu = inner.current()?;
        let (key, on) = inner.stream(stream, gpu)?;
        let known = addr % 4 == 0 && inner.memory.find(addr, 4).is_some();
        if !known || flags & !(0x3 | WAIT_FLUSH) != 0 {
            return Err(Code::INVALID_VALUE);
        }
        let op = Op::WaitValue {
            address: addr,
            value,
            flags,
        };
        inner.streams.push(key, on, op);
        inner.advance(sim);
        Ok(())
    })
}
