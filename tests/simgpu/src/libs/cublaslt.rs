//! The simulated cuBLASLt (`libcublasLt.so.13`, of cuBLAS 13.1.0): handles, matmul
//! descriptors (compute type, scale type, transposes, FP8 scale pointers), matrix layouts
//! (format, rows, columns, leading dimension; column-major, one batch), preferences (the
//! workspace limit), the heuristic (one algorithm, which needs no workspace) and
//! `cublasLtMatmul`, computed by cuBLAS's GEMM reference ([`super::cublas::gemm`]) on the
//! stream the call names.
//!
//! FP8 (E4M3) matmuls take what cuBLASLt takes on Ada and Hopper ([`fp8`]), no more.
//!
//! Each object is an opaque value naming an entry of this module's table; a value of the wrong
//! kind, or one destroyed, is `CUBLAS_STATUS_INVALID_VALUE` (`CUBLAS_STATUS_NOT_INITIALIZED`
//! for a handle).

use super::cublas::gemm::{self, Gemm, Operand, Scales};
use super::cublas::status::Status;
use super::cublas::types::{operation_name, transposed, Compute, Element, Math};
use super::cublas::{self, get, guarded, new_handle, put};
use crate::driver::library;
use crate::trace::Value;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A matmul descriptor.
#[derive(Debug, Clone, Copy)]
struct Desc {
    /// The raw `cublasComputeType_t`.
    compute: c_int,
    /// The raw `cudaDataType` of alpha and beta.
    scale: c_int,
    transa: c_int,
    transb: c_int,
    /// The FP8 scale pointers (`A_SCALE_POINTER` to `AMAX_D_POINTER`).
    scales: Scales,
}

/// A matrix layout.
#[derive(Debug, Clone, Copy)]
struct Layout {
    /// The raw `cudaDataType`.
    element: c_int,
    rows: u64,
    cols: u64,
    ld: i64,
    /// `CUBLASLT_ORDER_COL` (0) is the one order supported.
    order: c_int,
    batch: c_int,
}

/// One object of the library.
#[derive(Debug, Clone, Copy)]
enum Object {
    Handle,
    Desc(Desc),
    Layout(Layout),
    /// A preference: its workspace limit, bytes.
    Pref(u64),
}

/// Every live object, by the value handed out.
static OBJECTS: Mutex<Option<HashMap<usize, Object>>> = Mutex::new(None);

/// The objects, locked.
fn objects() -> MutexGuard<'static, Option<HashMap<usize, Object>>> {
    OBJECTS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Registers `object` and writes its value to `out`.
///
/// # Safety
/// `out` must be null or valid for a pointer write.
unsafe fn create(out: *mut *mut c_void, object: Object) -> Result<(), Status> {
    if out.is_null() {
        return Err(Status::INVALID_VALUE);
    }
    let value = new_handle(0xcb17);
    objects()
        .get_or_insert_with(HashMap::new)
        .insert(value, object);
    // SAFETY: the caller's contract; checked non-null above.
    unsafe { put(out, value as *mut c_void) }
}

/// The object `value` names.
fn find(value: *mut c_void) -> Option<Object> {
    objects().as_ref()?.get(&(value as usize)).copied()
}

/// Removes the object `value` names, if it is what `kind` accepts.
fn destroy(value: *mut c_void, kind: fn(&Object) -> bool) -> Result<(), Status> {
    let mut all = objects();
    let table = all.as_mut().ok_or(Status::INVALID_VALUE)?;
    match table.get(&(value as usize)) {
        Some(o) if kind(o) => {
            table.remove(&(value as usize));
            Ok(())
        }
        _ => Err(Status::INVALID_VALUE),
    }
}

/// Changes the object `value` names with `f`.
fn update(value: *mut c_void, f: impl FnOnce(&mut Object) -> Result<(), Status>) -> c_int {
    guarded(|| {
        let mut all = objects();
        let object = all
            .as_mut()
            .and_then(|t| t.get_mut(&(value as usize)))
            .ok_or(Status::INVALID_VALUE)?;
        f(object)
    })
}

