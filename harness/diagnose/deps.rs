//! Dependencies: every DT_NEEDED and every CUDA library opened at run time, resolved the way the
//! loader would for the installation's programs; what cannot be found, what is the wrong class,
//! and symbol versions the resolved copy does not define.

use super::finding::{Cause, Finding, Severity};
use super::{display_name, requester, wheel, Context};
use crate::catalog;
use crate::compat;
use crate::model::{Installation, Layout, Library};
use crate::resolve::{self, AttemptResult, Resolution, SearchContext};
use std::path::{Path, PathBuf};

pub fn check(ctx: &Context) -> Vec<Finding> {
    let mut findings = Vec::new();
    for installation in &ctx.scan.installations {
        let search = ctx.search_for(installation);
        for library in installation
            .libraries
            .iter()
            .filter(|l| runs_on_host(l, &search))
        {
            findings.extend(check_library(ctx, installation, library, &search));
        }
    }
    findings
}

/// One library's dependencies under `search`: what it needs and the CUDA libraries it opens
/// at run time, each resolved as the loader would for it.
pub fn check_library(
    ctx: &Context,
    installation: &Installation,
    library: &Library,
    search: &SearchContext,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    for name in library.needed.iter().filter(|n| !is_driver(n)) {
        let resolution = resolve::resolve(name, &requester(library), search);
        match &resolution.found {
            None => findings.push(not_found(
                ctx,
                installation,
                library,
                &resolution,
                Cause::MissingDependency,
            )),
            Some(found) => {
                findings.extend(symbol_versions(ctx, installation, library, name, found));
                findings.extend(shadowed(installation, library, &resolution));
            }
        }
    }
    for name in library
        .dlopen_deps
        .iter()
        .filter(|n| is_checked_runtime_dep(library, n))
    {
        let resolution = resolve::resolve(name, &requester(library), search);
        if resolution.found.is_some() {
            findings.extend(shadowed(installation, library, &resolution));
        } else if !sibling_reachable(library, name, search) {
            findings.push(not_found(
                ctx,
                installation,
                library,
                &resolution,
                Cause::MissingRuntimeDependency,
            ));
        }
    }
    findings
}

/// Libraries of another class or machine are for other programs (a 32-bit libcuda beside the
/// 64-bit one); their dependencies are not this host's programs' concern.
fn runs_on_host(library: &Library, search: &SearchContext) -> bool {
    library.elf_class.as_deref() == Some(search.class.as_str())
        && library.machine.as_deref() == Some(search.machine.as_str())
}

/// Run-time names worth resolving: CUDA libraries, other than the driver and the library itself.
pub fn is_checked_runtime_dep(library: &Library, name: &str) -> bool {
    catalog::classify(name).is_some() && !is_driver(name) && library.soname.as_deref() != Some(name)
}

/// The driver's libraries are the driver rule's concern, found once for the whole host.
pub fn is_driver(name: &str) -> bool {
    catalog::names_driver_library(name)
}

/// A dependency found outside the installation although the installation has its own copy:
/// something earlier on the search path (usually LD_LIBRARY_PATH) shadows it.
fn shadowed(
    installation: &Installation,
    library: &Library,
    resolution: &Resolution,
) -> Option<Finding> {
    let found = resolution.found.as_ref()?;
    // Compare the real path: `/usr/local/cuda/lib64` is the toolkit's own directory.
    if resolution
        .real
        .as_ref()
        .unwrap_or(found)
        .starts_with(&installation.root)
    {
        return None;
    }
    let own = installation.libraries.iter().find(|l| {
        l.soname.as_deref() == Some(resolution.name.as_str())
            || super::file_name(&l.path) == resolution.name
    })?;
    let via = resolution
        .attempts
        .iter()
        .find(|a| a.result == AttemptResult::Accepted)
        .map(|a| a.via.describe())
        .unwrap_or("search");
    let needed_by = display_name(library);
    let name = &resolution.name;
    Some(
        Finding::new(
            Severity::Warning,
            Cause::Shadowed,
            format!(
                "{needed_by} gets {name} from {} (via {via}), not its installation's own copy ({})",
                found.display(),
                own.version.as_deref().unwrap_or("unknown version")
            ),
            format!(
                "take {} off LD_LIBRARY_PATH for this installation's programs, or put {} before it",
                found
                    .parent()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default(),
                own.path
                    .parent()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default()
            ),
        )
        .library(needed_by.clone(), library.path.clone())
        .installation(installation.root.clone())
        .missing(name.clone(), needed_by)
        .candidates(vec![own.path.clone()])
        .evidence(resolution.attempts.iter().map(|a| a.describe()).collect()),
    )
}

