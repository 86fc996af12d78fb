//! The NVIDIA driver as its own files show it, read as text and bytes and never loaded: the
//! kernel module's version (`/proc/driver/nvidia/version`, `/sys/module/nvidia/version`), the
//! user-space `libcuda.so.1` and `libnvidia-ml.so.1` in the loader's order with their versions
//! (file name and the version string inside the file), the GPUs' models, NVSwitches and the
//! Fabric Manager. Every path is read through [`Host::real`], so below a sysroot nothing
//! outside it is touched.

use super::{ldcache, ldconf, Host};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where the loaded kernel module says its version.
pub const PROC_VERSION: &str = "/proc/driver/nvidia/version";
/// The module's version alone, from sysfs.
pub const SYS_VERSION: &str = "/sys/module/nvidia/version";
/// Per-GPU facts the kernel module gives: `<pci address>/information`.
pub const PROC_GPUS: &str = "/proc/driver/nvidia/gpus";
/// Present on NVSwitch systems (HGX), with the NVSwitch kernel module loaded.
pub const PROC_NVSWITCH: &str = "/proc/driver/nvidia-nvswitch";
/// The Fabric Manager daemon NVSwitch systems need.
pub const FABRIC_MANAGER: &str = "/usr/bin/nv-fabricmanager";
/// Its unit enabled at boot.
pub const FABRIC_MANAGER_UNIT: &str =
    "/etc/systemd/system/multi-user.target.wants/nvidia-fabricmanager.service";
/// dpkg's record of installed packages.
pub const DPKG_STATUS: &str = "/var/lib/dpkg/status";

/// The loaded kernel module's version, and where it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelModule {
    pub version: String,
    /// The file as the host names it (`/proc/driver/nvidia/version`).
    #[serde(with = "crate::pathname")]
    pub source: PathBuf,
    /// The line the version was read from.
    pub line: String,
}

/// A driver library the loader can reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverFile {
    /// As the host names it (`/usr/lib/x86_64-linux-gnu/libcuda.so.1`).
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    /// The real file, as the host names it (`.../libcuda.so.535.261.03`).
    #[serde(with = "crate::pathname")]
    pub real: PathBuf,
    /// How the loader comes to it (`LD_LIBRARY_PATH`, `ld.so.cache`, ...).
    pub via: String,
    /// The version in the real file's name.
    pub name_version: Option<String>,
    /// The version string the file itself holds.
    pub embedded_version: Option<String>,
}

impl DriverFile {
    /// Its version: the file's own string, else its name's.
    pub fn version(&self) -> Option<&str> {
        self.embedded_version
            .as_deref()
            .or(self.name_version.as_deref())
    }

    /// A forward-compatibility copy (`cuda-X.Y/compat`).
    pub fn is_compat(&self) -> bool {
        self.real
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "compat")
    }

    /// One line of evidence: where, how reached, which version.
    pub fn describe(&self) -> String {
        let real = if self.real == self.path {
            String::new()
        } else {
            format!(" -> {}", self.real.display())
        };
        format!(
            "{}{real} (via {}): version {} (file name: {}, version string inside: {})",
            self.path.display(),
            self.via,
            self.version().unwrap_or("unknown"),
            self.name_version.as_deref().unwrap_or("none"),
            self.embedded_version.as_deref().unwrap_or("none")
        )
    }
}

/// The Fabric Manager as installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FabricManager {
    /// Its version, from the package that installed it.
    pub version: Option<String>,
    /// The package record it was read from (`nvidia-fabricmanager-550 550.54.15-1`).
    pub package: Option<String>,
    /// Whether its unit is enabled at boot.
    pub enabled: bool,
}