/// A 4-byte attribute value.
///
/// # Safety
/// `buf` must be null or valid for `size` bytes of reads.
unsafe fn int_attribute(buf: *const c_void, size: usize) -> Result<c_int, Status> {
    if size != 4 {
        return Err(Status::INVALID_VALUE);
    }
    // SAFETY: the caller's contract; `get` refuses NULL.
    unsafe { get(buf.cast::<c_int>()) }
}

/// An 8-byte attribute value.
///
/// # Safety
/// `buf` must be null or valid for `size` bytes of reads.
unsafe fn u64_attribute(buf: *const c_void, size: usize) -> Result<u64, Status> {
    if size != 8 {
        return Err(Status::INVALID_VALUE);
    }
    // SAFETY: the caller's contract; `get` refuses NULL.
    unsafe { get(buf.cast::<u64>()) }
}

/// `cublasLtCreate`: a handle on the current context (the runtime's when there is none).
///
/// # Safety
/// `handle` must be null or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn cublasLtCreate(handle: *mut *mut c_void) -> c_int {
    guarded(|| {
        super::cudart::context().map_err(|_| Status::NOT_INITIALIZED)?;
        // SAFETY: the caller's contract.
        unsafe { create(handle, Object::Handle) }
    })
}

/// `cublasLtDestroy`.
#[no_mangle]
pub extern "C" fn cublasLtDestroy(handle: *mut c_void) -> c_int {
    guarded(|| {
        destroy(handle, |o| matches!(o, Object::Handle)).map_err(|_| Status::NOT_INITIALIZED)
    })
}

/// `cublasLtGetVersion`: 130100, as cuBLAS's.
#[no_mangle]
pub extern "C" fn cublasLtGetVersion() -> usize {
    cublas::API_VERSION as usize
}

/// `cublasLtGetCudartVersion`: CUDA 13.0.
#[no_mangle]
pub extern "C" fn cublasLtGetCudartVersion() -> usize {
    super::cudart::RUNTIME_VERSION as usize
}

/// `cublasLtGetProperty`: as `cublasGetProperty`.
///
/// # Safety
/// `value` must be null or valid for an int write.
#[no_mangle]
pub unsafe extern "C" fn cublasLtGetProperty(kind: c_int, value: *mut c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { cublas::cublasGetProperty(kind, value) }
}

/// `cublasLtGetStatusName`.
#[no_mangle]
pub extern "C" fn cublasLtGetStatusName(status: c_int) -> *const c_char {
    cublas::cublasGetStatusName(status)
}

/// `cublasLtGetStatusString`.
#[no_mangle]
pub extern "C" fn cublasLtGetStatusString(status: c_int) -> *const c_char {
    cublas::cublasGetStatusString(status)
}

/// `cublasLtMatmulDescCreate`: no transposes until set.
///
/// # Safety
/// `desc` must be null or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulDescCreate(
    desc: *mut *mut c_void,
    compute: c_int,
    scale: c_int,
) -> c_int {
    guarded(|| {
        Compute::of(compute)?;
        let object = Object::Desc(Desc {
            compute,
            scale,
            transa: 0,
            transb: 0,
            scales: Scales::default(),
        });
        // SAFETY: the caller's contract.
        unsafe { create(desc, object) }
    })
}

/// `cublasLtMatmulDescDestroy`.
#[no_mangle]
pub extern "C" fn cublasLtMatmulDescDestroy(desc: *mut c_void) -> c_int {
    guarded(|| destroy(desc, |o| matches!(o, Object::Desc(_))))
}

