//! The one simulated host a process sees, shared by the driver and NVML: its profile, read once,
//! the driver's state, the counters that faults and telemetry follow, and what both APIs must
//! agree on about each device (its PCI address and UUID).
//!
//! A test can give its own thread a host of its own ([`Sim::new`], [`use_on_this_thread`]), so
//! that tests with different profiles and faults run side by side in one process.

use crate::driver::Driver;
use crate::profile::{Device, Profile};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The simulated host.
pub struct Sim {
    /// The profile, or why it could not be read (then `cuInit` and `nvmlInit` fail).
    pub profile: Result<Profile, String>,
    /// Contexts, memory, streams, events and modules.
    pub driver: Driver,
    /// Driver calls made so far (for `lost_after_calls`).
    calls: AtomicU64,
    /// Kernel launches so far (throttle reasons are reported once kernels have run).
    launches: AtomicU64,
    /// Launches the interpreter really ran (the others were memoised).
    interpreted: AtomicU64,
}

thread_local! {
    /// A host given to this thread by [`use_on_this_thread`], in place of the process's.
    static THREAD_SIM: Cell<Option<&'static Sim>> = const { Cell::new(None) };
}

/// The simulated host of the calling thread: its own if a test gave it one, else the process's,
/// whose profile is read once from `STACKBENCH_SIM_PROFILE`.
pub fn sim() -> &'static Sim {
    static SIM: OnceLock<Sim> = OnceLock::new();
    THREAD_SIM
        .with(Cell::get)
        .unwrap_or_else(|| SIM.get_or_init(|| Sim::new(Profile::from_env())))
}

/// Makes `sim` the host every driver and NVML call of the calling thread sees (for tests).
pub fn use_on_this_thread(sim: &'static Sim) {
    THREAD_SIM.with(|s| s.set(Some(sim)));
}

impl Sim {
    /// A host of `profile`, with nothing initialised yet.
    pub fn new(profile: Result<Profile, String>) -> Sim {
        Sim {
            profile,
            driver: Driver::default(),
            calls: AtomicU64::new(0),
            launches: AtomicU64::new(0),
            interpreted: AtomicU64::new(0),
        }
    }

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

    /// Counts one launch the interpreter ran.
    pub fn count_interpreted(&self) {
        self.interpreted.fetch_add(1, Ordering::Relaxed);
    }

    /// Launches the interpreter ran; the rest of [`Sim::launches`] reused a recorded run.
    pub fn interpreted(&self) -> u64 {
        self.interpreted.load(Ordering::Relaxed)
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

/// A device's PCI address. The driver's attributes and `cuDeviceGetPCIBusId` and NVML's PCI
/// info give the same one, so a device found by either API is the same device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pci {
    pub domain: u32,
    pub bus: u32,
    pub device: u32,
}

/// The PCI address of the device at `index`: domain 0, device 0, buses 0x17, 0x2a, 0x3d, ...
/// (19 apart, as the root ports of a multi-GPU server spread them; distinct for 256 devices).
pub fn pci(index: usize) -> Pci {
    Pci {
        domain: 0,
        bus: (0x17 + 0x13 * index as u32) & 0xff,
        device: 0,
    }
}

impl Pci {
    /// As `cuDeviceGetPCIBusId` writes it: `0000:17:00.0`.
    pub fn bus_id(&self) -> String {
        format!("{:04x}:{:02x}:{:02x}.0", self.domain, self.bus, self.device)
    }

    /// As NVML's `nvmlPciInfo_t.busId` holds it: `00000000:17:00.0`.
    pub fn nvml_bus_id(&self) -> String {
        format!("{:08X}:{:02X}:{:02X}.0", self.domain, self.bus, self.device)
    }
}

/// The UUID of the device at `index` (`cuDeviceGetUuid`, NVML's `GPU-...`): derived from the
/// profile's seed, the index and the name, so it is stable across runs and distinct per device.
pub fn uuid(index: usize, device: &Device) -> [u8; 16] {
    let name = device.name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut state =
        device.seed.unwrap_or(1) ^ name ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let high = crate::clock::splitmix64(&mut state);
    let low = crate::clock::splitmix64(&mut state);
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&high.to_be_bytes());
    bytes[8..].copy_from_slice(&low.to_be_bytes());
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_device_has_its_own_bus_and_uuid() {
        assert_eq!(pci(0).bus_id(), "0000:17:00.0");
        assert_eq!(pci(1).bus_id(), "0000:2a:00.0");
        assert_eq!(pci(1).nvml_bus_id(), "00000000:2A:00.0");
        let buses: std::collections::HashSet<u32> = (0..256).map(|i| pci(i).bus).collect();
        assert_eq!(buses.len(), 256);
        let device = Device::default();
        assert_ne!(uuid(0, &device), uuid(1, &device));
        assert_eq!(uuid(0, &device), uuid(0, &device));
    }
}