/// A library that opens a development name (`libcudnn_adv.so`) usually tries the versioned one
/// of its own family first; one reachable means the name is satisfied.
fn sibling_reachable(library: &Library, name: &str, search: &SearchContext) -> bool {
    let Some(dep) = catalog::classify(name) else {
        return false;
    };
    if !dep.version.is_empty() {
        return false;
    }
    let same_family = library.name.split('_').next() == dep.component.split('_').next();
    same_family
        && library.real_path.parent().is_some_and(|dir| {
            crate::hostfs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| {
                    let file = e.file_name().to_string_lossy().into_owned();
                    file.starts_with(&format!("{name}."))
                        && resolve::resolve(&file, &super::requester(library), search)
                            .found
                            .is_some()
                })
        })
}

/// A finding for a name the loader cannot find (or finds only in the wrong class).
fn not_found(
    ctx: &Context,
    installation: &Installation,
    library: &Library,
    resolution: &Resolution,
    cause: Cause,
) -> Finding {
    let name = resolution.name.as_str();
    let wrong: Vec<&resolve::Attempt> = resolution
        .attempts
        .iter()
        .filter(|a| {
            matches!(
                a.result,
                AttemptResult::WrongClass { .. } | AttemptResult::WrongMachine { .. }
            )
        })
        .collect();
    let major = super::cuda_of(installation).map(|v| v.major);
    let candidates: Vec<PathBuf> = ctx
        .copies_of(name)
        .into_iter()
        .filter(|(_, l)| l.elf_class == library.elf_class && l.machine == library.machine)
        .filter(|(home, _)| {
            major.is_none()
                || super::cuda_of(home).map(|v| v.major).is_none()
                || super::cuda_of(home).map(|v| v.major) == major
        })
        .map(|(_, l)| l.path.clone())
        .collect();
    let evidence: Vec<String> = resolution.attempts.iter().map(|a| a.describe()).collect();
    let needed_by = display_name(library);
    let other_major = other_major_reachable(resolution, library, &ctx.search_for(installation));
    let (cause, severity, mut message) = if let Some(first) = wrong.first() {
        let cause = match first.result {
            AttemptResult::WrongMachine { .. } => Cause::WrongMachine,
            _ => Cause::WrongElfClass,
        };
        (
            cause,
            Severity::Error,
            format!(
                "{needed_by} needs {name}; the only copies on its search path are {}",
                first.describe()
            ),
        )
    } else if cause == Cause::MissingDependency {
        (
            cause,
            Severity::Error,
            format!("{needed_by} needs {name} (DT_NEEDED), which is not on its search path"),
        )
    } else {
        let severity = if catalog::classify(name).is_some_and(|n| !n.version.is_empty()) {
            Severity::Error
        } else {
            Severity::Warning
        };
        (
            cause,
            severity,
            format!("{needed_by} opens {name} at run time and cannot find it: it loads, then fails at first use"),
        )
    };
    // The name says the CUDA major it was built for; say which one it finds instead.
    if let Some((other, other_name)) = &other_major {
        message.push_str(&format!("; it finds only CUDA {other}'s {other_name}"));
    }
    let fix = fix_for(name, library, installation, &candidates);
    Finding::new(severity, cause, message, fix)
        .library(needed_by.clone(), library.path.clone())
        .installation(installation.root.clone())
        .missing(name, needed_by)
        .candidates(candidates)
        .evidence(evidence)
}

