//! Walking directories for library files without being trapped: symlink loops, unreadable
//! directories and very large trees become problems, and the walk goes on.

use crate::catalog;
use crate::model::{Problem, ProblemKind};
use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Bounds on one walk.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Directory levels below the start that are still read (0: the start only).
    pub max_depth: usize,
    /// Directory entries read before the walk of this start stops.
    pub max_entries: usize,
    /// Report directories left unread below `max_depth` (for trees the user asked for whole).
    pub report_depth_cut: bool,
}

/// Directories never worth descending into.
const SKIPPED_DIRS: &[&str] = &[
    ".git",
    "node_modules",
    "__pycache__",
    "include",
    "share",
    "doc",
    "man",
];

/// What a walk found: candidate library paths and the problems met.
#[derive(Debug, Default)]
pub struct Walk {
    /// Paths whose names are CUDA libraries: files, links to files, and dangling links.
    pub libraries: Vec<PathBuf>,
    pub problems: Vec<Problem>,
    /// Directories read whole, by (device, inode): shared across starts, so each is read once
    /// (or again only to go deeper), and what a later start reaches through one is reported
    /// again, for that start. A directory the entry cap cut short is not kept: a later start
    /// reads it.
    visited: HashMap<DirId, Visited>,
    /// The sysroot links are followed inside (see [`super::inside`]); `None` on the machine's
    /// own root.
    pub root: Option<PathBuf>,
}

/// A directory's (device, inode).
type DirId = (u64, u64);

/// What reading one directory whole gave.
#[derive(Debug)]
struct Visited {
    /// The depth still allowed below it then.
    remaining: usize,
    /// The library paths directly in it.
    libraries: Vec<PathBuf>,
    /// The directories read below it.
    subdirs: Vec<DirId>,
}

impl Walk {
    /// Walks `start` within `limits`, adding what it finds.
    pub fn visit(&mut self, start: &Path, limits: Limits) {
        let mut state = WalkState {
            limits,
            entries: 0,
            cut_at_depth: 0,
            ancestors: Vec::new(),
        };
        self.visit_dir(start, 0, &mut state);
        if state.entries > limits.max_entries {
            self.problems.push(Problem {
                kind: ProblemKind::TooManyEntries,
                path: start.to_path_buf(),
                message: format!(
                    "stopped after {} directory entries; give a narrower --root to see the rest",
                    limits.max_entries
                ),
            });
        }
        if limits.report_depth_cut && state.cut_at_depth > 0 {
            self.problems.push(Problem {
                kind: ProblemKind::TooDeep,
                path: start.to_path_buf(),
                message: format!(
                    "{} directories deeper than {} levels were not read; give a deeper directory with --root to read them",
                    state.cut_at_depth, limits.max_depth
                ),
            });
        }
    }

    /// Reads `dir` and below (or, when a start before read it deep enough, reports again what
    /// it held); its id when it was read or reported.
    fn visit_dir(&mut self, dir: &Path, depth: usize, state: &mut WalkState) -> Option<DirId> {
        let meta = match fs::metadata(dir) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                self.problem(ProblemKind::Unreadable, dir, e.to_string());
                return None;
            }
        };
        let id = (meta.dev(), meta.ino());
        if state.ancestors.contains(&id) {
            self.problem(
                ProblemKind::SymlinkLoop,
                dir,
                "directory link points back to one of its own parents; not followed".into(),
            );
            return None;
        }
        let remaining = state.limits.max_depth.saturating_sub(depth);
        if self
            .visited
            .get(&id)
            .is_some_and(|v| v.remaining >= remaining)
        {
            self.report_again(id, &mut Vec::new());
            return Some(id);
        }
        let entries = match crate::hostfs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => {
                self.problem(ProblemKind::Unreadable, dir, e.to_string());
                return None;
            }
        };
        state.ancestors.push(id);
        let mut subdirs = Vec::new();
        let mut libraries = Vec::new();
        for entry in entries {
            state.entries += 1;
            if state.entries > state.limits.max_entries {
                break;
            }
            let Ok(entry) = entry else { continue };
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let (is_dir, path) = if file_type.is_symlink() {
                self.linked(path, &name)
            } else {
                (file_type.is_dir(), Some(path))
            };
            let Some(path) = path else { continue };
            if is_dir {
                if !SKIPPED_DIRS.contains(&name.as_ref()) {
                    subdirs.push(path);
                }
            } else if catalog::classify(&name).is_some() {
                libraries.push(path);
            }
        }
        self.libraries.extend(libraries.iter().cloned());
        subdirs.sort();
        let mut read_below = Vec::new();
        for sub in subdirs {
            if depth < state.limits.max_depth {
                read_below.extend(self.visit_dir(&sub, depth + 1, state));
            } else {
                state.cut_at_depth += 1;
            }
        }
        state.ancestors.pop();
        if state.entries <= state.limits.max_entries {
            self.visited.insert(
                id,
                Visited {
                    remaining,
                    libraries,
                    subdirs: read_below,
                },
            );
        }
        Some(id)
    }

    /// A symlinked entry: whether it leads to a directory, and the path to go on with (`None`:
    /// a link loop, reported). Below a sysroot a directory link is replaced by where it leads
    /// inside the sysroot, so the walk never leaves it; a file link stays as found.
    fn linked(&mut self, path: PathBuf, name: &str) -> (bool, Option<PathBuf>) {
        if let Some(root) = &self.root {
            return match super::inside::resolve(root, &path) {
                Some(real) if real.is_dir() => (true, Some(real)),
                _ => (false, Some(path)),
            };
        }
        match fs::metadata(&path) {
            Ok(target) => (target.is_dir(), Some(path)),
            Err(e) if is_link_loop(&e) && catalog::classify(name).is_none() => {
                self.problem(ProblemKind::SymlinkLoop, &path, e.to_string());
                (false, None)
            }
            Err(_) => (false, Some(path)),
        }
    }

    /// Reports again the libraries a directory read before held, and those below it.
    fn report_again(&mut self, id: DirId, seen: &mut Vec<DirId>) {
        if seen.contains(&id) {
            return;
        }
        seen.push(id);
        let Some(visited) = self.visited.get(&id) else {
            return;
        };
        let (libraries, subdirs) = (visited.libraries.clone(), visited.subdirs.clone());
        self.libraries.extend(libraries);
        for sub in subdirs {
            self.report_again(sub, seen);
        }
    }

    fn problem(&mut self, kind: ProblemKind, path: &Path, message: String) {
        self.problems.push(Problem {
            kind,
            path: path.to_path_buf(),
            message,
        });
    }
}

