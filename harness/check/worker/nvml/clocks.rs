//! The clocks event (throttle) reasons: NVML's call for them, under either of its names, and the
//! names of the reasons that hold a GPU back.

use nvml_wrapper::error::{nvml_sym, nvml_try, NvmlError};
use nvml_wrapper::Device;

/// The current clocks event reasons as NVML gives them, unknown bits included:
/// `nvmlDeviceGetCurrentClocksEventReasons` (NVML 12.2 and later), else its older name
/// `nvmlDeviceGetCurrentClocksThrottleReasons` (same signature and bits).
pub fn clocks_event_reasons(device: &Device) -> Result<u64, NvmlError> {
    let lib = device.nvml().lib();
    let function = nvml_sym(lib.nvmlDeviceGetCurrentClocksEventReasons.as_ref())
        .or_else(|_| nvml_sym(lib.nvmlDeviceGetCurrentClocksThrottleReasons.as_ref()))?;
    let mut reasons = 0;
    // SAFETY: the handle comes from nvmlDeviceGetHandleByIndex_v2 of the NVML that is still
    // initialised (the device borrows it), both names have this signature in every NVML that
    // exports them (nvml.h: one `unsigned long long *` output), and the output is a live local.
    let status = unsafe { function(device.handle(), &mut reasons) };
    nvml_try(status)?;
    Ok(reasons)
}

/// `nvmlClocksEventReasonGpuIdle` and `...ApplicationsClocksSetting`: not a problem.
const HARMLESS_CLOCK_EVENTS: u64 = 0x1 | 0x2;

/// The clocks event reasons that hold a GPU back, most serious first (nvml.h's bits).
const CLOCK_EVENTS: &[(u64, &str)] = &[
    (0x8, "HW slowdown"),
    (0x40, "HW thermal"),
    (0x80, "power brake"),
    (0x4, "SW power cap"),
    (0x20, "SW thermal"),
    (0x10, "sync boost"),
    (0x100, "display clocks"),
];

/// The names of the reasons in `bits` that hold the clocks back; unknown bits by value.
pub fn clock_event_names(bits: u64) -> Vec<String> {
    let mut names: Vec<String> = CLOCK_EVENTS
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, name)| (*name).to_owned())
        .collect();
    let known = CLOCK_EVENTS
        .iter()
        .fold(HARMLESS_CLOCK_EVENTS, |all, (bit, _)| all | bit);
    let unknown = bits & !known;
    if unknown != 0 {
        names.push(format!("unknown reason {unknown:#x}"));
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::idle(0x1, &[])]
    #[case::applications_clocks(0x2, &[])]
    #[case::most_serious_first(0x4 | 0x8, &["HW slowdown", "SW power cap"])]
    #[case::unknown_bits_by_value(0x20 | 0x3000, &["SW thermal", "unknown reason 0x3000"])]
    fn clock_events_by_name(#[case] bits: u64, #[case] names: &[&str]) {
        assert_eq!(clock_event_names(bits), names);
    }
}
