//! The inventory's data model: what `scan` finds and every exporter prints.
//!
//! This is the canonical shape of `stackbench.scan/v1`. Fields are only ever added.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Everything one scan found on a host.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScanReport {
    pub schema: String,
    pub host: HostInfo,
    /// Where the scan looked, in order, and why.
    pub searched: Vec<SearchRoot>,
    pub installations: Vec<Installation>,
    /// Problems met outside any installation (unreadable directories, symlink loops, ...).
    pub problems: Vec<Problem>,
}

/// The host the scan ran on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostInfo {
    pub hostname: String,
    pub os: String,
    pub arch: String,
    pub stackbench_version: String,
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`): runs of one boot share clocks,
    /// page placement and module state that a reboot draws anew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
}

/// A directory the scan searched and the reason it was searched.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Hash)]
pub struct SearchRoot {
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    pub source: Source,
}

/// How a directory came to be searched.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Given with `--root`.
    Root,
    LdLibraryPath,
    LdSoCache,
    LdSoConf,
    /// `CUDA_HOME`, `CUDA_PATH` or `CUDA_ROOT`.
    CudaEnv,
    /// `/usr/local/cuda*`.
    UsrLocal,
    Opt,
    /// A Python environment: site-packages, a virtualenv, the user site.
    Python,
    Conda,
    /// The loader's default directories (`/lib`, `/usr/lib`, ...).
    SystemDefault,
    /// Windows' CUDA toolkits and System32, under `/mnt/c` inside WSL.
    Windows,
}

/// How an installation is laid out on disk.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// pip wheels in a `site-packages` (`nvidia/<lib>/lib`, `nvidia/cu13/lib`).
    Pip,
    /// A runfile or tarball toolkit (`cuda-X.Y/targets/<triple>/lib`).
    Toolkit,
    /// A conda environment (`lib/` beside `conda-meta/`).
    Conda,
    /// The NVIDIA driver's user-space libraries.
    Driver,
    /// A distribution's library directory (`/usr/lib/x86_64-linux-gnu`).
    System,
    /// Any other directory holding CUDA libraries.
    Directory,
}

/// One CUDA installation: a root, its layout and the libraries in it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Installation {
    #[serde(with = "crate::pathname")]
    pub root: PathBuf,
    pub layout: Layout,
    /// The CUDA version this installation provides or was built for (`12.9`, `11.8`).
    pub cuda_version: Option<String>,
    /// The driver version, for driver installations (`535.261.03`).
    pub driver_version: Option<String>,
    /// How the scan found it.
    pub sources: Vec<Source>,
    pub libraries: Vec<Library>,
    pub problems: Vec<Problem>,
    /// The platforms its metadata says its packages were built for, each with the file that
    /// says it: a wheel's `Tag` (`WHEEL: Tag: py3-none-manylinux2014_aarch64`), a conda
    /// package's `subdir` (`linux-aarch64`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<String>,
}

/// One shared-library file, read without loading it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Library {
    /// The component (`cudart`, `cublasLt`, `cudnn_ops_infer`, `cuda` for the driver).
    pub name: String,
    pub soname: Option<String>,
    /// The path as found (often a symlink).
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    /// The file the path finally points to.
    #[serde(with = "crate::pathname")]
    pub real_path: PathBuf,
    /// Every link from `path` to `real_path`, in order, `path` first.
    #[serde(with = "crate::pathname::list")]
    pub symlink_chain: Vec<PathBuf>,
    /// Other names in the same directory for the same file (`libcudart.so` beside `libcudart.so.12`).
    #[serde(with = "crate::pathname::list")]
    pub aliases: Vec<PathBuf>,
    pub version: Option<String>,
    pub version_source: Option<VersionSource>,
    pub size: u64,
    pub elf_class: Option<String>,
    pub machine: Option<String>,
    pub needed: Vec<String>,
    pub rpath: Vec<String>,
    pub runpath: Vec<String>,
    pub version_needs: Vec<VersionNeed>,
    pub version_defs: Vec<String>,
    pub dlopen_deps: Vec<String>,
    pub sass: Vec<String>,
    pub ptx: Vec<String>,
    /// Its GPU code holds no kernel (one cubin without a `.text.` section, as cuFFTW's and NPP
    /// core's): nothing to launch, so no GPU lacks kernels in it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kernel_free: bool,
    pub problems: Vec<Problem>,
    /// A Windows DLL's own facts; its imports are in `needed`, the DLLs it may `LoadLibrary`
    /// at run time in `dlopen_deps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pe: Option<PeFacts>,
    /// What the library says of its own build in its read-only data (NCCL's `NCCL version
    /// 2.27.5+cuda12.9`): the CUDA it was built for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_for: Option<BuiltFor>,
}

