//! Can this host build CUDA code: for every toolkit a build might take (an installation with,
//! or meant to have, a compiler; one the environment names), what stops it compiling or
//! linking, and, for a build run under `doctor --`, which of those its own output shows.

use super::finding::{Cause, Finding, Severity};
use super::Context;
use crate::command::CommandReport;
use crate::toolchain::failure::{self, Missed};
use crate::toolchain::toolkit::Toolkit;
use crate::toolchain::{BuildFacts, WHEELS_THAT_COMPILE};

pub fn check(ctx: &Context) -> Vec<Finding> {
    let Some(facts) = ctx.build else {
        return Vec::new();
    };
    facts
        .toolkits
        .iter()
        .flat_map(|t| toolkit_findings(facts, t))
        .collect()
}

/// What stops one toolkit. A toolkit the scan found without nvcc is only a finding when a
/// compiler was evidently wanted there (an nvcc wheel without nvcc, a variable naming it);
/// a runtime-only install is normal and only the table says it cannot compile.
fn toolkit_findings(facts: &BuildFacts, toolkit: &Toolkit) -> Vec<Finding> {
    let mut findings = Vec::new();
    let root = toolkit.root.display().to_string();
    let named: Vec<&String> = toolkit.named_by.iter().filter(|n| *n != "scan").collect();
    let elsewhere = instead(facts, toolkit);
    for var in &named {
        let var = var.as_str();
        let problem = match toolkit.exists {
            false => format!("{var} is {root}, and nothing is there"),
            true if toolkit.nvcc.is_none() => format!(
                "{var} is {root}, a directory without bin/nvcc (a runtime or libraries at most, no compiler)"
            ),
            true => continue,
        };
        let reads = match var {
            "CUDA_HOME" => "PyTorch's C++/CUDA extensions, CuPy and most builds",
            "CUDA_ROOT" => "builds that read it (PyCUDA's CUDA_ROOT is a siteconf.py setting, not this variable)",
            "CUDA_PATH" => "CMake's FindCUDAToolkit and Windows-style builds",
            "CUDACXX" => "CMake (the CUDA compiler)",
            _ => "builds that look for nvcc",
        };
        findings.push(
            Finding::new(
                Severity::Warning,
                Cause::CudaHomeInvalid,
                format!("{problem}: {reads} will fail to find nvcc or cuda.h"),
                match &elsewhere {
                    Some(other) => {
                        format!("export {var}={}   (it can compile)", value_for(var, other))
                    }
                    None => format!(
                        "install a CUDA toolkit with nvcc and point {var} at it, or unset {var}"
                    ),
                },
            )
            .installation(toolkit.root.clone())
            .evidence(vec![format!("{var}={root}"), facts.summary(toolkit)]),
        );
    }
    if let (None, Some(ptxas)) = (&toolkit.nvcc, &toolkit.ptxas_only) {
        let wheels = match toolkit.nvcc_wheels.is_empty() {
            true => "the toolkit".to_string(),
            false => toolkit.nvcc_wheels.join(", "),
        };
        findings.push(
            Finding::new(
                Severity::Warning,
                Cause::NoCompiler,
                format!("{wheels} in {root} ships ptxas but no nvcc: nothing here can compile CUDA C++ (pip's CUDA 12 nvcc wheel holds ptxas, the crt headers and libnvvm only)"),
                match &elsewhere {
                    Some(other) => format!("use the toolkit at {} (it has nvcc), or `{WHEELS_THAT_COMPILE}` (CUDA 13's wheels ship bin/nvcc)", other.root.display()),
                    None => format!("`{WHEELS_THAT_COMPILE}` (CUDA 13's wheels ship bin/nvcc), or install NVIDIA's toolkit (`apt install cuda-nvcc-12-9` or the runfile)"),
                },
            )
            .installation(toolkit.root.clone())
            .evidence(vec![format!("{}: present", ptxas.display()), "bin/nvcc: absent".into()]),
        );
    }
    let Some(nvcc) = &toolkit.nvcc else {
        return findings;
    };
    let nvcc_line = format!(
        "{}: nvcc {} ({})",
        nvcc.display(),
        toolkit.nvcc_version.as_deref().unwrap_or("?"),
        toolkit
            .nvcc_version_source
            .as_deref()
            .unwrap_or("version not read")
    );
    match (&toolkit.include_dir, toolkit.version_mismatch()) {
        (None, _) => findings.push(
            Finding::new(
                Severity::Warning,
                Cause::NoHeaders,
                format!("the toolkit at {root} has nvcc but no cuda.h: builds fail with \"cuda.h: No such file or directory\""),
                format!(
                    "install the CUDA {} runtime headers beside it (`pip install nvidia-cuda-runtime` for CUDA 13 wheels, `apt install cuda-cudart-dev-X-Y` for a packaged toolkit)",
                    toolkit.nvcc_version.as_deref().unwrap_or("")
                ),
            )
            .installation(toolkit.root.clone())
            .evidence(vec![nvcc_line.clone()]),
        ),
        (Some(include), Some(mismatch)) => findings.push(
            Finding::new(
                Severity::Warning,
                Cause::HeadersMismatch,
                format!("the toolkit at {root} mixes CUDA versions: {mismatch}; code compiled against these headers may call what its libraries lack"),
                format!(
                    "install the headers of the same CUDA version as nvcc ({}), e.g. the matching nvidia-cuda-runtime wheel or cuda-cudart-dev package",
                    toolkit.nvcc_version.as_deref().unwrap_or("?")
                ),
            )
            .installation(toolkit.root.clone())
            .evidence(vec![
                nvcc_line.clone(),
                format!(
                    "{}/cuda.h: CUDA_VERSION {}",
                    include.display(),
                    toolkit.header_version.as_deref().unwrap_or("?")
                ),
            ]),
        ),
        _ => {}
    }
    findings.extend(nvvm_findings(toolkit, &nvcc_line));
    findings.extend(probe_finding(facts, toolkit, &nvcc_line));
    if facts.libcuda_for(toolkit).is_none() {
        findings.push(
            Finding::new(
                Severity::Warning,
                Cause::NoLinkStub,
                format!("nothing for the toolkit at {root} to link -lcuda against (no stubs/libcuda.so, no libcuda.so in the linker's directories): builds that use the driver API, PyCUDA among them, fail with \"cannot find -lcuda\""),
                "install the driver's development link (`apt install libcuda1`'s `libcuda.so`, or NVIDIA's driver) or a toolkit with lib64/stubs/libcuda.so (`apt install cuda-driver-dev-X-Y`), then build with LIBRARY_PATH=<that directory>".into(),
            )
            .installation(toolkit.root.clone())
            .evidence(vec![nvcc_line.clone()]),
        );
    }
    if let (Some(compiler), Some(limits)) = (&facts.host_compiler, &toolkit.host_limits) {
        if let Some(why) = limits.refuses(compiler.kind, compiler.major) {
            findings.push(
                Finding::new(
                    Severity::Warning,
                    Cause::HostCompilerUnsupported,
                    format!("nvcc of {root} refuses the host compiler: {why} (\"unsupported GNU version!\" at every compile)"),
                    format!("install a host compiler it accepts ({}) and name it: export CUDAHOSTCXX=/usr/bin/g++-N NVCC_CCBIN=/usr/bin/g++-N (or nvcc -ccbin g++-N)", limits.describe()),
                )
                .installation(toolkit.root.clone())
                .evidence(vec![nvcc_line, crate::toolchain::compiler::describe(compiler)]),
            );
        }
    }
    findings
}

