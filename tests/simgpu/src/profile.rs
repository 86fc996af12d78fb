//! The simulated host: its devices, the node they form and the faults they show, read from the
//! TOML file `STACKBENCH_SIM_PROFILE` names, or one H100-like device without faults.

use serde::Deserialize;
use std::net::Ipv4Addr;
use std::path::Path;

/// The environment variable naming the profile.
pub const PROFILE_VAR: &str = "STACKBENCH_SIM_PROFILE";

/// Everything the simulator is told.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    #[serde(default = "default_devices")]
    pub device: Vec<Device>,
    #[serde(default)]
    pub node: Node,
    #[serde(default)]
    pub network: Network,
    #[serde(default)]
    pub faults: Faults,
}

/// How the devices are joined (`[node]`). The defaults are one device's host: PCIe only, at the
/// host-device rate of [`crate::clock::PCIE_BYTES_PER_SECOND`], every device on NUMA node 0.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Node {
    /// With exactly one `[[device]]` (or none), that device repeated this many times; 0: the
    /// devices as listed (with several listed, it must be 0 or their number).
    pub gpus: usize,
    /// Every GPU reaches every other over NVLink through NVSwitches (an HGX board); `false`
    /// (the default): PCIe only, no NVLink at all.
    pub nvswitch: bool,
    /// NVLinks per GPU, each to an NVSwitch (only with `nvswitch`); 18 as on an H100.
    pub nvlinks_per_gpu: u32,
    /// GB/s (1e9 bytes) of one NVLink, per direction; 25.
    pub nvlink_gbs: f64,
    /// GB/s between the host and each device, per direction, and of peer copies over PCIe; 25.
    pub pcie_gbs: f64,
    /// Each device's NUMA node (`CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID`, `nvmlDeviceGetNumaNodeId`);
    /// empty (the default): all 0; else one per device.
    pub numa_node: Vec<u32>,
    /// The simulated node's address, which must be in 127.0.0.0/8: the simulated NCCL's
    /// bootstrap listens and connects only there, and processes whose profiles give the same
    /// address are on one node ([`crate::libs::nccl::net`]). `127.0.0.1`.
    pub address: Ipv4Addr,
}

impl Default for Node {
    fn default() -> Node {
        Node {
            gpus: 0,
            nvswitch: false,
            nvlinks_per_gpu: 18,
            nvlink_gbs: 25.0,
            pcie_gbs: crate::clock::PCIE_BYTES_PER_SECOND / 1e9,
            numa_node: Vec::new(),
            address: Ipv4Addr::LOCALHOST,
        }
    }
}

/// The node's network to other nodes (`[network]`), as NCCL finds it at its first
/// `ncclCommInitRank` ([`crate::libs::nccl::net`]). The defaults are a node without an RDMA
/// device, on a 25 GbE NIC.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Network {
    /// InfiniBand HCAs (`mlx5_0`, `mlx5_1`, ...), used when `libibverbs.so.1` also loads; 0.
    pub hcas: u32,
    /// Each HCA's link rate, Gb/s; 400 (NDR).
    pub hca_gbps: f64,
    /// The rate of NCCL's sockets between nodes, GB/s (1e9 bytes); 3.125 (25 GbE).
    pub socket_gbs: f64,
    /// GPUDirect RDMA works (the HCAs reach GPU memory directly); `true`.
    pub gdr: bool,
}

impl Default for Network {
    fn default() -> Network {
        Network {
            hcas: 0,
            hca_gbps: 400.0,
            socket_gbs: 3.125,
            gdr: true,
        }
    }
}