/// A library's version and the CUDA it was built for, as the library's own string says.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BuiltFor {
    /// `2.27.5`.
    pub version: String,
    /// `12.9`.
    pub cuda: String,
    /// The string itself: `NCCL version 2.27.5+cuda12.9`.
    pub said: String,
}

/// What a Windows DLL says beyond what every library says.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct PeFacts {
    /// `PE32` (32-bit) or `PE32+` (64-bit).
    pub class: String,
    /// DLLs loaded at their first call rather than with the DLL.
    pub delay_imports: Vec<String>,
    /// How many functions it exports.
    pub exports: usize,
    /// The version resource's `FileVersion` and `ProductVersion`.
    pub file_version: Option<String>,
    pub product_version: Option<String>,
}

/// Symbol versions a library needs from one dependency (ELF VERNEED).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct VersionNeed {
    pub file: String,
    pub versions: Vec<String>,
}

/// Where a library's version came from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum VersionSource {
    FileName,
    VersionJson,
    CondaMeta,
    WheelMetadata,
    /// A DLL's version resource (`ProductVersion`).
    VersionResource,
}

/// Something the scan could not read, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Problem {
    pub kind: ProblemKind,
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    pub message: String,
}

/// Stable codes for what went wrong while reading.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    Unreadable,
    NotElf,
    Truncated,
    MalformedElf,
    /// The `.nv_fatbin` section could not be read to its end.
    MalformedFatbin,
    BrokenSymlink,
    SymlinkLoop,
    TooDeep,
    TooManyEntries,
    MalformedMetadata,
    /// A file named like a DLL that is not a PE file.
    NotPe,
    MalformedPe,
    /// A FIFO, device or socket where a file was expected: refused, never opened for reading.
    NotRegularFile,
    /// A file larger than anything of its kind (a sparse file, an endless one): not read.
    TooLarge,
    /// Libraries built for another machine than this host's (aarch64 on x86_64): no program
    /// here can load them, and the loader passes over them as if they were not there.
    ForeignArchitecture,
}

/// An installation's libraries built for another machine than this host's.
pub struct Foreign<'a> {
    /// Their machines (`aarch64`), sorted.
    pub machines: Vec<&'a str>,
    pub libraries: Vec<&'a Library>,
    /// Whether every ELF library of the installation is among them.
    pub whole: bool,
}

impl Foreign<'_> {
    /// What the scan says of them, naming the machines of both sides.
    pub fn describe(&self) -> String {
        let machines = self.machines.join(" and ");
        let host = crate::machine::OWN_MACHINE;
        if self.whole {
            format!(
                "its {} libraries are built for {machines} and this host is {host}: no program here can load them",
                self.libraries.len()
            )
        } else {
            let names: Vec<String> = self.libraries.iter().map(|l| file_name(&l.path)).collect();
            format!(
                "{} {} built for {machines} among its {host} libraries: no program here can load {}",
                names.join(", "),
                if names.len() == 1 { "is" } else { "are" },
                if names.len() == 1 { "it" } else { "them" }
            )
        }
    }
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

impl Installation {
    /// Its libraries built for another machine, if any.
    pub fn foreign(&self) -> Option<Foreign<'_>> {
        let libraries: Vec<&Library> = (self.libraries.iter())
            .filter(|l| l.foreign_machine().is_some())
            .collect();
        let mut machines: Vec<&str> = libraries
            .iter()
            .filter_map(|l| l.foreign_machine())
            .collect();
        machines.sort_unstable();
        machines.dedup();
        let elf = self
            .libraries
            .iter()
            .filter(|l| l.elf_class.is_some())
            .count();
        (!libraries.is_empty()).then_some(Foreign {
            machines,
            whole: libraries.len() == elf,
            libraries,
        })
    }
}

