//! Python environments wherever people keep them: below `/opt`, `/srv`, `/home`, ... every
//! virtualenv and conda environment, known by its own markers (`pyvenv.cfg`, `conda-meta/`), and
//! every `site-packages` outside one that holds NVIDIA wheels. Bounded in depth and entries,
//! each directory read once (so links cannot loop); unreadable directories are passed over,
//! since these places are guesses (another user's home is private, not broken).

use super::walk::Limits;
use super::Host;
use crate::model::{Problem, ProblemKind};
use std::collections::{HashSet, VecDeque};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The places, below the host's root, walked for environments.
const HOLDERS: &[&str] = &[
    "/opt",
    "/srv",
    "/usr/local",
    "/home",
    "/root",
    "/workspace",
    "/workspaces",
    "/app",
];

/// Trees that never hold an environment but can hold very many files.
const SKIPPED: &[&str] = &[
    ".git",
    "node_modules",
    "__pycache__",
    ".cache",
    ".cargo",
    ".rustup",
    ".npm",
    ".nvm",
    ".m2",
    ".gradle",
    ".vscode-server",
    "proc",
    "sys",
    "dev",
    "include",
    "man",
];

/// A directory a Python's packages are installed in.
fn is_site(name: &str) -> bool {
    name == "site-packages" || name == "dist-packages"
}

/// A Python's `lib/pythonX.Y`: its standard library, of which only the site matters.
fn is_python_lib(name: &str) -> bool {
    name.strip_prefix("python")
        .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
}

/// Every environment on `host` below the places people keep them: its root's own children
/// that are one (`/venv`), then each of the `HOLDERS` and the home directory, walked within
/// `limits`. Below a sysroot every link is followed inside it.
pub fn environments(host: &Host, limits: Limits) -> EnvWalk {
    let mut walk = EnvWalk {
        root: (!host.is_own_root()).then(|| host.sysroot.clone()),
        ..EnvWalk::default()
    };
    let marked =
        |d: &&PathBuf| host.is_file(d.join("pyvenv.cfg")) || host.is_dir(d.join("conda-meta"));
    let top: Vec<PathBuf> = (host.children_matching(&host.sysroot, |_| true).iter())
        .filter(marked)
        .filter_map(|d| walk.directory(d))
        .collect();
    walk.environments.extend(top);
    let place = |path: &Path| match &walk.root {
        Some(root) => super::inside::place(root, path),
        None => Some(host.place(path)),
    };
    let mut holders: Vec<PathBuf> = HOLDERS.iter().filter_map(|h| place(Path::new(h))).collect();
    if let Some(home) = host.home.as_deref().and_then(place) {
        if !holders.iter().any(|h| home.starts_with(h)) {
            holders.push(home);
        }
    }
    for holder in holders {
        walk.visit(&holder, limits);
    }
    walk
}

/// Environments found, in the order walked, and the places whose walk stopped early.
#[derive(Debug, Default)]
pub struct EnvWalk {
    pub environments: Vec<PathBuf>,
    pub problems: Vec<Problem>,
    /// Directories read, by (device, inode), across every place walked.
    seen: HashSet<(u64, u64)>,
    /// The sysroot whose links are followed inside it; `None` on the machine's own root.
    root: Option<PathBuf>,
}

impl EnvWalk {
    /// Where `path` leads when it is a directory: below a sysroot, the real place its links
    /// lead to inside it.
    fn directory(&self, path: &Path) -> Option<PathBuf> {
        match &self.root {
            Some(root) => super::inside::resolve(root, path).filter(|real| real.is_dir()),
            None => path.is_dir().then(|| path.to_path_buf()),
        }
    }

    /// Walks `holder` breadth first within `limits`, so that a large tree deep down cannot
    /// hide an environment near the top.
    pub fn visit(&mut self, holder: &Path, limits: Limits) {
        let mut queue = VecDeque::from([(holder.to_path_buf(), 0)]);
        let mut entries = 0;
        while let Some((dir, depth)) = queue.pop_front() {
            let Some(listing) = self.read(&dir) else {
                continue;
            };
            entries += listing.entries;
            if entries > limits.max_entries {
                self.problems.push(Problem {
                    kind: ProblemKind::TooManyEntries,
                    path: holder.to_path_buf(),
                    message: format!(
                        "stopped looking for Python environments after {} directory entries; \
                         activate one kept deeper (VIRTUAL_ENV) or give it with --root",
                        limits.max_entries
                    ),
                });
                return;
            }
            if listing.marked {
                self.environments.push(dir);
                // A conda installation's own environments are in its `envs`.
                if let Some(envs) = listing.dirs.into_iter().find(|d| d.ends_with("envs")) {
                    queue.push_back((envs, depth + 1));
                }
                continue;
            }
            if depth >= limits.max_depth {
                continue;
            }
            let python_lib = dir
                .file_name()
                .is_some_and(|n| is_python_lib(&n.to_string_lossy()));
            for sub in listing.dirs {
                let name = sub.file_name().unwrap_or_default().to_string_lossy();
                if is_site(&name) {
                    if self.directory(&sub.join("nvidia")).is_some() {
                        self.environments.push(sub);
                    }
                } else if !python_lib && !SKIPPED.contains(&name.as_ref()) {
                    queue.push_back((sub, depth + 1));
                }
            }
        }
    }

