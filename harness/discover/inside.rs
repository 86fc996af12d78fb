//! Paths resolved inside a root directory as a process chrooted there would see them: every
//! symlink followed, an absolute target read from the root (`/etc/alternatives/cuda` below
//! the root, never the machine's own), `..` stopping at the root. So a copy of another
//! machine's file system (`--sysroot`) is read without one file outside it.

use crate::symlink::Chain;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// The kernel's limit on links in one path resolution.
const MAX_LINKS: usize = 40;

/// Where one resolution ended.
enum Step {
    /// The real path of an existing file or directory, inside the root.
    Real(PathBuf),
    /// A component is missing: the path inside the root with it and what follows it.
    Missing(PathBuf),
    /// More links than the kernel follows.
    Loop,
}

/// `path` as the root holds it: an absolute path names a place inside `root`, a path that
/// already lies below `root` is taken as it is. Every link is followed inside `root`; `None`
/// when something on the way is missing or the links loop.
pub fn resolve(root: &Path, path: &Path) -> Option<PathBuf> {
    match walk(root, path) {
        Step::Real(real) => Some(real),
        Step::Missing(_) | Step::Loop => None,
    }
}

/// A place to search below `root`: where `path` leads inside it, or, when part of it is
/// missing, the path from the missing entry on, inside it (nothing is there to find); `None`
/// when its links loop.
pub fn place(root: &Path, path: &Path) -> Option<PathBuf> {
    match walk(root, path) {
        Step::Real(real) | Step::Missing(real) => Some(real),
        Step::Loop => None,
    }
}

/// `path`'s directory resolved inside `root`, its last component kept as it is (not followed):
/// the real place of the entry itself.
pub fn entry(root: &Path, path: &Path) -> PathBuf {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return path.to_path_buf();
    };
    match walk(root, dir) {
        Step::Real(dir) => dir.join(name),
        Step::Missing(_) | Step::Loop => path.to_path_buf(),
    }
}

/// Follows `path` link by link to the file it names, inside `root`: the same chain
/// [`crate::symlink::follow`] gives on the host, with each link's target read inside `root`.
pub fn follow(root: &Path, path: &Path) -> Chain {
    let mut current = entry(root, path);
    let mut chain = vec![current.clone()];
    loop {
        let Ok(target) = std::fs::read_link(&current) else {
            return if current.exists() {
                Chain::Resolved(chain)
            } else {
                Chain::Dangling(chain)
            };
        };
        let joined = if target.is_absolute() {
            crate::discover::under(root, &target)
        } else {
            current.parent().unwrap_or(root).join(target)
        };
        let next = entry(root, &joined);
        if chain.contains(&next) || chain.len() > MAX_LINKS {
            chain.push(next);
            return Chain::Loop(chain);
        }
        chain.push(next.clone());
        current = next;
    }
}

/// The components of `path` relative to `root`: an absolute path outside `root` counts from
/// the root's top.
fn relative_parts(root: &Path, path: &Path) -> VecDeque<OsString> {
    let inside = path.strip_prefix(root).unwrap_or(path);
    inside
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// Resolves `path` under `root` component by component.
fn walk(root: &Path, path: &Path) -> Step {
    let mut parts = relative_parts(root, path);
    let mut current = root.to_path_buf();
    let mut links = 0;
    while let Some(part) = parts.pop_front() {
        if part == ".." {
            if current != root {
                current.pop();
            }
            continue;
        }
        let next = current.join(&part);
        let meta = match std::fs::symlink_metadata(&next) {
            Ok(meta) => meta,
            // Nothing exists below a missing entry: the rest of the path is kept, as named.
            Err(_) => {
                let mut missing = next;
                missing.extend(parts);
                return Step::Missing(missing);
            }
        };
        if !meta.file_type().is_symlink() {
            current = next;
            continue;
        }
        links += 1;
        if links > MAX_LINKS {
            return Step::Loop;
        }
        let Ok(target) = std::fs::read_link(&next) else {
            return Step::Missing(next);
        };
        let mut expanded = relative_parts(Path::new("/"), &target);
        if target.is_absolute() {
            current = root.to_path_buf();
        }
        expanded.extend(parts);
        parts = expanded;
    }
    Step::Real(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        fs::create_dir_all(root.join("usr/local/cuda-12.9/lib64")).unwrap();
        fs::create_dir_all(root.join("etc/alternatives")).unwrap();
        fs::write(root.join("usr/local/cuda-12.9/lib64/libcudart.so.12"), b"x").unwrap();
        (dir, root)
    }

    #[test]
    fn absolute_links_are_read_from_the_root_not_the_machine() {
        let (_dir, root) = tree();
        symlink("/usr/local/cuda-12.9", root.join("etc/alternatives/cuda")).unwrap();
        symlink("/etc/alternatives/cuda", root.join("usr/local/cuda")).unwrap();
        assert_eq!(
            resolve(&root, Path::new("/usr/local/cuda/lib64/libcudart.so.12")),
            Some(root.join("usr/local/cuda-12.9/lib64/libcudart.so.12"))
        );
        // A path given below the root already is the same place.
        assert_eq!(
            resolve(&root, &root.join("usr/local/cuda/lib64")),
            Some(root.join("usr/local/cuda-12.9/lib64"))
        );
    }

    #[test]
    fn parent_links_stop_at_the_root() {
        let (_dir, root) = tree();
        symlink("../../../../../..", root.join("usr/local/up")).unwrap();
        assert_eq!(
            resolve(&root, Path::new("/usr/local/up")),
            Some(root.clone())
        );
        symlink("/../../etc", root.join("escape")).unwrap();
        assert_eq!(resolve(&root, Path::new("/escape")), Some(root.join("etc")));
        // The machine's own /etc/passwd is not below the root: nothing.
        assert_eq!(resolve(&root, Path::new("/escape/passwd")), None);
    }

    #[test]
    fn a_missing_place_keeps_its_whole_path_inside_the_root() {
        let (_dir, root) = tree();
        assert_eq!(
            place(&root, Path::new("/usr/local/nvidia/lib64")),
            Some(root.join("usr/local/nvidia/lib64"))
        );
        symlink("/opt/nvidia", root.join("usr/local/gone")).unwrap();
        assert_eq!(
            place(&root, Path::new("/usr/local/gone/lib")),
            Some(root.join("opt/nvidia/lib"))
        );
    }

    #[test]
    fn follow_names_each_link_inside_the_root_and_loops() {
        let (_dir, root) = tree();
        let lib = root.join("usr/local/cuda-12.9/lib64");
        symlink(
            "/usr/local/cuda-12.9/lib64/libcudart.so.12",
            lib.join("libcudart.so"),
        )
        .unwrap();
        assert_eq!(
            follow(&root, &lib.join("libcudart.so")),
            Chain::Resolved(vec![lib.join("libcudart.so"), lib.join("libcudart.so.12")])
        );
        symlink("libcuda.so.1", lib.join("libcuda.so")).unwrap();
        symlink(
            "/usr/local/cuda-12.9/lib64/libcuda.so",
            lib.join("libcuda.so.1"),
        )
        .unwrap();
        assert!(matches!(
            follow(&root, &lib.join("libcuda.so")),
            Chain::Loop(_)
        ));
        symlink("/usr/lib/libcuda.so.535", lib.join("libcuda.so.2")).unwrap();
        assert!(matches!(
            follow(&root, &lib.join("libcuda.so.2")),
            Chain::Dangling(_)
        ));
    }
}
