//! Who each simulated device is, as NVML and the driver both report it: its UUID and its PCI
//! location. The driver's `cuDeviceGetUuid` and `CU_DEVICE_ATTRIBUTE_PCI_*` answers must be the
//! same, or stackbench would find NVML's device by a bus id the driver never gave.

/// NVIDIA's PCI vendor id.
pub const NVIDIA_VENDOR_ID: u32 = 0x10de;

/// The PCI device id the simulated devices report (an H100 SXM's; the name says "simulated").
pub const PCI_DEVICE_ID: u32 = 0x2330;

/// The PCI subsystem id the simulated devices report.
pub const PCI_SUBSYSTEM_ID: u32 = 0x16c1_10de;

/// Where a device sits on PCI: `domain:bus:device.function` with function 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PciLocation {
    pub domain: u32,
    pub bus: u32,
    pub device: u32,
}

impl PciLocation {
    /// `00000000:1B:00.0`, as `nvmlPciInfo_t.busId` and `nvidia-smi` give it.
    pub fn bus_id(&self) -> String {
        format!("{:08X}:{:02X}:{:02X}.0", self.domain, self.bus, self.device)
    }

    /// `0000:1B:00.0`: `nvmlPciInfo_t.busIdLegacy` (a 16-byte buffer, so a 4-digit domain).
    pub fn legacy_bus_id(&self) -> String {
        format!(
            "{:04X}:{:02X}:{:02X}.0",
            self.domain & 0xffff,
            self.bus,
            self.device
        )
    }
}

/// The PCI location of device `index`: domain 0, buses 0x1b, 0x1c, ... (one GPU per bus, as on
/// a PCIe switch per GPU), device 0.
pub fn pci_location(index: u32) -> PciLocation {
    PciLocation {
        domain: 0,
        bus: (0x1b + index) & 0xff,
        device: 0,
    }
}

/// The 16 bytes of device `index`'s UUID: fixed per index (splitmix64 of a constant and the
/// index), so every run and both libraries give the same.
pub fn uuid_bytes(index: u32) -> [u8; 16] {
    let mut state = 0x5354_4b42_5349_4d00_u64 ^ u64::from(index).wrapping_mul(0x9e37_79b9);
    let mut bytes = [0u8; 16];
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&splitmix64(&mut state).to_be_bytes());
    }
    bytes
}

/// Device `index`'s UUID as NVML and `nvidia-smi -L` give it:
/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub fn uuid(index: u32) -> String {
    let hex: String = uuid_bytes(index)
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

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A PCI bus id as `nvmlDeviceGetHandleByPciBusId_v2` takes it, all numbers hexadecimal:
/// `domain:bus:device.function`, `domain:bus:device` or `bus:device.function` (domain 0).
/// Returns the location and the function; `None` when it is none of these.
pub fn parse_bus_id(text: &str) -> Option<(PciLocation, u32)> {
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
        PciLocation {
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
    fn uuids_are_fixed_distinct_and_formatted_as_nvidia_smi_shows_them() {
        assert_eq!(uuid(0), uuid(0));
        assert_ne!(uuid(0), uuid(1));
        let u = uuid(3);
        assert_eq!(u.len(), 40);
        assert!(u.starts_with("GPU-"));
        let groups: Vec<usize> = u[4..].split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12]);
    }

    #[test]
    fn bus_ids_in_every_documented_form() {
        let first = pci_location(0);
        assert_eq!(first.bus_id(), "00000000:1B:00.0");
        assert_eq!(first.legacy_bus_id(), "0000:1B:00.0");
        for text in [
            "00000000:1B:00.0",
            "0:1b:0.0",
            "0000:1b:00",
            "1b:00.0",
            " 0:1B:0 ",
        ] {
            assert_eq!(parse_bus_id(text), Some((first, 0)), "{text}");
        }
        assert_eq!(parse_bus_id("0:1b:0.1"), Some((first, 1)));
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
