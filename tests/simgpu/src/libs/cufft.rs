//! The simulated cufft (being built).
