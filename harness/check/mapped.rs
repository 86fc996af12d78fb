//! What stackbench concludes from the objects a combination's worker actually mapped, without
//! loading anything itself: which CUDA library came from which file (and whether from inside the
//! combination), and whether every loaded library has GPU code the device can run
//! (`coverage.kernels`, `combination.isolated`).

use super::combination::{canonical, Combination};
use super::worker::outcome::Outcome;
use crate::catalog;
use crate::compat::{self, ComputeCapability, KernelSupport};
use crate::diagnose::file_name;
use crate::probe::LoadedObject;
use crate::schema::check::{CheckResult, LibraryUse};
use crate::trust::Identity;
use std::path::{Path, PathBuf};

/// A CUDA library the worker mapped (the driver's own libraries left out: their GPU code and
/// their place are the driver's).
struct Mapped<'a> {
    object: &'a LoadedObject,
    component: String,
}

fn cuda_libraries(mapped: &[(String, LoadedObject)]) -> Vec<Mapped<'_>> {
    let mut out: Vec<Mapped> = Vec::new();
    for (_, object) in mapped {
        let named = catalog::classify(&object.name).or_else(|| {
            object
                .path
                .file_name()
                .and_then(|n| catalog::classify(&n.to_string_lossy()))
        });
        let Some(named) = named else { continue };
        if catalog::is_driver_component(&named.component)
            || out.iter().any(|m| m.object.path == object.path)
        {
            continue;
        }
        out.push(Mapped {
            object,
            component: named.component,
        });
    }
    out
}

/// The directories a combination's libraries may come from, canonical.
fn inside_dirs(combination: &Combination) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = combination.dirs.iter().map(|d| canonical(d)).collect();
    let files = combination
        .components
        .iter()
        .map(|c| c.path.as_path())
        .chain(combination.driver.as_deref())
        .chain(combination.nvml.as_deref());
    dirs.extend(files.filter_map(|f| canonical(f).parent().map(Path::to_path_buf)));
    dirs.extend(combination.driver_dir.as_deref().map(canonical));
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Every CUDA library of the combination: those a program resolves (with the version its own
/// API gave, from the `<library>.load` results) and every other one the worker mapped.
pub fn library_uses(
    combination: &Combination,
    mapped: &[(String, LoadedObject)],
    results: &[CheckResult],
) -> Vec<LibraryUse> {
    let inside = inside_dirs(combination);
    let is_inside = |path: &Path| path.parent().is_some_and(|d| inside.iter().any(|i| i == d));
    let libraries = cuda_libraries(mapped);
    let mut uses: Vec<LibraryUse> = combination
        .components
        .iter()
        .map(|file| {
            let real = canonical(&file.path);
            let mapped = libraries
                .iter()
                .find(|m| m.object.path == real)
                .map(|m| m.object.path.clone());
            let version = results
                .iter()
                .find(|r| r.id == format!("{}.load", file.component.stem()))
                .and_then(|r| r.details.get("version"))
                .and_then(|v| v.as_str())
                .map(str::to_owned);
            LibraryUse {
                component: file.component.stem().to_owned(),
                name: file_name(&file.path),
                version,
                resolved: Some(file.path.clone()),
                inside: is_inside(&real),
                mapped,
            }
        })
        .collect();
    for library in &libraries {
        if uses
            .iter()
            .any(|u| u.mapped.as_deref() == Some(library.object.path.as_path()))
        {
            continue;
        }
        let version = catalog::classify(&file_name(&library.object.path))
            .map(|n| n.version)
            .filter(|v| !v.is_empty());
        uses.push(LibraryUse {
            component: library.component.clone(),
            name: library.object.name.clone(),
            version,
            resolved: None,
            mapped: Some(library.object.path.clone()),
            inside: is_inside(&library.object.path),
        });
    }
    uses
}

/// `combination.isolated`: every CUDA library mapped came from the combination's directories.
pub fn isolated(uses: &[LibraryUse]) -> Outcome {
    let mapped = uses.iter().filter(|u| u.mapped.is_some()).count();
    let outside: Vec<String> = uses
        .iter()
        .filter(|u| !u.inside)
        .filter_map(|u| {
            let path = u.mapped.as_ref().or(u.resolved.as_ref())?;
            Some(format!("{} from {}", u.name, path.display()))
        })
        .collect();
    if outside.is_empty() {
        Outcome::pass(format!(
            "all {mapped} CUDA libraries mapped came from the combination's own directories"
        ))
        .detail("mapped", mapped)
    } else {
        Outcome::warn(format!(
            "{} came from outside the combination ({}): another installation shadows it; a \
             program of this combination mixes installations",
            if outside.len() == 1 {
                "one library"
            } else {
                "libraries"
            },
            outside.join(", ")
        ))
        .detail("outside", outside)
    }
}

/// A kernel of stackbench's own that NVRTC compiled (`nvrtc.compile_*`): its source file, the
/// kind of image (`cubin`, `ptx`) and the architecture (`sm_90`, `compute_120`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvrtcImage {
    pub source: String,
    pub image: String,
    pub arch: String,
}

