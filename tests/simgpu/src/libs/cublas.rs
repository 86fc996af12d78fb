//! The simulated cuBLAS (`libcublas.so.13`, cuBLAS 13.1.0): handles (a stream, a math mode and
//! a workspace of device memory each), the version calls, status names, and the GEMMs
//! stackbench runs: `cublasSgemm_v2` and `cublasGemmEx` in FP32, TF32, FP16 and BF16 with FP32
//! accumulation, computed by [`gemm`]'s CPU reference on the handle's stream.
//!
//! Every GEMM call is recorded in the trace ([`crate::trace`]) with its arguments as given.

pub mod gemm;
pub mod status;
pub mod types;

use super::cudart;
use crate::driver;
use crate::trace::Value;
use gemm::{Gemm, Operand, Scales};
use status::{code, Status};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use types::{operation_name, transposed, Compute, Element, Math};

/// `CUBLAS_VER_MAJOR`, `_MINOR`, `_PATCH` and `_BUILD`: the release `libcublas.so.13.1.0.3`.
pub const VERSION: (c_int, c_int, c_int, c_int) = (13, 1, 0, 3);

/// `CUBLAS_VERSION`: major x 10000 + minor x 100 + patch.
pub const API_VERSION: c_int = VERSION.0 * 10000 + VERSION.1 * 100 + VERSION.2;

/// The device memory a handle takes at creation, for its GEMMs' workspace.
pub const WORKSPACE_BYTES: usize = 4 << 20;

/// One `cublasHandle_t`.
struct Handle {
    /// The stream its work goes to (NULL: the legacy default stream).
    stream: usize,
    math: Math,
    /// Its workspace, freed with the handle.
    workspace: u64,
}

/// The live handles, by the value handed out.
static HANDLES: Mutex<Option<HashMap<usize, Handle>>> = Mutex::new(None);

/// The last handle value handed out (values are never reused).
static LAST: AtomicUsize = AtomicUsize::new(0);

/// The handles, locked.
fn handles() -> MutexGuard<'static, Option<HashMap<usize, Handle>>> {
    HANDLES.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A new handle value: distinct from every other library's and never NULL.
pub fn new_handle(tag: usize) -> usize {
    tag << 32 | (LAST.fetch_add(1, Ordering::Relaxed) + 1)
}

/// Runs one cuBLAS call: a panic is `CUBLAS_STATUS_INTERNAL_ERROR`, never an unwind across the
/// C ABI.
pub fn guarded(body: impl FnOnce() -> Result<(), Status>) -> c_int {
    code(catch_unwind(AssertUnwindSafe(body)).unwrap_or(Err(Status::INTERNAL_ERROR)))
}

/// Writes `value` to `out`, which must not be null (`CUBLAS_STATUS_INVALID_VALUE`).
///
/// # Safety
/// `out` must be null or valid for a write of `T`.
pub unsafe fn put<T>(out: *mut T, value: T) -> Result<(), Status> {
    if out.is_null() {
        return Err(Status::INVALID_VALUE);
    }
    // SAFETY: non-null, writable by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// Reads `*p`, which must not be null.
///
/// # Safety
/// `p` must be null or valid for a read of `T`.
pub unsafe fn get<T: Copy>(p: *const T) -> Result<T, Status> {
    if p.is_null() {
        return Err(Status::INVALID_VALUE);
    }
    // SAFETY: non-null, readable by the caller's contract.
    Ok(unsafe { p.read_unaligned() })
}

/// Runs `f` on the live handle `handle`; an unknown one is `CUBLAS_STATUS_NOT_INITIALIZED`.
fn with<T>(handle: *mut c_void, f: impl FnOnce(&mut Handle) -> T) -> Result<T, Status> {
    let mut all = handles();
    let found = all
        .as_mut()
        .and_then(|h| h.get_mut(&(handle as usize)))
        .ok_or(Status::NOT_INITIALIZED)?;
    Ok(f(found))
}

/// `cublasCreate_v2`: a handle on the current context (the runtime's primary context when there
/// is none), with a workspace of device memory; an allocation that fails is
/// `CUBLAS_STATUS_ALLOC_FAILED`.
///
/// # Safety
/// `handle` must be null or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn cublasCreate_v2(handle: *mut *mut c_void) -> c_int {
    guarded(|| {
        if handle.is_null() {
            return Err(Status::INVALID_VALUE);
        }
        cudart::context().map_err(|_| Status::NOT_INITIALIZED)?;
        let mut workspace = 0u64;
        // SAFETY: a valid u64 to write.
        if unsafe { driver::cuMemAlloc_v2(&mut workspace, WORKSPACE_BYTES) } != 0 {
            return Err(Status::ALLOC_FAILED);
        }
        let value = new_handle(0xcb1a5);
        handles().get_or_insert_with(HashMap::new).insert(
            value,
            Handle {
                stream: 0,
                math: Math::default(),
                workspace,
            },
        );
        // SAFETY: the caller's contract; checked non-null above.
        unsafe { put(handle, value as *mut c_void) }
    })
}

