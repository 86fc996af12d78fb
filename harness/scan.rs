//! `stackbench scan`: discovery, then every library read without loading it, grouped into
//! installations with their versions.

use crate::catalog;
use crate::discover::{self, layout, metadata, Discovery, Found, Host};
use crate::elf::{self, ElfError, ElfInfo};
use crate::model::*;
use crate::pe::{self, PeError, PeInfo};
use crate::symlink::{self, Chain};
use crate::tags::SCAN_SCHEMA;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Scans the host (and the given roots) and reads every CUDA library found.
pub fn scan(options: &discover::Options, host: &Host) -> ScanReport {
    let discovery = discover::discover(options, host);
    build_report(discovery, host)
}

/// One directory entry resolved to its file.
struct Entry {
    found: Found,
    chain: Vec<PathBuf>,
}

fn build_report(discovery: Discovery, host: &Host) -> ScanReport {
    let Discovery {
        searched,
        found,
        mut problems,
    } = discovery;
    let placements = place_directories(&found, &host.sysroot);
    let placement_of = |path: &Path| {
        placements
            .get(path.parent().unwrap_or(Path::new("")))
            .cloned()
    };
    let mut installations: BTreeMap<layout::Placement, Installation> = BTreeMap::new();
    let mut groups: BTreeMap<(layout::Placement, PathBuf), Vec<Entry>> = BTreeMap::new();
    for found in found {
        let Some(placement) = placement_of(&found.path) else {
            continue;
        };
        let installation = installations
            .entry(placement.clone())
            .or_insert_with(|| empty_installation(&placement));
        for source in &found.sources {
            if !installation.sources.contains(source) {
                installation.sources.push(*source);
            }
        }
        // Below a sysroot, links are followed inside it, never on this machine.
        let chain = match host.is_own_root() {
            true => symlink::follow(&found.path),
            false => discover::inside::follow(&host.sysroot, &found.path),
        };
        match chain {
            Chain::Resolved(chain) => {
                let real = chain.last().cloned().unwrap_or_default();
                groups
                    .entry((placement, real))
                    .or_default()
                    .push(Entry { found, chain });
            }
            Chain::Dangling(chain) => installation
                .problems
                .push(chain_problem(ProblemKind::BrokenSymlink, &chain)),
            Chain::Loop(chain) => installation
                .problems
                .push(chain_problem(ProblemKind::SymlinkLoop, &chain)),
        }
    }
    let mut real_files: Vec<PathBuf> = groups.keys().map(|(_, real)| real.clone()).collect();
    real_files.sort();
    real_files.dedup();
    let binaries = read_all(&real_files);
    for ((placement, real), entries) in groups {
        let read = binaries.get(&real);
        if let Some(installation) = installations.get_mut(&placement) {
            installation.libraries.push(library(entries, real, read));
        }
    }
    let mut installations: Vec<Installation> = installations.into_values().collect();
    for installation in &mut installations {
        apply_versions(installation);
        mark_foreign(installation);
        installation.sources.sort();
        installation.problems.sort_by(|a, b| a.path.cmp(&b.path));
        installation
            .libraries
            .sort_by(|a, b| (&a.name, &a.path).cmp(&(&b.name, &b.path)));
    }
    problems.sort_by(|a, b| a.path.cmp(&b.path));
    ScanReport {
        schema: SCAN_SCHEMA.to_string(),
        host: host_info(host),
        searched,
        installations,
        problems,
    }
}

/// The installation each directory of found libraries belongs to.
fn place_directories(found: &[Found], top: &Path) -> HashMap<PathBuf, layout::Placement> {
    let mut components: BTreeMap<&Path, Vec<String>> = BTreeMap::new();
    for f in found {
        let name = f
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(catalog::classify);
        if let (Some(dir), Some(name)) = (f.path.parent(), name) {
            components.entry(dir).or_default().push(name.component);
        }
    }
    components
        .into_iter()
        .map(|(dir, names)| {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            (dir.to_path_buf(), layout::place(dir, &names, top))
        })
        .collect()
}

fn empty_installation(placement: &layout::Placement) -> Installation {
    Installation {
        root: placement.root.clone(),
        layout: placement.layout,
        cuda_version: None,
        driver_version: None,
        sources: Vec::new(),
        libraries: Vec::new(),
        problems: Vec::new(),
        platforms: Vec::new(),
    }
}

