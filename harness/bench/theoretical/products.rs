//! NVIDIA's datasheet figures of the data-centre GPUs people benchmark most: what a theoretical
//! peak must reproduce (a test checks the architecture rates against them), and the clocks
//! NVIDIA computed them at, which a run uses for these products (the tensor figures of
//! Hopper assume a lower clock than the CUDA-core ones).

use crate::compat::ComputeCapability;

/// One product as its datasheet gives it; rates dense (a sparse figure halved).
pub struct Product {
    /// `H100 SXM5`
    pub label: &'static str,
    /// The names the driver gives it (`cuDeviceGetName`, NVML).
    pub names: &'static [&'static str],
    pub cc: ComputeCapability,
    pub sms: u32,
    /// The clock the CUDA-core (FP64, FP32) figures assume, MHz.
    pub boost_mhz: u32,
    /// The clock the tensor-core figures assume, MHz.
    pub tensor_mhz: u32,
    /// DRAM bandwidth, GB/s.
    pub memory_gbps: f64,
    /// The datasheet's dense figures: precision (as `bench` names them) and TFLOP/s (TOPS for
    /// `int8`).
    pub datasheet: &'static [(&'static str, f64)],
    /// Where the figures are written.
    pub source: &'static str,
}

const HOPPER: ComputeCapability = ComputeCapability::new(9, 0);
const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
const ADA: ComputeCapability = ComputeCapability::new(8, 9);
const BLACKWELL: ComputeCapability = ComputeCapability::new(10, 0);

/// H100 SXM5's and H200's dense figures: the same chip at the same clocks.
const HOPPER_SXM: &[(&str, f64)] = &[
    ("f64", 34.0),
    ("f32", 67.0),
    ("tf32", 494.7),
    ("bf16", 989.4),
    ("f16", 989.4),
    ("fp8", 1978.9),
    ("int8", 1978.9),
];

/// A100 40 GB's and 80 GB's dense figures: the same chip at the same clock.
const AMPERE_SXM: &[(&str, f64)] = &[
    ("f64", 9.7),
    ("f32", 19.5),
    ("tf32", 156.0),
    ("bf16", 312.0),
    ("f16", 312.0),
    ("int8", 624.0),
];

