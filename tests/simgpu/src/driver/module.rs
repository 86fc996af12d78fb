//! Modules: `cuModuleLoadData` with PTX text, JIT-"compiled" by parsing it for the interpreter,
//! as a real driver JIT-compiles PTX for a GPU newer than the toolkit that made it.
//!
//! - A CUBIN (an ELF image) or a fatbinary holds SASS of some real architecture, which this
//!   device can never run: `CUDA_ERROR_NO_BINARY_FOR_GPU` (209), as a driver answers SASS of
//!   another architecture.
//! - PTX whose `.version` is newer than the driver's CUDA version supports (NVIDIA's PTX ISA
//!   release table) is `CUDA_ERROR_UNSUPPORTED_PTX_VERSION` (222), checked before anything else
//!   in it, as the JIT does.
//! - PTX that does not parse, or whose `.target` is beyond the device's compute capability, is
//!   `CUDA_ERROR_INVALID_PTX` (218), and `cuModuleLoadDataEx` writes why into the caller's
//!   `CU_JIT_ERROR_LOG_BUFFER`, as the driver's JIT does: the line, the instruction, and that it
//!   is a limit of this simulator's interpreter, never of a driver.

use super::device::put;
use super::entry::{call, enter};
use super::errors::{CUresult, Code};
use super::Kind;
use crate::ptx;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::Arc;

/// A loaded module.
pub(super) struct Loaded {
    pub gpu: usize,
    code: Arc<ptx::Module>,
}

/// A function of a loaded module (`CUfunction`).
pub(super) struct Function {
    pub gpu: usize,
    module: u64,
    pub code: Arc<ptx::Module>,
    /// Its index in `code.kernels`.
    pub kernel: usize,
}

/// `(major, minor)`.
type Version = (u32, u32);

/// The PTX ISA version each CUDA release introduced, from the release table of NVIDIA's PTX ISA
/// document (as `cuda.bindings.utils` carries it): `(CUDA, PTX ISA)`.
const PTX_ISA: &[(Version, Version)] = &[
    ((10, 0), (6, 3)),
    ((10, 1), (6, 4)),
    ((10, 2), (6, 5)),
    ((11, 0), (7, 0)),
    ((11, 1), (7, 1)),
    ((11, 2), (7, 2)),
    ((11, 3), (7, 3)),
    ((11, 4), (7, 4)),
    ((11, 5), (7, 5)),
    ((11, 6), (7, 6)),
    ((11, 7), (7, 7)),
    ((11, 8), (7, 8)),
    ((12, 0), (8, 0)),
    ((12, 1), (8, 1)),
    ((12, 2), (8, 2)),
    ((12, 3), (8, 3)),
    ((12, 4), (8, 4)),
    ((12, 5), (8, 5)),
    ((12, 7), (8, 6)),
    ((12, 8), (8, 7)),
    ((12, 9), (8, 8)),
    ((13, 0), (9, 0)),
    ((13, 1), (9, 1)),
];

/// The newest PTX ISA a driver of CUDA `cuda` (`(12, 9)`) JIT-compiles: the table's, and past
/// its end the rule its last rows follow (CUDA 13.x: PTX 9.x).
pub(super) fn newest_ptx(cuda: Version) -> Version {
    let (newest_cuda, _) = PTX_ISA[PTX_ISA.len() - 1];
    if cuda > newest_cuda {
        return (cuda.0.saturating_sub(4), cuda.1);
    }
    (PTX_ISA.iter().rev())
        .find(|(release, _)| *release <= cuda)
        .map_or((0, 0), |(_, isa)| *isa)
}

/// `X.Y` as numbers.
fn version(text: &str) -> Option<Version> {
    let (major, minor) = text.trim().split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The `.version` directive of PTX text, which comes before anything else in it.
fn ptx_version(text: &str) -> Option<Version> {
    let line = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or("").trim())
        .find(|l| !l.is_empty())?;
    version(line.strip_prefix(".version")?)
}

