//! What one SM of each architecture does per clock, dense (no structured sparsity), from
//! NVIDIA's architecture whitepapers: the factor that, with the SM count and the clock, gives a
//! card's theoretical peak. Floating-point rates count an FMA as two operations.

use crate::compat::ComputeCapability;

/// Dense operations per clock per SM, by precision: CUDA cores for `f64` and `f32`, tensor
/// cores with FP32 accumulation for `tf32`, `f16`, `bf16` and `fp8` (e4m3), and INT8 tensor
/// operations for `int8`. `None`: the architecture has no such unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub f64: u32,
    pub f32: u32,
    pub tf32: Option<u32>,
    pub f16: u32,
    pub bf16: Option<u32>,
    pub fp8: Option<u32>,
    pub int8: u32,
}

impl Rates {
    /// Each precision's name (as `bench` names them) and rate.
    pub fn each(&self) -> Vec<(&'static str, u32)> {
        [
            ("f64", Some(self.f64)),
            ("f32", Some(self.f32)),
            ("tf32", self.tf32),
            ("f16", Some(self.f16)),
            ("bf16", self.bf16),
            ("int8", Some(self.int8)),
            ("fp8", self.fp8),
        ]
        .into_iter()
        .filter_map(|(precision, rate)| Some((precision, rate?)))
        .collect()
    }

    /// A GeForce part's: its tensor cores accumulate in FP32 at half the rate of the
    /// professional parts of the same chip (TF32, FP16, BF16 and FP8; INT8 is not halved).
    fn geforce(self) -> Rates {
        Rates {
            tf32: self.tf32.map(|r| r / 2),
            f16: self.f16 / 2,
            bf16: self.bf16.map(|r| r / 2),
            fp8: self.fp8.map(|r| r / 2),
            ..self
        }
    }
}

/// Ada's and consumer Blackwell's (GB20x) professional parts: the same rates per SM.
const ADA_AND_GB20X: Rates = Rates {
    f64: 4,
    f32: 256,
    tf32: Some(512),
    f16: 1024,
    bf16: Some(1024),
    fp8: Some(2048),
    int8: 2048,
};

/// One architecture's rates and where they are written.
pub struct Architecture {
    pub cc: ComputeCapability,
    /// `Hopper (sm_90)`
    pub name: &'static str,
    pub rates: Rates,
    /// Whether GeForce parts of it halve the FP32-accumulating tensor rates.
    pub geforce_halved: bool,
    /// Where NVIDIA's datasheets quote the tensor rates at a lower clock than the CUDA-core
    /// rates: that tensor clock and the maximum of the product that states both, MHz. A card
    /// no table names takes its tensor peaks at its maximum clock scaled by the same ratio,
    /// not at the maximum, which would be above NVIDIA's own basis.
    pub tensor_clock: Option<(u32, u32)>,
    /// The NVIDIA document the rates come from.
    pub source: &'static str,
}