struct WalkState {
    limits: Limits,
    entries: usize,
    cut_at_depth: usize,
    ancestors: Vec<(u64, u64)>,
}

/// True when an error is the kernel's "too many levels of symbolic links".
pub fn is_link_loop(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    const WIDE: Limits = Limits {
        max_depth: 16,
        max_entries: 100_000,
        report_depth_cut: true,
    };

    #[test]
    fn finds_libraries_and_survives_loops() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("cuda/lib64");
        fs::create_dir_all(&lib).unwrap();
        fs::write(lib.join("libcudart.so.12.9.79"), b"x").unwrap();
        symlink("libcudart.so.12.9.79", lib.join("libcudart.so.12")).unwrap();
        symlink("..", lib.join("up")).unwrap();
        symlink("a", lib.join("b")).unwrap();
        symlink("b", lib.join("a")).unwrap();
        fs::write(lib.join("README"), b"x").unwrap();
        let mut walk = Walk::default();
        walk.visit(dir.path(), WIDE);
        let mut names: Vec<_> = walk
            .libraries
            .iter()
            .map(|p| p.file_name().unwrap().to_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["libcudart.so.12", "libcudart.so.12.9.79"]);
        let kinds: Vec<_> = walk.problems.iter().map(|p| p.kind).collect();
        assert!(
            kinds.contains(&ProblemKind::SymlinkLoop),
            "{:?}",
            walk.problems
        );
    }

    #[test]
    fn depth_and_entry_limits_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("a/b/c/d")).unwrap();
        for i in 0..20 {
            fs::write(dir.path().join(format!("f{i}")), b"").unwrap();
        }
        let mut walk = Walk::default();
        walk.visit(
            dir.path(),
            Limits {
                max_depth: 1,
                max_entries: 10,
                report_depth_cut: true,
            },
        );
        let kinds: Vec<_> = walk.problems.iter().map(|p| p.kind).collect();
        assert!(kinds.contains(&ProblemKind::TooManyEntries));
        let mut walk = Walk::default();
        walk.visit(
            dir.path(),
            Limits {
                max_depth: 1,
                max_entries: 1000,
                report_depth_cut: true,
            },
        );
        assert_eq!(walk.problems[0].kind, ProblemKind::TooDeep);
    }

    #[test]
    fn a_directory_cut_short_by_the_entry_cap_is_read_by_a_later_start() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib");
        fs::create_dir_all(&lib).unwrap();
        for i in 0..20 {
            fs::write(lib.join(format!("f{i}")), b"").unwrap();
        }
        fs::write(lib.join("libcudart.so.12"), b"x").unwrap();
        let mut walk = Walk::default();
        let narrow = Limits {
            max_entries: 5,
            ..WIDE
        };
        walk.visit(dir.path(), narrow);
        let before = walk.libraries.len();
        walk.visit(&lib, WIDE);
        assert!(
            walk.libraries[before..]
                .iter()
                .any(|p| p.ends_with("libcudart.so.12")),
            "{:?}",
            walk.libraries
        );
    }

    #[test]
    fn a_later_start_through_a_directory_read_before_reports_its_libraries_again() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("cuda-12.9/lib64");
        fs::create_dir_all(&lib).unwrap();
        fs::write(lib.join("libcudart.so.12"), b"x").unwrap();
        symlink("cuda-12.9", dir.path().join("cuda")).unwrap();
        let mut walk = Walk::default();
        walk.visit(&dir.path().join("cuda-12.9"), WIDE);
        let before = walk.libraries.len();
        assert_eq!(before, 1);
        walk.visit(&dir.path().join("cuda"), WIDE);
        assert_eq!(walk.libraries.len(), 2, "found again, for the second start");
    }

    #[test]
    fn missing_start_is_silent() {
        let mut walk = Walk::default();
        walk.visit(Path::new("/nonexistent/stackbench"), WIDE);
        assert!(walk.problems.is_empty() && walk.libraries.is_empty());
    }
}
