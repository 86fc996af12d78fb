//! Who each simulated device is, in NVML's words. Its PCI address and UUID come from
//! [`crate::state`], where the driver's `CU_DEVICE_ATTRIBUTE_PCI_*`, `cuDeviceGetPCIBusId` and
//! `cuDeviceGetUuid` find them too: a device found through either API is the same device.

use crate::profile::Device;
use crate::state::{self, Pci};

/// NVIDIA's PCI vendor id.
pub const NVIDIA_VENDOR_ID: u32 = 0x10de;

/// The PCI device id the simulated devices report (an H100 SXM's; the name says "simulated").
pub const PCI_DEVICE_ID: u32 = 0x2330;

/// The PCI subsystem id the simulated devices report.
pub const PCI_SUBSYSTEM_ID: u32 = 0x16c1_10de;

/// `nvmlPciInfo_t.busId`: `00000000:17:00.0`.
pub fn bus_id(pci: &Pci) -> String {
    pci.nvml_bus_id()
}

/// `nvmlPciInfo_t.busIdLegacy` (a 16-byte buffer, so a 4-digit domain): `0000:17:00.0`.
pub fn legacy_bus_id(pci: &Pci) -> String {
    format!(
        "{:04X}:{:02X}:{:02X}.0",
        pci.domain & 0xffff,
        pci.bus,
        pci.device
    )
}

/// Device `index`'s UUID as NVML and `nvidia-smi -L` give it:
/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, of the driver's 16 bytes.
pub fn uuid(index: u32, device: &Device) -> String {
    let hex: String = state::uuid(index as usize, device)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// A PCI bus id as `nvmlDeviceGetHandleByPciBusId_v2` takes it, all numbers hexadecimal:
/// `domain:bus:device.function`, `domain:bus:device` or `bus:device.function` (domain 0).
/// Returns the address and the function; `None` when it is none of these.
pub fn parse_bus_id(text: &str) -> Option<(Pci, u32)> {
    let hex = |s: &str| -> Option<u32> {
        let s = s.trim();
        let digits = s
            .strip_prefix("0x")
            .or_else(|| s.strip_prefix("0X"))
            .unwrap_or(s);
        if digits.is_empty() || digits.len() > 8 {
            return None;
        }
        u32::from_str_radix(digits, 16).ok()
    };
    let fields: Vec<&str> = text.trim().split(':').collect();
    let (domain, bus, rest) = match fields.as_slice() {
        [domain, bus, rest] => (hex(domain)?, hex(bus)?, *rest),
        [bus, rest] if rest.contains('.') => (0, hex(bus)?, *rest),
        _ => return None,
    };
    let (device, function) = match rest.split_once('.') {
        Some((device, function)) => (hex(device)?, hex(function)?),
        None => (hex(rest)?, 0),
    };
    if bus > 0xff || device > 0x1f || function > 7 {
        return None;
    }
    Some((
        Pci {
            domain,
            bus,
            device,
        },
        function,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_the_driver_s_bytes_as_nvidia_smi_shows_them() {
        let device = Device::default();
        assert_eq!(uuid(0, &device), uuid(0, &device));
        assert_ne!(uuid(0, &device), uuid(1, &device));
        let u = uuid(3, &device);
        assert_eq!(u.len(), 40);
        assert!(u.starts_with("GPU-"));
        let groups: Vec<usize> = u[4..].split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12]);
        let hex: String = state::uuid(3, &device)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(u.replace('-', "")[3..], hex);
    }

    #[test]
    fn bus_ids_in_every_documented_form() {
        let first = state::pci(0);
        let (bus, legacy) = (bus_id(&first), legacy_bus_id(&first));
        assert_eq!(bus, format!("00000000:{:02X}:00.0", first.bus));
        assert_eq!(legacy, format!("0000:{:02X}:00.0", first.bus));
        let harness = format!("{:x}:{:x}:{:x}.0", first.domain, first.bus, first.device);
        let short = format!("{:x}:00.0", first.bus);
        let no_function = format!("0:{:x}:0", first.bus);
        for text in [
            &bus,
            &legacy,
            &harness,
            &short,
            &no_function,
            &first.bus_id(),
        ] {
            assert_eq!(parse_bus_id(text), Some((first, 0)), "{text}");
        }
        assert_eq!(parse_bus_id("0:1b:0.1").map(|(_, f)| f), Some(1));
        for text in [
            "",
            "1b",
            "1b:00",
            "x:1b:0.0",
            "0:100:0.0",
            "0:1b:20.0",
            "0:1b:0.8",
            "a:b:c:d",
        ] {
            assert_eq!(parse_bus_id(text), None, "{text}");
        }
    }
}
