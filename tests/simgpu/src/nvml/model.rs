//! What a simulated device reads as, from its profile, the faults and whether kernels have run:
//! plain functions, so the exported calls only fetch and write.
//!
//! Before any kernel has run the device idles (`nvmlClocksEventReasonGpuIdle`, 45 C, 72 W).
//! Once one has run it is busy: warmer and hungrier, and the profile's `throttle` reasons hold
//! its clocks back (a HW reason halves them, as NVML's documentation says of HW slowdown and
//! power brake; a SW one takes 15% off), with the temperature or power the reason implies.
//! A locked SM clock ([`super::locks`]) is the requested clock, and the reasons hold it back as
//! they hold back the maximum: NVML documents the SW power cap as "reducing the clocks below
//! requested clocks because the GPU is consuming too much power", so a lock does not hold
//! against a power cap (a lock at the TDP clock makes one unlikely on a card, not impossible).

use crate::profile::{Device, Faults};

/// `nvmlClocksEventReasonGpuIdle`.
pub const REASON_GPU_IDLE: u64 = 0x1;
/// `nvmlClocksEventReasonApplicationsClocksSetting`.
pub const REASON_APPLICATIONS_CLOCKS: u64 = 0x2;
/// `nvmlClocksEventReasonSwPowerCap`.
pub const REASON_SW_POWER_CAP: u64 = 0x4;
/// `nvmlClocksThrottleReasonHwSlowdown`.
pub const REASON_HW_SLOWDOWN: u64 = 0x8;
/// `nvmlClocksEventReasonSyncBoost`.
pub const REASON_SYNC_BOOST: u64 = 0x10;
/// `nvmlClocksEventReasonSwThermalSlowdown`.
pub const REASON_SW_THERMAL: u64 = 0x20;
/// `nvmlClocksThrottleReasonHwThermalSlowdown`.
pub const REASON_HW_THERMAL: u64 = 0x40;
/// `nvmlClocksThrottleReasonHwPowerBrakeSlowdown`.
pub const REASON_HW_POWER_BRAKE: u64 = 0x80;
/// `nvmlClocksEventReasonDisplayClockSetting`.
pub const REASON_DISPLAY_CLOCKS: u64 = 0x100;

/// Every reason the simulated devices can report (`nvmlDeviceGetSupportedClocksEventReasons`).
pub const SUPPORTED_REASONS: u64 = REASON_GPU_IDLE
    | REASON_APPLICATIONS_CLOCKS
    | REASON_SW_POWER_CAP
    | REASON_HW_SLOWDOWN
    | REASON_SYNC_BOOST
    | REASON_SW_THERMAL
    | REASON_HW_THERMAL
    | REASON_HW_POWER_BRAKE
    | REASON_DISPLAY_CLOCKS;

/// The reasons that cut the clocks by half or more (NVML: "reducing the core clocks by a factor
/// of 2 or more").
const HW_REASONS: u64 = REASON_HW_SLOWDOWN | REASON_HW_THERMAL | REASON_HW_POWER_BRAKE;
/// The reasons the driver's software applies gently.
const SW_REASONS: u64 = REASON_SW_POWER_CAP | REASON_SW_THERMAL;

/// The bit of a `faults.throttle` name (the five the profile documents, and NVML's other
/// reasons by their names); `None` for a name it does not know.
pub fn reason_bit(name: &str) -> Option<u64> {
    Some(match name.trim() {
        "sw_thermal" => REASON_SW_THERMAL,
        "hw_slowdown" => REASON_HW_SLOWDOWN,
        "hw_thermal" => REASON_HW_THERMAL,
        "hw_power_brake" => REASON_HW_POWER_BRAKE,
        "sw_power_cap" => REASON_SW_POWER_CAP,
        "sync_boost" => REASON_SYNC_BOOST,
        "display_clocks" => REASON_DISPLAY_CLOCKS,
        "applications_clocks" => REASON_APPLICATIONS_CLOCKS,
        _ => return None,
    })
}

/// `nvmlDeviceGetCurrentClocksEventReasons`: idle before any kernel ran; afterwards the
/// profile's throttle reasons (none: 0).
pub fn clocks_event_reasons(faults: &Faults, launches: u64) -> u64 {
    if launches == 0 {
        return REASON_GPU_IDLE;
    }
    faults
        .throttle
        .iter()
        .filter_map(|name| reason_bit(name))
        .fold(0, |all, bit| all | bit)
}

/// `NVML_CLOCK_GRAPHICS` .. `NVML_CLOCK_VIDEO`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockType {
    Graphics,
    Sm,
    Memory,
    Video,
}