/// `cublasDestroy_v2`: frees the handle's workspace.
#[no_mangle]
pub extern "C" fn cublasDestroy_v2(handle: *mut c_void) -> c_int {
    guarded(|| {
        let gone = handles()
            .as_mut()
            .and_then(|h| h.remove(&(handle as usize)))
            .ok_or(Status::NOT_INITIALIZED)?;
        // The handle is gone whatever the driver says of its workspace.
        let _ = driver::cuMemFree_v2(gone.workspace);
        Ok(())
    })
}

/// `cublasSetStream_v2`: the stream the handle's work goes to from now on.
#[no_mangle]
pub extern "C" fn cublasSetStream_v2(handle: *mut c_void, stream: *mut c_void) -> c_int {
    guarded(|| with(handle, |h| h.stream = stream as usize))
}

/// `cublasGetStream_v2`.
///
/// # Safety
/// `stream` must be null or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn cublasGetStream_v2(
    handle: *mut c_void,
    stream: *mut *mut c_void,
) -> c_int {
    guarded(|| {
        let found = with(handle, |h| h.stream)?;
        // SAFETY: the caller's contract.
        unsafe { put(stream, found as *mut c_void) }
    })
}

/// `cublasSetMathMode`.
#[no_mangle]
pub extern "C" fn cublasSetMathMode(handle: *mut c_void, mode: c_int) -> c_int {
    guarded(|| {
        let math = Math::of(mode)?;
        with(handle, |h| h.math = math)
    })
}

/// `cublasGetMathMode`.
///
/// # Safety
/// `mode` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cublasGetMathMode(handle: *mut c_void, mode: *mut c_int) -> c_int {
    guarded(|| {
        let found = with(handle, |h| h.math.raw)?;
        // SAFETY: the caller's contract.
        unsafe { put(mode, found) }
    })
}

/// `cublasSetWorkspace_v2`: the reference needs no workspace; the handle must be live.
#[no_mangle]
pub extern "C" fn cublasSetWorkspace_v2(
    handle: *mut c_void,
    _workspace: *mut c_void,
    _bytes: usize,
) -> c_int {
    guarded(|| with(handle, |_| ()))
}

/// `cublasGetVersion_v2`: `CUBLAS_VERSION`, 130100.
///
/// # Safety
/// `version` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cublasGetVersion_v2(_handle: *mut c_void, version: *mut c_int) -> c_int {
    // SAFETY: the caller's contract.
    guarded(|| unsafe { put(version, API_VERSION) })
}

/// `cublasGetProperty`: `MAJOR_VERSION` (0) 13, `MINOR_VERSION` (1) 1, `PATCH_LEVEL` (2) 0.
///
/// # Safety
/// `value` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cublasGetProperty(kind: c_int, value: *mut c_int) -> c_int {
    guarded(|| {
        let found = match kind {
            0 => VERSION.0,
            1 => VERSION.1,
            2 => VERSION.2,
            _ => return Err(Status::INVALID_VALUE),
        };
        // SAFETY: the caller's contract.
        unsafe { put(value, found) }
    })
}

