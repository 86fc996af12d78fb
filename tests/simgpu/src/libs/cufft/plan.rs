//! cuFFT plans: `cufftPlan1d`/`2d`/`3d`/`Many`, `cufftSetStream`, `cufftDestroy` and the version
//! calls. A plan is an `int` handle into a table; creating one needs a current CUDA context
//! (none: `CUFFT_SETUP_FAILED`) and allocates its work area in device memory, as cuFFT does by
//! default (none to be had: `CUFFT_ALLOC_FAILED`, so `out_of_memory_above_mib` reaches it).

use super::status::{self, guarded, put, Result};
use crate::driver::{self, library};
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// cuFFT 12.0.0's `CUFFT_VERSION`: `major * 1000 + minor * 100 + patch`.
pub const VERSION: c_int = 12000;

/// `cufftType`: the transforms simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `CUFFT_C2C` (0x29): `cufftComplex` (two floats) to `cufftComplex`.
    C2C,
    /// `CUFFT_Z2Z` (0x69): `cufftDoubleComplex` to `cufftDoubleComplex`.
    Z2Z,
}

impl Kind {
    /// A `cufftType` argument: C2C or Z2Z; the real transforms are `CUFFT_NOT_SUPPORTED`, any
    /// other value `CUFFT_INVALID_TYPE`.
    fn from_c(value: c_int) -> std::result::Result<Kind, Result> {
        match value {
            0x29 => Ok(Kind::C2C),
            0x69 => Ok(Kind::Z2Z),
            0x2a | 0x2c | 0x6a | 0x6c => Err(status::NOT_SUPPORTED),
            _ => Err(status::INVALID_TYPE),
        }
    }

    /// Bytes of one complex element.
    pub fn element_bytes(self) -> usize {
        match self {
            Kind::C2C => 8,
            Kind::Z2Z => 16,
        }
    }
}

/// Where one side's elements are: element `(b, i0, i1, ...)` is at
/// `b * dist + ((i0 * embed[1] + i1) * embed[2] + ...) * stride`, cuFFT's advanced layout (the
/// basic layout is `embed = n`, `stride = 1`, `dist = prod(n)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The storage's dimensions (`inembed`/`onembed`; the first is not used).
    pub embed: Vec<usize>,
    /// Elements between neighbours of the last dimension.
    pub stride: usize,
    /// Elements between neighbouring batch elements.
    pub dist: usize,
}

impl Layout {
    /// The basic layout of dimensions `n`.
    fn basic(n: &[usize]) -> Layout {
        Layout {
            embed: n.to_vec(),
            stride: 1,
            dist: n.iter().product(),
        }
    }

    /// The element offsets of batch element `b` for dimensions `n`, in row-major order.
    pub fn offsets(&self, n: &[usize], b: usize) -> Vec<usize> {
        let mut out = vec![0usize];
        for (axis, &len) in n.iter().enumerate() {
            let pitch = self.embed.get(axis).copied().unwrap_or(len);
            out = out
                .iter()
                .flat_map(|&base| (0..len).map(move |i| base * pitch + i))
                .collect();
        }
        let base = b * self.dist;
        out.into_iter().map(|o| base + o * self.stride).collect()
    }
}

/// A plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The transform's data.
    pub kind: Kind,
    /// The transform's dimensions, slowest first.
    pub n: Vec<usize>,
    /// Transforms per execution.
    pub batch: usize,
    /// Where the input elements are.
    pub input: Layout,
    /// Where the output elements go.
    pub output: Layout,
    /// The stream its work goes on (`cufftSetStream`), as an address.
    pub stream: usize,
    /// Its work area in device memory.
    pub work: u64,
}

/// The live plans and the next handle.
struct Plans {
    plans: BTreeMap<c_int, Plan>,
    next: c_int,
}

static PLANS: Mutex<Plans> = Mutex::new(Plans {
    plans: BTreeMap::new(),
    next: 1,
});

