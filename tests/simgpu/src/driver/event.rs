//! Events: a record is work on its stream that stamps the device's model timeline when it runs,
//! so the time between two events is the modelled duration of the work between them.

use super::device::put;
use super::entry::{call, enter, wait};
use super::errors::{CUresult, Code};
use super::queue::Op;
use super::{Inner, Kind};
use std::ffi::{c_uint, c_void};

/// `CU_EVENT_BLOCKING_SYNC`, `CU_EVENT_DISABLE_TIMING`, `CU_EVENT_INTERPROCESS`.
const BLOCKING_SYNC: c_uint = 0x1;
const DISABLE_TIMING: c_uint = 0x2;
const INTERPROCESS: c_uint = 0x4;

/// One event.
pub(super) struct Event {
    pub gpu: usize,
    timing: bool,
    /// Records enqueued so far.
    pub recorded: u64,
    /// The latest record that has run.
    pub completed: u64,
    /// The device's timeline when it ran, seconds.
    pub stamp: f64,
}

impl Event {
    /// A timing event on `gpu`, never recorded.
    pub(super) fn new(gpu: usize, timing: bool) -> Event {
        Event {
            gpu,
            timing,
            recorded: 0,
            completed: 0,
            stamp: 0.0,
        }
    }
}

impl Inner {
    /// The event `raw` names, with its device's sticky error if it has one.
    fn event(&self, raw: *mut c_void) -> Result<&Event, Code> {
        let event = self.events.get(&(raw as u64)).ok_or(Code::INVALID_HANDLE)?;
        match self.gpus[event.gpu].sticky {
            Some(code) => Err(code),
            None => Ok(event),
        }
    }
}

/// `cuEventCreate` in the current context.
///
/// # Safety
/// `ph_event` must be null or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn cuEventCreate(ph_event: *mut *mut c_void, flags: c_uint) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        let gpu = inner.current()?;
        let known = BLOCKING_SYNC | DISABLE_TIMING | INTERPROCESS;
        let interprocess_timed = flags & INTERPROCESS != 0 && flags & DISABLE_TIMING == 0;
        if ph_event.is_null() || flags & !known != 0 || interprocess_timed {
            return Err(Code::INVALID_VALUE);
        }
        let handle = inner.handle(Kind::Event);
        let event = Event::new(gpu, flags & DISABLE_TIMING == 0);
        inner.events.insert(handle, event);
        // SAFETY: the caller's contract.
        unsafe { put(ph_event, handle as *mut c_void) }
    })
}

/// `cuEventRecord`: the event captures the work enqueued on `stream` so far.
#[no_mangle]
pub extern "C" fn cuEventRecord(event: *mut c_void, stream: *mut c_void) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        let gpu = inner.current()?;
        let (key, on) = inner.stream(stream, gpu)?;
        let generation = {
            let event = inner
                .events
                .get_mut(&(event as u64))
                .ok_or(Code::INVALID_HANDLE)?;
            if event.gpu != on {
                return Err(Code::INVALID_HANDLE);
            }
            event.recorded += 1;
            event.recorded
        };
        let event = event as u64;
        inner
            .streams
            .push(key, on, Op::Record { event, generation });
        inner.advance(sim);
        Ok(())
    })
}

/// `cuEventQuery`: done (or never recorded), or `CUDA_ERROR_NOT_READY`.
#[no_mangle]
pub extern "C" fn cuEventQuery(event: *mut c_void) -> CUresult {
    call(|sim| {
        let inner = enter(sim)?;
        let event = inner.event(event)?;
        if event.completed >= event.recorded {
            Ok(())
        } else {
            Err(Code::NOT_READY)
        }
    })
}

/// `cuEventSynchronize`: waits until the work the event captured is done (at once for an event
/// never recorded).
#[no_mangle]
pub extern "C" fn cuEventSynchronize(event: *mut c_void) -> CUresult {
    call(|sim| {
        let target = enter(sim)?.event(event)?.recorded;
        wait(sim, |inner| match inner.event(event) {
            Err(code) => Some(Err(code)),
            Ok(e) if e.completed >= target => Some(Ok(())),
            Ok(_) => None,
        })
    })
}

/// `cuEventElapsedTime`: milliseconds of the model timeline from `start` to `end`, both
/// recorded and done, neither made with `CU_EVENT_DISABLE_TIMING`.
///
/// # Safety
/// `ms` must be null or valid for a float write.
#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime(
    ms: *mut f32,
    start: *mut c_void,
    end: *mut c_void,
) -> CUresult {
    call(|sim| {
        let inner = enter(sim)?;
        let (start, end) = (inner.event(start)?, inner.event(end)?);
        if ms.is_null() {
            return Err(Code::INVALID_VALUE);
        }
        if start.recorded == 0 || end.recorded == 0 || !start.timing || !end.timing {
            return Err(Code::INVALID_HANDLE);
        }
        if start.completed < start.recorded || end.completed < end.recorded {
            return Err(Code::NOT_READY);
        }
        // SAFETY: the caller's contract.
        unsafe { put(ms, ((end.stamp - start.stamp) * 1e3) as f32) }
    })
}

/// `cuEventElapsedTime_v2` (CUDA 12.8): the same, which CUDA 13 keeps under this name.
///
/// # Safety
/// `ms` must be null or valid for a float write.
#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime_v2(
    ms: *mut f32,
    start: *mut c_void,
    end: *mut c_void,
) -> CUresult {
    // SAFETY: the caller's contract, passed on.
    unsafe { cuEventElapsedTime(ms, start, end) }
}

/// `cuEventDestroy_v2`: the handle is invalid from now on; work that records it still runs.
#[no_mangle]
pub extern "C" fn cuEventDestroy_v2(event: *mut c_void) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        inner
            .events
            .remove(&(event as u64))
            .ok_or(Code::INVALID_HANDLE)?;
        Ok(())
    })
}
