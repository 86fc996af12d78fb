//! The node's findings, root cause first: copies that arrive changed before anything (no
//! figure that crossed them means anything); a fabric that is not ready explains the peer access
//! it denies; an inactive NVLink or a slow GPU explains its slow pairs. Each has its evidence
//! and one fix. A node of one GPU, or a PCIe-only node without NVLink, is never told about
//! NVLinks.

use super::outlier::{self, METHOD};
use crate::diagnose::finding::{Cause, Finding, Severity};
use crate::schema::node::{Engine, NodeDevice, NodePair, NodeReport};

/// Every finding of `report`, in the order a person should read them.
pub fn findings(report: &NodeReport) -> Vec<Finding> {
    let fabric = fabric_not_ready(report);
    let mut found = copy_corrupted(report);
    found.extend(fabric.iter().cloned());
    found.extend(nvlink_inactive(report));
    found.extend(peer_access_denied(report, fabric.is_some()));
    let slow = slow_devices(report);
    let slow_indices: Vec<u32> = slow.iter().map(|(index, _)| *index).collect();
    found.extend(slow.into_iter().map(|(_, finding)| finding));
    found.extend(p2p_degraded(report, &slow_indices));
    found
}

/// `GPU 3 (0000:56:00.0)`.
fn gpu(device: &NodeDevice) -> String {
    match &device.pci_bus_id {
        Some(bus) => format!("GPU {} ({bus})", device.index),
        None => format!("GPU {}", device.index),
    }
}

fn gpu_of(report: &NodeReport, index: u32) -> String {
    report
        .device(index)
        .map_or_else(|| format!("GPU {index}"), gpu)
}

/// One finding per route whose copies arrived changed (silent data corruption, the worst a
/// node can do: every result that crossed it is suspect), naming both ends and the first byte
/// that differed, each corrupted copy its evidence.
fn copy_corrupted(report: &NodeReport) -> Vec<Finding> {
    let end =
        |index: Option<u32>| index.map_or_else(|| "the host".to_owned(), |i| gpu_of(report, i));
    let mut routes: Vec<(Option<u32>, Option<u32>)> = Vec::new();
    for copy in report
        .copies
        .iter()
        .filter(|c| c.first_wrong_byte.is_some())
    {
        if !routes.contains(&(copy.src, copy.dst)) {
            routes.push((copy.src, copy.dst));
        }
    }
    routes
        .into_iter()
        .map(|(src, dst)| {
            let copies: Vec<_> = (report.copies.iter())
                .filter(|c| (c.src, c.dst) == (src, dst))
                .filter_map(|c| Some((c, c.first_wrong_byte?)))
                .collect();
            let first = copies.iter().map(|(_, at)| *at).min().unwrap_or_default();
            let evidence = copies
                .iter()
                .map(|(c, at)| {
                    let how = match c.engine {
                        Engine::Ce => "copy engine",
                        Engine::Sm => "SM stores",
                    };
                    let ways = if c.both_ways { "both ways" } else { "one way" };
                    format!("{how}, {ways}: first byte changed at offset {at}")
                })
                .collect();
            Finding::new(
                Severity::Error,
                Cause::CopyCorrupted,
                format!(
                    "data copied from {} to {} arrives changed (first at byte offset {first}): silent corruption on that route, so results that crossed it cannot be trusted",
                    end(src),
                    end(dst)
                ),
                "drain the node and run NVIDIA's field diagnostics on both ends (`dcgmi diag -r 3`); look for uncorrected ECC, row remapping and NVLink CRC/replay errors (`nvidia-smi -q -d ECC,ROW_REMAPPER`, `nvidia-smi nvlink -e`); reseat or replace the GPU, link or riser named".to_owned(),
            )
            .evidence(evidence)
        })
        .collect()
}

