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

use std::os::unix::fs::PermissionsExt;
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
    /// GPUs a node.
    gpus: usize,
}

impl LocalSlurm {
    /// Starts it; `profiles` gives a node its simulated GPU's profile (the others get two
    /// healthy GPUs).
    fn start(nodes: usize, profiles: &[(&str, &str)]) -> LocalSlurm {
        LocalSlurm::start_with_gpus(nodes, 2, profiles)
    }

    /// Starts it with `gpus` GPUs a node; `profiles` gives a node more of its profile.
    fn start_with_gpus(nodes: usize, gpus: usize, profiles: &[(&str, &str)]) -> LocalSlurm {
        let dir = tempfile::Builder::new()
            .prefix("stackbench-slurm.")
            .tempdir()
            .expect("a directory for the local Slurm");
        std::fs::create_dir_all(dir.path().join("sim")).unwrap();
        let output = Command::new(repo().join("ci/slurm-local"))
            .args(["start".as_ref(), dir.path().as_os_str()])
            .env("SLURM_LOCAL_NODES", nodes.to_string())
            .env("SLURM_LOCAL_GPUS", gpus.to_string())
            .output()
            .expect("run ci/slurm-local");
        let slurm = LocalSlurm {
            conf: dir.path().join("slurm.conf"),
            dir,
            gpus,
        };
        for n in 1..=nodes {
            let node = format!("sim{n}");
            let more = profiles
                .iter()
                .find(|(name, _)| *name == node)
                .map_or("", |(_, toml)| toml);
            slurm.set_node(&node, more, "");
        }
        assert!(
            output.status.success(),
            "ci/slurm-local start failed (ci/test installs munge, slurmctld, slurmd and \
             slurm-client): {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        slurm
    }

    /// Gives the next job's tasks on `node` its GPUs with `more` of their profile (TOML after
    /// `[node]`'s `gpus`), and the environment lines `env` (`NAME=value`, one a line).
    fn set_node(&self, node: &str, more: &str, env: &str) {
        let sim = self.dir.path().join("sim");
        let profile = format!("[node]\ngpus = {}\n{more}", self.gpus);
        std::fs::write(sim.join(format!("{node}.toml")), profile).unwrap();
        std::fs::write(sim.join(format!("{node}.env")), env).unwrap();
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
    let mut sbatch = slurm.client("sbatch");
    sbatch
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
        );
    let exit_code = batch(slurm, &mut sbatch, Duration::from_secs(120));
    Job {
        exit_code,
        log: std::fs::read_to_string(&log).unwrap_or_default(),
        results,
    }
}

/// Submits the job `sbatch --parsable ...` describes, waits up to `limit` for it to end and gives
/// its `ExitCode`.
fn batch(slurm: &LocalSlurm, sbatch: &mut Command, limit: Duration) -> String {
    let output = sbatch.output().expect("run sbatch");
    assert!(
        output.status.success(),
        "sbatch failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let id = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    wait_for(slurm, &id, limit)
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

/// What a job of ci/slurm-nccl.sbatch left: its exit code, its log, rank 0's report and the
/// tasks' stderr.
struct NcclJob {
    exit_code: String,
    log: String,
    report: serde_json::Value,
    stderr: String,
    /// The names of the files the job left in its results directory.
    files: Vec<String>,
}

impl NcclJob {
    /// The result of check `id`.
    fn check(&self, id: &str) -> &serde_json::Value {
        let checks = self.report["combinations"][0]["checks"].as_array();
        checks
            .and_then(|all| all.iter().find(|c| c["id"] == id))
            .unwrap_or_else(|| panic!("no {id} in {:#}\n{}", self.report, self.stderr))
    }

    /// Rank 0's report as `check --from ... --format openmetrics` renders it.
    fn openmetrics(&self, dir: &Path) -> String {
        let saved = dir.join("nodes-for-metrics.json");
        std::fs::write(&saved, self.report.to_string()).unwrap();
        let output = Command::new(common::stackbench_bin())
            .args(["check", "--format", "openmetrics", "--from"])
            .arg(&saved)
            .output()
            .expect("run stackbench check --from");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The findings of cause `cause`.
    fn findings(&self, cause: &str) -> Vec<&serde_json::Value> {
        let all = self.report["node"]["findings"].as_array();
        all.into_iter()
            .flatten()
            .filter(|f| f["cause"] == cause)
            .collect()
    }
}

/// Submits ci/slurm-nccl.sbatch on 2 nodes x 4 tasks with `args` (and the simulator's), each
/// task run through `program` (stackbench, or a wrapper of it), and waits for it.
fn nccl_run(slurm: &LocalSlurm, program: &Path, args: &str) -> NcclJob {
    nccl_run_on(slurm, (2, 8), program, args)
}

/// [`nccl_run`] on `nodes` nodes of `tasks` tasks in all.
fn nccl_run_on(slurm: &LocalSlurm, shape: (usize, usize), program: &Path, args: &str) -> NcclJob {
    nccl_job(slurm, "check", shape, program, args)
}

/// ci/slurm-nccl.sbatch running `command --nodes` (check or bench) on `nodes` nodes of `tasks`
/// tasks in all.
fn nccl_job(
    slurm: &LocalSlurm,
    command: &str,
    (nodes, tasks): (usize, usize),
    program: &Path,
    args: &str,
) -> NcclJob {
    let results = tempfile::tempdir_in(slurm.dir.path()).unwrap();
    let log = results.path().join("job.log");
    let mut sbatch = slurm.client("sbatch");
    sbatch
        .current_dir(slurm.dir.path())
        .args(["--parsable", "--overcommit"])
        .arg(format!("--nodes={nodes}"))
        .arg(format!("--ntasks={tasks}"))
        .arg(format!("--output={}", log.display()))
        .arg(repo().join("ci/slurm-nccl.sbatch"))
        .env("STACKBENCH", program)
        .env("RESULTS", results.path())
        .env("STACKBENCH_NODES_COMMAND", command)
        .env(
            "STACKBENCH_NODES_ARGS",
            format!("{} --timeout 60 {args}", on_simulator()),
        );
    let exit_code = batch(slurm, &mut sbatch, Duration::from_secs(240));
    let stderr = (0..tasks)
        .map(|t| {
            let text = std::fs::read_to_string(results.path().join(format!("rank-{t}.err")));
            format!("--- task {t}:\n{}", text.unwrap_or_default())
        })
        .collect::<String>();
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    let report = std::fs::read_to_string(results.path().join("nodes.json"))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| panic!("no report from rank 0; job log:\n{log}\n{stderr}"));
    let files = std::fs::read_dir(results.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    NcclJob {
        exit_code,
        log,
        report,
        stderr,
        files,
    }
}

/// A node with rdma-core on its tasks' search path: the fixture's Debian libibverbs.
fn rdma_core_env() -> String {
    let lib = common::rdma_core().join("root/usr/lib/x86_64-linux-gnu");
    format!("LD_LIBRARY_PATH={}\n", lib.display())
}

/// Each node's simulated address (processes of one address are one node to the simulated
/// NCCL), one RDMA device, and `more` of its profile.
fn nccl_node(slurm: &LocalSlurm, node: u32, rdma_core: bool, more: &str) {
    let profile = format!("address = \"127.0.0.{node}\"\n[network]\nhcas = 1\n{more}");
    // Without, the search path is emptied: srun hands every task the batch script's environment,
    // and the batch script ran on sim1, with sim1's.
    let env = if rdma_core {
        rdma_core_env()
    } else {
        "LD_LIBRARY_PATH=\n".to_owned()
    };
    slurm.set_node(&format!("sim{node}"), &profile, &env);
}

/// The bus bandwidth rank 0 reported for `collective`, GB/s.
fn bus_gbs(job: &NcclJob, collective: &str) -> f64 {
    let check = job.check(&format!("nccl.{collective}"));
    assert_eq!(check["status"], "pass", "{check:#}\n{}", job.stderr);
    check["details"]["bus_gbs"]
        .as_f64()
        .unwrap_or_else(|| panic!("no bus bandwidth: {check:#}"))
}

const COLLECTIVES: [&str; 4] = ["all_reduce", "all_gather", "reduce_scatter", "broadcast"];

#[test]
fn two_nodes_of_four_gpus_verify_every_collective_and_the_node_without_rdma_core_is_named() {
    if !as_root(
        "two_nodes_of_four_gpus_verify_every_collective_and_the_node_without_rdma_core_is_named",
    ) {
        return;
    }
    let _one = ONE_SLURM.lock().unwrap_or_else(|e| e.into_inner());
    let slurm = LocalSlurm::start_with_gpus(2, 4, &[]);
    let stackbench = common::stackbench_bin();

    // Both nodes with rdma-core: InfiniBand with GPUDirect RDMA between them.
    nccl_node(&slurm, 1, true, "");
    nccl_node(&slurm, 2, true, "");
    let healthy = nccl_run(&slurm, &stackbench, "");
    assert_eq!(
        healthy.exit_code, "0:0",
        "{}\n{}",
        healthy.log, healthy.stderr
    );
    let init = healthy.check("nccl.init");
    assert!(
        init["reason"]
            .as_str()
            .unwrap()
            .contains("8 rank(s) on sim1 (ranks 0-3), sim2 (ranks 4-7)"),
        "{init:#}"
    );
    let fast: Vec<f64> = COLLECTIVES.iter().map(|c| bus_gbs(&healthy, c)).collect();
    let transport = healthy.check("nccl.transport");
    let reason = transport["reason"].as_str().unwrap();
    assert!(
        reason.contains("sim1 -> sim2 via NET/IB/0/GDRDMA")
            && reason.contains("sim2 -> sim1 via NET/IB/0/GDRDMA"),
        "{transport:#}"
    );
    assert_eq!(transport["status"], "pass", "{transport:#}");
    assert!(healthy.findings("nccl_net_fallback").is_empty());
    // The same report as Prometheus metrics: each collective's bus bandwidth, each pair's
    // transport.
    let metrics = healthy.openmetrics(slurm.dir.path());
    let has = |prefix: &str, parts: &[&str]| {
        metrics
            .lines()
            .any(|l| l.starts_with(prefix) && parts.iter().all(|p| l.contains(p)))
    };
    assert!(
        has(
            "stackbench_nccl_transport_info{",
            &[
                "from_host=\"sim1\"",
                "to_host=\"sim2\"",
                "via=\"NET/IB/0/GDRDMA\""
            ]
        ),
        "{metrics}"
    );
    assert!(
        has(
            "stackbench_nccl_bus_bytes_per_second{",
            &["check=\"nccl.all_reduce\""]
        ),
        "{metrics}"
    );

    // sim2 without rdma-core: sockets between the nodes, at a socket's speed, and sim2 named.
    nccl_node(&slurm, 2, false, "");
    let fallback = nccl_run(&slurm, &stackbench, "");
    assert_eq!(
        fallback.exit_code, "1:0",
        "{}\n{}",
        fallback.log, fallback.stderr
    );
    for (c, fast) in COLLECTIVES.iter().zip(&fast) {
        let slow = bus_gbs(&fallback, c);
        // The simulated 25 GbE NIC moves 3.125 GB/s; one NDR HCA 50.
        assert!(
            slow < 3.2 && slow * 4.0 < *fast,
            "{c}: {slow} GB/s over sockets, {fast} over IB"
        );
    }
    let reason = fallback.check("nccl.transport")["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(reason.contains("sim1 -> sim2 via NET/Socket/0"), "{reason}");
    let named = fallback.findings("nccl_net_fallback");
    assert_eq!(named.len(), 1, "{:#}", fallback.report["node"]);
    let message = named[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("sim2: NCCL uses sockets between nodes")
            && message.contains("libibverbs.so.1 (rdma-core) could not be opened"),
        "{message}"
    );
    assert!(
        named[0]["fix"]
            .as_str()
            .unwrap()
            .contains("apt-get install libibverbs1 ibverbs-providers"),
        "{:#}",
        named[0]
    );
    let evidence = named[0]["evidence"].to_string();
    assert!(
        evidence.contains("Failed to open libibverbs.so[.1]"),
        "{evidence}"
    );
    // The script prints the Markdown report: the finding is in the job's log.
    assert!(
        fallback
            .log
            .contains("| error | `nccl_net_fallback` | sim2: NCCL uses sockets"),
        "{}",
        fallback.log
    );

    // The same, with NCCL_NET=IB on every rank (--net IB): NCCL tries no other network, and
    // sim2's ranks fail ncclCommInitRank at once ("Failed to initialize any NET plugin"). sim1's
    // wait in the bootstrap for ranks that never come, until the simulated root gives up
    // (simgpu's CHECK_IN, 120 s; a real NCCL would wait on, and the worker's --timeout end it).
    let forced = nccl_run(&slurm, &stackbench, "--net IB");
    assert_eq!(forced.exit_code, "1:0", "{}\n{}", forced.log, forced.stderr);
    let init = forced.check("nccl.init");
    assert_eq!(init["status"], "fail", "{init:#}");
    let named = forced.findings("nccl_net_unavailable");
    assert_eq!(named.len(), 1, "{:#}", forced.report["node"]);
    let message = named[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("sim2: NCCL_NET=IB, and that network does not start there (libibverbs.so.1 (rdma-core) could not be opened there)"),
        "{message}"
    );

    // GPUDirect RDMA off on sim1, and sim2 corrupting what it receives.
    nccl_node(&slurm, 1, true, "gdr = false\n");
    nccl_node(&slurm, 2, true, "[faults]\ncorrupt_receive = true\n");
    let faulty = nccl_run(&slurm, &stackbench, "");
    assert_eq!(faulty.exit_code, "1:0", "{}\n{}", faulty.log, faulty.stderr);
    let gdr = faulty.findings("gdr_disabled");
    assert_eq!(gdr.len(), 1, "{:#}", faulty.report["node"]);
    assert!(
        gdr[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("sim1: GPUDirect RDMA is disabled"),
        "{:#}",
        gdr[0]
    );
    for c in COLLECTIVES {
        let check = faulty.check(&format!("nccl.{c}"));
        let reason = check["reason"].as_str().unwrap();
        assert_eq!(check["status"], "fail", "{check:#}");
        assert!(
            reason.contains("rank 4 (sim2)") && !reason.contains("(sim1)"),
            "{reason}"
        );
    }
}

/// Four nodes of one GPU: every pair of neighbours in the ring times an all-reduce. Healthy,
/// no pair is slow; with sim3's port trained at 100 of 400 Gb/s, both of sim3's pairs fall to a
/// quarter and sim3 is named, not its neighbours nor their links.
#[test]
fn of_four_nodes_the_one_whose_port_trained_down_is_named_and_a_healthy_ring_names_none() {
    if !as_root(
        "of_four_nodes_the_one_whose_port_trained_down_is_named_and_a_healthy_ring_names_none",
    ) {
        return;
    }
    let _one = ONE_SLURM.lock().unwrap_or_else(|e| e.into_inner());
    let slurm = LocalSlurm::start_with_gpus(4, 1, &[]);
    let stackbench = common::stackbench_bin();
    for node in 1..=4 {
        nccl_node(&slurm, node, true, "");
    }
    let healthy = nccl_run_on(&slurm, (4, 4), &stackbench, "");
    assert_eq!(
        healthy.exit_code, "0:0",
        "{}\n{}",
        healthy.log, healthy.stderr
    );
    let pairs = healthy.check("nccl.node_pairs");
    assert_eq!(pairs["status"], "pass", "{pairs:#}");
    let measured = pairs["details"]["pairs"].as_array().unwrap();
    let named: Vec<String> = (measured.iter())
        .map(|p| format!("{}-{}", p["a"].as_str().unwrap(), p["b"].as_str().unwrap()))
        .collect();
    assert_eq!(named, ["sim1-sim2", "sim3-sim4", "sim2-sim3", "sim4-sim1"]);
    for pair in measured {
        assert!(pair["bus_gbs"].as_f64().unwrap() > 0.0, "{pair:#}");
    }
    assert!(healthy.findings("nccl_slow_node").is_empty());
    assert!(healthy.findings("nccl_slow_link").is_empty());

    nccl_node(&slurm, 3, true, "hca_gbps = 100.0\n");
    let slow = nccl_run_on(&slurm, (4, 4), &stackbench, "");
    assert_eq!(slow.exit_code, "1:0", "{}\n{}", slow.log, slow.stderr);
    let pairs = slow.check("nccl.node_pairs");
    assert_eq!(pairs["status"], "warn", "{pairs:#}");
    let bus = |a: &str, b: &str| {
        (pairs["details"]["pairs"].as_array().unwrap().iter())
            .find(|p| p["a"] == a && p["b"] == b)
            .and_then(|p| p["bus_gbs"].as_f64())
            .unwrap_or_else(|| panic!("no {a}-{b} in {pairs:#}"))
    };
    // The simulated NCCL moves what the slower HCA of a pair allows: 12.5 GB/s against 50.
    assert!(
        bus("sim2", "sim3") * 3.0 < bus("sim1", "sim2")
            && bus("sim3", "sim4") * 3.0 < bus("sim4", "sim1"),
        "{pairs:#}"
    );
    let named = slow.findings("nccl_slow_node");
    assert_eq!(named.len(), 1, "{:#}", slow.report["node"]);
    let message = named[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("sim3 is slow with each of its neighbours"),
        "{message}"
    );
    assert!(named[0]["fix"].as_str().unwrap().contains("drain sim3"));
    assert!(slow.findings("nccl_slow_link").is_empty());
    assert!(
        slow.log
            .contains("| warning | `nccl_slow_node` | sim3 is slow"),
        "{}",
        slow.log
    );
}

/// The processes left on this machine whose command line runs `check --nodes` or a check
/// worker.
fn leftovers() -> Vec<String> {
    let mut left = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let words: Vec<String> = cmdline
            .split(|&b| b == 0)
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        if words.iter().any(|w| w == "--nodes" || w == "__check") {
            left.push(words.join(" "));
        }
    }
    left
}

#[test]
fn a_rank_that_never_starts_ends_the_job_after_the_deadline_naming_its_node_and_nothing_is_left() {
    if !as_root("a_rank_that_never_starts_ends_the_job_after_the_deadline_naming_its_node_and_nothing_is_left") {
        return;
    }
    let _one = ONE_SLURM.lock().unwrap_or_else(|e| e.into_inner());
    let slurm = LocalSlurm::start_with_gpus(2, 4, &[]);
    nccl_node(&slurm, 1, true, "");
    nccl_node(&slurm, 2, true, "");
    // Task 5 (sim2's second) exits before stackbench would start.
    let wrapper = slurm.dir.path().join("rank-5-never-starts");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n[ \"$SLURM_PROCID\" = 5 ] && exit 0\nexec {} \"$@\"\n",
            common::stackbench_bin().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let started = Instant::now();
    let job = nccl_run(&slurm, &wrapper, "--join-within 8");
    assert_eq!(job.exit_code, "1:0", "{}\n{}", job.log, job.stderr);
    let init = job.check("nccl.init");
    assert_eq!(init["status"], "fail", "{init:#}");
    let reason = init["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("rank(s) 5 (on sim2) never joined the rendezvous at 127.0.0.1:")
            && reason.contains("within 8 s"),
        "{reason}"
    );
    let missing = job.findings("nccl_rank_missing");
    assert_eq!(missing.len(), 1, "{:#}", job.report["node"]);
    assert!(
        missing[0]["message"]
            .as_str()
            .unwrap()
            .contains("placed on sim2"),
        "{:#}",
        missing[0]
    );
    // The ranks that joined were told to stop: none waited out its own deadline's grace.
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "{:?}",
        started.elapsed()
    );
    for task in [1, 4, 7] {
        assert!(
            job.stderr.contains(&format!("rank {task} of 8 on sim")),
            "task {task}:\n{}",
            job.stderr
        );
    }
    assert_eq!(leftovers(), Vec::<String>::new());
}

/// `bench --nodes` (`--quick`) on 2 nodes of 2 GPUs: every collective at every size of the
/// sweep measured across the 4 ranks and keyed by the job's shape. With sim2 without rdma-core
/// the same rows fall to a socket's speed, the job's finding names sim2, and `compare` calls the
/// largest rows slower.
#[test]
fn bench_across_two_nodes_sweeps_every_collective_and_compare_calls_the_fallback_slower() {
    if !as_root(
        "bench_across_two_nodes_sweeps_every_collective_and_compare_calls_the_fallback_slower",
    ) {
        return;
    }
    let _one = ONE_SLURM.lock().unwrap_or_else(|e| e.into_inner());
    let slurm = LocalSlurm::start_with_gpus(2, 2, &[]);
    let stackbench = common::stackbench_bin();
    nccl_node(&slurm, 1, true, "");
    nccl_node(&slurm, 2, true, "");
    let healthy = nccl_job(&slurm, "bench", (2, 4), &stackbench, "--quick");
    assert_eq!(
        healthy.exit_code, "0:0",
        "{}\n{}",
        healthy.log, healthy.stderr
    );
    let rows = healthy.report["benchmarks"].as_array().unwrap();
    // 4 collectives x 4 sizes (8 B to the simulator's 1 MiB, x64 a step), each over the 4 ranks.
    assert_eq!(rows.len(), 16, "{:#}", healthy.report);
    for row in rows {
        assert_eq!(row["status"], "measured", "{row:#}");
        assert!(row["id"].as_str().unwrap().ends_with("/2n4r"), "{row:#}");
        assert_eq!(row["samples_ns"].as_array().unwrap().len(), 5, "{row:#}");
        assert_eq!(
            row["nccl"]["hosts"],
            serde_json::json!(["sim1", "sim1", "sim2", "sim2"])
        );
        assert_eq!(row["nccl"]["devices"], serde_json::json!([0, 1, 0, 1]));
        assert!(row["nccl"]["busbw_gbps"].as_f64().unwrap() > 0.0, "{row:#}");
    }
    let busbw = |job: &NcclJob, collective: &str| {
        let rows = job.report["benchmarks"].as_array().unwrap();
        let row = (rows.iter())
            .find(|r| {
                r["parameters"]["implementation"] == collective
                    && r["parameters"]["size"] == 1 << 20
            })
            .unwrap_or_else(|| panic!("no {collective} at 1 MiB: {:#}", job.report));
        row["nccl"]["busbw_gbps"].as_f64().unwrap()
    };
    let fast: Vec<f64> = COLLECTIVES.iter().map(|c| busbw(&healthy, c)).collect();
    let job = &healthy.report["job"];
    assert!(job.get("findings").is_none(), "{job:#}");
    let transport = (job["checks"].as_array().unwrap().iter())
        .find(|c| c["id"] == "nccl.transport")
        .unwrap();
    assert!(
        transport["reason"]
            .as_str()
            .unwrap()
            .contains("sim1 -> sim2 via NET/IB/0/GDRDMA"),
        "{transport:#}"
    );
    // Rank 0 wrote the run's files beside the report, and the job log holds its Markdown.
    assert!(
        healthy
            .files
            .iter()
            .any(|f| f.starts_with("bench-") && f.ends_with(".json")),
        "{:?}",
        healthy.files
    );
    assert!(
        healthy
            .log
            .contains("2 nodes, 4 ranks: sim1 (ranks 0-1), sim2 (ranks 2-3)")
            && healthy
                .log
                .contains("NCCL across 2 nodes, 4 ranks (sim1: GPUs 0, 1; sim2: GPUs 0, 1)"),
        "{}",
        healthy.log
    );

    // Sockets asked for (--net Socket): measured at a socket's speed, and no fallback named.
    let sockets = nccl_job(&slurm, "bench", (2, 4), &stackbench, "--quick --net Socket");
    assert_eq!(
        sockets.exit_code, "0:0",
        "{}\n{}",
        sockets.log, sockets.stderr
    );
    assert!(busbw(&sockets, "all_reduce") < 3.2, "{:#}", sockets.report);
    let job = &sockets.report["job"];
    assert!(job.get("findings").is_none(), "{job:#}");
    assert!(
        job.to_string().contains("sim1 -> sim2 via NET/Socket/0"),
        "{job:#}"
    );

    nccl_node(&slurm, 2, false, "");
    let fallback = nccl_job(&slurm, "bench", (2, 4), &stackbench, "--quick");
    assert_eq!(
        fallback.exit_code, "1:0",
        "{}\n{}",
        fallback.log, fallback.stderr
    );
    for (c, fast) in COLLECTIVES.iter().zip(&fast) {
        let slow = busbw(&fallback, c);
        // The simulated 25 GbE NIC moves 3.125 GB/s; one NDR HCA 50.
        assert!(
            slow < 3.2 && slow * 4.0 < *fast,
            "{c}: {slow} GB/s over sockets, {fast} over IB"
        );
    }
    let findings = fallback.report["job"]["findings"].as_array().unwrap();
    assert!(
        findings.iter().any(|f| f["cause"] == "nccl_net_fallback"
            && f["message"]
                .as_str()
                .unwrap()
                .starts_with("sim2: NCCL uses sockets")),
        "{findings:#?}"
    );

    // compare holds the two jobs' runs against each other, row by row.
    let dir = slurm.dir.path();
    let (old, new) = (dir.join("healthy.json"), dir.join("fallback.json"));
    std::fs::write(&old, healthy.report.to_string()).unwrap();
    std::fs::write(&new, fallback.report.to_string()).unwrap();
    let compared = Command::new(&stackbench)
        .args(["compare", "--format", "json"])
        .arg(&old)
        .arg(&new)
        .output()
        .expect("run stackbench compare");
    assert_eq!(
        compared.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&compared.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&compared.stdout).unwrap();
    for c in COLLECTIVES {
        let row = (report["benchmarks"].as_array().unwrap().iter())
            .find(|r| {
                let id = r["id"].as_str().unwrap();
                id.contains(&format!("/{c}/1048576/")) && id.ends_with("/2n4r")
            })
            .unwrap_or_else(|| panic!("no {c} row: {report:#}"));
        assert_eq!(row["verdict"], "slower", "{row:#}");
    }
}
