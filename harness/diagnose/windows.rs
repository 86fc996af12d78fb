//! Windows trees, read without loading (this host cannot run a DLL): the Windows loader's
//! search simulated for every DLL's imports and for the CUDA DLLs it loads at run time, and
//! what fails there: a missing import (error 126), a DLL of the wrong machine (error 193),
//! cuDNN built for another CUDA than the cuBLAS beside it, Python 3.8's `PATH` that no longer
//! counts, a driver older than the runtime.
//!
//! The search, for a DLL `D` asking for `X`: `D`'s own directory; then, for Python programs
//! (pip and conda trees), the directories added with `os.add_dll_directory` (`--dll-directory`,
//! and `CUDA_PATH\bin`, which TensorFlow and PyTorch add); the tree's `System32`; then, for
//! other programs only, `PATH` (`--windows-path`). Windows' own DLLs count as present.

use super::finding::{Cause, Finding, Severity};
use crate::catalog;
use crate::compat::{self, CudaVersion};
use crate::model::{Installation, Layout, Library};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The program's side of the search, as given on the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowsSearch {
    /// `PATH` (`--windows-path`), each entry as this host sees it.
    pub path: Vec<PathBuf>,
    /// Directories a Python program adds with `os.add_dll_directory` (`--dll-directory`).
    pub dll_dirs: Vec<PathBuf>,
    /// `CUDA_PATH` (`--cuda-path`): its `bin` is added by TensorFlow and PyTorch.
    pub cuda_path: Option<PathBuf>,
}

impl WindowsSearch {
    /// A Windows path (`C:\Program Files\...`) as this host sees it: under `/mnt/<drive>` (WSL),
    /// with `/` for `\`; a path that is already this host's stays as it is.
    pub fn host_path(windows: &str) -> PathBuf {
        let bytes = windows.as_bytes();
        if bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic() {
            let drive = char::from(bytes[0].to_ascii_lowercase());
            let rest = windows[2..].replace('\\', "/");
            PathBuf::from(format!("/mnt/{drive}/{}", rest.trim_start_matches('/')))
        } else {
            PathBuf::from(windows)
        }
    }

    /// `PATH` as Windows writes it (`;`-separated), each entry as this host sees it.
    pub fn split_path(windows_path: &str) -> Vec<PathBuf> {
        windows_path
            .split(';')
            .filter(|e| !e.trim().is_empty())
            .map(|e| Self::host_path(e.trim()))
            .collect()
    }
}

/// True for an installation of Windows DLLs.
pub fn is_windows(installation: &Installation) -> bool {
    installation.libraries.iter().any(|l| l.pe.is_some())
}

/// Windows' own DLLs (and the Visual C++ runtime every Windows program ships or finds), which a
/// tree never holds: `KERNEL32.dll`, `api-ms-win-*`, ...
fn is_system_dll(name: &str) -> bool {
    const SYSTEM: &[&str] = &[
        "kernel32",
        "user32",
        "advapi32",
        "gdi32",
        "shell32",
        "ole32",
        "oleaut32",
        "ws2_32",
        "msvcrt",
        "ntdll",
        "setupapi",
        "version",
        "dbghelp",
        "bcrypt",
        "crypt32",
        "shlwapi",
        "comdlg32",
        "comctl32",
        "psapi",
        "iphlpapi",
        "secur32",
        "rpcrt4",
        "winmm",
        "cfgmgr32",
        "combase",
        "cryptbase",
        "cryptnet",
        "wintrust",
        "powrprof",
        "ucrtbase",
        "dxgi",
        "d3d11",
        "d3d12",
        "mscoree",
        "devobj",
        "drvstore",
        "wldap32",
        "normaliz",
        "imagehlp",
        "userenv",
    ];
    let lower = name.to_ascii_lowercase();
    let stem = lower.strip_suffix(".dll").unwrap_or(&lower);
    SYSTEM.contains(&stem)
        || stem.starts_with("api-ms-win-")
        || stem.starts_with("ext-ms-")
        || stem.starts_with("vcruntime140")
        || stem.starts_with("msvcp140")
        || stem.starts_with("concrt140")
        || stem.starts_with("vcomp140")
}

