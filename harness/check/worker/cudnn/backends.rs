//! The two backends of [`Dnn`]: cudarc's `result`/`sys` layer for the cuDNN 9 releases whose
//! status codes cudarc's enum knows, and the own `sys` layer ([`super::sys`]) for cuDNN 8 (and
//! any release newer than those), whose codes would be undefined behaviour in cudarc's enum.
//!
//! Each method is one call of cuDNN's C API, so the two sides make the same calls with the same
//! arguments: cudarc's in its typed descriptors and enums, the own one in `Raw` pointers and
//! `c_int`s. They are spelled out twice on purpose, each checkable against the header.

use super::api::{Dnn, Forward, Kind, Route};
use super::status::{Errors, Status};
use super::sys::{self, Raw, RawStatus};
use cudarc::cudnn::result::{self as dnn, CudnnError};
use cudarc::cudnn::sys as dsys;
use std::ffi::c_int;

/// cuDNN 9.0 to 9.28 through cudarc: every status they return is a variant of cudarc's enum.
pub struct Cudarc {
    errors: Errors,
}

impl Cudarc {
    /// `errors` must be for a library that [`choose`] routes to cudarc; its symbols were all
    /// looked up first ([`sys::Api::load`]), so no cudarc call panics on a missing one.
    pub fn new(errors: Errors) -> Cudarc {
        Cudarc { errors }
    }

    /// cudarc's error as a [`Status`], read at once.
    fn fail(&self, error: CudnnError) -> Status {
        self.errors.status(error.0 as RawStatus)
    }

    /// A cudarc result with its error as a [`Status`].
    fn done(&self, result: Result<(), CudnnError>) -> Result<(), Status> {
        result.map_err(|e| self.fail(e))
    }
}

impl Dnn for Cudarc {
    fn route(&self) -> Route {
        Route::Cudarc
    }

    fn create_handle(&self) -> Result<Raw, Status> {
        dnn::create_handle()
            .map(|h| h.cast())
            .map_err(|e| self.fail(e))
    }

    fn create(&self, kind: Kind) -> Result<Raw, Status> {
        match kind {
            Kind::Tensor => dnn::create_tensor_descriptor().map(|d| d.cast()),
            Kind::Filter => dnn::create_filter_descriptor().map(|d| d.cast()),
            Kind::Convolution => dnn::create_convolution_descriptor().map(|d| d.cast()),
        }
        .map_err(|e| self.fail(e))
    }

    unsafe fn destroy(&self, kind: Kind, raw: Raw) -> Result<(), Status> {
        // SAFETY: by the caller's contract, `raw` is a live descriptor of `kind`.
        self.done(unsafe {
            match kind {
                Kind::Tensor => dnn::destroy_tensor_descriptor(raw.cast()),
                Kind::Filter => dnn::destroy_filter_descriptor(raw.cast()),
                Kind::Convolution => dnn::destroy_convolution_descriptor(raw.cast()),
            }
        })
    }

