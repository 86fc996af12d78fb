//! What the simulated CUDA libraries (cuBLAS, cuBLASLt, cuDNN, cuFFT, cuRAND) ask of the
//! driver: the current device and its profile, and work put on a stream like a kernel launch.
//!
//! A library's call is [`Work`]: a kernel name (what CUPTI would report), the bytes it moves
//! and the operations it does at one precision's peak (its time on the model timeline), and a
//! body that computes the result with the library's own CPU reference when the work reaches
//! the front of its stream, reading and writing device memory through [`DeviceMemory`], every
//! access checked as a kernel's is. An access outside every allocation is
//! `CUDA_ERROR_ILLEGAL_ADDRESS`, sticky on the context as a faulting kernel's.

use super::entry::{call, enter};
use super::errors::Code;
use super::queue::Op;
use super::Inner;
use crate::clock::Peak;
use crate::profile::{Device, Faults};
use std::ffi::c_void;

/// A library's computation, run against the device's memory when its turn on the stream comes.
pub type Body = Box<dyn FnOnce(&mut DeviceMemory<'_>) -> Result<(), Code> + Send>;

/// One piece of library work on a stream.
pub struct Work {
    /// The kernel's name, as NVIDIA's library would launch it.
    pub name: String,
    /// Bytes of device memory read and written.
    pub bytes: u64,
    /// Arithmetic operations, at `peak`'s rate.
    pub flops: u64,
    pub peak: Peak,
    pub body: Body,
}

/// Device memory as a library's body sees it: the device's allocations and pinned memory.
pub struct DeviceMemory<'a> {
    inner: &'a mut Inner,
}

impl<'a> DeviceMemory<'a> {
    /// The memory of the driver's state, for a body run by the driver.
    pub(super) fn of(inner: &'a mut Inner) -> DeviceMemory<'a> {
        DeviceMemory { inner }
    }

    /// A copy of `len` bytes at device address `address`.
    pub fn read(&self, address: u64, len: usize) -> Result<Vec<u8>, Code> {
        let alloc = (self.inner.memory.find(address, len)).ok_or(Code::ILLEGAL_ADDRESS)?;
        // SAFETY: `[address, address + len)` lies within the live allocation.
        let bytes = unsafe {
            std::slice::from_raw_parts(alloc.data().add((address - alloc.base) as usize), len)
        };
        Ok(bytes.to_vec())
    }

    /// Writes `bytes` at device address `address`.
    pub fn write(&mut self, address: u64, bytes: &[u8]) -> Result<(), Code> {
        let alloc = (self.inner.memory.write(address, bytes.len())).ok_or(Code::ILLEGAL_ADDRESS)?;
        // SAFETY: the range lies within the live allocation, which `bytes` (a copy the body
        // owns) cannot overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                alloc.data().add((address - alloc.base) as usize),
                bytes.len(),
            )
        };
        Ok(())
    }

    /// The `(id, generation)` of the device allocation holding `[address, address + len)`: the
    /// same pair later means the same bytes (pinned memory has none: the host writes it unseen).
    pub fn state(&self, address: u64, len: usize) -> Option<(u64, u64)> {
        let alloc = self.inner.memory.find(address, len)?;
        alloc.gpu.is_some().then_some((alloc.id, alloc.generation))
    }

    /// The profile's faults (`wrong_results` names the library work whose output to perturb).
    pub fn faults(&self) -> &Faults {
        &self.inner.profile.faults
    }
}

/// The device of the calling thread's current context, and its profile; a library handle made
/// without one fails as NVIDIA's do.
pub fn current() -> Result<(usize, Device), Code> {
    let mut found = Err(Code::INVALID_CONTEXT);
    status(call(|sim| {
        let inner = enter(sim)?;
        let gpu = inner.current()?;
        found = Ok((gpu, inner.gpus[gpu].profile.clone()));
        Ok(())
    }))?;
    found
}

/// Puts `work` on `stream` (NULL: the current device's null stream) of the current context, as
/// a launch is put there; it runs when everything ahead of it has.
pub fn enqueue(stream: *mut c_void, work: Work) -> Result<(), Code> {
    status(call(|sim| {
        let mut inner = enter(sim)?;
        let gpu = inner.current()?;
        let (key, on) = inner.stream(stream, gpu)?;
        inner.streams.push(key, on, Op::Library(Box::new(work)));
        inner.advance(sim);
        Ok(())
    }))
}

impl Inner {
    /// Runs library work on `gpu`: its body, then its modelled time.
    pub(super) fn run_library(&mut self, gpu: usize, work: Work) -> Result<(), Code> {
        let outcome = (work.body)(&mut DeviceMemory::of(self));
        self.gpus[gpu]
            .clock
            .kernel_at(work.bytes, work.flops, work.peak);
        outcome
    }
}

/// A driver status as a `Result`.
fn status(code: super::errors::CUresult) -> Result<(), Code> {
    match code {
        0 => Ok(()),
        code => Err(Code(code)),
    }
}
