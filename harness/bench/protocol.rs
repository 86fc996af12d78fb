//! What stackbench and a combination's bench worker (`stackbench __bench`) say to each other.
//! The worker lives as long as the combination's benchmarks: the first line on its stdin sets it
//! up (the checks that open the libraries, the device and the handles), then each line is a
//! command and each line it writes on its protocol channel the answer.

use super::model::{CuptiCheck, Mode, Telemetry, Verification};
use super::stats::StopRule;
use crate::check::protocol::CheckRequest;
use crate::kernels::Kernel;
use crate::nccl::collective::Collective;
use crate::schema::check::CheckResult;
use crate::tolerance::Precision;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Who computes a matmul.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Implementation {
    /// `cublasSgemm` (f32), `cublasGemmEx` (TF32, FP16, BF16 with FP32 accumulation), or
    /// cuBLASLt's `cublasLtMatmul` (FP8 E4M3 with scales, BF16 output).
    Cublas,
    /// The tiled kernel `check` verifies, compiled by NVRTC (f32 only).
    Nvrtc,
}

impl Implementation {
    pub fn name(self) -> &'static str {
        match self {
            Implementation::Cublas => "cublas",
            Implementation::Nvrtc => "nvrtc",
        }
    }
}

/// A workload the worker can prepare, verify and time.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Workload {
    /// f32 `c = a + b` over `elements`; 12 bytes moved per element.
    VectorAdd { elements: u64 },
    /// A square `size³` matmul; 2·size³ floating-point operations.
    Matmul {
        implementation: Implementation,
        precision: Precision,
        size: u64,
    },
    /// A device-to-device copy of `bytes` (`cuMemcpyDtoDAsync`); 2·bytes moved.
    Copy { bytes: u64 },
    /// NVRTC compiling `kernel` for `arch` (`sm_90`), on the CPU: no device needed.
    Compile { kernel: Kernel, arch: String },
    /// An NCCL collective over every GPU of the worker's request, of nccl-tests' size `bytes`;
    /// `buffers`: the bytes of each GPU's send and receive buffers (the run's largest size, so
    /// that the communicators and buffers are made once).
    Collective {
        collective: Collective,
        bytes: u64,
        buffers: u64,
    },
}

impl Workload {
    /// Whether timing it needs a GPU.
    pub fn needs_gpu(&self) -> bool {
        !matches!(self, Workload::Compile { .. })
    }

    /// Bytes moved per run (for GB/s), where bandwidth is its figure.
    pub fn bytes(&self) -> Option<f64> {
        match self {
            Workload::VectorAdd { elements } => Some(12.0 * *elements as f64),
            Workload::Copy { bytes } => Some(2.0 * *bytes as f64),
            _ => None,
        }
    }

    /// Floating-point operations per run (for TFLOP/s), where compute is its figure.
    pub fn flops(&self) -> Option<f64> {
        match self {
            Workload::Matmul { size, .. } => Some(2.0 * (*size as f64).powi(3)),
            _ => None,
        }
    }
}

/// When the worker stops sampling (see [`super::stats::StopRule`]), in plain numbers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub min_samples: usize,
    pub min_time_s: f64,
    pub max_noise: f64,
    pub time_limit_s: f64,
}

impl Limits {
    /// GUIDE.md section 7: at least 10 samples and 0.5 s, then noise at most 0.5%, or
    /// `time_limit_s`.
    pub fn standard(time_limit_s: f64) -> Limits {
        Limits {
            min_samples: 10,
            min_time_s: 0.5,
            max_noise: 0.005,
            time_limit_s,
        }
    }

    /// The stop rule these limits make (negative times count as zero).
    pub fn rule(&self) -> StopRule {
        let seconds = |s: f64| Duration::from_secs_f64(s.max(0.0));
        StopRule {
            min_samples: self.min_samples,
            min_time: seconds(self.min_time_s),
            max_noise: self.max_noise,
            time_limit: seconds(self.time_limit_s),
        }
    }
}

/// The first line: what to set up. `check.settled` holds what an earlier worker of the
/// combination settled before it crashed or hung, so that needs are decided alike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    /// The combination and the setup checks to run (`check`'s own, by id).
    pub check: CheckRequest,
}

/// One command after the setup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum Command {
    /// Allocate and fill the workload's inputs, run it once and verify its output, warm it up.
    Prepare { workload: Workload },
    /// Run the (prepared) workload `iterations` times back to back; their total time.
    Time { workload: Workload, iterations: u64 },
    /// Sample the (prepared) workload until `limits` say stop, with telemetry and, for GPU work
    /// in batch mode, the CUPTI cross-check.
    Measure {
        workload: Workload,
        mode: Mode,
        limits: Limits,
    },
}

/// The worker's answers, one per line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    /// Setup check `id` is about to run.
    Starting {
        id: String,
    },
    /// A setup check's result.
    Settled {
        result: CheckResult,
    },
    /// Every setup check has run; commands may follow.
    Ready,
    Prepared {
        verification: Option<Verification>,
    },
    /// The time of all iterations, ns: CUDA events for GPU work, the host clock for CPU work.
    Timed {
        time_ns: f64,
    },
    Measured(Measurement),
    /// The command failed; nothing was timed.
    Failed {
        reason: String,
    },
}

/// The samples of one `Measure`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Time per run, ns, of the samples kept (an evenly spread subsample of at most
    /// [`super::stats::KEPT_SAMPLES`]): CUDA events for GPU work, the host clock for CPU work.
    pub samples_ns: Vec<f64>,
    /// Host wall-clock time per run of the same samples, ns.
    pub host_ns: Vec<f64>,
    /// Every sample taken, kept or not.
    pub samples_taken: u64,
    /// Relative noise over every sample taken.
    pub noise: Option<f64>,
    /// Runs per sample (batch mode).
    pub batch: u64,
    pub stopped_by: super::model::StopReason,
    pub telemetry: Option<Telemetry>,
    pub cupti: Option<CuptiCheck>,
    /// Why the CUPTI cross-check or the telemetry could not be taken.
    #[serde(default)]
    pub notes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip_as_one_json_line() {
        let command = Command::Measure {
            workload: Workload::Matmul {
                implementation: Implementation::Cublas,
                precision: Precision::Bf16,
                size: 8192,
            },
            mode: Mode::Batch,
            limits: Limits {
                min_samples: 10,
                min_time_s: 0.5,
                max_noise: 0.005,
                time_limit_s: 5.0,
            },
        };
        let line = serde_json::to_string(&command).unwrap();
        assert!(!line.contains('\n'));
        assert!(line.contains(r#""precision":"bf16""#), "{line}");
        assert_eq!(serde_json::from_str::<Command>(&line).unwrap(), command);
    }

    #[test]
    fn rates_count_what_the_issue_says() {
        assert_eq!(
            Workload::VectorAdd { elements: 1 << 20 }.bytes(),
            Some(12.0 * (1 << 20) as f64)
        );
        assert_eq!(Workload::Copy { bytes: 10 }.bytes(), Some(20.0));
        let gemm = Workload::Matmul {
            implementation: Implementation::Nvrtc,
            precision: Precision::F32,
            size: 1024,
        };
        assert_eq!(gemm.flops(), Some(2.0 * 1024f64.powi(3)));
        assert!(gemm.needs_gpu());
        let compile = Workload::Compile {
            kernel: Kernel::VectorAdd,
            arch: "sm_90".into(),
        };
        assert!(!compile.needs_gpu());
    }
}