/// `cublasGetCudartVersion`: the runtime it was built with, CUDA 13.0.
#[no_mangle]
pub extern "C" fn cublasGetCudartVersion() -> usize {
    cudart::RUNTIME_VERSION as usize
}

/// `cublasGetStatusName`: `"CUBLAS_STATUS_INVALID_VALUE"` for 7.
#[no_mangle]
pub extern "C" fn cublasGetStatusName(status: c_int) -> *const c_char {
    Status(status).texts().0.as_ptr().cast()
}

/// `cublasGetStatusString`: the status's description.
#[no_mangle]
pub extern "C" fn cublasGetStatusString(status: c_int) -> *const c_char {
    Status(status).texts().1.as_ptr().cast()
}

/// The arguments of a cuBLAS GEMM call, as given.
struct Call {
    transa: c_int,
    transb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: f32,
    beta: f32,
    a: (u64, Element, c_int),
    b: (u64, Element, c_int),
    c: (u64, Element, c_int),
}

impl Call {
    /// The trace's fields for it, its compute type given.
    fn fields(&self, compute: &str, math: Option<Math>) -> Vec<(&'static str, Value)> {
        let mut fields = vec![
            ("m", self.m.into()),
            ("n", self.n.into()),
            ("k", self.k.into()),
            ("lda", self.a.2.into()),
            ("ldb", self.b.2.into()),
            ("ldc", self.c.2.into()),
            ("transa", operation_name(self.transa).into()),
            ("transb", operation_name(self.transb).into()),
            ("atype", self.a.1.name().into()),
            ("btype", self.b.1.name().into()),
            ("ctype", self.c.1.name().into()),
            ("compute_type", compute.into()),
            ("alpha", self.alpha.into()),
            ("beta", self.beta.into()),
        ];
        if let Some(math) = math {
            fields.push(("math_mode", math.raw.into()));
        }
        fields
    }

    /// The GEMM, validated, with `compute` under the handle's math mode.
    fn gemm(&self, compute: Compute, math: Math) -> Result<Gemm, Status> {
        let (transa, transb) = (transposed(self.transa)?, transposed(self.transb)?);
        let ld = |l: c_int| i64::from(l);
        let (m, n, k) = gemm::dimensions(
            transa,
            transb,
            self.m.into(),
            self.n.into(),
            self.k.into(),
            ld(self.a.2),
            ld(self.b.2),
            ld(self.c.2),
        )?;
        supported(self.a.1, self.b.1, self.c.1, compute)?;
        let operand = |(address, element, ld): (u64, Element, c_int)| Operand {
            address,
            element,
            ld: ld as usize,
        };
        Ok(Gemm {
            transa,
            transb,
            m,
            n,
            k,
            alpha: self.alpha,
            beta: self.beta,
            a: operand(self.a),
            b: operand(self.b),
            c: operand(self.c),
            d: operand(self.c),
            rounding: compute.rounding(math),
            scales: Scales::default(),
        })
    }
}

/// Whether cuBLAS has a GEMM of these formats with FP32 accumulation: FP32 inputs with an FP32
/// output under any FP32 compute type; FP16 or BF16 inputs with an output of their own format
/// or FP32 under `CUBLAS_COMPUTE_32F(_PEDANTIC)`. Else `CUBLAS_STATUS_NOT_SUPPORTED`.
pub fn supported(a: Element, b: Element, c: Element, compute: Compute) -> Result<(), Status> {
    let plain = matches!(compute, Compute::F32 | Compute::F32Pedantic);
    let ok = match (a, b, c) {
        (Element::F32, Element::F32, Element::F32) => true,
        (Element::F16, Element::F16, Element::F16 | Element::F32) => plain,
        (Element::Bf16, Element::Bf16, Element::Bf16 | Element::F32) => plain,
        _ => false,
    };
    ok.then_some(()).ok_or(Status::NOT_SUPPORTED)
}