/// Everything about the NVIDIA driver the host's files show.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverFacts {
    /// The loaded module's version from each file that gives it.
    pub modules: Vec<KernelModule>,
    /// Every `libcuda.so.1` the loader can reach, the one it takes first.
    pub libcuda: Vec<DriverFile>,
    /// Every `libnvidia-ml.so.1` the loader can reach, the one it takes first.
    pub nvml: Vec<DriverFile>,
    /// Every versioned `libcuda.so.X.Y.Z` in the loader's directories, with its version.
    #[serde(with = "crate::pathname::pairs")]
    pub libcuda_files: Vec<(PathBuf, String)>,
    /// Each GPU's model, by its `information` file.
    #[serde(with = "crate::pathname::pairs")]
    pub gpus: Vec<(PathBuf, String)>,
    /// The NVSwitch markers found (`/proc/driver/nvidia-nvswitch`, `/dev/nvidia-nvswitch*`).
    #[serde(with = "crate::pathname::list")]
    pub nvswitch: Vec<PathBuf>,
    /// `None` when `nv-fabricmanager` is not there.
    pub fabric_manager: Option<FabricManager>,
    /// The driver's device nodes present (`/dev/nvidiactl`, `/dev/nvidia0`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(with = "crate::pathname::list")]
    pub device_nodes: Vec<PathBuf>,
    /// WSL 2's GPU device (`/dev/dxg`): there the GPU is reached without an NVIDIA kernel
    /// module, through the Windows driver and `/usr/lib/wsl/lib`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wsl_gpu: bool,
    /// NVIDIA's PCI functions as sysfs lists them (GPUs, NVSwitches and their other functions:
    /// vendor `0x10de`); `None` where sysfs lists no PCI function at all (not mounted, or
    /// below a sysroot, where it is no part of an image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::pathname::option_list")]
    pub nvidia_pci: Option<Vec<PathBuf>>,
}

impl DriverFacts {
    /// The loaded kernel module's version, from the first file that gives one.
    pub fn module_version(&self) -> Option<&str> {
        self.modules.first().map(|m| m.version.as_str())
    }

    /// The host's driver version: the loaded module's, else that of the first real (not
    /// `compat`) `libcuda.so.1` the loader takes.
    pub fn driver_version(&self) -> Option<&str> {
        self.module_version()
            .or_else(|| first_real(&self.libcuda).and_then(DriverFile::version))
    }

    /// The module's lines as evidence: `/proc/driver/nvidia/version: NVRM version: ...`.
    pub fn module_evidence(&self) -> Vec<String> {
        self.modules
            .iter()
            .map(|m| format!("{}: {}", m.source.display(), m.line))
            .collect()
    }
}

/// The first real (not `compat`) copy of a driver library the loader takes.
pub fn first_real(files: &[DriverFile]) -> Option<&DriverFile> {
    files.iter().find(|f| !f.is_compat())
}

/// Reads the driver's files on `host`.
pub fn read(host: &Host) -> DriverFacts {
    let dirs = loader_dirs(host);
    let fabric = host.real(FABRIC_MANAGER).map(|_| fabric_manager(host));
    DriverFacts {
        modules: kernel_modules(host),
        libcuda: reachable(host, &dirs, "libcuda.so.1"),
        nvml: reachable(host, &dirs, "libnvidia-ml.so.1"),
        libcuda_files: versioned(host, &dirs, "libcuda.so."),
        gpus: gpu_models(host),
        nvswitch: nvswitch(host),
        fabric_manager: fabric,
        device_nodes: device_nodes(host),
        wsl_gpu: host.real(WSL_GPU).is_some(),
        nvidia_pci: nvidia_pci(host),
    }
}

/// Where sysfs lists the PCI functions, each a directory holding its `vendor`.
const PCI_DEVICES: &str = "/sys/bus/pci/devices";

/// NVIDIA's PCI vendor id, as sysfs writes it.
const NVIDIA_VENDOR: &str = "0x10de";

/// The PCI functions of NVIDIA's that sysfs lists; `None` when it lists none of anyone's.
fn nvidia_pci(host: &Host) -> Option<Vec<PathBuf>> {
    let all = host.entries(PCI_DEVICES);
    if all.is_empty() {
        return None;
    }
    let nvidia = |dir: &PathBuf| {
        host.read(dir.join("vendor"))
            .is_some_and(|v| String::from_utf8_lossy(&v).trim() == NVIDIA_VENDOR)
    };
    Some(all.into_iter().filter(nvidia).collect())
}