/// A library file's facts: a shared object's or a DLL's.
enum Binary {
    Elf(ElfInfo),
    Pe(PeInfo),
}

/// Why a library file could not be read.
enum ReadError {
    Elf(ElfError),
    Pe(PeError),
}

/// Reads a library file: a DLL (by its name) as PE, anything else as ELF.
fn read_binary(path: &Path) -> Result<Binary, ReadError> {
    let dll = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("dll"));
    if dll {
        pe::read_path(path).map(Binary::Pe).map_err(ReadError::Pe)
    } else {
        elf::read_path(path)
            .map(Binary::Elf)
            .map_err(ReadError::Elf)
    }
}

/// Reads every file's facts, in parallel across the host's cores.
fn read_all(files: &[PathBuf]) -> HashMap<PathBuf, Result<Binary, ReadError>> {
    let next = AtomicUsize::new(0);
    let results = Mutex::new(HashMap::with_capacity(files.len()));
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(files.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let at = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = files.get(at) else { break };
                let read = read_binary(path);
                if let Ok(mut results) = results.lock() {
                    results.insert(path.clone(), read);
                }
            });
        }
    });
    results.into_inner().unwrap_or_default()
}

/// One library from the directory entries that name the same file.
fn library(
    entries: Vec<Entry>,
    real: PathBuf,
    read: Option<&Result<Binary, ReadError>>,
) -> Library {
    let soname = match read {
        Some(Ok(Binary::Elf(info))) => info.soname.clone(),
        _ => None,
    };
    let primary = entries
        .iter()
        .position(|e| {
            soname.is_some()
                && e.found.path.file_name().and_then(|n| n.to_str()) == soname.as_deref()
        })
        .or_else(|| {
            entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.found.path.as_os_str().len())
                .map(|(i, _)| i)
        })
        .unwrap_or(0);
    let name_of = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .and_then(catalog::classify)
    };
    let named = name_of(&real).or_else(|| name_of(&entries[primary].found.path));
    let mut library = Library {
        name: named
            .as_ref()
            .map(|n| n.component.clone())
            .unwrap_or_default(),
        soname,
        path: entries[primary].found.path.clone(),
        symlink_chain: entries[primary].chain.clone(),
        aliases: entries
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != primary)
            .map(|(_, e)| e.found.path.clone())
            .collect(),
        size: std::fs::metadata(&real).map(|m| m.len()).unwrap_or(0),
        real_path: real,
        ..Library::default()
    };
    if let Some(named) = named.filter(|n| !n.version.is_empty()) {
        library.version = Some(named.version);
        library.version_source = Some(VersionSource::FileName);
    }
    match read {
        Some(Ok(Binary::Elf(info))) => fill_elf(&mut library, info),
        Some(Ok(Binary::Pe(info))) => fill_pe(&mut library, info),
        Some(Err(ReadError::Elf(e))) => {
            let problem = elf_problem(&library.real_path, e);
            let problem = named_as_found(problem, &library, matches!(e, ElfError::Refused(_)));
            library.problems.push(problem);
        }
        Some(Err(ReadError::Pe(e))) => {
            let problem = pe_problem(&library.real_path, e);
            let problem = named_as_found(problem, &library, matches!(e, PeError::Refused(_)));
            library.problems.push(problem);
        }
        None => {}
    }
    library
}

/// A problem with what a library file leads to, named by the file as found when the reader
/// refused it (a `libcublas.so.12` linked to `/dev/zero`), so its owner can find it.
fn named_as_found(problem: Problem, library: &Library, refused: bool) -> Problem {
    if !refused || library.path == library.real_path {
        return problem;
    }
    Problem {
        path: library.path.clone(),
        message: format!(
            "it leads to {}: {}",
            library.real_path.display(),
            problem.message
        ),
        ..problem
    }
}

