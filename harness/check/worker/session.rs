//! What the checks of one worker share: the request, the results so far, the libraries opened,
//! the device and its context, and the kernels NVRTC compiled.

use super::outcome::Outcome;
use crate::check::protocol::{CheckRequest, Component};
use crate::compat::{ComputeCapability, CudaVersion};
use crate::kernels::Kernel;
use crate::probe::dl::Library;
use crate::schema::check::CheckResult;
use std::any::{Any, TypeId};
use std::collections::HashMap;

/// The device the GPU checks run on, with its primary context current on the worker's thread.
#[derive(Debug, Clone)]
pub struct Gpu {
    pub ordinal: i32,
    pub device: cudarc::driver::sys::CUdevice,
    pub context: cudarc::driver::sys::CUcontext,
    pub name: String,
    pub cc: ComputeCapability,
}

/// A kernel NVRTC compiled.
#[derive(Debug, Clone)]
pub struct Image {
    /// SASS (a CUBIN) or PTX.
    pub kind: ImageKind,
    /// The architecture it was compiled for: `sm_90` for a CUBIN, `compute_120` for PTX.
    pub arch: String,
    /// What `cuModuleLoadData` takes: the CUBIN, or the PTX text ending in a NUL.
    pub data: Vec<u8>,
    /// The version of the NVRTC that made it (`12.9`), where it said.
    pub nvrtc: Option<String>,
}

/// What NVRTC produced for a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageKind {
    /// SASS for one architecture, which runs as it is.
    Cubin,
    /// PTX for a virtual architecture, which the driver JIT-compiles when it loads it.
    Ptx,
}

impl ImageKind {
    /// `cubin` or `ptx`, as in details.
    pub fn name(self) -> &'static str {
        match self {
            ImageKind::Cubin => "cubin",
            ImageKind::Ptx => "ptx",
        }
    }
}

impl Image {
    /// How a launch ran it, for its check's reason: empty for a CUBIN, else `from PTX for
    /// compute_120, JIT-compiled by the driver`.
    pub fn ran_from(&self) -> String {
        match self.kind {
            ImageKind::Cubin => String::new(),
            ImageKind::Ptx => format!(" from PTX for {}, JIT-compiled by the driver,", self.arch),
        }
    }
}

/// The shared state of one worker.
pub struct Session {
    pub request: CheckRequest,
    /// Every result so far, the earlier workers' included.
    pub settled: Vec<CheckResult>,
    libraries: HashMap<Component, Result<Library, String>>,
    /// The driver's `libcuda.so.1`, opened by `driver.library`.
    pub driver: Option<Library>,
    /// The CUDA version the driver supports (`cuDriverGetVersion`).
    pub driver_cuda: Option<CudaVersion>,
    /// The runtime's version (`cudaRuntimeGetVersion`), read by `cudart.load`.
    pub runtime: Option<CudaVersion>,
    /// The device, once `driver.devices` has set it up.
    pub gpu: Option<Gpu>,
    pub images: HashMap<Kernel, Image>,
    /// What one check leaves for later ones (a library handle), one value per type.
    kept: HashMap<TypeId, Box<dyn Any>>,
}

impl Session {
    pub fn new(request: CheckRequest) -> Session {
        Session {
            settled: request.settled.clone(),
            request,
            libraries: HashMap::new(),
            driver: None,
            driver_cuda: None,
            runtime: None,
            gpu: None,
            images: HashMap::new(),
            kept: HashMap::new(),
        }
    }

    /// Opens `component`'s library by the path a program of the combination finds it at (so its
    /// `$ORIGIN` is what it would be for that program), once. cudarc later loads the same file
    /// through the worker's pinning directory, and the loader hands back this very object.
    /// `Err` is a reason: not in the combination, or the loader's message.
    pub fn library(&mut self, component: Component) -> Result<&Library, String> {
        let request = &self.request;
        self.libraries
            .entry(component)
            .or_insert_with(|| match request.file(component) {
                None => Err(not_installed(component)),
                Some(file) => Library::open(&file.path)
                    .map_err(|error| format!("dlopen {}: {error}", file.path.display())),
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The architecture to compile for and check GPU code against: the device's, else
    /// `--target`.
    pub fn arch(&self) -> Option<ComputeCapability> {
        self.gpu.as_ref().map(|g| g.cc).or_else(|| {
            self.request
                .target
                .as_deref()
                .and_then(ComputeCapability::parse)
        })
    }

    /// Keeps `value` (a handle a check created) for the checks after it; it lives as long as the
    /// worker, so a handle's destructor never runs against a context torn down first.
    pub fn keep<T: Any>(&mut self, value: T) {
        self.kept.insert(TypeId::of::<T>(), Box::new(value));
    }

    /// The value of type `T` an earlier check kept, if any.
    pub fn kept<T: Any>(&self) -> Option<&T> {
        self.kept
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref())
    }

    /// The value of type `T` an earlier check kept, to change it.
    pub fn kept_mut<T: Any>(&mut self) -> Option<&mut T> {
        self.kept
            .get_mut(&TypeId::of::<T>())
            .and_then(|v| v.downcast_mut())
    }

    /// The device, for a check whose `needs` already guarantee it; a failure otherwise.
    pub fn gpu(&self) -> Result<&Gpu, Outcome> {
        self.gpu
            .as_ref()
            .ok_or_else(|| Outcome::fail("no device was set up (driver.devices did not pass)"))
    }
}

/// Why a component's checks cannot run.
pub fn not_installed(component: Component) -> String {
    format!(
        "no {} in this combination (lib{}.so.*)",
        component.title(),
        component.stem()
    )
}
