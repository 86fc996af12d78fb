//! One toolkit as a build sees it: its nvcc and that nvcc's version, its headers (`cuda.h`'s
//! `CUDA_VERSION`, `cuda_runtime_api.h`), the `cicc` nvcc runs (and in pip's layout its
//! `nvidia-nvvm` wheel's release), the link stub `libcuda.so` and the host-compiler limits of
//! its `crt/host_config.h`, in the layouts NVIDIA ships (runfile, conda, pip wheels).

use super::host_config::HostLimits;
use crate::discover::Host;
use crate::model::{Installation, Layout};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long `nvcc --version` may take.
const NVCC_TIMEOUT: Duration = Duration::from_secs(20);

/// Where a link stub lies below a toolkit prefix.
const STUB_DIRS: [&str; 3] = ["lib64/stubs", "lib/stubs", "targets/x86_64-linux/lib/stubs"];

/// Headers every whole toolkit has beside `cuda.h`.
const EXPECTED_HEADERS: [&str; 2] = ["cuda_runtime_api.h", "cudaProfiler.h"];

/// A toolkit (or a place named as one) and what a build finds in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Toolkit {
    /// The root as found or as named (`/usr/local/cuda-12.9`, a site-packages, `$CUDA_HOME`).
    #[serde(with = "crate::pathname")]
    pub root: PathBuf,
    /// What names it: `scan` (an installation), `CUDA_HOME`, `CUDA_PATH`, `CUDA_ROOT`,
    /// `CUDACXX`, `PATH`.
    pub named_by: Vec<String>,
    /// Whether the root is a directory at all.
    pub exists: bool,
    /// The CUDA version of its libraries, when it is an installation.
    pub library_version: Option<String>,
    #[serde(default, with = "crate::pathname::option")]
    pub nvcc: Option<PathBuf>,
    /// nvcc's CUDA version (`13.0`) and where it was read (`nvcc --version`, a wheel).
    pub nvcc_version: Option<String>,
    pub nvcc_version_source: Option<String>,
    /// `ptxas` without `nvcc`: `nvidia-cuda-nvcc-cu12` as shipped.
    #[serde(default, with = "crate::pathname::option")]
    pub ptxas_only: Option<PathBuf>,
    /// The front end nvcc runs for device code, where nvcc's own `nvcc.profile` puts it
    /// (`nvvm/bin/cicc` beside its `bin/`; in pip's layout a wheel of its own, `nvidia-nvvm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::pathname::option")]
    pub cicc: Option<PathBuf>,
    /// Where `nvcc.profile` puts cicc when nothing is there. Unknown (and not judged) for an
    /// nvcc with no profile beside it, such as a distribution's wrapper script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::pathname::option")]
    pub cicc_missing: Option<PathBuf>,
    /// The `nvidia-nvvm` wheel installed there (`13.5.37`), whose cicc must not be newer than
    /// nvcc: ptxas rejects PTX of a newer ISA ("Unsupported .version").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvvm_wheel: Option<String>,
    /// What compiling and linking a probe with this toolkit showed (`doctor --build`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<super::probe::Probe>,
    /// The nvcc wheels installed there (`nvidia-cuda-nvcc-cu12 12.9.86`).
    pub nvcc_wheels: Vec<String>,
    /// The directory holding `cuda.h`.
    #[serde(default, with = "crate::pathname::option")]
    pub include_dir: Option<PathBuf>,
    /// `cuda.h`'s `CUDA_VERSION` as `major.minor`.
    pub header_version: Option<String>,
    /// Headers of a whole toolkit missing beside `cuda.h` (`cudaProfiler.h`, which PyCUDA
    /// includes, is a wheel of its own: `nvidia-cuda-profiler-api`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_headers: Vec<String>,
    /// `libcuda.so` to link `-lcuda` against.
    #[serde(default, with = "crate::pathname::option")]
    pub link_stub: Option<PathBuf>,
    pub host_limits: Option<HostLimits>,
}

