//! What the comparison's views share: each row's cells, in words.

use super::bench::duration;
use crate::compare::model::{BenchmarkRow, Change, CheckChange, CheckRow, CompareReport};

/// `old → new`, `-` for a missing side.
pub fn change_text(change: &Change) -> String {
    format!(
        "{} → {}",
        change.old.as_deref().unwrap_or("-"),
        change.new.as_deref().unwrap_or("-")
    )
}

/// A median, or `-`.
pub fn median(value: Option<f64>) -> String {
    value.map_or("-".to_owned(), duration)
}

/// A side's figure as the verdict weighed it (the geometric mean of its repetitions' medians),
/// else its median: `(old, new)`.
pub fn figures(row: &BenchmarkRow) -> (String, String) {
    (
        median(row.old_figure_ns.or(row.old_median_ns)),
        median(row.new_figure_ns.or(row.new_median_ns)),
    )
}

/// The change in percent (`+3.1%`) and its interval (`+2.4% … +3.9%`), or why there is none
/// (`failed → measured`).
pub fn ratio_cells(row: &BenchmarkRow) -> (String, String) {
    let pct = |r: f64| format!("{:+.1}%", 100.0 * (r - 1.0));
    match row.ratio {
        Some(r) => (pct(r.ratio), format!("{} … {}", pct(r.low), pct(r.high))),
        None => (
            format!(
                "{} → {}",
                row.old_status.as_deref().unwrap_or("-"),
                row.new_status.as_deref().unwrap_or("-")
            ),
            "-".to_owned(),
        ),
    }
}

/// The repetitions behind each side's figure: `3 vs 5`, `-` when not judged.
pub fn repetitions(row: &BenchmarkRow) -> String {
    match (
        row.environment_runs,
        row.old_repetitions,
        row.new_repetitions,
    ) {
        (Some((old, new)), _, _) => format!("{old} runs vs {new}"),
        (None, Some(old), Some(new)) => format!("{old} vs {new}"),
        _ => "-".to_owned(),
    }
}

/// Where a row's noise floor came from, in a word or two: `history`, `history (1 boot)`,
/// `reference` (the committed real runs of its GPU model), `default`; `-` when not judged.
pub fn floor_cell(row: &BenchmarkRow) -> String {
    use crate::compare::stats::FloorSource;
    match row.floor.as_ref().map(|f| f.source) {
        Some(FloorSource::History) => "history",
        Some(FloorSource::HistoryOneBoot) => "history (1 boot)",
        Some(FloorSource::Reference) => "reference",
        Some(FloorSource::Default) => "default",
        None => "-",
    }
    .to_owned()
}

/// The smallest change the row could call, either way: `±2.4%`; `-` when not judged.
pub fn sees_cell(row: &BenchmarkRow) -> String {
    row.could_see
        .map_or("-".to_owned(), |c| format!("±{:.1}%", 100.0 * c))
}

/// The committed real runs the rows' reference floors were learned from, each once, in order.
pub fn reference_files(report: &CompareReport) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for file in report
        .benchmarks
        .iter()
        .filter_map(|b| b.floor.as_ref())
        .flat_map(|f| &f.cited)
    {
        if !files.contains(file) {
            files.push(file.clone());
        }
    }
    files
}

