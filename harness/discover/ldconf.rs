//! `/etc/ld.so.conf` and the files it includes: the directories `ldconfig` puts in the cache.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Nesting limit for `include` lines, so a file that includes itself cannot loop.
const MAX_INCLUDE_DEPTH: usize = 8;

/// The directories named by `conf` and its includes, in order, without duplicates; every
/// absolute path they name (an included file, a directory) read below `sysroot`.
pub fn directories(conf: &Path, sysroot: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    collect(conf, sysroot, 0, &mut HashMap::new(), &mut dirs);
    dirs
}

/// Reads `conf` at include depth `depth` into `dirs`. `read` holds each file read so far with
/// the least depth it was read at: read again at that depth or deeper, a file adds nothing it
/// did not add then, so it is passed over. Without this a file naming itself `k` times (or a
/// glob of `k` files that each name the glob) is read `k`^8 times.
fn collect(
    conf: &Path,
    sysroot: &Path,
    depth: usize,
    read: &mut HashMap<PathBuf, usize>,
    dirs: &mut Vec<PathBuf>,
) {
    // Below a sysroot a file or directory is read where its links lead inside it.
    let real = |path: &Path| match sysroot == Path::new("/") {
        true => Some(path.to_path_buf()),
        false => super::inside::resolve(sysroot, path),
    };
    let Some(file) = real(conf) else {
        return;
    };
    if read.get(&file).is_some_and(|&before| before <= depth) {
        return;
    }
    read.insert(file.clone(), depth);
    let Ok(text) = crate::hostfs::read_to_string(&file, crate::hostfs::TEXT) else {
        return;
    };
    let base = conf.parent().unwrap_or(Path::new("/"));
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some(pattern) = line.strip_prefix("include") {
            if depth < MAX_INCLUDE_DEPTH {
                let pattern = Path::new(pattern.trim());
                let pattern = if pattern.is_absolute() {
                    super::under(sysroot, pattern)
                } else {
                    base.join(pattern)
                };
                let pattern = match (pattern.parent().and_then(real), pattern.file_name()) {
                    (Some(dir), Some(name)) => dir.join(name),
                    _ => continue,
                };
                for included in expand_glob(&pattern) {
                    collect(&included, sysroot, depth + 1, read, dirs);
                }
            }
        } else if line.starts_with('/') {
            let dir = super::under(
                sysroot,
                Path::new(line.split_whitespace().next().unwrap_or(line)),
            );
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
}

/// Expands a `*` in the last component of `pattern` (the form ld.so.conf uses), sorted.
fn expand_glob(pattern: &Path) -> Vec<PathBuf> {
    let Some(name) = pattern.file_name().and_then(|n| n.to_str()) else {
        return vec![];
    };
    let Some((prefix, suffix)) = name.split_once('*') else {
        return vec![pattern.to_path_buf()];
    };
    let dir = pattern.parent().unwrap_or(Path::new("/"));
    let Ok(entries) = crate::hostfs::read_dir(dir) else {
        return vec![];
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.len() >= prefix.len() + suffix.len() && n.starts_with(prefix) && n.ends_with(suffix)
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_includes_and_skips_comments() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("ld.so.conf.d");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("a.conf"), "# cuda\n/usr/local/cuda/lib64\n").unwrap();
        std::fs::write(
            d.join("b.conf"),
            "/opt/b/lib # trailing\ninclude ../ld.so.conf\n",
        )
        .unwrap();
        std::fs::write(d.join("ignored.txt"), "/nope\n").unwrap();
        let conf = dir.path().join("ld.so.conf");
        std::fs::write(&conf, "include ld.so.conf.d/*.conf\n/usr/lib\n").unwrap();
        assert_eq!(
            directories(&conf, Path::new("/")),
            vec![
                PathBuf::from("/usr/local/cuda/lib64"),
                PathBuf::from("/opt/b/lib"),
                PathBuf::from("/usr/lib")
            ]
        );
    }

    #[test]
    fn below_a_sysroot_absolute_includes_and_directories_stay_inside_it() {
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("etc/ld.so.conf.d");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("cuda.conf"), "/usr/local/cuda/lib64\n").unwrap();
        let conf = root.path().join("etc/ld.so.conf");
        std::fs::write(&conf, "include /etc/ld.so.conf.d/*.conf\n").unwrap();
        // An included file that links to an absolute path is read inside the root too: this
        // machine's file of that name is not.
        let machine = tempfile::tempdir().unwrap();
        let machines = machine.path().join("machine.conf");
        std::fs::write(&machines, "/machine/lib\n").unwrap();
        std::os::unix::fs::symlink(&machines, d.join("machine.conf")).unwrap();
        assert_eq!(
            directories(&conf, root.path()),
            [root.path().join("usr/local/cuda/lib64")]
        );
        // On the machine's own root the link is followed where it leads.
        assert_eq!(
            directories(&d.join("machine.conf"), Path::new("/")),
            [PathBuf::from("/machine/lib")]
        );
    }

    #[test]
    fn a_file_included_many_times_is_read_once_per_depth() {
        // 16 includes of itself (or of a glob of 16 files naming the glob) were 16^8 reads.
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("etc/ld.so.conf.d");
        std::fs::create_dir_all(&d).unwrap();
        for i in 0..16 {
            let text = format!("include /etc/ld.so.conf.d/*.conf\n/opt/{i}/lib\n");
            std::fs::write(d.join(format!("{i:02}.conf")), text).unwrap();
        }
        let conf = root.path().join("etc/ld.so.conf");
        let text = "include /etc/ld.so.conf\n".repeat(16) + "include /etc/ld.so.conf.d/*.conf\n";
        std::fs::write(&conf, text).unwrap();
        let expected: Vec<PathBuf> = (0..16)
            .map(|i| root.path().join(format!("opt/{i}/lib")))
            .collect();
        // In a loop the order is the order each file is first read in, not the depth limit's.
        let mut found = directories(&conf, root.path());
        found.sort_by_key(|d| {
            d.parent()
                .and_then(|p| p.file_name()?.to_str()?.parse::<u32>().ok())
        });
        assert_eq!(found, expected);
    }

    #[test]
    fn a_file_first_met_deep_is_read_again_nearer_the_top() {
        // deep.conf is first met at the depth limit, where its include is not followed; met
        // again at depth 1, it is read whole.
        let root = tempfile::tempdir().unwrap();
        let etc = root.path().join("etc");
        std::fs::create_dir_all(&etc).unwrap();
        let last = MAX_INCLUDE_DEPTH - 1;
        for i in 1..last {
            std::fs::write(
                etc.join(format!("{i}.conf")),
                format!("include {}.conf\n", i + 1),
            )
            .unwrap();
        }
        std::fs::write(etc.join(format!("{last}.conf")), "include deep.conf\n").unwrap();
        std::fs::write(etc.join("deep.conf"), "/deep\ninclude last.conf\n").unwrap();
        std::fs::write(etc.join("last.conf"), "/last\n").unwrap();
        let conf = etc.join("ld.so.conf");
        std::fs::write(&conf, "include 1.conf\ninclude deep.conf\n").unwrap();
        assert_eq!(
            directories(&conf, root.path()),
            [root.path().join("deep"), root.path().join("last")]
        );
    }

    #[test]
    fn missing_file_gives_nothing() {
        assert!(directories(Path::new("/nonexistent/ld.so.conf"), Path::new("/")).is_empty());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn any_conf_text_reads_without_panicking(text in "(\\PC{0,30}\n){0,8}") {
            let dir = tempfile::tempdir().unwrap();
            let conf = dir.path().join("ld.so.conf");
            std::fs::write(&conf, text).unwrap();
            let _ = directories(&conf, Path::new("/"));
        }
    }
}