/// Every place a build might take as its toolkit: each installation that holds (or, as a
/// toolkit or conda layout, should hold) a compiler, each directory `CUDA_HOME`, `CUDA_PATH`,
/// `CUDA_ROOT` name, and the toolkits of `CUDACXX` and of the first `nvcc` on `PATH`.
pub fn candidates<'a>(
    host: &Host,
    installations: &'a [Installation],
) -> Vec<(PathBuf, Vec<String>, Option<&'a Installation>)> {
    let mut out: Vec<(PathBuf, Vec<String>, Option<&Installation>)> = Vec::new();
    let mut add = |root: PathBuf, by: &str, installation: Option<&'a Installation>| {
        let key = host.real(&root).unwrap_or_else(|| root.clone());
        match out
            .iter_mut()
            .find(|(r, _, _)| host.real(r).unwrap_or_else(|| r.clone()) == key)
        {
            Some((_, named, found)) => {
                if !named.iter().any(|n| n == by) {
                    named.push(by.to_string());
                }
                if found.is_none() {
                    *found = installation;
                }
            }
            None => out.push((root, vec![by.to_string()], installation)),
        }
    };
    for installation in installations {
        let wanted = match installation.layout {
            Layout::Toolkit | Layout::Conda => true,
            Layout::Pip => prefixes(host, &installation.root)
                .iter()
                .any(|p| host.is_file(p.join("bin/nvcc")) || host.is_file(p.join("bin/ptxas"))),
            _ => false,
        };
        if wanted {
            add(installation.root.clone(), "scan", Some(installation));
        }
    }
    let installation_at = |root: &Path| {
        let real = host.real(root);
        installations
            .iter()
            .find(|i| real.is_some() && host.real(&i.root) == real)
    };
    for var in crate::discover::CUDA_ROOT_VARS {
        if let Some(value) = host.env.get(var).filter(|v| !v.is_empty()) {
            let root = host.place(value);
            add(root.clone(), var, installation_at(&root));
        }
    }
    let nvcc_root = |nvcc: PathBuf| nvcc.parent().and_then(Path::parent).map(Path::to_path_buf);
    if let Some(value) = host.env.get("CUDACXX").filter(|v| !v.is_empty()) {
        if let Some(root) = nvcc_root(host.place(value)) {
            add(root.clone(), "CUDACXX", installation_at(&root));
        }
    }
    if let Some(nvcc) = super::compiler::on_path(host, "nvcc") {
        let nvcc = host.real(&nvcc).unwrap_or(nvcc);
        if let Some(root) = nvcc_root(nvcc) {
            add(root.clone(), "PATH", installation_at(&root));
        }
    }
    out
}

/// The directories below `root` where a toolkit's `bin/`, `include/` and `lib/` may be: the
/// root itself, a conda or runfile `targets/x86_64-linux`, and in a site-packages the wheels'
/// `nvidia/cu13` (CUDA 13) or `nvidia/cuda_nvcc` and `nvidia/cuda_runtime` (CUDA 12 and 11).
pub fn prefixes(host: &Host, root: &Path) -> Vec<PathBuf> {
    [
        "",
        "targets/x86_64-linux",
        "nvidia/cu13",
        "nvidia/cuda_nvcc",
        "nvidia/cuda_runtime",
        "nvidia/cuda_crt",
    ]
    .iter()
    .map(|p| {
        if p.is_empty() {
            root.to_path_buf()
        } else {
            root.join(p)
        }
    })
    .filter(|p| host.is_dir(p))
    .collect()
}

