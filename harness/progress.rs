//! How far a long run is, on standard error: a progress bar on a terminal (`indicatif`), plain
//! lines otherwise (a CI log), nothing when asked for quiet.

use crate::bench::model::{BenchResult, Status};
use crate::bench::suite::Progress;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;

/// Progress on standard error, as a bar or as lines.
pub enum Reporter {
    Bar(Mutex<Option<(String, ProgressBar)>>),
    Lines,
}

impl Reporter {
    /// A bar when standard error is a terminal, lines otherwise.
    pub fn for_stderr() -> Reporter {
        if std::io::stderr().is_terminal() {
            Reporter::Bar(Mutex::new(None))
        } else {
            Reporter::Lines
        }
    }
}

impl Progress for Reporter {
    fn update(&self, combination: &str, done: usize, total: usize, last: &BenchResult) {
        let last = outcome(last);
        match self {
            Reporter::Lines => eprintln!("bench: {combination} [{done}/{total}] {last}"),
            Reporter::Bar(current) => {
                let mut current = current.lock().unwrap_or_else(|e| e.into_inner());
                if current.as_ref().is_none_or(|(name, _)| name != combination) {
                    if let Some((_, bar)) = current.take() {
                        bar.finish();
                    }
                    let bar = ProgressBar::new(total as u64).with_prefix(combination.to_owned());
                    if let Ok(style) =
                        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {wide_msg}")
                    {
                        bar.set_style(style.progress_chars("=> "));
                    }
                    *current = Some((combination.to_owned(), bar));
                }
                if let Some((_, bar)) = current.as_ref() {
                    bar.set_position(done as u64);
                    bar.set_message(last);
                    if done == total {
                        bar.finish();
                    }
                }
            }
        }
    }
}

/// One benchmark's outcome in a line: its id and figure, or that it was skipped, or why it failed.
fn outcome(result: &BenchResult) -> String {
    let id = &result.id;
    match result.status {
        Status::Skipped => format!("{id}: skipped"),
        Status::Failed => format!(
            "{id}: FAILED: {}",
            result.reason.as_deref().unwrap_or("no reason given")
        ),
        Status::Measured => match (&result.throughput, &result.summary) {
            (Some(t), _) => format!("{id}: {:.1} {}", t.value, t.unit),
            (None, Some(s)) => format!("{id}: {:.2} ms", s.median_ns / 1e6),
            (None, None) => format!("{id}: no samples"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::model::{Key, Parameters, Side, Summary, Throughput};

    fn result() -> BenchResult {
        BenchResult::from_key(measured_key())
    }

    #[test]
    fn lines_give_the_figure_or_the_fate() {
        let mut measured = result();
        measured.summary = Some(Summary {
            median_ns: 2.5e6,
            q1_ns: 0.0,
            q3_ns: 0.0,
            min_ns: 0.0,
            max_ns: 0.0,
            noise: 0.0,
        });
        assert_eq!(outcome(&measured), "load/c: 2.50 ms");
        measured.throughput = Some(Throughput {
            value: 2870.04,
            unit: "GB/s".into(),
        });
        assert_eq!(outcome(&measured), "load/c: 2870.0 GB/s");
        let skipped = BenchResult::skipped(measured_key(), "no GPU: long reason");
        assert_eq!(outcome(&skipped), "load/c: skipped");
        let failed = BenchResult::failed(measured_key(), "the bench worker died");
        assert_eq!(outcome(&failed), "load/c: FAILED: the bench worker died");
    }

    fn measured_key() -> Key {
        Key {
            combination: "c".into(),
            benchmark: "load",
            side: Side::Cpu,
            parameters: Parameters::default(),
        }
    }
}