    /// `dir`'s subdirectories, sorted, and whether it is an environment; `None` when it was
    /// read before (through another link) or cannot be read.
    fn read(&mut self, dir: &Path) -> Option<Listing> {
        let meta = fs::metadata(dir).ok()?;
        if !meta.is_dir() || !self.seen.insert((meta.dev(), meta.ino())) {
            return None;
        }
        let mut listing = Listing::default();
        for entry in crate::hostfs::read_dir(dir).ok()?.flatten() {
            listing.entries += 1;
            let path = entry.path();
            // A link to a directory is walked where it leads (inside a sysroot).
            let dir = match entry.file_type() {
                Ok(t) if t.is_symlink() => self.directory(&path),
                Ok(t) => t.is_dir().then_some(path),
                Err(_) => None,
            };
            let name = entry.file_name();
            listing.marked |=
                (name == "pyvenv.cfg" && dir.is_none()) || (name == "conda-meta" && dir.is_some());
            listing.dirs.extend(dir);
        }
        listing.dirs.sort();
        Some(listing)
    }
}

/// One directory as read.
#[derive(Default)]
struct Listing {
    entries: usize,
    dirs: Vec<PathBuf>,
    marked: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::os::unix::fs::{symlink, PermissionsExt};

    const DEEP: Limits = Limits {
        max_depth: 8,
        max_entries: 10_000,
        report_depth_cut: false,
    };

    fn tree(dirs: &[&str], files: &[&str]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for d in dirs {
            fs::create_dir_all(root.path().join(d)).unwrap();
        }
        for f in files {
            let path = root.path().join(f);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, b"home = /usr/bin\n").unwrap();
        }
        root
    }

    fn found(root: &Path, limits: Limits) -> Vec<String> {
        let mut walk = EnvWalk::default();
        walk.visit(root, limits);
        walk.environments
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    /// The environments of the host whose sysroot is `root` (and home `home`), below it.
    fn below(root: &Path, home: Option<&str>) -> Vec<String> {
        let host = Host {
            sysroot: root.to_path_buf(),
            home: home.map(PathBuf::from),
            ..Host::default()
        };
        environments(&host, DEEP)
            .environments
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    #[rstest]
    #[case::venv_deep_in_a_project(&[], &["torch/.venv/pyvenv.cfg"], &["torch/.venv"])]
    #[case::conda_base_and_its_envs(
        &["conda/envs/cu13/conda-meta", "conda/pkgs/cudart/conda-meta"],
        &["conda/conda-meta/history"],
        &["conda", "conda/envs/cu13"]
    )]
    #[case::site_with_wheels_outside_a_venv(
        &["py/lib/python3.12/site-packages/nvidia/cuda_runtime/lib", "py/lib/python3.12/dist-packages"],
        &[],
        &["py/lib/python3.12/site-packages"]
    )]
    fn finds_environments_by_their_markers(
        #[case] dirs: &[&str],
        #[case] files: &[&str],
        #[case] expected: &[&str],
    ) {
        let root = tree(dirs, files);
        assert_eq!(found(root.path(), DEEP), expected);
    }

    #[test]
    fn on_a_host_the_root_s_own_children_the_holders_and_a_home_elsewhere_are_looked_in() {
        let root = tree(
            &["usr/local/cuda-12.9/lib64"],
            &[
                "venv/pyvenv.cfg",
                "opt/torch/.venv/pyvenv.cfg",
                "data/me/src/app/.venv/pyvenv.cfg",
                "data/other/.venv/pyvenv.cfg",
            ],
        );
        assert_eq!(
            below(root.path(), Some("/data/me")),
            ["venv", "opt/torch/.venv", "data/me/src/app/.venv"]
        );
    }

    #[test]
    fn below_a_sysroot_links_are_followed_inside_it_never_to_the_machine() {
        // This machine's own environment, which an absolute link in the tree names.
        let machine = tree(&[], &["venv/pyvenv.cfg"]);
        let machines = machine.path().join("venv");
        let root = tree(&["opt"], &["srv/real/.venv/pyvenv.cfg"]);
        symlink(&machines, root.path().join("opt/elsewhere")).unwrap();
        symlink(&machines, root.path().join("venv")).unwrap();
        symlink("/srv/real", root.path().join("opt/linked")).unwrap();
        // `/opt/linked` is `/srv/real` inside the tree, found once, where it really is.
        assert_eq!(below(root.path(), None), ["srv/real/.venv"]);
    }

    #[test]
    fn does_not_look_inside_an_environment_or_a_standard_library() {
        let root = tree(
            &[
                "v/lib/python3.12/site-packages/nvidia",
                "lib/python3.12/test/inner",
            ],
            &[
                "v/pyvenv.cfg",
                "v/lib/python3.12/site-packages/x/pyvenv.cfg",
                "lib/python3.12/test/inner/pyvenv.cfg",
                "node_modules/a/pyvenv.cfg",
            ],
        );
        assert_eq!(found(root.path(), DEEP), ["v"]);
    }

    #[test]
    fn depth_and_entry_limits_hold() {
        let root = tree(&[], &["a/b/c/d/e/f/g/h/i/pyvenv.cfg"]);
        assert!(found(root.path(), DEEP).is_empty());
        let deeper = Limits {
            max_depth: 9,
            ..DEEP
        };
        assert_eq!(found(root.path(), deeper), ["a/b/c/d/e/f/g/h/i"]);
        let narrow = Limits {
            max_entries: 3,
            ..deeper
        };
        let mut walk = EnvWalk::default();
        walk.visit(root.path(), narrow);
        assert_eq!(walk.problems[0].kind, ProblemKind::TooManyEntries);
    }

    #[test]
    fn link_loops_and_unreadable_directories_are_passed_over() {
        let root = tree(&["locked/inner"], &["x/.venv/pyvenv.cfg"]);
        symlink("..", root.path().join("x/up")).unwrap();
        symlink("loop", root.path().join("loop")).unwrap();
        // Unreadable to anyone but root (who reads it, and finds nothing in it).
        let locked = root.path().join("locked");
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
        let envs = found(root.path(), DEEP);
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(envs, ["x/.venv"]);
    }
}
