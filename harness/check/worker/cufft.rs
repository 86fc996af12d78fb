//! The cuFFT check: a 64-point complex-to-complex forward FFT of random data, verified against a
//! DFT computed on the CPU in f64 with the FP32 tolerance.
//!
//! Calls, through a small own `sys` layer looked up with `dlsym` (statuses read as `int`):
//! `cufftPlan1d`, `cufftExecC2C`, `cufftDestroy`. Their C signatures are the same in cuFFT 10
//! (CUDA 11), 11 (CUDA 12) and 12 (CUDA 13), as are `CUFFT_C2C` (0x29) and `CUFFT_FORWARD` (-1).
//! cudarc's `cufft` binding is not used: its CUDA 12.9 `cufftResult` enum knows codes 0-16,
//! while cuFFT 12 returns 17-20 (`CUFFT_MISSING_DEPENDENCY`, `CUFFT_NVRTC_FAILURE`,
//! `CUFFT_NVJITLINK_FAILURE`, `CUFFT_NVSHMEM_FAILURE`) and dropped 10, 12 and 15; holding a code
//! the enum lacks would be undefined behaviour. Here any code is a number with a name if known.

use super::device::{synchronize, DeviceBuffer};
use super::outcome::{verify, Call, Checked, Finish, LibraryError, Outcome};
use super::session::Session;
use super::symbols::{find, missing};
use crate::check::protocol::Component;
use crate::kernels;
use crate::probe::dl::Library;
use crate::tolerance::Precision;
use std::ffi::{c_int, c_void, CStr};

/// Raw C signatures of the cuFFT functions this check calls.
mod sys {
    use std::ffi::{c_int, c_void};

    /// `cufftResult`, read as its `int`.
    pub type Status = c_int;
    /// `cufftHandle`: a plan, an `int`.
    pub type Handle = c_int;

    /// `CUFFT_SUCCESS`.
    pub const SUCCESS: Status = 0;
    /// `CUFFT_C2C` (a `cufftType`, passed as `int`): single-precision complex to complex.
    pub const C2C: c_int = 0x29;
    /// `CUFFT_FORWARD`: the exponent's sign, `e^(-2 pi i k n / N)`.
    pub const FORWARD: c_int = -1;

    /// `cufftResult cufftPlan1d(cufftHandle *plan, int nx, cufftType type, int batch)`.
    ///
    /// # Safety
    /// `plan` must be valid for writing one `int`; needs a current CUDA context.
    pub type Plan1d =
        unsafe extern "C" fn(plan: *mut Handle, nx: c_int, kind: c_int, batch: c_int) -> Status;

    /// `cufftResult cufftExecC2C(cufftHandle plan, cufftComplex *idata, cufftComplex *odata,
    /// int direction)`.
    ///
    /// # Safety
    /// Both pointers must be device memory holding the plan's number of complex elements.
    pub type ExecC2C = unsafe extern "C" fn(
        plan: Handle,
        input: *mut c_void,
        output: *mut c_void,
        direction: c_int,
    ) -> Status;

    /// `cufftResult cufftDestroy(cufftHandle plan)`.
    ///
    /// # Safety
    /// `plan` must be a live plan, destroyed once.
    pub type Destroy = unsafe extern "C" fn(plan: Handle) -> Status;
}

/// Points of the transform.
const POINTS: usize = 64;

/// A cuFFT status other than success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CufftError(sys::Status);

impl LibraryError for CufftError {
    fn code(&self) -> i64 {
        self.0.into()
    }

    fn name(&self) -> String {
        match status_name(self.0) {
            Some(name) => name.to_owned(),
            None => "unknown cuFFT status".to_owned(),
        }
    }

    fn text(&self) -> Option<String> {
        meaning(self.0).map(str::to_owned)
    }
}

