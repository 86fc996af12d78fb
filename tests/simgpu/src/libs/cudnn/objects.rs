//! The objects cuDNN hands out as opaque pointers (handles and tensor, filter and convolution
//! descriptors), kept in a table keyed by the pointer's value: a pointer this library never
//! gave out, or one already destroyed, or one of another kind, is `CUDNN_STATUS_BAD_PARAM`,
//! never a dereference.

use super::conv::Mode;
use super::status::Failure;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A `cudnnHandle_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handle {
    /// The stream its work goes on (`cudnnSetStream`; NULL: the null stream), as an address.
    pub stream: usize,
    /// The device memory the handle keeps for itself, freed with it.
    pub scratch: u64,
}

/// A set `cudnnTensorDescriptor_t` (4-D).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tensor {
    /// `cudnnDataType_t`.
    pub data_type: i32,
    /// `[n, c, h, w]`.
    pub dims: [usize; 4],
    /// Elements between neighbours along each of `dims`.
    pub strides: [usize; 4],
}

/// A set `cudnnFilterDescriptor_t` (4-D, KCRS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Filter {
    /// `cudnnDataType_t`.
    pub data_type: i32,
    /// `[k, c, r, s]`.
    pub dims: [usize; 4],
}

/// A set `cudnnConvolutionDescriptor_t` (2-D); pairs are (height, width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Convolution {
    /// Zero padding.
    pub pad: [usize; 2],
    /// `u`, `v`.
    pub stride: [usize; 2],
    /// Between filter taps.
    pub dilation: [usize; 2],
    /// `cudnnConvolutionMode_t`.
    pub mode: Mode,
    /// `cudnnDataType_t` of the arithmetic.
    pub compute_type: i32,
    /// `cudnnMathType_t`.
    pub math_type: i32,
}

/// Every kind of object; descriptors are `None` until set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Object {
    Handle(Handle),
    Tensor(Option<Tensor>),
    Filter(Option<Filter>),
    Convolution(Option<Convolution>),
}

/// The live objects, by address, and the next address to give out.
struct Table {
    objects: BTreeMap<usize, Object>,
    next: usize,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    objects: BTreeMap::new(),
    // Far from any host allocation; 256 apart, as distinct as real pointers.
    next: 0xcd00_0000_0000,
});

fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps `object`; its opaque pointer.
pub fn insert(object: Object) -> *mut c_void {
    let mut table = table();
    let key = table.next;
    table.next += 0x100;
    table.objects.insert(key, object);
    key as *mut c_void
}

/// The object at `ptr` as `pick` reads it, or `BAD_PARAM` naming `what` was expected.
pub fn read<T>(
    ptr: *mut c_void,
    what: &str,
    pick: impl FnOnce(&Object) -> Option<T>,
) -> Result<T, Failure> {
    let table = table();
    table
        .objects
        .get(&(ptr as usize))
        .and_then(pick)
        .ok_or_else(|| Failure::bad(format!("{ptr:?} is not a {what}")))
}

/// Replaces the object at `ptr` with `object`, if it is of the same kind.
pub fn set(ptr: *mut c_void, what: &str, object: Object) -> Result<(), Failure> {
    let mut table = table();
    match table.objects.get_mut(&(ptr as usize)) {
        Some(slot) if std::mem::discriminant(slot) == std::mem::discriminant(&object) => {
            *slot = object;
            Ok(())
        }
        _ => Err(Failure::bad(format!("{ptr:?} is not a {what}"))),
    }
}

/// Removes the object at `ptr`, if `is_kind` says it is of the kind being destroyed.
pub fn remove(
    ptr: *mut c_void,
    what: &str,
    is_kind: impl FnOnce(&Object) -> bool,
) -> Result<Object, Failure> {
    let mut table = table();
    let key = ptr as usize;
    match table.objects.get(&key).copied() {
        Some(object) if is_kind(&object) => {
            table.objects.remove(&key);
            Ok(object)
        }
        _ => Err(Failure::bad(format!("{ptr:?} is not a {what}"))),
    }
}