    unsafe fn set_tensor(&self, desc: Raw, dims: [c_int; 4]) -> Result<(), Status> {
        use dsys::{cudnnDataType_t::CUDNN_DATA_FLOAT, cudnnTensorFormat_t::CUDNN_TENSOR_NCHW};
        // SAFETY: by the caller's contract, `desc` is a live tensor descriptor.
        self.done(unsafe {
            dnn::set_tensor4d_descriptor(desc.cast(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, dims)
        })
    }

    unsafe fn set_filter(&self, desc: Raw, dims: [c_int; 4]) -> Result<(), Status> {
        use dsys::{cudnnDataType_t::CUDNN_DATA_FLOAT, cudnnTensorFormat_t::CUDNN_TENSOR_NCHW};
        // SAFETY: by the caller's contract, `desc` is a live filter descriptor.
        self.done(unsafe {
            dnn::set_filter4d_descriptor(desc.cast(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, dims)
        })
    }

    unsafe fn set_convolution(
        &self,
        desc: Raw,
        pad: c_int,
        stride: c_int,
        dilation: c_int,
    ) -> Result<(), Status> {
        use dsys::{
            cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION, cudnnDataType_t::CUDNN_DATA_FLOAT,
        };
        // SAFETY: by the caller's contract, `desc` is a live convolution descriptor.
        self.done(unsafe {
            dnn::set_convolution2d_descriptor(
                desc.cast(),
                pad,
                pad,
                stride,
                stride,
                dilation,
                dilation,
                CUDNN_CROSS_CORRELATION,
                CUDNN_DATA_FLOAT,
            )
        })
    }

    unsafe fn set_fma_math(&self, desc: Raw) -> Result<(), Status> {
        // SAFETY: by the caller's contract, `desc` is a live convolution descriptor.
        self.done(unsafe {
            dnn::set_convolution_math_type(desc.cast(), dsys::cudnnMathType_t::CUDNN_FMA_MATH)
        })
    }

    unsafe fn output_dims(&self, conv: Raw, x: Raw, w: Raw) -> Result<[c_int; 4], Status> {
        let mut d: [c_int; 4] = [0; 4];
        let [n, c, h, wd] = &mut d;
        // SAFETY: by the caller's contract the descriptors are live and set; each out pointer
        // is a distinct, writable int.
        self.done(
            unsafe {
                dsys::cudnnGetConvolution2dForwardOutputDim(
                    conv.cast(),
                    x.cast(),
                    w.cast(),
                    n,
                    c,
                    h,
                    wd,
                )
            }
            .result(),
        )?;
        Ok(d)
    }

    unsafe fn workspace_size(
        &self,
        handle: Raw,
        x: Raw,
        w: Raw,
        conv: Raw,
        y: Raw,
    ) -> Result<usize, Status> {
        let algo = dsys::cudnnConvolutionFwdAlgo_t::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
        // SAFETY: by the caller's contract the handle and descriptors are live and set.
        unsafe {
            dnn::get_convolution_forward_workspace_size(
                handle.cast(),
                x.cast(),
                w.cast(),
                conv.cast(),
                y.cast(),
                algo,
            )
        }
        .map_err(|e| self.fail(e))
    }

    unsafe fn forward(&self, f: &Forward) -> Result<(), Status> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let algo = dsys::cudnnConvolutionFwdAlgo_t::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
        // SAFETY: by the caller's contract; alpha and beta are floats, as FP32 data needs, and
        // outlive the call.
        self.done(unsafe {
            dnn::convolution_forward(
                f.handle.cast(),
                (&alpha as *const f32).cast(),
                f.x_desc.cast(),
                f.x,
                f.w_desc.cast(),
                f.w,
                f.conv.cast(),
                algo,
                f.workspace,
                f.workspace_bytes,
                (&beta as *const f32).cast(),
                f.y_desc.cast(),
                f.y,
            )
        })
    }
}

/// cuDNN 8 (and any cuDNN newer than cudarc's enum) through the own `sys` layer.
pub struct Own {
    api: sys::Api,
    errors: Errors,
}

impl Own {
    /// Calls through `api`, statuses named by `errors`.
    pub fn new(api: sys::Api, errors: Errors) -> Own {
        Own { api, errors }
    }

    /// A raw status as a result.
    fn check(&self, code: RawStatus) -> Result<(), Status> {
        if code == 0 {
            Ok(())
        } else {
            Err(self.errors.status(code))
        }
    }

    /// Calls one of the `cudnnCreate*` functions.
    fn make(&self, create: sys::Create) -> Result<Raw, Status> {
        let mut raw: Raw = std::ptr::null_mut();
        // SAFETY: `raw` is a writable pointer; `create` is one of the cudnnCreate* functions.
        self.check(unsafe { create(&mut raw) })?;
        Ok(raw)
    }
}

impl Dnn for Own {
    fn route(&self) -> Route {
        Route::Own
    }

    fn create_handle(&self) -> Result<Raw, Status> {
        self.make(self.api.create)
    }