/// The images the `nvrtc.compile_*` checks that passed made, from their details.
pub fn nvrtc_images(checks: &[CheckResult]) -> Vec<NvrtcImage> {
    checks
        .iter()
        .filter(|c| c.id.starts_with("nvrtc.compile_") && c.status.satisfies())
        .filter_map(|c| {
            let text = |key: &str| c.details.get(key)?.as_str().map(str::to_owned);
            Some(NvrtcImage {
                source: text("source").unwrap_or_else(|| c.id["nvrtc.compile_".len()..].into()),
                image: text("image").unwrap_or_else(|| "cubin".into()),
                arch: text("arch")?,
            })
        })
        .collect()
}

/// `coverage.kernels`: every mapped library with GPU code has SASS for `arch`, or PTX the
/// driver can JIT-compile for it (a warning: slow first use); so do stackbench's own kernels,
/// whose `images` NVRTC made as PTX for a device newer than it (the JIT path, a warning too).
/// `read` gives a file's SASS and PTX targets (the ELF reader; a parameter so tests need no
/// files).
pub fn coverage(
    uses: &[LibraryUse],
    arch: Option<ComputeCapability>,
    images: &[NvrtcImage],
    read: impl Fn(&Path) -> Option<(Vec<String>, Vec<String>)>,
) -> Outcome {
    let Some(cc) = arch else {
        return Outcome::skip("no device and no --target: give --target sm_XX to check GPU code");
    };
    let sm = format!("sm_{}{}", cc.major, cc.minor);
    let (mut none, mut jit, mut sass) = (Vec::new(), Vec::new(), Vec::new());
    for library in uses {
        let Some(path) = &library.mapped else {
            continue;
        };
        let Some((sass_targets, ptx_targets)) = read(path) else {
            continue;
        };
        if sass_targets.is_empty() && ptx_targets.is_empty() {
            continue; // host code only (cudart, nvrtc, cupti)
        }
        match compat::kernel_support(cc, &sass_targets, &ptx_targets) {
            KernelSupport::Sass { arch } => sass.push(format!("{}: {arch}", library.name)),
            KernelSupport::PtxJit { from } => jit.push(format!("{} (PTX {from})", library.name)),
            KernelSupport::None => none.push(format!(
                "{} (SASS {}; PTX {})",
                library.name,
                short(&sass_targets),
                short(&ptx_targets)
            )),
        }
    }
    // A CUBIN of our own is SASS for the device by construction (only library code is
    // counted there); PTX is the JIT path, named with the libraries'.
    jit.extend(
        images
            .iter()
            .filter(|i| i.image == "ptx")
            .map(|i| format!("{} (NVRTC's PTX {})", i.source, i.arch)),
    );
    let counted = sass.len() + jit.len() + none.len();
    let outcome = if !none.is_empty() {
        Outcome::fail(format!(
            "no kernels for {sm} in {}: their GPU functions would fail with \
             cudaErrorNoKernelImageForDevice (209); install a build of these libraries that \
             supports compute capability {cc}",
            none.join(", ")
        ))
    } else if !jit.is_empty() {
        Outcome::warn(format!(
            "no SASS for {sm} in {}: the driver JIT-compiles their PTX at first use (slow, and \
             only if the driver understands that PTX version)",
            jit.join(", ")
        ))
    } else if counted == 0 {
        Outcome::skip("no library with GPU code was loaded (the checks that load them did not run)")
    } else {
        Outcome::pass(format!(
            "all {counted} loaded libraries with GPU code have SASS for {sm}"
        ))
    };
    let nvrtc: Vec<String> = images
        .iter()
        .map(|i| format!("{}: {} {}", i.source, i.image, i.arch))
        .collect();
    outcome
        .detail("arch", sm)
        .detail("sass", sass)
        .detail("jit_only", jit)
        .detail("no_kernels", none)
        .detail("nvrtc", nvrtc)
}

