//! PCIe ACS between each NVIDIA GPU and its nearest HCA. A bridge (a switch port, a root port)
//! whose ACS control register has P2P Request Redirect or P2P Completion Redirect set sends peer
//! traffic up to the root complex instead of across the switch: GPUDirect RDMA between the GPU
//! and its HCA slows down, or hangs NCCL. The devices' places come from sysfs (each
//! `/sys/bus/pci/devices/<bdf>` and `/sys/class/infiniband/<device>/device` links into
//! `/sys/devices/pci<domain>:<bus>/...`, one directory per bridge on the way); the register from
//! each bridge's `config` (the ACS extended capability, ID 0x000D, control at offset 6). Reading
//! config space beyond its first 256 bytes needs root: a bridge whose extended space cannot be
//! read is passed over.

use crate::diagnose::finding::{Cause, Finding, Severity};
use crate::discover::Host;
use std::path::{Path, PathBuf};

/// The ACS extended capability's ID.
const ACS: u16 = 0x000d;
/// ACS control bits that redirect peer traffic upstream: P2P Request Redirect (bit 2) and P2P
/// Completion Redirect (bit 3).
const REDIRECT: u16 = 0b1100;

/// `acs_redirect`: every GPU whose path to its nearest HCA crosses a redirecting bridge.
pub fn check(host: &Host, devices: &str) -> Vec<Finding> {
    let hcas: Vec<(String, PathBuf)> = (host.entries(devices).iter())
        .filter_map(|d| {
            let name = d.file_name()?.to_string_lossy().into_owned();
            Some((name, host.real(d.join("device"))?))
        })
        .collect();
    if hcas.is_empty() {
        return Vec::new();
    }
    gpus(host)
        .iter()
        .filter_map(|gpu| {
            let (hca, place) = nearest(gpu, &hcas)?;
            let redirecting: Vec<String> = between(gpu, place)
                .iter()
                .filter_map(|bridge| {
                    let control = acs_control(&host.read(bridge.join("config"))?)?;
                    (control & REDIRECT != 0)
                        .then(|| format!("{} (ACSCtl {control:#06x})", name_of(bridge)))
                })
                .collect();
            (!redirecting.is_empty()).then(|| finding(gpu, hca, place, &redirecting))
        })
        .collect()
}

fn finding(gpu: &Path, hca: &str, place: &Path, redirecting: &[String]) -> Finding {
    Finding::new(
        Severity::Warning,
        Cause::AcsRedirect,
        format!(
            "PCIe ACS redirects peer traffic on {} between GPU {} and its nearest HCA {hca} ({}): GPUDirect RDMA between them goes up through the root complex, slower, and can hang NCCL",
            redirecting.join(", "),
            name_of(gpu),
            name_of(place)
        ),
        "turn ACS off on those bridges: in the BIOS, or at each boot with `setpci -s <bridge> ECAP_ACS+0x6.w=0000` (NCCL's troubleshooting guide, \"PCI Access Control Services\"); a host that passes devices through to VMs needs it on".to_owned(),
    )
    .evidence(
        redirecting
            .iter()
            .map(|b| format!("{b}: P2P request or completion redirect set"))
            .collect(),
    )
}

/// The NVIDIA display and 3D controllers' places in `/sys/devices`.
fn gpus(host: &Host) -> Vec<PathBuf> {
    let text = |path: PathBuf| {
        host.read(path)
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
            .unwrap_or_default()
    };
    (host.entries("/sys/bus/pci/devices").iter())
        .filter(|d| text(d.join("vendor")) == "0x10de")
        .filter(|d| {
            let class = text(d.join("class"));
            class.starts_with("0x0300") || class.starts_with("0x0302")
        })
        .filter_map(|d| host.real(d))
        .collect()
}

/// The HCA whose place shares the longest path with `gpu`'s.
fn nearest<'a>(gpu: &Path, hcas: &'a [(String, PathBuf)]) -> Option<(&'a str, &'a Path)> {
    hcas.iter()
        .max_by_key(|(_, place)| shared(gpu, place))
        .map(|(name, place)| (name.as_str(), place.as_path()))
}