/// GPUs whose fabric registration has not completed, or completed with an error.
fn fabric_not_ready(report: &NodeReport) -> Option<Finding> {
    let evidence: Vec<String> = report
        .devices
        .iter()
        .filter_map(|d| {
            let fabric = d.fabric.as_ref()?;
            let ready = fabric.state == "completed" && fabric.status == 0;
            (!ready).then(|| {
                format!(
                    "{}: fabric state {}, status {} (nvmlDeviceGetGpuFabricInfoV)",
                    gpu(d),
                    fabric.state,
                    nvml_status(fabric.status)
                )
            })
        })
        .collect();
    if evidence.is_empty() {
        return None;
    }
    Some(
        Finding::new(
            Severity::Error,
            Cause::FabricNotReady,
            format!(
                "the GPU fabric is not ready on {} of {} GPUs: until the Fabric Manager has registered every GPU with the NVSwitches, peer access over NVLink is refused and multi-GPU jobs fail or fall back to slow paths",
                evidence.len(),
                report.devices.len()
            ),
            "make sure nvidia-fabricmanager of exactly the driver's version runs (`systemctl status nvidia-fabricmanager`; `stackbench doctor` checks its install), then wait for `nvidia-smi -q` to show Fabric State Completed and Status Success on every GPU; restart it if a state stays In Progress".into(),
        )
        .evidence(evidence),
    )
}

/// NVML's return code by name, for the statuses a fabric reports.
fn nvml_status(status: i32) -> String {
    match status {
        0 => "NVML_SUCCESS".into(),
        23 => "NVML_ERROR_INSUFFICIENT_RESOURCES".into(),
        3 => "NVML_ERROR_NOT_SUPPORTED".into(),
        999 => "NVML_ERROR_UNKNOWN".into(),
        other => format!("NVML error {other}"),
    }
}

/// GPUs with fewer active NVLinks than the most among their same-model peers, or than the
/// links they have. GPUs without NVLinks are never told.
fn nvlink_inactive(report: &NodeReport) -> Vec<Finding> {
    report
        .devices
        .iter()
        .filter(|d| !d.nvlinks.is_empty())
        .filter_map(|d| {
            let peers_best = report
                .devices
                .iter()
                .filter(|p| p.name == d.name)
                .map(NodeDevice::active_links)
                .max()
                .unwrap_or(0);
            let expected = peers_best.max(d.nvlinks.len());
            let active = d.active_links();
            (active < expected).then(|| {
                let down: Vec<String> = (d.nvlinks.iter())
                    .filter(|l| !l.active)
                    .map(|l| l.link.to_string())
                    .collect();
                Finding::new(
                    Severity::Warning,
                    Cause::NvlinkInactive,
                    format!(
                        "{} has {active} of {expected} NVLinks active: its peer bandwidth is cut to {active}/{expected} and a job that spans it runs at the slowest link's pace",
                        gpu(d)
                    ),
                    format!(
                        "see each link with `nvidia-smi nvlink -s -i {0}` and its errors with `nvidia-smi nvlink -e -i {0}`; reset the GPU with no process on it (`nvidia-smi -r -i {0}`) or reboot; a link that stays down needs the node serviced",
                        d.index
                    ),
                )
                .evidence(vec![
                    format!("{}: inactive link(s) {}", gpu(d), down.join(", ")),
                    format!("its same-model peers have up to {peers_best} active"),
                ])
            })
        })
        .collect()
}

/// Whether NVML says the pair should reach each other's memory: over NVLink, or reads and
/// writes over PCIe.
fn should_reach(pair: &NodePair) -> bool {
    let ok = |s: &Option<String>| s.as_deref() == Some("ok");
    ok(&pair.nvml.nvlink) || (ok(&pair.nvml.read) && ok(&pair.nvml.write))
}

