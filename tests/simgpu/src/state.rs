//! The one simulated host a process sees, shared by the driver and NVML: its profile, read once,
//! and the counters that faults and telemetry follow.

use crate::profile::Profile;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The simulated host.
pub struct Sim {
    /// The profile, or why it could not be read (then `cuInit` and `nvmlInit` fail).
    pub profile: Result<Profile, String>,
    /// Driver calls made so far (for `lost_after_calls`).
    calls: AtomicU64,
    /// Kernel launches so far (throttle reasons are reported once kernels have run).
    launches: AtomicU64,
}

/// The simulated host of this process.
pub fn sim() -> &'static Sim {
    static SIM: OnceLock<Sim> = OnceLock::new();
    SIM.get_or_init(|| Sim {
        profile: Profile::from_env(),
        calls: AtomicU64::new(0),
        launches: AtomicU64::new(0),
    })
}

impl Sim {
    /// Counts one driver call.
    pub fn count_call(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one kernel launch.
    pub fn count_launch(&self) {
        self.launches.fetch_add(1, Ordering::Relaxed);
    }

    /// Kernel launches so far.
    pub fn launches(&self) -> u64 {
        self.launches.load(Ordering::Relaxed)
    }

    /// Whether the GPU has fallen off the bus (`lost_after_calls` driver calls were made).
    pub fn lost(&self) -> bool {
        let after = self
            .profile
            .as_ref()
            .map_or(0, |p| p.faults.lost_after_calls);
        after > 0 && self.calls.load(Ordering::Relaxed) >= after
    }
}