    fn create(&self, kind: Kind) -> Result<Raw, Status> {
        self.make(match kind {
            Kind::Tensor => self.api.create_tensor,
            Kind::Filter => self.api.create_filter,
            Kind::Convolution => self.api.create_convolution,
        })
    }

    unsafe fn destroy(&self, kind: Kind, raw: Raw) -> Result<(), Status> {
        let destroy = match kind {
            Kind::Tensor => self.api.destroy_tensor,
            Kind::Filter => self.api.destroy_filter,
            Kind::Convolution => self.api.destroy_convolution,
        };
        // SAFETY: by the caller's contract, `raw` is a live descriptor of `kind`.
        self.check(unsafe { destroy(raw) })
    }

    unsafe fn set_tensor(&self, desc: Raw, [n, c, h, w]: [c_int; 4]) -> Result<(), Status> {
        // SAFETY: by the caller's contract, `desc` is a live tensor descriptor.
        self.check(unsafe {
            (self.api.set_tensor)(desc, sys::TENSOR_NCHW, sys::DATA_FLOAT, n, c, h, w)
        })
    }

    unsafe fn set_filter(&self, desc: Raw, [k, c, h, w]: [c_int; 4]) -> Result<(), Status> {
        // SAFETY: by the caller's contract, `desc` is a live filter descriptor.
        self.check(unsafe {
            (self.api.set_filter)(desc, sys::DATA_FLOAT, sys::TENSOR_NCHW, k, c, h, w)
        })
    }

    unsafe fn set_convolution(
        &self,
        desc: Raw,
        pad: c_int,
        stride: c_int,
        dilation: c_int,
    ) -> Result<(), Status> {
        // SAFETY: by the caller's contract, `desc` is a live convolution descriptor.
        self.check(unsafe {
            (self.api.set_convolution)(
                desc,
                pad,
                pad,
                stride,
                stride,
                dilation,
                dilation,
                sys::CROSS_CORRELATION,
                sys::DATA_FLOAT,
            )
        })
    }

    unsafe fn set_fma_math(&self, desc: Raw) -> Result<(), Status> {
        // SAFETY: by the caller's contract, `desc` is a live convolution descriptor.
        self.check(unsafe { (self.api.set_math_type)(desc, sys::FMA_MATH) })
    }

    unsafe fn output_dims(&self, conv: Raw, x: Raw, w: Raw) -> Result<[c_int; 4], Status> {
        let mut d: [c_int; 4] = [0; 4];
        let [n, c, h, wd] = &mut d;
        // SAFETY: by the caller's contract the descriptors are live and set; each out pointer
        // is a distinct, writable int.
        self.check(unsafe { (self.api.output_dim)(conv, x, w, n, c, h, wd) })?;
        Ok(d)
    }

    unsafe fn workspace_size(
        &self,
        handle: Raw,
        x: Raw,
        w: Raw,
        conv: Raw,
        y: Raw,
    ) -> Result<usize, Status> {
        let mut bytes = 0usize;
        // SAFETY: by the caller's contract the handle and descriptors are live and set; `bytes`
        // is a writable size_t.
        self.check(unsafe {
            (self.api.workspace_size)(
                handle,
                x,
                w,
                conv,
                y,
                sys::FWD_ALGO_IMPLICIT_GEMM,
                &mut bytes,
            )
        })?;
        Ok(bytes)
    }

    unsafe fn forward(&self, f: &Forward) -> Result<(), Status> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: by the caller's contract; alpha and beta are floats, as FP32 data needs, and
        // outlive the call.
        self.check(unsafe {
            (self.api.forward)(
                f.handle,
                (&alpha as *const f32).cast(),
                f.x_desc,
                f.x,
                f.w_desc,
                f.w,
                f.conv,
                sys::FWD_ALGO_IMPLICIT_GEMM,
                f.workspace,
                f.workspace_bytes,
                (&beta as *const f32).cast(),
                f.y_desc,
                f.y,
            )
        })
    }
}