impl ClockType {
    /// From `nvmlClockType_t`.
    pub fn from_c(value: u32) -> Option<ClockType> {
        Some(match value {
            0 => ClockType::Graphics,
            1 => ClockType::Sm,
            2 => ClockType::Memory,
            3 => ClockType::Video,
            _ => return None,
        })
    }
}

/// `nvmlDeviceGetMaxClockInfo`, MHz.
pub fn max_clock_mhz(device: &Device, clock: ClockType) -> u32 {
    match clock {
        ClockType::Memory => device.memory_clock_mhz,
        ClockType::Graphics | ClockType::Sm | ClockType::Video => device.sm_clock_mhz,
    }
}

/// `nvmlDeviceGetClockInfo`, MHz: the requested clock (the lock's maximum, `locked` being its
/// range, else the maximum) held back by the current reasons: a HW reason to half the maximum
/// at most, a SW one to 85% of the requested clock. The memory clock is its request.
pub fn clock_mhz(
    device: &Device,
    clock: ClockType,
    reasons: u64,
    locked: Option<(u32, u32)>,
) -> u32 {
    let max = max_clock_mhz(device, clock);
    let requested = locked.map_or(max, |(_, locked)| locked.min(max));
    if clock == ClockType::Memory {
        return requested;
    }
    if reasons & HW_REASONS != 0 {
        requested.min(max / 2)
    } else if reasons & SW_REASONS != 0 {
        requested * 85 / 100
    } else {
        requested
    }
}

/// `nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)`, C.
pub fn temperature_c(reasons: u64, launches: u64) -> u32 {
    if reasons & REASON_HW_THERMAL != 0 {
        92
    } else if reasons & REASON_SW_THERMAL != 0 {
        87
    } else if launches > 0 {
        62
    } else {
        45
    }
}

/// The board's power limit, mW (`nvmlDeviceGetEnforcedPowerLimit`).
pub const POWER_LIMIT_MW: u32 = 700_000;

/// `nvmlDeviceGetPowerUsage`, mW.
pub fn power_mw(reasons: u64, launches: u64) -> u32 {
    if reasons & REASON_SW_POWER_CAP != 0 {
        POWER_LIMIT_MW
    } else if reasons & REASON_HW_POWER_BRAKE != 0 {
        250_000
    } else if launches > 0 {
        420_000
    } else {
        72_000
    }
}

/// `nvmlDeviceGetRemappedRows`: `(corrected rows, uncorrected rows, pending, failed)`. A
/// pending remap is one row remapped for an uncorrectable error, waiting for a reset.
pub fn remapped_rows(faults: &Faults) -> (u32, u32, bool, bool) {
    if faults.row_remap_pending {
        (0, 1, true, false)
    } else {
        (0, 0, false, false)
    }
}

/// `nvmlDeviceGetRetiredPages(_v2)` for one cause (0: multiple single-bit ECC errors, 1: a
/// double-bit ECC error): the pages' hardware addresses and when they were retired (seconds
/// since the epoch). The profile's pages were all retired for double-bit errors, since the
/// driver loaded, so they are pending retirement until a reset.
pub fn retired_pages(faults: &Faults, double_bit: bool) -> Vec<(u64, u64)> {
    if !double_bit {
        return Vec::new();
    }
    (0..u64::from(faults.retired_pages))
        .map(|i| (0x0004_2a6e_0000 + i * 0x1_0000, 1_750_000_000 + i * 3600))
        .collect()
}

/// What the other users' programs are called, in turn.
const FOREIGN_NAMES: [&str; 3] = ["python3", "pt_main_thread", "tritonserver"];

/// A compute process of another user on a device (`faults.other_processes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForeignProcess {
    pub pid: u32,
    /// Device memory it holds, bytes.
    pub used_bytes: u64,
    /// Its executable's name, as `nvmlSystemGetProcessName` gives it.
    pub name: &'static str,
}

/// The `faults.other_processes` compute processes on device `index`: pids of a busy host's
/// range, distinct across devices; together they hold half the device's memory, the first the
/// most, each a whole number of MiB.
pub fn foreign_processes(index: u32, device: &Device, faults: &Faults) -> Vec<ForeignProcess> {
    let count = faults.other_processes;
    let share = (device.memory_gib << 30) / 2 / u64::from(count.max(1));
    (0..count)
        .map(|i| ForeignProcess {
            pid: 48_213 + 1_000 * index + 7 * i,
            used_bytes: (share - u64::from(i) * (share / 8)) >> 20 << 20,
            name: FOREIGN_NAMES[i as usize % FOREIGN_NAMES.len()],
        })
        .collect()
}

/// `nvmlDeviceGetMemoryInfo`'s `used`: what the other processes hold.
pub fn memory_used(index: u32, device: &Device, faults: &Faults) -> u64 {
    foreign_processes(index, device, faults)
        .iter()
        .map(|p| p.used_bytes)
        .sum()
}