/// Whether code for `.target` `target` (`sm_90`, `sm_90a`, `compute_121`) runs on a device of
/// compute capability `cc`: not if it is for a newer one, nor an architecture-specific (`a`)
/// target for another one, nor a family (`f`) target for another major.
fn runs_on(target: &str, cc: (i32, i32)) -> bool {
    let arch = target.split(',').next().unwrap_or("").trim();
    let Some(rest) = arch
        .strip_prefix("sm_")
        .or_else(|| arch.strip_prefix("compute_"))
    else {
        return true;
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let Ok(number) = digits.parse::<i32>() else {
        return true;
    };
    let wanted = (number / 10, number % 10);
    match &rest[digits.len()..] {
        "a" => wanted == cc,
        "f" => wanted.0 == cc.0 && wanted.1 <= cc.1,
        _ => wanted <= cc,
    }
}

/// Whether the image at `image` starts with `magic` (read byte by byte, so that a shorter
/// NUL-terminated text is never read past its end: `magic` holds no NUL).
///
/// # Safety
/// `image` must point to a NUL-terminated text or to an image at least as long as `magic`.
unsafe fn starts_with(image: *const u8, magic: &[u8]) -> bool {
    // SAFETY: the loop stops at the first byte that differs, at the latest at the text's NUL.
    (0..magic.len()).all(|i| unsafe { *image.add(i) } == magic[i])
}

/// `cuModuleLoadData`: a module from PTX text (NUL-terminated), for the current device.
///
/// # Safety
/// `module` must be null or valid for a pointer write; `image` must be null, a NUL-terminated
/// text, or a complete ELF or fatbinary image.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadData(
    module: *mut *mut c_void,
    image: *const c_void,
) -> CUresult {
    // SAFETY: the caller's contract.
    unsafe { load(module, image, &mut String::new()) }
}

/// `CU_JIT_ERROR_LOG_BUFFER`.
const JIT_ERROR_LOG_BUFFER: c_int = 5;
/// `CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES`.
const JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;

/// `cuModuleLoadDataEx`: [`cuModuleLoadData`], whose JIT error log goes to the buffer of the
/// `CU_JIT_ERROR_LOG_BUFFER` option, at most its `CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES` bytes
/// with the NUL, the bytes written (without it) given back in the size option's value, as the
/// driver does. Other options are accepted and ignored.
///
/// # Safety
/// As [`cuModuleLoadData`]; `options` and `option_values` must each hold `count` entries (or be
/// null when it is 0), the log buffer as many bytes as its size says.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut *mut c_void,
    image: *const c_void,
    count: c_uint,
    options: *const c_int,
    option_values: *mut *mut c_void,
) -> CUresult {
    let mut log = String::new();
    // SAFETY: the caller's contract.
    let result = unsafe { load(module, image, &mut log) };
    if count == 0 || options.is_null() || option_values.is_null() {
        return result;
    }
    // SAFETY: `count` entries each, by the caller's contract.
    let (options, values) = unsafe {
        (
            std::slice::from_raw_parts(options, count as usize),
            std::slice::from_raw_parts_mut(option_values, count as usize),
        )
    };
    let find = |wanted: c_int| options.iter().position(|o| *o == wanted);
    if let (Some(buffer), Some(size)) = (
        find(JIT_ERROR_LOG_BUFFER),
        find(JIT_ERROR_LOG_BUFFER_SIZE_BYTES),
    ) {
        let capacity = values[size] as usize;
        let out = values[buffer].cast::<u8>();
        if capacity > 0 && !out.is_null() {
            let written = log.len().min(capacity - 1);
            // SAFETY: the buffer holds `capacity` bytes by the caller's contract.
            unsafe {
                std::ptr::copy_nonoverlapping(log.as_ptr(), out, written);
                *out.add(written) = 0;
            }
            values[size] = written as *mut c_void;
        }
    }
    result
}