/// `cublasLtMatmulDescSetAttribute`: `COMPUTE_TYPE` (0), `SCALE_TYPE` (1), `POINTER_MODE` (2,
/// host only), `TRANSA` (3), `TRANSB` (4), `EPILOGUE` (7, the default only), each an int; the
/// device pointers `A_SCALE_POINTER` (17), `B_SCALE_POINTER` (18), `C_SCALE_POINTER` (19),
/// `D_SCALE_POINTER` (20) and `AMAX_D_POINTER` (21), each 8 bytes (NULL: a scale of 1, no
/// amax); a value of the wrong size is `CUBLAS_STATUS_INVALID_VALUE`, other attributes
/// `CUBLAS_STATUS_NOT_SUPPORTED`.
///
/// # Safety
/// `buf` must be null or valid for `size` bytes of reads.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulDescSetAttribute(
    desc: *mut c_void,
    attribute: c_int,
    buf: *const c_void,
    size: usize,
) -> c_int {
    // SAFETY: the caller's contract.
    let (int, wide) = unsafe { (int_attribute(buf, size), u64_attribute(buf, size)) };
    update(desc, |object| {
        let Object::Desc(d) = object else {
            return Err(Status::INVALID_VALUE);
        };
        match attribute {
            0 => {
                Compute::of(int?)?;
                d.compute = int?;
            }
            1 => d.scale = int?,
            2 if int? == 0 => {}
            3 => {
                transposed(int?)?;
                d.transa = int?;
            }
            4 => {
                transposed(int?)?;
                d.transb = int?;
            }
            7 if int? == 1 => {}
            17 => d.scales.a = wide?,
            18 => d.scales.b = wide?,
            19 => d.scales.c = wide?,
            20 => d.scales.d = wide?,
            21 => d.scales.amax_d = wide?,
            _ => return Err(Status::NOT_SUPPORTED),
        }
        Ok(())
    })
}

/// `cublasLtMatrixLayoutCreate`: column-major, one batch.
///
/// # Safety
/// `layout` must be null or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatrixLayoutCreate(
    layout: *mut *mut c_void,
    element: c_int,
    rows: u64,
    cols: u64,
    ld: i64,
) -> c_int {
    guarded(|| {
        let object = Object::Layout(Layout {
            element,
            rows,
            cols,
            ld,
            order: 0,
            batch: 1,
        });
        // SAFETY: the caller's contract.
        unsafe { create(layout, object) }
    })
}

/// `cublasLtMatrixLayoutDestroy`.
#[no_mangle]
pub extern "C" fn cublasLtMatrixLayoutDestroy(layout: *mut c_void) -> c_int {
    guarded(|| destroy(layout, |o| matches!(o, Object::Layout(_))))
}

/// `cublasLtMatrixLayoutSetAttribute`: `TYPE` (0), `ORDER` (1), `ROWS` (2), `COLS` (3), `LD`
/// (4), `BATCH_COUNT` (5); others `CUBLAS_STATUS_NOT_SUPPORTED`.
///
/// # Safety
/// `buf` must be null or valid for `size` bytes of reads.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatrixLayoutSetAttribute(
    layout: *mut c_void,
    attribute: c_int,
    buf: *const c_void,
    size: usize,
) -> c_int {
    // SAFETY: the caller's contract.
    let (int, wide) = unsafe { (int_attribute(buf, size), u64_attribute(buf, size)) };
    update(layout, |object| {
        let Object::Layout(l) = object else {
            return Err(Status::INVALID_VALUE);
        };
        match attribute {
            0 => l.element = int?,
            1 => l.order = int?,
            2 => l.rows = wide?,
            3 => l.cols = wide?,
            4 => l.ld = wide? as i64,
            5 => l.batch = int?,
            _ => return Err(Status::NOT_SUPPORTED),
        }
        Ok(())
    })
}

/// `cublasLtMatmulPreferenceCreate`: no workspace allowed until set.
///
/// # Safety
/// `pref` must be null or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulPreferenceCreate(pref: *mut *mut c_void) -> c_int {
    // SAFETY: the caller's contract.
    guarded(|| unsafe { create(pref, Object::Pref(0)) })
}

/// `cublasLtMatmulPreferenceDestroy`.
#[no_mangle]
pub extern "C" fn cublasLtMatmulPreferenceDestroy(pref: *mut c_void) -> c_int {
    guarded(|| destroy(pref, |o| matches!(o, Object::Pref(_))))
}