/// The driver's DLLs live in the target machine's `System32`; a tree without one says nothing
/// about them.
fn is_driver_dll(name: &str) -> bool {
    catalog::names_driver_library(name) || name.to_ascii_lowercase().starts_with("nvldumd")
}

/// Where one name was found, and how.
enum Found {
    /// Windows' own DLL.
    System,
    /// A file the search gives.
    File(PathBuf),
    /// Only on `PATH`, which the (Python) program does not search.
    PathOnly(PathBuf),
}

/// The directories of the simulated search, with file names listed once per directory.
struct Searcher<'a> {
    search: &'a WindowsSearch,
    system32: Vec<PathBuf>,
    /// The machine of every scanned DLL, by path.
    machines: HashMap<PathBuf, String>,
    /// A pip tree's `nvidia/*/bin`, which PyTorch and TensorFlow add with `os.add_dll_directory`
    /// before they load CUDA; empty for other trees.
    wheel_dirs: Vec<PathBuf>,
    listings: HashMap<PathBuf, Vec<(String, PathBuf)>>,
}

impl<'a> Searcher<'a> {
    fn new(search: &'a WindowsSearch, installations: &[Installation]) -> Searcher<'a> {
        let mut system32: Vec<PathBuf> = installations
            .iter()
            .flat_map(|i| &i.libraries)
            .filter_map(|l| l.path.parent())
            .filter(|d| {
                d.file_name()
                    .is_some_and(|n| n.eq_ignore_ascii_case("system32"))
            })
            .map(Path::to_path_buf)
            .collect();
        system32.sort();
        system32.dedup();
        let machines = installations
            .iter()
            .flat_map(|i| &i.libraries)
            .filter_map(|l| Some((l.path.clone(), l.machine.clone()?)))
            .collect();
        Searcher {
            search,
            system32,
            machines,
            wheel_dirs: Vec::new(),
            listings: HashMap::new(),
        }
    }

    /// Searches as programs of `installation` do: a pip tree's frameworks add its wheels' DLL
    /// directories.
    fn for_installation(&mut self, installation: &Installation) {
        self.wheel_dirs = if installation.layout == Layout::Pip {
            wheel_dll_dirs(&installation.root)
        } else {
            Vec::new()
        };
    }

    /// The file called `name` (in any case) in `dir`.
    fn in_dir(&mut self, dir: &Path, name: &str) -> Option<PathBuf> {
        let listing = self.listings.entry(dir.to_path_buf()).or_insert_with(|| {
            crate::hostfs::read_dir(dir)
                .map(|entries| {
                    entries
                        .filter_map(Result::ok)
                        .map(|e| (e.file_name().to_string_lossy().to_lowercase(), e.path()))
                        .collect()
                })
                .unwrap_or_default()
        });
        let lower = name.to_lowercase();
        listing
            .iter()
            .find(|(n, _)| *n == lower)
            .map(|(_, p)| p.clone())
    }

    /// Finds `name` for `library` as a program of kind `python` (or not) would.
    fn find(&mut self, name: &str, library: &Library, python: bool) -> Option<Found> {
        if is_system_dll(name) {
            return Some(Found::System);
        }
        let own = library.path.parent().map(Path::to_path_buf);
        if let Some(found) = own.and_then(|dir| self.in_dir(&dir, name)) {
            return Some(Found::File(found));
        }
        if python {
            let added: Vec<PathBuf> = self
                .search
                .dll_dirs
                .iter()
                .cloned()
                .chain(self.search.cuda_path.iter().map(|c| c.join("bin")))
                .chain(self.wheel_dirs.iter().cloned())
                .collect();
            for dir in added {
                if let Some(found) = self.in_dir(&dir, name) {
                    return Some(Found::File(found));
                }
            }
        }
        for dir in self.system32.clone() {
            if let Some(found) = self.in_dir(&dir, name) {
                return Some(Found::File(found));
            }
        }
        for dir in self.search.path.clone() {
            if let Some(found) = self.in_dir(&dir, name) {
                return Some(if python {
                    Found::PathOnly(found)
                } else {
                    Found::File(found)
                });
            }
        }
        None
    }

    /// The machine of the DLL at `path` (from the scan, else read now) when it differs from
    /// `library`'s.
    fn wrong_machine(&self, library: &Library, path: &Path) -> Option<String> {
        let want = library.machine.as_deref()?;
        let got = match self.machines.get(path) {
            Some(machine) => machine.clone(),
            None => crate::pe::read_path(path).ok()?.machine,
        };
        (got != want).then(|| format!("{got} ({})", path.display()))
    }

    /// Every place the search looked, for the evidence.
    fn looked(&self, library: &Library, python: bool) -> Vec<String> {
        let mut places = Vec::new();
        if let Some(dir) = library.path.parent() {
            places.push(format!("beside it: {}", dir.display()));
        }
        if python {
            for dir in &self.search.dll_dirs {
                places.push(format!("os.add_dll_directory: {}", dir.display()));
            }
            if let Some(cuda) = &self.search.cuda_path {
                places.push(format!("CUDA_PATH\\bin: {}", cuda.join("bin").display()));
            }
            if !self.wheel_dirs.is_empty() {
                places.push(format!(
                    "nvidia/*/bin, added by PyTorch and TensorFlow: {} directories",
                    self.wheel_dirs.len()
                ));
            }
        }
        for dir in &self.system32 {
            places.push(format!("System32: {}", dir.display()));
        }
        if self.system32.is_empty() {
            places.push("System32: not in the tree (Windows' own DLLs count as present)".into());
        }
        if python {
            places.push("PATH: not searched (Python 3.8 and later)".into());
        } else {
            for dir in &self.search.path {
                places.push(format!("PATH: {}", dir.display()));
            }
        }
        places
    }
}

/// The findings for the Windows installations.
pub fn check(installations: &[Installation], search: &WindowsSearch) -> Vec<Finding> {
    let mut searcher = Searcher::new(search, installations);
    let mut findings = Vec::new();
    let driver = driver_cuda(installations);
    for installation in installations {
        let python = matches!(installation.layout, Layout::Pip | Layout::Conda);
        searcher.for_installation(installation);
        findings.push(static_note(installation, python));
        for library in installation.libraries.iter().filter(|l| l.pe.is_some()) {
            if library.machine.as_deref() == Some("i386") {
                findings.push(thirty_two_bit(installation, library));
            }
            for name in &library.needed {
                findings.extend(import(&mut searcher, installation, library, name, python));
            }
            for name in library
                .dlopen_deps
                .iter()
                .filter(|n| is_checked_runtime_load(n))
            {
                findings.extend(runtime_load(
                    &mut searcher,
                    installations,
                    installation,
                    library,
                    name,
                    python,
                ));
            }
        }
        if let Some(found) = driver_too_old(installation, driver.as_ref()) {
            findings.push(found);
        }
    }
    findings
}

/// The DLL directories of NVIDIA's wheels in a site-packages: `nvidia/<lib>/bin`, and CUDA 13's
/// `nvidia/cu13/bin`.
fn wheel_dll_dirs(site_packages: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = crate::hostfs::read_dir(&site_packages.join("nvidia"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path().join("bin"))
                .filter(|bin| bin.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// Run-time loads worth following: CUDA DLLs other than the driver's, and zlib, which cuDNN 8
/// needs and NVIDIA does not ship.
fn is_checked_runtime_load(name: &str) -> bool {
    name.eq_ignore_ascii_case("zlibwapi.dll")
        || (catalog::classify(name).is_some() && !is_driver_dll(name))
}

fn static_note(installation: &Installation, python: bool) -> Finding {
    Finding::new(
        Severity::Info,
        Cause::WindowsStatic,
        format!(
            "{} is a Windows tree: its DLLs were read, not loaded, and the Windows loader's search was simulated for {} programs",
            installation.root.display(),
            if python { "Python (3.8 and later)" } else { "native" }
        ),
        "run stackbench on the Windows machine itself to load them".into(),
    )
    .installation(installation.root.clone())
}

fn name_of(library: &Library) -> String {
    super::file_name(&library.path)
}

/// A 32-bit DLL: any 64-bit program that loads it gets error 193.
fn thirty_two_bit(installation: &Installation, library: &Library) -> Finding {
    let name = name_of(library);
    Finding::new(
        Severity::Warning,
        Cause::WrongMachine,
        format!(
            "{name} is a 32-bit DLL (PE32, i386): a 64-bit program that loads it fails with error 193 ('%1 is not a valid Win32 application'); CUDA 12 and later have no 32-bit runtime"
        ),
        format!(
            "load the 64-bit build ({}) from 64-bit programs; keep {name} for 32-bit ones only",
            name.replacen("32_", "64_", 1)
        ),
    )
    .library(name.clone(), library.path.clone())
    .installation(installation.root.clone())
    .evidence(vec![format!(
        "machine {} ({})",
        library.machine.as_deref().unwrap_or("?"),
        library.binary_class().unwrap_or("?")
    )])
}

/// One import of a DLL, searched for.
fn import(
    searcher: &mut Searcher,
    installation: &Installation,
    library: &Library,
    name: &str,
    python: bool,
) -> Option<Finding> {
    let importer = name_of(library);
    let found = searcher.find(name, library, python);
    let base = |severity, cause, message: String, fix: String| {
        Finding::new(severity, cause, message, fix)
            .library(importer.clone(), library.path.clone())
            .installation(installation.root.clone())
            .missing(name, importer.clone())
    };
    match found {
        Some(Found::System) => None,
        Some(Found::File(path)) => searcher.wrong_machine(library, &path).map(|machine| {
            base(
                Severity::Error,
                Cause::WrongMachine,
                format!(
                    "{importer} ({}) imports {name}, and the copy found is {machine}: Windows refuses to load {importer} with error 193 ('%1 is not a valid Win32 application')",
                    library.machine.as_deref().unwrap_or("?")
                ),
                format!("put the {} build of {name} first in the search", library.machine.as_deref().unwrap_or("?")),
            )
            .evidence(vec![format!("found {}", path.display())])
        }),
        Some(Found::PathOnly(path)) => Some(path_trap(base, &importer, name, &path, true)),
        None if is_driver_dll(name) => None,
        None => Some(
            base(
                Severity::Error,
                Cause::MissingDependency,
                format!(
                    "{importer} imports {name}, which is nowhere in its search: Windows refuses to load {importer} with error 126 ('The specified module could not be found'), the message naming {importer}, not {name}"
                ),
                missing_fix(name, &importer, library),
            )
            .evidence(searcher.looked(library, python)),
        ),
    }
}

/// A CUDA DLL (or zlib) a DLL loads at run time, searched for.
fn runtime_load(
    searcher: &mut Searcher,
    installations: &[Installation],
    installation: &Installation,
    library: &Library,
    name: &str,
    python: bool,
) -> Option<Finding> {
    let loader = name_of(library);
    let base = |severity, cause, message: String, fix: String| {
        Finding::new(severity, cause, message, fix)
            .library(loader.clone(), library.path.clone())
            .installation(installation.root.clone())
            .missing(name, loader.clone())
    };
    match searcher.find(name, library, python) {
        Some(Found::System) => None,
        Some(Found::File(path)) => searcher.wrong_machine(library, &path).map(|machine| {
            base(
                Severity::Error,
                Cause::WrongMachine,
                format!("{loader} loads {name} at run time, and the copy found is {machine}: the call that needs it fails with error 193"),
                format!("put the {} build of {name} first in the search", library.machine.as_deref().unwrap_or("?")),
            )
            .evidence(vec![format!("found {}", path.display())])
        }),
        Some(Found::PathOnly(path)) => Some(path_trap(base, &loader, name, &path, false)),
        None => {
            let is_zlib = name.eq_ignore_ascii_case("zlibwapi.dll");
            if let Some(other) = other_major(installations, name)
                .filter(|_| library.name.starts_with("cudnn"))
            {
                let major = |n: &str| {
                    catalog::classify(n)
                        .map(|n| n.version.split('.').next().unwrap_or_default().to_owned())
                        .unwrap_or_default()
                };
                let (built_for, here) = (major(name), major(&super::file_name(&other)));
                let cublas = catalog::classify(name)
                    .and_then(|n| catalog::pip_package(&n.component, built_for.parse().ok()?))
                    .unwrap_or_else(|| format!("CUDA {built_for}'s cuBLAS"));
                return Some(
                    base(
                        Severity::Error,
                        Cause::CudnnCudaMismatch,
                        format!(
                            "{loader} was built for CUDA {built_for}: it loads {name}, and only {} (CUDA {here}) is here; its first call into cuBLAS fails with error 126",
                            super::file_name(&other)
                        ),
                        format!(
                            "install the cuDNN built for CUDA {here} (pip: nvidia-cudnn-cu{here}), or add {cublas}, which ships {name}"
                        ),
                    )
                    .candidates(vec![other])
                    .evidence(searcher.looked(library, python)),
                );
            }
            Some(
                base(
                    if is_zlib { Severity::Error } else { Severity::Warning },
                    Cause::MissingRuntimeDependency,
                    if is_zlib {
                        format!("{loader} loads zlibwapi.dll (zlib's DLL with the WINAPI calling convention) at run time, and it is nowhere in its search: cuDNN 8 fails with 'Could not load library {loader}. Error code 126', or the program exits at its first convolution")
                    } else {
                        format!("{loader} loads {name} at run time, and it is nowhere in its search: the call that needs it fails with error 126")
                    },
                    missing_fix(name, &loader, library),
                )
                .evidence(searcher.looked(library, python)),
            )
        }
    }
}

/// The same CUDA DLL of another version somewhere in the trees (`cublas64_12.dll` for
/// `cublas64_11.dll`).
fn other_major(installations: &[Installation], name: &str) -> Option<PathBuf> {
    let wanted = catalog::classify(name)?;
    installations
        .iter()
        .flat_map(|i| &i.libraries)
        .find(|l| {
            catalog::classify(&super::file_name(&l.path))
                .is_some_and(|n| n.component == wanted.component && n.version != wanted.version)
        })
        .map(|l| l.path.clone())
}

/// Python 3.8 and later do not search `PATH` for a DLL's dependencies.
fn path_trap(
    base: impl Fn(Severity, Cause, String, String) -> Finding,
    requester: &str,
    name: &str,
    path: &Path,
    import: bool,
) -> Finding {
    let dir = path.parent().unwrap_or(path);
    base(
        Severity::Error,
        Cause::PythonDllSearchPath,
        format!(
            "{requester} {} {name}, which is only on PATH ({}): Python 3.8 and later do not search PATH for DLLs, so {}",
            if import { "imports" } else { "loads" },
            dir.display(),
            if import { format!("loading {requester} fails with error 126") } else { format!("{requester}'s call that needs it fails with error 126") }
        ),
        format!(
            "call os.add_dll_directory(r\"{}\") before importing, or install the DLL into the environment",
            dir.display()
        ),
    )
    .evidence(vec![format!("found only on PATH: {}", path.display())])
}

/// The fix for a DLL nowhere in the search.
fn missing_fix(name: &str, requester: &str, library: &Library) -> String {
    if name.eq_ignore_ascii_case("zlibwapi.dll") {
        let dir = library
            .path
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        return format!(
            "put zlibwapi.dll (64-bit; conda: zlib-wapi) beside {requester} in {dir}, or upgrade to cuDNN 9, which no longer needs it"
        );
    }
    // The DLL's number is its soname's (`cufft64_11.dll` is CUDA 12's cuFFT, `cudnn64_8.dll`
    // is cuDNN 8, of either CUDA): the wheel only where that tells one CUDA major.
    match catalog::classify(name).and_then(|n| {
        let number = n.version.split('.').next()?;
        let major = compat::cuda_major_of_soname(&format!("lib{}.so.{number}", n.component))?;
        catalog::pip_package(&n.component, major)
    }) {
        Some(package) => format!(
            "pip install {package} (its bin/ holds {name}), or put the directory holding {name} in the search"
        ),
        None => format!("install what ships {name}, or put its directory in the search"),
    }
}

/// The CUDA version the tree's driver (`nvcuda.dll`) supports, from its file version.
fn driver_cuda(installations: &[Installation]) -> Option<(String, CudaVersion)> {
    let nvcuda = installations
        .iter()
        .flat_map(|i| &i.libraries)
        .find(|l| l.name == "cuda" && l.pe.is_some())?;
    let file = nvcuda.pe.as_ref()?.file_version.as_deref()?;
    let driver = driver_version(file)?;
    let cuda = compat::driver_cuda_version(&driver)?;
    Some((driver, cuda))
}

/// NVIDIA's Windows driver version from `nvcuda.dll`'s file version: the last five digits of
/// the last two fields (`31.0.15.3667` is 536.67).
pub fn driver_version(file_version: &str) -> Option<String> {
    let fields: Vec<&str> = file_version.split('.').collect();
    let [_, _, third, fourth] = fields.as_slice() else {
        return None;
    };
    let digits = format!("{third}{fourth:0>4}");
    if !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() < 5 {
        return None;
    }
    let last = &digits[digits.len() - 5..];
    Some(format!(
        "{}.{}",
        last[..3].trim_start_matches('0'),
        &last[3..]
    ))
}

/// A runtime newer (by major) than the tree's driver supports.
fn driver_too_old(
    installation: &Installation,
    driver: Option<&(String, CudaVersion)>,
) -> Option<Finding> {
    let (driver, supported) = driver?;
    let runtime = super::cuda_of(installation)?;
    if runtime.major <= supported.major {
        return None;
    }
    Some(
        Finding::new(
            Severity::Error,
            Cause::DriverTooOld,
            format!(
                "{} holds a CUDA {}.{} runtime, and the tree's driver {driver} (nvcuda.dll) supports CUDA {}.{}: 'CUDA driver version is insufficient for CUDA runtime version'",
                installation.root.display(), runtime.major, runtime.minor, supported.major, supported.minor
            ),
            format!("install an NVIDIA driver for CUDA {}.{} or later", runtime.major, runtime.minor),
        )
        .installation(installation.root.clone()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("cublasLt64_12.dll", "pip install nvidia-cublas-cu12 (its bin/ holds cublasLt64_12.dll), or put the directory holding cublasLt64_12.dll in the search")]
    #[case("cudart64_110.dll", "pip install nvidia-cuda-runtime-cu11 (its bin/ holds cudart64_110.dll), or put the directory holding cudart64_110.dll in the search")]
    #[case("cufft64_11.dll", "pip install nvidia-cufft-cu12 (its bin/ holds cufft64_11.dll), or put the directory holding cufft64_11.dll in the search")]
    #[case(
        "cudnn_ops_infer64_8.dll",
        "install what ships cudnn_ops_infer64_8.dll, or put its directory in the search"
    )]
    fn a_missing_dll_names_the_wheel_of_the_cuda_its_number_tells(
        #[case] name: &str,
        #[case] fix: &str,
    ) {
        assert_eq!(missing_fix(name, "x.dll", &Library::default()), fix);
    }

    #[rstest]
    #[case("31.0.15.3667", Some("536.67"))]
    #[case("32.0.15.8097", Some("580.97"))]
    #[case("30.0.14.7141", Some("471.41"))]
    #[case("nonsense", None)]
    #[case("1.2", None)]
    fn windows_driver_versions_come_from_nvcuda_s_file_version(
        #[case] file: &str,
        #[case] driver: Option<&str>,
    ) {
        assert_eq!(driver_version(file).as_deref(), driver);
    }

    #[rstest]
    #[case(
        r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v11.8\bin",
        "/mnt/c/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v11.8/bin"
    )]
    #[case("/opt/tree/bin", "/opt/tree/bin")]
    #[case(r"D:\zlib", "/mnt/d/zlib")]
    fn windows_paths_are_read_as_wsl_sees_them(#[case] windows: &str, #[case] host: &str) {
        assert_eq!(WindowsSearch::host_path(windows), PathBuf::from(host));
    }

    #[test]
    fn path_splits_on_semicolons_and_skips_empty_entries() {
        let path = WindowsSearch::split_path(r"C:\a;;D:\b; ");
        assert_eq!(path, [PathBuf::from("/mnt/c/a"), PathBuf::from("/mnt/d/b")]);
    }

    #[rstest]
    #[case("KERNEL32.dll", true)]
    #[case("api-ms-win-crt-runtime-l1-1-0.dll", true)]
    #[case("VCRUNTIME140_1.dll", true)]
    #[case("zlibwapi.dll", false)]
    #[case("cublas64_11.dll", false)]
    fn windows_own_dlls_are_known(#[case] name: &str, #[case] system: bool) {
        assert_eq!(is_system_dll(name), system);
    }
}
