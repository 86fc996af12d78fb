//! Frameworks built for CUDA (PyTorch, JAX, CuPy), read from their installed files and never
//! imported: `torch/version.py` (`cuda = '12.8'`), the `Requires-Dist` lines of their wheel
//! METADATA (the cuDNN they pin), and the CUDA major in the names of JAX's and CuPy's CUDA
//! packages (`jax-cuda12-plugin`, `cupy-cuda12x`).

use super::Host;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One framework installed in one Python environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Framework {
    /// `torch`, `jax`, `cupy`.
    pub name: String,
    /// The package that tells the CUDA (`torch`, `jax-cuda12-plugin`, `cupy-cuda12x`) and its
    /// version.
    pub package: String,
    pub version: String,
    /// The CUDA it was built for: `12.8`, or only the major (`12`) where that is all it says.
    pub cuda: Option<String>,
    /// The cuDNN it pins, when its METADATA does.
    pub cudnn: Option<String>,
    #[serde(with = "crate::pathname")]
    pub site_packages: PathBuf,
    /// The file the CUDA version was read from.
    #[serde(with = "crate::pathname")]
    pub source: PathBuf,
}

/// The frameworks in each site-packages directory.
pub fn read(host: &Host, sites: &[PathBuf]) -> Vec<Framework> {
    let mut out = Vec::new();
    for site in sites {
        let Some(real) = host.real(site) else {
            continue;
        };
        let dist_infos = dist_infos(&real);
        out.extend(torch(&real, site, &dist_infos));
        for (dist, metadata) in &dist_infos {
            let Some((package, version)) = super::metadata::name_and_version(metadata) else {
                continue;
            };
            let lower = package.to_ascii_lowercase().replace('_', "-");
            let (name, major) = match (
                lower.strip_prefix("jax-cuda"),
                lower.strip_prefix("cupy-cuda"),
            ) {
                (Some(rest), _) => ("jax", rest),
                (_, Some(rest)) => ("cupy", rest),
                _ => continue,
            };
            let major: String = major.chars().take_while(char::is_ascii_digit).collect();
            if major.is_empty() {
                continue;
            }
            out.push(Framework {
                name: name.into(),
                package,
                version,
                cuda: Some(major),
                cudnn: cudnn_pin(metadata),
                site_packages: site.clone(),
                source: dist.join("METADATA"),
            });
        }
    }
    out
}

/// PyTorch from `torch/version.py` and its wheel's METADATA.
fn torch(real: &Path, site: &Path, dist_infos: &[(PathBuf, String)]) -> Option<Framework> {
    let source = real.join("torch/version.py");
    let text = crate::hostfs::read_to_string(&source, crate::hostfs::TEXT).ok()?;
    let version = assignment(&text, "__version__")?;
    let cuda = assignment(&text, "cuda");
    let metadata = dist_infos
        .iter()
        .map(|(_, m)| m)
        .find(|m| super::metadata::name_and_version(m).is_some_and(|(n, _)| n == "torch"));
    Some(Framework {
        name: "torch".into(),
        package: "torch".into(),
        version,
        cuda,
        cudnn: metadata.and_then(|m| cudnn_pin(m)),
        site_packages: site.to_path_buf(),
        source,
    })
}

/// The string assigned to `name` in a Python file (`cuda: Optional[str] = '12.8'`); `None` for
/// `None` (a CPU build).
fn assignment(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let rest = line.trim().strip_prefix(name)?;
        let rest = rest.trim_start();
        let rest = match rest.strip_prefix(':') {
            Some(typed) => typed.split_once('=')?.1,
            None => rest.strip_prefix('=')?,
        };
        let value = rest.trim();
        let quote = value.chars().next().filter(|c| *c == '\'' || *c == '"')?;
        Some(value[1..].split(quote).next()?.to_string())
    })
}

/// `Requires-Dist: nvidia-cudnn-cu12==9.10.2.21; ...` as `9.10.2.21`.
fn cudnn_pin(metadata: &str) -> Option<String> {
    metadata.lines().find_map(|l| {
        let requirement = l.strip_prefix("Requires-Dist:")?.split(';').next()?.trim();
        let rest = requirement.strip_prefix("nvidia-cudnn-cu")?;
        let pin = rest.split_once("==")?.1;
        Some(pin.split([' ', ',']).next()?.to_string()).filter(|p| !p.is_empty())
    })
}

/// Every `*.dist-info` directory of a site-packages with its METADATA.
fn dist_infos(site: &Path) -> Vec<(PathBuf, String)> {
    crate::hostfs::entries(site)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "dist-info"))
        .filter_map(|d| {
            let text =
                crate::hostfs::read_to_string(&d.join("METADATA"), crate::hostfs::TEXT).ok()?;
            Some((d, text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_py_and_pins_are_read_without_importing() {
        let text = "__version__ = '2.9.1+cu128'\ndebug = False\ncuda: Optional[str] = '12.8'\nhip: Optional[str] = None\n";
        assert_eq!(
            assignment(text, "__version__").as_deref(),
            Some("2.9.1+cu128")
        );
        assert_eq!(assignment(text, "cuda").as_deref(), Some("12.8"));
        assert_eq!(assignment(text, "hip"), None);
        assert_eq!(assignment("cuda = None\n", "cuda"), None);
        let metadata = "Name: torch\nVersion: 2.9.1\nRequires-Dist: nvidia-cudnn-cu12==9.10.2.21; platform_system == \"Linux\"\n";
        assert_eq!(cudnn_pin(metadata).as_deref(), Some("9.10.2.21"));
        let ranged = "Requires-Dist: nvidia-cudnn-cu12<10.0,>=9.8; extra == \"with-cuda\"\n";
        assert_eq!(cudnn_pin(ranged), None);
    }
}