/// One ELF file read as a library, wherever it is (a program given to `doctor --program`):
/// named by the catalog when it knows the name, else by its file name.
pub fn read_elf_file(path: &Path) -> Result<Library, Problem> {
    let info = elf::read_path(path).map_err(|e| elf_problem(path, &e))?;
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut library = Library {
        name: catalog::classify(&file).map_or_else(|| file.clone(), |n| n.component),
        soname: info.soname.clone(),
        path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
        real_path: crate::hostfs::real_path(path).unwrap_or_else(|_| path.to_path_buf()),
        size: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        ..Library::default()
    };
    fill_elf(&mut library, &info);
    Ok(library)
}

fn fill_elf(library: &mut Library, info: &ElfInfo) {
    library.elf_class = Some(info.class.clone());
    library.machine = Some(info.machine.clone());
    library.needed = info.needed.clone();
    library.rpath = info.rpath.clone();
    library.runpath = info.runpath.clone();
    library.version_needs = info.version_needs.clone();
    library.version_defs = info.version_defs.clone();
    library.dlopen_deps = info.dlopen_names.clone();
    library.sass = info.sass.clone();
    library.ptx = info.ptx.clone();
    library.kernel_free = info.kernel_free;
    library.built_for = info.built_for.clone();
    fatbin_problem(library, info.fatbin_problem.as_deref());
}

fn fill_pe(library: &mut Library, info: &PeInfo) {
    library.machine = Some(info.machine.clone());
    library.needed = info.imports.clone();
    library.dlopen_deps = info.runtime_names.clone();
    library.sass = info.sass.clone();
    library.ptx = info.ptx.clone();
    library.kernel_free = info.kernel_free;
    // The version resource names the release (11.8.89) where the file name has only the ABI
    // (cudart64_110.dll); a version with fewer parts says less.
    // CUPTI's reads `2022.3.0.0 Build (0)`: the dotted numbers are the version.
    let release = info.product_version.as_deref().map(|v| {
        v.split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .next()
            .unwrap_or_default()
            .trim_end_matches('.')
    });
    if let Some(version) = release.filter(|v| v.split('.').count() >= 3) {
        library.version = Some(version.to_owned());
        library.version_source = Some(VersionSource::VersionResource);
    }
    library.pe = Some(PeFacts {
        class: info.class.clone(),
        delay_imports: info.delay_imports.clone(),
        exports: info.exports,
        file_version: info.file_version.clone(),
        product_version: info.product_version.clone(),
    });
    fatbin_problem(library, info.fatbin_problem.as_deref());
}

/// A fatbinary that could not be read to its end is a problem of the library's.
fn fatbin_problem(library: &mut Library, problem: Option<&str>) {
    if let Some(problem) = problem {
        library.problems.push(Problem {
            kind: ProblemKind::MalformedFatbin,
            path: library.real_path.clone(),
            message: format!(
                "GPU code listing is incomplete ({problem}); the SASS/PTX lists hold what was read before it; reinstall the package it came from"
            ),
        });
    }
}

/// A file that could not be read: what went wrong, then what to do.
fn read_problem(
    path: &Path,
    kind: ProblemKind,
    error: &dyn std::fmt::Display,
    fix: &str,
) -> Problem {
    Problem {
        kind,
        path: path.to_path_buf(),
        message: format!("{error}; {fix}"),
    }
}

/// The fix for a file named like a library that is no file at all (a FIFO, a device) or far
/// larger than any library (a sparse file).
const NOT_A_LIBRARY: &str =
    "no library is a FIFO, a device or this large: ask its owner to remove it";

fn pe_problem(path: &Path, e: &PeError) -> Problem {
    let (kind, fix) = match e {
        PeError::Io { .. } => (ProblemKind::Unreadable, "check the file's permissions"),
        PeError::Refused(why) => (ProblemKind::of_read_error(why), NOT_A_LIBRARY),
        PeError::NotPe => (
            ProblemKind::NotPe,
            "a file named like a DLL is not one; remove or rename it",
        ),
        PeError::Truncated(_) => (
            ProblemKind::Truncated,
            "the file is cut short; reinstall the package it came from",
        ),
        PeError::Malformed(_) => (
            ProblemKind::MalformedPe,
            "the file is damaged; reinstall the package it came from",
        ),
    };
    read_problem(path, kind, e, fix)
}