/// Reads one toolkit. `nvcc --version` is run only when `run` (this machine's own root) and the
/// trust rule lets this user run it; otherwise nvcc's version comes from its wheel.
pub fn read(
    host: &Host,
    root: PathBuf,
    named_by: Vec<String>,
    installation: Option<&Installation>,
    run: bool,
) -> Toolkit {
    let prefixes = prefixes(host, &root);
    let first = |relative: &str| {
        prefixes
            .iter()
            .map(|p| p.join(relative))
            .find(|p| host.is_file(p))
    };
    let nvcc = first("bin/nvcc");
    let include_dir = first("include/cuda.h").and_then(|h| h.parent().map(Path::to_path_buf));
    let header_version = include_dir
        .as_ref()
        .and_then(|d| host.read(d.join("cuda.h")))
        .and_then(|bytes| cuda_h_version(&String::from_utf8_lossy(&bytes)));
    let nvcc_wheels = wheels_named(host, &root, "nvidia-cuda-nvcc");
    let nvvm_wheel = wheels_named(host, &root, "nvidia-nvvm")
        .first()
        .and_then(|w| w.rsplit(' ').next().map(str::to_owned));
    let cicc_expected = nvcc.as_deref().and_then(|n| cicc_path(host, n));
    let cicc = cicc_expected.clone().filter(|c| host.is_file(c));
    let cicc_missing = cicc_expected.filter(|c| !host.is_file(c));
    let (nvcc_version, nvcc_version_source) = match nvcc.as_deref().filter(|_| run) {
        Some(nvcc) => match ask_nvcc(nvcc) {
            Some(v) => (Some(v), Some("nvcc --version".to_string())),
            None => from_wheels(&nvcc_wheels),
        },
        None if nvcc.is_some() => from_wheels(&nvcc_wheels),
        None => (None, None),
    };
    let host_limits = first("include/crt/host_config.h").and_then(|path| {
        let text = host.read(&path)?;
        Some(HostLimits::parse(path, &String::from_utf8_lossy(&text)))
    });
    let link_stub = prefixes
        .iter()
        .flat_map(|p| STUB_DIRS.iter().map(move |d| p.join(d).join("libcuda.so")))
        .find(|p| host.is_file(p));
    Toolkit {
        exists: host.is_dir(&root),
        missing_headers: match &include_dir {
            Some(_) => EXPECTED_HEADERS
                .iter()
                .filter(|h| first(&format!("include/{h}")).is_none())
                .map(|h| h.to_string())
                .collect(),
            None => Vec::new(),
        },
        ptxas_only: nvcc.is_none().then(|| first("bin/ptxas")).flatten(),
        cicc,
        cicc_missing,
        nvvm_wheel,
        probe: None,
        library_version: installation.and_then(|i| i.cuda_version.clone()),
        root,
        named_by,
        nvcc,
        nvcc_version,
        nvcc_version_source,
        nvcc_wheels,
        include_dir,
        header_version,
        link_stub,
        host_limits,
    }
}

/// Where `nvcc`'s `nvcc.profile` (beside it) says cicc lies: its `CICC_PATH` (CUDA 13), else
/// the nvvm directory its `PATH` line adds (`$(TOP)/$(_NVVM_BRANCH_)/bin`, CUDA 12 and before);
/// `None` without a profile.
fn cicc_path(host: &Host, nvcc: &Path) -> Option<PathBuf> {
    let here = nvcc.parent()?;
    let text = host.read(here.join("nvcc.profile"))?;
    let text = String::from_utf8_lossy(&text);
    let value = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim().trim_end_matches('+').trim() == key).then(|| v.trim().to_owned())
        })
    };
    let here_text = here.display().to_string();
    let top = value("TOP")?.replace("$(_HERE_)", &here_text);
    let dir = match value("CICC_PATH") {
        Some(dir) => dir,
        None => value("PATH")?
            .split(':')
            .find(|p| p.contains("NVVM") || p.contains("nvvm"))?
            .to_owned(),
    };
    let dir = dir
        .replace("$(TOP)", &top)
        .replace("$(_HERE_)", &here_text)
        .replace("$(_NVVM_BRANCH_)", "nvvm");
    Some(PathBuf::from(dir.trim()).join("cicc"))
}

/// `#define CUDA_VERSION 12090` as `12.9`.
pub fn cuda_h_version(text: &str) -> Option<String> {
    let value: u32 = text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("#define")?.trim_start();
        rest.strip_prefix("CUDA_VERSION")?.trim().parse().ok()
    })?;
    let version = crate::compat::CudaVersion::from_api(value)?;
    Some(version.to_string())
}

/// `Cuda compilation tools, release 13.0, V13.0.88` as `13.0`.
pub fn nvcc_release(text: &str) -> Option<String> {
    let at = text.find("release ")?;
    let release = text[at + "release ".len()..]
        .split([',', ' ', '\n'])
        .next()?;
    crate::compat::CudaVersion::parse(release).map(|v| v.to_string())
}

fn ask_nvcc(nvcc: &Path) -> Option<String> {
    nvcc_release(&crate::trust::output_if_trusted(nvcc, &["--version"], NVCC_TIMEOUT).ok()?)
}

/// The wheels in a site-packages whose name starts with `prefix` (`nvidia-cuda-nvcc-cu12
/// 12.9.86`).
fn wheels_named(host: &Host, root: &Path, prefix: &str) -> Vec<String> {
    let Some(real) = host.real(root) else {
        return Vec::new();
    };
    crate::discover::metadata::nvidia_dist_infos(&real)
        .iter()
        .filter_map(|d| {
            crate::hostfs::read_to_string(&d.join("METADATA"), crate::hostfs::TEXT).ok()
        })
        .filter_map(|text| crate::discover::metadata::name_and_version(&text))
        .filter(|(name, _)| name.starts_with(prefix))
        .map(|(name, version)| format!("{name} {version}"))
        .collect()
}

