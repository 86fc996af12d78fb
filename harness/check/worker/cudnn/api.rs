//! The small interface the cuDNN checks call through ([`Dnn`]), which backend carries it for which
//! cuDNN ([`choose`]), and the descriptors it hands out. The backends are in
//! [`super::backends`], the status names and failures in [`super::status`].

use super::status::{Numbering, Status};
use super::sys::Raw;
use crate::check::worker::outcome::{Call, Outcome};
use std::ffi::{c_int, c_void};

/// The newest cuDNN whose `cudnnStatus_t` was checked equal to cudarc's `cudnn-09021` enum
/// (cuDNN 9.28's `cudnn_graph.h`: the 9.0 codes plus 1008, 2011, 2012, 3013 and 3014; codes are
/// only ever added). A newer cuDNN 9 may return a code that enum lacks.
pub const NEWEST_CUDARC_FITS: usize = 92899;

/// Which layer the calls go through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// cudarc's `cudnn` bindings.
    Cudarc,
    /// The own `sys` layer, statuses read as `int`.
    Own,
}

impl Route {
    /// For reasons and details.
    pub fn describe(self) -> &'static str {
        match self {
            Route::Cudarc => "cudarc",
            Route::Own => "stackbench's own cuDNN layer",
        }
    }
}

/// The numbering and the route for a cuDNN of `version` (`cudnnGetVersion`: 8906 is 8.9.6,
/// 92800 is 9.28.0).
pub fn choose(version: usize) -> (Numbering, Route) {
    match version {
        0..=89_999 => (Numbering::V8, Route::Own),
        90_000..=NEWEST_CUDARC_FITS => (Numbering::V9, Route::Cudarc),
        v if v < 100_000 => (Numbering::V9, Route::Own),
        _ => (Numbering::Unknown, Route::Own),
    }
}

/// The kinds of descriptor the convolution uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tensor,
    Filter,
    Convolution,
}

impl Kind {
    /// The C function that creates one.
    pub fn creator(self) -> &'static str {
        match self {
            Kind::Tensor => "cudnnCreateTensorDescriptor",
            Kind::Filter => "cudnnCreateFilterDescriptor",
            Kind::Convolution => "cudnnCreateConvolutionDescriptor",
        }
    }
}

/// The arguments of one `cudnnConvolutionForward` (alpha 1, beta 0, FP32 data, implicit GEMM).
pub struct Forward {
    pub handle: Raw,
    pub x_desc: Raw,
    pub x: *const c_void,
    pub w_desc: Raw,
    pub w: *const c_void,
    pub conv: Raw,
    pub workspace: *mut c_void,
    pub workspace_bytes: usize,
    pub y_desc: Raw,
    pub y: *mut c_void,
}

/// The cuDNN calls the checks make, FP32 NCHW cross-correlation only, whichever layer carries
/// them. Every method returns a [`Status`] named in the library's own numbering.
pub trait Dnn {
    /// Which layer this is, for details.
    fn route(&self) -> Route;

    /// `cudnnCreate`.
    fn create_handle(&self) -> Result<Raw, Status>;

    /// `cudnnCreate*Descriptor`.
    fn create(&self, kind: Kind) -> Result<Raw, Status>;

    /// `cudnnDestroy*Descriptor`.
    ///
    /// # Safety
    /// `raw` must be a live descriptor of `kind`; it is freed.
    unsafe fn destroy(&self, kind: Kind, raw: Raw) -> Result<(), Status>;

    /// `cudnnSetTensor4dDescriptor(NCHW, FLOAT, dims)`.
    ///
    /// # Safety
    /// `desc` must be a live tensor descriptor.
    unsafe fn set_tensor(&self, desc: Raw, dims: [c_int; 4]) -> Result<(), Status>;

    /// `cudnnSetFilter4dDescriptor(FLOAT, NCHW, dims)`.
    ///
    /// # Safety
    /// `desc` must be a live filter descriptor.
    unsafe fn set_filter(&self, desc: Raw, dims: [c_int; 4]) -> Result<(), Status>;

    /// `cudnnSetConvolution2dDescriptor(pad, pad, stride, stride, dilation, dilation,
    /// CROSS_CORRELATION, FLOAT)`.
    ///
    /// # Safety
    /// `desc` must be a live convolution descriptor.
    unsafe fn set_convolution(
        &self,
        desc: Raw,
        pad: c_int,
        stride: c_int,
        dilation: c_int,
    ) -> Result<(), Status>;

    /// `cudnnSetConvolutionMathType(FMA_MATH)`: no TF32 tensor cores for FP32 data.
    ///
    /// # Safety
    /// `desc` must be a live convolution descriptor.
    unsafe fn set_fma_math(&self, desc: Raw) -> Result<(), Status>;

    /// `cudnnGetConvolution2dForwardOutputDim`.
    ///
    /// # Safety
    /// The descriptors must be live and set.
    unsafe fn output_dims(&self, conv: Raw, x: Raw, w: Raw) -> Result<[c_int; 4], Status>;

    /// `cudnnGetConvolutionForwardWorkspaceSize(IMPLICIT_GEMM)`.
    ///
    /// # Safety
    /// The handle and descriptors must be live and set.
    unsafe fn workspace_size(
        &self,
        handle: Raw,
        x: Raw,
        w: Raw,
        conv: Raw,
        y: Raw,
    ) -> Result<usize, Status>;

    /// `cudnnConvolutionForward(alpha 1, IMPLICIT_GEMM, beta 0)`.
    ///
    /// # Safety
    /// As [`super::sys::ConvolutionForward`]: live, set descriptors and device buffers of their
    /// sizes.
    unsafe fn forward(&self, f: &Forward) -> Result<(), Status>;
}

/// A descriptor destroyed when dropped (its destroy status has nowhere to go).
pub struct Descriptor<'a> {
    dnn: &'a dyn Dnn,
    kind: Kind,
    /// The descriptor, for the calls that take it.
    pub raw: Raw,
}

impl<'a> Descriptor<'a> {
    /// Creates one; the failure names the creating call.
    pub fn create(dnn: &'a dyn Dnn, kind: Kind) -> Result<Descriptor<'a>, Outcome> {
        let raw = dnn.create(kind).call(kind.creator())?;
        Ok(Descriptor { dnn, kind, raw })
    }
}

impl Drop for Descriptor<'_> {
    fn drop(&mut self) {
        // SAFETY: created as `kind` in `create`, destroyed only here.
        let _ = unsafe { self.dnn.destroy(self.kind, self.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::cudnn_7(7605, Numbering::V8, Route::Own)]
    #[case::cudnn_8_first(8000, Numbering::V8, Route::Own)]
    #[case::cudnn_8_9_6(8906, Numbering::V8, Route::Own)]
    #[case::cudnn_9_0(90000, Numbering::V9, Route::Cudarc)]
    #[case::cudnn_9_2_1(90201, Numbering::V9, Route::Cudarc)]
    #[case::cudnn_9_28(92800, Numbering::V9, Route::Cudarc)]
    #[case::cudnn_9_28_patch(92803, Numbering::V9, Route::Cudarc)]
    #[case::cudnn_9_29(92900, Numbering::V9, Route::Own)]
    #[case::cudnn_9_99(99900, Numbering::V9, Route::Own)]
    #[case::cudnn_10(100000, Numbering::Unknown, Route::Own)]
    fn the_backend_follows_the_version(
        #[case] version: usize,
        #[case] numbering: Numbering,
        #[case] route: Route,
    ) {
        assert_eq!(choose(version), (numbering, route));
    }
}
