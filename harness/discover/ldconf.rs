//! `/etc/ld.so.conf` and the files it includes: the directories `ldconfig` puts in the cache.

use std::path::{Path, PathBuf};

/// Nesting limit for `include` lines, so a file that includes itself cannot loop.
const MAX_INCLUDE_DEPTH: usize = 8;

/// The directories named by `conf` and its includes, in order, without duplicates.
pub fn directories(conf: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    collect(conf, 0, &mut dirs);
    dirs
}

fn collect(conf: &Path, depth: usize, dirs: &mut Vec<PathBuf>) {
    let Ok(text) = std::fs::read_to_string(conf) else {
        return;
    };
    let base = conf.parent().unwrap_or(Path::new("/"));
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some(pattern) = line.strip_prefix("include") {
            if depth < MAX_INCLUDE_DEPTH {
                for included in expand_glob(&base.join(pattern.trim())) {
                    collect(&included, depth + 1, dirs);
                }
            }
        } else if line.starts_with('/') {
            let dir = PathBuf::from(line.split_whitespace().next().unwrap_or(line));
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
    let Ok(entries) = std::fs::read_dir(dir) else {
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
            directories(&conf),
            vec![
                PathBuf::from("/usr/local/cuda/lib64"),
                PathBuf::from("/opt/b/lib"),
                PathBuf::from("/usr/lib")
            ]
        );
    }

    #[test]
    fn missing_file_gives_nothing() {
        assert!(directories(Path::new("/nonexistent/ld.so.conf")).is_empty());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn any_conf_text_reads_without_panicking(text in "(\\PC{0,30}\n){0,8}") {
            let dir = tempfile::tempdir().unwrap();
            let conf = dir.path().join("ld.so.conf");
            std::fs::write(&conf, text).unwrap();
            let _ = directories(&conf);
        }
    }
}
