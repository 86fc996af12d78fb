//! A node of several GPUs: what its GPUs and the links between them show together.

pub mod outlier;