/// The products with known datasheets.
pub const PRODUCTS: [Product; 12] = [
    Product {
        label: "H100 SXM5",
        names: &["NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"],
        cc: HOPPER,
        sms: 132,
        boost_mhz: 1980,
        tensor_mhz: 1830,
        memory_gbps: 3350.0,
        datasheet: HOPPER_SXM,
        source: "NVIDIA H100 Tensor Core GPU datasheet; H100 whitepaper Table 3",
    },
    Product {
        label: "H100 PCIe",
        names: &["NVIDIA H100 PCIe"],
        cc: HOPPER,
        sms: 114,
        boost_mhz: 1755,
        tensor_mhz: 1620,
        memory_gbps: 2000.0,
        datasheet: &[
            ("f64", 26.0),
            ("f32", 51.0),
            ("tf32", 378.0),
            ("bf16", 756.0),
            ("f16", 756.0),
            ("fp8", 1513.0),
            ("int8", 1513.0),
        ],
        source: "NVIDIA H100 Tensor Core GPU datasheet; H100 whitepaper Table 3",
    },
    Product {
        label: "H100 NVL",
        names: &["NVIDIA H100 NVL"],
        cc: HOPPER,
        sms: 132,
        boost_mhz: 1785,
        tensor_mhz: 1545,
        memory_gbps: 3900.0,
        datasheet: &[
            ("f64", 30.0),
            ("f32", 60.0),
            ("tf32", 417.5),
            ("bf16", 835.5),
            ("f16", 835.5),
            ("fp8", 1670.5),
            ("int8", 1670.5),
        ],
        source: "NVIDIA H100 Tensor Core GPU datasheet (H100 NVL column); the tensor clock is \
                 the one its figures imply (NVIDIA does not publish it)",
    },
    Product {
        label: "H200 SXM",
        names: &["NVIDIA H200"],
        cc: HOPPER,
        sms: 132,
        boost_mhz: 1980,
        tensor_mhz: 1830,
        memory_gbps: 4800.0,
        datasheet: HOPPER_SXM,
        source: "NVIDIA H200 Tensor Core GPU datasheet",
    },
    Product {
        label: "A100 40GB SXM",
        names: &["NVIDIA A100-SXM4-40GB"],
        cc: AMPERE,
        sms: 108,
        boost_mhz: 1410,
        tensor_mhz: 1410,
        memory_gbps: 1555.0,
        datasheet: AMPERE_SXM,
        source: "NVIDIA A100 Tensor Core GPU datasheet; A100 whitepaper Table 1",
    },
    Product {
        label: "A100 80GB SXM",
        names: &["NVIDIA A100-SXM4-80GB"],
        cc: AMPERE,
        sms: 108,
        boost_mhz: 1410,
        tensor_mhz: 1410,
        memory_gbps: 2039.0,
        datasheet: AMPERE_SXM,
        source: "NVIDIA A100 Tensor Core GPU datasheet",
    },
    Product {
        label: "L40S",
        names: &["NVIDIA L40S"],
        cc: ADA,
        sms: 142,
        boost_mhz: 2520,
        tensor_mhz: 2520,
        memory_gbps: 864.0,
        datasheet: &[
            ("f32", 91.6),
            ("tf32", 183.0),
            ("bf16", 362.05),
            ("f16", 362.05),
            ("fp8", 733.0),
            ("int8", 733.0),
        ],
        source: "NVIDIA L40S GPU datasheet",
    },
    Product {
        label: "L4",
        names: &["NVIDIA L4"],
        cc: ADA,
        sms: 58,
        boost_mhz: 2040,
        tensor_mhz: 2040,
        memory_gbps: 300.0,
        datasheet: &[
            ("f32", 30.3),
            ("tf32", 60.0),
            ("bf16", 121.0),
            ("f16", 121.0),
            ("fp8", 242.5),
            ("int8", 242.5),
        ],
        source: "NVIDIA L4 Tensor Core GPU datasheet",
    },
    Product {
        label: "B200",
        names: &["NVIDIA B200"],
        cc: BLACKWELL,
        sms: 148,
        boost_mhz: 1965,
        tensor_mhz: 1856,
        memory_gbps: 7700.0,
        datasheet: &[
            ("f64", 37.0),
            ("f32", 75.0),
            ("tf32", 1125.0),
            ("bf16", 2250.0),
            ("f16", 2250.0),
            ("fp8", 4500.0),
            ("int8", 4500.0),
        ],
        source: "NVIDIA HGX B200 datasheet, per GPU, dense (TF32: 18 PFLOPS sparse for eight); \
                 the tensor clock is the one its \
                 figures imply (NVIDIA does not publish it)",
    },
    Product {
        label: "GH200 (96 GB HBM3)",
        names: &["NVIDIA GH200 480GB"],
        cc: HOPPER,
        sms: 132,
        boost_mhz: 1980,
        tensor_mhz: 1830,
        memory_gbps: 4000.0,
        datasheet: HOPPER_SXM,
        source: "NVIDIA GH200 Grace Hopper Superchip datasheet (its H100's figures are H100 \
                 SXM5's; the name is the driver's for the 96 GB HBM3, 480 GB LPDDR5X part)",
    },
    Product {
        label: "GH200 (144 GB HBM3e)",
        names: &["NVIDIA GH200 144G HBM3e"],
        cc: HOPPER,
        sms: 132,
        boost_mhz: 1980,
        tensor_mhz: 1830,
        memory_gbps: 4900.0,
        datasheet: HOPPER_SXM,
        source: "NVIDIA GH200 Grace Hopper Superchip datasheet (144 GB HBM3e column)",
    },
    Product {
        label: "GB200",
        names: &["NVIDIA GB200"],
        cc: BLACKWELL,
        sms: 148,
        boost_mhz: 2375,
        tensor_mhz: 2062,
        memory_gbps: 8000.0,
        datasheet: &[
            ("f64", 45.0),
            ("tf32", 1250.0),
            ("bf16", 2500.0),
            ("f16", 2500.0),
            ("fp8", 5000.0),
            ("int8", 5000.0),
        ],
        source: "NVIDIA GB200 NVL72 datasheet, per GPU (the rack's 72), dense (its tensor \
                 figures are sparse: halved); no FP32 figure is given. The SM count is B200's \
                 and the clocks are those its figures imply: NVIDIA publishes neither",
    },
];

/// The product a device of this name and compute capability is, when it is a known one.
pub fn named(name: &str, cc: ComputeCapability) -> Option<&'static Product> {
    let name = name.trim();
    PRODUCTS
        .iter()
        .find(|p| p.cc == cc && p.names.contains(&name))
}
