//! The network NCCL would use between nodes, as the kernel shows it: the RDMA devices under
//! `/sys/class/infiniband` and their ports (`state`, `phys_state`, `rate`, `link_layer`), the
//! devices `NCCL_IB_HCA` selects and the interfaces `NCCL_SOCKET_IFNAME` selects (NCCL's syntax:
//! a list of name prefixes, `=` for exact names, `^` to exclude, `:port` after an HCA), and
//! whether GPUDirect RDMA can work (`nvidia_peermem` loaded, or DMA-BUF: NVIDIA's open kernel
//! module on Linux 5.12 or later), and the IOMMU mode of each device's group
//! (`<device>/device/iommu_group/type`: `identity` is passthrough, `DMA`/`DMA-FQ` translated),
//! and PCIe ACS on the bridges between each NVIDIA GPU and its nearest HCA ([`acs`]). Judged where `/sys/class/infiniband` has devices: a live host
//! with RDMA hardware, or a support bundle's tree read with `--sysroot`.

use super::finding::{Cause, Finding, Severity};
use super::network::SOCKETS;
use super::Context;

pub mod acs;
use crate::discover::Host;
use std::path::Path;

const DEVICES: &str = "/sys/class/infiniband";

/// One port of an RDMA device, as sysfs gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Port {
    pub device: String,
    pub port: String,
    /// `4: ACTIVE`.
    pub state: String,
    /// `5: LinkUp`.
    pub phys_state: String,
    /// `400 Gb/sec (4X NDR)`.
    pub rate: String,
    /// `InfiniBand` or `Ethernet` (RoCE).
    pub link_layer: String,
}

impl Port {
    pub fn active(&self) -> bool {
        self.state.ends_with("ACTIVE")
    }

    /// Its rate, Gb/s (`400 Gb/sec (4X NDR)` is 400), when sysfs gave one.
    pub fn gbps(&self) -> Option<f64> {
        self.rate.split_whitespace().next()?.parse().ok()
    }

    /// The file its rate comes from, as the host names it.
    pub fn rate_file(&self) -> String {
        format!("{DEVICES}/{}/ports/{}/rate", self.device, self.port)
    }

    fn describe(&self) -> String {
        format!(
            "{} port {}: state {}, phys_state {}, rate {}, link_layer {}",
            self.device, self.port, self.state, self.phys_state, self.rate, self.link_layer
        )
    }
}

pub fn check(ctx: &Context) -> Vec<Finding> {
    let Some(host) = ctx.host else {
        return Vec::new();
    };
    let ports = ports(host);
    if ports.is_empty() {
        return Vec::new();
    }
    let mut findings = Vec::new();
    findings.extend(ports_down(&ports));
    findings.extend(hca_selection(host, &ports));
    findings.extend(interface_selection(host));
    findings.extend(gdr_readiness(host));
    findings.extend(iommu(host));
    findings.extend(acs::check(host, DEVICES));
    findings
}

/// `iommu_translated` for the RDMA devices whose IOMMU group translates DMA.
fn iommu(host: &Host) -> Option<Finding> {
    let translated: Vec<String> = (host.entries(DEVICES).iter())
        .filter_map(|device| {
            let kind = host.read(device.join("device/iommu_group/type"))?;
            let kind = String::from_utf8_lossy(&kind).trim().to_owned();
            let name = device.file_name()?.to_string_lossy().into_owned();
            kind.starts_with("DMA")
                .then(|| format!("{name}: {DEVICES}/{name}/device/iommu_group/type is {kind}"))
        })
        .collect();
    if translated.is_empty() {
        return None;
    }
    Some(
        Finding::new(
            Severity::Warning,
            Cause::IommuTranslated,
            format!(
                "{} RDMA device(s) sit behind an IOMMU that translates their DMA (not passthrough): GPUDirect RDMA through them is slower, or fails, and NCCL's traffic between nodes with it",
                translated.len()
            ),
            "boot with the IOMMU in passthrough (`iommu=pt`, beside `intel_iommu=on` or `amd_iommu=on`), or off where nothing needs it; NCCL's troubleshooting guide asks for this for GPUDirect".to_owned(),
        )
        .evidence(translated),
    )
}