/// nvcc without its cicc (where its `nvcc.profile` puts it), or with the cicc of a newer
/// release: every compile fails, in cicc or in ptxas. The fix pins `nvidia-nvvm` to nvcc's release, which nvcc's wheel does not.
fn nvvm_findings(toolkit: &Toolkit, nvcc_line: &str) -> Option<Finding> {
    let root = toolkit.root.display();
    let release = toolkit.nvcc_version.as_deref().unwrap_or("?");
    let pip = !toolkit.nvcc_wheels.is_empty();
    let pin = toolkit
        .nvvm_pin()
        .unwrap_or_else(|| "pip install nvidia-nvvm".into());
    let mut evidence = vec![nvcc_line.to_owned()];
    evidence.extend(probe_failure(toolkit).map(|f| format!("probe {}", f.describe())));
    let (cause, message, fix) = match (&toolkit.cicc_missing, toolkit.nvvm_newer_than_nvcc()) {
        (Some(missing), _) => {
            let place = missing.display();
            evidence.insert(1, format!("{place} (nvcc.profile's cicc): absent"));
            (
                Cause::NoNvvm,
                format!("nvcc {release} in {root} has no cicc (nvvm/bin/cicc), which it runs for every kernel: each compile stops with \"cicc: not found\""),
                match pip {
                    true => format!("{pin}   (the nvvm of nvcc's own release: nvcc's wheel does not pin it, and a newer one fails in ptxas)"),
                    false => format!("reinstall the toolkit's nvvm component of CUDA {release} (`apt install cuda-nvvm-X-Y`, or NVIDIA's runfile)"),
                },
            )
        }
        (None, Some(newer)) => (
            Cause::NvvmMismatch,
            format!("in {root}, {newer}: each compile fails in ptxas"),
            format!("{pin}   (the nvvm of nvcc's own release), or move nvcc, nvidia-cuda-crt and nvidia-cuda-runtime to nvvm's release together"),
        ),
        (None, None) => return None,
    };
    Some(
        Finding::new(Severity::Warning, cause, message, fix)
            .installation(toolkit.root.clone())
            .evidence(evidence),
    )
}

