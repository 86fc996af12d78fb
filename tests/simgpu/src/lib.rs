//! A simulated NVIDIA GPU for stackbench's tests. Built as one shared object that `ci/sim` links
//! as both `libcuda.so.1` and `libnvidia-ml.so.1` (the loader maps the one file once, so the
//! driver and NVML share one state): the driver API and NVML at NVIDIA's C ABI, as cudarc and
//! nvml-wrapper call them, with NVIDIA's documented semantics.
//!
//! - [`ptx`]: an interpreter for the PTX NVRTC emits for stackbench's kernels;
//! - [`driver`]: `cu*`: devices, contexts, memory (real host memory, checked on every access),
//!   streams, events, modules and launches;
//! - [`nvml`]: `nvml*`: the queries `check` and the bench telemetry make;
//! - [`profile`]: the devices, their node and faults, from the TOML file `STACKBENCH_SIM_PROFILE`
//!   names;
//! - [`node`]: NVLinks, the NVSwitch fabric, peer access and the rate of peer copies;
//! - [`clock`]: time from a roofline model of the profile, never from the host clock.
//!
//! It shares no code with stackbench's `harness/`: a reference that shares our code agrees with
//! our mistakes. It is never installed and never found by a scan of a real host.

pub mod clock;
pub mod driver;
pub mod libs;
pub mod node;
pub mod nvml;
pub mod profile;
pub mod ptx;
pub mod state;
pub mod trace;
