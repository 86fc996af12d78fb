//! The cuDNN checks: `cudnn.versions` (the CUDA major cuDNN was built for against the
//! combination's runtime), `cudnn.handle` (`cudnnCreate`) and `cudnn.conv_forward` (a small FP32
//! convolution verified against the CPU).
//!
//! cuDNN 8 and 9 both export the legacy convolution API used here, with the same signatures and
//! argument enum values but different status numberings (8: 0..14; 9: 1000s by category). The
//! steps are written once over [`api::Dnn`]; cuDNN 9.0-9.28 go through cudarc, whose enum is
//! exactly their numbering, and cuDNN 8 (or a cuDNN newer than that enum) through the own `sys`
//! layer, statuses read as `int`. The library's own `cudnnGetVersion` chooses. Every symbol is
//! looked up before the first call, so a missing one is a failure, never a cudarc panic.
//!
//! cuDNN 8 aborts the process when a sub-library or the cuBLAS it opens at run time cannot be
//! loaded; [`preload`] loads those first so that becomes a failure with the loader's message.

mod api;
mod backends;
mod preload;
mod reference;
mod status;
mod sys;

use super::device::{synchronize, DeviceBuffer};
use super::outcome::{verify, Call, Checked, Finish, Outcome};
use super::session::{not_installed, Session};
use super::symbols::missing;
use crate::catalog;
use crate::check::protocol::Component;
use crate::compat::CudaVersion;
use crate::kernels;
use crate::probe::{calls, decode, dl::Library};
use crate::resolve::SearchContext;
use crate::tolerance::Precision;
use api::{Descriptor, Dnn, Forward, Kind, Route};
use backends::{Cudarc, Own};
use reference::{dims, Geometry};
use status::Errors;
use std::ffi::c_int;
use std::path::{Path, PathBuf};
use sys::Raw;

/// The convolution: two 11x8 images of 3 channels, 6 filters of 5x4, padding 1, stride 1, no
/// dilation. Every dimension differs from every other (N, C, H, W, K, R, S; and the output's P
/// and Q), so a library or a call that mixes two of them up cannot pass by symmetry.
const GEOMETRY: Geometry = Geometry {
    n: 2,
    c: 3,
    h: 11,
    w: 8,
    k: 6,
    r: 5,
    s: 4,
    pad: 1,
    stride: 1,
    dilation: 1,
};

/// The first cuDNN with `CUDNN_FMA_MATH` (and TF32, which it rules out for FP32 data).
const FIRST_WITH_FMA_MATH: usize = 8000;

/// The handle `cudnn.handle` created, with the layer that created it, for `cudnn.conv_forward`.
struct Handle {
    /// The layer the calls go through.
    dnn: Box<dyn Dnn>,
    /// The `cudnnHandle_t`.
    raw: Raw,
    /// `cudnnGetVersion`.
    version: usize,
    /// The CUDA major cuDNN was built for (`cudnnGetCudartVersion`).
    cuda_major: Option<u32>,
    /// `libcudnn.so.N` as the combination has it: what loads cuDNN 8's sub-libraries.
    shim: PathBuf,
}

/// `cudnnGetVersion` and `cudnnGetCudartVersion` of `lib`.
fn identify(lib: &Library) -> Result<(usize, usize), Outcome> {
    let not_cudnn = |function| missing("libcudnn", function, "it is not a cuDNN library");
    let version = calls::cudnn_get_version(lib).ok_or_else(|| not_cudnn(c"cudnnGetVersion"))?;
    let cudart =
        calls::cudnn_get_cudart_version(lib).ok_or_else(|| not_cudnn(c"cudnnGetCudartVersion"))?;
    Ok((version, cudart))
}

/// cuDNN's version as people write it (`8.9.2`, `9.28.0`).
fn version_text(version: usize) -> String {
    decode::cudnn_version(version as i64)
}

/// Whether this is cuDNN 8, split into `*_infer`/`*_train` sub-libraries it loads on first use.
fn split_cudnn_8(version: usize) -> bool {
    (8000..9000).contains(&version)
}

/// The reason when cuDNN was built for another CUDA major than the combination's runtime.
fn mismatch(version: usize, cudart: usize, built_for: CudaVersion, runtime: CudaVersion) -> String {
    let text = version_text(version);
    let want = runtime.major;
    let package =
        catalog::pip_package("cudnn", want).unwrap_or_else(|| format!("nvidia-cudnn-cu{want}"));
    let fix = if version < 90_000 && want >= 13 {
        format!("cuDNN 8 has no build for CUDA {want}; install cuDNN 9 for CUDA {want} (pip install {package})")
    } else {
        format!("install the cuDNN build for CUDA {want} (pip install {package})")
    };
    format!(
        "cuDNN {text} was built for CUDA {} (cudnnGetCudartVersion {cudart}), this combination's runtime is CUDA {runtime}: {fix}",
        built_for.major
    )
}

