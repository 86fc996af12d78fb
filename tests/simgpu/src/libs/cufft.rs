//! The simulated cuFFT 12.0 (`libcufft.so.12`, CUDA 13.0's, version 12.0.0.61): plans of one to
//! three dimensions over complex single (`CUFFT_C2C`) and double (`CUFFT_Z2Z`) data, in the basic
//! or advanced data layout, executed on the plan's stream by `rustfft`, unnormalised in both
//! directions as cuFFT documents. Real-to-complex transforms answer `CUFFT_NOT_SUPPORTED`.

pub mod exec;
pub mod plan;
pub mod status;
