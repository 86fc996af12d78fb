//! How every driver call begins: the GPU may be lost (`lost_after_calls`), the call is counted,
//! the driver must be initialised, pending work is advanced, and a panic is an error code, never
//! an unwind across the C ABI. And how a host-side wait waits: by advancing the queues until
//! they allow it, never by the host clock.

use super::errors::{status, CUresult, Code};
use super::Inner;
use crate::state::{sim, Sim};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::MutexGuard;
use std::time::Duration;

/// Runs one counted driver call. After `lost_after_calls` calls the GPU has fallen off the bus,
/// and every call answers `CUDA_ERROR_UNKNOWN`, as CUDA programs report after an Xid 79.
pub(super) fn call(body: impl FnOnce(&'static Sim) -> Result<(), Code>) -> CUresult {
    guarded(|| {
        let sim = sim();
        if sim.lost() {
            return Err(Code::UNKNOWN);
        }
        sim.count_call();
        body(sim)
    })
}

/// Runs a call that never reaches the GPU (versions): not counted, answered even when lost.
pub(super) fn offline(body: impl FnOnce(&'static Sim) -> Result<(), Code>) -> CUresult {
    guarded(|| body(sim()))
}

fn guarded(body: impl FnOnce() -> Result<(), Code>) -> CUresult {
    catch_unwind(AssertUnwindSafe(body)).map_or(Code::UNKNOWN.0, status)
}

/// The driver's state, once `cuInit` has succeeded, with pending work advanced.
pub(super) fn enter(sim: &'static Sim) -> Result<MutexGuard<'static, Inner>, Code> {
    let mut inner = sim.driver.lock();
    if !inner.initialized {
        return Err(Code::NOT_INITIALIZED);
    }
    inner.advance(sim);
    Ok(inner)
}

/// Advances pending work until `done` answers, releasing the lock between tries so that other
/// threads can call in (and the host can write the words streams wait on). A wait on work that
/// never completes (a hung kernel) never returns, as on a real GPU. Once it returns, the host
/// has seen every device's work so far complete (see [`crate::clock::Clock::settle`]).
pub(super) fn wait(
    sim: &'static Sim,
    mut done: impl FnMut(&mut Inner) -> Option<Result<(), Code>>,
) -> Result<(), Code> {
    let mut pause = Duration::from_micros(10);
    loop {
        if sim.lost() {
            return Err(Code::UNKNOWN);
        }
        let mut inner = enter(sim)?;
        if let Some(outcome) = done(&mut inner) {
            inner.gpus.iter_mut().for_each(|gpu| gpu.clock.settle());
            return outcome;
        }
        drop(inner);
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(1));
    }
}