/// `cudnn.versions`.
pub fn versions(s: &mut Session) -> Checked {
    let (version, cudart) = identify(s.library(Component::Cudnn).map_err(Outcome::fail)?)?;
    let text = version_text(version);
    let details = |o: Outcome| {
        o.detail("version", text.clone())
            .detail("cudart_version", cudart)
    };
    let Some(built_for) = u32::try_from(cudart).ok().and_then(CudaVersion::from_api) else {
        return Err(details(Outcome::fail(format!(
            "cuDNN {text}: cudnnGetCudartVersion answered {cudart}, not a CUDA version"
        ))));
    };
    let Some(runtime) = s.runtime else {
        return Ok(details(Outcome::skip(format!(
            "cuDNN {text} was built for CUDA {built_for}, but the combination's CUDA runtime version is unknown (cudart.load could not read it)"
        ))));
    };
    if built_for.major != runtime.major {
        return Err(details(Outcome::fail(mismatch(
            version, cudart, built_for, runtime,
        ))));
    }
    Ok(details(Outcome::pass(format!(
        "cuDNN {text} for CUDA {built_for}, runtime {runtime}"
    ))))
}

/// Loads cuDNN 8's sub-library `sub` and the cuBLAS it opens before `call` would, so a missing
/// one is this failure rather than cuDNN's `abort()`; the details list what was loaded.
fn preload_cudnn_8(
    shim: &Path,
    sub: &str,
    cuda_major: Option<u32>,
    version: usize,
    call: &str,
) -> Result<Vec<String>, Outcome> {
    let ctx = SearchContext::host();
    let files = preload::plan(shim, sub, cuda_major, &ctx)
        .and_then(|files| preload::load(&files).map(|()| files));
    match files {
        Ok(files) => Ok(files.iter().map(|f| f.display().to_string()).collect()),
        Err(unloadable) => {
            let fix = unloadable.fix.map(|f| format!("; {f}")).unwrap_or_default();
            Err(Outcome::fail(format!(
                "{}: cuDNN {} aborts the process when it cannot load it, so {call} was not called{fix}",
                unloadable.why,
                version_text(version)
            )))
        }
    }
}

/// `cudnn.handle`.
pub fn handle(s: &mut Session) -> Checked {
    s.gpu()?;
    let shim = s
        .request
        .file(Component::Cudnn)
        .map(|f| f.path.clone())
        .ok_or_else(|| Outcome::fail(not_installed(Component::Cudnn)))?;
    let lib = s.library(Component::Cudnn).map_err(Outcome::fail)?;
    let (version, cudart) = identify(lib)?;
    let text = version_text(version);
    let (numbering, route) = api::choose(version);
    let table = sys::Api::load(lib).map_err(|function| {
        missing(
            &format!("cuDNN {text}"),
            function,
            "it lacks the legacy convolution API this check uses",
        )
    })?;
    let errors = Errors::new(numbering, &table);
    let dnn: Box<dyn Dnn> = match route {
        Route::Cudarc => Box::new(Cudarc::new(errors)),
        Route::Own => Box::new(Own::new(table, errors)),
    };
    let cuda_major = u32::try_from(cudart)
        .ok()
        .and_then(CudaVersion::from_api)
        .map(|v| v.major);
    let preloaded = if split_cudnn_8(version) {
        preload_cudnn_8(&shim, preload::OPS, cuda_major, version, "cudnnCreate")?
    } else {
        Vec::new()
    };
    let raw = dnn.create_handle().call("cudnnCreate")?;
    let outcome = Outcome::pass(format!(
        "cudnnCreate succeeded (cuDNN {text}, through {})",
        route.describe()
    ))
    .detail("version", text)
    .detail("route", route.describe());
    s.keep(Handle {
        dnn,
        raw,
        version,
        cuda_major,
        shim,
    });
    Ok(with_preloaded(outcome, &preloaded))
}

/// `outcome` with the files [`preload_cudnn_8`] loaded, where it loaded any.
fn with_preloaded(outcome: Outcome, preloaded: &[String]) -> Outcome {
    if preloaded.is_empty() {
        outcome
    } else {
        outcome.detail("preloaded", preloaded)
    }
}

/// `[usize; 4]` dimensions as cuDNN's `int`s (the check's are tiny).
fn ints(d: [usize; 4]) -> [c_int; 4] {
    d.map(|x| x as c_int)
}

/// What the GPU computed.
struct Convolved {
    /// The output, dense NKPQ.
    y: Vec<f32>,
    /// What `cudnnGetConvolutionForwardWorkspaceSize` asked for.
    workspace_bytes: usize,
}

