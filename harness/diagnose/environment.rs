//! The environment a build or a program starts with: variables that name different toolkits,
//! several nvcc on `PATH`, CUDA libraries of different majors on `LD_LIBRARY_PATH`, and a
//! `CUDA_VISIBLE_DEVICES` that hides every GPU. Each is a finding only when the variable is set
//! and wrong: unset variables are never an alarm.

use super::finding::{Cause, Finding, Severity};
use super::Context;
use crate::model::Layout;
use std::path::PathBuf;

pub fn check(ctx: &Context) -> Vec<Finding> {
    let mut findings = Vec::new();
    findings.extend(conflicting_toolkits(ctx));
    findings.extend(several_nvcc(ctx));
    findings.extend(mixed_majors(ctx));
    findings.extend(hidden_devices(ctx));
    findings
}

/// `CUDA_HOME`, `CUDA_PATH`, `CUDA_ROOT`, `CUDACXX` and the `nvcc` on `PATH` naming different
/// toolkits: each build takes another.
fn conflicting_toolkits(ctx: &Context) -> Option<Finding> {
    let facts = ctx.build?;
    let named: Vec<(String, &crate::toolchain::toolkit::Toolkit)> = facts
        .toolkits
        .iter()
        .filter_map(|t| {
            let names: Vec<&str> = t
                .named_by
                .iter()
                .map(String::as_str)
                .filter(|n| *n != "scan")
                .collect();
            (!names.is_empty()).then(|| (names.join(", "), t))
        })
        .collect();
    if named.len() < 2 {
        return None;
    }
    let said: Vec<String> = named
        .iter()
        .map(|(names, t)| {
            let nvcc = t
                .nvcc_version
                .as_deref()
                .map(|v| format!("nvcc {v}"))
                .unwrap_or_else(|| "no nvcc".into());
            format!("{names}: {} ({nvcc})", t.root.display())
        })
        .collect();
    let one = facts.best().unwrap_or(named[0].1);
    Some(
        Finding::new(
            Severity::Warning,
            Cause::CudaEnvConflict,
            format!(
                "the environment names {} different toolkits: {}; each build takes the one its tool reads, so one project's objects can come from two CUDA versions",
                named.len(),
                said.join("; ")
            ),
            format!(
                "name one toolkit everywhere: export CUDA_HOME={r} CUDA_PATH={r} CUDA_ROOT={r} PATH={r}/bin:$PATH (and CUDACXX={r}/bin/nvcc where CMake reads it)",
                r = one.root.display()
            ),
        )
        .evidence(said),
    )
}

/// Several different `nvcc` on `PATH`: the first wins.
fn several_nvcc(ctx: &Context) -> Option<Finding> {
    let host = ctx.host?;
    let path = host.env.get("PATH")?;
    let mut found: Vec<(PathBuf, PathBuf)> = Vec::new();
    for dir in std::env::split_paths(path).filter(|d| d.is_absolute()) {
        let nvcc = host.place(dir.join("nvcc"));
        let Some(real) = host.real(&nvcc).filter(|r| r.is_file()) else {
            continue;
        };
        if !found.iter().any(|(_, r)| *r == real) {
            found.push((dir.join("nvcc"), real));
        }
    }
    if found.len() < 2 {
        return None;
    }
    let said: Vec<String> = found
        .iter()
        .enumerate()
        .map(|(i, (p, _))| {
            let role = if i == 0 { " (wins)" } else { "" };
            format!("{}{role}", p.display())
        })
        .collect();
    Some(
        Finding::new(
            Severity::Warning,
            Cause::SeveralNvccOnPath,
            format!(
                "PATH holds {} different nvcc; every build takes {} whichever toolkit it was meant for",
                found.len(),
                found[0].0.display()
            ),
            "keep one CUDA bin directory on PATH: the one of the toolkit CUDA_HOME names".into(),
        )
        .evidence(said),
    )
}

/// `LD_LIBRARY_PATH` directories holding CUDA libraries of different majors.
fn mixed_majors(ctx: &Context) -> Option<Finding> {
    let mut majors: Vec<(u32, String)> = Vec::new();
    for entry in &ctx.search.ld_library_path {
        let dir = PathBuf::from(entry);
        let real = ctx.search.real(&dir).unwrap_or_else(|| dir.clone());
        let major = ctx
            .scan
            .installations
            .iter()
            .filter(|i| i.layout != Layout::Driver)
            .filter(|i| {
                i.libraries.iter().any(|l| {
                    l.path.parent() == Some(real.as_path())
                        || l.path.parent() == Some(dir.as_path())
                })
            })
            .find_map(|i| super::cuda_of(i).map(|v| v.major));
        if let Some(major) = major {
            if !majors.iter().any(|(m, _)| *m == major) {
                majors.push((major, entry.clone()));
            }
        }
    }
    if majors.len() < 2 {
        return None;
    }
    let said: Vec<String> = majors
        .iter()
        .map(|(m, e)| format!("{e}: CUDA {m}"))
        .collect();
    Some(
        Finding::new(
            Severity::Warning,
            Cause::MixedCudaSearchPath,
            format!(
                "LD_LIBRARY_PATH holds CUDA libraries of {} majors: a program gets each library from the first directory that has its soname, and libraries of two CUDA majors in one process fail in ways that are hard to trace",
                majors.len()
            ),
            format!(
                "keep one CUDA major on LD_LIBRARY_PATH (e.g. only {}), and let each environment find its own libraries",
                majors[0].1
            ),
        )
        .evidence(said),
    )
}

/// `CUDA_VISIBLE_DEVICES` that leaves no GPU: empty, `-1`, a first entry that is neither an
/// index nor a UUID (CUDA stops at the first invalid entry), or only indices beyond the GPUs
/// there are.
fn hidden_devices(ctx: &Context) -> Option<Finding> {
    let value = ctx.host?.env.get("CUDA_VISIBLE_DEVICES")?;
    let entries: Vec<&str> = value.split(',').map(str::trim).collect();
    let first = entries.first().copied().unwrap_or("");
    let valid =
        |e: &str| e.parse::<u32>().is_ok() || e.starts_with("GPU-") || e.starts_with("MIG-");
    let why = if value.trim().is_empty() {
        Some("it is empty".to_string())
    } else if !valid(first) {
        Some(format!("its first entry `{first}` is neither a GPU index nor a UUID, and CUDA stops reading at the first invalid entry"))
    } else {
        let count = ctx.gpu_count?;
        let indices: Vec<u32> = entries
            .iter()
            .map_while(|e| e.parse::<u32>().ok())
            .collect();
        (indices.len() == entries.len() && indices.iter().all(|i| *i as usize >= count))
            .then(|| format!("this host has {count} GPU(s), numbered from 0"))
    }?;
    Some(
        Finding::new(
            Severity::Warning,
            Cause::NoVisibleDevices,
            format!("CUDA_VISIBLE_DEVICES={value} hides every GPU ({why}): CUDA programs see no device (cudaErrorNoDevice, 100)"),
            "unset CUDA_VISIBLE_DEVICES, or list the GPUs to use by index (0,1) or UUID (nvidia-smi -L)".into(),
        )
        .evidence(vec![format!("CUDA_VISIBLE_DEVICES={value}")]),
    )
}