/// WSL 2's GPU device.
pub const WSL_GPU: &str = "/dev/dxg";

/// `/dev/nvidiactl` and each `/dev/nvidiaN` present.
fn device_nodes(host: &Host) -> Vec<PathBuf> {
    let numbered = |p: &PathBuf| {
        p.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("nvidia"))
            .is_some_and(|rest| {
                rest == "ctl" || (!rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
            })
    };
    host.entries("/dev")
        .into_iter()
        .filter(numbered)
        .map(|p| host_name(host, &p))
        .collect()
}

/// The module's version from `/proc/driver/nvidia/version` and `/sys/module/nvidia/version`.
pub fn kernel_modules(host: &Host) -> Vec<KernelModule> {
    let mut modules = Vec::new();
    if let Some(text) = host.read(PROC_VERSION) {
        let text = String::from_utf8_lossy(&text);
        if let Some((version, line)) = parse_proc_version(&text) {
            modules.push(KernelModule {
                version,
                source: PROC_VERSION.into(),
                line,
            });
        }
    }
    if let Some(text) = host.read(SYS_VERSION) {
        let line = String::from_utf8_lossy(&text).trim().to_owned();
        if is_driver_version(&line) {
            modules.push(KernelModule {
                version: line.clone(),
                source: SYS_VERSION.into(),
                line,
            });
        }
    }
    modules
}

/// The version in `/proc/driver/nvidia/version`'s `NVRM version:` line: the first word after
/// `Kernel Module` (proprietary) or `Kernel Module for <arch>` (open) that is a version.
pub fn parse_proc_version(text: &str) -> Option<(String, String)> {
    let line = text.lines().find(|l| l.starts_with("NVRM version:"))?;
    let after = &line[line.find("Kernel Module")?..];
    let version = after
        .split_whitespace()
        .find(|w| is_driver_version(w))?
        .to_owned();
    Some((version, line.trim_end().to_owned()))
}

