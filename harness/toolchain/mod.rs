//! Can this host build CUDA code? `pip install pycuda`, PyTorch C++/CUDA extensions and every
//! other source build need nvcc, the toolkit's headers, a `libcuda.so` to link against and a
//! host compiler nvcc accepts (GUIDE.md section 11). This module reads those facts for every
//! toolkit a build might take; `diagnose` turns them into findings, and [`failure`] reads a
//! build's own output for the signatures of each missing part.

pub mod compiler;
pub mod failure;
pub mod host_config;
pub mod probe;
pub mod toolkit;

use crate::discover::Host;
use crate::model::Installation;
use compiler::HostCompiler;
use serde::{Deserialize, Serialize};
use toolkit::Toolkit;

/// CUDA 13.0's compiler as pip wheels of one release, nvvm pinned (nvcc's wheel does not pin
/// it): the set `tests/doctor_build.rs` compiles with.
pub const WHEELS_THAT_COMPILE: &str = "pip install nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-nvvm==13.0.88";

/// What a build on this host would find.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildFacts {
    pub toolkits: Vec<Toolkit>,
    /// The host compiler nvcc would call.
    pub host_compiler: Option<HostCompiler>,
    /// Why there is no host compiler to judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_compiler_missing: Option<String>,
    /// A `libcuda.so` the linker finds in the host's default directories (the driver's
    /// development link), for builds that link `-lcuda` without a stub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::pathname::option")]
    pub system_libcuda: Option<std::path::PathBuf>,
}

/// Reads the build facts of `host` for the toolkits among `installations` and those the
/// environment names. Programs (nvcc, the host compiler) are run only on this machine's own
/// root and only where the trust rule allows.
pub fn read(host: &Host, installations: &[Installation]) -> BuildFacts {
    let run = host.is_own_root();
    let toolkits = toolkit::candidates(host, installations)
        .into_iter()
        .map(|(root, named_by, installation)| {
            toolkit::read(host, root, named_by, installation, run)
        })
        .collect();
    let (host_compiler, host_compiler_missing) = match compiler::find(host) {
        Ok(c) => (Some(c), None),
        Err(why) => (None, Some(why)),
    };
    let system_libcuda = crate::search_path::X86_64_DEFAULT_DIRS
        .iter()
        .map(|d| host.place(d).join("libcuda.so"))
        .find(|p| host.is_file(p));
    BuildFacts {
        toolkits,
        host_compiler,
        host_compiler_missing,
        system_libcuda,
    }
}

impl BuildFacts {
    /// Compiles and links the probe with every toolkit that has nvcc (`doctor --build`).
    pub fn probe(&mut self) {
        for at in 0..self.toolkits.len() {
            let toolkit = &self.toolkits[at];
            let libcuda = self.libcuda_for(toolkit);
            let probe = match &self.host_compiler {
                Some(compiler) => probe::run(toolkit, compiler, libcuda.as_deref()),
                // nvcc without -ccbin runs the first gcc on PATH, the one refused included.
                None => (toolkit.nvcc.as_ref()).map(|_| {
                    probe::not_run(format!(
                        "no host compiler to give nvcc: {}",
                        self.host_compiler_line()
                    ))
                }),
            };
            self.toolkits[at].probe = probe;
        }
    }

    /// Why a toolkit cannot build CUDA code, or nothing when it can: nvcc, cicc and headers
    /// present, a host compiler its `host_config.h` accepts and, where a probe was compiled, a
    /// probe that compiled.
    pub fn cannot_compile(&self, toolkit: &Toolkit) -> Vec<String> {
        let mut why = toolkit.missing();
        let failed = (toolkit.probe.as_ref())
            .filter(|p| !p.compiled)
            .and_then(|p| p.failure.as_ref());
        why.extend(failed.map(|f| format!("the probe: {}", f.describe())));
        if !why.is_empty() {
            return why;
        }
        match &self.host_compiler {
            None => why.push(
                self.host_compiler_missing
                    .clone()
                    .unwrap_or_else(|| "no host compiler".into()),
            ),
            Some(_) => why.extend(self.host_compiler_refused(toolkit)),
        }
        why
    }