/// `cublasLtMatmulPreferenceSetAttribute`: `MAX_WORKSPACE_BYTES` (1, a `uint64_t`); the search
/// mode (0) and alignments (5 to 8) are accepted and change nothing here.
///
/// # Safety
/// `buf` must be null or valid for `size` bytes of reads.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulPreferenceSetAttribute(
    pref: *mut c_void,
    attribute: c_int,
    buf: *const c_void,
    size: usize,
) -> c_int {
    // SAFETY: the caller's contract.
    let (int, wide) = unsafe { (int_attribute(buf, size), u64_attribute(buf, size)) };
    update(pref, |object| {
        let Object::Pref(limit) = object else {
            return Err(Status::INVALID_VALUE);
        };
        match attribute {
            1 => *limit = wide?,
            0 | 5..=8 => {
                int?;
            }
            _ => return Err(Status::NOT_SUPPORTED),
        }
        Ok(())
    })
}

/// `cublasLtMatmulAlgo_t`: 64 opaque bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Algo {
    pub data: [u64; 8],
}

/// `cublasLtMatmulHeuristicResult_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HeuristicResult {
    pub algo: Algo,
    pub workspace_size: usize,
    pub state: c_int,
    pub waves_count: f32,
    pub reserved: [c_int; 4],
}

/// The one algorithm's id, in its first word.
const ALGO_ID: u64 = 0x5143_6765_6d6d;

/// The first compute capability with FP8 tensor cores (Ada; Hopper is 9.0).
const FP8_MINIMUM: (i32, i32) = (8, 9);

/// Whether cuBLASLt has an FP8 matmul of `desc`'s transposes and types over layouts of these
/// `(format, leading dimension)`s (`A`, `B`, `C`, `D`), as it has on Ada and Hopper: the
/// current device of compute capability 8.9 or newer; `A` and `B` E4M3; "TN" (`op(A)`
/// transposed, `op(B)` not); `CUBLAS_COMPUTE_32F` exactly, with f32 scales; `C` and `D` both
/// BF16, FP16 or FP32, or a BF16 or FP16 `C` with an E4M3 `D`; every leading dimension a
/// multiple of 16 bytes; and the profile's `no_fp8_kernels` fault off. Else
/// `CUBLAS_STATUS_NOT_SUPPORTED`, what cuBLASLt's heuristic answers when no kernel fits, a
/// device without FP8 included (its documentation names no other status for that,
/// `CUBLAS_STATUS_ARCH_MISMATCH` neither).
fn fp8(
    desc: &Desc,
    (transa, transb): (bool, bool),
    layouts: [(Element, i64); 4],
) -> Result<(), Status> {
    let (_, device) = library::current().map_err(Status::from_driver)?;
    let [(a, _), (b, _), (c, _), (d, _)] = layouts;
    let outputs = matches!(
        (c, d),
        (Element::Bf16, Element::Bf16 | Element::E4m3)
            | (Element::F16, Element::F16 | Element::E4m3)
            | (Element::F32, Element::F32)
    );
    let aligned = |(element, ld): (Element, i64)| ld * element.size() as i64 % 16 == 0;
    let kernels =
        (crate::state::sim().profile.as_ref()).is_ok_and(|profile| !profile.faults.no_fp8_kernels);
    let ok = device.compute_capability() >= FP8_MINIMUM
        && kernels
        && (a, b) == (Element::E4m3, Element::E4m3)
        && transa
        && !transb
        && Compute::of(desc.compute) == Ok(Compute::F32)
        && Element::of(desc.scale) == Ok(Element::F32)
        && outputs
        && layouts.into_iter().all(aligned);
    ok.then_some(()).ok_or(Status::NOT_SUPPORTED)
}

