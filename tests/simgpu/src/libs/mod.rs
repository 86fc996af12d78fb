//! The simulated CUDA libraries and NCCL, at NVIDIA's C ABI, on the simulated driver: each
//! answers its version calls as a CUDA 13 toolkit's does (strings say "simulated"), and computes
//! with a CPU reference of its own that shares no code with stackbench's `harness/`, so that a mistake in
//! how stackbench calls a library makes its results wrong.
//!
//! `ci/sim` lays them out in its `toolkit_dir` under NVIDIA's file names and sonames: thin shared
//! objects that need this one, so every library shares the one simulated host; `dlsym` on a
//! library's handle finds its functions here.
//!
//! Library work goes on streams through [`crate::driver::library`], a collective on several
//! devices' streams through [`crate::driver::collective`], timed by the model.

pub mod cublas;
pub mod cublaslt;
pub mod cudart;
pub mod cudnn;
pub mod cufft;
pub mod cupti;
pub mod curand;
pub mod nccl;
