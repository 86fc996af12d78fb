//! Device memory for the GPU checks, through the driver API (cudarc's `result` layer): a buffer
//! freed when dropped, filled from and read back into host slices. The driver's own errors are
//! described here too, with NVIDIA's meaning and fix where `compat` knows the code.

use super::outcome::{debug_name, Call, LibraryError, Outcome};
use cudarc::driver::result::{self as cu, DriverError};
use cudarc::driver::sys::CUdeviceptr;
use std::marker::PhantomData;

impl LibraryError for DriverError {
    fn code(&self) -> i64 {
        self.0 as i64
    }

    fn name(&self) -> String {
        match self.error_name() {
            Ok(name) => name.to_string_lossy().into_owned(),
            Err(_) => debug_name(&self.0),
        }
    }

    fn text(&self) -> Option<String> {
        let text = self
            .error_string()
            .ok()
            .map(|t| t.to_string_lossy().into_owned());
        let fix = crate::compat::driver_error(self.0 as i32).map(|e| e.fix);
        match (text, fix) {
            (Some(text), Some(fix)) => Some(format!("{text}; {fix}")),
            (text, fix) => text.or(fix.map(str::to_owned)),
        }
    }
}

/// Element types that can be copied to and from the device byte for byte.
///
/// # Safety
/// Implementors must be plain data: no padding, no pointers, every bit pattern valid.
pub unsafe trait Plain: Copy + Default {}

// SAFETY: plain numbers, every bit pattern valid.
unsafe impl Plain for f32 {}
// SAFETY: as above.
unsafe impl Plain for u8 {}
// SAFETY: as above.
unsafe impl Plain for u32 {}
// SAFETY: 16-bit floats; every bit pattern is a value.
unsafe impl Plain for half::f16 {}
// SAFETY: as above.
unsafe impl Plain for half::bf16 {}
// SAFETY: two f32 (a complex number), no padding.
unsafe impl Plain for [f32; 2] {}

/// `len` elements of `T` in device memory, in the current context; freed on drop.
pub struct DeviceBuffer<T: Plain> {
    ptr: CUdeviceptr,
    len: usize,
    _element: PhantomData<T>,
}

impl<T: Plain> DeviceBuffer<T> {
    /// Uninitialised memory for `len` elements (`cuMemAlloc`).
    pub fn alloc(len: usize) -> Result<DeviceBuffer<T>, Outcome> {
        let bytes = (len * std::mem::size_of::<T>()).max(1);
        // SAFETY: a plain allocation in the current context; freed in Drop.
        let ptr = unsafe { cu::malloc_sync(bytes) }.call("cuMemAlloc")?;
        Ok(DeviceBuffer {
            ptr,
            len,
            _element: PhantomData,
        })
    }

    /// A copy of `data` on the device (`cuMemAlloc`, `cuMemcpyHtoD`), complete when this
    /// returns. From pageable memory `cuMemcpyHtoD` may return once `data` is staged, before
    /// the DMA has landed, and work on a non-blocking stream does not wait for the null stream
    /// the copy went to; so the context is synchronised after it, and a kernel on any stream
    /// reads what was uploaded.
    pub fn from_slice(data: &[T]) -> Result<DeviceBuffer<T>, Outcome> {
        let buffer = DeviceBuffer::alloc(data.len())?;
        // SAFETY: the buffer holds exactly data.len() elements of T.
        unsafe { cu::memcpy_htod_sync(buffer.ptr, data) }.call("cuMemcpyHtoD")?;
        synchronize()?;
        Ok(buffer)
    }

    /// Every element, copied back (`cuMemcpyDtoH`, which waits for the work before it).
    pub fn read(&self) -> Result<Vec<T>, Outcome> {
        let mut out = vec![T::default(); self.len];
        // SAFETY: `out` holds exactly self.len elements of T, the size of the allocation.
        unsafe { cu::memcpy_dtoh_sync(&mut out, self.ptr) }.call("cuMemcpyDtoH")?;
        Ok(out)
    }

    /// Its size in bytes.
    pub fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The device address.
    pub fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The device address as a pointer, for libraries that take `T *` (cuBLAS, cuDNN, ...).
    pub fn as_ptr(&self) -> *mut T {
        self.ptr as usize as *mut T
    }
}

impl<T: Plain> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemAlloc in alloc and freed only here. An error (a context
        // already broken by a failed kernel) leaves nothing to do.
        let _ = unsafe { cu::free_sync(self.ptr) };
    }
}

/// Waits for all work in the current context (`cuCtxSynchronize`): where a kernel's own failure
/// (an illegal address, a trap) shows up.
pub fn synchronize() -> Result<(), Outcome> {
    cu::ctx::synchronize().call("cuCtxSynchronize")
}
