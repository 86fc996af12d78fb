//! `cudart.memcpy`: the CUDA runtime sets the device, allocates, and copies a buffer there and
//! back unchanged (cudarc's runtime `result` layer: `cudaSetDevice`, `cudaMalloc`, `cudaMemcpy`,
//! `cudaFree`, whose ABI is the same in CUDA 11, 12 and 13).

use super::driver;
use super::outcome::{debug_name, Call, Checked, LibraryError, Outcome};
use super::session::Session;
use crate::check::protocol::Component;
use cudarc::runtime::result::{self as rt, RuntimeError};

/// The bytes copied: big enough for a DMA transfer, small enough to be instant.
const BYTES: usize = 4 << 20;

impl LibraryError for RuntimeError {
    fn code(&self) -> i64 {
        self.0 as i64
    }

    fn name(&self) -> String {
        self.error_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|_| debug_name(&self.0))
    }

    fn text(&self) -> Option<String> {
        let text = self.error_string().ok()?.to_string_lossy().into_owned();
        match crate::compat::runtime_error(self.0 as i32) {
            Some(known) => Some(format!("{text}; {}", known.fix)),
            None => Some(text),
        }
    }
}

/// Device memory from `cudaMalloc`, freed with `cudaFree` when dropped.
struct RuntimeBuffer(*mut std::ffi::c_void);

impl Drop for RuntimeBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by cudaMalloc below and freed only here.
        let _ = unsafe { rt::free_sync(self.0) };
    }
}

/// Copies a patterned buffer to the device and back, and compares.
pub fn memcpy(s: &mut Session) -> Checked {
    let runtime = s.library(Component::Cudart).map_err(Outcome::fail)?;
    let simulated_runtime = driver::is_simulated(runtime);
    if s.driver.as_ref().is_some_and(driver::is_simulated) && !simulated_runtime {
        return Ok(Outcome::skip(
            "NVIDIA's CUDA runtime cannot run on stackbench's simulated driver (it needs the \
             driver's private export tables): this check needs a simulated runtime",
        ));
    }
    let ordinal = s.gpu()?.ordinal;
    rt::device::set(ordinal).call("cudaSetDevice")?;
    // SAFETY: a plain allocation, freed by RuntimeBuffer.
    let buffer = RuntimeBuffer(unsafe { rt::malloc_sync(BYTES) }.call("cudaMalloc")?);
    let sent: Vec<u8> = (0..BYTES)
        .map(|i| (i.wrapping_mul(131) >> 3) as u8)
        .collect();
    // SAFETY: the buffer holds BYTES bytes, as many as `sent`.
    unsafe { rt::memcpy_htod_sync(buffer.0, &sent) }.call("cudaMemcpy (host to device)")?;
    let mut back = vec![0u8; BYTES];
    // SAFETY: as above, device to host.
    unsafe { rt::memcpy_dtoh_sync(&mut back, buffer.0) }.call("cudaMemcpy (device to host)")?;
    drop(buffer);
    match sent.iter().zip(&back).position(|(a, b)| a != b) {
        Some(at) => Err(Outcome::fail(format!(
            "{} MiB copied to device {ordinal} and back differ from byte {at} on (sent {}, got {})",
            BYTES >> 20,
            sent[at],
            back[at]
        ))),
        None => Ok(Outcome::pass(format!(
            "{} MiB copied to device {ordinal} and back unchanged",
            BYTES >> 20
        ))
        .detail("bytes", BYTES)),
    }
}