/// What a reader needs beside a row's verdict: an NCCL row's busbw in both runs, why it is
/// unclear and what would settle it, and the noise floor when it set the interval.
pub fn note(row: &BenchmarkRow) -> Option<String> {
    let mut parts = Vec::new();
    parts.extend(row.busbw());
    parts.extend(row.why.clone());
    if row.floor_set {
        if let Some(floor) = &row.floor {
            parts.push(format!("noise floor {}", floor.words()));
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The title of the benchmarks' table.
pub fn benchmarks_title(report: &CompareReport) -> String {
    let threshold = match report.threshold {
        Some(t) => format!("threshold {:.1}%", 100.0 * t),
        None => "each row's threshold from its noise floor, 0.5-2%".to_owned(),
    };
    format!(
        "{threshold}; 99% interval of new over old, repetitions then samples bootstrapped, held \
         to the noise floor"
    )
}

/// A row's threshold, when it took its own: `±0.5%`; `-` otherwise.
pub fn threshold_cell(row: &BenchmarkRow) -> String {
    row.threshold
        .map_or("-".to_owned(), |t| format!("±{:.1}%", 100.0 * t))
}

/// A benchmark row's name: its id, with its GPU in runs over several (`... on GPU 3`).
pub fn benchmark(row: &BenchmarkRow) -> String {
    match &row.device {
        Some(d) => format!("{} on GPU {}", row.id, d.index),
        None => row.id.clone(),
    }
}

/// The verdict, with a mark when the clocks differ and when one side is simulated.
pub fn verdict(row: &BenchmarkRow) -> String {
    let verdict = row.verdict.map_or("-", |v| v.name());
    let mut notes = Vec::new();
    if row.clocks_differ {
        notes.push("clocks differ".to_owned());
    }
    if let Some(cycles) = row.cycles_verdict {
        notes.push(format!("in cycles: {}", cycles.name()));
    }
    if row.simulated_vs_real {
        notes.push("simulated vs real: not a regression".to_owned());
    }
    if let Some(disturbed) = &row.disturbed {
        notes.push(format!("measured disturbed: {disturbed}"));
    }
    if notes.is_empty() {
        verdict.to_owned()
    } else {
        format!("{verdict} ({})", notes.join("; "))
    }
}

/// What the headline adds when a run was on the simulated driver: which one, and that its
/// figures do not compare with a GPU's; `None` when both ran on GPUs.
pub fn simulation(report: &CompareReport) -> Option<String> {
    let side = |simulated: bool| {
        if simulated {
            "the SIMULATED GPU"
        } else {
            "a real GPU"
        }
    };
    match (report.old.simulated, report.new.simulated) {
        (false, false) => None,
        (true, true) => Some("both runs on the SIMULATED GPU".to_owned()),
        (old, new) => Some(format!(
            "old ran on {}, new on {}: a simulated run's figures are a model's, not a GPU's, so \
             its rows are not judged as regressions",
            side(old),
            side(new)
        )),
    }
}

/// `(SIMULATED GPU)` after a run's line, when it was.
pub fn run_mark(run: &crate::compare::model::RunInfo) -> &'static str {
    if run.simulated {
        " (SIMULATED GPU)"
    } else {
        ""
    }
}

/// `regression`, `fixed`, `new reason`, ...
pub fn check_change(row: &CheckRow) -> &'static str {
    match row.change {
        CheckChange::Regression => "regression",
        CheckChange::Fixed => "fixed",
        CheckChange::NewReason => "new reason",
        CheckChange::Status => "status",
        CheckChange::Appeared => "appeared",
        CheckChange::Disappeared => "disappeared",
    }
}

/// `pass → fail`.
pub fn statuses(row: &CheckRow) -> String {
    format!(
        "{} → {}",
        row.old_status.as_deref().unwrap_or("-"),
        row.new_status.as_deref().unwrap_or("-")
    )
}

/// The reason worth showing: the new one, else the old one.
pub fn reason(row: &CheckRow) -> &str {
    row.new_reason
        .as_deref()
        .or(row.old_reason.as_deref())
        .unwrap_or("")
}

/// The headline: `3 regressions` or `no regression`, and the verdict counts for benchmarks.
pub fn headline(report: &CompareReport) -> String {
    let regressions = match report.regressions.len() {
        0 => "no regression".to_owned(),
        1 => "1 regression".to_owned(),
        n => format!("{n} regressions"),
    };
    let note = simulation(report)
        .map(|note| format!("; {note}"))
        .unwrap_or_default();
    let regressions = match &report.upgrade {
        Some(upgrade) => format!("{}: {regressions}", upgrade.text()),
        None => regressions,
    };
    if report.benchmarks.is_empty() {
        return format!("{regressions}{note}");
    }
    let count = |name: &str| {
        report
            .benchmarks
            .iter()
            .filter(|r| r.verdict.is_some_and(|v| v.name() == name))
            .count()
    };
    format!(
        "{regressions}; {} slower, {} faster, {} same, {} unclear{note}",
        count("slower"),
        count("faster"),
        count("same"),
        count("unclear")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::model::RunInfo;
    use crate::compare::stats::{Ratio, Verdict};

    fn run(simulated: bool) -> RunInfo {
        RunInfo {
            path: "run.json".into(),
            started: None,
            hostname: "h".into(),
            simulated,
        }
    }

    fn row(simulated_vs_real: bool, clocks_differ: bool) -> BenchmarkRow {
        BenchmarkRow {
            id: "vector_add/c/1048576".into(),
            combination: "c".into(),
            device: None,
            old_status: Some("measured".into()),
            new_status: Some("measured".into()),
            old_median_ns: Some(1000.0),
            new_median_ns: Some(2000.0),
            ratio: Some(Ratio {
                ratio: 2.0,
                low: 1.9,
                high: 2.1,
            }),
            verdict: Some(Verdict::Slower),
            threshold: None,
            environment_runs: None,
            clocks_differ,
            simulated_vs_real,
            could_see: None,
            old_sm_clock_mhz: None,
            new_sm_clock_mhz: None,
            cycles: None,
            cycles_verdict: None,
            old_figure_ns: None,
            new_figure_ns: None,
            old_repetitions: Some(3),
            new_repetitions: Some(5),
            floor: Some(crate::compare::stats::Floor::default_for(
                crate::bench::model::Side::Cpu,
            )),
            floor_set: true,
            why: None,
            old_busbw_gbps: None,
            new_busbw_gbps: None,
            disturbed: None,
        }
    }

    #[test]
    fn a_row_shows_its_repetitions_and_the_floor_that_set_its_interval() {
        let mut unclear = row(false, false);
        assert_eq!(repetitions(&unclear), "3 vs 5");
        unclear.why = Some("the interval reaches across ±2.0%; run both with --repeat 5".into());
        assert_eq!(
            note(&unclear).unwrap(),
            "the interval reaches across ±2.0%; run both with --repeat 5; noise floor stated \
             default: 15.0% between runs, 10.0% between repetitions"
        );
        unclear.floor_set = false;
        unclear.why = None;
        assert_eq!(note(&unclear), None);
    }

    fn report(old: bool, new: bool, rows: Vec<BenchmarkRow>) -> CompareReport {
        CompareReport {
            schema: String::new(),
            kind: "bench".into(),
            threshold: Some(0.02),
            old: run(old),
            new: run(new),
            upgrade: None,
            environment: Vec::new(),
            benchmarks: rows,
            checks: Vec::new(),
            findings: Vec::new(),
            libraries: Vec::new(),
            regressions: Vec::new(),
        }
    }

    #[test]
    fn a_row_of_a_simulated_run_against_a_real_one_is_never_slower_without_a_note() {
        assert_eq!(verdict(&row(false, false)), "slower");
        assert_eq!(
            verdict(&row(true, false)),
            "slower (simulated vs real: not a regression)"
        );
        assert_eq!(
            verdict(&row(true, true)),
            "slower (clocks differ; simulated vs real: not a regression)"
        );
    }

    #[test]
    fn the_headline_says_which_run_was_simulated() {
        assert_eq!(
            headline(&report(false, false, vec![row(false, false)])),
            "no regression; 1 slower, 0 faster, 0 same, 0 unclear"
        );
        assert_eq!(
            headline(&report(false, true, vec![row(true, false)])),
            "no regression; 1 slower, 0 faster, 0 same, 0 unclear; old ran on a real GPU, new \
             on the SIMULATED GPU: a simulated run's figures are a model's, not a GPU's, so its \
             rows are not judged as regressions"
        );
        assert!(headline(&report(true, false, vec![]))
            .starts_with("no regression; old ran on the SIMULATED GPU, new on a real GPU"));
        assert_eq!(
            headline(&report(true, true, vec![])),
            "no regression; both runs on the SIMULATED GPU"
        );
        assert_eq!(run_mark(&run(true)), " (SIMULATED GPU)");
        assert_eq!(run_mark(&run(false)), "");
    }
}