/// The C name of a cuFFT status: codes 0-16 of cuFFT 10 and 11 (CUDA 11 and 12; 10, 12 and 15
/// are gone from cuFFT 12) and 17-20, new in cuFFT 12 (CUDA 13).
fn status_name(code: sys::Status) -> Option<&'static str> {
    const NAMES: [&str; 21] = [
        "CUFFT_SUCCESS",
        "CUFFT_INVALID_PLAN",
        "CUFFT_ALLOC_FAILED",
        "CUFFT_INVALID_TYPE",
        "CUFFT_INVALID_VALUE",
        "CUFFT_INTERNAL_ERROR",
        "CUFFT_EXEC_FAILED",
        "CUFFT_SETUP_FAILED",
        "CUFFT_INVALID_SIZE",
        "CUFFT_UNALIGNED_DATA",
        "CUFFT_INCOMPLETE_PARAMETER_LIST",
        "CUFFT_INVALID_DEVICE",
        "CUFFT_PARSE_ERROR",
        "CUFFT_NO_WORKSPACE",
        "CUFFT_NOT_IMPLEMENTED",
        "CUFFT_LICENSE_ERROR",
        "CUFFT_NOT_SUPPORTED",
        "CUFFT_MISSING_DEPENDENCY",
        "CUFFT_NVRTC_FAILURE",
        "CUFFT_NVJITLINK_FAILURE",
        "CUFFT_NVSHMEM_FAILURE",
    ];
    usize::try_from(code)
        .ok()
        .and_then(|i| NAMES.get(i).copied())
}

/// What a cuFFT status means, from NVIDIA's cuFFT documentation (`cufftResult`).
fn meaning(code: sys::Status) -> Option<&'static str> {
    Some(match code {
        1 => "cuFFT was passed an invalid plan handle",
        2 => "cuFFT failed to allocate GPU or CPU memory",
        4 => "an invalid pointer or parameter was passed",
        5 => "a driver or internal cuFFT error",
        6 => "cuFFT failed to execute the transform on the GPU",
        7 => "the cuFFT library failed to initialise: usually no usable GPU or CUDA runtime",
        8 => "an invalid transform size",
        11 => "the plan was executed on another GPU than it was created on",
        17 => "cuFFT could not find a library it needs at run time",
        18 => "NVRTC failed inside cuFFT",
        19 => "nvJitLink failed inside cuFFT",
        _ => return None,
    })
}

/// A status as a `Result`.
fn result(code: sys::Status) -> Result<(), CufftError> {
    if code == sys::SUCCESS {
        Ok(())
    } else {
        Err(CufftError(code))
    }
}

/// The cuFFT functions this check calls, looked up in the combination's library (never closed,
/// so the pointers stay valid).
#[derive(Clone, Copy)]
struct Api {
    plan_1d: sys::Plan1d,
    exec_c2c: sys::ExecC2C,
    destroy: sys::Destroy,
}

impl Api {
    /// Every function, or a failure naming the first one `lib` does not export.
    fn resolve(lib: &Library) -> Result<Api, Outcome> {
        Api::load(lib).map_err(|name| missing("libcufft", name, "not a cuFFT library"))
    }

    /// Looks every function up in `lib`; `Err` names the first one it does not export.
    fn load(lib: &Library) -> Result<Api, &'static CStr> {
        // SAFETY: each type in `sys` is the function's C signature from NVIDIA's cufft.h.
        unsafe {
            Ok(Api {
                plan_1d: find(lib, c"cufftPlan1d")?,
                exec_c2c: find(lib, c"cufftExecC2C")?,
                destroy: find(lib, c"cufftDestroy")?,
            })
        }
    }
}

/// `cufft.c2c`.
pub fn c2c(s: &mut Session) -> Checked {
    let api = Api::resolve(s.library(Component::Cufft).map_err(Outcome::fail)?)?;
    let input = signal();
    let device_input = DeviceBuffer::from_slice(&input)?;
    let device_output = DeviceBuffer::<[f32; 2]>::alloc(POINTS)?;
    let mut plan: sys::Handle = 0;
    // SAFETY: `plan` is a valid int to write; the device's primary context is current.
    result(unsafe { (api.plan_1d)(&mut plan, POINTS as c_int, sys::C2C, 1) })
        .call("cufftPlan1d")?;
    // SAFETY: both buffers hold POINTS complex floats, the plan's size, out of place.
    let executed = result(unsafe {
        (api.exec_c2c)(
            plan,
            device_input.as_ptr().cast::<c_void>(),
            device_output.as_ptr().cast::<c_void>(),
            sys::FORWARD,
        )
    })
    .call("cufftExecC2C")
    .and_then(|()| synchronize());
    // SAFETY: the plan created above, destroyed once, after its work completed (or failed).
    let destroyed = result(unsafe { (api.destroy)(plan) }).call("cufftDestroy");
    executed?;
    destroyed?;
    judge(&device_output.read()?, &input)
}

