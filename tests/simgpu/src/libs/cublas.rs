//! The simulated cublas (being built).
