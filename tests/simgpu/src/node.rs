//! The node the devices form, as both the driver and NVML see it: which NVLinks are up, whether
//! the NVSwitch fabric is ready, which pairs the driver lets reach each other, and the rate of a
//! copy between two devices.
//!
//! The rate of a peer copy between devices `a` and `b`, GB/s, is [`link_gbs`] over the route it
//! takes, divided by the `slow_link` factor of the pair and the larger `slow_device` factor of
//! the two ([`peer_gbs`]):
//!
//! - over NVLink (an `nvswitch` node, peer access enabled the way the copy goes, which needs a
//!   ready fabric and both devices with a link up): `min(links up on a, links up on b) x
//!   nvlink_gbs`;
//! - over PCIe (a PCIe-only node, peer access enabled): `pcie_gbs`;
//! - staged through host memory (peer access not enabled, or refused): `pcie_gbs / 2`.
//!
//! Each direction has its own rate: NVLink and PCIe are full duplex.

use crate::profile::Profile;

/// The product of the factors `faults.slow_device` gives device `d` (1 when none).
pub fn slow_device(profile: &Profile, d: usize) -> f64 {
    (profile.faults.slow_device.iter())
        .filter(|(at, _)| *at == d)
        .map(|(_, factor)| factor)
        .product()
}

/// The product of the factors `faults.slow_link` gives the pair `a`, `b` (1 when none).
pub fn slow_link(profile: &Profile, a: usize, b: usize) -> f64 {
    (profile.faults.slow_link.iter())
        .filter(|(x, y, _)| (*x, *y) == (a, b) || (*x, *y) == (b, a))
        .map(|(_, _, factor)| factor)
        .product()
}

/// Whether `faults.corrupt_copy` corrupts what moves from device `src` to device `dst`.
pub fn corrupts(profile: &Profile, src: usize, dst: usize) -> bool {
    src != dst && profile.faults.corrupt_copy.contains(&(src, dst))
}

/// The byte of a corrupted transfer whose bit is flipped first, when it holds that many.
pub const FIRST_FLIPPED: usize = 1000;

/// A corrupted transfer as `faults.corrupt_copy` leaves it: bit 2 flipped in the byte at
/// [`FIRST_FLIPPED`] (the last byte of a shorter one) and in every 4096th byte after it, as a
/// failing link or copy engine leaves scattered bits wrong.
pub fn flip_bits(bytes: &mut [u8]) {
    let Some(last) = bytes.len().checked_sub(1) else {
        return;
    };
    for at in (FIRST_FLIPPED.min(last)..bytes.len()).step_by(4096) {
        bytes[at] ^= 0x04;
    }
}

/// Whether NVLink `link` of device `d` exists and is up.
pub fn link_up(profile: &Profile, d: usize, link: u32) -> bool {
    profile.node.nvswitch
        && link < profile.node.nvlinks_per_gpu
        && !profile.faults.nvlink_down.contains(&(d, link))
}

/// How many NVLinks of device `d` are up (0 on a PCIe-only node).
pub fn links_up(profile: &Profile, d: usize) -> u32 {
    (0..profile.node.nvlinks_per_gpu)
        .filter(|link| link_up(profile, d, *link))
        .count() as u32
}

/// Whether `a` and `b` are joined by NVLink (through the switches): both have a link up. What
/// the hardware allows, whatever the fabric manager or the driver make of it.
pub fn nvlink_between(profile: &Profile, a: usize, b: usize) -> bool {
    a != b && links_up(profile, a) > 0 && links_up(profile, b) > 0
}

/// Whether the NVSwitch fabric is ready (always on a PCIe-only node, which has none).
pub fn fabric_ready(profile: &Profile) -> bool {
    !profile.node.nvswitch || profile.faults.fabric_state.is_empty()
}

/// The NUMA node of device `d`.
pub fn numa(profile: &Profile, d: usize) -> u32 {
    profile.node.numa_node.get(d).copied().unwrap_or(0)
}

