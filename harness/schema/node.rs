//! What the node probe saw: each GPU's links and fabric, each pair's topology and peer access,
//! and the copy matrices. Part of `stackbench.check/v1` (the `node` field); only ever added to.

use crate::diagnose::finding::Finding;
use serde::{Deserialize, Serialize};

/// The node: its GPUs, their pairs, what copies measured, and the findings.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NodeReport {
    pub devices: Vec<NodeDevice>,
    /// Every unordered pair `a < b`.
    #[serde(default)]
    pub pairs: Vec<NodePair>,
    /// Every copy measured, host-device and device-device.
    #[serde(default)]
    pub copies: Vec<Copy>,
    /// Bytes per copy.
    pub copy_bytes: u64,
    /// Root cause first.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// What could not be asked or measured, and why.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One GPU of the node.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NodeDevice {
    /// CUDA ordinal (PCI bus order).
    pub index: u32,
    pub name: String,
    pub uuid: Option<String>,
    pub pci_bus_id: Option<String>,
    /// The host NUMA node its pinned buffers were placed on.
    pub numa_node: Option<i32>,
    /// Its NVLinks; empty on a GPU without any (PCIe only).
    pub nvlinks: Vec<NvLink>,
    /// The GPU fabric's state (Hopper and later on NVSwitch systems); absent where NVML has
    /// no such call or says the GPU is not part of a fabric.
    pub fabric: Option<Fabric>,
}

/// One NVLink of a GPU.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NvLink {
    pub link: u32,
    pub active: bool,
    pub version: Option<u32>,
    /// The bus id at the other end: a GPU's, or an NVSwitch's.
    pub remote_pci_bus_id: Option<String>,
}

/// `nvmlDeviceGetGpuFabricInfoV`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Fabric {
    /// `not_started`, `in_progress`, `completed`.
    pub state: String,
    /// NVML's status of the registration once completed (`0`: success).
    pub status: i32,
    pub clique_id: u32,
    pub cluster_uuid: String,
}

/// Two GPUs `a < b`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NodePair {
    pub a: u32,
    pub b: u32,
    /// NVML's common ancestor: `internal`, `single`, `multiple`, `hostbridge`, `node`,
    /// `system`.
    pub topology: Option<String>,
    /// NVML's P2P status for read, write, NVLink and atomics (`ok`, `not_supported`, ...).
    pub nvml: P2pStatus,
    /// `cuDeviceCanAccessPeer` a -> b and b -> a.
    pub can_access: [Option<bool>; 2],
    /// `cuDeviceGetP2PAttribute` PERFORMANCE_RANK a -> b.
    pub performance_rank: Option<i32>,
    /// `CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED` a -> b.
    pub native_atomics: Option<bool>,
    /// `cuCtxEnablePeerAccess`'s error, either way, when it failed.
    pub enable_error: Option<String>,
}

/// NVML's P2P status of a pair, per capability.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct P2pStatus {
    pub read: Option<String>,
    pub write: Option<String>,
    pub nvlink: Option<String>,
    pub atomics: Option<String>,
}

/// How a copy moves its bytes.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// A copy engine (`cuMemcpy*Async`).
    Ce,
    /// A kernel's loads and stores.
    Sm,
}

/// One copy measured: `src` to `dst` (`None`: the host), one way or both ways at once (the
/// figure is then this direction's).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Copy {
    pub engine: Engine,
    pub src: Option<u32>,
    pub dst: Option<u32>,
    pub both_ways: bool,
    /// Median over the repetitions, GB/s (1e9 bytes per second); absent when it failed.
    pub gbs: Option<f64>,
    /// The bytes arrived unchanged, every repetition.
    pub verified: bool,
    /// Where they did not: the offset of the first byte that arrived changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_wrong_byte: Option<u64>,
    /// The link's nominal peak per direction where it is known, GB/s: between GPUs, active
    /// NVLinks x 25 GB/s for NVLink 4... from the links' versions, as NVML gives them; between
    /// a Grace superchip's GPU and the host, NVLink-C2C's 450.
    pub peak_gbs: Option<f64>,
    /// Why it could not be measured, or what went wrong.
    pub error: Option<String>,
}

impl NodeReport {
    /// The copy `engine` from `src` to `dst`, one way or both.
    pub fn copy(
        &self,
        engine: Engine,
        src: Option<u32>,
        dst: Option<u32>,
        both_ways: bool,
    ) -> Option<&Copy> {
        self.copies.iter().find(|c| {
            c.engine == engine && c.src == src && c.dst == dst && c.both_ways == both_ways
        })
    }

    /// The pair of `a` and `b`, in either order.
    pub fn pair(&self, a: u32, b: u32) -> Option<&NodePair> {
        let (a, b) = (a.min(b), a.max(b));
        self.pairs.iter().find(|p| p.a == a && p.b == b)
    }

    /// The device of ordinal `index`.
    pub fn device(&self, index: u32) -> Option<&NodeDevice> {
        self.devices.iter().find(|d| d.index == index)
    }
}

impl NodeDevice {
    /// How many of its NVLinks are up.
    pub fn active_links(&self) -> usize {
        self.nvlinks.iter().filter(|l| l.active).count()
    }
}