/// `nvmlDeviceGetRetiredPagesPendingStatus`.
pub fn pages_pending_retirement(faults: &Faults) -> bool {
    faults.retired_pages > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throttled(names: &[&str]) -> Faults {
        Faults {
            throttle: names.iter().map(|n| n.to_string()).collect(),
            ..Faults::default()
        }
    }

    #[test]
    fn reasons_show_only_once_kernels_ran() {
        let faults = throttled(&["sw_thermal", "hw_slowdown", "no_such_reason"]);
        assert_eq!(clocks_event_reasons(&faults, 0), REASON_GPU_IDLE);
        assert_eq!(clocks_event_reasons(&faults, 1), 0x20 | 0x8);
        assert_eq!(clocks_event_reasons(&Faults::default(), 5), 0);
        let all = throttled(&[
            "sw_thermal",
            "hw_slowdown",
            "hw_thermal",
            "hw_power_brake",
            "sw_power_cap",
        ]);
        assert_eq!(
            clocks_event_reasons(&all, 1),
            0x20 | 0x8 | 0x40 | 0x80 | 0x4
        );
    }

    #[test]
    fn a_power_cap_pulls_a_locked_clock_below_its_lock_as_a_hw_reason_does() {
        let device = Device::default();
        let lock = Some((1755, 1755));
        assert_eq!(clock_mhz(&device, ClockType::Sm, 0, lock), 1755);
        // "Reducing the clocks below requested clocks": 85% of the lock.
        assert_eq!(
            clock_mhz(&device, ClockType::Sm, REASON_SW_POWER_CAP, lock),
            1491
        );
        assert_eq!(
            clock_mhz(&device, ClockType::Sm, REASON_HW_SLOWDOWN, lock),
            990
        );
        // Never above the maximum, whatever was asked.
        assert_eq!(clock_mhz(&device, ClockType::Sm, 0, Some((0, 5000))), 1980);
    }

    #[test]
    fn throttling_lowers_the_clocks_and_heats_the_board() {
        let device = Device::default();
        assert_eq!(clock_mhz(&device, ClockType::Sm, 0, None), 1980);
        assert_eq!(
            clock_mhz(&device, ClockType::Sm, REASON_GPU_IDLE, None),
            1980
        );
        assert_eq!(
            clock_mhz(&device, ClockType::Sm, REASON_SW_THERMAL, None),
            1683
        );
        assert_eq!(
            clock_mhz(
                &device,
                ClockType::Sm,
                REASON_HW_SLOWDOWN | REASON_SW_POWER_CAP,
                None
            ),
            990
        );
        assert_eq!(
            clock_mhz(&device, ClockType::Memory, REASON_HW_SLOWDOWN, None),
            2619
        );
        assert_eq!(max_clock_mhz(&device, ClockType::Graphics), 1980);
        assert_eq!(temperature_c(REASON_GPU_IDLE, 0), 45);
        assert_eq!(temperature_c(0, 1), 62);
        assert_eq!(temperature_c(REASON_SW_THERMAL, 1), 87);
        assert_eq!(temperature_c(REASON_HW_THERMAL | REASON_SW_THERMAL, 1), 92);
        assert_eq!(power_mw(REASON_GPU_IDLE, 0), 72_000);
        assert_eq!(power_mw(0, 1), 420_000);
        assert_eq!(power_mw(REASON_SW_POWER_CAP, 1), POWER_LIMIT_MW);
    }

    #[test]
    fn other_processes_are_distinct_and_fit_in_memory() {
        let faults = Faults {
            other_processes: 4,
            ..Faults::default()
        };
        let device = Device::default();
        let first = foreign_processes(0, &device, &faults);
        let second = foreign_processes(1, &device, &faults);
        assert_eq!(first.len(), 4);
        assert_eq!(first[0].name, "python3");
        assert_eq!(first[3].name, "python3");
        assert!(first.iter().all(|p| second.iter().all(|q| q.pid != p.pid)));
        assert!(first.windows(2).all(|w| w[0].used_bytes > w[1].used_bytes));
        assert!(memory_used(0, &device, &faults) <= device.memory_gib << 29);
        assert!(foreign_processes(0, &device, &Faults::default()).is_empty());
    }

    #[test]
    fn memory_faults() {
        let faults = Faults {
            retired_pages: 3,
            row_remap_pending: true,
            ..Faults::default()
        };
        assert_eq!(retired_pages(&faults, true).len(), 3);
        assert!(retired_pages(&faults, false).is_empty());
        assert!(pages_pending_retirement(&faults));
        assert!(!pages_pending_retirement(&Faults::default()));
        assert_eq!(remapped_rows(&faults), (0, 1, true, false));
        assert_eq!(remapped_rows(&Faults::default()), (0, 0, false, false));
    }
}