/// A target list in short form: `sm_50..sm_90 (9)`, or `-`.
fn short(targets: &[String]) -> String {
    match targets {
        [] => "-".to_owned(),
        [one] => one.clone(),
        [first, .., last] => format!("{first}..{last} ({})", targets.len()),
    }
}

/// Reads the SASS and PTX targets of a library a worker mapped, from its ELF file; none where
/// its GPU code holds no kernel (nothing there to launch on any GPU). The worker names the file,
/// so it is read only if the trust rule lets us or the worker's user (`ran_as`) load it: a
/// worker cannot make us read anything else.
pub fn read_targets(path: &Path, ran_as: Option<&Identity>) -> Option<(Vec<String>, Vec<String>)> {
    let loadable_by = |uid| crate::trust::rule::check(path, false, uid).is_ok();
    if !loadable_by(Identity::current().uid) && !ran_as.is_some_and(|u| loadable_by(u.uid)) {
        return None;
    }
    let elf = crate::elf::read_path(path).ok()?;
    Some(if elf.kernel_free {
        (Vec::new(), Vec::new())
    } else {
        (elf.sass, elf.ptx)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::check::Status;

    fn library(name: &str, inside: bool) -> LibraryUse {
        LibraryUse {
            component: name.into(),
            name: format!("lib{name}.so.12"),
            version: None,
            resolved: None,
            mapped: Some(format!("/x/lib{name}.so.12").into()),
            inside,
        }
    }

    fn targets(list: &str) -> Vec<String> {
        list.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn coverage_verdicts() {
        let uses = [
            library("cublasLt", true),
            library("cudnn_cnn", true),
            library("cudart", true),
        ];
        let read = |sass: &'static str, ptx: &'static str| {
            move |p: &Path| -> Option<(Vec<String>, Vec<String>)> {
                Some(if p.to_string_lossy().contains("cudart") {
                    (vec![], vec![])
                } else {
                    (targets(sass), targets(ptx))
                })
            }
        };
        let h100 = Some(ComputeCapability::new(9, 0));
        let pass = coverage(&uses, h100, &[], read("sm_80 sm_90", "compute_90"));
        assert_eq!(pass.status, Status::Pass, "{}", pass.reason);
        assert_eq!(
            pass.reason,
            "all 2 loaded libraries with GPU code have SASS for sm_90"
        );
        let jit = coverage(
            &uses,
            Some(ComputeCapability::new(10, 0)),
            &[],
            read("sm_80 sm_90", "compute_90"),
        );
        assert_eq!(jit.status, Status::Warn);
        assert!(
            jit.reason.contains("libcublasLt.so.12 (PTX compute_90)"),
            "{}",
            jit.reason
        );
        let none = coverage(&uses, h100, &[], read("sm_50 sm_60 sm_70 sm_80", ""));
        assert_eq!(none.status, Status::Fail);
        assert!(
            none.reason.starts_with(
                "no kernels for sm_90 in libcublasLt.so.12 (SASS sm_50..sm_80 (4); PTX -)"
            ),
            "{}",
            none.reason
        );
        assert_eq!(
            coverage(&uses, None, &[], read("", "")).status,
            Status::Skip
        );
    }

    /// A device newer than the toolkit (the simulated sm_150 with NVRTC 12.9): stackbench's own
    /// kernels run from PTX, which coverage names as the JIT path even when no library with GPU
    /// code was loaded; CUBINs of our own are listed in the details only.
    #[test]
    fn coverage_reports_the_ptx_path_of_our_own_kernels() {
        let image = |source: &str, image: &str, arch: &str| NvrtcImage {
            source: source.into(),
            image: image.into(),
            arch: arch.into(),
        };
        let host_only = [library("cudart", true)];
        let none = |_: &Path| Some((vec![], vec![]));
        let ptx = [
            image("vector_add.cu", "ptx", "compute_121"),
            image("matmul.cu", "ptx", "compute_121"),
        ];
        let sm150 = Some(ComputeCapability::new(15, 0));
        let jit = coverage(&host_only, sm150, &ptx, none);
        assert_eq!(jit.status, Status::Warn, "{}", jit.reason);
        assert!(
            jit.reason.starts_with(
                "no SASS for sm_150 in vector_add.cu (NVRTC's PTX compute_121), matmul.cu \
                 (NVRTC's PTX compute_121): the driver JIT-compiles their PTX"
            ),
            "{}",
            jit.reason
        );
        assert_eq!(
            jit.details["nvrtc"],
            serde_json::json!([
                "vector_add.cu: ptx compute_121",
                "matmul.cu: ptx compute_121"
            ])
        );
        let cubin = [image("vector_add.cu", "cubin", "sm_90")];
        let h100 = Some(ComputeCapability::new(9, 0));
        let own = coverage(&host_only, h100, &cubin, none);
        assert_eq!(own.status, Status::Skip, "{}", own.reason);
        assert_eq!(
            own.details["nvrtc"],
            serde_json::json!(["vector_add.cu: cubin sm_90"])
        );
    }

    #[test]
    fn nvrtc_images_come_from_the_compile_checks_that_passed() {
        let mut ptx = CheckResult::new("nvrtc.compile_vector_add", Status::Pass, "compiled");
        for (key, value) in [
            ("source", "vector_add.cu"),
            ("image", "ptx"),
            ("arch", "compute_120"),
        ] {
            ptx.details.insert(key.into(), value.into());
        }
        let mut old = CheckResult::new("nvrtc.compile_matmul", Status::Pass, "compiled");
        old.details.insert("arch".into(), "sm_90".into());
        let failed = CheckResult::new("nvrtc.compile_matmul", Status::Fail, "no");
        assert_eq!(
            nvrtc_images(&[ptx, old, failed]),
            vec![
                NvrtcImage {
                    source: "vector_add.cu".into(),
                    image: "ptx".into(),
                    arch: "compute_120".into()
                },
                NvrtcImage {
                    source: "matmul".into(),
                    image: "cubin".into(),
                    arch: "sm_90".into()
                },
            ]
        );
    }

    #[test]
    fn isolation_names_what_came_from_outside() {
        let good = isolated(&[library("cudart", true), library("cublas", true)]);
        assert_eq!(good.status, Status::Pass);
        let bad = isolated(&[library("cudart", true), library("cublasLt", false)]);
        assert_eq!(bad.status, Status::Warn);
        assert!(
            bad.reason
                .contains("libcublasLt.so.12 from /x/libcublasLt.so.12"),
            "{}",
            bad.reason
        );
    }

    #[test]
    fn driver_libraries_are_not_the_combinations() {
        let object = |name: &str, path: &str| LoadedObject {
            name: name.into(),
            path: path.into(),
            stage: crate::probe::LoadStage::Dlopen,
            unloaded: false,
        };
        let mapped = vec![
            (
                "driver.library".to_owned(),
                object("libcuda.so.1", "/d/libcuda.so.535.261.03"),
            ),
            (
                "cudart.load".to_owned(),
                object("libcudart.so.12", "/v/libcudart.so.12"),
            ),
            (
                "cudart.load".to_owned(),
                object("libz.so.1", "/lib/libz.so.1"),
            ),
        ];
        let libraries = cuda_libraries(&mapped);
        let names: Vec<&str> = libraries.iter().map(|m| m.component.as_str()).collect();
        assert_eq!(names, ["cudart"]);
    }
}
