//! The trust rule, read from metadata alone: a path may be loaded by a process whose effective
//! uid is U only if the file and every directory above it are owned by U or by root and none can
//! be written by group or others, with every symbolic link resolved and each step checked.
//!
//! One allowance, as the kernel's own `protected_*` rules make safe: a directory crossed on the
//! way (not the file's own directory, not a search directory itself) may be world-writable when
//! its sticky bit is set (`/tmp`), since nobody but an entry's owner can then rename or remove
//! that entry; a link met inside one must still be owned by U or root.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// How many symbolic links one path may go through (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// Why a path may not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum Distrust {
    /// A step can be written by someone other than its owner.
    Writable {
        #[serde(with = "crate::pathname")]
        path: PathBuf,
        by: Writers,
    },
    /// A step belongs to a user other than root and the one loading.
    Owned {
        #[serde(with = "crate::pathname")]
        path: PathBuf,
        owner: u32,
    },
    /// A step could not be read (missing, unreadable, a link loop).
    Unreadable {
        #[serde(with = "crate::pathname")]
        path: PathBuf,
        reason: String,
    },
    /// A step is not there (a missing place holds nothing to load, until someone creates it).
    Missing {
        #[serde(with = "crate::pathname")]
        path: PathBuf,
    },
    /// A directory that is not there yet, which someone other than the loading user could
    /// create (and fill) in `parent`, for the reason given.
    Creatable {
        #[serde(with = "crate::pathname")]
        path: PathBuf,
        #[serde(with = "crate::pathname")]
        parent: PathBuf,
        reason: String,
    },
}

/// Who besides a step's owner can write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Writers {
    /// Every user (mode `o+w`).
    Everyone,
    /// The members of this group (mode `g+w`).
    Group(u32),
}

/// What a path's walk met: the owner of every step that is not root's, with a group id seen on
/// that owner's files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Owners(pub BTreeMap<u32, u32>);

/// Walks `path` (a file to load, or with `directory` a directory to search in) and returns the
/// users other than root who own a step of it, or why nobody may load it.
pub fn walk(path: &Path, directory: bool) -> Result<Owners, Distrust> {
    let steps = resolve(path)?;
    let mut owners = Owners::default();
    let last = steps.len() - 1;
    for (index, (step, meta)) in steps.iter().enumerate() {
        if meta.uid() != 0 {
            owners.0.entry(meta.uid()).or_insert(meta.gid());
        }
        if meta.file_type().is_symlink() {
            continue;
        }
        // The object itself, and the directory a file is looked up in, admit no writer at all.
        let strict = index == last || (!directory && index + 1 == last);
        if let Some(by) = writers(meta, strict) {
            return Err(Distrust::Writable {
                path: step.clone(),
                by,
            });
        }
    }
    Ok(owners)
}

/// Whether `uid` may load `path` (or search the directory `path`).
pub fn check(path: &Path, directory: bool, uid: u32) -> Result<(), Distrust> {
    let owners = walk(path, directory)?;
    match owners.0.keys().find(|&&owner| owner != uid) {
        None => Ok(()),
        Some(&owner) => Err(Distrust::Owned {
            path: first_owned_by(path, owner).unwrap_or_else(|| path.to_path_buf()),
            owner,
        }),
    }
}

/// The first step of `path` that `owner` owns.
pub fn first_owned_by(path: &Path, owner: u32) -> Option<PathBuf> {
    resolve(path)
        .ok()?
        .into_iter()
        .find(|(_, meta)| meta.uid() == owner)
        .map(|(step, _)| step)
}

/// Who besides its owner can write a step; `strict` leaves no allowance for the sticky bit.
fn writers(meta: &Metadata, strict: bool) -> Option<Writers> {
    let mode = meta.mode();
    let sticky_dir = meta.is_dir() && mode & libc::S_ISVTX != 0;
    if mode & 0o002 != 0 && (strict || !sticky_dir) {
        Some(Writers::Everyone)
    } else if mode & 0o020 != 0 && (strict || !sticky_dir) {
        Some(Writers::Group(meta.gid()))
    } else {
        None
    }
}