fn shared(a: &Path, b: &Path) -> usize {
    a.components()
        .zip(b.components())
        .take_while(|(x, y)| x == y)
        .count()
}

/// The bridges between two devices: from the last one they share (when it is a bridge, not the
/// host bridge `pci0000:00`) down each side, the devices themselves left out.
fn between(a: &Path, b: &Path) -> Vec<PathBuf> {
    let common = shared(a, b);
    let mut bridges = Vec::new();
    let meeting: PathBuf = a.components().take(common).collect();
    if is_bdf(&meeting) {
        bridges.push(meeting);
    }
    for side in [a, b] {
        let parts: Vec<_> = side.components().collect();
        for end in common + 1..parts.len() {
            let bridge: PathBuf = parts[..end].iter().collect();
            if is_bdf(&bridge) {
                bridges.push(bridge);
            }
        }
    }
    bridges
}

/// Whether `path` names a PCI function (`0000:17:00.0`).
fn is_bdf(path: &Path) -> bool {
    let name = name_of(path);
    let bytes = name.as_bytes();
    bytes.len() == 12 && bytes[4] == b':' && bytes[7] == b':' && bytes[10] == b'.'
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The ACS control register in `config` (a function's configuration space), if its extended
/// capabilities hold one and could be read.
pub fn acs_control(config: &[u8]) -> Option<u16> {
    let u16_at = |at: usize| Some(u16::from_le_bytes(config.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(config.get(at..at + 4)?.try_into().ok()?));
    let mut at = 0x100;
    // Each capability points at the next, at least 0x100 and dword-aligned; at most 0x3c0 of them
    // fit in 4 KiB, fewer hops than that mean a loop.
    for _ in 0..0x3c0 {
        let header = u32_at(at)?;
        if header == 0 || header == u32::MAX {
            return None;
        }
        if header & 0xffff == u32::from(ACS) {
            return u16_at(at + 6);
        }
        let next = (header >> 20) as usize & 0xffc;
        if next < 0x100 {
            return None;
        }
        at = next;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 4 KiB of config space with extended capabilities at 0x100 (AER, id 1) then ACS at 0x148
    /// with `control`.
    fn config(control: u16) -> Vec<u8> {
        let mut bytes = vec![0u8; 4096];
        bytes[0x100..0x104].copy_from_slice(&(1u32 | (0x148 << 20)).to_le_bytes());
        bytes[0x148..0x14c].copy_from_slice(&u32::from(ACS).to_le_bytes());
        bytes[0x14e..0x150].copy_from_slice(&control.to_le_bytes());
        bytes
    }

    #[test]
    fn the_acs_control_register_is_found_along_the_capability_list() {
        assert_eq!(acs_control(&config(0x001d)), Some(0x001d));
        assert_eq!(acs_control(&config(0)), Some(0));
        // No extended space (a user's read: 256 bytes), none at all, a loop.
        assert_eq!(acs_control(&config(0x1d)[..256]), None);
        assert_eq!(acs_control(&[0u8; 4096]), None);
        let mut looped = vec![0u8; 4096];
        looped[0x100..0x104].copy_from_slice(&(1u32 | (0x100 << 20)).to_le_bytes());
        assert_eq!(acs_control(&looped), None);
    }

    #[test]
    fn bridges_between_two_devices_are_their_meeting_point_and_each_side_down() {
        let root = Path::new("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0");
        let gpu = root.join("0000:02:08.0/0000:03:00.0");
        let hca = root.join("0000:02:10.0/0000:04:00.0");
        let names: Vec<String> = between(&gpu, &hca).iter().map(|b| name_of(b)).collect();
        assert_eq!(names, ["0000:01:00.0", "0000:02:08.0", "0000:02:10.0"]);
        let far = Path::new("/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0");
        let names: Vec<String> = between(&gpu, far).iter().map(|b| name_of(b)).collect();
        assert!(
            names.contains(&"0000:80:01.0".to_owned())
                && names.contains(&"0000:00:01.0".to_owned())
        );
        assert!(!names.contains(&"0000:03:00.0".to_owned()), "{names:?}");
    }
}