/// Pairs NVML says can reach each other and the driver refuses, in one finding.
fn peer_access_denied(report: &NodeReport, fabric_not_ready: bool) -> Option<Finding> {
    let denied: Vec<&NodePair> = report
        .pairs
        .iter()
        .filter(|p| should_reach(p) && p.can_access.contains(&Some(false)))
        .collect();
    if denied.is_empty() {
        return None;
    }
    let evidence = denied
        .iter()
        .map(|p| {
            let over = if p.nvml.nvlink.as_deref() == Some("ok") {
                "NVLink"
            } else {
                "PCIe"
            };
            format!(
                "{} <-> {}: NVML P2P over {over} ok, topology {}; cuDeviceCanAccessPeer {} -> {} = {}, {} -> {} = {}",
                gpu_of(report, p.a),
                gpu_of(report, p.b),
                p.topology.as_deref().unwrap_or("unknown"),
                p.a,
                p.b,
                u8::from(p.can_access[0] == Some(true)),
                p.b,
                p.a,
                u8::from(p.can_access[1] == Some(true)),
            )
        })
        .collect();
    let (message, fix) = if fabric_not_ready {
        (
            format!("the driver refuses peer access between {} pair(s) of GPUs that NVML says are linked: the GPU fabric is not ready (see fabric_not_ready), so copies between them go through host memory", denied.len()),
            "fix the fabric first (fabric_not_ready); peer access follows once the Fabric Manager has registered every GPU".to_owned(),
        )
    } else {
        (
            format!("the driver refuses peer access between {} pair(s) of GPUs that NVML says can reach each other: copies between them go through host memory, several times slower, and NCCL falls back from P2P", denied.len()),
            "check that PCIe ACS is off on the switches between them (`lspci -vvv | grep ACSCtl`; set ACS off in the BIOS), that the IOMMU is in passthrough (`iommu=pt`) on bare metal, and that a VM or container is allowed peer access; then `nvidia-smi topo -p2p r` should show OK for the pair".to_owned(),
        )
    };
    Some(Finding::new(Severity::Error, Cause::PeerAccessDenied, message, fix).evidence(evidence))
}

/// GPUs whose host copies lie beyond the robust bound of their same-model peers, with the
/// device's index; also a GPU all of whose peer copies do.
fn slow_devices(report: &NodeReport) -> Vec<(u32, Finding)> {
    let mut ratios: Vec<(u32, Vec<String>, f64)> = Vec::new();
    let mut flag =
        |index: u32, what: String, ratio: f64| match ratios.iter_mut().find(|r| r.0 == index) {
            Some(entry) => {
                entry.1.push(what);
                entry.2 = entry.2.max(ratio);
            }
            None => ratios.push((index, vec![what], ratio)),
        };
    for model in models(report) {
        let members: Vec<&NodeDevice> = report.devices.iter().filter(|d| d.name == model).collect();
        for (label, to_device) in [("host to device", true), ("device to host", false)] {
            let costs: Vec<f64> = members
                .iter()
                .map(|d| {
                    let (s, t) = if to_device {
                        (None, Some(d.index))
                    } else {
                        (Some(d.index), None)
                    };
                    report.ce_gbs(s, t).map_or(f64::NAN, |g| 1.0 / g)
                })
                .collect();
            for found in outlier::outliers(&costs) {
                let d = members[found.at];
                flag(
                    d.index,
                    format!(
                        "{label} copies {:.2}x the time of its peers' median",
                        found.ratio
                    ),
                    found.ratio,
                );
            }
        }
        for d in &members {
            let pairs = degraded_pairs(report)
                .into_iter()
                .filter(|(a, b, _)| *a == d.index || *b == d.index)
                .count();
            let peers = members.len().saturating_sub(1);
            if peers >= outlier::MIN_PEERS && pairs == peers {
                flag(
                    d.index,
                    format!("every one of its {peers} peer links copies beyond the bound"),
                    0.0,
                );
            }
        }
    }
    ratios
        .into_iter()
        .map(|(index, evidence, ratio)| {
            let name = gpu_of(report, index);
            let message = if ratio > 0.0 {
                format!("{name} is {:.0}% slower than the median of its same-model peers ({METHOD})", (ratio - 1.0) * 100.0)
            } else {
                format!("{name} is slower than its same-model peers on every link ({METHOD})")
            };
            let finding = Finding::new(
                Severity::Warning,
                Cause::SlowDevice,
                message,
                format!("look at its clocks, temperature, power and PCIe link with `nvidia-smi -q -d CLOCK,TEMPERATURE,POWER,PERFORMANCE -i {index}` and `nvidia-smi -q -i {index} | grep -A4 'Link Width'`; rerun `stackbench check --devices {index}` after a reset; a GPU that stays slow needs servicing"),
            )
            .evidence(evidence);
            (index, finding)
        })
        .collect()
}

