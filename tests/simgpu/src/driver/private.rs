//! `cuGetExportTable`, the driver's undocumented tables of private entry points, which NVIDIA's
//! own libraries ask for by UUID. The simulator has none and says so. It must exist all the
//! same: NVRTC 12.9, when a `libcuda.so.1` is loaded in its process, initialises its compile
//! cache by calling `cuInit` and then this, and dereferences a null table if the symbol is
//! missing, where it handles a failed call ("[nvrtc cache] failed to get cuda export table").

use super::device::put;
use super::entry::call;
use super::errors::{CUresult, Code};
use std::ffi::c_void;

/// `cuGetExportTable`: no table for any UUID (`CUDA_ERROR_NOT_SUPPORTED`, the table NULL).
///
/// # Safety
/// `pp_export_table` must be null or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn cuGetExportTable(
    pp_export_table: *mut *const c_void,
    _export_table_id: *const [u8; 16],
) -> CUresult {
    call(|_| {
        // SAFETY: the caller's contract.
        unsafe { put(pp_export_table, std::ptr::null()) }?;
        Err(Code::NOT_SUPPORTED)
    })
}