impl Library {
    /// Whether this program could load it: an ELF of its own class and machine.
    pub fn loads_here(&self) -> bool {
        self.elf_class.as_deref() == Some(crate::machine::OWN_CLASS)
            && self.machine.as_deref() == Some(crate::machine::OWN_MACHINE)
    }

    /// The machine of an ELF library built for another machine than this host's
    /// ([`crate::machine::runs_here`]); `None` for this host's libraries and for DLLs.
    pub fn foreign_machine(&self) -> Option<&str> {
        self.elf_class.as_ref()?;
        self.machine
            .as_deref()
            .filter(|m| !crate::machine::runs_here(m))
    }

    /// `ELF64`, `PE32+`, ...: the binary's format and word size, when it was read.
    pub fn binary_class(&self) -> Option<&str> {
        self.elf_class
            .as_deref()
            .or(self.pe.as_ref().map(|p| p.class.as_str()))
    }
}

impl Layout {
    /// The layout's stable name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Pip => "pip",
            Layout::Toolkit => "toolkit",
            Layout::Conda => "conda",
            Layout::Driver => "driver",
            Layout::System => "system",
            Layout::Directory => "directory",
        }
    }
}

impl Source {
    /// How the source is shown to people.
    pub fn describe(self) -> &'static str {
        match self {
            Source::Root => "--root",
            Source::LdLibraryPath => "LD_LIBRARY_PATH",
            Source::LdSoCache => "ld.so.cache",
            Source::LdSoConf => "ld.so.conf",
            Source::CudaEnv => "CUDA_HOME/CUDA_PATH/CUDA_ROOT",
            Source::UsrLocal => "/usr/local/cuda*",
            Source::Opt => "/opt",
            Source::Python => "python",
            Source::Conda => "conda",
            Source::SystemDefault => "loader default",
            Source::Windows => "WSL: /mnt/c",
        }
    }
}

impl ProblemKind {
    /// The stable snake_case code, as in JSON.
    pub fn code(self) -> &'static str {
        match self {
            ProblemKind::Unreadable => "unreadable",
            ProblemKind::NotElf => "not_elf",
            ProblemKind::Truncated => "truncated",
            ProblemKind::MalformedElf => "malformed_elf",
            ProblemKind::MalformedFatbin => "malformed_fatbin",
            ProblemKind::BrokenSymlink => "broken_symlink",
            ProblemKind::SymlinkLoop => "symlink_loop",
            ProblemKind::TooDeep => "too_deep",
            ProblemKind::TooManyEntries => "too_many_entries",
            ProblemKind::MalformedMetadata => "malformed_metadata",
            ProblemKind::NotPe => "not_pe",
            ProblemKind::MalformedPe => "malformed_pe",
            ProblemKind::NotRegularFile => "not_regular_file",
            ProblemKind::TooLarge => "too_large",
            ProblemKind::ForeignArchitecture => "foreign_architecture",
        }
    }

    /// The problem a file the host reader refused is.
    pub fn of_read_error(error: &crate::hostfs::ReadError) -> ProblemKind {
        match error {
            crate::hostfs::ReadError::NotRegular(_) => ProblemKind::NotRegularFile,
            crate::hostfs::ReadError::TooLarge { .. }
            | crate::hostfs::ReadError::TooManyLines { .. } => ProblemKind::TooLarge,
            crate::hostfs::ReadError::Io(_) | crate::hostfs::ReadError::NoReopen(_) => {
                ProblemKind::Unreadable
            }
        }
    }
}

impl ScanReport {
    /// Every problem in the report: the scan's own, each installation's and each library's.
    pub fn all_problems(&self) -> impl Iterator<Item = &Problem> {
        self.problems.iter().chain(
            self.installations
                .iter()
                .flat_map(Installation::all_problems),
        )
    }
}

impl Installation {
    /// The installation's own problems, then its libraries'.
    pub fn all_problems(&self) -> impl Iterator<Item = &Problem> {
        self.problems
            .iter()
            .chain(self.libraries.iter().flat_map(|l| l.problems.iter()))
    }
}