/// The probe's failing step, when `doctor --build` ran it and it failed.
fn probe_failure(toolkit: &Toolkit) -> Option<&crate::toolchain::probe::StepFailure> {
    toolkit.probe.as_ref()?.failure.as_ref()
}

/// A probe that failed for a reason the files did not show (they showed nothing missing, no
/// compiler refused, something to link against), quoting its step.
fn probe_finding(facts: &BuildFacts, toolkit: &Toolkit, nvcc_line: &str) -> Option<Finding> {
    let failure = probe_failure(toolkit)?;
    let explained = match failure.step.as_str() {
        "compile" => {
            !toolkit.missing().is_empty()
                || facts.host_compiler.is_none()
                || facts.host_compiler_refused(toolkit).is_some()
        }
        _ => facts.libcuda_for(toolkit).is_none(),
    };
    if explained {
        return None;
    }
    let fix = match failure::missing_header(&failure.line) {
        Some(header) => format!(
            "install {header}'s package beside nvcc, of nvcc's release: `pip install {}` (CUDA 13 wheels) or the toolkit's matching component",
            failure::header_package(header)
        ),
        None => "reinstall nvcc, its nvvm (cicc) and the runtime headers of one CUDA release, then run `doctor --build` again".into(),
    };
    Some(
        Finding::new(
            Severity::Warning,
            Cause::BuildProbeFailed,
            format!(
                "the toolkit at {} could not {} a probe: {}",
                toolkit.root.display(),
                failure.step,
                failure.describe()
            ),
            fix,
        )
        .installation(toolkit.root.clone())
        .evidence(vec![nvcc_line.to_owned(), facts.summary(toolkit)]),
    )
}

/// Another toolkit to point a build at, when there is one.
fn instead<'a>(facts: &'a BuildFacts, toolkit: &Toolkit) -> Option<&'a Toolkit> {
    facts.best().filter(|b| b.root != toolkit.root)
}

/// The value a variable takes to name `toolkit`: its root, or its nvcc for `CUDACXX`.
fn value_for(var: &str, toolkit: &Toolkit) -> String {
    match (var, &toolkit.nvcc) {
        ("CUDACXX", Some(nvcc)) => nvcc.display().to_string(),
        _ => toolkit
            .nvcc
            .as_ref()
            .and_then(|n| n.parent()?.parent().map(|r| r.display().to_string()))
            .unwrap_or_else(|| toolkit.root.display().to_string()),
    }
}