fn from_wheels(wheels: &[String]) -> (Option<String>, Option<String>) {
    wheels
        .iter()
        .find_map(|w| {
            let version = crate::compat::CudaVersion::parse(w.rsplit(' ').next()?)?;
            Some((Some(version.to_string()), Some(format!("wheel {w}"))))
        })
        .unwrap_or((None, None))
}

impl Toolkit {
    /// Why a build cannot compile CUDA code with it (nvcc, headers), or nothing when it can.
    pub fn missing(&self) -> Vec<String> {
        let mut why = Vec::new();
        if !self.exists {
            why.push("not a directory".to_string());
            return why;
        }
        if self.nvcc.is_none() {
            why.push(match &self.ptxas_only {
                Some(_) => "no nvcc (ptxas only)".to_string(),
                None => "no bin/nvcc".to_string(),
            });
        }
        if self.include_dir.is_none() {
            why.push("no include/cuda.h".to_string());
        }
        if self.cicc_missing.is_some() {
            why.push("no nvvm/bin/cicc beside nvcc (\"cicc: not found\" at every compile)".into());
        }
        if let Some(newer) = self.nvvm_newer_than_nvcc() {
            why.push(newer);
        }
        why
    }

    /// The `nvidia-nvvm` wheel when it is of a newer CUDA release than nvcc: its cicc writes
    /// PTX of an ISA nvcc's ptxas does not know.
    pub fn nvvm_newer_than_nvcc(&self) -> Option<String> {
        let nvvm = self.nvvm_wheel.as_deref()?;
        let nvcc = crate::compat::CudaVersion::parse(self.nvcc_version.as_deref()?)?;
        let release = crate::compat::CudaVersion::parse(nvvm)?;
        (release > nvcc).then(|| {
            format!("nvidia-nvvm {nvvm} is newer than nvcc {nvcc} (its ptxas rejects the PTX cicc writes: \"Unsupported .version\")")
        })
    }

    /// The pip line that gives this toolkit's nvcc the `nvidia-nvvm` of its own release.
    pub fn nvvm_pin(&self) -> Option<String> {
        let nvcc = crate::compat::CudaVersion::parse(self.nvcc_version.as_deref()?)?;
        Some(format!("pip install \"nvidia-nvvm=={nvcc}.*\""))
    }

    /// Whether its nvcc, headers and libraries name different CUDA versions.
    pub fn version_mismatch(&self) -> Option<String> {
        let header = self.header_version.as_deref()?;
        let others = [
            ("nvcc is", self.nvcc_version.as_deref()),
            ("its libraries are", self.library_version.as_deref()),
        ];
        let differ: Vec<String> = others
            .iter()
            .filter_map(|(what, v)| {
                let v = crate::compat::CudaVersion::parse((*v)?)?;
                (v.to_string() != header).then(|| format!("{what} CUDA {v}"))
            })
            .collect();
        (!differ.is_empty())
            .then(|| format!("cuda.h is CUDA {header} while {}", differ.join(" and ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cicc_is_where_nvcc_profile_puts_it_and_unknown_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let host = Host::default();
        assert_eq!(cicc_path(&host, &bin.join("nvcc")), None);
        let cuda13 = "TOP = $(_HERE_)/..\n\nCICC_PATH        = $(TOP)/nvvm/bin\nPATH += $(CICC_PATH):$(_HERE_):\n";
        std::fs::write(bin.join("nvcc.profile"), cuda13).unwrap();
        let expected = bin.join("../nvvm/bin/cicc");
        assert_eq!(cicc_path(&host, &bin.join("nvcc")), Some(expected.clone()));
        let cuda12 = "TOP              = $(_HERE_)/..\nPATH            += $(TOP)/$(_NVVM_BRANCH_)/bin:$(_HERE_):\n";
        std::fs::write(bin.join("nvcc.profile"), cuda12).unwrap();
        assert_eq!(cicc_path(&host, &bin.join("nvcc")), Some(expected));
    }

    #[test]
    fn versions_are_read_as_nvidia_writes_them() {
        assert_eq!(
            cuda_h_version("#define CUDA_VERSION 12090\n").as_deref(),
            Some("12.9")
        );
        assert_eq!(cuda_h_version("#define CUDA_VERSIONX 1\n"), None);
        assert_eq!(
            nvcc_release("Cuda compilation tools, release 13.0, V13.0.88\n").as_deref(),
            Some("13.0")
        );
    }
}