/// One simulated GPU.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Device {
    pub name: String,
    /// `"15.0"`: beyond every fixture NVRTC, so stackbench takes the PTX JIT path.
    pub compute_capability: String,
    pub memory_gib: u64,
    pub multiprocessors: u32,
    pub l2_mib: u64,
    /// The bandwidth copies and kernels reach, GB/s (a real card reaches about 90% of what
    /// its memory clock and bus give).
    pub memory_bandwidth_gbs: f64,
    /// The memory clock the driver reports, MHz (`CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE`).
    pub memory_clock_mhz: u32,
    /// The memory bus the driver reports, bits (`CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH`).
    pub memory_bus_bits: u32,
    pub fp32_tflops: f64,
    pub tf32_tflops: f64,
    pub fp16_tflops: f64,
    pub bf16_tflops: f64,
    /// Dense FP8 (E4M3) tensor-core TFLOP/s, what cuBLASLt's FP8 matmul runs at; 1979, an
    /// H100 SXM's.
    pub fp8_tflops: f64,
    /// The kernel driver's version, as NVML gives it (`580.95.05`).
    pub driver_version: String,
    /// The newest CUDA the driver supports (`cuDriverGetVersion`), `"13.0"`.
    pub cuda_version: String,
    /// Relative noise on every modelled duration.
    pub noise: f64,
    /// Relative spread of each rate (bandwidth, each peak) between processes.
    pub run_sigma: f64,
    /// Relative spread of each rate between boots.
    pub boot_sigma: f64,
    /// The boot's number: runs of one boot share its draws (`STACKBENCH_SIM_BOOT` overrides).
    pub boot: u64,
    /// Milliseconds of model time from a process's first operation during which its clocks
    /// ramp up: work at the start takes a quarter longer, falling linearly to nothing.
    pub ramp_ms: f64,
    /// Every modelled duration is multiplied by this.
    pub slowdown: f64,
    /// SM clock, MHz, when not throttled.
    pub sm_clock_mhz: u32,
    /// The SM clock a lock at NVML's TDP limit id (`NVML_CLOCK_LIMIT_ID_TDP`) holds, MHz: the
    /// clock the card sustains at its power limit. 1590, an H100 SXM's base clock.
    pub tdp_clock_mhz: u32,
    /// Pins every draw (noise, process and boot factors) for tests that need exact figures;
    /// without it each process draws afresh, as hardware varies.
    pub seed: Option<u64>,
}

impl Default for Device {
    fn default() -> Device {
        Device {
            name: "stackbench simulated GPU (H100-like)".into(),
            compute_capability: "15.0".into(),
            memory_gib: 80,
            multiprocessors: 132,
            l2_mib: 50,
            memory_bandwidth_gbs: 3350.0,
            memory_clock_mhz: 2619,
            memory_bus_bits: 5120,
            fp32_tflops: 67.0,
            tf32_tflops: 495.0,
            fp16_tflops: 989.0,
            bf16_tflops: 989.0,
            fp8_tflops: 1979.0,
            driver_version: "580.95.05".into(),
            cuda_version: "13.0".into(),
            noise: 0.005,
            slowdown: 1.0,
            sm_clock_mhz: 1980,
            tdp_clock_mhz: 1590,
            run_sigma: 0.01,
            boot_sigma: 0.01,
            boot: 0,
            ramp_ms: 5.0,
            seed: None,
        }
    }
}

impl Device {
    /// `(major, minor)` of the compute capability; `(15, 0)` when it does not parse.
    pub fn compute_capability(&self) -> (i32, i32) {
        let mut parts = self.compute_capability.split('.');
        let number = |p: Option<&str>| p.and_then(|p| p.trim().parse().ok());
        match (number(parts.next()), number(parts.next())) {
            (Some(major), Some(minor)) => (major, minor),
            _ => (15, 0),
        }
    }

    /// `cuDriverGetVersion`'s answer: 1000 x major + 10 x minor (13.0 -> 13000).
    pub fn driver_api_version(&self) -> i32 {
        let mut parts = self.cuda_version.split('.');
        let major: i32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(13);
        let minor: i32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        major * 1000 + minor * 10
    }
}