fn plans() -> MutexGuard<'static, Plans> {
    PLANS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The plan `handle`, or `CUFFT_INVALID_PLAN`.
pub fn get(handle: c_int) -> std::result::Result<Plan, Result> {
    plans()
        .plans
        .get(&handle)
        .cloned()
        .ok_or(status::INVALID_PLAN)
}

/// Positive sizes, else `CUFFT_INVALID_SIZE`.
fn sizes(values: &[c_int]) -> std::result::Result<Vec<usize>, Result> {
    values
        .iter()
        .map(|&v| {
            usize::try_from(v)
                .ok()
                .filter(|&v| v > 0)
                .ok_or(status::INVALID_SIZE)
        })
        .collect()
}

/// Makes a plan: checks the context, allocates the work area (one copy of the data), keeps it.
fn make(
    kind: Kind,
    n: Vec<usize>,
    batch: usize,
    input: Layout,
    output: Layout,
) -> std::result::Result<c_int, Result> {
    library::current().map_err(|_| status::SETUP_FAILED)?;
    let bytes = n.iter().product::<usize>() * batch * kind.element_bytes();
    let mut work = 0u64;
    // SAFETY: a valid out-pointer.
    if unsafe { driver::cuMemAlloc_v2(&mut work, bytes) } != 0 {
        return Err(status::ALLOC_FAILED);
    }
    let mut table = plans();
    let handle = table.next;
    table.next += 1;
    table.plans.insert(
        handle,
        Plan {
            kind,
            n,
            batch,
            input,
            output,
            stream: 0,
            work,
        },
    );
    Ok(handle)
}

/// A plan of `n` in the basic layout, its handle written to `out`.
///
/// # Safety
/// `out`, when not null, must be valid for writing one `int`.
unsafe fn basic(out: *mut c_int, n: &[c_int], kind: c_int, batch: c_int) -> Result {
    guarded(|| {
        if out.is_null() {
            return Err(status::INVALID_VALUE);
        }
        let kind = Kind::from_c(kind)?;
        let n = sizes(n)?;
        let batch = sizes(&[batch])?[0];
        let handle = make(kind, n.clone(), batch, Layout::basic(&n), Layout::basic(&n))?;
        // SAFETY: by the caller's contract.
        unsafe { put(out, handle) }
    })
}

/// `cufftPlan1d(cufftHandle *plan, int nx, cufftType type, int batch)`.
///
/// # Safety
/// `plan` must be valid for writing one `int`.
#[no_mangle]
pub unsafe extern "C" fn cufftPlan1d(
    plan: *mut c_int,
    nx: c_int,
    kind: c_int,
    batch: c_int,
) -> Result {
    // SAFETY: by the caller's contract.
    unsafe { basic(plan, &[nx], kind, batch) }
}

/// `cufftPlan2d(cufftHandle *plan, int nx, int ny, cufftType type)`.
///
/// # Safety
/// `plan` must be valid for writing one `int`.
#[no_mangle]
pub unsafe extern "C" fn cufftPlan2d(
    plan: *mut c_int,
    nx: c_int,
    ny: c_int,
    kind: c_int,
) -> Result {
    // SAFETY: by the caller's contract.
    unsafe { basic(plan, &[nx, ny], kind, 1) }
}

/// `cufftPlan3d(cufftHandle *plan, int nx, int ny, int nz, cufftType type)`.
///
/// # Safety
/// `plan` must be valid for writing one `int`.
#[no_mangle]
pub unsafe extern "C" fn cufftPlan3d(
    plan: *mut c_int,
    nx: c_int,
    ny: c_int,
    nz: c_int,
    kind: c_int,
) -> Result {
    // SAFETY: by the caller's contract.
    unsafe { basic(plan, &[nx, ny, nz], kind, 1) }
}

