//! The pinning directory of a combination's worker: a private directory first on its
//! `LD_LIBRARY_PATH` holding `lib<name>.so` links to the combination's own files, so that
//! cudarc's first candidate name (`libcudart.so`, `libcublas.so`, ...; GUIDE.md section 9)
//! always resolves to the combination's library, whatever its major (cudarc's `cuda-12090`
//! bindings have no `.so.13` candidate). The worker opens each library by its real path before
//! cudarc does, so `$ORIGIN` is the library's own directory and the loader, finding the same file
//! through the link, returns that same object.

use super::combination::Combination;
use crate::lifetime::Scratch;
use std::io;
use std::os::unix::fs::symlink;
use std::path::Path;

/// Creates the pinning directory of `combination`; it is removed when dropped or when a signal
/// ends the run.
pub fn pin(combination: &Combination) -> io::Result<Scratch> {
    // Readable by all: a worker may run as the owner of the combination's files.
    let dir = Scratch::new("stackbench-pin-", 0o755)?;
    for file in &combination.components {
        link(
            dir.path(),
            &format!("lib{}.so", file.component.stem()),
            &file.path,
        )?;
    }
    if let Some(driver) = &combination.driver {
        link(dir.path(), "libcuda.so", driver)?;
        link(dir.path(), "libcuda.so.1", driver)?;
    }
    Ok(dir)
}

/// `dir/name -> target`, with `target` made absolute.
fn link(dir: &Path, name: &str, target: &Path) -> io::Result<()> {
    let target = std::path::absolute(target)?;
    symlink(target, dir.join(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::protocol::{Component, ComponentFile};

    #[test]
    fn links_each_component_and_the_driver() {
        let combination = Combination {
            driver: Some("/d/libcuda.so.1".into()),
            components: vec![ComponentFile {
                component: Component::CublasLt,
                path: "/x/libcublasLt.so.12".into(),
                version: None,
            }],
            ..Combination::empty("x")
        };
        let dir = pin(&combination).unwrap();
        let target = |name: &str| std::fs::read_link(dir.path().join(name)).unwrap();
        assert_eq!(target("libcublasLt.so"), Path::new("/x/libcublasLt.so.12"));
        assert_eq!(target("libcuda.so"), Path::new("/d/libcuda.so.1"));
        assert_eq!(target("libcuda.so.1"), Path::new("/d/libcuda.so.1"));
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists());
    }
}
