//! The simulated cublaslt (being built).
