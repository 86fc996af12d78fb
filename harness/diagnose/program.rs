//! One program, statically (`doctor --program FILE`): an executable or a shared object
//! (`libtorch_cuda.so`, a Python extension module) resolved as its loader would resolve it in
//! this environment, with no installation's directories added: its `DT_NEEDED` entries and the
//! CUDA libraries it opens at run time, through its RPATH/RUNPATH (`$ORIGIN` relative, as
//! PyTorch's wheels point into `../../nvidia/*/lib`), `LD_LIBRARY_PATH`, `ld.so.cache` and the
//! default directories.

use super::deps::{self, is_checked_runtime_dep};
use super::finding::Finding;
use super::{requester, Context};
use crate::model::{Installation, Layout, Library};
use crate::resolve::{self, SearchStep};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What a program gets for each library it asks for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProgramReport {
    /// The file, as given.
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    /// The installation it lies in, when it lies in one.
    #[serde(default, with = "crate::pathname::option")]
    pub installation: Option<PathBuf>,
    /// What it needs (`DT_NEEDED`), then the CUDA libraries it opens at run time, in its order.
    pub libraries: Vec<ProgramLibrary>,
}

/// One library a program asks for, and what it gets.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProgramLibrary {
    pub name: String,
    /// `needed` (`DT_NEEDED`: loading fails without it) or `opens` (dlopen at run time).
    pub how: String,
    /// The file the loader would take; none when nothing is found.
    #[serde(default, with = "crate::pathname::option")]
    pub found: Option<PathBuf>,
    /// The step of the search that found it (`DT_RUNPATH`, `LD_LIBRARY_PATH`, ...).
    pub via: Option<String>,
    /// The installation the file belongs to.
    #[serde(default, with = "crate::pathname::option")]
    pub installation: Option<PathBuf>,
}

/// The program's libraries and the findings about them: its own dependencies, and everything
/// `diagnosed` (the whole host's findings) says about the files it gets, or about the host.
pub fn check(
    ctx: &Context,
    library: &Library,
    diagnosed: &[Finding],
) -> (ProgramReport, Vec<Finding>) {
    let search = ctx.search;
    let home = ctx.installation_of(&library.real_path);
    let alone = Installation {
        root: library
            .real_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
        layout: Layout::Directory,
        cuda_version: None,
        driver_version: None,
        sources: Vec::new(),
        libraries: Vec::new(),
        problems: Vec::new(),
        platforms: Vec::new(),
    };
    let installation = home.unwrap_or(&alone);
    let mut libraries = Vec::new();
    let needed = library.needed.iter().map(|n| (n, "needed")).chain(
        library
            .dlopen_deps
            .iter()
            .filter(|n| is_checked_runtime_dep(library, n) || deps::is_driver(n))
            .map(|n| (n, "opens")),
    );
    for (name, how) in needed {
        let resolution = resolve::resolve(name, &requester(library), search);
        let via = resolution
            .attempts
            .iter()
            .find(|a| Some(&a.path) == resolution.found.as_ref())
            .map(|a| a.via.describe().to_string());
        let owner = resolution
            .real
            .as_deref()
            .and_then(|real| ctx.installation_of(real))
            .map(|i| i.root.clone());
        libraries.push(ProgramLibrary {
            name: name.clone(),
            how: how.into(),
            found: resolution.found,
            via: via.filter(|v| v != SearchStep::Direct.describe()),
            installation: owner,
        });
    }
    // The program's own search: its findings replace those the host's report has for it.
    let mut findings = deps::check_library(ctx, installation, library, search);
    let reached: Vec<&Path> = libraries
        .iter()
        .filter_map(|l| l.found.as_deref())
        .collect();
    findings.extend(
        about(diagnosed, &reached)
            .into_iter()
            .filter(|f| f.path.as_deref().map(real).as_ref() != Some(&library.real_path)),
    );
    let report = ProgramReport {
        path: library.path.clone(),
        installation: home.map(|i| i.root.clone()),
        libraries,
    };
    (report, findings)
}

/// The findings of `diagnosed` about the files a program got, and those about the host as a
/// whole (no driver, the search path's hygiene).
pub fn about(diagnosed: &[Finding], reached: &[&Path]) -> Vec<Finding> {
    let reached: Vec<PathBuf> = reached.iter().map(|p| real(p)).collect();
    diagnosed
        .iter()
        .filter(|f| match &f.path {
            Some(path) => reached.contains(&real(path)),
            None => f.installation.is_none(),
        })
        .cloned()
        .collect()
}

/// A path with its symlinks resolved, where it exists.
pub(super) fn real(path: &Path) -> PathBuf {
    crate::hostfs::real_path(path).unwrap_or_else(|_| path.to_path_buf())
}