/// A driver version: `535.261.03`, `550.54.15`, `470.57` (three-digit branch, then one or two
/// numeric parts).
pub fn is_driver_version(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    (2..=3).contains(&parts.len())
        && parts[0].len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// A driver version as numbers, for ordering (`535.261.03` -> `[535, 261, 3]`).
pub fn version_key(version: &str) -> Vec<u32> {
    version.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// The version in a driver library's file name: `libcuda.so.535.261.03` -> `535.261.03`.
pub fn name_version(path: &Path, stem: &str) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let version = name.strip_prefix(stem)?;
    is_driver_version(version).then(|| version.to_owned())
}

/// The driver version a library holds as a string of its own: the first NUL-delimited string
/// that is a driver version (libcuda 535.261.03 holds `535.261.03` in `.rodata`, before its
/// table of older branches).
pub fn embedded_version(bytes: &[u8]) -> Option<String> {
    for at in memchr::memchr_iter(0, bytes) {
        let rest = &bytes[at + 1..];
        if !rest.first().is_some_and(u8::is_ascii_digit) {
            continue;
        }
        let Some(end) = rest.iter().take(12).position(|b| *b == 0) else {
            continue;
        };
        if let Ok(text) = std::str::from_utf8(&rest[..end]) {
            if is_driver_version(text) {
                return Some(text.to_owned());
            }
        }
    }
    None
}

/// The directories the loader searches, as the host names them, each with how it is reached:
/// `LD_LIBRARY_PATH`, then the ld.so.cache's directories (or, without a cache, those of
/// ld.so.conf, which ldconfig would put there), then the default directories.
pub fn loader_dirs(host: &Host) -> Vec<(PathBuf, String)> {
    let mut dirs: Vec<(PathBuf, String)> = Vec::new();
    let mut add = |dir: PathBuf, via: &str| {
        if dir.is_absolute() && !dirs.iter().any(|(d, _)| *d == dir) {
            dirs.push((dir, via.to_owned()));
        }
    };
    if let Some(value) = host.env.get("LD_LIBRARY_PATH") {
        for entry in crate::search_path::split_search_path(value) {
            add(PathBuf::from(entry), "LD_LIBRARY_PATH");
        }
    }
    match host.read(&host.ld_so_cache).map(|b| ldcache::parse(&b)) {
        Some(Ok(entries)) => {
            for entry in entries.iter().filter(|e| e.flags == 0x0303) {
                if let Some(dir) = entry.path.parent() {
                    add(dir.to_path_buf(), "ld.so.cache");
                }
            }
        }
        _ => {
            for dir in ldconf::directories(&host.place(&host.ld_so_conf), &host.sysroot) {
                add(host_name(host, &dir), "ld.so.conf (no ld.so.cache)");
            }
        }
    }
    for dir in crate::search_path::X86_64_DEFAULT_DIRS {
        add(PathBuf::from(dir), "default directory");
    }
    dirs
}

/// `path` (below the sysroot) as the host names it.
pub fn host_name(host: &Host, path: &Path) -> PathBuf {
    match path.strip_prefix(&host.sysroot) {
        Ok(inside) if !host.is_own_root() => Path::new("/").join(inside),
        _ => path.to_path_buf(),
    }
}

/// Every 64-bit x86-64 `soname` in `dirs`, in order, each real file once.
fn reachable(host: &Host, dirs: &[(PathBuf, String)], soname: &str) -> Vec<DriverFile> {
    let stem = soname.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let stem = format!("{stem}.");
    let mut files: Vec<DriverFile> = Vec::new();
    for (dir, via) in dirs {
        let path = dir.join(soname);
        let Some(real) = host.real(&path) else {
            continue;
        };
        let Ok(bytes) = crate::hostfs::read(&real, crate::hostfs::BINARY) else {
            continue;
        };
        let real = host_name(host, &real);
        if !is_elf64_x86_64(&bytes) || files.iter().any(|f| f.real == real) {
            continue;
        }
        files.push(DriverFile {
            name_version: name_version(&real, &stem),
            embedded_version: embedded_version(&bytes),
            path,
            real,
            via: via.clone(),
        });
    }
    files
}

/// Whether the bytes begin as a 64-bit little-endian x86-64 ELF file.
fn is_elf64_x86_64(bytes: &[u8]) -> bool {
    bytes.len() > 20 && bytes.starts_with(b"\x7fELF") && bytes[4] == 2 && bytes[18] == 62
}

/// Every file named `<stem><version>` in `dirs`, with its version, each real file once.
fn versioned(host: &Host, dirs: &[(PathBuf, String)], stem: &str) -> Vec<(PathBuf, String)> {
    let mut found: Vec<(PathBuf, String)> = Vec::new();
    for (dir, _) in dirs {
        for path in host.entries(dir) {
            if let Some(version) = name_version(&path, stem) {
                let path = host_name(host, &path);
                if !found.iter().any(|(p, _)| *p == path) {
                    found.push((path, version));
                }
            }
        }
    }
    found
}

/// Each GPU's `Model:` from `/proc/driver/nvidia/gpus/<address>/information`.
fn gpu_models(host: &Host) -> Vec<(PathBuf, String)> {
    let mut gpus: Vec<(PathBuf, String)> = (host.entries(PROC_GPUS).into_iter())
        .filter_map(|entry| {
            let file = Path::new(PROC_GPUS)
                .join(entry.file_name()?)
                .join("information");
            let text = host.read(&file)?;
            let text = String::from_utf8_lossy(&text);
            let model = text
                .lines()
                .find_map(|l| l.strip_prefix("Model:"))?
                .trim()
                .to_owned();
            Some((file, model))
        })
        .collect();
    gpus.sort();
    gpus
}

/// The NVSwitches themselves: each entry of `/proc/driver/nvidia-nvswitch/devices` and each
/// `/dev/nvidia-nvswitchN`. The driver makes `/proc/driver/nvidia-nvswitch` and
/// `/dev/nvidia-nvswitchctl` wherever its nvswitch module loads, switches or not (a one-H100
/// VM has both), so neither counts.
fn nvswitch(host: &Host) -> Vec<PathBuf> {
    let devices = Path::new(PROC_NVSWITCH).join("devices");
    let mut found: Vec<PathBuf> = host
        .entries(&devices)
        .into_iter()
        .filter_map(|entry| Some(devices.join(entry.file_name()?)))
        .collect();
    let nodes = host.entries("/dev").into_iter().filter_map(|entry| {
        let name = entry.file_name()?;
        let number = name.to_str()?.strip_prefix("nvidia-nvswitch")?;
        (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
            .then(|| Path::new("/dev").join(name))
    });
    found.extend(nodes);
    found.sort();
    found
}

/// The installed Fabric Manager: its package's version (dpkg) and whether its unit is enabled.
fn fabric_manager(host: &Host) -> FabricManager {
    let record = host
        .read(DPKG_STATUS)
        .and_then(|s| fabric_manager_package(&String::from_utf8_lossy(&s)));
    let unit = super::inside::entry(&host.sysroot, &host.place(FABRIC_MANAGER_UNIT));
    FabricManager {
        version: record.as_ref().map(|(_, v)| v.clone()),
        package: record.map(|(p, v)| format!("{p} {v}")),
        enabled: std::fs::symlink_metadata(unit).is_ok(),
    }
}

/// The installed Fabric Manager package in dpkg's status file (`Package:
/// nvidia-fabricmanager-550`, `Status: install ok installed`, `Version: 550.54.15-1`): its name
/// and the driver version its version holds (epoch and Debian revision left out).
pub fn fabric_manager_package(status: &str) -> Option<(String, String)> {
    status.split("\n\n").find_map(|paragraph| {
        let field = |name: &str| {
            paragraph
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
        };
        let package = field("Package:")?;
        let fabric = package.starts_with("nvidia-fabricmanager")
            || package.starts_with("cuda-drivers-fabricmanager");
        if !fabric || !field("Status:")?.ends_with(" installed") {
            return None;
        }
        let version = field("Version:")?;
        let version = version.split_once(':').map_or(version, |(_, v)| v);
        let version = version.split('-').next()?;
        Some((package.to_owned(), version.to_owned()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proc_version_line_of_both_module_flavours_gives_the_version() {
        let proprietary = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n";
        assert_eq!(
            parse_proc_version(proprietary).map(|(v, _)| v).as_deref(),
            Some("550.54.15")
        );
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Sep 23 09:38:52 UTC 2025\n";
        assert_eq!(
            parse_proc_version(open).map(|(v, _)| v).as_deref(),
            Some("580.95.05")
        );
        assert_eq!(parse_proc_version("GCC version: 12\n"), None);
    }

    #[test]
    fn driver_versions_and_their_strings_in_a_file() {
        assert!(is_driver_version("535.261.03") && is_driver_version("470.57"));
        assert!(!is_driver_version("12.0") && !is_driver_version("535.261.03.1"));
        let bytes = b"\x00xx\x0012.9\x00535.261.03\x00450.36.05\x00";
        assert_eq!(embedded_version(bytes).as_deref(), Some("535.261.03"));
        assert_eq!(
            name_version(Path::new("/x/libcuda.so.535.261.03"), "libcuda.so.").as_deref(),
            Some("535.261.03")
        );
        assert_eq!(
            name_version(Path::new("/x/libcuda.so.1"), "libcuda.so."),
            None
        );
    }

    #[test]
    fn the_installed_fabric_manager_package_gives_its_driver_version() {
        let status = "Package: nvidia-fabricmanager-535\nStatus: deinstall ok config-files\nVersion: 535.104.05-1\n\nPackage: nvidia-fabricmanager-550\nStatus: install ok installed\nVersion: 550.54.15-1\n";
        assert_eq!(
            fabric_manager_package(status),
            Some(("nvidia-fabricmanager-550".into(), "550.54.15".into()))
        );
    }
}