/// The transform's input: random complex numbers, real and imaginary parts in [-1, 1).
fn signal() -> Vec<[f32; 2]> {
    kernels::random_f32(2 * POINTS, 9)
        .chunks_exact(2)
        .map(|pair| [pair[0], pair[1]])
        .collect()
}

/// The forward DFT as cuFFT defines `CUFFT_FORWARD`, in f64, not normalised:
/// `X[k] = sum over n of x[n] e^(-2 pi i k n / N)`.
fn dft(x: &[[f64; 2]]) -> Vec<[f64; 2]> {
    let n = x.len();
    (0..n)
        .map(|k| {
            x.iter()
                .enumerate()
                .fold([0.0, 0.0], |[re, im], (j, [a, b])| {
                    // k * j reduced modulo n keeps the angle small, and so exact in f64.
                    let turn = ((k * j) % n) as f64 / n as f64;
                    let (sin, cos) = (-2.0 * std::f64::consts::PI * turn).sin_cos();
                    [re + a * cos - b * sin, im + a * sin + b * cos]
                })
        })
        .collect()
}

/// Complex numbers in f64.
fn widen(values: &[[f32; 2]]) -> Vec<[f64; 2]> {
    values
        .iter()
        .map(|[re, im]| [f64::from(*re), f64::from(*im)])
        .collect()
}

/// Real and imaginary parts, one after the other, in f64.
fn flatten<T: Copy + Into<f64>>(values: &[[T; 2]]) -> Vec<f64> {
    values
        .iter()
        .flat_map(|[re, im]| [(*re).into(), (*im).into()])
        .collect()
}

