//! `compare --fleet` and `ingest` in the formats that suit them: a headline, the table, and for
//! the fleet each benchmark's two distributions drawn on one axis and the nodes beyond their
//! group; CSV is the table alone, JSON the report.

use super::format::Format;
use super::table::{Table, Tabular};
use crate::error::OutputError;
use crate::figures::pct;
use crate::fleet::{FleetReport, FleetRow, Group};
use crate::pathname::Shown;
use crate::store::ingest::IngestReport;
use std::fmt::Write;

/// Block characters from empty to full, for the drawn distributions.
const BLOCKS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The fleet comparison in `format`.
pub fn fleet(format: Format, report: &FleetReport) -> Result<Vec<u8>, OutputError> {
    let tabular = Tabular {
        command: "compare --fleet",
        headline: headline(report),
        table: table(report),
        notes: "",
        json: report,
    };
    let (draw, fence) = match format {
        Format::Terminal => ("  ", ""),
        Format::Markdown => ("", "```\n"),
        _ => return tabular.render(format),
    };
    let mut out = String::from_utf8_lossy(&tabular.render(format)?).into_owned();
    let _ = writeln!(
        out,
        "\n{draw}Each group's nodes over the old median, on one axis a benchmark (`old` above, \
         `new` below):\n"
    );
    out.push_str(fence);
    for row in &report.rows {
        let _ = writeln!(out, "{draw}{}", row.id);
        let _ = writeln!(
            out,
            "{draw}  old |{}| {} .. {}",
            bars(&row.distribution.old),
            pct(row.distribution.low),
            pct(row.distribution.high)
        );
        let _ = writeln!(out, "{draw}  new |{}|", bars(&row.distribution.new));
    }
    out.push_str(fence);
    if !report.outliers.is_empty() {
        let _ = writeln!(
            out,
            "\n{draw}Nodes beyond their own group (broken nodes, not the driver's doing):\n"
        );
        let header = [
            "group",
            "host",
            "gpu",
            "pci_bus_id",
            "benchmarks beyond the group",
        ];
        let rows: Vec<Vec<String>> = (report.outliers.iter())
            .map(|o| {
                let rows: Vec<String> = (o.rows.iter())
                    .map(|(id, ratio)| format!("{id} {}", pct(*ratio)))
                    .collect();
                vec![
                    o.group.clone(),
                    o.host.clone(),
                    o.gpu.map_or("?".into(), |g| g.to_string()),
                    o.pci_bus_id.clone().unwrap_or_default(),
                    rows.join("; "),
                ]
            })
            .collect();
        let table = Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows,
        };
        out.push_str(&match format {
            Format::Markdown => table.markdown(),
            _ => table.aligned(),
        });
    }
    Ok(out.into_bytes())
}

/// What the comparison found, in a line.
fn headline(report: &FleetReport) -> String {
    let side = |g: &Group| {
        format!(
            "{} ({}, {}, driver {}{})",
            g.selector,
            super::count(g.nodes, "node"),
            super::count(g.runs, "run"),
            g.drivers.join(", "),
            if g.simulated {
                format!(", {}", super::SIMULATED_GPU)
            } else {
                String::new()
            }
        )
    };
    let slower = report.regressions.len();
    format!(
        "{} against {}: {} of {} benchmarks slower, {} node{} beyond {} group",
        side(&report.new),
        side(&report.old),
        slower,
        report.rows.len(),
        report.outliers.len(),
        if report.outliers.len() == 1 { "" } else { "s" },
        if report.outliers.len() == 1 {
            "its"
        } else {
            "their"
        }
    )
}

/// One line per benchmark.
fn table(report: &FleetReport) -> Table {
    let header = [
        "benchmark",
        "old nodes",
        "new nodes",
        "old median",
        "new median",
        "change",
        "99% interval",
        "verdict",
        "threshold",
    ];
    Table {
        header: header.iter().map(|h| h.to_string()).collect(),
        rows: report.rows.iter().map(cells).collect(),
    }
}

fn cells(row: &FleetRow) -> Vec<String> {
    let ns = super::bench::duration;
    vec![
        row.id.clone(),
        row.old_nodes.to_string(),
        row.new_nodes.to_string(),
        ns(row.old_median_ns),
        ns(row.new_median_ns),
        row.ratio.map_or("-".into(), |r| pct(r.ratio)),
        row.ratio
            .map_or("-".into(), |r| format!("{} .. {}", pct(r.low), pct(r.high))),
        row.verdict
            .map_or_else(|| row.why.clone().unwrap_or_default(), |v| v.name().into()),
        format!("{:.1}%", 100.0 * row.threshold),
    ]
}

/// Counts as a row of block characters, the tallest full.
fn bars(counts: &[usize]) -> String {
    let most = counts.iter().copied().max().unwrap_or(0).max(1);
    counts
        .iter()
        .map(|&c| {
            let level = if c == 0 {
                0
            } else {
                (c * 8).div_ceil(most).clamp(1, 8)
            };
            BLOCKS[level]
        })
        .collect()
}

/// The ingest report in `format`.
pub fn ingest(format: Format, report: &IngestReport) -> Result<Vec<u8>, OutputError> {
    let mut rows: Vec<Vec<String>> = (report.files.iter())
        .map(|f| vec![f.shown(), "written".into()])
        .collect();
    rows.extend(
        (report.passed_over.iter())
            .map(|p| vec![p.path.shown(), format!("passed over: {}", p.reason)]),
    );
    Tabular {
        command: "ingest",
        headline: format!(
            "{} run{} added ({} rows), {} already in {}, {} file{} passed over",
            report.added,
            if report.added == 1 { "" } else { "s" },
            report.rows,
            report.already_stored,
            report.store.shown(),
            report.passed_over.len(),
            if report.passed_over.len() == 1 {
                ""
            } else {
                "s"
            },
        ),
        table: Table {
            header: vec!["file".into(), "what".into()],
            rows,
        },
        notes: "",
        json: report,
    }
    .render(format)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_tallest_and_keep_any_count_visible() {
        assert_eq!(bars(&[0, 1, 8, 100]), " ▁▁█");
        assert_eq!(bars(&[0, 0]), "  ");
    }
}
