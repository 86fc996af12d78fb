//! The part of NCCL's C API stackbench calls (nccl.h of NCCL 2.x, unchanged since 2.4), looked
//! up in the combination's own `libnccl.so.2`. Every call answers `ncclResult_t`; 0 is success.

use crate::probe::dl::Library;
use crate::probe::sys::NameOf;
use cudarc::driver::sys::CUstream;
use std::ffi::{c_int, c_void, CStr};

/// `ncclComm_t`.
pub type Comm = *mut c_void;

type CommInitAll =
    unsafe extern "C" fn(comms: *mut Comm, ndev: c_int, devlist: *const c_int) -> c_int;
/// `ncclUniqueId`: `NCCL_UNIQUE_ID_BYTES` (128) bytes, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct UniqueId {
    pub internal: [u8; 128],
}
type GetUniqueId = unsafe extern "C" fn(id: *mut UniqueId) -> c_int;
type CommInitRank =
    unsafe extern "C" fn(comm: *mut Comm, nranks: c_int, id: UniqueId, rank: c_int) -> c_int;
type CommDestroy = unsafe extern "C" fn(comm: Comm) -> c_int;
type Group = unsafe extern "C" fn() -> c_int;
/// `ncclAllReduce` and `ncclReduceScatter` (whose count is the count received).
type Reduce = unsafe extern "C" fn(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    datatype: c_int,
    op: c_int,
    comm: Comm,
    stream: CUstream,
) -> c_int;
type Broadcast = unsafe extern "C" fn(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    datatype: c_int,
    root: c_int,
    comm: Comm,
    stream: CUstream,
) -> c_int;
type AllGather = unsafe extern "C" fn(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    datatype: c_int,
    comm: Comm,
    stream: CUstream,
) -> c_int;

/// `ncclFloat32`.
pub const FLOAT32: c_int = 7;
/// `ncclSum`.
pub const SUM: c_int = 0;

/// NCCL's functions, bound once. The library is never unloaded (see [`Library`]), so the
/// pointers stay valid for the process.
#[derive(Clone, Copy)]
pub struct Nccl {
    error_string: Option<NameOf>,
    pub comm_init_all: CommInitAll,
    /// `ncclGetUniqueId` and `ncclCommInitRank`: one communicator per process, across nodes.
    pub get_unique_id: Option<GetUniqueId>,
    pub comm_init_rank: Option<CommInitRank>,
    pub comm_destroy: CommDestroy,
    pub group_start: Group,
    pub group_end: Group,
    pub all_reduce: Reduce,
    pub reduce_scatter: Reduce,
    pub broadcast: Broadcast,
    pub all_gather: AllGather,
}

impl Nccl {
    /// Binds every function, or names the first one `library` lacks.
    pub fn bind(library: &Library) -> Result<Nccl, String> {
        /// # Safety
        /// `F` must be the C signature NCCL documents for `name`.
        unsafe fn function<F: Copy>(library: &Library, name: &CStr) -> Result<F, String> {
            // SAFETY: the caller names the function's documented signature.
            unsafe { library.function(name) }.ok_or_else(|| {
                format!(
                    "libnccl does not export {}: not an NCCL 2 library",
                    name.to_string_lossy()
                )
            })
        }
        // SAFETY: each type above is nccl.h's signature for the function named.
        unsafe {
            Ok(Nccl {
                error_string: library.function(c"ncclGetErrorString"),
                comm_init_all: function(library, c"ncclCommInitAll")?,
                get_unique_id: library.function(c"ncclGetUniqueId"),
                comm_init_rank: library.function(c"ncclCommInitRank"),
                comm_destroy: function(library, c"ncclCommDestroy")?,
                group_start: function(library, c"ncclGroupStart")?,
                group_end: function(library, c"ncclGroupEnd")?,
                all_reduce: function(library, c"ncclAllReduce")?,
                reduce_scatter: function(library, c"ncclReduceScatter")?,
                broadcast: function(library, c"ncclBroadcast")?,
                all_gather: function(library, c"ncclAllGather")?,
            })
        }
    }

    /// `Ok` for `ncclSuccess`, else the call's name with NCCL's own text for the result.
    pub fn check(&self, call: &str, result: c_int) -> Result<(), String> {
        if result == 0 {
            return Ok(());
        }
        let text = self
            .error_string
            // SAFETY: ncclGetErrorString returns a static string (or NULL) for any code.
            .map(|f| unsafe { f(result) })
            .filter(|text| !text.is_null())
            // SAFETY: not NULL: a NUL-terminated static string.
            .map(|text| {
                unsafe { CStr::from_ptr(text) }
                    .to_string_lossy()
                    .into_owned()
            })
            .unwrap_or_else(|| "no text from ncclGetErrorString".to_owned());
        Err(format!("{call} returned {result} ({text})"))
    }
}