/// The convolution through `dnn` on `handle`: descriptors, shape check, workspace, forward,
/// result. Descriptors are destroyed on the way out, whatever happens.
fn convolve(
    dnn: &dyn Dnn,
    handle: Raw,
    fma: bool,
    x: &[f32],
    w: &[f32],
) -> Result<Convolved, Outcome> {
    let g = GEOMETRY;
    let out = g.output().ok_or_else(|| {
        Outcome::fail(format!(
            "the filter of {} does not fit its input",
            g.describe()
        ))
    })?;
    let x_desc = Descriptor::create(dnn, Kind::Tensor)?;
    // SAFETY: a live tensor descriptor, just created.
    unsafe { dnn.set_tensor(x_desc.raw, ints(g.input())) }.call("cudnnSetTensor4dDescriptor")?;
    let w_desc = Descriptor::create(dnn, Kind::Filter)?;
    // SAFETY: a live filter descriptor, just created.
    unsafe { dnn.set_filter(w_desc.raw, ints(g.filter())) }.call("cudnnSetFilter4dDescriptor")?;
    let conv = Descriptor::create(dnn, Kind::Convolution)?;
    let [pad, stride, dilation] = [g.pad, g.stride, g.dilation].map(|v| v as c_int);
    // SAFETY: a live convolution descriptor, just created.
    unsafe { dnn.set_convolution(conv.raw, pad, stride, dilation) }
        .call("cudnnSetConvolution2dDescriptor")?;
    if fma {
        // SAFETY: as above.
        unsafe { dnn.set_fma_math(conv.raw) }.call("cudnnSetConvolutionMathType")?;
    }
    // SAFETY: all three descriptors are live and set.
    let said = unsafe { dnn.output_dims(conv.raw, x_desc.raw, w_desc.raw) }
        .call("cudnnGetConvolution2dForwardOutputDim")?;
    if said != ints(out) {
        return Err(Outcome::fail(format!(
            "cudnnGetConvolution2dForwardOutputDim gives {} for {}, expected {}",
            said.map(|d| d.to_string()).join("x"),
            g.describe(),
            dims(out)
        )));
    }
    let y_desc = Descriptor::create(dnn, Kind::Tensor)?;
    // SAFETY: a live tensor descriptor, just created.
    unsafe { dnn.set_tensor(y_desc.raw, ints(out)) }.call("cudnnSetTensor4dDescriptor")?;
    // SAFETY: the handle is kept alive by the session; the descriptors are live and set.
    let workspace_bytes =
        unsafe { dnn.workspace_size(handle, x_desc.raw, w_desc.raw, conv.raw, y_desc.raw) }
            .call("cudnnGetConvolutionForwardWorkspaceSize")?;
    let workspace = match workspace_bytes {
        0 => None,
        bytes => Some(DeviceBuffer::<u8>::alloc(bytes)?),
    };
    let dx = DeviceBuffer::from_slice(x)?;
    let dw = DeviceBuffer::from_slice(w)?;
    let dy = DeviceBuffer::<f32>::alloc(out.iter().product())?;
    let forward = Forward {
        handle,
        x_desc: x_desc.raw,
        x: dx.as_ptr().cast_const().cast(),
        w_desc: w_desc.raw,
        w: dw.as_ptr().cast_const().cast(),
        conv: conv.raw,
        workspace: workspace
            .as_ref()
            .map_or(std::ptr::null_mut(), |b| b.as_ptr().cast()),
        workspace_bytes,
        y_desc: y_desc.raw,
        y: dy.as_ptr().cast(),
    };
    // SAFETY: the handle and descriptors are live and set; dx, dw and dy hold exactly the
    // elements their descriptors describe (FP32, dense NCHW/KCRS); the workspace is the size
    // cuDNN asked for (or null for none). All outlive the call and the synchronisation below.
    unsafe { dnn.forward(&forward) }.call("cudnnConvolutionForward")?;
    synchronize()?;
    Ok(Convolved {
        y: dy.read()?,
        workspace_bytes,
    })
}

/// f32 values as f64, for the reference and the comparison.
fn widen(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| f64::from(x)).collect()
}

