//! Shadowing: the same soname in several places, and which copy this environment's loader picks.

use super::finding::{Cause, Finding, Severity};
use super::Context;
use crate::model::{Installation, Library};
use crate::resolve::{self, Requester};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

pub fn check(ctx: &Context) -> Vec<Finding> {
    let mut by_soname: BTreeMap<&str, Vec<(&Installation, &Library)>> = BTreeMap::new();
    for installation in &ctx.scan.installations {
        for library in &installation.libraries {
            let host_class = library.elf_class.as_deref() == Some(ctx.search.class.as_str());
            if host_class && !super::driver::is_stub_or_compat(&library.path) {
                if let Some(soname) = library.soname.as_deref() {
                    by_soname
                        .entry(soname)
                        .or_default()
                        .push((installation, library));
                }
            }
        }
    }
    let anywhere = Requester {
        path: PathBuf::from("/"),
        rpath: vec![],
        runpath: vec![],
    };
    let mut findings = Vec::new();
    for (soname, copies) in by_soname {
        let mut reals: Vec<&PathBuf> = copies.iter().map(|(_, l)| &l.real_path).collect();
        reals.sort();
        reals.dedup();
        if reals.len() < 2 {
            continue;
        }
        let winner = resolve::resolve(soname, &anywhere, ctx.search);
        let winner_real = winner.real.clone().or(winner.found.clone());
        let versions: Vec<String> = copies
            .iter()
            .map(|(_, l)| l.version.clone().unwrap_or_default())
            .collect();
        // Hard links of one file (one inode) are the same bytes whatever their metadata says.
        let mut files: Vec<(u64, u64)> = copies
            .iter()
            .filter_map(|(_, l)| {
                std::fs::metadata(&l.real_path)
                    .ok()
                    .map(|m| (m.dev(), m.ino()))
            })
            .collect();
        files.sort();
        files.dedup();
        let differ = files.len() > 1 && versions.iter().any(|v| *v != versions[0]);
        let evidence: Vec<String> = copies
            .iter()
            .map(|(i, l)| {
                let marker = if Some(&l.real_path) == winner_real.as_ref() {
                    "  <- loaded"
                } else {
                    ""
                };
                format!(
                    "{} {} ({} {}){marker}",
                    l.path.display(),
                    l.version.as_deref().unwrap_or("?"),
                    i.layout.name(),
                    i.root.display()
                )
            })
            .collect();
        // Copies only reachable through their own installation's RUNPATH do not compete.
        let Some(path) = &winner_real else { continue };
        let message = format!(
            "{soname} exists in {} places; a program that does not bring its own gets {}",
            reals.len(),
            path.display()
        );
        let fix = "to use another copy, put its directory first: export LD_LIBRARY_PATH=<dir>:$LD_LIBRARY_PATH (or load it by full path)".to_string();
        let severity = if differ {
            Severity::Warning
        } else {
            Severity::Info
        };
        findings.push(
            Finding::new(severity, Cause::Shadowed, message, fix)
                .library(soname, path.clone())
                .candidates(copies.iter().map(|(_, l)| l.path.clone()).collect())
                .evidence(evidence),
        );
    }
    findings
}
