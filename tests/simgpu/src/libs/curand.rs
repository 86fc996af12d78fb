//! The simulated cuRAND 10.4 (`libcurand.so.10`, CUDA 13.0's, version 10.4.0.35): pseudo-random
//! generators of every pseudo-random type, all computed by a Philox4x32-10 of their own (values
//! are not bit-identical to NVIDIA's, which stackbench does not check), seeded, offset and put
//! on a stream as cuRAND's are; `curandGenerateUniform` gives floats in (0, 1] as cuRAND
//! documents. Quasi-random generators answer `CURAND_STATUS_TYPE_ERROR`.

pub mod generator;
pub mod philox;
