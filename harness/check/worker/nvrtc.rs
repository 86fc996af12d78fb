//! The NVRTC checks: compile the benchmarks' kernels ([`crate::kernels`]) for the device's
//! architecture (or `--target`), load each image through the driver API, launch it, and verify
//! the result against the CPU. The image is a CUBIN where this NVRTC can build SASS that runs on
//! the device; for a device newer than every architecture it knows, PTX for the newest one,
//! which the driver JIT-compiles at load (as for any GPU newer than its toolkit).
//!
//! Calls: cudarc's NVRTC `result` layer (`nvrtcCreateProgram`, `nvrtcCompileProgram`,
//! `nvrtcGetProgramLog`, `nvrtcDestroyProgram`) and its `sys` layer for `nvrtcGetCUBIN[Size]`,
//! `nvrtcGetPTX[Size]` and `nvrtcGetSupportedArchs` (NVRTC 11.2 and later, looked up first); the driver's
//! `cuModuleLoadData`, `cuModuleGetFunction`, `cuLaunchKernel`. Their ABI is the same in CUDA 11,
//! 12 and 13.

use super::device::{synchronize, DeviceBuffer};
use super::outcome::{debug_name, verified, verify, Call, Checked, Finish, LibraryError, Outcome};
use super::session::{Image, ImageKind, Session};
use crate::check::protocol::Component;
use crate::compat::{self, ComputeCapability, NvrtcCode};
use crate::kernels::{self, Kernel, LaunchShape};
use crate::probe::calls;
use crate::tolerance::{self, Comparison, Precision};
use cudarc::driver::result as cu;
use cudarc::driver::sys::{self, CUfunction, CUjit_option, CUmodule};
use cudarc::driver::DriverError;
use cudarc::nvrtc::result::{self as nv, NvrtcError};
use cudarc::nvrtc::sys as nvsys;
use std::ffi::{c_void, CStr, CString};
use std::mem::MaybeUninit;

/// Elements of the vector add: 1 Mi, several waves on any GPU.
pub const VECTOR_ADD_ELEMENTS: usize = 1 << 20;

/// The matmul's shape: not multiples of the tile, so the bounds checks are exercised too.
const MATMUL_M: usize = 200;
const MATMUL_N: usize = 136;
const MATMUL_K: usize = 152;

/// Lines of the compiler's log kept in a failure's reason (all of it is in the details).
const LOG_LINES: usize = 3;

impl LibraryError for NvrtcError {
    fn code(&self) -> i64 {
        self.0 as i64
    }

    fn name(&self) -> String {
        debug_name(&self.0)
    }

    fn text(&self) -> Option<String> {
        // SAFETY: nvrtcGetErrorString returns a static string for any status.
        let text = unsafe { nvsys::nvrtcGetErrorString(self.0) };
        // SAFETY: non-null, NUL-terminated and static.
        (!text.is_null()).then(|| {
            unsafe { std::ffi::CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        })
    }
}

/// What NVRTC compiles a kernel to for one device (or `--target`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Target {
    /// The device's compute capability (or `--target`'s).
    pub(crate) device: ComputeCapability,
    /// SASS or PTX, and for which architecture ([`compat::nvrtc_code`]); never `None`.
    pub(crate) code: NvrtcCode,
    /// Whether the device is newer than every architecture this NVRTC knows.
    pub(crate) newer_than_nvrtc: bool,
}

impl Target {
    /// The `--gpu-architecture` value: `sm_90`, `compute_120`.
    pub(crate) fn arch(&self) -> String {
        self.code.target().unwrap_or_else(|| sm(self.device))
    }

    /// What NVRTC produces for it.
    pub(crate) fn kind(&self) -> ImageKind {
        match self.code {
            NvrtcCode::Ptx { .. } => ImageKind::Ptx,
            _ => ImageKind::Cubin,
        }
    }

