//! The simulated curand (being built).
