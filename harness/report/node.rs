//! The node's tables, as rows of text cells that the terminal and Markdown exporters lay out:
//! one row per GPU (links, fabric, host copies) and the copy matrices (rows the source GPU,
//! columns the destination).

use crate::schema::node::{Engine, NodeReport};

/// The GPU table's header.
pub const GPU_HEADER: &[&str] = &[
    "GPU",
    "bus id",
    "NUMA",
    "NVLinks",
    "fabric",
    "H2D GB/s",
    "D2H GB/s",
    "both ways",
];

/// A figure, `-` when absent, `!` after it when its bytes did not verify.
fn figure(
    report: &NodeReport,
    engine: Engine,
    src: Option<u32>,
    dst: Option<u32>,
    both: bool,
) -> String {
    match report.copy(engine, src, dst, both) {
        Some(copy) => match copy.gbs {
            Some(gbs) if copy.verified => format!("{gbs:.1}"),
            Some(gbs) => format!("{gbs:.1}!"),
            None => "x".to_owned(),
        },
        None => "-".to_owned(),
    }
}

/// One row per GPU.
pub fn gpu_rows(report: &NodeReport) -> Vec<Vec<String>> {
    report
        .devices
        .iter()
        .map(|d| {
            let links = if d.nvlinks.is_empty() {
                "none".to_owned()
            } else {
                format!("{}/{} active", d.active_links(), d.nvlinks.len())
            };
            let fabric = d.fabric.as_ref().map_or_else(
                || "-".to_owned(),
                |f| match f.status {
                    0 => f.state.clone(),
                    status => format!("{} (status {status})", f.state),
                },
            );
            let both = format!(
                "{} / {}",
                figure(report, Engine::Ce, None, Some(d.index), true),
                figure(report, Engine::Ce, Some(d.index), None, true)
            );
            vec![
                d.index.to_string(),
                d.pci_bus_id.clone().unwrap_or_default(),
                d.numa_node.map(|n| n.to_string()).unwrap_or_default(),
                links,
                fabric,
                figure(report, Engine::Ce, None, Some(d.index), false),
                figure(report, Engine::Ce, Some(d.index), None, false),
                both,
            ]
        })
        .collect()
}

/// The matrix of `engine` copies, one way or both: its header and rows (source down,
/// destination across, GB/s).
pub fn matrix(
    report: &NodeReport,
    engine: Engine,
    both_ways: bool,
) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["src \\ dst".to_owned()];
    header.extend(report.devices.iter().map(|d| d.index.to_string()));
    let rows = report
        .devices
        .iter()
        .map(|src| {
            let mut row = vec![src.index.to_string()];
            row.extend(report.devices.iter().map(|dst| {
                if dst.index == src.index {
                    "-".to_owned()
                } else {
                    figure(report, engine, Some(src.index), Some(dst.index), both_ways)
                }
            }));
            row
        })
        .collect();
    (header, rows)
}

/// The matrices worth showing: each engine, one way and both, where anything was copied.
pub fn matrices(report: &NodeReport) -> Vec<(String, Engine, bool)> {
    let mut shown = Vec::new();
    for (engine, name) in [(Engine::Ce, "copy engine"), (Engine::Sm, "SM")] {
        for both in [false, true] {
            let any = report.copies.iter().any(|c| {
                c.engine == engine && c.both_ways == both && c.src.is_some() && c.dst.is_some()
            });
            if any {
                let way = if both {
                    "both ways (per direction)"
                } else {
                    "one way"
                };
                shown.push((format!("{name} copies, {way}, GB/s"), engine, both));
            }
        }
    }
    shown
}

/// The nominal peaks: of the pairs, when NVML gave one and all pairs share it; of the host
/// copies of a Grace superchip's GPUs, NVLink-C2C's.
pub fn peak_line(report: &NodeReport) -> Option<String> {
    let distinct = |host: bool| {
        let mut peaks: Vec<f64> = (report.copies.iter())
            .filter(|c| (c.src.is_none() || c.dst.is_none()) == host)
            .filter_map(|c| c.peak_gbs)
            .collect();
        peaks.sort_by(f64::total_cmp);
        peaks.dedup();
        peaks
    };
    let pairs = match distinct(false)[..] {
        [] => None,
        [peak] => Some(format!("nominal NVLink peak per direction: {peak:.0} GB/s")),
        _ => Some("nominal NVLink peaks differ between pairs (see the JSON)".to_owned()),
    };
    let host = (distinct(true).first())
        .map(|peak| format!("host copies over NVLink-C2C, nominal {peak:.0} GB/s per direction"));
    let lines: Vec<String> = pairs.into_iter().chain(host).collect();
    (!lines.is_empty()).then(|| lines.join("; "))
}