/// Loads the module of `image`, writing why into `log` when the JIT cannot.
///
/// # Safety
/// As [`cuModuleLoadData`].
unsafe fn load(module: *mut *mut c_void, image: *const c_void, log: &mut String) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        let gpu = inner.current()?;
        if module.is_null() || image.is_null() {
            return Err(Code::INVALID_VALUE);
        }
        let bytes = image.cast::<u8>();
        // SAFETY: `image` is a text or a complete image by the caller's contract.
        let binary =
            unsafe { starts_with(bytes, b"\x7fELF") || starts_with(bytes, b"\x50\xed\x55\xba") };
        if binary {
            return Err(Code::NO_BINARY_FOR_GPU);
        }
        // SAFETY: not a binary image, so a NUL-terminated text by the caller's contract.
        let text = unsafe { CStr::from_ptr(image.cast::<c_char>()) }
            .to_str()
            .map_err(|_| Code::INVALID_IMAGE)?;
        let profile = &inner.gpus[gpu].profile;
        let cuda = version(&profile.cuda_version).unwrap_or((13, 0));
        let cc = profile.compute_capability();
        if ptx_version(text).ok_or(Code::INVALID_PTX)? > newest_ptx(cuda) {
            return Err(Code::UNSUPPORTED_PTX_VERSION);
        }
        let code = ptx::Module::parse(text).map_err(|e| {
            *log = format!(
                "stackbench simulated GPU: ptx input, line {}; error: {} (a limit of the \
                 simulator's PTX interpreter, not of a driver)",
                e.line, e.message
            );
            Code::INVALID_PTX
        })?;
        if !runs_on(&code.target, cc) {
            *log = format!(
                "stackbench simulated GPU: ptx input: .target {} is beyond this device's \
                 compute capability {}.{}",
                code.target, cc.0, cc.1
            );
            return Err(Code::INVALID_PTX);
        }
        let handle = inner.handle(Kind::Module);
        let code = Arc::new(code);
        inner.modules.insert(handle, Loaded { gpu, code });
        // SAFETY: the caller's contract.
        unsafe { put(module, handle as *mut c_void) }
    })
}

/// `cuModuleGetFunction`: the kernel (`.entry`) `name` of the module, or
/// `CUDA_ERROR_NOT_FOUND`; the same handle each time.
///
/// # Safety
/// `hfunc` must be null or valid for a pointer write; `name` null or a NUL-terminated text.
#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunction(
    hfunc: *mut *mut c_void,
    hmod: *mut c_void,
    name: *const c_char,
) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        inner.current()?;
        let module = hmod as u64;
        let loaded = inner.modules.get(&module).ok_or(Code::INVALID_HANDLE)?;
        if hfunc.is_null() || name.is_null() {
            return Err(Code::INVALID_VALUE);
        }
        // SAFETY: a NUL-terminated text by the caller's contract.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        let kernel = (loaded.code.kernels.iter())
            .position(|k| k.name == name)
            .ok_or(Code::NOT_FOUND)?;
        let known = (inner.functions.iter())
            .find(|(_, f)| f.module == module && f.kernel == kernel)
            .map(|(handle, _)| *handle);
        let handle = match known {
            Some(handle) => handle,
            None => {
                let function = Function {
                    gpu: loaded.gpu,
                    module,
                    code: Arc::clone(&loaded.code),
                    kernel,
                };
                let handle = inner.handle(Kind::Function);
                inner.functions.insert(handle, function);
                handle
            }
        };
        // SAFETY: the caller's contract.
        unsafe { put(hfunc, handle as *mut c_void) }
    })
}

/// `cuModuleUnload`: its functions are invalid from now on; launches already queued still run.
#[no_mangle]
pub extern "C" fn cuModuleUnload(hmod: *mut c_void) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        let module = hmod as u64;
        inner.modules.remove(&module).ok_or(Code::INVALID_HANDLE)?;
        inner.functions.retain(|_, f| f.module != module);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_versions_by_cuda_release() {
        assert_eq!(newest_ptx((11, 8)), (7, 8));
        assert_eq!(newest_ptx((12, 0)), (8, 0));
        assert_eq!(newest_ptx((12, 6)), (8, 5));
        assert_eq!(newest_ptx((12, 8)), (8, 7));
        assert_eq!(newest_ptx((12, 9)), (8, 8));
        assert_eq!(newest_ptx((13, 0)), (9, 0));
        assert_eq!(newest_ptx((13, 2)), (9, 2));
        assert_eq!(newest_ptx((9, 2)), (0, 0));
    }

    #[test]
    fn the_version_directive_comes_after_comments() {
        let text = "//\n// Generated by NVIDIA NVVM Compiler\n//\n\n.version 8.8\n.target sm_121\n";
        assert_eq!(ptx_version(text), Some((8, 8)));
        assert_eq!(ptx_version(".target sm_90\n"), None);
    }

    #[test]
    fn targets_run_on_newer_devices_only() {
        assert!(runs_on("sm_121", (15, 0)));
        assert!(runs_on("compute_90", (15, 0)));
        assert!(!runs_on("sm_121", (9, 0)));
        assert!(!runs_on("sm_90a", (15, 0)));
        assert!(runs_on("sm_90a", (9, 0)));
        assert!(runs_on("sm_100f", (10, 3)));
        assert!(!runs_on("sm_100f", (12, 0)));
        assert!(runs_on("sm_80, texmode_independent", (8, 6)));
    }
}