/// The findings a build's own output shows: each part it missed, with the toolkit it used (from
/// its compiler lines) and the one it should use, and what to set so the build takes it.
pub fn explain_failure(ctx: &Context, run: &CommandReport) -> Vec<Finding> {
    let failed = run.exit_status.is_some_and(|s| s != 0) || run.timed_out || run.signal.is_some();
    let missed = failure::missed(&run.error_lines);
    if !failed || missed.is_empty() {
        return Vec::new();
    }
    let known: Vec<std::path::PathBuf> = ctx
        .build
        .iter()
        .flat_map(|b| &b.toolkits)
        .filter_map(|t| t.include_dir.clone())
        .collect();
    let used = failure::toolkit_used(&run.include_dirs, &known);
    let target = ctx.build.and_then(|facts| {
        let best = facts.best()?;
        let finds = failure::finds_toolkit_by(&run.command, &run.error_lines);
        Some(point_at(facts, best, finds))
    });
    let mut evidence = Vec::new();
    if let Some(used) = &used {
        evidence.push(format!(
            "the build's compiler lines took headers from {}/include",
            used.display()
        ));
    }
    if !run.programs.is_empty() {
        let nvcc = run.programs.iter().any(|p| p.ends_with("nvcc"));
        evidence.push(format!(
            "programs the build ran: {}{}",
            run.programs.join(", "),
            if nvcc { "" } else { " (never nvcc)" }
        ));
    }
    let used_text = used
        .as_ref()
        .map(|u| format!(" in {}", u.display()))
        .unwrap_or_default();
    let should = match (&target, &used) {
        (Some((_, root)), Some(u)) if u.display().to_string() == *root => String::new(),
        (Some((_, root)), _) => format!("; the toolkit to use is {root}"),
        (None, _) => String::new(),
    };
    missed
        .into_iter()
        .map(|(what, line)| {
            let header = failure::missing_header(&line);
            let (cause, part) = match what {
                Missed::Compiler => (Cause::NoCompiler, "found no nvcc".to_string()),
                Missed::Headers => (
                    Cause::NoHeaders,
                    format!("found no {}", header.unwrap_or("CUDA header")),
                ),
                Missed::LinkStub => (Cause::NoLinkStub, "found nothing to link -lcuda against".into()),
                Missed::HostCompiler => (Cause::HostCompilerUnsupported, "had its host compiler refused by nvcc".into()),
                Missed::CudaHome => (Cause::CudaHomeInvalid, "was given no toolkit (CUDA_HOME)".into()),
            };
            let fix = match (what, header, &target) {
                (Missed::HostCompiler, _, _) => {
                    "install a host compiler the toolkit's crt/host_config.h accepts and export CUDAHOSTCXX=/usr/bin/g++-N NVCC_CCBIN=/usr/bin/g++-N".to_string()
                }
                (Missed::Headers, Some(header), _) if header != "cuda.h" => {
                    let place = used.as_ref().map(|u| format!(" into {}", u.display())).unwrap_or_default();
                    format!("install {header}'s package{place}: `pip install {}` (CUDA 13 wheels; the same version as nvcc) or the toolkit's matching component", failure::header_package(header))
                }
                (Missed::LinkStub, _, _) => {
                    "install the driver's `libcuda.so` or a toolkit's lib64/stubs/libcuda.so and build with LIBRARY_PATH=<its directory> (a GPU host's driver package provides it)".to_string()
                }
                (_, _, Some((fix, _))) => fix.clone(),
                (_, _, None) => format!("install a CUDA toolkit with nvcc and headers (`{WHEELS_THAT_COMPILE} nvidia-cuda-profiler-api==13.0.85 nvidia-curand`, or NVIDIA's toolkit), then export CUDA_HOME=<its root> PATH=<its root>/bin:$PATH"),
            };
            let mut lines = vec![line];
            lines.extend(evidence.iter().cloned());
            Finding::new(
                Severity::Error,
                cause,
                format!("the build `{}` {part}{used_text}{should}", run.command.join(" ")),
                fix,
            )
            .evidence(lines)
        })
        .collect()
}

/// The fix that points a build at `best` the way the build finds its toolkit, with what `best`
/// still lacks; and `best`'s root.
fn point_at(facts: &BuildFacts, best: &Toolkit, finds: failure::Finds) -> (String, String) {
    let root = value_for("CUDA_HOME", best);
    let set = match finds {
        failure::Finds::NvccOnPath => format!("export PATH={root}/bin:$PATH and build again (PyCUDA takes its CUDA root from the nvcc on PATH, not from a CUDA_ROOT variable)"),
        failure::Finds::CudaHome => format!("export CUDA_HOME={root} PATH={root}/bin:$PATH and build again"),
    };
    let mut lacks: Vec<String> = best
        .missing_headers
        .iter()
        .map(|h| format!("{h} (`pip install {}`)", failure::header_package(h)))
        .collect();
    // PyCUDA's build also compiles its cuRAND wrapper, against curand.h.
    let curand = (best.include_dir.as_ref()).is_some_and(|d| d.join("curand.h").is_file());
    if finds == failure::Finds::NvccOnPath && !curand {
        lacks.push(format!(
            "the cuRAND headers PyCUDA's build includes (`pip install {}`)",
            failure::header_package("curand.h")
        ));
    }
    if facts.libcuda_for(best).is_none() {
        lacks.push(
            "a libcuda.so to link -lcuda against (the driver's, or a toolkit's stubs/libcuda.so)"
                .into(),
        );
    }
    let lacks = match lacks.is_empty() {
        true => String::new(),
        false => format!("; it still lacks {}", lacks.join(" and ")),
    };
    (format!("{set}{lacks}   ({})", facts.summary(best)), root)
}