    /// Why this image and not SASS for the device, where it is not (`to PTX for compute_120:
    /// the device (sm_150) is newer than this NVRTC; the driver JIT-compiles it`); `who` is
    /// `device` or `target`.
    pub(crate) fn why(&self, who: &str) -> Option<String> {
        let (device, arch) = (sm(self.device), self.arch());
        match self.code {
            NvrtcCode::Cubin { arch: built } if built != self.device => Some(format!(
                "this NVRTC cannot build SASS for {device}; SASS for {arch} runs on compute \
                 capability {} (same major, newer minor)",
                self.device
            )),
            NvrtcCode::Ptx { .. } if self.newer_than_nvrtc => Some(format!(
                "the {who} ({device}) is newer than this NVRTC; the driver JIT-compiles it"
            )),
            NvrtcCode::Ptx { .. } => Some(format!(
                "this NVRTC builds no SASS that runs on the {who} ({device}); the driver \
                 JIT-compiles it"
            )),
            _ => None,
        }
    }
}

/// `sm_90` for 9.0.
fn sm(cc: ComputeCapability) -> String {
    format!("sm_{}{}", cc.major, cc.minor)
}

/// What this combination's NVRTC should generate for `cc`: chosen by [`compat::nvrtc_code`]
/// from the architectures it can build SASS for (`nvrtcGetSupportedArchs`); an NVRTC older than
/// 11.2, which cannot say, compiles SASS for `cc` itself. A device older than every
/// architecture NVRTC knows is a failure that says which it knows. What `nvrtc.compile_*` and
/// the compile benchmarks both use, so they compile alike.
pub(crate) fn target(s: &mut Session, cc: ComputeCapability) -> Result<Target, Outcome> {
    let library = s.library(Component::Nvrtc).map_err(Outcome::fail)?;
    if !library.exports(c"nvrtcGetSupportedArchs") {
        return Ok(Target {
            device: cc,
            code: NvrtcCode::Cubin { arch: cc },
            newer_than_nvrtc: false,
        });
    }
    let supported = supported_archs()?;
    let known: Vec<ComputeCapability> = supported
        .iter()
        .map(|a| ComputeCapability::new(a / 10, a % 10))
        .collect();
    let code = compat::nvrtc_code(cc, &known);
    if code == NvrtcCode::None {
        return Err(Outcome::fail(format!(
            "this NVRTC cannot generate code for {} (it knows {}): use a toolkit whose NVRTC \
             supports compute capability {cc}",
            sm(cc),
            describe_archs(&supported)
        ))
        .detail("supported_archs", supported));
    }
    Ok(Target {
        device: cc,
        code,
        newer_than_nvrtc: known.iter().all(|a| *a < cc),
    })
}

/// The version the combination's NVRTC gives (`nvrtcVersion`: `12.9`), if it answers.
fn nvrtc_version(s: &mut Session) -> Option<String> {
    let library = s.library(Component::Nvrtc).ok()?;
    calls::nvrtc_version(library)?
        .ok()
        .map(|(major, minor)| format!("{major}.{minor}"))
}

/// `nvrtc.compile_*`: compiles `kernel` for the device (or `--target`), a CUBIN where this NVRTC
/// can build SASS that runs on it, else PTX the driver JIT-compiles (see [`target`]), and keeps
/// it for the launches.
pub fn compile(s: &mut Session, kernel: Kernel) -> Checked {
    let Some(cc) = s.arch() else {
        return Ok(Outcome::skip(
            "no device and no --target: give --target sm_XX to compile without a GPU",
        ));
    };
    let target = target(s, cc)?;
    let nvrtc = nvrtc_version(s);
    let (data, log) = build(kernel, &target)?;
    let (arch, kind) = (target.arch(), target.kind());
    let kib = data.len() as f64 / 1024.0;
    let who = if s.gpu.is_some() { "device" } else { "target" };
    let reason = match (kind, target.why(who)) {
        (ImageKind::Ptx, Some(why)) => format!(
            "compiled {} to PTX for {arch}: {why} ({kib:.1} KiB of PTX)",
            kernel.file_name()
        ),
        (_, Some(why)) => format!(
            "compiled {} for {arch}: {kib:.1} KiB CUBIN; {why}",
            kernel.file_name()
        ),
        (_, None) => format!(
            "compiled {} for {arch}: {kib:.1} KiB CUBIN",
            kernel.file_name()
        ),
    };
    let outcome = Outcome::pass(reason)
        .detail("arch", arch.clone())
        .detail("image", kind.name())
        .detail("device_arch", sm(cc))
        .detail("source", kernel.file_name())
        .detail(&format!("{}_bytes", kind.name()), data.len());
    let outcome = match &nvrtc {
        Some(version) => outcome.detail("nvrtc_version", version.clone()),
        None => outcome,
    };
    let outcome = if log.trim().is_empty() {
        outcome
    } else {
        outcome.detail("log", log)
    };
    s.images.insert(
        kernel,
        Image {
            kind,
            arch,
            data,
            nvrtc,
        },
    );
    Ok(outcome)
}

