//! The simulated cuDNN 9.13.0 (`libcudnn.so.9` and the sub-libraries it would open): the legacy
//! API stackbench's check calls, at NVIDIA's C ABI with cuDNN 9's status numbering: versions,
//! handles on a stream, 4-D tensor, filter and 2-D convolution descriptors, the forward
//! algorithm queries and `cudnnConvolutionForward` computed by a direct loop of its own.
//! The version 9 backend (graph) API is not simulated: stackbench does not call it.

pub mod conv;
pub mod descriptors;
pub mod forward;
pub mod handle;
mod objects;
pub mod status;