/// The GPU models of the node, each once.
fn models(report: &NodeReport) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for d in &report.devices {
        if !names.contains(&d.name.as_str()) {
            names.push(&d.name);
        }
    }
    names
}

/// How a pair's bytes travel, for grouping pairs with their like: the two models, whether
/// over NVLink, and whether peer access is on both ways.
fn link_kind(report: &NodeReport, a: u32, b: u32) -> Option<String> {
    let pair = report.pair(a, b)?;
    let mut models = [
        report.device(a)?.name.as_str(),
        report.device(b)?.name.as_str(),
    ];
    models.sort_unstable();
    Some(format!(
        "{} {} nvlink={} access={}",
        models[0],
        models[1],
        pair.nvml.nvlink.as_deref() == Some("ok"),
        pair.can_access == [Some(true), Some(true)]
    ))
}

/// Unordered pairs with a copy-engine copy (either way, or both ways) beyond the bound of the
/// pairs linked as they are; each with its worst ratio.
fn degraded_pairs(report: &NodeReport) -> Vec<(u32, u32, f64)> {
    let mut worst: Vec<(u32, u32, f64)> = Vec::new();
    for both_ways in [false, true] {
        let copies: Vec<_> = report
            .copies
            .iter()
            .filter(|c| c.engine == Engine::Ce && c.both_ways == both_ways)
            .filter_map(|c| Some((c.src?, c.dst?, c.gbs)))
            .collect();
        let mut kinds: Vec<String> = copies
            .iter()
            .filter_map(|(a, b, _)| link_kind(report, *a, *b))
            .collect();
        kinds.sort();
        kinds.dedup();
        for kind in kinds {
            let group: Vec<_> = copies
                .iter()
                .filter(|(a, b, _)| link_kind(report, *a, *b).as_deref() == Some(kind.as_str()))
                .collect();
            let costs: Vec<f64> = group
                .iter()
                .map(|(_, _, g)| g.map_or(f64::NAN, |g| 1.0 / g))
                .collect();
            for found in outlier::outliers(&costs) {
                let (a, b, _) = group[found.at];
                let (a, b) = (*a.min(b), *a.max(b));
                match worst.iter_mut().find(|w| w.0 == a && w.1 == b) {
                    Some(w) => w.2 = w.2.max(found.ratio),
                    None => worst.push((a, b, found.ratio)),
                }
            }
        }
    }
    worst
}

/// Pairs far below the pairs linked as they are, other than those a slow GPU or denied peer
/// access already explains.
fn p2p_degraded(report: &NodeReport, slow: &[u32]) -> Vec<Finding> {
    degraded_pairs(report)
        .into_iter()
        .filter(|(a, b, _)| !slow.contains(a) && !slow.contains(b))
        .filter(|(a, b, _)| report.pair(*a, *b).is_none_or(|p| p.can_access == [Some(true), Some(true)]))
        .map(|(a, b, ratio)| {
            let figures: Vec<String> = [(a, b), (b, a)]
                .iter()
                .filter_map(|&(s, t)| {
                    let copy = report.copy(Engine::Ce, Some(s), Some(t), false)?;
                    Some(format!(
                        "{s} -> {t}: {:.1} GB/s{}",
                        copy.gbs?,
                        copy.peak_gbs.map(|p| format!(" of {p:.0} nominal")).unwrap_or_default()
                    ))
                })
                .collect();
            Finding::new(
                Severity::Warning,
                Cause::P2pDegraded,
                format!(
                    "the link between {} and {} copies {:.0}% slower than the median of the pairs linked as they are ({METHOD})",
                    gpu_of(report, a),
                    gpu_of(report, b),
                    (ratio - 1.0) * 100.0
                ),
                format!("look for NVLink errors with `nvidia-smi nvlink -e -i {a}` and `-i {b}` and for a PCIe link trained below its width (`nvidia-smi -q -i {a} | grep -A4 'Link Width'`); rerun `stackbench check --devices {a},{b}` to confirm, and have the link serviced if it stays slow"),
            )
            .evidence(figures)
        })
        .collect()
}