/// Every step the kernel takes to reach `path`, from `/`: each directory, each link (then where
/// it leads), and the object itself, with its `lstat`.
fn resolve(path: &Path) -> Result<Vec<(PathBuf, Metadata)>, Distrust> {
    let unreadable = |path: &Path, reason: String| Distrust::Unreadable {
        path: path.to_path_buf(),
        reason,
    };
    let absolute = std::path::absolute(path).map_err(|e| unreadable(path, e.to_string()))?;
    let mut pending: Vec<OsString> = Vec::new();
    push_components(&mut pending, &absolute);
    let mut current = PathBuf::from("/");
    let lstat = |p: &Path| {
        std::fs::symlink_metadata(p).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Distrust::Missing {
                path: p.to_path_buf(),
            },
            _ => unreadable(p, e.to_string()),
        })
    };
    let mut steps = vec![(current.clone(), lstat(&current)?)];
    let mut links = 0;
    while let Some(name) = pending.pop() {
        if name == ".." {
            current.pop();
            continue;
        }
        let next = current.join(&name);
        let meta = lstat(&next)?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Err(unreadable(
                    &next,
                    "too many levels of symbolic links".into(),
                ));
            }
            let target = std::fs::read_link(&next).map_err(|e| unreadable(&next, e.to_string()))?;
            if target.is_absolute() {
                current = PathBuf::from("/");
            }
            push_components(&mut pending, &target);
        } else {
            current = next.clone();
        }
        steps.push((next, meta));
    }
    Ok(steps)
}

/// Puts `path`'s components on the stack so that its first is popped first.
fn push_components(pending: &mut Vec<OsString>, path: &Path) {
    let names: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_owned()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    pending.extend(names.into_iter().rev());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn chmod(path: &Path, mode: u32) {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A private directory holding `lib/libx.so`, all owned by whoever runs the test.
    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("lib")).unwrap();
        let file = dir.path().join("lib/libx.so");
        fs::write(&file, b"").unwrap();
        chmod(&file, 0o644);
        chmod(&dir.path().join("lib"), 0o755);
        (dir, file)
    }

    fn me() -> u32 {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() }
    }

    #[test]
    fn own_files_are_trusted() {
        let (_dir, file) = tree();
        assert_eq!(check(&file, false, me()), Ok(()));
        assert_eq!(check(file.parent().unwrap(), true, me()), Ok(()));
    }

    #[test]
    fn a_writable_directory_above_is_named() {
        let (dir, file) = tree();
        chmod(&dir.path().join("lib"), 0o777);
        assert_eq!(
            check(&file, false, me()),
            Err(Distrust::Writable {
                path: dir.path().join("lib"),
                by: Writers::Everyone
            })
        );
        chmod(&dir.path().join("lib"), 0o775);
        assert!(matches!(
            check(&file, false, me()),
            Err(Distrust::Writable {
                by: Writers::Group(_),
                ..
            })
        ));
    }

    #[test]
    fn a_writable_file_is_named() {
        let (_dir, file) = tree();
        chmod(&file, 0o666);
        assert!(matches!(
            check(&file, false, me()),
            Err(Distrust::Writable { path, .. }) if path == file
        ));
    }

    #[test]
    fn the_sticky_bit_covers_directories_crossed_not_the_files_own() {
        let (dir, file) = tree();
        chmod(dir.path(), 0o1777);
        assert_eq!(check(&file, false, me()), Ok(()));
        chmod(&dir.path().join("lib"), 0o1777);
        assert!(check(&file, false, me()).is_err());
        assert!(check(&dir.path().join("lib"), true, me()).is_err());
    }

    #[test]
    fn links_are_followed_and_each_step_checked() {
        let (dir, file) = tree();
        let open = dir.path().join("open");
        fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        fs::rename(&file, open.join("libx.so")).unwrap();
        symlink("../open/libx.so", &file).unwrap();
        assert!(matches!(
            check(&file, false, me()),
            Err(Distrust::Writable { path, .. }) if path == open
        ));
    }

    #[test]
    fn loops_are_unreadable_not_endless() {
        let (dir, _) = tree();
        let a = dir.path().join("a");
        symlink(dir.path().join("b"), &a).unwrap();
        symlink(&a, dir.path().join("b")).unwrap();
        assert!(matches!(
            check(&a, false, me()),
            Err(Distrust::Unreadable { reason, .. }) if reason.contains("symbolic links")
        ));
    }

    #[test]
    fn another_users_step_is_named_with_its_owner() {
        if !crate::trust::running_as_root("another user's step is named") {
            return;
        }
        let (dir, file) = tree();
        std::os::unix::fs::chown(dir.path().join("lib"), Some(4242), Some(4242)).unwrap();
        assert_eq!(
            check(&file, false, 0),
            Err(Distrust::Owned {
                path: dir.path().join("lib"),
                owner: 4242
            })
        );
        assert_eq!(check(&file, false, 4242), Ok(()));
        assert_eq!(walk(&file, false).unwrap().0.get(&4242), Some(&4242));
    }
}