/// `cuDeviceCanAccessPeer`: whether the driver lets `a` reach `b`'s memory. On an `nvswitch`
/// node: over NVLink, with the fabric ready; on a PCIe-only node: always (a PCIe switch allows
/// it); never a device itself, nor a pair in `peer_access_denied`.
pub fn can_access_peer(profile: &Profile, a: usize, b: usize) -> bool {
    let denied = (profile.faults.peer_access_denied.iter())
        .any(|&(x, y)| (x, y) == (a, b) || (x, y) == (b, a));
    let route = if profile.node.nvswitch {
        fabric_ready(profile) && nvlink_between(profile, a, b)
    } else {
        true
    };
    a != b && route && !denied
}

/// The nominal rate, GB/s, of a copy between `a` and `b` by the route it takes: NVLink or PCIe
/// when peer access is `enabled` the way it goes (and the driver allows it), else staged
/// through the host (see the module's doc). No fault's factor is applied.
pub fn link_gbs(profile: &Profile, a: usize, b: usize, enabled: bool) -> f64 {
    let node = &profile.node;
    if !(enabled && can_access_peer(profile, a, b)) {
        node.pcie_gbs / 2.0
    } else if node.nvswitch {
        f64::from(links_up(profile, a).min(links_up(profile, b))) * node.nvlink_gbs
    } else {
        node.pcie_gbs
    }
}

/// The rate, GB/s, of a large copy between `a` and `b`: [`link_gbs`] over the pair's
/// `slow_link` factor and the larger `slow_device` factor of the two.
pub fn peer_gbs(profile: &Profile, a: usize, b: usize, enabled: bool) -> f64 {
    let slow = slow_device(profile, a).max(slow_device(profile, b));
    link_gbs(profile, a, b, enabled) / (slow_link(profile, a, b) * slow)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(faults: &str) -> Profile {
        Profile::parse(&format!(
            "[node]\ngpus = 8\nnvswitch = true\n[faults]\n{faults}\n"
        ))
        .unwrap()
    }

    #[test]
    fn links_fabric_and_denials_decide_the_route_and_its_rate() {
        let healthy = node("");
        assert!(can_access_peer(&healthy, 0, 7));
        assert!(!can_access_peer(&healthy, 3, 3));
        assert_eq!(link_gbs(&healthy, 0, 1, true), 450.0);
        assert_eq!(link_gbs(&healthy, 0, 1, false), 12.5);
        let down = node("nvlink_down = [[3, 7]]");
        assert_eq!(links_up(&down, 3), 17);
        assert_eq!(link_gbs(&down, 3, 0, true), 425.0);
        assert_eq!(link_gbs(&down, 1, 0, true), 450.0);
        let slow = node("slow_link = [[0, 4, 1.4]]\nslow_device = [[5, 1.15]]");
        assert!((peer_gbs(&slow, 4, 0, true) - 450.0 / 1.4).abs() < 1e-9);
        assert!((peer_gbs(&slow, 5, 1, true) - 450.0 / 1.15).abs() < 1e-9);
        let unready = node("fabric_state = \"in_progress\"");
        assert!(nvlink_between(&unready, 0, 1) && !can_access_peer(&unready, 0, 1));
        let denied = node("peer_access_denied = [[1, 2]]");
        assert!(!can_access_peer(&denied, 2, 1) && can_access_peer(&denied, 1, 3));
        assert_eq!(link_gbs(&denied, 1, 2, true), 12.5);
        let pcie = Profile::parse("[node]\ngpus = 4\npcie_gbs = 55\n").unwrap();
        assert!(can_access_peer(&pcie, 0, 3) && !nvlink_between(&pcie, 0, 3));
        assert_eq!(link_gbs(&pcie, 0, 3, true), 55.0);
        assert_eq!(link_gbs(&pcie, 0, 3, false), 27.5);
    }
}
