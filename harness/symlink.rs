//! Following a symlink chain link by link, so the chain itself can be shown and loops and
//! dangling links are named rather than met as opaque errors.

use std::path::{Path, PathBuf};

/// The kernel's limit on links in one path resolution.
const MAX_LINKS: usize = 40;

/// Where a chain of links ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chain {
    /// The chain, `path` first and the real file last.
    Resolved(Vec<PathBuf>),
    /// A link points at nothing: the chain up to the missing target.
    Dangling(Vec<PathBuf>),
    /// The links go round: the chain until it repeats.
    Loop(Vec<PathBuf>),
}

/// Follows `path` through every symlink to the file it names. Each link's directory is made
/// canonical, so the chain holds real paths (no `..`) and ends at the real file.
pub fn follow(path: &Path) -> Chain {
    let mut chain = vec![path.to_path_buf()];
    let mut current = path.to_path_buf();
    loop {
        let target = match std::fs::read_link(&current) {
            Ok(target) => target,
            Err(_) if current.exists() => return Chain::Resolved(chain),
            Err(_) => return Chain::Dangling(chain),
        };
        let joined = match current.parent() {
            Some(dir) => dir.join(target),
            None => target,
        };
        let next = match (
            joined.parent().map(crate::hostfs::real_path),
            joined.file_name(),
        ) {
            (Some(Ok(dir)), Some(name)) => dir.join(name),
            _ => {
                chain.push(joined);
                return Chain::Dangling(chain);
            }
        };
        if chain.contains(&next) || chain.len() > MAX_LINKS {
            chain.push(next);
            return Chain::Loop(chain);
        }
        chain.push(next.clone());
        current = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn follows_soname_chains() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        std::fs::write(d.join("libcudart.so.12.9.79"), b"x").unwrap();
        symlink("libcudart.so.12.9.79", d.join("libcudart.so.12")).unwrap();
        symlink("libcudart.so.12", d.join("libcudart.so")).unwrap();
        assert_eq!(
            follow(&d.join("libcudart.so")),
            Chain::Resolved(vec![
                d.join("libcudart.so"),
                d.join("libcudart.so.12"),
                d.join("libcudart.so.12.9.79")
            ])
        );
        assert_eq!(
            follow(&d.join("libcudart.so.12.9.79")),
            Chain::Resolved(vec![d.join("libcudart.so.12.9.79")])
        );
    }

    #[test]
    fn chains_through_parent_directories_hold_real_paths() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(d.join("targets/lib")).unwrap();
        std::fs::create_dir_all(d.join("lib")).unwrap();
        std::fs::write(d.join("targets/lib/libcudart.so.13.0.96"), b"x").unwrap();
        symlink(
            "libcudart.so.13.0.96",
            d.join("targets/lib/libcudart.so.13"),
        )
        .unwrap();
        symlink(
            "../targets/lib/libcudart.so.13",
            d.join("lib/libcudart.so.13"),
        )
        .unwrap();
        assert_eq!(
            follow(&d.join("lib/libcudart.so.13")),
            Chain::Resolved(vec![
                d.join("lib/libcudart.so.13"),
                d.join("targets/lib/libcudart.so.13"),
                d.join("targets/lib/libcudart.so.13.0.96")
            ])
        );
    }

    #[test]
    fn names_loops_and_dangling_links() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        symlink("libcuda.so.1", d.join("libcuda.so")).unwrap();
        symlink("libcuda.so", d.join("libcuda.so.1")).unwrap();
        symlink("libcudnn.so.9.1.0", d.join("libcudnn.so.9")).unwrap();
        assert!(matches!(follow(&d.join("libcuda.so")), Chain::Loop(_)));
        assert!(matches!(follow(&d.join("libcudnn.so.9")), Chain::Dangling(c) if c.len() == 2));
    }
}