    /// Why `toolkit`'s `host_config.h` refuses the host compiler, when it does.
    pub fn host_compiler_refused(&self, toolkit: &Toolkit) -> Option<String> {
        let compiler = self.host_compiler.as_ref()?;
        (toolkit.host_limits.as_ref())?.refuses(compiler.kind, compiler.major)
    }

    /// The host compiler in words, or why there is none.
    pub fn host_compiler_line(&self) -> String {
        match (&self.host_compiler, &self.host_compiler_missing) {
            (Some(c), _) => compiler::describe(c),
            (None, Some(why)) => why.clone(),
            (None, None) => "none found".into(),
        }
    }

    /// What a build links `-lcuda` against with this toolkit: its stub, else the system's.
    pub fn libcuda_for(&self, toolkit: &Toolkit) -> Option<std::path::PathBuf> {
        toolkit.link_stub.clone().or(self.system_libcuda.clone())
    }

    /// Whether some toolkit here has nvcc at all.
    pub fn has_nvcc(&self) -> bool {
        self.toolkits.iter().any(|t| t.nvcc.is_some())
    }

    /// One line for a host with no nvcc anywhere: it cannot build CUDA code, and what to install.
    pub fn no_compiler_line(&self) -> String {
        format!("this host cannot: it has no nvcc, so no CUDA source build (pip install pycuda, a PyTorch extension) can work; install CUDA 13.0's compiler: `{WHEELS_THAT_COMPILE}`, or NVIDIA's toolkit (`apt install cuda-toolkit-13-0`)")
    }

    /// The toolkit to point a build at: one that can compile, newest nvcc first; else one with
    /// nvcc.
    pub fn best(&self) -> Option<&Toolkit> {
        let ready = |t: &&Toolkit| self.cannot_compile(t).is_empty();
        let version = |t: &&Toolkit| {
            t.nvcc_version
                .as_deref()
                .and_then(crate::compat::CudaVersion::parse)
        };
        self.toolkits
            .iter()
            .filter(ready)
            .max_by_key(version)
            .or_else(|| {
                self.toolkits
                    .iter()
                    .filter(|t| t.nvcc.is_some())
                    .max_by_key(version)
            })
    }

    /// One line per toolkit: `can compile: yes (a probe compiled in 1.6 s; nvcc 13.0, cuda.h
    /// 13.0, g++ 12.2.0)` where a probe compiled, `looks complete, not compiled (...)` where only
    /// its files were read, or `no (why)`; and whether `-lcuda` links.
    pub fn summary(&self, toolkit: &Toolkit) -> String {
        let why = self.cannot_compile(toolkit);
        let compile = match why.is_empty() {
            true => {
                let mut parts = vec![format!(
                    "nvcc {}",
                    toolkit
                        .nvcc_version
                        .as_deref()
                        .unwrap_or("of unknown version")
                )];
                parts.extend(
                    toolkit
                        .header_version
                        .as_ref()
                        .map(|v| format!("cuda.h {v}")),
                );
                parts.extend(self.host_compiler.as_ref().map(compiler::describe));
                if !toolkit.missing_headers.is_empty() {
                    parts.push(format!("without {}", toolkit.missing_headers.join(", ")));
                }
                match &toolkit.probe {
                    Some(p) => format!(
                        "yes (a probe compiled{} in {:.1} s; {})",
                        p.ran_as,
                        p.millis as f64 / 1000.0,
                        parts.join(", ")
                    ),
                    None => format!(
                        "looks complete, not compiled ({}; `doctor --build` compiles a probe)",
                        parts.join(", ")
                    ),
                }
            }
            false => format!("no ({})", why.join("; ")),
        };
        let probed = toolkit.probe.as_ref().filter(|p| p.compiled);
        let link = match (probed, self.libcuda_for(toolkit)) {
            (Some(p), _) if !p.linked => format!(
                "no ({})",
                p.failure.as_ref().map_or(String::new(), |f| f.line.clone())
            ),
            (Some(_), Some(path)) => format!("yes (the probe linked against {})", path.display()),
            (Some(_), None) => "yes (the probe linked)".into(),
            (None, Some(path)) => format!("yes ({})", path.display()),
            (None, None) => {
                "no (no stubs/libcuda.so, no libcuda.so in the linker's directories)".into()
            }
        };
        format!("can compile: {compile}; links -lcuda: {link}")
    }
}
