//! Holding the benchmark's stream while a sample's work is enqueued, so that the GPU time
//! between the sample's events is the work's own and not the host's launch gaps (nvbench holds
//! its stream with a spinning kernel for the same reason). The stream waits on a word of pinned
//! host memory the GPU can read (`cuStreamWaitValue32`); the host writes the word once the
//! sample's work and its stop event are enqueued.
//!
//! A held stream does not drain its launch queue: were the queue to fill before everything was
//! enqueued, the host would wait for the GPU and the GPU for the host. A watchdog opens the gate
//! after [`WATCHDOG`] in that case, and the sample says it was not held throughout.

use super::stream::Stream;
use crate::check::worker::outcome::{Call, Outcome};
use crate::check::worker::symbols::missing;
use crate::probe::dl::Library;
use cudarc::driver::result as cu;
use cudarc::driver::sys::{self, CUdeviceptr, CUstreamWaitValue_flags};
use std::cell::Cell;
use std::ffi::{c_void, CStr};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// The driver function the gate waits with.
const WAIT: &CStr = c"cuStreamWaitValue32_v2";

/// How long enqueueing one sample may take before the watchdog opens the gate.
pub const WATCHDOG: Duration = Duration::from_secs(1);

/// A word in pinned, device-mapped host memory that a stream can be made to wait on.
pub struct Gate {
    host: *mut c_void,
    device: CUdeviceptr,
    /// The value the last hold waited for; each hold waits for the next one, so the word never
    /// has to be reset.
    last: Cell<u32>,
}

impl Gate {
    /// A gate in the current context (`cuMemHostAlloc` with `DEVICEMAP`,
    /// `cuMemHostGetDevicePointer`), where `driver` (the `libcuda.so.1` in use) has
    /// `cuStreamWaitValue32_v2` (drivers since CUDA 11.7's); cudarc would panic on a driver
    /// without it.
    pub fn new(driver: &Path) -> Result<Gate, Outcome> {
        let lib = Library::open(driver).map_err(Outcome::fail)?;
        if !lib.exports(WAIT) {
            return Err(missing(
                "libcuda",
                WAIT,
                "a driver older than CUDA 11.7's cannot hold a stream at a gate",
            ));
        }
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: a plain pinned allocation of one word, freed in Drop.
        let host =
            unsafe { cu::malloc_host(std::mem::size_of::<u32>(), flags) }.call("cuMemHostAlloc")?;
        let mut gate = Gate {
            host,
            device: 0,
            last: Cell::new(0),
        };
        gate.word().store(0, Ordering::Release);
        // SAFETY: `host` was allocated with DEVICEMAP just above; flags must be 0.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut gate.device, host, 0) }
            .result()
            .call("cuMemHostGetDevicePointer")?;
        Ok(gate)
    }

    /// The word as the host sees it. Pinned memory from `cuMemHostAlloc` is page-aligned and
    /// lives as long as `self`.
    fn word(&self) -> &AtomicU32 {
        // SAFETY: an aligned, live allocation of one u32, only ever accessed atomically by the
        // host (the GPU only reads it).
        unsafe { &*self.host.cast::<AtomicU32>() }
    }

    /// Makes `stream` wait at the gate, runs `enqueue`, then opens the gate. The second value
    /// is whether the gate held until `enqueue` was done (false: the watchdog opened it).
    pub fn hold<T>(
        &self,
        stream: &Stream,
        enqueue: impl FnOnce() -> T,
    ) -> Result<(T, bool), Outcome> {
        let value = self.last.get().wrapping_add(1);
        // SAFETY: a live stream of the current context and a device address of pinned memory
        // that lives as long as `self`; `self` outlives the wait, which ends when the word is
        // written below (or by the watchdog).
        unsafe {
            sys::cuStreamWaitValue32_v2(
                stream.raw(),
                self.device,
                value,
                CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_GEQ as u32,
            )
        }
        .result()
        .call("cuStreamWaitValue32")?;
        self.last.set(value);
        Ok(hold_open(self.word(), value, WATCHDOG, enqueue))
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        // Every hold was opened already; the stream that waited was synchronised before this.
        // SAFETY: allocated in `new`, freed once, here.
        let _ = unsafe { cu::free_host(self.host) };
    }
}

/// Runs `enqueue`, then sets `word` to `value`; a watchdog thread sets it first if `enqueue`
/// is not done within `watchdog`. Returns what `enqueue` returned and whether it finished
/// before the watchdog opened the gate.
pub fn hold_open<T>(
    word: &AtomicU32,
    value: u32,
    watchdog: Duration,
    enqueue: impl FnOnce() -> T,
) -> (T, bool) {
    let early = AtomicBool::new(false);
    let opened_early = &early;
    let (done, finished) = mpsc::channel::<()>();
    let out = std::thread::scope(|scope| {
        scope.spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = finished.recv_timeout(watchdog) {
                opened_early.store(true, Ordering::Release);
                word.store(value, Ordering::Release);
            }
        });
        let out = enqueue();
        word.store(value, Ordering::Release);
        let _ = done.send(());
        out
    });
    (out, !opened_early.load(Ordering::Acquire))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_driver_without_the_wait_has_no_gate_and_says_why() {
        use crate::check::worker::fixtures::{fixture, DRIVER};
        // The 535 driver has it; a library that is not a driver stands for one too old.
        let driver = Library::open(&fixture(DRIVER).join("libcuda.so.1")).unwrap();
        assert!(driver.exports(WAIT));
        let nvml = fixture(DRIVER).join("libnvidia-ml.so.1");
        let refused = Gate::new(&nvml).err().expect("no gate");
        assert_eq!(
            refused.reason,
            "libcuda does not export cuStreamWaitValue32_v2: a driver older than CUDA 11.7's \
             cannot hold a stream at a gate"
        );
    }

    #[test]
    fn the_gate_opens_once_everything_is_enqueued() {
        let word = AtomicU32::new(0);
        let (seen, held) = hold_open(&word, 1, WATCHDOG, || word.load(Ordering::Acquire));
        assert_eq!(seen, 0, "closed while the work was enqueued");
        assert!(held);
        assert_eq!(word.load(Ordering::Acquire), 1, "open afterwards");
    }

    #[test]
    fn a_launch_queue_that_fills_behind_the_gate_cannot_deadlock() {
        // The enqueue blocks until the GPU drains the queue, which it does only once the gate
        // is open: as a full launch queue behaves behind a held stream.
        let word = AtomicU32::new(4);
        let (waited, held) = hold_open(&word, 5, Duration::from_millis(50), || {
            while word.load(Ordering::Acquire) < 5 {
                std::thread::yield_now();
            }
            "enqueued"
        });
        assert_eq!(waited, "enqueued");
        assert!(!held, "the watchdog opened it, and the sample says so");
    }
}
