//! The history as one self-contained HTML page: inline styles and SVG charts, nothing fetched,
//! nothing scripted; it opens from a CI artifact or a mail attachment as it is.

use super::{count, history_counts, svg, version_mark, version_sets};
use crate::bench::model::Side;
use crate::history::{Chart, CheckMatrix, History};
use crate::pathname::Shown;
use crate::schema::check::Status;
use crate::schema::node::{Engine, NodeReport};
use std::fmt::Write;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}\
h1{font-size:24px}h2{font-size:19px;margin-top:32px;border-bottom:1px solid #ccc}h3{font-size:16px}h4{font-size:14px;font-family:monospace;margin-bottom:4px}\
table{border-collapse:collapse;margin:8px 0 16px}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\
th{background:#f3f3f3}td.pass{background:#e3f4e3}td.warn{background:#fdf1d6}td.skip{background:#f4f4f4;color:#777}\
td.fail{background:#f9d9d9;font-weight:bold}.meta{color:#555}.swatch{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}\
ul.versions{font-size:12px;color:#444}.passed{color:#a40000}code{font-size:13px}section.chart{margin-bottom:24px}";

/// Keeps text from being read as markup, in elements and in attribute values.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page.
pub fn history(history: &History) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>stackbench report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>stackbench report</h1>\n<p class=\"meta\">{}</p>\n",
        escape(&super::history_headline(history))
    );
    if !history.passed_over.is_empty() {
        out.push_str("<p class=\"passed\">Files passed over:</p>\n<ul class=\"passed\">\n");
        for file in &history.passed_over {
            let _ = writeln!(out, "<li>{}</li>", escape(&file.reason));
        }
        out.push_str("</ul>\n");
    }
    benchmarks(&mut out, history);
    rooflines(&mut out, history);
    matrices(&mut out, history);
    runs(&mut out, history);
    out.push_str("</body>\n</html>\n");
    out
}

fn benchmarks(out: &mut String, history: &History) {
    out.push_str("<h2 id=\"benchmarks\">Benchmarks</h2>\n");
    if history.charts.is_empty() {
        out.push_str("<p>No bench run measured anything.</p>\n");
        return;
    }
    out.push_str(
        "<p class=\"meta\">Each point is one run's median; the bar and the band are its \
         interquartile range; the thin capped whisker beside a repeated run's bar spans its \
         repetitions' medians, the variation between runs. A marker (v1, v2, ...) shows where \
         the driver or library versions behind a line changed.</p>\n",
    );
    for side in [Side::Gpu, Side::Cpu] {
        let charts: Vec<&Chart> = history.charts.iter().filter(|c| c.side == side).collect();
        if charts.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "<h3>{}</h3>",
            match side {
                Side::Gpu => "GPU (CUDA events)",
                Side::Cpu => "CPU (NVRTC compile, library load)",
            }
        );
        for chart in charts {
            let _ = write!(
                out,
                "<section class=\"chart\">\n<h4>{}</h4>\n{}\n<p>",
                escape(&chart.benchmark),
                svg::chart(chart, &history.runs)
            );
            for (i, series) in chart.series.iter().enumerate() {
                let _ = write!(
                    out,
                    "<span class=\"swatch\" style=\"background:{}\"></span>{}",
                    svg::PALETTE[i % svg::PALETTE.len()],
                    escape(&series.label)
                );
            }
            out.push_str("</p>\n<ul class=\"versions\">\n");
            let sets = version_sets(chart);
            for versions in &sets {
                let _ = writeln!(
                    out,
                    "<li><b>{}</b>: {}</li>",
                    version_mark(&sets, versions),
                    escape(versions)
                );
            }
            out.push_str("</ul>\n</section>\n");
        }
    }
}

/// Each GPU's roofline, from its newest run with theoretical peaks.
fn rooflines(out: &mut String, history: &History) {
    if history.rooflines.is_empty() {
        return;
    }
    out.push_str(
        "<h2 id=\"rooflines\">Rooflines</h2>\n<p class=\"meta\">Each kernel of a GPU's newest \
         run at its arithmetic intensity (FLOP per byte it must move to or from DRAM), against \
         the card's theoretical peaks: the memory roof, bandwidth times intensity, rising until \
         it meets each precision's compute roof. A point's distance below its roof is what the \
         kernel leaves of the card; hover for the figures.</p>\n",
    );
    for roofline in &history.rooflines {
        let _ = write!(
            out,
            "<section class=\"chart\">\n<h4>{} ({})</h4>\n{}\n<p class=\"meta\">{}</p>\n</section>\n",
            escape(&roofline.gpu),
            escape(&history.runs[roofline.run].when),
            super::roofline_svg::roofline(roofline),
            escape(&roofline.spec.basis)
        );
    }
}

fn matrices(out: &mut String, history: &History) {
    out.push_str("<h2 id=\"checks\">Checks</h2>\n");
    if history.matrices.is_empty() {
        out.push_str("<p>No check run.</p>\n");
    }
    for matrix in history.matrices.iter().rev() {
        matrix_table(out, history, matrix);
        if let Some(node) = &matrix.node {
            heat_map(out, node, matrix.simulated);
        }
    }
}

/// A node's copy-engine matrix, one way, as a heat map: a cell per ordered pair, coloured from
/// red (the slowest) to green (the fastest pair of the node), the figure in it and the
/// details on hover.
fn heat_map(out: &mut String, node: &NodeReport, simulated: bool) {
    let figures: Vec<f64> = (node.copies.iter())
        .filter(|c| c.engine == Engine::Ce && !c.both_ways && c.src.is_some() && c.dst.is_some())
        .filter_map(|c| c.gbs)
        .collect();
    let Some(best) = figures.iter().copied().reduce(f64::max) else {
        return;
    };
    let label = if simulated { " (SIMULATED)" } else { "" };
    let _ = write!(
        out,
        "<h4>Copy-engine copies between GPUs, one way, GB/s{label}</h4>\n<table class=\"heatmap\">\n<tr><th>src \\ dst</th>"
    );
    for d in &node.devices {
        let _ = write!(out, "<th>GPU {}</th>", d.index);
    }
    out.push_str("</tr>\n");
    for src in &node.devices {
        let _ = write!(out, "<tr><th>GPU {}</th>", src.index);
        for dst in &node.devices {
            let copy = node.copy(Engine::Ce, Some(src.index), Some(dst.index), false);
            match copy.and_then(|c| c.gbs.map(|g| (c, g))) {
                Some((copy, gbs)) => {
                    let hue = 120.0 * (gbs / best).clamp(0.0, 1.0);
                    let peak = copy
                        .peak_gbs
                        .map(|p| format!(" of {p:.0} nominal"))
                        .unwrap_or_default();
                    let verified = if copy.verified {
                        "verified"
                    } else {
                        "NOT VERIFIED"
                    };
                    let _ = write!(
                        out,
                        "<td style=\"background:hsl({hue:.0},70%,75%)\" title=\"GPU {} to GPU {}: {gbs:.1} GB/s{peak}, {verified}\">{gbs:.0}</td>",
                        src.index, dst.index
                    );
                }
                None if src.index == dst.index => out.push_str("<td>-</td>"),
                None => out.push_str("<td class=\"fail\">x</td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    for finding in &node.findings {
        let _ = writeln!(
            out,
            "<p class=\"finding\"><code>{}</code> {}</p>",
            finding.cause.code(),
            escape(&finding.message)
        );
    }
}

/// One check run's matrix, newest first: a cell per check and combination, the reason on hover.
fn matrix_table(out: &mut String, history: &History, matrix: &CheckMatrix) {
    let run = &history.runs[matrix.run];
    let _ = write!(
        out,
        "<h3>{} on {}{}</h3>\n<table>\n<tr><th>library</th><th>check</th>",
        escape(&run.when),
        escape(&run.hostname),
        escape(&super::matrix_mark(matrix))
    );
    for combination in &matrix.combinations {
        let _ = write!(out, "<th><code>{}</code></th>", escape(combination));
    }
    out.push_str("</tr>\n");
    for row in &matrix.rows {
        let _ = write!(
            out,
            "<tr><td>{}</td><td><code>{}</code></td>",
            escape(&row.library),
            escape(&row.check)
        );
        for cell in &row.cells {
            match cell {
                Some(cell) => {
                    let _ = write!(
                        out,
                        "<td class=\"{}\" title=\"{}\">{}</td>",
                        cell.status.name(),
                        escape(&cell.reason),
                        if cell.status == Status::Fail {
                            "FAIL"
                        } else {
                            cell.status.name()
                        }
                    );
                }
                None => out.push_str("<td>-</td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

fn runs(out: &mut String, history: &History) {
    let _ = write!(
        out,
        "<h2 id=\"runs\">Runs</h2>\n<p class=\"meta\">{}</p>\n<table>\n<tr><th>when</th><th>command</th>\
         <th>host</th><th>GPU</th><th>driver</th><th>stackbench</th><th>outcome</th><th>file</th></tr>\n",
        count(history.runs.len(), "run")
    );
    for run in history.runs.iter().rev() {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            escape(&run.when),
            escape(&run.kind),
            escape(&run.hostname),
            escape(&super::run_gpus(run)),
            escape(run.driver.as_deref().unwrap_or("-")),
            escape(&run.stackbench_version),
            escape(&history_counts(run)),
            escape(&run.path.shown())
        );
    }
    out.push_str("</table>\n");
}