/// Validates `call` on `handle` under `compute` and puts it on the handle's stream; records it
/// in the trace as `name`.
fn run(name: &str, handle: *mut c_void, call: &Call, compute: Compute, sgemm: bool) -> c_int {
    let mut math = None;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let (stream, mode) = with(handle, |h| (h.stream, h.math))?;
        math = Some(mode);
        let gemm = call.gemm(compute, mode)?;
        gemm::submit(stream as *mut c_void, gemm)
    }))
    .unwrap_or(Err(Status::INTERNAL_ERROR));
    let compute_name = match (sgemm, math) {
        (true, Some(m)) if m.tf32 => "CUBLAS_COMPUTE_32F (TF32 math mode)",
        _ => compute.name(),
    };
    gemm::record("cublas", name, call.fields(compute_name, math), outcome);
    code(outcome)
}

/// `cublasSgemm_v2`: FP32 `C = alpha op(A) op(B) + beta C` (TF32 under
/// `CUBLAS_TF32_TENSOR_OP_MATH`), alpha and beta on the host.
///
/// # Safety
/// `alpha` and `beta` must be null or valid for an f32 read; the matrices are device addresses
/// the driver checks.
#[no_mangle]
pub unsafe extern "C" fn cublasSgemm_v2(
    handle: *mut c_void,
    transa: c_int,
    transb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    b: *const f32,
    ldb: c_int,
    beta: *const f32,
    c: *mut f32,
    ldc: c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    let scalars = unsafe { get(alpha).and_then(|al| get(beta).map(|be| (al, be))) };
    let Ok((alpha, beta)) = scalars else {
        return Status::INVALID_VALUE.0;
    };
    let call = Call {
        transa,
        transb,
        m,
        n,
        k,
        alpha,
        beta,
        a: (a as u64, Element::F32, lda),
        b: (b as u64, Element::F32, ldb),
        c: (c as u64, Element::F32, ldc),
    };
    run("cublasSgemm_v2", handle, &call, Compute::F32, true)
}

/// `cublasGemmEx` with an FP32 compute type (alpha and beta f32 on the host).
///
/// # Safety
/// `alpha` and `beta` must be null or valid for an f32 read; the matrices are device addresses
/// the driver checks.
#[no_mangle]
pub unsafe extern "C" fn cublasGemmEx(
    handle: *mut c_void,
    transa: c_int,
    transb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    a: *const c_void,
    atype: c_int,
    lda: c_int,
    b: *const c_void,
    btype: c_int,
    ldb: c_int,
    beta: *const c_void,
    c: *mut c_void,
    ctype: c_int,
    ldc: c_int,
    compute_type: c_int,
    _algo: c_int,
) -> c_int {
    let parsed = (|| {
        let compute = Compute::of(compute_type)?;
        let formats = (
            Element::of(atype)?,
            Element::of(btype)?,
            Element::of(ctype)?,
        );
        // SAFETY: the caller's contract: FP32 compute types take f32 scalars.
        let scalars = unsafe { (get(alpha.cast::<f32>())?, get(beta.cast::<f32>())?) };
        Ok((compute, formats, scalars))
    })();
    let (compute, (ae, be, ce), (alpha, beta)) = match parsed {
        Ok(parsed) => parsed,
        Err(status) => {
            let fields = vec![
                ("m", m.into()),
                ("n", n.into()),
                ("k", k.into()),
                ("compute_type", compute_type.into()),
            ];
            gemm::record("cublas", "cublasGemmEx", fields, Err(status));
            return status.0;
        }
    };
    let call = Call {
        transa,
        transb,
        m,
        n,
        k,
        alpha,
        beta,
        a: (a as u64, ae, lda),
        b: (b as u64, be, ldb),
        c: (c as u64, ce, ldc),
    };
    run("cublasGemmEx", handle, &call, compute, false)
}