/// Faults, all off by default.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Faults {
    /// Uncorrected ECC errors NVML reports (volatile and aggregate).
    pub ecc_uncorrected: u64,
    /// Pages retired for double-bit errors.
    pub retired_pages: u32,
    /// A row remapping waits for a reset.
    pub row_remap_pending: bool,
    /// Clocks-event reasons reported once kernels have run: `sw_thermal`, `hw_slowdown`,
    /// `hw_thermal`, `hw_power_brake`, `sw_power_cap`.
    pub throttle: Vec<String>,
    /// A kernel (by its function name) whose launches never complete.
    pub kernel_hang: String,
    /// A kernel whose launches fail with `CUDA_ERROR_ILLEGAL_ADDRESS`.
    pub launch_error: String,
    /// Outputs perturbed: `vector_add`, `matmul`, `gemm`, `conv`, or an NCCL collective by its
    /// call (`ncclAllReduce`, `ncclAllGather`, `ncclReduceScatter`, `ncclBroadcast`).
    pub wrong_results: String,
    /// An NCCL collective that is enqueued on every rank's stream and never completes:
    /// `all_reduce`, `all_gather`, `reduce_scatter` or `broadcast`; empty: none.
    pub nccl_hang: String,
    /// Allocations that would take device memory in use past this many MiB fail with
    /// `CUDA_ERROR_OUT_OF_MEMORY` (0: never).
    pub out_of_memory_above_mib: u64,
    /// The GPU falls off the bus after this many driver calls (0: never).
    pub lost_after_calls: u64,
    /// Another subscriber holds CUPTI.
    pub cupti_busy: bool,
    /// Persistence mode is off (`nvmlDeviceGetPersistenceMode` answers disabled).
    pub persistence_off: bool,
    /// cuBLASLt has no FP8 kernel for the device, though its compute capability has FP8 tensor
    /// cores (Ada with a cuBLASLt before 12.1): its heuristic answers
    /// `CUBLAS_STATUS_NOT_SUPPORTED` for every FP8 matmul.
    pub no_fp8_kernels: bool,
    /// NVLinks that are down, as `[device, link]` pairs.
    pub nvlink_down: Vec<(usize, u32)>,
    /// The NVSwitch fabric is not ready (only with `nvswitch`): `in_progress` (the fabric
    /// manager has not finished) or `insufficient_resources` (it finished and failed); empty:
    /// healthy. Either way the driver refuses peer access between every pair.
    pub fabric_state: String,
    /// Device pairs `[a, b]` between which the driver refuses peer access (both ways), though
    /// the topology allows it and NVML says so.
    pub peer_access_denied: Vec<(usize, usize)>,
    /// Ordered pairs `[src, dst]`: what moves from device `src` to device `dst` arrives with
    /// bits flipped ([`crate::node::flip_bits`]): peer copies (over a link or staged through
    /// the host), a kernel on `src` storing into `dst`'s memory, and NCCL's collectives, whose
    /// output on `dst` holds data from `src`.
    pub corrupt_copy: Vec<(usize, usize)>,
    /// `[device, factor]`: every modelled duration of that device (kernels, copies, memsets,
    /// library work) is multiplied by `factor`.
    pub slow_device: Vec<(usize, f64)>,
    /// `[a, b, factor]`: copies between devices `a` and `b` (either way) take `factor` times as
    /// long.
    pub slow_link: Vec<(usize, usize, f64)>,
    /// Every rank of this node receives the outputs of collectives across processes
    /// (`ncclCommInitRank`) with bits flipped ([`crate::node::flip_bits`]), as from a failing
    /// NIC; a broadcast's root, which receives nothing, excepted.
    pub corrupt_receive: bool,
    /// Compute processes of other users on every device, as NVML lists them
    /// (`nvmlDeviceGetComputeRunningProcesses_v3`: pid and used memory; the name by
    /// `nvmlSystemGetProcessName`). Their work shares the device: each takes a time slice of
    /// every operation, so all work takes longer and varies more (see [`crate::clock`]).
    pub other_processes: u32,
}

/// The values `faults.fabric_state` may take.
const FABRIC_STATES: [&str; 3] = ["", "in_progress", "insufficient_resources"];

fn default_devices() -> Vec<Device> {
    vec![Device::default()]
}

impl Default for Profile {
    fn default() -> Profile {
        Profile {
            device: default_devices(),
            node: Node::default(),
            network: Network::default(),
            faults: Faults::default(),
        }
    }
}

impl Profile {
    /// The profile `STACKBENCH_SIM_PROFILE` names, else the default; a file that cannot be read
    /// or parsed is an error naming it.
    pub fn from_env() -> Result<Profile, String> {
        match std::env::var_os(PROFILE_VAR) {
            None => Ok(Profile::default()),
            Some(path) => Profile::read(Path::new(&path)),
        }
    }

