//! The simulated cudart (being built).
