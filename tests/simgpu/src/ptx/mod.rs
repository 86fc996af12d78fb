//! An interpreter for the PTX NVRTC emits for stackbench's kernels (the vector add and the
//! tiled matmul, from NVRTC 11.8 to 13.x): parsed once when a module is loaded, then run for a
//! launch thread by thread, block by block, with shared memory and `bar.sync`.
//!
//! Global memory is the driver's: every access goes through [`Memory`], and an address outside
//! every allocation is a [`Fault::IllegalAddress`], as compute-sanitizer would report it.

mod exec;
mod parse;

/// A parsed PTX module.
#[derive(Debug, Clone)]
pub struct Module {
    /// `.version` (`(8, 8)`).
    pub version: (u32, u32),
    /// `.target` (`sm_90`, `compute_90`).
    pub target: String,
    pub kernels: Vec<Kernel>,
}

/// One `.entry`.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub name: String,
    /// The parameters in order, as `cuLaunchKernel`'s `kernelParams` give them.
    pub params: Vec<Param>,
    /// Bytes of static `.shared` memory the kernel declares.
    pub shared_bytes: usize,
    body: exec::Program,
}

/// A kernel parameter's size and alignment, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    pub size: usize,
    pub align: usize,
}

/// Device memory as a launch sees it.
pub trait Memory {
    /// The allocation holding `address`, if any.
    fn region(&self, address: u64) -> Option<Region>;
}

/// One allocation: its device address, length and host bytes. `data` stays valid, and is
/// touched by nothing else, for as long as the launch runs.
#[derive(Debug, Clone, Copy)]
pub struct Region {
    pub base: u64,
    pub len: usize,
    pub data: *mut u8,
    /// Another device's memory, reached over a link: its bytes are counted in
    /// [`Counts::peer_bytes`].
    pub peer: bool,
}

/// What a launch is given.
#[derive(Debug, Clone)]
pub struct Launch<'a> {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory, bytes.
    pub shared_bytes: u32,
    /// Each parameter's bytes, copied from `kernelParams[i]` with the size [`Kernel::params`]
    /// gives, exactly as the driver copies them.
    pub params: &'a [Vec<u8>],
}

/// What a launch did, for the time model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub instructions: u64,
    pub global_bytes_loaded: u64,
    pub global_bytes_stored: u64,
    /// Floating-point operations (an FMA counts two).
    pub flops: u64,
    /// Bytes of global loads and stores (within the two counts above) to peer memory.
    pub peer_bytes: u64,
}

/// Why a launch stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// A global access outside every allocation (`CUDA_ERROR_ILLEGAL_ADDRESS`).
    IllegalAddress { address: u64, bytes: usize },
    /// A misaligned access (`CUDA_ERROR_MISALIGNED_ADDRESS`).
    Misaligned { address: u64, bytes: usize },
    /// `trap` or a barrier some threads never reach (`CUDA_ERROR_LAUNCH_FAILED`).
    Failed(String),
    /// A launch the kernel cannot take: parameters of the wrong size, too many threads
    /// (`CUDA_ERROR_INVALID_VALUE`).
    InvalidLaunch(String),
}

/// Why a module could not be loaded (`CUDA_ERROR_INVALID_PTX`).
#[derive(Debug, Clone, PartialEq)]
pub struct PtxError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for PtxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PTX line {}: {}", self.line, self.message)
    }
}

impl Module {
    /// Parses PTX text (what `cuModuleLoadData` is given, without its final NUL).
    pub fn parse(text: &str) -> Result<Module, PtxError> {
        parse::module(text)
    }

    /// The kernel named `name` (`cuModuleGetFunction`).
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// Runs `kernel` over `launch`'s grid against `memory`.
pub fn run(kernel: &Kernel, launch: &Launch, memory: &dyn Memory) -> Result<Counts, Fault> {
    exec::run(kernel, launch, memory)
}