/// The architectures with known rates.
pub const ARCHITECTURES: [Architecture; 7] = [
    Architecture {
        cc: ComputeCapability::new(7, 5),
        name: "Turing (sm_75)",
        rates: Rates {
            f64: 4,
            f32: 128,
            tf32: None,
            f16: 1024,
            bf16: None,
            fp8: None,
            int8: 2048,
        },
        geforce_halved: true,
        tensor_clock: None,
        source: "NVIDIA Turing GPU Architecture whitepaper (2018), as quoted in \
                 blog.csdn.net/royalfizz/article/details/93308651: eight tensor cores per SM, \
                 each 64 FP16 FMA per clock (1024 operations per SM), INT8 twice that; no TF32, \
                 BF16 or FP8. T4's 40 SMs at 1590 MHz give its datasheet's 65 FP16 and 8.1 FP32 \
                 TFLOP/s. FP64 at 1/32 of FP32 (T4's 254 GFLOP/s in third-party databases; \
                 NVIDIA's own figure was not found)",
    },
    Architecture {
        cc: ComputeCapability::new(8, 0),
        name: "Ampere GA100 (sm_80)",
        rates: Rates {
            f64: 64,
            f32: 128,
            tf32: Some(1024),
            f16: 2048,
            bf16: Some(2048),
            fp8: None,
            int8: 4096,
        },
        geforce_halved: false,
        tensor_clock: None,
        source: "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1 and \
                 Table 3: 108 SMs at 1410 MHz give 19.5 FP32, 156 TF32, 312 FP16/BF16 TFLOP/s",
    },
    Architecture {
        cc: ComputeCapability::new(8, 6),
        name: "Ampere GA10x (sm_86)",
        rates: Rates {
            f64: 4,
            f32: 256,
            tf32: Some(512),
            f16: 1024,
            bf16: Some(1024),
            fp8: None,
            int8: 2048,
        },
        geforce_halved: true,
        tensor_clock: None,
        source: "NVIDIA Ampere GA102 GPU Architecture whitepaper (2021), Tables 2 and 9: \
                 A40's 84 SMs at 1740 MHz give 149.7 FP16 TFLOP/s; GeForce RTX 3090 half that \
                 with FP32 accumulation",
    },
    Architecture {
        cc: ComputeCapability::new(8, 9),
        name: "Ada Lovelace (sm_89)",
        rates: ADA_AND_GB20X,
        geforce_halved: true,
        tensor_clock: None,
        source: "NVIDIA Ada GPU Architecture whitepaper (2023), Appendix A Tables 2 and 4: \
                 L4 and L40S; GeForce RTX 4090 half the FP32-accumulating tensor rates",
    },
    Architecture {
        cc: ComputeCapability::new(9, 0),
        name: "Hopper (sm_90)",
        rates: Rates {
            f64: 128,
            f32: 256,
            tf32: Some(2048),
            f16: 4096,
            bf16: Some(4096),
            fp8: Some(8192),
            int8: 8192,
        },
        geforce_halved: false,
        tensor_clock: Some((1830, 1980)),
        source: "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), Table 2: per SM \
                 per clock, dense, 1024 FP16 FMA and 2048 FP8 FMA; Table 3 for H100 SXM5",
    },
    Architecture {
        cc: ComputeCapability::new(10, 0),
        name: "Blackwell (sm_100)",
        rates: Rates {
            f64: 128,
            f32: 256,
            tf32: Some(4096),
            f16: 8192,
            bf16: Some(8192),
            fp8: Some(16384),
            int8: 16384,
        },
        geforce_halved: false,
        tensor_clock: Some((1856, 1965)),
        source: "NVIDIA Blackwell Architecture Technical Brief (2024) and the HGX B200 \
                 datasheet: twice Hopper's dense tensor rate per SM",
    },
    Architecture {
        cc: ComputeCapability::new(12, 0),
        name: "Blackwell GB20x (sm_120)",
        rates: ADA_AND_GB20X,
        geforce_halved: true,
        tensor_clock: None,
        source: "NVIDIA RTX Blackwell GPU Architecture whitepaper (2025), Appendix A: RTX PRO \
                 6000's 188 SMs at 2617 MHz give 503.8 FP16 TFLOP/s; GeForce RTX 5090 half that \
                 with FP32 accumulation",
    },
];

/// The architecture of compute capability `cc`, if its rates are known.
pub fn of(cc: ComputeCapability) -> Option<&'static Architecture> {
    ARCHITECTURES.iter().find(|a| a.cc == cc)
}

/// The rates of a device named `name` of this architecture: a GeForce part's halved where the
/// architecture halves them.
pub fn rates_of(architecture: &Architecture, name: &str) -> Rates {
    match architecture.geforce_halved && name.contains("GeForce") {
        true => architecture.rates.geforce(),
        false => architecture.rates,
    }
}