/// `cudnn.conv_forward`.
pub fn conv_forward(s: &mut Session) -> Checked {
    let handle = s.kept::<Handle>().ok_or_else(|| {
        Outcome::fail("no cuDNN handle: cudnn.handle did not pass in this worker")
    })?;
    let preloaded = if split_cudnn_8(handle.version) {
        preload_cudnn_8(
            &handle.shim,
            preload::CNN,
            handle.cuda_major,
            handle.version,
            "cudnnCreateConvolutionDescriptor",
        )?
    } else {
        Vec::new()
    };
    let g = GEOMETRY;
    let x = kernels::random_f32(g.input().iter().product(), 31);
    let w = kernels::random_f32(g.filter().iter().product(), 32);
    let want = reference::forward(&g, &widen(&x), &widen(&w));
    let fma = handle.version >= FIRST_WITH_FMA_MATH;
    let got = convolve(handle.dnn.as_ref(), handle.raw, fma, &x, &w)?;
    let math = if fma {
        "CUDNN_FMA_MATH"
    } else {
        "CUDNN_DEFAULT_MATH"
    };
    let details = |outcome: Outcome| {
        let outcome = outcome
            .detail("output", g.output().map(dims).unwrap_or_default())
            .detail("algorithm", "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM")
            .detail("math", math)
            .detail("workspace_bytes", got.workspace_bytes)
            .detail("route", handle.dnn.route().describe());
        with_preloaded(outcome, &preloaded)
    };
    verify(
        &format!("{} convolution", g.describe()),
        &widen(&got.y),
        &want,
        Precision::F32,
    )
    .finish(details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::worker::fixtures::{fixture, DRIVER};
    use crate::schema::check::Status;
    use rstest::rstest;

    #[test]
    fn the_checks_convolution_is_the_one_the_reasons_name() {
        assert_eq!(GEOMETRY.describe(), "2x3x11x8 * 6x3x5x4");
        assert_eq!(GEOMETRY.output(), Some([2, 6, 9, 7]));
        assert_eq!(ints([1, 4, 8, 8]), [1, 4, 8, 8]);
    }

    #[test]
    fn no_two_dimensions_of_the_checks_convolution_are_equal() {
        let g = GEOMETRY;
        let [_, _, p, q] = g.output().expect("the filter fits");
        let mut all = vec![g.n, g.c, g.h, g.w, g.k, g.r, g.s, p, q];
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 9, "{g:?}");
    }

    #[rstest]
    #[case::cudnn_8_for_12_on_11(8902, 12020, (12, 2), (11, 8),
        "cuDNN 8.9.2 was built for CUDA 12 (cudnnGetCudartVersion 12020), this combination's runtime is CUDA 11.8: install the cuDNN build for CUDA 11 (pip install nvidia-cudnn-cu11)")]
    #[case::cudnn_9_for_12_on_13(92800, 12090, (12, 9), (13, 0),
        "cuDNN 9.28.0 was built for CUDA 12 (cudnnGetCudartVersion 12090), this combination's runtime is CUDA 13.0: install the cuDNN build for CUDA 13 (pip install nvidia-cudnn-cu13)")]
    #[case::cudnn_8_on_13(8906, 11080, (11, 8), (13, 0),
        "cuDNN 8.9.6 was built for CUDA 11 (cudnnGetCudartVersion 11080), this combination's runtime is CUDA 13.0: cuDNN 8 has no build for CUDA 13; install cuDNN 9 for CUDA 13 (pip install nvidia-cudnn-cu13)")]
    fn a_mismatch_says_what_to_install(
        #[case] version: usize,
        #[case] cudart: usize,
        #[case] built_for: (u32, u32),
        #[case] runtime: (u32, u32),
        #[case] reason: &str,
    ) {
        let v = |(major, minor): (u32, u32)| CudaVersion::new(major, minor);
        assert_eq!(mismatch(version, cudart, v(built_for), v(runtime)), reason);
    }

    #[rstest]
    #[case(7605, false)]
    #[case(8000, true)]
    #[case(8906, true)]
    #[case(90000, false)]
    #[case(92800, false)]
    fn only_cudnn_8_is_split(#[case] version: usize, #[case] split: bool) {
        assert_eq!(split_cudnn_8(version), split);
    }

    fn session() -> Session {
        Session::new(crate::check::protocol::CheckRequest::default())
    }

    #[test]
    fn a_library_that_is_not_cudnn_says_so() {
        let lib = Library::open(&fixture(DRIVER).join("libcuda.so.1")).unwrap();
        assert_eq!(
            identify(&lib).unwrap_err().reason,
            "libcudnn does not export cudnnGetVersion: it is not a cuDNN library"
        );
    }

    #[test]
    fn without_cudnn_every_check_fails_saying_so() {
        let mut s = session();
        for check in [versions, handle, conv_forward] {
            let outcome = check(&mut s).unwrap_err();
            assert_eq!(outcome.status, Status::Fail);
            assert!(!outcome.reason.is_empty());
        }
        assert_eq!(
            versions(&mut s).unwrap_err().reason,
            not_installed(Component::Cudnn)
        );
        assert_eq!(
            conv_forward(&mut s).unwrap_err().reason,
            "no cuDNN handle: cudnn.handle did not pass in this worker"
        );
    }
}