/// Every port of every RDMA device (64 devices of 64 ports at most), by device and port.
pub fn ports(host: &Host) -> Vec<Port> {
    let text = |path: &Path| {
        host.read(path)
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
            .unwrap_or_else(|| "unknown".into())
    };
    let mut ports = Vec::new();
    for device in host.entries(DEVICES).into_iter().take(64) {
        let Some(name) = device.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        for port in host.entries(device.join("ports")).iter().take(64) {
            ports.push(Port {
                device: name.clone(),
                port: port
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                state: text(&port.join("state")),
                phys_state: text(&port.join("phys_state")),
                rate: text(&port.join("rate")),
                link_layer: text(&port.join("link_layer")),
            });
        }
    }
    ports.sort_by(|a, b| (&a.device, &a.port).cmp(&(&b.device, &b.port)));
    ports
}

/// `rdma_port_down` for the ports not ACTIVE: an error when none is.
fn ports_down(ports: &[Port]) -> Option<Finding> {
    let down: Vec<&Port> = ports.iter().filter(|p| !p.active()).collect();
    let first = down.first()?;
    let none_up = down.len() == ports.len();
    let infiniband = down.iter().any(|p| p.link_layer == "InfiniBand");
    let (severity, consequence) = match none_up {
        true => (Severity::Error, SOCKETS.to_owned()),
        false => (
            Severity::Warning,
            "NCCL uses the other ports, with less bandwidth between nodes".to_owned(),
        ),
    };
    let mut fix = "check the cable and the switch port (`ibstat`, `ibv_devinfo`); `phys_state` LinkUp with `state` INIT means no subnet manager has configured the port".to_owned();
    if infiniband {
        fix.push_str(": start one on the fabric (opensm, or the switch's own)");
    }
    Some(
        Finding::new(
            severity,
            Cause::RdmaPortDown,
            format!(
                "{} of {} RDMA port(s) not active ({} port {}: {}): {consequence}",
                down.len(),
                ports.len(),
                first.device,
                first.port,
                first.state
            ),
            fix,
        )
        .evidence(ports.iter().map(Port::describe).collect()),
    )
}

/// NCCL's device selection (`NCCL_IB_HCA`, `NCCL_SOCKET_IFNAME`): whether `value` selects
/// `name` (its `:port` suffix, for an HCA, left out).
fn selects(value: &str, name: &str) -> bool {
    let (exclude, rest) = match value.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let (exact, list) = match rest.strip_prefix('=') {
        Some(list) => (true, list),
        None => (false, rest),
    };
    let listed = list
        .split(',')
        .map(|item| item.split(':').next().unwrap_or_default().trim())
        .filter(|item| !item.is_empty())
        .any(|item| match exact {
            true => name == item,
            false => name.starts_with(item),
        });
    listed != exclude
}

/// `nccl_net_fallback` when `NCCL_IB_HCA` selects none of the devices.
fn hca_selection(host: &Host, ports: &[Port]) -> Option<Finding> {
    let value = host.env.get("NCCL_IB_HCA").filter(|v| !v.is_empty())?;
    let mut devices: Vec<&str> = ports.iter().map(|p| p.device.as_str()).collect();
    devices.dedup();
    if devices.iter().any(|d| selects(value, d)) {
        return None;
    }
    Some(
        Finding::new(
            Severity::Error,
            Cause::NcclNetFallback,
            format!(
                "NCCL_IB_HCA={value} selects none of this host's RDMA devices ({}): {SOCKETS}",
                devices.join(", ")
            ),
            format!(
                "set NCCL_IB_HCA to the devices this host has (e.g. NCCL_IB_HCA={}), or unset it",
                devices.join(",")
            ),
        )
        .evidence(ports.iter().map(Port::describe).collect()),
    )
}

