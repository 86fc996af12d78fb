//! What the links between nodes allow: each node's active RDMA ports and their rates, as sysfs
//! gives them (`/sys/class/infiniband/<device>/ports/<n>/{state,rate}`), and the ceiling they
//! put on a collective's bus bandwidth across nodes. A ring (or tree) across nodes moves every
//! byte of a node's share through that node's network ports, so nccl-tests' bus bandwidth across
//! nodes approaches the sum of one node's active port rates, and the slowest node's sum bounds
//! the job's. Below [`LOW`] of it is `nccl_bandwidth_low`: our rule, from nccl-tests' definitions,
//! not a figure NVIDIA publishes.

use crate::diagnose::finding::{Cause, Finding, Severity};
use crate::discover::Host;
use serde::{Deserialize, Serialize};

/// A collective's bus bandwidth below this share of its ceiling is a finding.
pub const LOW: f64 = 0.6;

/// One active RDMA port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Port {
    /// `mlx5_0:1`.
    pub name: String,
    /// Its rate, Gb/s (`400 Gb/sec (4X NDR)` is 400).
    pub gbps: f64,
    /// The file that says so.
    pub source: String,
}

/// The active ports of `host` ([`crate::diagnose::rdma::ports`]) with a rate, by device and
/// port.
pub fn active_ports(host: &Host) -> Vec<Port> {
    (crate::diagnose::rdma::ports(host).iter())
        .filter(|p| p.active())
        .filter_map(|p| {
            Some(Port {
                name: format!("{}:{}", p.device, p.port),
                gbps: p.gbps()?,
                source: p.rate_file(),
            })
        })
        .collect()
}

/// The ceiling on the job's bus bandwidth across nodes, and where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    /// GB/s: the slowest node's active port rates, summed, over 8.
    pub gbs: f64,
    /// That node.
    pub host: String,
    pub ports: Vec<Port>,
}

/// The ceiling of a job whose nodes have `ports` (by node); none for one node, or when a node
/// has no active RDMA port (sockets: nothing in sysfs says what the job may expect).
pub fn ceiling(nodes: &[(String, Vec<Port>)]) -> Option<Ceiling> {
    if nodes.len() < 2 || nodes.iter().any(|(_, ports)| ports.is_empty()) {
        return None;
    }
    nodes
        .iter()
        .map(|(host, ports)| Ceiling {
            gbs: ports.iter().map(|p| p.gbps).sum::<f64>() / 8.0,
            host: host.clone(),
            ports: ports.clone(),
        })
        .min_by(|a, b| a.gbs.total_cmp(&b.gbs))
}

impl Ceiling {
    /// `50 GB/s (sim2: mlx5_0:1 at 400 Gb/s)`.
    pub fn describe(&self) -> String {
        let ports: Vec<String> = (self.ports.iter())
            .map(|p| format!("{} at {} Gb/s", p.name, p.gbps))
            .collect();
        format!("{:.1} GB/s ({}: {})", self.gbs, self.host, ports.join(", "))
    }
}

/// `nccl_bandwidth_low` for a collective (`nccl.all_reduce`) whose bus bandwidth is below
/// [`LOW`] of the ceiling.
pub fn judge(check: &str, bus_gbs: f64, ceiling: &Ceiling) -> Option<Finding> {
    let share = bus_gbs / ceiling.gbs;
    if share.is_nan() || share >= LOW {
        return None;
    }
    Some(
        Finding::new(
            Severity::Warning,
            Cause::NcclBandwidthLow,
            format!(
                "{check}: bus bandwidth {bus_gbs:.1} GB/s across nodes is {:.0}% of the {} the slowest node's active RDMA ports allow",
                share * 100.0,
                ceiling.describe()
            ),
            "see which pair of nodes is slow in nccl.transport (NET/Socket, or NET/IB without /GDRDMA), check each HCA's rate and errors (`ibstat`, `perfquery`), and PCIe ACS between each GPU and its HCA".to_owned(),
        )
        .evidence(
            (ceiling.ports.iter())
                .map(|p| format!("{}: {} Gb/s ({})", p.name, p.gbps, p.source))
                .collect(),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn port(root: &Path, device: &str, state: &str, rate: &str) {
        let dir = root.join(format!("sys/class/infiniband/{device}/ports/1"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("state"), state).unwrap();
        std::fs::write(dir.join("rate"), rate).unwrap();
    }

    #[test]
    fn active_ports_and_their_rates_come_from_sysfs() {
        let root = tempfile::tempdir().unwrap();
        port(
            root.path(),
            "mlx5_0",
            "4: ACTIVE\n",
            "400 Gb/sec (4X NDR)\n",
        );
        port(root.path(), "mlx5_1", "1: DOWN\n", "400 Gb/sec (4X NDR)\n");
        port(
            root.path(),
            "mlx5_2",
            "4: ACTIVE\n",
            "200 Gb/sec (4X HDR)\n",
        );
        let ports = active_ports(&Host::below(root.path().to_path_buf()));
        let names: Vec<(&str, f64)> = ports.iter().map(|p| (p.name.as_str(), p.gbps)).collect();
        assert_eq!(names, [("mlx5_0:1", 400.0), ("mlx5_2:1", 200.0)]);
        assert!(ports[0].source.ends_with("infiniband/mlx5_0/ports/1/rate"));
        assert!(active_ports(&Host::below(root.path().join("none"))).is_empty());
    }

    fn p(name: &str, gbps: f64) -> Port {
        Port {
            name: name.into(),
            gbps,
            source: format!("/sys/class/infiniband/{name}/rate"),
        }
    }

    #[test]
    fn the_slowest_node_s_ports_set_the_ceiling_and_far_below_it_is_a_finding() {
        let nodes = [
            (
                "n1".to_owned(),
                vec![p("mlx5_0:1", 400.0), p("mlx5_1:1", 400.0)],
            ),
            ("n2".to_owned(), vec![p("mlx5_0:1", 400.0)]),
        ];
        let ceiling = ceiling(&nodes).unwrap();
        assert_eq!((ceiling.gbs, ceiling.host.as_str()), (50.0, "n2"));
        assert!(judge("nccl.all_reduce", 31.0, &ceiling).is_none());
        let low = judge("nccl.all_reduce", 3.1, &ceiling).unwrap();
        assert_eq!(low.cause, Cause::NcclBandwidthLow);
        assert!(
            low.message.contains(
                "3.1 GB/s across nodes is 6% of the 50.0 GB/s (n2: mlx5_0:1 at 400 Gb/s)"
            ),
            "{}",
            low.message
        );
        assert!(super::ceiling(&nodes[..1]).is_none());
        let socket = [nodes[0].clone(), ("n3".to_owned(), Vec::new())];
        assert!(super::ceiling(&socket).is_none());
    }
}