fn elf_problem(path: &Path, e: &ElfError) -> Problem {
    let (kind, fix) = match e {
        ElfError::Io { .. } => (ProblemKind::Unreadable, "check the file's permissions"),
        ElfError::Refused(why) => (ProblemKind::of_read_error(why), NOT_A_LIBRARY),
        ElfError::NotElf => (
            ProblemKind::NotElf,
            "a file named like a library is not one; remove or rename it",
        ),
        ElfError::Truncated(_) => (
            ProblemKind::Truncated,
            "the file is cut short; reinstall the package it came from",
        ),
        ElfError::Malformed(_) => (
            ProblemKind::MalformedElf,
            "the file is damaged; reinstall the package it came from",
        ),
    };
    read_problem(path, kind, e, fix)
}

fn chain_problem(kind: ProblemKind, chain: &[PathBuf]) -> Problem {
    let shown: Vec<String> = chain.iter().map(|p| p.display().to_string()).collect();
    let message = match kind {
        ProblemKind::SymlinkLoop => {
            format!("symlinks go round: {}; remove one link", shown.join(" -> "))
        }
        _ => format!(
            "symlink points at nothing: {}; reinstall or remove the link",
            shown.join(" -> ")
        ),
    };
    Problem {
        kind,
        path: chain.first().cloned().unwrap_or_default(),
        message,
    }
}

/// Fills versions from the layout's metadata, the installation's CUDA or driver version, and
/// the platforms its packages say they were built for.
fn apply_versions(installation: &mut Installation) {
    let meta = match installation.layout {
        Layout::Toolkit => metadata::toolkit(&installation.root),
        Layout::Conda => metadata::conda(&installation.root),
        Layout::Pip => metadata::wheels(&installation.root),
        _ => metadata::Metadata::default(),
    };
    for library in &mut installation.libraries {
        let specific = library
            .version
            .as_deref()
            .is_some_and(|v| v.split('.').count() >= 3);
        if specific {
            continue;
        }
        let from_file = std::iter::once(&library.path)
            .chain(&library.symlink_chain)
            .chain(&library.aliases)
            .find_map(|p| meta.by_file.get(p));
        let from_component = catalog::toolkit_component_key(&library.name)
            .and_then(|key| meta.by_component.get(key));
        if let Some(version) = from_file.or(from_component) {
            library.version = Some(version.clone());
            library.version_source = meta.source;
        }
    }
    let cudart = installation
        .libraries
        .iter()
        .find(|l| l.name == "cudart")
        .and_then(|l| l.version.as_deref());
    installation.cuda_version = meta
        .cuda_version
        .as_deref()
        .or(cudart.filter(|v| v.contains('.')))
        .or_else(|| toolkit_dir_version(&installation.root))
        .map(layout::major_minor);
    if installation.layout == Layout::Driver {
        installation.driver_version = installation
            .libraries
            .iter()
            .find(|l| l.name == "cuda")
            .and_then(|l| l.version.clone());
    }
    installation.problems.extend(meta.problems);
    installation.platforms = meta.platforms;
}

/// Libraries built for another machine are a problem of their installation, one for all.
fn mark_foreign(installation: &mut Installation) {
    if let Some(foreign) = installation.foreign() {
        let problem = Problem {
            kind: ProblemKind::ForeignArchitecture,
            path: installation.root.clone(),
            message: foreign.describe(),
        };
        installation.problems.push(problem);
    }
}

/// The version in a toolkit directory's name (`cuda-12.9`).
fn toolkit_dir_version(root: &Path) -> Option<&str> {
    let name = root.file_name()?.to_str()?;
    name.strip_prefix("cuda-").or_else(|| {
        // Windows: `CUDA/v11.8`.
        name.strip_prefix('v')
            .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// The host's name and this stackbench: below a sysroot the name the tree holds (its
/// `/proc/sys/kernel/hostname` from a support bundle, else `/etc/hostname`).
fn host_info(host: &Host) -> HostInfo {
    let hostname = ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|file| host.read(file))
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_string())
        .find(|name| !name.is_empty());
    HostInfo {
        hostname: hostname.unwrap_or_default(),
        os: std::env::consts::OS.to_string(),
        arch: std::env::consts::ARCH.to_string(),
        stackbench_version: env!("CARGO_PKG_VERSION").to_string(),
        boot_id: host
            .read("/proc/sys/kernel/random/boot_id")
            .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_string())
            .filter(|id| !id.is_empty()),
    }
}
