//! NVIDIA's datasheet figures of the data-centre GPUs people benchmark most: what a theoretical
//! peak must reproduce (a test checks the architecture rates against them), and the clocks
//! NVIDIA computed them at, which a run uses for these products (the tensor figures of
//! Hopper assume a lower clock than the CUDA-core ones). A few parts are not their
//! architecture's rates at some clock (H20's cut-down tensor cores; Blackwell Ultra and GB10,
//! whose per-SM rates NVIDIA has not published): their datasheet figures are their peaks, and a
//! precision their datasheet does not give has none.

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
    /// DRAM bandwidth, GB/s, where the datasheet gives it.
    pub memory_gbps: Option<f64>,
    /// The datasheet's dense figures: precision (as `bench` names them) and TFLOP/s (TOPS for
    /// `int8`).
    pub datasheet: &'static [(&'static str, f64)],
    /// Whether the figures are the architecture's rates × `sms` × the clocks (checked by a
    /// test); `false` for a part whose figures are its peaks as written (`sms` and the clocks
    /// then 0: not published).
    pub from_rates: bool,
    /// Where the figures are written.
    pub source: &'static str,
}

const HOPPER: ComputeCapability = ComputeCapability::new(9, 0);
const AMPERE: ComputeCapability = ComputeCapability::new(8, 0);
const ADA: ComputeCapability = ComputeCapability::new(8, 9);
const BLACKWELL: ComputeCapability = ComputeCapability::new(10, 0);
const TURING: ComputeCapability = ComputeCapability::new(7, 5);
const BLACKWELL_ULTRA: ComputeCapability = ComputeCapability::new(10, 3);
const GB10: ComputeCapability = ComputeCapability::new(12, 1);

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
pub const PRODUCTS: [Product; 17] = [
    Product {
        label: "T4",
        names: &["Tesla T4", "NVIDIA T4"],
        cc: TURING,
        sms: 40,
        boost_mhz: 1590,
        tensor_mhz: 1590,
        memory_gbps: Some(320.0),
        datasheet: &[("f32", 8.1), ("f16", 65.0), ("int8", 130.0)],
        from_rates: true,
        source: "NVIDIA T4 Tensor Core GPU datasheet (t4-tensor-core-datasheet-951643.pdf, as \
                 cited by kentjliu/acml-project1; INT8 as reported at T4's launch); the driver \
                 names it Tesla T4 (deviceQuery: 40 SMs, 1590 MHz, 5001 MHz x 256 bits)",
    },
    Product {
        label: "H20",
        names: &["NVIDIA H20"],
        cc: HOPPER,
        sms: 0,
        boost_mhz: 0,
        tensor_mhz: 0,
        memory_gbps: Some(4000.0),
        datasheet: &[("f16", 148.0), ("bf16", 148.0), ("int8", 296.0)],
        from_rates: false,
        source: "third-party listings (willitrunai.com; LLM-Prof's hardware_spec.md): NVIDIA \
                 publishes no H20 datasheet (sunkx109/GPUs-Specs#2), and its tensor cores are \
                 cut down far below Hopper's rates; its FP32, TF32 and FP8 figures were not found",
    },
    Product {
        label: "B300",
        names: &["NVIDIA B300 SXM6 AC", "NVIDIA B300"],
        cc: BLACKWELL_ULTRA,
        sms: 0,
        boost_mhz: 0,
        tensor_mhz: 0,
        memory_gbps: None,
        datasheet: &[
            ("f64", 1.25),
            ("f32", 75.0),
            ("tf32", 1125.0),
            ("bf16", 2250.0),
            ("f16", 2250.0),
            ("fp8", 4500.0),
            ("int8", 125.0),
        ],
        from_rates: false,
        source: "NVIDIA HGX B300 datasheet, per GPU, dense (its eight-GPU figures, sparse ones \
                 halved, as transcribed at fibermall.com and glennklockwood.com); per-SM rates \
                 and clocks unpublished",
    },
    Product {
        label: "GB300",
        names: &["NVIDIA GB300"],
        cc: BLACKWELL_ULTRA,
        sms: 0,
        boost_mhz: 0,
        tensor_mhz: 0,
        memory_gbps: Some(8000.0),
        datasheet: &[
            ("f32", 80.0),
            ("tf32", 1250.0),
            ("bf16", 2500.0),
            ("f16", 2500.0),
            ("fp8", 5000.0),
            ("int8", 165.0),
        ],
        from_rates: false,
        source: "NVIDIA GB300 NVL72 figures per GPU, dense, as transcribed at verda.com (576 TB/s \
                 for 72 GPUs); per-SM rates and clocks unpublished",
    },
    Product {
        label: "GB10 (DGX Spark)",
        names: &["NVIDIA GB10"],
        cc: GB10,
        sms: 0,
        boost_mhz: 0,
        tensor_mhz: 0,
        memory_gbps: Some(273.0),
        datasheet: &[("f32", 31.0)],
        from_rates: false,
        source: "NVIDIA at Hot Chips 2025, as reported: about 31 FP32 TFLOP/s (its 1 PFLOP is \
                 FP4 with sparsity); 273 GB/s of LPDDR5X (ai-infrastructure.net); its tensor \
                 figures were not found",
    },
    Product {
        label: "H100 SXM5",
        names: &["NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"],
        cc: HOPPER,
        sms: 132,
        boost_mhz: 1980,
        tensor_mhz: 1830,
        memory_gbps: Some(3350.0),
        datasheet: HOPPER_SXM,
        from_rates: true,
        source: "NVIDIA H100 Tensor Core GPU datasheet; H100 whitepaper Table 3",
    },
    Product {
        label: "H100 PCIe",
        names: &["NVIDIA H100 PCIe"],
        cc: HOPPER,
        sms: 114,
        boost_mhz: 1755,
        tensor_mhz: 1620,
        memory_gbps: Some(2000.0),
        datasheet: &[
            ("f64", 26.0),
            ("f32", 51.0),
            ("tf32", 378.0),
            ("bf16", 756.0),
            ("f16", 756.0),
            ("fp8", 1513.0),
            ("int8", 1513.0),
        ],
        from_rates: true,
        source: "NVIDIA H100 Tensor Core GPU datasheet; H100 whitepaper Table 3",
    },
    Product {
        label: "H100 NVL",
        names: &["NVIDIA H100 NVL"],
        cc: HOPPER,
        sms: 132,
        boost_mhz: 1785,
        tensor_mhz: 1545,
        memory_gbps: Some(3900.0),
        datasheet: &[
            ("f64", 30.0),
            ("f32", 60.0),
            ("tf32", 417.5),
            ("bf16", 835.5),
            ("f16", 835.5),
            ("fp8", 1670.5),
            ("int8", 1670.5),
        ],
        from_rates: true,
        source: "NVIDIA H100 Tensor Core GPU datasheet (H100 NVL column); the tensor clock is \
                 the one its figures imply (NVIDIA does not publish it)",
    },
    Product {
        label: "H200 SXM",
        names: &["NVIDIA H200", "NVIDIA H200 141GB HBM3e"],
        cc: HOPPER,
        sms: 132,
        boost_mhz: 1980,
        tensor_mhz: 1830,
        memory_gbps: Some(4800.0),
        datasheet: HOPPER_SXM,
        from_rates: true,
        source: "NVIDIA H200 Tensor Core GPU datasheet",
    },
    Product {
        label: "A100 40GB SXM",
        names: &["NVIDIA A100-SXM4-40GB"],
        cc: AMPERE,
        sms: 108,
        boost_mhz: 1410,
        tensor_mhz: 1410,
        memory_gbps: Some(1555.0),
        datasheet: AMPERE_SXM,
        from_rates: true,
        source: "NVIDIA A100 Tensor Core GPU datasheet; A100 whitepaper Table 1",
    },
    Product {
        label: "A100 80GB SXM",
        names: &["NVIDIA A100-SXM4-80GB"],
        cc: AMPERE,
        sms: 108,
        boost_mhz: 1410,
        tensor_mhz: 1410,
        memory_gbps: Some(2039.0),
        datasheet: AMPERE_SXM,
        from_rates: true,
        source: "NVIDIA A100 Tensor Core GPU datasheet",
    },
    Product {
        label: "L40S",
        names: &["NVIDIA L40S"],
        cc: ADA,
        sms: 142,
        boost_mhz: 2520,
        tensor_mhz: 2520,
        memory_gbps: Some(864.0),
        datasheet: &[
            ("f32", 91.6),
            ("tf32", 183.0),
            ("bf16", 362.05),
            ("f16", 362.05),
            ("fp8", 733.0),
            ("int8", 733.0),
        ],
        from_rates: true,
        source: "NVIDIA L40S GPU datasheet",
    },
    Product {
        label: "L4",
        names: &["NVIDIA L4"],
        cc: ADA,
        sms: 58,
        boost_mhz: 2040,
        tensor_mhz: 2040,
        memory_gbps: Some(300.0),
        datasheet: &[
            ("f32", 30.3),
            ("tf32", 60.0),
            ("bf16", 121.0),
            ("f16", 121.0),
            ("fp8", 242.5),
            ("int8", 242.5),
        ],
        from_rates: true,
        source: "NVIDIA L4 Tensor Core GPU datasheet",
    },
    Product {
        label: "B200",
        names: &["NVIDIA B200"],
        cc: BLACKWELL,
        sms: 148,
        boost_mhz: 1965,
        tensor_mhz: 1856,
        memory_gbps: Some(7700.0),
        datasheet: &[
            ("f64", 37.0),
            ("f32", 75.0),
            ("tf32", 1100.0),
            ("bf16", 2250.0),
            ("f16", 2250.0),
            ("fp8", 4500.0),
            ("int8", 4500.0),
        ],
        from_rates: true,
        source: "NVIDIA HGX B200 datasheet, per GPU, dense (its per-GPU TF32 column: 2.2 PFLOPS \
                 sparse, as transcribed at zdszero.github.io; the eight-GPU total of 18 PFLOPS \
                 would be 1125 each); the tensor clock is the one its BF16 and FP8 figures \
                 imply (NVIDIA does not publish it)",
    },
    Product {
        label: "GH200 (96 GB HBM3)",
        names: &["NVIDIA GH200 480GB"],
        cc: HOPPER,
        sms: 132,
        boost_mhz: 1980,
        tensor_mhz: 1830,
        memory_gbps: Some(4000.0),
        datasheet: HOPPER_SXM,
        from_rates: true,
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
        memory_gbps: Some(4900.0),
        datasheet: HOPPER_SXM,
        from_rates: true,
        source: "NVIDIA GH200 Grace Hopper Superchip datasheet (144 GB HBM3e column)",
    },
    Product {
        label: "GB200",
        names: &["NVIDIA GB200"],
        cc: BLACKWELL,
        sms: 148,
        boost_mhz: 2375,
        tensor_mhz: 2062,
        memory_gbps: Some(8000.0),
        datasheet: &[
            ("f64", 45.0),
            ("tf32", 1250.0),
            ("bf16", 2500.0),
            ("f16", 2500.0),
            ("fp8", 5000.0),
            ("int8", 5000.0),
        ],
        from_rates: true,
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
