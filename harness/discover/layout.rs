//! Which installation a library directory belongs to, and how that installation is laid out.

use crate::catalog;
use crate::model::Layout;
use std::path::{Component, Path, PathBuf};

/// How many levels above a library directory an installation root may sit
/// (`cuda-12.9/targets/x86_64-linux/lib/stubs` is four).
const MAX_ROOT_DISTANCE: usize = 4;

/// The installation a directory belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Placement {
    pub root: PathBuf,
    pub layout: Layout,
}

/// Places a (canonical) directory holding libraries with the given components; an
/// installation's root is looked for no higher than `top` (the host's root file system).
pub fn place(dir: &Path, components: &[&str], top: &Path) -> Placement {
    if let Some(site) = site_packages(dir) {
        return Placement {
            root: site,
            layout: Layout::Pip,
        };
    }
    let candidates = dir
        .ancestors()
        .take(MAX_ROOT_DISTANCE + 1)
        .take_while(|root| root.starts_with(top));
    for root in candidates {
        if root.join("conda-meta").is_dir() {
            return Placement {
                root: root.to_path_buf(),
                layout: Layout::Conda,
            };
        }
        if is_toolkit_root(root) {
            return Placement {
                root: root.to_path_buf(),
                layout: Layout::Toolkit,
            };
        }
    }
    let layout =
        if !components.is_empty() && components.iter().all(|c| catalog::is_driver_component(c)) {
            Layout::Driver
        } else if is_system_dir(dir) {
            Layout::System
        } else {
            Layout::Directory
        };
    Placement {
        root: dir.to_path_buf(),
        layout,
    }
}

/// The `site-packages` (or Debian's `dist-packages`) a directory is inside of.
fn site_packages(dir: &Path) -> Option<PathBuf> {
    let mut root = PathBuf::new();
    for component in dir.components() {
        root.push(component);
        if let Component::Normal(name) = component {
            if name == "site-packages" || name == "dist-packages" {
                return Some(root);
            }
        }
    }
    None
}

/// A runfile or tarball toolkit: `version.json`, or a `cuda`/`cuda-X.Y` directory with
/// `targets/`, `lib64/` or `bin/nvcc`.
fn is_toolkit_root(dir: &Path) -> bool {
    let named_cuda = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "cuda" || n.starts_with("cuda-"));
    // Windows: `NVIDIA GPU Computing Toolkit/CUDA/v11.8` with its `bin`.
    let windows = dir.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
        n.strip_prefix('v')
            .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
    }) && dir
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|p| p == "CUDA")
        && dir.join("bin").is_dir();
    // `bin/nvcc` alone is not enough: Debian's toolkit puts it in /usr/bin.
    windows
        || dir.join("version.json").is_file()
        || (named_cuda
            && (dir.join("targets").is_dir()
                || dir.join("lib64").is_dir()
                || dir.join("bin/nvcc").is_file()))
}

fn is_system_dir(dir: &Path) -> bool {
    ["/lib", "/usr/lib", "/lib64", "/usr/lib64"]
        .iter()
        .any(|s| dir.starts_with(s))
}

/// The CUDA `major.minor` in a version string (`12.9.79` -> `12.9`, `12` -> `12`).
pub fn major_minor(version: &str) -> String {
    version.split('.').take(2).collect::<Vec<_>>().join(".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("/x/lib/python3.11/site-packages/nvidia/cublas/lib", &["cublas"], "/x/lib/python3.11/site-packages", Layout::Pip)]
    #[case("/usr/lib/python3/dist-packages/nvidia/cu13/lib", &["cudart"], "/usr/lib/python3/dist-packages", Layout::Pip)]
    #[case("/usr/lib/x86_64-linux-gnu", &["cuda", "nvidia-ml"], "/usr/lib/x86_64-linux-gnu", Layout::Driver)]
    #[case("/usr/lib/x86_64-linux-gnu", &["cuda", "cudart"], "/usr/lib/x86_64-linux-gnu", Layout::System)]
    #[case("/srv/libs", &["cudart"], "/srv/libs", Layout::Directory)]
    fn places_by_path(
        #[case] dir: &str,
        #[case] components: &[&str],
        #[case] root: &str,
        #[case] layout: Layout,
    ) {
        assert_eq!(
            place(Path::new(dir), components, Path::new("/")),
            Placement {
                root: root.into(),
                layout
            }
        );
    }

    #[test]
    fn places_toolkits_and_conda_by_their_markers() {
        let tmp = tempfile::tempdir().unwrap();
        let toolkit = tmp.path().join("cuda-12.9");
        let lib = toolkit.join("targets/x86_64-linux/lib/stubs");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(toolkit.join("version.json"), "{}").unwrap();
        assert_eq!(
            place(&lib, &["cuda"], Path::new("/")),
            Placement {
                root: toolkit,
                layout: Layout::Toolkit
            }
        );
        let env = tmp.path().join("envs/cu13");
        std::fs::create_dir_all(env.join("conda-meta")).unwrap();
        std::fs::create_dir_all(env.join("lib")).unwrap();
        assert_eq!(
            place(&env.join("lib"), &["cudart"], Path::new("/")),
            Placement {
                root: env,
                layout: Layout::Conda
            }
        );
    }

    #[test]
    fn no_root_is_looked_for_above_the_host_s_root_file_system() {
        // A sysroot unpacked into a conda environment's directory is not part of it.
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("conda-meta")).unwrap();
        let sysroot = tmp.path().join("image");
        let lib = sysroot.join("srv");
        std::fs::create_dir_all(&lib).unwrap();
        assert_eq!(
            place(&lib, &["cudart"], Path::new("/")).layout,
            Layout::Conda
        );
        assert_eq!(
            place(&lib, &["cudart"], &sysroot),
            Placement {
                root: lib,
                layout: Layout::Directory
            }
        );
    }

    #[test]
    fn major_minor_of_versions() {
        assert_eq!(major_minor("12.9.79"), "12.9");
        assert_eq!(major_minor("12"), "12");
    }
}