/// The matmul `desc` describes over layouts `a`, `b`, `c`, `d` (object values), validated:
/// the shapes must agree (`A` is `m x k`, or `k x m` transposed, `B` `k x n` or `n x k`, `C`
/// and `D` `m x n`), every layout column-major with one batch and `ld >= rows`, and the
/// formats an FP8 matmul ([`fp8`]) or else a cuBLAS GEMM of the compute type (alpha and beta
/// f32, `C` as `D`), which takes no scale pointer (`CUBLAS_STATUS_INVALID_VALUE`, as cuBLASLt
/// answers a scale set for types it does not scale).
fn plan(desc: *mut c_void, layouts: [*mut c_void; 4]) -> Result<(Desc, Gemm), Status> {
    let Some(Object::Desc(desc)) = find(desc) else {
        return Err(Status::INVALID_VALUE);
    };
    let layout = |v: *mut c_void| match find(v) {
        Some(Object::Layout(l)) if l.order == 0 && l.batch == 1 => Ok(l),
        Some(Object::Layout(_)) => Err(Status::NOT_SUPPORTED),
        _ => Err(Status::INVALID_VALUE),
    };
    let [a, b, c, d] = [
        layout(layouts[0])?,
        layout(layouts[1])?,
        layout(layouts[2])?,
        layout(layouts[3])?,
    ];
    let compute = Compute::of(desc.compute)?;
    let (transa, transb) = (transposed(desc.transa)?, transposed(desc.transb)?);
    let (m, n) = (d.rows, d.cols);
    let k = if transa { a.rows } else { a.cols };
    let a_shape = if transa { (k, m) } else { (m, k) };
    let b_shape = if transb { (n, k) } else { (k, n) };
    if (a.rows, a.cols) != a_shape || (b.rows, b.cols) != b_shape || (c.rows, c.cols) != (m, n) {
        return Err(Status::INVALID_VALUE);
    }
    let wide = |v: u64| i64::try_from(v).map_err(|_| Status::INVALID_VALUE);
    let (m, n, k) = gemm::dimensions(
        transa,
        transb,
        wide(m)?,
        wide(n)?,
        wide(k)?,
        a.ld,
        b.ld,
        c.ld.min(d.ld),
    )?;
    let (ae, be, ce, de) = (
        Element::of(a.element)?,
        Element::of(b.element)?,
        Element::of(c.element)?,
        Element::of(d.element)?,
    );
    if ae == Element::E4m3 || be == Element::E4m3 {
        let layouts = [(ae, a.ld), (be, b.ld), (ce, c.ld), (de, d.ld)];
        fp8(&desc, (transa, transb), layouts)?;
    } else if desc.scales != Scales::default() {
        return Err(Status::INVALID_VALUE);
    } else if ce != de || Element::of(desc.scale)? != Element::F32 {
        return Err(Status::NOT_SUPPORTED);
    } else {
        cublas::supported(ae, be, ce, compute)?;
    }
    let operand = |element: Element, ld: i64| Operand {
        address: 0,
        element,
        ld: ld as usize,
    };
    let gemm = Gemm {
        transa,
        transb,
        m,
        n,
        k,
        alpha: 1.0,
        beta: 0.0,
        a: operand(ae, a.ld),
        b: operand(be, b.ld),
        c: operand(ce, c.ld),
        d: operand(de, d.ld),
        rounding: compute.rounding(Math::default()),
        scales: desc.scales,
    };
    Ok((desc, gemm))
}

/// `cublasLtMatmulAlgoGetHeuristic`: one algorithm for a matmul this library can run (it
/// needs no workspace), none (`CUBLAS_STATUS_NOT_SUPPORTED`) for one it cannot.
///
/// # Safety
/// `results` must be null or valid for `requested` results; `count` null or valid for an int
/// write.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmulAlgoGetHeuristic(
    handle: *mut c_void,
    desc: *mut c_void,
    a: *mut c_void,
    b: *mut c_void,
    c: *mut c_void,
    d: *mut c_void,
    pref: *mut c_void,
    requested: c_int,
    results: *mut HeuristicResult,
    count: *mut c_int,
) -> c_int {
    guarded(|| {
        if !matches!(find(handle), Some(Object::Handle)) {
            return Err(Status::NOT_INITIALIZED);
        }
        if !matches!(find(pref), Some(Object::Pref(_))) || requested < 1 {
            return Err(Status::INVALID_VALUE);
        }
        match plan(desc, [a, b, c, d]) {
            Ok(_) => {
                let mut data = [0u64; 8];
                data[0] = ALGO_ID;
                let result = HeuristicResult {
                    algo: Algo { data },
                    workspace_size: 0,
                    state: 0,
                    waves_count: 1.0,
                    reserved: [0; 4],
                };
                // SAFETY: the caller's contract; `put` refuses NULL.
                unsafe { put(results, result) }?;
                // SAFETY: as above.
                unsafe { put(count, 1) }
            }
            Err(Status::NOT_SUPPORTED) => {
                // SAFETY: as above.
                unsafe { put(count, 0) }?;
                Err(Status::NOT_SUPPORTED)
            }
            Err(status) => Err(status),
        }
    })
}

