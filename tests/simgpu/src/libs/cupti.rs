//! The simulated cupti (being built).
