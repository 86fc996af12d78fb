//! Containers as their files show them: the markers of a container (`/.dockerenv`,
//! `/run/.containerenv`, a container's cgroup, the NVIDIA Container Toolkit's injected ld.so.conf
//! file), what the environment asks of the NVIDIA Container Toolkit (`NVIDIA_VISIBLE_DEVICES`,
//! `NVIDIA_DRIVER_CAPABILITIES`), the CDI specs a host holds (`/etc/cdi`, `/var/run/cdi`) with
//! the driver version their mounts name, and the toolkit's own config. Read through
//! [`Host::real`], never outside a sysroot.

use super::nvidia::{host_name, is_driver_version};
use super::Host;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Where CDI specs are kept, in the order the toolkit reads them.
pub const CDI_DIRS: &[&str] = &["/etc/cdi", "/var/run/cdi"];
/// The NVIDIA Container Toolkit's config.
pub const TOOLKIT_CONFIG: &str = "/etc/nvidia-container-runtime/config.toml";

/// A CDI spec and the driver versions its edits name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CdiSpec {
    /// As the host names it (`/etc/cdi/nvidia.yaml`).
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    /// Each driver version its mounts name (`libcuda.so.535.261.03`), once, in order.
    pub versions: Vec<String>,
    /// The first line naming a driver file, as evidence.
    pub line: Option<String>,
}

/// What the host's files and environment say about containers and the NVIDIA Container
/// Toolkit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerFacts {
    /// Each sign of being a container's root file system.
    pub markers: Vec<String>,
    /// `NVIDIA_VISIBLE_DEVICES` as set (`None`: unset).
    pub visible_devices: Option<String>,
    /// `NVIDIA_DRIVER_CAPABILITIES` as set (`None`: unset).
    pub capabilities: Option<String>,
    /// Whether the environment is that of an NVIDIA CUDA image (`CUDA_VERSION`,
    /// `NVIDIA_REQUIRE_CUDA` or an `NVIDIA_*` toolkit variable set).
    pub cuda_environment: bool,
    pub cdi: Vec<CdiSpec>,
    /// `nvidia-container-runtime.mode` in the toolkit's config (`auto`, `legacy`, `cdi`).
    pub toolkit_mode: Option<String>,
}

/// Reads the container facts of `host`.
pub fn read(host: &Host) -> ContainerFacts {
    let env = |name: &str| host.env.get(name).cloned();
    let cuda_environment = [
        "CUDA_VERSION",
        "NVIDIA_REQUIRE_CUDA",
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES",
    ]
    .iter()
    .any(|v| host.env.contains_key(*v));
    ContainerFacts {
        markers: markers(host),
        visible_devices: env("NVIDIA_VISIBLE_DEVICES"),
        capabilities: env("NVIDIA_DRIVER_CAPABILITIES"),
        cuda_environment,
        cdi: cdi_specs(host),
        toolkit_mode: toolkit_mode(host),
    }
}

/// The signs of a container: `/.dockerenv` (Docker), `/run/.containerenv` (Podman), a
/// container runtime in `/proc/1/cgroup`, the toolkit's `00-nvcr-*.conf` in ld.so.conf.d.
fn markers(host: &Host) -> Vec<String> {
    let mut found = Vec::new();
    for file in ["/.dockerenv", "/run/.containerenv"] {
        if host.real(file).is_some() {
            found.push(file.to_owned());
        }
    }
    if let Some(cgroup) = host.read("/proc/1/cgroup") {
        let cgroup = String::from_utf8_lossy(&cgroup);
        let runtime = ["docker", "kubepods", "containerd", "libpod", "crio"]
            .into_iter()
            .find(|r| cgroup.contains(r));
        if let Some(runtime) = runtime {
            found.push(format!("/proc/1/cgroup names {runtime}"));
        }
    }
    let injected = (host.entries("/etc/ld.so.conf.d").into_iter())
        .filter_map(|entry| Some(entry.file_name()?.to_string_lossy().into_owned()))
        .filter(|n| n.starts_with("00-nvcr-"))
        .map(|n| format!("/etc/ld.so.conf.d/{n} (written by the NVIDIA Container Toolkit)"));
    found.extend(injected);
    found
}

/// Every CDI spec (`*.yaml`, `*.json`) in the CDI directories.
fn cdi_specs(host: &Host) -> Vec<CdiSpec> {
    let mut specs = Vec::new();
    for dir in CDI_DIRS {
        let files = host.entries(dir).into_iter().filter(|p| {
            p.extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        });
        for file in files {
            let Some(text) = host.read(&file) else {
                continue;
            };
            let (versions, line) = driver_versions(&String::from_utf8_lossy(&text));
            specs.push(CdiSpec {
                path: host_name(host, &file),
                versions,
                line,
            });
        }
    }
    specs
}

/// The driver versions a spec's text names through the driver's versioned files
/// (`libcuda.so.535.261.03`, `libnvidia-ml.so.535.261.03`), and the first line naming one.
pub fn driver_versions(text: &str) -> (Vec<String>, Option<String>) {
    let mut versions: Vec<String> = Vec::new();
    let mut first = None;
    for line in text.lines() {
        for stem in ["libcuda.so.", "libnvidia-ml.so."] {
            for (at, _) in line.match_indices(stem) {
                let rest = &line[at + stem.len()..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                    .unwrap_or(rest.len());
                let version = rest[..end].trim_end_matches('.');
                if is_driver_version(version) {
                    first.get_or_insert_with(|| line.trim().to_owned());
                    if !versions.iter().any(|v| v == version) {
                        versions.push(version.to_owned());
                    }
                }
            }
        }
    }
    (versions, first)
}

/// `mode` of the `[nvidia-container-runtime]` table in the toolkit's config.
fn toolkit_mode(host: &Host) -> Option<String> {
    let text = host.read(TOOLKIT_CONFIG)?;
    let value: toml::Table = toml::from_str(&String::from_utf8_lossy(&text)).ok()?;
    value
        .get("nvidia-container-runtime")?
        .get("mode")?
        .as_str()
        .map(str::to_owned)
}

/// Whether `capabilities` (`NVIDIA_DRIVER_CAPABILITIES`'s value) grants `wanted`: listed, or
/// `all`. Unset, the toolkit grants `utility` only.
pub fn grants(capabilities: Option<&str>, wanted: &str) -> bool {
    let list = capabilities
        .filter(|c| !c.trim().is_empty())
        .unwrap_or("utility");
    list.split(',')
        .map(str::trim)
        .any(|c| c == wanted || c == "all")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cdi_spec_names_its_driver_version_through_its_mounts() {
        // The form `nvidia-ctk cdi generate` writes.
        let spec = "---\ncdiVersion: 0.5.0\ncontainerEdits:\n  mounts:\n  - containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03\n    hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03\n    options:\n    - ro\n  - containerPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.261.03\nkind: nvidia.com/gpu\n";
        let (versions, line) = driver_versions(spec);
        assert_eq!(versions, ["535.261.03"]);
        assert_eq!(
            line.as_deref(),
            Some("- containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03")
        );
    }

    #[test]
    fn capabilities_unset_grant_utility_only_and_all_grants_everything() {
        assert!(grants(None, "utility") && !grants(None, "compute"));
        assert!(grants(Some("compute, utility"), "compute"));
        assert!(grants(Some("all"), "compute"));
        assert!(!grants(Some("utility"), "compute"));
    }
}
