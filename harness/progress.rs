//! How far a long run is, on standard error: a progress bar on a terminal (`indicatif`), plain
//! lines otherwise (a CI log), nothing when asked for quiet.

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
    fn update(&self, combination: &str, done: usize, total: usize, last: &str) {
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
                    bar.set_message(last.to_owned());
                    if done == total {
                        bar.finish();
                    }
                }
            }
        }
    }
}
