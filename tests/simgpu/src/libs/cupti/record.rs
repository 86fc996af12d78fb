//! The kernel activity record CUDA 13.0's CUPTI writes, `CUpti_ActivityKernel10`, laid out as
//! `cupti_activity.h` declares it, and the walk over a buffer of records
//! (`cuptiActivityGetNextRecord`).
//!
//! `CUpti_ActivityKernel10` is `CUpti_ActivityKernel9` (CUDA 12.x) with `isDeviceLaunched` and
//! seven bytes of padding appended (cudarc's bindings of CUDA 13.0's header, bindgen'd from
//! NVIDIA's, declare exactly that). The fixtures hold CUDA 12.9's header, not 13.0's: the
//! layout test (`tests/libs_cupti.rs`) compiles the 12.9 header with `cc` and checks every
//! field's offset and size here against `CUpti_ActivityKernel9`, and the two appended fields
//! against Kernel9 followed by them. The header's `PACKED_ALIGNMENT` packs the fields and
//! aligns the record to 8; every field here sits at its natural alignment, so `repr(C)` gives
//! the same layout (216 bytes).

use std::ffi::{c_char, c_void};

/// `CUPTI_ACTIVITY_KIND_KERNEL`: kernels serialised, one record each.
pub const KIND_KERNEL: u32 = 3;
/// `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`.
pub const KIND_CONCURRENT_KERNEL: u32 = 10;

/// `CUpti_ActivityKernel10`, field for field (C names, so the layout test can name them).
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Debug, Clone, Copy)]
pub struct ActivityKernel10 {
    /// `CUPTI_ACTIVITY_KIND_KERNEL` or `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`.
    pub kind: u32,
    /// A union of two 4-bit cache configurations (requested, executed); 0: none preferred.
    pub cacheConfig: u8,
    pub sharedMemoryConfig: u8,
    pub registersPerThread: u16,
    pub partitionedGlobalCacheRequested: u32,
    pub partitionedGlobalCacheExecuted: u32,
    /// Start and end of the kernel's execution, ns (the model timeline).
    pub start: u64,
    pub end: u64,
    /// When the kernel's work was completed, ns.
    pub completed: u64,
    pub deviceId: u32,
    pub contextId: u32,
    pub streamId: u32,
    pub gridX: i32,
    pub gridY: i32,
    pub gridZ: i32,
    pub blockX: i32,
    pub blockY: i32,
    pub blockZ: i32,
    pub staticSharedMemory: i32,
    pub dynamicSharedMemory: i32,
    pub localMemoryPerThread: u32,
    pub localMemoryTotal: u32,
    /// Ties the record to the API call that launched the kernel.
    pub correlationId: u32,
    pub gridId: i64,
    /// The kernel's name, NUL-terminated; alive as long as the process.
    pub name: *const c_char,
    pub reserved0: *mut c_void,
    pub queued: u64,
    pub submitted: u64,
    pub launchType: u8,
    pub isSharedMemoryCarveoutRequested: u8,
    pub sharedMemoryCarveoutRequested: u8,
    pub padding: u8,
    pub sharedMemoryExecuted: u32,
    pub graphNodeId: u64,
    pub shmemLimitConfig: u32,
    pub graphId: u32,
    pub pAccessPolicyWindow: *mut c_void,
    pub channelID: u32,
    pub channelType: u32,
    pub clusterX: u32,
    pub clusterY: u32,
    pub clusterZ: u32,
    pub clusterSchedulingPolicy: u32,
    pub localMemoryTotal_v2: u64,
    pub maxPotentialClusterSize: u32,
    pub maxActiveClusters: u32,
    /// Appended in CUDA 13.0 (Kernel10): launched from the device (dynamic parallelism).
    pub isDeviceLaunched: u8,
    pub padding3: [u8; 7],
}

/// Bytes of one kernel record in a buffer.
pub const KERNEL_BYTES: usize = std::mem::size_of::<ActivityKernel10>();

/// The record's size, asserted where the layout is defined: 216 bytes, as NVIDIA's Kernel9
/// (208, from the 12.9 header) plus the eight appended.
const _: () = assert!(KERNEL_BYTES == 216);

/// Records start at multiples of this in a buffer (`ACTIVITY_RECORD_ALIGNMENT`).
pub const ALIGNMENT: usize = 8;

/// Writes `record` at `at`.
///
/// # Safety
/// `at` must be valid for writing [`KERNEL_BYTES`] bytes.
pub unsafe fn write(at: *mut u8, record: &ActivityKernel10) {
    // SAFETY: by the caller's contract; no alignment is assumed.
    unsafe { at.cast::<ActivityKernel10>().write_unaligned(*record) };
}

/// The size of the record whose `kind` is that at `at`, if it is one this CUPTI writes.
///
/// # Safety
/// `at` must be valid for reading four bytes.
unsafe fn size_at(at: *const u8) -> Option<usize> {
    // SAFETY: by the caller's contract.
    let kind = unsafe { at.cast::<u32>().read_unaligned() };
    matches!(kind, KIND_KERNEL | KIND_CONCURRENT_KERNEL).then_some(KERNEL_BYTES)
}

/// `cuptiActivityGetNextRecord`: the record after `*record` in the first `valid` bytes of
/// `buffer` (the first record when `*record` is null). `MAX_LIMIT_REACHED` at the end;
/// `INVALID_KIND` for a record of a kind this CUPTI never writes, or one cut short.
///
/// # Safety
/// `buffer` must hold `valid` readable bytes, and `*record`, when not null, must be a record
/// this function returned for the same buffer.
pub unsafe fn next(
    buffer: *const u8,
    valid: usize,
    record: *mut u8,
) -> Result<*mut u8, super::result::Error> {
    use super::result::Error;
    let offset = if record.is_null() {
        0
    } else {
        let at = (record as usize)
            .checked_sub(buffer as usize)
            .filter(|at| *at + 4 <= valid)
            .ok_or(Error::INVALID_PARAMETER)?;
        // SAFETY: the previous record lies inside the buffer's valid bytes.
        let size = unsafe { size_at(buffer.add(at)) }.ok_or(Error::INVALID_KIND)?;
        (at + size).next_multiple_of(ALIGNMENT)
    };
    if offset + 4 > valid {
        return Err(Error::MAX_LIMIT_REACHED);
    }
    // SAFETY: four bytes at `offset` lie inside the valid bytes.
    let size = unsafe { size_at(buffer.add(offset)) }.ok_or(Error::INVALID_KIND)?;
    if offset + size > valid {
        return Err(Error::INVALID_KIND);
    }
    Ok(buffer.wrapping_add(offset).cast_mut())
}
