//! The simulated cudnn (being built).
