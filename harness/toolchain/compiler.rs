//! The host compiler nvcc will call: the one `NVCC_CCBIN` or `CUDAHOSTCXX` names, else the
//! `g++` (or `gcc`, `c++`) first on `PATH`, and its version from its own `--version`.

use super::host_config::CompilerKind;
use crate::discover::Host;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a compiler may take to say its version.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Variables that name the host compiler, in the order they win.
pub const HOST_COMPILER_VARS: [&str; 2] = ["NVCC_CCBIN", "CUDAHOSTCXX"];

/// A host compiler as it answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCompiler {
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    /// `CUDAHOSTCXX`, `NVCC_CCBIN` or `PATH`.
    pub named_by: String,
    pub kind: CompilerKind,
    /// As it reports it (`12.2.0`).
    pub version: String,
    pub major: u32,
}

/// The host compiler on `host`, or why there is none to judge. Programs are run only on this
/// machine's own root and only where the trust rule would let this user load them.
pub fn find(host: &Host) -> Result<HostCompiler, String> {
    if !host.is_own_root() {
        return Err("below --sysroot nothing is run: the host compiler is not asked".into());
    }
    let named = HOST_COMPILER_VARS
        .iter()
        .find_map(|var| Some((*var, host.env.get(*var).filter(|v| !v.is_empty())?)));
    let (named_by, path) = match named {
        Some((var, value)) => {
            let path =
                on_path(host, value).ok_or_else(|| format!("{var}={value}: no such program"))?;
            (var.to_string(), path)
        }
        None => {
            let path = ["g++", "gcc", "c++"]
                .iter()
                .find_map(|name| on_path(host, name))
                .ok_or_else(|| "no g++, gcc or c++ on PATH".to_string())?;
            ("PATH".to_string(), path)
        }
    };
    let out = crate::trust::output_if_trusted(&path, &["--version"], VERSION_TIMEOUT)?;
    let (kind, version) = parse_version(&out)
        .ok_or_else(|| format!("{} --version: no version in its answer", path.display()))?;
    let major = version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    Ok(HostCompiler {
        path,
        named_by,
        kind,
        version,
        major,
    })
}

/// A program as `execvp` finds it: a path as given, else the first file of that name on the
/// host's `PATH`.
pub fn on_path(host: &Host, name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name)).filter(|p| host.is_file(p));
    }
    let path = host.env.get("PATH")?;
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| host.is_file(candidate))
}

/// The family and version in a compiler's `--version`: `gcc (Debian 12.2.0-14) 12.2.0` is GCC
/// 12.2.0; `Debian clang version 14.0.6` is clang 14.0.6.
pub fn parse_version(text: &str) -> Option<(CompilerKind, String)> {
    let first = text.lines().next()?;
    let is_version = |w: &&str| w.starts_with(|c: char| c.is_ascii_digit()) && w.contains('.');
    if let Some(at) = first.find("clang version ") {
        let version = first[at + "clang version ".len()..]
            .split_whitespace()
            .next()?;
        return Some((CompilerKind::Clang, version.to_owned()));
    }
    let version = first.split_whitespace().rev().find(is_version)?;
    Some((CompilerKind::Gnu, version.to_owned()))
}

/// The compiler in words: `g++ 12.2.0 (/usr/bin/g++, from PATH)`.
pub fn describe(compiler: &HostCompiler) -> String {
    let name = Path::new(&compiler.path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(
        "{name} {} ({}, from {})",
        compiler.version,
        compiler.path.display(),
        compiler.named_by
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcc_and_clang_say_their_versions_differently() {
        assert_eq!(
            parse_version("gcc (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright"),
            Some((CompilerKind::Gnu, "12.2.0".into()))
        );
        assert_eq!(
            parse_version("Ubuntu clang version 18.1.3 (1ubuntu1)\nTarget: x86_64"),
            Some((CompilerKind::Clang, "18.1.3".into()))
        );
        assert_eq!(parse_version("no version here"), None);
    }
}
