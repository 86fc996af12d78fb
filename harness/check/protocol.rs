//! What stackbench and a combination's worker (`stackbench __check`) say to each other: the
//! request on the worker's stdin, and one JSON event per line on its protocol channel.

use crate::probe::LoadedObject;
use crate::schema::check::CheckResult;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The CUDA libraries a combination's checks call, by the name cudarc loads them by
/// (`lib<name>.so`). The driver and NVML are not among them: they come with the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Component {
    Cudart,
    Nvrtc,
    Cublas,
    CublasLt,
    Cudnn,
    Cupti,
    Cufft,
    Curand,
    Nccl,
}

impl Component {
    /// Every component, in check order.
    pub const ALL: [Component; 9] = [
        Component::Cudart,
        Component::Nvrtc,
        Component::Cublas,
        Component::CublasLt,
        Component::Cudnn,
        Component::Cupti,
        Component::Cufft,
        Component::Curand,
        Component::Nccl,
    ];

    /// The stem of its file names and the check group's name (`cublasLt`).
    pub fn stem(self) -> &'static str {
        match self {
            Component::Cudart => "cudart",
            Component::Nvrtc => "nvrtc",
            Component::Cublas => "cublas",
            Component::CublasLt => "cublasLt",
            Component::Cudnn => "cudnn",
            Component::Cupti => "cupti",
            Component::Cufft => "cufft",
            Component::Curand => "curand",
            Component::Nccl => "nccl",
        }
    }

    /// As NVIDIA writes it (`cuBLASLt`).
    pub fn title(self) -> &'static str {
        match self {
            Component::Cudart => "CUDA runtime",
            Component::Nvrtc => "NVRTC",
            Component::Cublas => "cuBLAS",
            Component::CublasLt => "cuBLASLt",
            Component::Cudnn => "cuDNN",
            Component::Cupti => "CUPTI",
            Component::Cufft => "cuFFT",
            Component::Curand => "cuRAND",
            Component::Nccl => "NCCL",
        }
    }

    /// The component whose library has this file-name stem.
    pub fn from_stem(stem: &str) -> Option<Component> {
        Component::ALL.into_iter().find(|c| c.stem() == stem)
    }
}

/// One library a combination provides: the file a program of it would load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentFile {
    pub component: Component,
    /// As the loader finds it (its directory is what `$ORIGIN` means to it).
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    /// Its version as the scan read it (file name, `version.json`, package metadata), for when
    /// its own API cannot say (CUDA 11's `cudaRuntimeGetVersion` needs a device).
    #[serde(default)]
    pub version: Option<String>,
}

/// What a worker is asked to do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckRequest {
    pub combination: String,
    pub components: Vec<ComponentFile>,
    /// The driver's `libcuda.so.1` a program of the combination would load, if any.
    #[serde(default, with = "crate::pathname::option")]
    pub driver: Option<PathBuf>,
    /// The driver's NVML (`libnvidia-ml.so.1`), if any.
    #[serde(default, with = "crate::pathname::option")]
    pub nvml: Option<PathBuf>,
    /// The architecture to compile for when there is no device (`sm_90`).
    pub target: Option<String>,
    /// The CUDA device ordinal the GPU checks use.
    pub device: u32,
    /// Every GPU of the run, for the checks that use them all at once (NCCL's collectives);
    /// empty: `device` alone.
    #[serde(default)]
    pub devices: Vec<u32>,
    /// The worker-side checks to run, in order.
    pub run: Vec<String>,
    /// Results already settled by an earlier worker of this combination (which crashed or hung),
    /// so that checks needing them are decided the same way.
    #[serde(default)]
    pub settled: Vec<CheckResult>,
    /// `check --nodes`: this process is one rank of a job across nodes, and the NCCL checks run
    /// on its one GPU ([`CheckRequest::device`]) with every other rank's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world: Option<crate::cluster::WorldRequest>,
}

impl CheckRequest {
    /// The GPUs the node-wide checks use: `devices`, else `device` alone.
    pub fn gpus(&self) -> Vec<u32> {
        if self.devices.is_empty() {
            vec![self.device]
        } else {
            self.devices.clone()
        }
    }

    /// The file of `component`, if the combination has it.
    pub fn file(&self, component: Component) -> Option<&ComponentFile> {
        self.components.iter().find(|f| f.component == component)
    }
}

/// One line of the worker's protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum CheckEvent {
    /// About to run check `id`.
    Start { id: String },
    /// Check `result.id` is done.
    Done { result: CheckResult },
    /// Objects the loader mapped since the last such event, with the check that mapped them.
    Mapped {
        id: String,
        objects: Vec<LoadedObject>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_round_trip_by_stem_and_in_json() {
        for component in Component::ALL {
            assert_eq!(Component::from_stem(component.stem()), Some(component));
            let json = serde_json::to_string(&component).unwrap();
            assert_eq!(json, format!("\"{}\"", component.stem()));
        }
        assert_eq!(Component::from_stem("cuda"), None);
    }
}
