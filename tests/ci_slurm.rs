//! The Slurm files run by Slurm itself: `ci/slurm-local` starts a throwaway munged, slurmctld
//! and one slurmd per node name on this machine (Debian's Slurm 22.05), each node with a
//! simulated GPU of its own profile; `ci/slurm-bench.sbatch` is submitted to it and its fleet
//! tables read back, and `ci/slurm-healthcheck` drains a faulty node in the controller.
//! The tests fail, never skip, when Slurm or munge is missing (`ci/test` installs them). Slurm's
//! daemons run as root here, as on a real cluster (slurmd starts each job step as its user): run
//! as an ordinary user, each test says it is skipped and why, and passes; CI runs as root.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One local Slurm at a time: each runs real work on this machine's two cores.
static ONE_SLURM: Mutex<()> = Mutex::new(());

/// Whether the test calling it can run: the local Slurm's daemons run as root. Run as an
/// ordinary user, says that `test` is skipped and why (CI runs as root and runs it).
fn as_root(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped: {test}: needs root (Slurm's daemons run as root); CI runs as root");
    }
    root
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A local Slurm of `nodes` nodes (sim1, sim2, ...), two GPUs each, stopped and deleted on
/// drop, whether the test passed or not.
struct LocalSlurm {
    dir: tempfile::TempDir,
    conf: PathBuf,
}

impl LocalSlurm {
    /// Starts it; `profiles` gives a node its simulated GPU's profile (the others get two
    /// healthy GPUs).
    fn start(nodes: usize, profiles: &[(&str, &str)]) -> LocalSlurm {
        let dir = tempfile::Builder::new()
            .prefix("stackbench-slurm.")
            .tempdir()
            .expect("a directory for the local Slurm");
        std::fs::create_dir_all(dir.path().join("sim")).unwrap();
        for n in 1..=nodes {
            let node = format!("sim{n}");
            let faults = profiles
                .iter()
                .find(|(name, _)| *name == node)
                .map_or("", |(_, toml)| toml);
            let profile = format!("[node]\ngpus = 2\n{faults}");
            std::fs::write(dir.path().join(format!("sim/{node}.toml")), profile).unwrap();
        }
        let output = Command::new(repo().join("ci/slurm-local"))
            .args(["start".as_ref(), dir.path().as_os_str()])
            .env("SLURM_LOCAL_NODES", nodes.to_string())
            .env("SLURM_LOCAL_GPUS", "2")
            .output()
            .expect("run ci/slurm-local");
        let slurm = LocalSlurm {
            conf: dir.path().join("slurm.conf"),
            dir,
        };
        assert!(
            output.status.success(),
            "ci/slurm-local start failed (ci/test installs munge, slurmctld, slurmd and \
             slurm-client): {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        slurm
    }

    /// A Slurm client command against this Slurm.
    fn client(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env("SLURM_CONF", &self.conf);
        command
    }

    /// `scontrol show node NODE`, one line.
    fn node(&self, node: &str) -> String {
        let output = self
            .client("scontrol")
            .args(["show", "node", node, "--oneliner"])
            .output()
            .expect("run scontrol");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

impl Drop for LocalSlurm {
    fn drop(&mut self) {
        let _ = Command::new(repo().join("ci/slurm-local"))
            .args(["stop".as_ref(), self.dir.path().as_os_str()])
            .status();
    }
}

/// The options that put check and bench on the simulated GPU alone, as one string.
fn on_simulator() -> String {
    let sim = common::simulator();
    format!(
        "--no-system --root {} --driver-dir {}",
        sim.toolkit_dir.display(),
        sim.driver_dir.display()
    )
}

/// What a job of the fleet script left: its exit code, its log and its results directory.
struct Job {
    exit_code: String,
    log: String,
    results: PathBuf,
}

impl Job {
    fn read(&self, file: &str) -> String {
        let path = self.results.join(file);
        std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}\njob log:\n{}\nresults: {:?}",
                path.display(),
                self.log,
                list(&self.results)
            )
        })
    }
}