/// An FP8 matmul's addresses as its kernels need them: the matrices, the scales and amax 16-byte
/// aligned, and `D` out of place (`C` NULL or elsewhere); else `CUBLAS_STATUS_NOT_SUPPORTED`
/// (no kernel takes them, as no kernel takes a leading dimension out of alignment). cuBLASLt
/// 13.1 on an H200 answered that from `cublasLtMatmul`, after its heuristic had answered, to an
/// FP8 matmul done in place with a scale 4 bytes into its buffer; which of the two it refused
/// is not known, so this one refuses either.
fn fp8_addresses(gemm: &Gemm) -> Result<(), Status> {
    let matrices = [gemm.a, gemm.b, gemm.c, gemm.d]
        .iter()
        .all(|o| o.address % 16 == 0);
    let scales = gemm.scales.given().all(|p| p % 16 == 0);
    let out_of_place = gemm.c.address != gemm.d.address;
    (matrices && scales && out_of_place)
        .then_some(())
        .ok_or(Status::NOT_SUPPORTED)
}

/// `cublasLtMatmul`: `D = alpha op(A) op(B) + beta C` on `stream`, alpha and beta f32 on the
/// host (an FP8 matmul's with its scales, see [`gemm`]); `algo` NULL or the heuristic's.
///
/// # Safety
/// `alpha` and `beta` must be null or valid for an f32 read, `algo` null or valid for a read;
/// the matrices are device addresses the driver checks.
#[no_mangle]
pub unsafe extern "C" fn cublasLtMatmul(
    handle: *mut c_void,
    desc: *mut c_void,
    alpha: *const c_void,
    a: *const c_void,
    a_layout: *mut c_void,
    b: *const c_void,
    b_layout: *mut c_void,
    beta: *const c_void,
    c: *const c_void,
    c_layout: *mut c_void,
    d: *mut c_void,
    d_layout: *mut c_void,
    algo: *const Algo,
    _workspace: *mut c_void,
    _workspace_bytes: usize,
    stream: *mut c_void,
) -> c_int {
    let mut fields: Vec<(&str, Value)> = Vec::new();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        if !matches!(find(handle), Some(Object::Handle)) {
            return Err(Status::NOT_INITIALIZED);
        }
        // SAFETY: the caller's contract.
        let scalars = unsafe { (get(alpha.cast::<f32>())?, get(beta.cast::<f32>())?) };
        // SAFETY: as above.
        if !algo.is_null() && unsafe { algo.read_unaligned() }.data[0] != ALGO_ID {
            return Err(Status::INVALID_VALUE);
        }
        let (desc, mut gemm) = plan(desc, [a_layout, b_layout, c_layout, d_layout])?;
        fields = vec![
            ("m", gemm.m.into()),
            ("n", gemm.n.into()),
            ("k", gemm.k.into()),
            ("lda", gemm.a.ld.into()),
            ("ldb", gemm.b.ld.into()),
            ("ldc", gemm.c.ld.into()),
            ("ldd", gemm.d.ld.into()),
            ("transa", operation_name(desc.transa).into()),
            ("transb", operation_name(desc.transb).into()),
            ("atype", gemm.a.element.name().into()),
            ("btype", gemm.b.element.name().into()),
            ("ctype", gemm.c.element.name().into()),
            ("dtype", gemm.d.element.name().into()),
            ("compute_type", Compute::of(desc.compute)?.name().into()),
        ];
        (gemm.alpha, gemm.beta) = scalars;
        gemm.a.address = a as u64;
        gemm.b.address = b as u64;
        gemm.c.address = c as u64;
        gemm.d.address = d as u64;
        if gemm.a.element == Element::E4m3 {
            fp8_addresses(&gemm)?;
        }
        gemm::submit(stream, gemm)
    }))
    .unwrap_or(Err(Status::INTERNAL_ERROR));
    gemm::record("cublasLt", "cublasLtMatmul", fields, outcome);
    outcome.map_or_else(|s| s.0, |()| 0)
}
