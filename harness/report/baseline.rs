//! Baselines: the file `stackbench baseline` writes, in the formats that suit one table; and a
//! node judged against one, the section `check` and `merge` add to their terminal and Markdown
//! reports (their JSON carries every row, their OpenMetrics each row's ratio).

use super::format::Format;
use super::table::{Table, Tabular};
use crate::baseline::Baseline;
use crate::error::OutputError;
use crate::figures::pct;
use crate::pathname::Shown;
use crate::schema::judgement::{Judgement, Standing};

/// The baseline in `format`; JSON is the file `--baseline` reads.
pub fn baseline(format: Format, baseline: &Baseline) -> Result<Vec<u8>, OutputError> {
    let header = [
        "model",
        "driver",
        "libraries",
        "clocks",
        "benchmark",
        "nodes",
        "expected",
        "spread",
        "a node's range",
    ];
    let rows = (baseline.entries.iter())
        .map(|e| {
            vec![
                e.key.model_name(),
                e.key.driver.clone(),
                if e.key.libraries.is_empty() {
                    "(driver alone)".to_owned()
                } else {
                    e.key.libraries.clone()
                },
                e.key.clocks.clone(),
                e.key.kind.clone(),
                e.nodes.to_string(),
                figure(e.expected, &e.unit),
                format!("{:.2}%", 100.0 * e.spread),
                format!("{} .. {}", figure(e.low, &e.unit), figure(e.high, &e.unit)),
            ]
        })
        .collect();
    let notes = format!(
        "spread: the robust standard deviation between nodes. A node outside its range (beyond \
         {} deviations and twice the {}% threshold) is slower or faster than its fleet. Save it \
         with --format json -o FILE for check --baseline and merge --baseline.{}",
        baseline.deviations,
        100.0 * baseline.threshold,
        match baseline.left_out.len() {
            0 => String::new(),
            n => format!(" Left out, with fewer than 3 nodes: {n} (the JSON names them)."),
        }
    );
    Tabular {
        command: "baseline",
        headline: format!(
            "{} from {}",
            super::count(baseline.entries.len(), "entry"),
            baseline.learned_from()
        ),
        table: Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows,
        },
        notes: &notes,
        json: baseline,
    }
    .render(format)
}

/// `12 within, 1 slower, 0 faster; 3 without an entry (...)`: a judgement in one line.
pub fn headline(judgement: &Judgement) -> String {
    let count = |standing| {
        (judgement.rows.iter())
            .filter(|r| r.standing == standing)
            .count()
    };
    let mut line = format!(
        "against the baseline {} ({}): {} within, {} slower, {} faster",
        judgement.baseline.shown(),
        judgement.learned_from,
        count(Standing::Within),
        count(Standing::Slower),
        count(Standing::Faster)
    );
    if let Some(first) = judgement.unjudged.first() {
        line.push_str(&format!(
            "; {} without an entry ({})",
            judgement.unjudged.len(),
            first.why
        ));
    }
    line
}

/// The rows beyond their fleet, slowest first: the table under the headline.
pub fn beyond(judgement: &Judgement) -> Table {
    let header = [
        "node",
        "gpu",
        "pci_bus_id",
        "benchmark",
        "figure",
        "expected",
        "a node's range",
        "from baseline",
        "deviations",
        "standing",
    ];
    let rows = (judgement.rows.iter())
        .filter(|r| r.standing != Standing::Within)
        .map(|r| {
            vec![
                r.host.clone(),
                r.gpu.map_or_else(|| "-".to_owned(), |g| g.to_string()),
                r.pci_bus_id.clone().unwrap_or_else(|| "-".to_owned()),
                r.id.clone(),
                figure(r.figure, &r.unit),
                figure(r.expected, &r.unit),
                format!("{} .. {}", figure(r.low, &r.unit), figure(r.high, &r.unit)),
                pct(r.slowdown),
                r.deviations
                    .map_or_else(|| "-".to_owned(), |d| format!("{d:+.1}")),
                match r.standing {
                    Standing::Slower => "SLOWER",
                    Standing::Faster => "faster",
                    Standing::Within => "within",
                }
                .to_owned(),
            ]
        })
        .collect();
    Table {
        header: header.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

/// A figure in its unit: a time as `bench` writes one, a bandwidth in GB/s.
fn figure(value: f64, unit: &str) -> String {
    match unit {
        "ns" => super::bench::duration(value),
        unit => format!("{value:.1} {unit}"),
    }
}