fn list(dir: &Path) -> Vec<String> {
    walk(dir)
        .iter()
        .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
        .collect()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Submits ci/slurm-bench.sbatch on `nodes` nodes with a step time limit of `timeout_s`, and
/// waits for it (polling the controller: `sbatch --wait` polls at growing intervals, seconds
/// that a test has not got).
fn fleet_run(slurm: &LocalSlurm, nodes: usize, timeout_s: u32) -> Job {
    let results = slurm.dir.path().join("results");
    let log = slurm.dir.path().join("job.log");
    let sim = on_simulator();
    let output = slurm
        .client("sbatch")
        .current_dir(slurm.dir.path())
        .arg("--parsable")
        .arg(format!("--nodes={nodes}"))
        .arg(format!("--output={}", log.display()))
        .arg(repo().join("ci/slurm-bench.sbatch"))
        .env("STACKBENCH", common::stackbench_bin())
        .env("RESULTS", &results)
        .env("STACKBENCH_STEP_TIMEOUT", timeout_s.to_string())
        .env("STACKBENCH_CHECK_ARGS", &sim)
        .env(
            "STACKBENCH_BENCH_ARGS",
            format!("{sim} --quick --repeat 1 --filter load/"),
        )
        .output()
        .expect("run sbatch");
    assert!(
        output.status.success(),
        "sbatch failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let id = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let exit_code = wait_for(slurm, &id, Duration::from_secs(120));
    Job {
        exit_code,
        log: std::fs::read_to_string(&log).unwrap_or_default(),
        results,
    }
}

/// Waits for job `id` to end and gives its `ExitCode` (`0:0`, `1:0`).
fn wait_for(slurm: &LocalSlurm, id: &str, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        let shown: Output = slurm
            .client("scontrol")
            .args(["show", "job", id, "--oneliner"])
            .output()
            .expect("run scontrol");
        let line = String::from_utf8_lossy(&shown.stdout).into_owned();
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
                .unwrap_or("")
                .to_owned()
        };
        let state = field("JobState");
        if !matches!(
            state.as_str(),
            "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING"
        ) {
            assert!(
                !state.is_empty(),
                "job {id} unknown to the controller: {line}"
            );
            return field("ExitCode");
        }
        assert!(
            start.elapsed() < limit,
            "job {id} still {state} after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The rows of a Markdown table whose first cell names `node` (`vm (sim1)` or `sim1`).
fn rows_of<'a>(table: &'a str, node: &str) -> Vec<&'a str> {
    table
        .lines()
        .filter(|l| {
            l.strip_prefix("| ")
                .and_then(|l| l.split(" | ").next())
                .is_some_and(|first| first == node || first.ends_with(&format!("({node})")))
        })
        .collect()
}

#[test]
fn a_healthy_fleet_of_two_nodes_comes_back_in_one_table_with_every_gpu_and_exit_0() {
    if !as_root("a_healthy_fleet_of_two_nodes_comes_back_in_one_table_with_every_gpu_and_exit_0") {
        return;
    }
    let _one = ONE_SLURM.lock().unwrap_or_else(|e| e.into_inner());
    let slurm = LocalSlurm::start(2, &[]);
    let job = fleet_run(&slurm, 2, 60);
    assert_eq!(job.exit_code, "0:0", "job log:\n{}", job.log);
    let check = job.read("fleet-check.md");
    let bench = job.read("fleet-bench.md");
    for node in ["sim1", "sim2"] {
        assert_eq!(rows_of(&check, node).len(), 1, "{node} in\n{check}");
        assert_eq!(rows_of(&bench, node).len(), 1, "{node} in\n{bench}");
        // The step was given both of its node's GPUs, and check used them.
        let report = job.read(&format!("{node}/check.json"));
        assert!(report.contains("2 device(s)"), "{node}: {report}");
        assert_eq!(job.read(&format!("{node}/step.status")).trim(), "0");
    }
    assert!(check.contains("No outlier."), "{check}");
    assert!(!check.contains("without a"), "{check}");
    for table in ["fleet-check.md", "fleet-bench.md"] {
        let line = format!("fleet table: {}", job.results.join(table).display());
        assert!(job.log.contains(&line), "{line} in\n{}", job.log);
    }
    assert!(job.log.contains("2 node(s), 0 failed"), "{}", job.log);
}

#[test]
fn a_failing_node_and_a_hung_one_are_marked_in_the_table_and_the_others_still_come_back() {
    if !as_root(
        "a_failing_node_and_a_hung_one_are_marked_in_the_table_and_the_others_still_come_back",
    ) {
        return;
    }
    let _one = ONE_SLURM.lock().unwrap_or_else(|e| e.into_inner());
    // sim2's GPU computes vector adds wrong (its checks fail, its results come back); sim3's
    // never finishes one (its step is killed at the time limit, nothing comes back).
    let slurm = LocalSlurm::start(
        3,
        &[
            ("sim2", "[faults]\nwrong_results = \"vector_add\"\n"),
            ("sim3", "[faults]\nkernel_hang = \"vector_add\"\n"),
        ],
    );
    let job = fleet_run(&slurm, 3, 12);
    assert_eq!(job.exit_code, "1:0", "job log:\n{}", job.log);
    let check = job.read("fleet-check.md");
    let healthy = rows_of(&check, "sim1");
    assert_eq!(healthy.len(), 1, "{check}");
    assert!(healthy[0].ends_with("|  |"), "{check}");
    let failing = rows_of(&check, "sim2");
    assert_eq!(failing.len(), 1, "{check}");
    assert!(failing[0].contains("nvrtc.launch_vector_add"), "{check}");
    assert!(failing[0].ends_with("| OUTLIER |"), "{check}");
    assert!(check.contains("## Nodes without a check result"), "{check}");
    let hung = rows_of(&check, "sim3");
    assert_eq!(
        hung,
        ["| sim3 | step killed at the time limit (STACKBENCH_STEP_TIMEOUT=12s) |"],
        "{check}"
    );
    assert_eq!(job.read("sim3/step.status").trim(), "124");
    // The bench table holds both nodes that measured; sim3 is listed as without a result.
    let bench = job.read("fleet-bench.md");
    assert_eq!(rows_of(&bench, "sim1").len(), 1, "{bench}");
    assert_eq!(rows_of(&bench, "sim3").len(), 1, "{bench}");
    assert!(job.log.contains("3 node(s), 2 failed"), "{}", job.log);
    assert!(job.log.contains("sim3 failed: step killed"), "{}", job.log);
}

/// Runs ci/slurm-healthcheck as slurmd would on `node`, its GPU of profile `toml`, writing its
/// metrics into `textfile_dir` when given.
fn health_check(slurm: &LocalSlurm, node: &str, toml: &str, textfile_dir: Option<&Path>) -> Output {
    let profile = slurm.dir.path().join(format!("health-{node}.toml"));
    std::fs::write(&profile, toml).unwrap();
    let mut command = slurm.client(repo().join("ci/slurm-healthcheck").to_str().unwrap());
    if let Some(dir) = textfile_dir {
        command.env("STACKBENCH_TEXTFILE_DIR", dir);
    }
    command
        .env("STACKBENCH", common::stackbench_bin())
        .env("STACKBENCH_HEALTHCHECK_ARGS", on_simulator())
        .env("STACKBENCH_HEALTHCHECK_TIMEOUT", "60")
        .env("STACKBENCH_SIM_PROFILE", &profile)
        .env("SLURMD_NODENAME", node)
        .output()
        .expect("run ci/slurm-healthcheck")
}

#[test]
fn the_health_check_passes_a_healthy_node_and_drains_a_faulty_one_with_what_failed() {
    if !as_root("the_health_check_passes_a_healthy_node_and_drains_a_faulty_one_with_what_failed") {
        return;
    }
    let _one = ONE_SLURM.lock().unwrap_or_else(|e| e.into_inner());
    let slurm = LocalSlurm::start(2, &[]);
    let healthy = health_check(&slurm, "sim1", "", None);
    assert_eq!(
        healthy.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&healthy.stderr)
    );
    let textfile = tempfile::tempdir().expect("a textfile directory");
    let faulty = health_check(
        &slurm,
        "sim2",
        "[faults]\nwrong_results = \"vector_add\"\n",
        Some(textfile.path()),
    );
    assert_eq!(
        faulty.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&faulty.stderr)
    );
    let sim1 = slurm.node("sim1");
    assert!(sim1.contains("State=IDLE "), "{sim1}");
    let sim2 = slurm.node("sim2");
    assert!(sim2.contains("State=IDLE+DRAIN "), "{sim2}");
    assert!(
        sim2.contains("Reason=stackbench: unhealthy: GPU 0 (GPU-")
            && sim2.contains("nvrtc.launch_vector_add failed: "),
        "{sim2}"
    );
    // Its metrics, for node_exporter's textfile collector, say the same.
    let written: Vec<_> = std::fs::read_dir(textfile.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(written, ["stackbench-check.prom"]);
    let metrics = std::fs::read_to_string(textfile.path().join("stackbench-check.prom")).unwrap();
    let failed = metrics.lines().any(|l| {
        l.starts_with("stackbench_check_status{")
            && l.contains("check=\"nvrtc.launch_vector_add\"")
            && l.ends_with("status=\"fail\"} 1")
    });
    assert!(failed, "{metrics}");
}