/// `nccl_interface_missing` when `NCCL_SOCKET_IFNAME` selects none of the interfaces.
fn interface_selection(host: &Host) -> Option<Finding> {
    let value = host
        .env
        .get("NCCL_SOCKET_IFNAME")
        .filter(|v| !v.is_empty())?;
    let mut interfaces: Vec<String> = (host.entries("/sys/class/net").iter())
        .filter_map(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
        .collect();
    interfaces.sort();
    if interfaces.is_empty() || interfaces.iter().any(|i| selects(value, i)) {
        return None;
    }
    Some(Finding::new(
        Severity::Error,
        Cause::NcclInterfaceMissing,
        format!(
            "NCCL_SOCKET_IFNAME={value} selects none of this host's network interfaces ({}): NCCL cannot start its bootstrap (\"Bootstrap : no socket interface found\") and every job across nodes fails",
            interfaces.join(", ")
        ),
        "set NCCL_SOCKET_IFNAME to an interface the nodes reach each other on (`ip -br addr`), or unset it".to_owned(),
    ))
}

/// `gdr_disabled` on a host with an NVIDIA kernel module loaded and neither `nvidia_peermem` nor
/// DMA-BUF (the open kernel module on Linux 5.12 or later).
fn gdr_readiness(host: &Host) -> Option<Finding> {
    let version = host.read("/proc/driver/nvidia/version")?;
    let version = String::from_utf8_lossy(&version);
    if host.is_dir("/sys/module/nvidia_peermem") {
        return None;
    }
    let open = version.contains("Open Kernel Module");
    let kernel = host
        .read("/proc/sys/kernel/osrelease")
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let numbers: Vec<u32> = (kernel.split(['.', '-']))
        .take(2)
        .filter_map(|n| n.parse().ok())
        .collect();
    let dmabuf_kernel = matches!(numbers[..], [major, minor] if (major, minor) >= (5, 12));
    if open && dmabuf_kernel {
        return None;
    }
    let module = version.lines().next().unwrap_or_default().trim().to_owned();
    Some(
        Finding::new(
            Severity::Warning,
            Cause::GdrDisabled,
            "GPUDirect RDMA cannot work here: nvidia_peermem is not loaded, and DMA-BUF needs NVIDIA's open kernel module on Linux 5.12 or later; NCCL stages the traffic between nodes through host memory, slower and with more CPU".to_owned(),
            "`modprobe nvidia_peermem` (shipped with the driver; load it at boot), or the open kernel module on a 5.12+ kernel with NCCL_DMABUF_ENABLE=1".to_owned(),
        )
        .evidence(vec![
            "/sys/module/nvidia_peermem: absent".to_owned(),
            format!("/proc/driver/nvidia/version: {module}"),
            format!("kernel {}", if kernel.is_empty() { "unknown" } else { &kernel }),
        ]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_reads_as_nccl_s() {
        assert!(selects("mlx5", "mlx5_0"));
        assert!(selects("mlx5_0:1,mlx5_1:1", "mlx5_1"));
        assert!(!selects("=mlx5", "mlx5_0"));
        assert!(selects("=mlx5_0", "mlx5_0"));
        assert!(!selects("^mlx5", "mlx5_3"));
        assert!(selects("^mlx5_0", "mlx5_3"));
        assert!(selects("^=ib0", "ib01"));
        assert!(!selects("ib", "eth0"));
    }

    fn port(state: &str) -> Port {
        Port {
            device: "mlx5_0".into(),
            port: "1".into(),
            state: state.into(),
            phys_state: "5: LinkUp".into(),
            rate: "400 Gb/sec (4X NDR)".into(),
            link_layer: "InfiniBand".into(),
        }
    }

    #[test]
    fn a_port_not_active_is_named_and_all_down_is_an_error() {
        assert!(ports_down(&[port("4: ACTIVE")]).is_none());
        let all = ports_down(&[port("2: INIT")]).unwrap();
        assert_eq!(all.severity, Severity::Error);
        assert!(
            all.message.contains("mlx5_0 port 1: 2: INIT"),
            "{}",
            all.message
        );
        assert!(all.fix.contains("opensm"), "{}", all.fix);
        let mut other = port("4: ACTIVE");
        other.device = "mlx5_1".into();
        let one = ports_down(&[port("1: DOWN"), other]).unwrap();
        assert_eq!(one.severity, Severity::Warning);
        assert!(
            one.message.starts_with("1 of 2 RDMA port(s)"),
            "{}",
            one.message
        );
    }
}