/// Another CUDA major's copy of the same component that the search does reach
/// (`libcublasLt.so.11` when `.so.12` is wanted).
fn other_major_reachable(
    resolution: &Resolution,
    library: &Library,
    search: &SearchContext,
) -> Option<(u32, String)> {
    let wanted = catalog::classify(&resolution.name)?;
    let wanted_major = compat::cuda_major_of_soname(&resolution.name)?;
    let dirs: Vec<PathBuf> = resolution
        .attempts
        .iter()
        .filter_map(|a| a.path.parent().map(PathBuf::from))
        .collect();
    for dir in dirs {
        for entry in crate::hostfs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
        {
            let file = entry.file_name().to_string_lossy().into_owned();
            let Some(named) = catalog::classify(&file) else {
                continue;
            };
            let Some(major) = compat::cuda_major_of_soname(&file) else {
                continue;
            };
            if named.component == wanted.component
                && major != wanted_major
                && resolve::resolve(&file, &requester(library), search)
                    .found
                    .is_some()
            {
                return Some((major, file));
            }
        }
    }
    None
}

fn file_name_of(path: &Path) -> String {
    super::file_name(path)
}

/// The fix for a library `library` cannot find: the development link to create when the
/// installation has the library under its versioned name only; in a pip environment, the
/// reinstall of the wheel that lists it and lost it; the package to install in a pip or conda
/// environment; a directory to add when a copy exists elsewhere; else what to install.
fn fix_for(
    name: &str,
    library: &Library,
    installation: &Installation,
    candidates: &[PathBuf],
) -> String {
    let named = catalog::classify(name);
    let component = named
        .as_ref()
        .map(|n| n.component.clone())
        .unwrap_or_else(|| name.to_string());
    if named.as_ref().is_some_and(|n| n.version.is_empty()) {
        if let Some(versioned) = installation.libraries.iter().find(|l| l.name == component) {
            let dir = versioned.path.parent().unwrap_or(Path::new("."));
            return format!(
                "ln -s {} {}   (the installation has {component} only under its versioned name)",
                file_name_of(&versioned.path),
                dir.join(name).display()
            );
        }
    }
    let root = &installation.root;
    let wheels = match installation.layout {
        Layout::Pip => wheel::wheels(root),
        _ => Vec::new(),
    };
    if let Some((lost, file)) = wheel::shipping(&wheels, name) {
        if !root.join(file).exists() {
            return lost.reinstall(root);
        }
    }
    let consumer_major = compat::cuda_major_of_names(
        library
            .dlopen_deps
            .iter()
            .chain(&library.needed)
            .map(String::as_str),
    );
    // What is missing, else the wheel the library came from, else the installation, else what
    // the library needs or is: cuBLAS 11's libcublasLt.so.11 wants CUDA 11's NVRTC.
    let major = compat::cuda_major_of_soname(name)
        .or_else(|| {
            wheel::shipping(&wheels, &file_name_of(&library.path)).and_then(|(w, _)| w.cuda_major())
        })
        .or_else(|| super::cuda_of(installation).map(|v| v.major))
        .or(consumer_major)
        .or_else(|| compat::cuda_major_of_soname(&super::display_name(library)));
    match (installation.layout, major) {
        (Layout::Pip, Some(m)) => {
            if let Some(package) = catalog::pip_package(&component, m) {
                return format!(
                    "pip install {package}   (into the environment of {})",
                    root.display()
                );
            }
        }
        (Layout::Conda, Some(m)) => {
            if let Some(package) = catalog::conda_package(&component) {
                return format!(
                    "conda install -p {} -c conda-forge {package} cuda-version={m}",
                    root.display()
                );
            }
        }
        _ => {}
    }
    if !candidates.is_empty() {
        return super::export_search_path(&candidates[..1], &format!("a copy of {name}"));
    }
    match (installation.layout, major) {
        (Layout::Pip, None) if catalog::pip_package(&component, WHEEL_MAJORS[0]).is_some() => {
            let majors = match compat::cuda_majors_of_soname(name) {
                majors if majors.is_empty() => WHEEL_MAJORS.to_vec(),
                majors => majors,
            };
            let packages: Vec<String> = majors
                .into_iter()
                .filter_map(|m| catalog::pip_package(&component, m))
                .collect();
            format!(
                "pip install {}, the one for the CUDA of the other nvidia-* packages here   (into the environment of {})",
                packages.join(" or "),
                root.display()
            )
        }
        (Layout::Pip, _) => format!(
            "pip install the nvidia-* package that ships {name}, for the CUDA of the other nvidia-* packages here   (into the environment of {})",
            root.display()
        ),
        (Layout::Conda, _) => format!(
            "conda install -p {} the conda-forge package that ships {name}",
            root.display()
        ),
        (_, Some(m)) => format!(
            "install {component} for CUDA {m} where this installation's programs can find it"
        ),
        (_, None) => {
            format!("install the package that provides {name} (e.g. `apt-file search {name}`)")
        }
    }
}