/// One side's layout from `cufftPlanMany`'s arguments: the basic one when `embed` is NULL
/// (cuFFT then ignores stride and dist).
///
/// # Safety
/// `embed`, when not null, must hold `rank` ints.
unsafe fn layout(
    n: &[usize],
    embed: *const c_int,
    stride: c_int,
    dist: c_int,
) -> std::result::Result<Layout, Result> {
    if embed.is_null() {
        return Ok(Layout::basic(n));
    }
    // SAFETY: `rank` ints by the caller's contract.
    let embed = sizes(unsafe { std::slice::from_raw_parts(embed, n.len()) })?;
    if embed.iter().zip(n).skip(1).any(|(e, n)| e < n) {
        return Err(status::INVALID_VALUE);
    }
    Ok(Layout {
        embed,
        stride: sizes(&[stride])?[0],
        dist: sizes(&[dist])?[0],
    })
}

/// `cufftPlanMany(cufftHandle *plan, int rank, int *n, int *inembed, int istride, int idist,
/// int *onembed, int ostride, int odist, cufftType type, int batch)`.
///
/// # Safety
/// `plan` must be valid for one `int`; `n` (and `inembed`, `onembed` when not NULL) must hold
/// `rank` ints.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cufftPlanMany(
    plan: *mut c_int,
    rank: c_int,
    n: *const c_int,
    inembed: *const c_int,
    istride: c_int,
    idist: c_int,
    onembed: *const c_int,
    ostride: c_int,
    odist: c_int,
    kind: c_int,
    batch: c_int,
) -> Result {
    guarded(|| {
        if plan.is_null() || n.is_null() {
            return Err(status::INVALID_VALUE);
        }
        let rank = usize::try_from(rank)
            .ok()
            .filter(|r| (1..=3).contains(r))
            .ok_or(status::INVALID_SIZE)?;
        let kind = Kind::from_c(kind)?;
        // SAFETY: `rank` ints by the caller's contract.
        let dims = sizes(unsafe { std::slice::from_raw_parts(n, rank) })?;
        let batch = sizes(&[batch])?[0];
        // SAFETY: by the caller's contract.
        let (input, output) = unsafe {
            (
                layout(&dims, inembed, istride, idist)?,
                layout(&dims, onembed, ostride, odist)?,
            )
        };
        let handle = make(kind, dims, batch, input, output)?;
        // SAFETY: by the caller's contract.
        unsafe { put(plan, handle) }
    })
}

/// `cufftSetStream(cufftHandle plan, cudaStream_t stream)`.
#[no_mangle]
pub extern "C" fn cufftSetStream(handle: c_int, stream: *mut c_void) -> Result {
    guarded(|| {
        let mut table = plans();
        let plan = table.plans.get_mut(&handle).ok_or(status::INVALID_PLAN)?;
        plan.stream = stream as usize;
        Ok(())
    })
}

/// `cufftDestroy(cufftHandle plan)`: frees its work area.
#[no_mangle]
pub extern "C" fn cufftDestroy(handle: c_int) -> Result {
    guarded(|| {
        let plan = plans().plans.remove(&handle).ok_or(status::INVALID_PLAN)?;
        // The context may be gone already; the plan is destroyed regardless.
        driver::cuMemFree_v2(plan.work);
        Ok(())
    })
}

/// `cufftGetVersion(int *version)`.
///
/// # Safety
/// `version` must be valid for writing one `int`.
#[no_mangle]
pub unsafe extern "C" fn cufftGetVersion(version: *mut c_int) -> Result {
    // SAFETY: by the caller's contract.
    guarded(|| unsafe { put(version, VERSION) })
}

/// `cufftGetProperty(libraryPropertyType type, int *value)`: 12, 0, 0.
///
/// # Safety
/// `value` must be valid for writing one `int`.
#[no_mangle]
pub unsafe extern "C" fn cufftGetProperty(kind: c_int, value: *mut c_int) -> Result {
    guarded(|| {
        let answer = match kind {
            0 => VERSION / 1000,
            1 => VERSION / 100 % 10,
            2 => VERSION % 100,
            _ => return Err(status::INVALID_TYPE),
        };
        // SAFETY: by the caller's contract.
        unsafe { put(value, answer) }
    })
}