    /// The profile in the TOML file at `path`.
    pub fn read(path: &Path) -> Result<Profile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{PROFILE_VAR}={}: {e}", path.display()))?;
        Profile::parse(&text).map_err(|e| format!("{PROFILE_VAR}={}: {e}", path.display()))
    }

    /// A profile from TOML text.
    pub fn parse(text: &str) -> Result<Profile, String> {
        let mut profile: Profile = toml::from_str(text).map_err(|e| e.to_string())?;
        if profile.device.is_empty() {
            return Err("at least one [[device]] is needed".into());
        }
        let gpus = profile.node.gpus;
        if gpus > 0 && profile.device.len() == 1 {
            profile.device = vec![profile.device[0].clone(); gpus];
        } else if gpus > 0 && gpus != profile.device.len() {
            return Err(format!(
                "node.gpus = {gpus}, but {} [[device]] are listed (list one, or set it to 0)",
                profile.device.len()
            ));
        }
        profile.check_node()?;
        Ok(profile)
    }

    /// Checks `[node]`, `[network]` and the node's faults against the devices: every device
    /// index in range, every link below `nvlinks_per_gpu`, every rate and factor positive, the
    /// address in 127.0.0.0/8.
    fn check_node(&self) -> Result<(), String> {
        let (node, faults, count) = (&self.node, &self.faults, self.device.len());
        let device = |key: &str, d: usize| {
            (d < count).then_some(()).ok_or(format!(
                "{key}: device {d} is out of range ({count} devices)"
            ))
        };
        let positive = |key: &str, x: f64| {
            (x > 0.0 && x.is_finite())
                .then_some(())
                .ok_or(format!("{key}: {x} is not a positive number"))
        };
        positive("node.nvlink_gbs", node.nvlink_gbs)?;
        positive("node.pcie_gbs", node.pcie_gbs)?;
        positive("network.hca_gbps", self.network.hca_gbps)?;
        positive("network.socket_gbs", self.network.socket_gbs)?;
        if !node.address.is_loopback() {
            return Err(format!(
                "node.address: {} is outside 127.0.0.0/8 (a simulated node's address is on the \
                 loopback)",
                node.address
            ));
        }
        if !node.numa_node.is_empty() && node.numa_node.len() != count {
            return Err(format!(
                "node.numa_node: {} entries for {count} devices",
                node.numa_node.len()
            ));
        }
        for &(d, link) in &faults.nvlink_down {
            device("faults.nvlink_down", d)?;
            if link >= node.nvlinks_per_gpu {
                return Err(format!(
                    "faults.nvlink_down: link {link} of device {d}, but node.nvlinks_per_gpu = {}",
                    node.nvlinks_per_gpu
                ));
            }
        }
        if !FABRIC_STATES.contains(&faults.fabric_state.as_str()) {
            return Err(format!(
                "faults.fabric_state: {:?} is none of \"in_progress\", \"insufficient_resources\"",
                faults.fabric_state
            ));
        }
        if !crate::libs::nccl::types::HANG_NAMES.contains(&faults.nccl_hang.as_str()) {
            return Err(format!(
                "faults.nccl_hang: {:?} is none of \"all_reduce\", \"all_gather\", \
                 \"reduce_scatter\", \"broadcast\"",
                faults.nccl_hang
            ));
        }
        for &(a, b) in &faults.peer_access_denied {
            device("faults.peer_access_denied", a)?;
            device("faults.peer_access_denied", b)?;
        }
        for &(a, b) in &faults.corrupt_copy {
            device("faults.corrupt_copy", a)?;
            device("faults.corrupt_copy", b)?;
        }
        for &(d, factor) in &faults.slow_device {
            device("faults.slow_device", d)?;
            positive("faults.slow_device", factor)?;
        }
        for &(a, b, factor) in &faults.slow_link {
            device("faults.slow_link", a)?;
            device("faults.slow_link", b)?;
            positive("faults.slow_link", factor)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_s_profile_parses_and_defaults_fill_the_rest() {
        let profile = Profile::parse(
            r#"
            [[device]]
            name = "stackbench simulated GPU (H100-like)"
            compute_capability = "15.0"
            memory_gib = 80
            multiprocessors = 132
            l2_mib = 50
            memory_bandwidth_gbs = 3350
            fp32_tflops = 67
            tf32_tflops = 495
            fp16_tflops = 989
            bf16_tflops = 989
            driver_version = "580.95.05"
            cuda_version = "13.0"
            noise = 0.005
            slowdown = 1.0

            [[device]]
            name = "second"

            [faults]
            throttle = ["sw_thermal"]
            kernel_hang = "vector_add"
            "#,
        )
        .unwrap();
        assert_eq!(profile.device.len(), 2);
        assert_eq!(profile.device[0].compute_capability(), (15, 0));
        assert_eq!(profile.device[0].driver_api_version(), 13000);
        assert_eq!(profile.device[1].memory_gib, 80);
        assert_eq!(profile.device[1].fp8_tflops, 1979.0);
        assert_eq!(profile.faults.throttle, ["sw_thermal"]);
        assert_eq!(profile.faults.kernel_hang, "vector_add");
        assert_eq!(profile.faults.lost_after_calls, 0);
    }

    #[test]
    fn no_file_is_one_h100_like_device_and_a_typo_is_an_error() {
        assert_eq!(Profile::default().device.len(), 1);
        assert!(Profile::parse("[faults]\nkernel_hangs = \"x\"\n").is_err());
        assert!(Profile::parse("device = []\n").is_err());
    }

    #[test]
    fn a_node_s_address_is_on_the_loopback_and_its_network_has_defaults() {
        let default = Profile::default();
        assert_eq!(default.node.address, Ipv4Addr::LOCALHOST);
        assert_eq!(default.network.hcas, 0);
        assert_eq!(default.network.hca_gbps, 400.0);
        assert_eq!(default.network.socket_gbs, 3.125);
        assert!(default.network.gdr && !default.faults.corrupt_receive);
        let node = Profile::parse(
            "[node]\naddress = \"127.0.0.3\"\n[network]\nhcas = 2\ngdr = false\n\
             [faults]\ncorrupt_receive = true\n",
        )
        .unwrap();
        assert_eq!(node.node.address, Ipv4Addr::new(127, 0, 0, 3));
        assert_eq!((node.network.hcas, node.network.gdr), (2, false));
        assert!(node.faults.corrupt_receive);
        let error = |text: &str| Profile::parse(text).unwrap_err();
        assert!(error("[node]\naddress = \"10.0.0.1\"\n").contains("outside 127.0.0.0/8"));
        assert!(error("[node]\naddress = \"128.0.0.1\"\n").contains("node.address"));
        assert!(error("[node]\naddress = \"localhost\"\n").contains("address"));
        assert!(error("[network]\nsocket_gbs = 0\n").contains("network.socket_gbs"));
        assert!(error("[network]\nhca_gbps = -1\n").contains("network.hca_gbps"));
        assert!(error("[network]\nnics = 1\n").contains("nics"));
    }

    #[test]
    fn a_node_repeats_its_one_device_and_its_faults_name_devices_in_range() {
        let profile = Profile::parse(
            r#"
            [node]
            gpus = 8
            nvswitch = true
            numa_node = [0, 0, 0, 0, 1, 1, 1, 1]

            [faults]
            nvlink_down = [[3, 7]]
            fabric_state = "insufficient_resources"
            peer_access_denied = [[1, 2]]
            slow_device = [[5, 1.15]]
            slow_link = [[0, 4, 1.4]]
            "#,
        )
        .unwrap();
        assert_eq!(profile.device.len(), 8);
        assert_eq!(profile.node.nvlinks_per_gpu, 18);
        assert_eq!(profile.node.pcie_gbs, 25.0);
        assert_eq!(profile.faults.nvlink_down, [(3, 7)]);
        assert_eq!(profile.faults.slow_link, [(0, 4, 1.4)]);
        let error = |text: &str| Profile::parse(text).unwrap_err();
        let fault = "[node]\ngpus = 4\n[faults]\n";
        assert!(error(&format!("{fault}nvlink_down = [[4, 0]]")).contains("faults.nvlink_down"));
        assert!(error(&format!("{fault}nvlink_down = [[0, 18]]")).contains("nvlinks_per_gpu"));
        assert!(error(&format!("{fault}fabric_state = \"x\"")).contains("faults.fabric_state"));
        assert!(error(&format!("{fault}nccl_hang = \"allreduce\"")).contains("nccl_hang"));
        assert!(error(&format!("{fault}slow_link = [[0, 9, 2.0]]")).contains("faults.slow_link"));
        assert!(error(&format!("{fault}slow_device = [[0, 0.0]]")).contains("slow_device"));
        assert!(error(&format!("{fault}corrupt_copy = [[0, 4]]")).contains("corrupt_copy"));
        assert!(error("[node]\nnuma_node = [0, 1]\n").contains("node.numa_node"));
        assert!(error("[node]\ngpus = 3\n[[device]]\n[[device]]\n").contains("node.gpus"));
        assert!(error("[node]\nnvlinks = 3\n").contains("nvlinks"));
    }
}