/// Compiles `kernel` for `target` from its source: the image `cuModuleLoadData` takes (a CUBIN,
/// or PTX ending in a NUL) and the compiler's log, or a failure quoting the log. What
/// `nvrtc.compile_*` checks and the compile benchmark times.
pub(crate) fn build(kernel: Kernel, target: &Target) -> Result<(Vec<u8>, String), Outcome> {
    let source = CString::new(kernel.source()).map_err(|_| Outcome::fail("NUL in the source"))?;
    let name = CString::new(kernel.file_name()).map_err(|_| Outcome::fail("NUL in the name"))?;
    let program = nv::create_program(&source, Some(&name)).call("nvrtcCreateProgram")?;
    let compiled = compile_program(program, target);
    // SAFETY: created above and destroyed once, here.
    let _ = unsafe { nv::destroy_program(program) };
    let (image, log) = compiled?;
    match target.kind() {
        ImageKind::Cubin if !image.starts_with(b"\x7fELF") => Err(Outcome::fail(format!(
            "nvrtcGetCUBIN gave {} bytes that are not an ELF image",
            image.len()
        ))),
        ImageKind::Ptx if !contains(&image, b".target") => Err(Outcome::fail(format!(
            "nvrtcGetPTX gave {} bytes with no .target directive: not PTX",
            image.len()
        ))),
        _ => Ok((image, log)),
    }
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Compiles `program` for `target`; the image and the log, or a failure quoting the log.
fn compile_program(
    program: nvsys::nvrtcProgram,
    target: &Target,
) -> Result<(Vec<u8>, String), Outcome> {
    let options = [format!("--gpu-architecture={}", target.arch())];
    // SAFETY: `program` is live until the caller destroys it.
    let compiled = unsafe { nv::compile_program(program, &options) };
    // SAFETY: as above; the log exists after any compilation attempt.
    let log = unsafe { nv::get_program_log(program) }
        .map(|raw| {
            let bytes: Vec<u8> = raw
                .iter()
                .map(|c| *c as u8)
                .take_while(|b| *b != 0)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .unwrap_or_default();
    if let Err(error) = compiled {
        let first: Vec<&str> = log
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(LOG_LINES)
            .collect();
        return Err(Outcome::fail(format!(
            "nvrtcCompileProgram ({}): {}: {}",
            options[0],
            error.describe(),
            first.join(" | ")
        ))
        .detail("log", log));
    }
    let image = match target.kind() {
        ImageKind::Cubin => {
            let mut size = 0usize;
            // SAFETY: `size` is a valid usize to write.
            unsafe { nvsys::nvrtcGetCUBINSize(program, &mut size).result() }
                .call("nvrtcGetCUBINSize")?;
            let mut cubin = vec![0u8; size];
            // SAFETY: `cubin` holds the size NVRTC just gave.
            unsafe { nvsys::nvrtcGetCUBIN(program, cubin.as_mut_ptr().cast()).result() }
                .call("nvrtcGetCUBIN")?;
            cubin
        }
        ImageKind::Ptx => {
            let mut size = 0usize;
            // SAFETY: `size` is a valid usize to write.
            unsafe { nvsys::nvrtcGetPTXSize(program, &mut size).result() }
                .call("nvrtcGetPTXSize")?;
            let mut ptx = vec![0u8; size];
            // SAFETY: `ptx` holds the size NVRTC just gave (its NUL included).
            unsafe { nvsys::nvrtcGetPTX(program, ptx.as_mut_ptr().cast()).result() }
                .call("nvrtcGetPTX")?;
            // cuModuleLoadData reads PTX as a C string: exactly one NUL, at the end.
            if let Some(end) = ptx.iter().position(|b| *b == 0) {
                ptx.truncate(end);
            }
            ptx.push(0);
            ptx
        }
    };
    Ok((image, log))
}

/// The `sm_XY` numbers (`90`) this NVRTC can generate code for.
fn supported_archs() -> Result<Vec<u32>, Outcome> {
    let mut count = 0;
    // SAFETY: `count` is a valid int to write.
    unsafe { nvsys::nvrtcGetNumSupportedArchs(&mut count).result() }
        .call("nvrtcGetNumSupportedArchs")?;
    let mut archs = vec![0; count.max(0) as usize];
    // SAFETY: `archs` holds as many ints as NVRTC said it would write.
    unsafe { nvsys::nvrtcGetSupportedArchs(archs.as_mut_ptr()).result() }
        .call("nvrtcGetSupportedArchs")?;
    Ok(archs.into_iter().map(|a| a as u32).collect())
}

/// `sm_50 to sm_90 (13 architectures)`.
fn describe_archs(archs: &[u32]) -> String {
    match (archs.iter().min(), archs.iter().max()) {
        (Some(low), Some(high)) => {
            format!("sm_{low} to sm_{high}, {} architectures", archs.len())
        }
        _ => "no architectures".to_owned(),
    }
}

/// A module loaded from a compiled image, and the kernel's function in it.
pub(crate) struct Loaded {
    module: CUmodule,
    pub(crate) function: CUfunction,
}

/// Bytes of the JIT error log the driver may fill (`CU_JIT_ERROR_LOG_BUFFER`).
const JIT_LOG_BYTES: usize = 16 * 1024;

/// `cuModuleLoadDataEx` of `image` with an error log buffer: the module, or the driver's error
/// with what its JIT wrote in the log.
///
/// # Safety
/// `image` must be a complete CUBIN or PTX ending in a NUL, alive for the call.
unsafe fn load_with_log(image: *const c_void) -> Result<CUmodule, (DriverError, String)> {
    let mut log = vec![0u8; JIT_LOG_BYTES];
    let mut options = [
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    // The size travels in the pointer's place, as the driver API defines it.
    let mut values = [
        log.as_mut_ptr().cast::<c_void>(),
        JIT_LOG_BYTES as *mut c_void,
    ];
    let mut module = MaybeUninit::uninit();
    // SAFETY: two options with their values; a log buffer of the size given, alive for the call.
    let loaded = unsafe {
        sys::cuModuleLoadDataEx(
            module.as_mut_ptr(),
            image,
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    }
    .result();
    match loaded {
        // SAFETY: the driver wrote the module on success.
        Ok(()) => Ok(unsafe { module.assume_init() }),
        Err(error) => {
            let text = CStr::from_bytes_until_nul(&log)
                .map(|t| t.to_string_lossy().trim().to_owned())
                .unwrap_or_default();
            Err((error, text))
        }
    }
}

/// Why `image` did not load: the driver's error and its JIT's log. PTX the driver's JIT is too
/// old for (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION`, 222) is explained; PTX the simulated GPU
/// cannot interpret is the simulator's limit, never a reason to upgrade a driver.
fn load_failed(s: &Session, image: &Image, error: DriverError, log: String) -> Outcome {
    let code = error.code();
    let head = format!(
        "cuModuleLoadDataEx ({} for {}): {} ({code})",
        image.kind.name(),
        image.arch,
        error.name()
    );
    let simulated = s.driver.as_ref().is_some_and(super::driver::is_simulated);
    let why = if image.kind == ImageKind::Ptx && code == i64::from(compat::UNSUPPORTED_PTX_VERSION)
    {
        compat::ptx_newer_than_driver(image.nvrtc.as_deref(), s.driver_cuda)
    } else if simulated && code == i64::from(compat::INVALID_PTX) {
        "stackbench's simulated GPU cannot interpret this PTX: a limit of the simulator, not a \
         driver fault, so no driver upgrade helps; the kernel is checked on a GPU"
            .to_owned()
    } else {
        error.text().unwrap_or_default()
    };
    let shown = if log.is_empty() {
        String::new()
    } else {
        format!("; JIT log: {log}")
    };
    let outcome = Outcome::fail(format!("{head}: {why}{shown}"))
        .detail("error_code", code)
        .detail("error_name", error.name())
        .detail("image", image.kind.name())
        .detail("arch", image.arch.clone());
    if log.is_empty() {
        outcome
    } else {
        outcome.detail("jit_log", log)
    }
}

/// Loads `kernel`'s image through the driver (`cuModuleLoadDataEx`, its JIT error log shown on
/// failure), once per call.
pub(crate) fn load(s: &Session, kernel: Kernel) -> Result<Loaded, Outcome> {
    let image = s
        .images
        .get(&kernel)
        .ok_or_else(|| Outcome::fail(format!("no compiled image of {}", kernel.file_name())))?;
    // SAFETY: a complete CUBIN, or PTX ending in a NUL, produced by NVRTC, alive for the call.
    let module = unsafe { load_with_log(image.data.as_ptr().cast()) }
        .map_err(|(error, log)| load_failed(s, image, error, log))?;
    let name = CString::new(kernel.function()).map_err(|_| Outcome::fail("NUL in the name"))?;
    // SAFETY: a module just loaded; the name is a C string.
    let function = unsafe { cu::module::get_function(module, name) }.call("cuModuleGetFunction")?;
    Ok(Loaded { module, function })
}

impl Drop for Loaded {
    fn drop(&mut self) {
        // SAFETY: loaded in `load`, unloaded once, here, after every launch has completed.
        let _ = unsafe { cu::module::unload(self.module) };
    }
}

/// Launches `function` with the addresses of `args` as its parameters, on the null stream.
///
/// # Safety
/// `args` must match the kernel's parameters in number, order and type, and every device
/// address among them must stay valid until the kernel completes.
unsafe fn launch(
    function: CUfunction,
    shape: LaunchShape,
    args: &mut [*mut c_void],
) -> Result<(), Outcome> {
    // SAFETY: by the caller's contract.
    unsafe { launch_on(function, shape, args, std::ptr::null_mut()) }?;
    synchronize()
}

/// Enqueues `function` on `stream` with the addresses of `args` as its parameters.
///
/// # Safety
/// As for [`launch`], until the stream has run the kernel; `stream` must be live or null.
pub(crate) unsafe fn launch_on(
    function: CUfunction,
    shape: LaunchShape,
    args: &mut [*mut c_void],
    stream: cudarc::driver::sys::CUstream,
) -> Result<(), Outcome> {
    // SAFETY: by the caller's contract.
    unsafe { cu::launch_kernel(function, shape.grid, shape.block, 0, stream, args) }
        .call("cuLaunchKernel")
}

/// Runs the compiled vector add over `n` random elements and compares with the CPU. Also what
/// `cupti.activity` launches while it records.
pub fn run_vector_add(s: &Session, n: usize) -> Result<Comparison, Outcome> {
    let loaded = load(s, Kernel::VectorAdd)?;
    let (a, b) = (kernels::random_f32(n, 1), kernels::random_f32(n, 2));
    let (da, db) = (DeviceBuffer::from_slice(&a)?, DeviceBuffer::from_slice(&b)?);
    let dc = DeviceBuffer::<f32>::alloc(n)?;
    let (mut pa, mut pb, mut pc, mut len) = (da.ptr(), db.ptr(), dc.ptr(), n as u64);
    let mut args: [*mut c_void; 4] = [
        (&mut pa as *mut u64).cast(),
        (&mut pb as *mut u64).cast(),
        (&mut pc as *mut u64).cast(),
        (&mut len as *mut u64).cast(),
    ];
    // SAFETY: (const float*, const float*, float*, unsigned long long) as the source declares;
    // the buffers hold n floats each and live past the synchronisation in `launch`.
    unsafe { launch(loaded.function, kernels::vector_add_shape(n), &mut args) }?;
    let got: Vec<f64> = dc.read()?.into_iter().map(f64::from).collect();
    compare(&got, &kernels::vector_add_reference(&a, &b))
}

/// Compares with the FP32 tolerance; a length mismatch is a failure.
fn compare(got: &[f64], want: &[f64]) -> Result<Comparison, Outcome> {
    tolerance::compare(got, want, Precision::F32).map_err(|e| Outcome::fail(e.to_string()))
}

/// `nvrtc.launch_vector_add`.
pub fn launch_vector_add(s: &mut Session) -> Checked {
    let comparison = run_vector_add(s, VECTOR_ADD_ELEMENTS)?;
    let image = ran_from(s, Kernel::VectorAdd);
    verified(
        &format!(
            "vector add of {} Mi floats{}",
            VECTOR_ADD_ELEMENTS >> 20,
            image.0
        ),
        comparison,
    )
    .finish(&image.1)
}

/// How a launch of `kernel` ran, for its check: the words its reason adds (` from PTX for
/// compute_120, JIT-compiled by the driver,`; none for a CUBIN) and a function adding the
/// image's kind and architecture as details.
fn ran_from(s: &Session, kernel: Kernel) -> (String, impl Fn(Outcome) -> Outcome) {
    let image = s.images.get(&kernel);
    let words = image.map(Image::ran_from).unwrap_or_default();
    let details = image.map(|i| (i.kind.name(), i.arch.clone()));
    (words, move |outcome: Outcome| match &details {
        Some((kind, arch)) => outcome.detail("image", *kind).detail("arch", arch.clone()),
        None => outcome,
    })
}

/// `nvrtc.launch_matmul`.
pub fn launch_matmul(s: &mut Session) -> Checked {
    let loaded = load(s, Kernel::TiledMatmul)?;
    let (m, n, k) = (MATMUL_M, MATMUL_N, MATMUL_K);
    let (a, b) = (kernels::random_f32(m * k, 3), kernels::random_f32(k * n, 4));
    let (da, db) = (DeviceBuffer::from_slice(&a)?, DeviceBuffer::from_slice(&b)?);
    let dc = DeviceBuffer::<f32>::alloc(m * n)?;
    let (mut pa, mut pb, mut pc) = (da.ptr(), db.ptr(), dc.ptr());
    let (mut im, mut in_, mut ik) = (m as i32, n as i32, k as i32);
    let mut args: [*mut c_void; 6] = [
        (&mut pa as *mut u64).cast(),
        (&mut pb as *mut u64).cast(),
        (&mut pc as *mut u64).cast(),
        (&mut im as *mut i32).cast(),
        (&mut in_ as *mut i32).cast(),
        (&mut ik as *mut i32).cast(),
    ];
    // SAFETY: (const float*, const float*, float*, int, int, int) as the source declares; the
    // buffers hold m*k, k*n and m*n floats and live past the synchronisation in `launch`.
    unsafe { launch(loaded.function, kernels::matmul_shape(m, n), &mut args) }?;
    let got: Vec<f64> = dc.read()?.into_iter().map(f64::from).collect();
    let wide = |v: &[f32]| v.iter().map(|x| f64::from(*x)).collect::<Vec<_>>();
    let want = kernels::matmul_reference(&wide(&a), &wide(&b), m, n, k);
    let image = ran_from(s, Kernel::TiledMatmul);
    verify(
        &format!("{m}x{k} by {k}x{n} tiled matmul{}", image.0),
        &got,
        &want,
        Precision::F32,
    )
    .finish(&image.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architecture_lists_read_well() {
        assert_eq!(
            describe_archs(&[50, 52, 90, 60]),
            "sm_50 to sm_90, 4 architectures"
        );
        assert_eq!(describe_archs(&[]), "no architectures");
    }
}