/// The verdict on cuFFT's `output` for `input`, against the CPU's DFT.
fn judge(output: &[[f32; 2]], input: &[[f32; 2]]) -> Checked {
    let want = flatten(&dft(&widen(input)));
    let what = format!("{}-point complex-to-complex forward FFT", input.len());
    verify(&what, &flatten(output), &want, Precision::F32)
        .finish(|o| o.detail("points", input.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::worker::fixtures::{fixture, DRIVER};
    use crate::schema::check::Status;
    use proptest::prelude::*;

    fn close(got: &[[f64; 2]], want: &[[f64; 2]]) {
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g[0] - w[0]).abs() < 1e-9 && (g[1] - w[1]).abs() < 1e-9,
                "element {i}: {g:?} != {w:?}"
            );
        }
    }

    #[test]
    fn an_impulse_has_a_flat_spectrum() {
        let mut x = vec![[0.0; 2]; 8];
        x[0] = [1.0, 0.0];
        close(&dft(&x), &[[1.0, 0.0]; 8]);
    }

    #[test]
    fn a_constant_has_only_a_zero_frequency() {
        let mut want = vec![[0.0; 2]; 16];
        want[0] = [16.0, 0.0];
        close(&dft(&[[1.0, 0.0]; 16]), &want);
    }

    #[test]
    fn a_tone_lands_in_its_bin_with_the_forward_sign() {
        // x[n] = e^(+2 pi i 3 n / 32): with the forward (negative) exponent all of it is in bin 3.
        let n = 32;
        let x: Vec<[f64; 2]> = (0..n)
            .map(|j| {
                let (s, c) = (2.0 * std::f64::consts::PI * 3.0 * j as f64 / n as f64).sin_cos();
                [c, s]
            })
            .collect();
        let mut want = vec![[0.0; 2]; n];
        want[3] = [n as f64, 0.0];
        close(&dft(&x), &want);
    }

    #[test]
    fn a_delayed_impulse_turns_the_phase() {
        // x[n] = delta(n - 1): X[k] = e^(-2 pi i k / N).
        let n = 4;
        let mut x = vec![[0.0; 2]; n];
        x[1] = [1.0, 0.0];
        close(
            &dft(&x),
            &[[1.0, 0.0], [0.0, -1.0], [-1.0, 0.0], [0.0, 1.0]],
        );
    }

    proptest! {
        #[test]
        fn parseval_holds(parts in prop::collection::vec(-1.0f64..1.0, 2..80)) {
            let x: Vec<[f64; 2]> = parts.chunks_exact(2).map(|p| [p[0], p[1]]).collect();
            let energy = |v: &[[f64; 2]]| v.iter().map(|[a, b]| a * a + b * b).sum::<f64>();
            let time = energy(&x);
            let frequency = energy(&dft(&x)) / x.len() as f64;
            prop_assert!((time - frequency).abs() <= 1e-9 * (1.0 + time));
        }

        #[test]
        fn the_dft_is_linear(
            parts in prop::collection::vec(-1.0f64..1.0, 32),
            scale in -4.0f64..4.0,
        ) {
            let (a, b) = parts.split_at(16);
            let pairs = |v: &[f64]| v.chunks_exact(2).map(|p| [p[0], p[1]]).collect::<Vec<_>>();
            let (a, b) = (pairs(a), pairs(b));
            let mixed: Vec<[f64; 2]> =
                a.iter().zip(&b).map(|(x, y)| [x[0] + scale * y[0], x[1] + scale * y[1]]).collect();
            let (fa, fb, fm) = (dft(&a), dft(&b), dft(&mixed));
            for i in 0..fm.len() {
                prop_assert!((fm[i][0] - (fa[i][0] + scale * fb[i][0])).abs() < 1e-9);
                prop_assert!((fm[i][1] - (fa[i][1] + scale * fb[i][1])).abs() < 1e-9);
            }
        }
    }

    /// The CPU's DFT of `input`, rounded to f32 as cuFFT would return it.
    fn rounded_dft(input: &[[f32; 2]]) -> Vec<[f32; 2]> {
        dft(&widen(input))
            .into_iter()
            .map(|[a, b]| [a as f32, b as f32])
            .collect()
    }

    #[test]
    fn a_right_transform_passes() {
        let input = signal();
        assert_eq!(input.len(), POINTS);
        let outcome = judge(&rounded_dft(&input), &input).unwrap();
        assert_eq!(outcome.status, Status::Pass);
        assert!(
            outcome
                .reason
                .starts_with("64-point complex-to-complex forward FFT matches the CPU: "),
            "{}",
            outcome.reason
        );
    }

    #[test]
    fn a_wrong_transform_fails() {
        let input = signal();
        // What CUFFT_INVERSE gives, X[N - k]: the classic sign mistake.
        let mut output = rounded_dft(&input);
        output[1..].reverse();
        let outcome = judge(&output, &input).unwrap_err();
        assert_eq!(outcome.status, Status::Fail);
        assert!(
            outcome.reason.contains("differs from the CPU: "),
            "{}",
            outcome.reason
        );
        // A NaN anywhere fails too.
        let mut output = rounded_dft(&input);
        output[5][1] = f32::NAN;
        assert_eq!(judge(&output, &input).unwrap_err().status, Status::Fail);
        // So does a short result.
        let short = judge(&rounded_dft(&input)[..10], &input).unwrap_err();
        assert_eq!(
            short.reason,
            "the result has 20 elements, the reference 128"
        );
    }

    #[test]
    fn a_library_that_is_not_cufft_is_named_as_such() {
        let driver = Library::open(&fixture(DRIVER).join("libcuda.so.1")).unwrap();
        let failure = Api::resolve(&driver).err().expect("libcuda is not cuFFT");
        assert_eq!(
            failure.reason,
            "libcufft does not export cufftPlan1d: not a cuFFT library"
        );
    }

    #[test]
    fn statuses_of_every_cufft_major_have_names() {
        assert_eq!(CufftError(7).describe(), "CUFFT_SETUP_FAILED (7): the cuFFT library failed to initialise: usually no usable GPU or CUDA runtime");
        assert_eq!(CufftError(17).name(), "CUFFT_MISSING_DEPENDENCY");
        assert_eq!(CufftError(20).describe(), "CUFFT_NVSHMEM_FAILURE (20)");
        assert_eq!(CufftError(21).describe(), "unknown cuFFT status (21)");
        assert_eq!(CufftError(-42).describe(), "unknown cuFFT status (-42)");
        assert_eq!(result(0), Ok(()));
        assert_eq!(
            result(3).call("cufftPlan1d").unwrap_err().reason,
            "cufftPlan1d: CUFFT_INVALID_TYPE (3)"
        );
    }
}