/// The CUDA majors NVIDIA publishes wheels for (`-cu11`, `-cu12`, and CUDA 13's unsuffixed).
const WHEEL_MAJORS: [u32; 3] = [11, 12, 13];

/// Symbol versions needed from `name` that the copy found does not define.
fn symbol_versions(
    ctx: &Context,
    installation: &Installation,
    library: &Library,
    name: &str,
    found: &std::path::Path,
) -> Option<Finding> {
    let needs: Vec<_> = library
        .version_needs
        .iter()
        .filter(|n| n.file == name)
        .cloned()
        .collect();
    if needs.is_empty() {
        return None;
    }
    let provider_defs = ctx.version_defs_of(found)?;
    let missing = resolve::missing_symbol_versions(&needs, name, &provider_defs);
    if missing.is_empty() {
        return None;
    }
    let needed_by = display_name(library);
    let glibc = name.starts_with("libc.so") || missing.iter().all(|v| v.starts_with("GLIBC_"));
    let (cause, fix) = if glibc {
        (
            Cause::GlibcTooOld,
            format!("this host's C library is older than {needed_by} needs ({}); use a newer OS image or an older build of the library", missing.join(", ")),
        )
    } else {
        (
            Cause::MissingSymbolVersion,
            format!(
                "put a newer {name} first on the search path (the one found is {}), e.g. the copy from the same release as {needed_by}",
                found.display()
            ),
        )
    };
    Some(
        Finding::new(
            Severity::Error,
            cause,
            format!(
                "{needed_by} needs symbol versions {} from {name}, but {} does not define them",
                missing.join(", "),
                found.display()
            ),
            fix,
        )
        .library(needed_by.clone(), library.path.clone())
        .installation(installation.root.clone())
        .missing(name, needed_by)
        .evidence(vec![
            format!("needed: {}", missing.join(", ")),
            format!("resolved: {}", found.display()),
        ]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::fs;

    /// A pip environment holding `wheels` (name, version, the files its RECORD lists); each
    /// file is on disk unless `gone` names it.
    fn venv(wheels: &[(&str, &str, &[&str])], gone: &[&str]) -> (tempfile::TempDir, Installation) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        for (name, version, files) in wheels {
            let dist_info = root.join(format!("{}-{version}.dist-info", name.replace('-', "_")));
            fs::create_dir_all(&dist_info).unwrap();
            fs::write(
                dist_info.join("METADATA"),
                format!("Name: {name}\nVersion: {version}\n"),
            )
            .unwrap();
            let record: String = files.iter().map(|f| format!("{f},sha256=x,1\n")).collect();
            fs::write(dist_info.join("RECORD"), record).unwrap();
            for file in files
                .iter()
                .filter(|f| !gone.iter().any(|g| f.ends_with(g)))
            {
                fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
                fs::write(root.join(file), "x").unwrap();
            }
        }
        let installation = Installation {
            root,
            layout: Layout::Pip,
            cuda_version: None,
            driver_version: None,
            sources: Vec::new(),
            libraries: Vec::new(),
            problems: Vec::new(),
            platforms: Vec::new(),
        };
        (dir, installation)
    }

    const CUDNN: (&str, &str, &[&str]) = (
        "nvidia-cudnn-cu12",
        "8.9.2.26",
        &[
            "nvidia/cudnn/lib/libcudnn.so.8",
            "nvidia/cudnn/lib/libcudnn_adv_infer.so.8",
        ],
    );

    /// What libcudnn.so.8 of `wheels` misses, and the fix doctor gives for it.
    fn fix_in(wheels: &[(&str, &str, &[&str])], gone: &[&str], missing: &str) -> String {
        let (_dir, installation) = venv(wheels, gone);
        let library = Library {
            name: "cudnn".into(),
            soname: Some("libcudnn.so.8".into()),
            path: installation.root.join("nvidia/cudnn/lib/libcudnn.so.8"),
            ..Library::default()
        };
        let root = installation.root.display().to_string();
        fix_for(missing, &library, &installation, &[]).replace(&root, "VENV")
    }

    #[rstest]
    // A library its wheel's RECORD lists and lost: reinstall that wheel.
    #[case(&[CUDNN], &["libcudnn_adv_infer.so.8"], "libcudnn_adv_infer.so.8",
        "pip install --force-reinstall --no-deps nvidia-cudnn-cu12==8.9.2.26   (into the environment of VENV)")]
    // One no wheel lists, needed by a library of a CUDA 12 wheel: that family's CUDA 12 wheel.
    #[case(&[CUDNN], &[], "libcudnn_cnn_infer.so.8",
        "pip install nvidia-cudnn-cu12   (into the environment of VENV)")]
    #[case(&[CUDNN], &[], "libnvrtc.so",
        "pip install nvidia-cuda-nvrtc-cu12   (into the environment of VENV)")]
    // Nothing tells the CUDA major: every wheel of the family, by name.
    #[case(&[], &[], "libcudnn_cnn_infer.so.8",
        "pip install nvidia-cudnn-cu11 or nvidia-cudnn-cu12 or nvidia-cudnn-cu13, the one for the CUDA of the other nvidia-* packages here   (into the environment of VENV)")]
    #[case(&[], &[], "libnvrtc.so",
        "pip install nvidia-cuda-nvrtc-cu11 or nvidia-cuda-nvrtc-cu12 or nvidia-cuda-nvrtc, the one for the CUDA of the other nvidia-* packages here   (into the environment of VENV)")]
    #[case(&[], &[], "libcusolver.so.11",
        "pip install nvidia-cusolver-cu11 or nvidia-cusolver-cu12, the one for the CUDA of the other nvidia-* packages here   (into the environment of VENV)")]
    // The name tells it.
    #[case(&[], &[], "libcublas.so.12",
        "pip install nvidia-cublas-cu12   (into the environment of VENV)")]
    // A family with no wheel of its own in the catalog.
    #[case(&[], &[], "libnvjpeg.so",
        "pip install the nvidia-* package that ships libnvjpeg.so, for the CUDA of the other nvidia-* packages here   (into the environment of VENV)")]
    fn pip_fixes_name_the_wheel_that_ships_the_library(
        #[case] wheels: &[(&str, &str, &[&str])],
        #[case] gone: &[&str],
        #[case] missing: &str,
        #[case] fix: &str,
    ) {
        assert_eq!(fix_in(wheels, gone, missing), fix);
    }
}
