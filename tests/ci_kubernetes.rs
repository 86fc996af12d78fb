//! Kubernetes: `ci/Dockerfile` and the manifests under `ci/k8s/`, run by their own tools and
//! for real. kubernetes-validate (strict, offline schemas of Kubernetes 1.29, the oldest the Job
//! needs, and 1.37) passes every manifest and fails on broken copies; hadolint passes the
//! Dockerfile and fails on broken copies; the manifests say what the fleet needs (one pod per
//! node by required anti-affinity, Guaranteed QoS with all of a node's GPUs, a deadline beyond
//! each step's own limit, the GPU taint tolerated, `generateName`, a pinned image, the shipped
//! claim mounted where the scripts write); the pods' and the merge step's scripts pass bash -n and
//! shellcheck, and run on the simulated GPU as they run in a pod: each node's steps are recorded
//! (a pass, a failed check, a hang cut off by its limit, a pod stopped), and the merge step
//! tells the failed nodes and merges what came back. The tools come from `ci/fetch-ci-tools`
//! (`ci/test` runs it); a missing tool fails the test. There is no docker or kubectl here: the
//! image is not built and nothing is applied to a cluster.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use serde_yaml::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The Kubernetes versions the manifests are validated against: 1.29 is the first where
/// `backoffLimitPerIndex` is on by default; 1.37 the newest kubernetes-validate knows.
const VERSIONS: [&str; 2] = ["1.29.0", "1.37.0"];
const MANIFESTS: [&str; 5] = [
    "bench-job.yaml",
    "merge-job.yaml",
    "nccl-job.yaml",
    "nccl-service.yaml",
    "results-claim.yaml",
];
/// The Jobs, each created afresh for a run.
const JOBS: [&str; 3] = ["bench-job.yaml", "merge-job.yaml", "nccl-job.yaml"];
/// The Jobs of one pod per GPU node.
const NODE_JOBS: [&str; 2] = ["bench-job.yaml", "nccl-job.yaml"];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn k8s(name: &str) -> PathBuf {
    repo().join("ci/k8s").join(name)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn run(program: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn yaml(name: &str) -> Value {
    serde_yaml::from_str(&read(&k8s(name))).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn int(value: &Value) -> i64 {
    value
        .as_i64()
        .unwrap_or_else(|| panic!("not an integer: {value:?}"))
}

// ---- kubernetes-validate -------------------------------------------------------------------------

/// kubernetes-validate 1.37.0 names a resource by `metadata.name` when it reports, and fails with
/// `KeyError: 'name'` on one that has only `generateName` (its verdict is right, its message a
/// traceback): the copy it reports on gets a name after its generateName.
fn named(manifest: &str) -> String {
    let mut out = String::new();
    let mut done = false;
    for line in manifest.lines() {
        out.push_str(line);
        out.push('\n');
        if let Some(prefix) = line.strip_prefix("  generateName: ").filter(|_| !done) {
            out.push_str(&format!("  name: {prefix}validate\n"));
            done = true;
        }
    }
    out
}

/// kubernetes-validate --strict of `manifest` (from standard input) against `version`.
fn validate(manifest: &str, version: &str) -> Output {
    let tool = common::ci_tool("kubernetes-validate");
    run(&tool, &["--strict", "-k", version, "-"], Some(manifest))
}

#[test]
fn kubernetes_validate_passes_every_manifest_strictly() {
    let mut found: Vec<String> = std::fs::read_dir(repo().join("ci/k8s"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(found, MANIFESTS);
    let tool = common::ci_tool("kubernetes-validate");
    for version in VERSIONS {
        for name in MANIFESTS {
            let path = k8s(name);
            // The file itself, as a user runs it (--quiet: nothing to name when it passes).
            let args = ["--strict", "--quiet", "-k", version, path.to_str().unwrap()];
            let quiet = run(&tool, &args, None);
            assert_eq!(
                quiet.status.code(),
                Some(0),
                "{name} {version}: {}",
                text(&quiet)
            );
            let output = validate(&named(&read(&path)), version);
            let said = text(&output);
            assert_eq!(output.status.code(), Some(0), "{name} {version}: {said}");
            assert!(said.contains("passed for resource"), "{said}");
        }
    }
}

#[test]
fn kubernetes_validate_fails_on_broken_copies() {
    let broken = [
        // A misspelt field.
        (
            "bench-job.yaml",
            "activeDeadlineSeconds: 10800",
            "activeDeadlineSecond: 10800",
            "('activeDeadlineSecond' was unexpected)",
        ),
        // A wrong type: a word where a count goes.
        (
            "bench-job.yaml",
            "parallelism: 4",
            "parallelism: four",
            "spec.parallelism: 'four' is not of type 'integer', 'null'",
        ),
        // A field in the wrong place: the toleration's effect under the pod.
        (
            "bench-job.yaml",
            "          effect: NoSchedule",
            "      effect: NoSchedule",
            "('effect' was unexpected)",
        ),
        // A list given as a string.
        (
            "results-claim.yaml",
            "accessModes:\n    - ReadWriteMany",
            "accessModes: ReadWriteMany",
            "spec.accessModes: 'ReadWriteMany' is not of type 'array', 'null'",
        ),
    ];
    for (name, good, bad, message) in broken {
        let manifest = read(&k8s(name));
        assert!(manifest.contains(good), "{name} holds {good:?}");
        let copy = manifest.replacen(good, bad, 1);
        let output = validate(&named(&copy), VERSIONS[0]);
        let said = text(&output);
        assert_eq!(output.status.code(), Some(1), "{name} with {bad:?}: {said}");
        assert!(said.contains(message), "{name} with {bad:?}: {said}");
        // Unnamed, as the file is: still a failure.
        let unnamed = validate(&copy, VERSIONS[0]);
        assert_ne!(unnamed.status.code(), Some(0), "{}", text(&unnamed));
    }
}

#[test]
fn the_bench_job_needs_kubernetes_1_29_for_its_backoff_limit_per_index() {
    let output = validate(&named(&read(&k8s("bench-job.yaml"))), "1.27.0");
    let said = text(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains("('backoffLimitPerIndex' was unexpected)"),
        "{said}"
    );
}

// ---- hadolint ------------------------------------------------------------------------------------

fn dockerfile() -> String {
    read(&repo().join("ci/Dockerfile"))
}

fn hadolint(path: &Path) -> Output {
    run(
        &common::ci_tool("hadolint"),
        &["--no-color", path.to_str().unwrap()],
        None,
    )
}

#[test]
fn hadolint_passes_the_dockerfile() {
    let output = hadolint(&repo().join("ci/Dockerfile"));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
}

#[test]
fn hadolint_fails_on_broken_copies() {
    let broken = [
        (
            "FROM python:3.11.7-slim-bookworm",
            "FROM python:latest",
            "DL3007",
        ),
        (
            "USER 10001:10001",
            "RUN apt-get update && apt-get install -y --no-install-recommends curl \
             && rm -rf /var/lib/apt/lists/*\nUSER 10001:10001",
            "DL3008",
        ),
        ("nvidia-nccl-cu12==2.27.5", "nvidia-nccl-cu12", "DL3013"),
        ("pip install --no-cache-dir", "pip install", "DL3042"),
        ("USER 10001:10001", "USER root", "DL3002"),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (good, bad, rule) in broken {
        let original = dockerfile();
        assert!(original.contains(good), "the Dockerfile holds {good:?}");
        let copy = dir.path().join("Dockerfile");
        std::fs::write(&copy, original.replacen(good, bad, 1)).unwrap();
        let output = hadolint(&copy);
        let said = text(&output);
        assert_eq!(output.status.code(), Some(1), "{bad:?}: {said}");
        assert!(said.contains(rule), "{bad:?} is {rule}: {said}");
    }
}

// ---- the Dockerfile ------------------------------------------------------------------------------

/// The value of `NAME=` in `ci/fetch-toolkits`.
fn fixture_version(name: &str) -> String {
    let script = read(&repo().join("ci/fetch-toolkits"));
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("ci/fetch-toolkits sets no {name}"));
    line.split_whitespace().next().unwrap().to_string()
}

/// The wheel `ci/package` builds for this release, which the image installs.
fn packaged_wheel() -> String {
    format!(
        "stackbench-{}-py3-none-manylinux_2_28_x86_64.whl",
        env!("CARGO_PKG_VERSION")
    )
}

#[test]
fn the_image_installs_the_packaged_wheel_beside_the_fixtures_cuda_12_9_runtime() {
    let file = dockerfile();
    let stages: Vec<&str> = file.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(
        stages.len(),
        1,
        "one stage, no build of its own: {stages:?}"
    );
    assert!(!file.contains("cargo "), "the image builds nothing");
    let wheel = packaged_wheel();
    assert!(file.contains(&format!("COPY target/dist/{wheel} /tmp/\n")));
    assert!(file.contains(&format!(
        "pip install --no-cache-dir --disable-pip-version-check \\\n        /tmp/{wheel} \\\n"
    )));
    // The runtime: the wheels of the venv-cu12 fixture the tests run stackbench on.
    for (wheel, var) in [
        ("nvidia-cuda-runtime-cu12", "CU12_CUDART"),
        ("nvidia-cuda-nvrtc-cu12", "CU12_NVRTC"),
        ("nvidia-cuda-cupti-cu12", "CU12_CUPTI"),
        ("nvidia-cublas-cu12", "CU12_CUBLAS"),
        ("nvidia-cudnn-cu12", "CU12_CUDNN"),
        ("nvidia-nccl-cu12", "CU12_NCCL"),
    ] {
        let pin = format!("{wheel}=={}", fixture_version(var));
        assert!(file.contains(&pin), "the image pins {pin}");
    }
    let python = format!(
        "FROM python:{}-slim-bookworm",
        fixture_version("VENV_PYTHON")
    );
    assert_eq!(stages[0], python);
    // Without `compute`, the toolkit mounts NVML only.
    assert!(file.contains("NVIDIA_DRIVER_CAPABILITIES=compute,utility"));
}

#[test]
fn the_image_runs_as_the_user_the_pods_ask_for_and_the_build_context_is_the_wheel_only() {
    let file = dockerfile();
    let user = file
        .lines()
        .filter_map(|l| l.strip_prefix("USER "))
        .next_back()
        .expect("a USER line");
    let (uid, gid) = user.split_once(':').expect("USER uid:gid");
    for job in ["bench-job.yaml", "merge-job.yaml"] {
        let context = &yaml(job)["spec"]["template"]["spec"]["securityContext"];
        assert_eq!(context["runAsNonRoot"], true, "{job}");
        assert_eq!(context["runAsUser"].as_i64().unwrap().to_string(), uid);
        assert_eq!(context["runAsGroup"].as_i64().unwrap().to_string(), gid);
    }
    assert_ne!(uid, "0");
    // .dockerignore leaves everything out but the wheel the image copies.
    let ignore = read(&repo().join(".dockerignore"));
    let rules: Vec<&str> = ignore
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(rules.first(), Some(&"*"), "{rules:?}");
    let kept: Vec<&str> = rules.iter().filter_map(|r| r.strip_prefix('!')).collect();
    let copied: Vec<&str> = file
        .lines()
        .filter_map(|l| l.strip_prefix("COPY "))
        .filter(|l| !l.starts_with("--from"))
        .flat_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words[..words.len() - 1].to_vec()
        })
        .collect();
    for path in &copied {
        let path = path.trim_end_matches('/');
        assert!(
            kept.iter().any(|k| k.trim_end_matches('/') == path),
            "{path} is copied but ignored: {kept:?}"
        );
    }
    assert_eq!(kept, [format!("target/dist/{}", packaged_wheel())]);
    for heavy in [
        "target/release",
        ".toolkits",
        ".build-fixtures",
        ".ci-tools",
        ".git",
    ] {
        assert!(
            !kept.iter().any(|k| k.starts_with(heavy)),
            "{heavy} is sent"
        );
    }
}

// ---- what the manifests say ----------------------------------------------------------------------

fn pod(job: &str) -> Value {
    yaml(job)["spec"]["template"]["spec"].clone()
}

/// The value of the container's environment variable `name`.
fn env(container: &Value, name: &str) -> Value {
    container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {container:?}"))["value"]
        .clone()
}

#[test]
fn each_job_is_created_afresh_by_generate_name_and_says_create_not_apply() {
    for job in JOBS {
        let manifest = yaml(job);
        let generated = (manifest["metadata"]["generateName"].as_str()).unwrap_or_else(|| {
            panic!("{job} has no generateName: a second run would create nothing")
        });
        assert!(generated.ends_with('-'), "{generated}");
        assert!(manifest["metadata"]["name"].is_null(), "{job} has a name");
        let header = read(&k8s(job));
        assert!(
            header.contains(&format!("kubectl create -f ci/k8s/{job}")),
            "{job}'s header says to run it with `kubectl create -f`"
        );
        assert!(
            !header.contains(&format!("kubectl apply -f ci/k8s/{job}")),
            "{job}'s header says `kubectl apply`, which a generateName refuses"
        );
    }
}

#[test]
fn the_node_jobs_run_one_pod_per_node_by_required_anti_affinity() {
    for job in NODE_JOBS {
        one_pod_per_node(job);
    }
}

fn one_pod_per_node(job: &str) {
    let job = yaml(job);
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], spec["parallelism"]);
    assert_eq!(int(&spec["backoffLimitPerIndex"]), 0);
    assert_eq!(spec["template"]["spec"]["restartPolicy"], "Never");
    let terms = spec["template"]["spec"]["affinity"]["podAntiAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]
        .as_sequence()
        .expect("required pod anti-affinity");
    let labels = spec["template"]["metadata"]["labels"].as_mapping().unwrap();
    let term = terms
        .iter()
        .find(|t| t["topologyKey"] == "kubernetes.io/hostname")
        .expect("a term by node");
    let selector = term["labelSelector"]["matchLabels"].as_mapping().unwrap();
    assert!(!selector.is_empty());
    for (key, value) in selector {
        assert_eq!(labels.get(key), Some(value), "the pods carry {key:?}");
    }
}

#[test]
fn every_container_is_guaranteed_qos_and_the_node_jobs_take_all_eight_gpus() {
    for job in JOBS {
        let pod = pod(job);
        let containers = (pod["containers"].as_sequence().unwrap().iter())
            .chain(pod["initContainers"].as_sequence().into_iter().flatten());
        for container in containers {
            let resources = &container["resources"];
            assert_eq!(resources["requests"], resources["limits"], "{job}");
            for key in ["cpu", "memory"] {
                assert!(!resources["limits"][key].is_null(), "{job} limits {key}");
            }
        }
    }
    for job in NODE_JOBS {
        let resources = &pod(job)["containers"][0]["resources"];
        assert_eq!(int(&resources["limits"]["nvidia.com/gpu"]), 8, "{job}");
    }
}

#[test]
fn the_node_jobs_tolerate_the_gpu_taint() {
    for job in NODE_JOBS {
        let tolerations = pod(job)["tolerations"].clone();
        let found = tolerations.as_sequence().unwrap().iter().any(|t| {
            t["key"] == "nvidia.com/gpu" && t["operator"] == "Exists" && t["effect"] == "NoSchedule"
        });
        assert!(found, "{job}: {tolerations:?}");
    }
}

/// The NCCL job's ranks find rank 0 by DNS: index 0's name under the headless Service, which
/// publishes the pods before they are ready; every rank runs at once, one per GPU; a rank that
/// never starts is named before the Job's deadline stops the pods.
#[test]
fn the_nccl_job_s_ranks_find_rank_0_under_its_headless_service() {
    let job = yaml("nccl-job.yaml");
    let spec = &job["spec"];
    let pod = &spec["template"]["spec"];
    let container = &pod["containers"][0];
    let service = yaml("nccl-service.yaml");
    let name = service["metadata"]["name"].as_str().unwrap();
    assert_eq!(pod["subdomain"], name);
    assert_eq!(service["spec"]["clusterIP"], "None");
    assert_eq!(service["spec"]["publishNotReadyAddresses"], true);
    let labels = spec["template"]["metadata"]["labels"].as_mapping().unwrap();
    for (key, value) in service["spec"]["selector"].as_mapping().unwrap() {
        assert_eq!(labels.get(key), Some(value), "the pods carry {key:?}");
    }
    assert_eq!(
        env(container, "MASTER_ADDR"),
        format!("$(JOB_NAME)-0.{name}").as_str()
    );
    let port = env(container, "MASTER_PORT");
    assert_eq!(
        service["spec"]["ports"][0]["port"]
            .as_i64()
            .map(|p| p.to_string()),
        port.as_str().map(str::to_owned)
    );
    // JOB_NAME is defined before MASTER_ADDR: Kubernetes expands $(VAR) of earlier entries only.
    let names: Vec<&str> = (container["env"].as_sequence().unwrap().iter())
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    let at = |n: &str| names.iter().position(|x| *x == n).unwrap();
    assert!(at("JOB_NAME") < at("MASTER_ADDR"), "{names:?}");
    let number = |n: &str| -> i64 { env(container, n).as_str().unwrap().parse().unwrap() };
    assert_eq!(number("NODES"), int(&spec["completions"]));
    assert_eq!(int(&spec["completions"]), int(&spec["parallelism"]));
    assert_eq!(
        number("GPUS"),
        int(&container["resources"]["limits"]["nvidia.com/gpu"])
    );
    assert!(number("JOIN_WITHIN") < int(&spec["activeDeadlineSeconds"]));
    assert!(read(&k8s("nccl-job.yaml")).contains("kubectl apply -f ci/k8s/nccl-service.yaml"));
}

#[test]
fn each_step_is_cut_off_before_the_jobs_deadline() {
    let job = yaml("bench-job.yaml");
    let deadline = int(&job["spec"]["activeDeadlineSeconds"]);
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let limit = |name: &str| -> i64 { env(container, name).as_str().unwrap().parse().unwrap() };
    // Each step's `timeout --kill-after=30`: a hung step is recorded before the Job stops the pod.
    let steps = limit("CHECK_TIMEOUT") + 30 + limit("BENCH_TIMEOUT") + 30;
    assert!(steps < deadline, "steps {steps} s, deadline {deadline} s");
    assert!(script("bench-job.yaml").contains("timeout --kill-after=30"));
    let merge = yaml("merge-job.yaml");
    assert!(int(&merge["spec"]["activeDeadlineSeconds"]) > 0);
}

#[test]
fn every_image_is_pinned_by_a_tag_and_every_job_runs_the_same_one() {
    let images: Vec<String> = JOBS
        .iter()
        .map(|job| {
            pod(job)["containers"][0]["image"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    for image in &images {
        let (_, tag) = image.rsplit_once(':').expect("a tag");
        assert!(!tag.contains('/') && !tag.is_empty(), "{image}");
        assert_ne!(tag, "latest", "{image}");
    }
    assert!(images.iter().all(|i| *i == images[0]), "{images:?}");
}

#[test]
fn the_shipped_claim_is_read_write_many_and_mounted_where_the_scripts_write() {
    let claim = yaml("results-claim.yaml");
    assert_eq!(claim["kind"], "PersistentVolumeClaim");
    let modes = claim["spec"]["accessModes"].as_sequence().unwrap();
    assert!(modes.iter().any(|m| m == "ReadWriteMany"), "{modes:?}");
    for job in ["bench-job.yaml", "merge-job.yaml"] {
        let pod = pod(job);
        let volume = pod["volumes"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|v| v["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"])
            .unwrap_or_else(|| panic!("{job} mounts no {:?}", claim["metadata"]["name"]));
        let container = &pod["containers"][0];
        let mount = container["volumeMounts"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|m| m["name"] == volume["name"])
            .expect("the claim's volume is mounted");
        assert_eq!(mount["mountPath"], env(container, "RESULTS"), "{job}");
        assert!(
            script(job).contains("$RESULTS/"),
            "{job} writes under $RESULTS"
        );
    }
}

// ---- the scripts ---------------------------------------------------------------------------------

/// The bash script a Job's container runs (`/bin/bash -c SCRIPT`).
fn script(job: &str) -> String {
    let container = &pod(job)["containers"][0];
    assert_eq!(container["command"][0], "/bin/bash", "{job}");
    assert_eq!(container["command"][1], "-c", "{job}");
    container["args"][0].as_str().unwrap().to_string()
}

#[test]
fn every_embedded_script_parses_and_passes_shellcheck() {
    let dir = tempfile::tempdir().unwrap();
    for job in JOBS {
        let file = dir.path().join(job.replace(".yaml", ".sh"));
        std::fs::write(&file, script(job)).unwrap();
        let path = file.to_str().unwrap();
        let parsed = run(Path::new("bash"), &["-n", path], None);
        assert!(parsed.status.success(), "{job}: {}", text(&parsed));
        let checked = run(
            &common::ci_tool("shellcheck"),
            &["--shell=bash", path],
            None,
        );
        assert!(checked.status.success(), "{job}:\n{}", text(&checked));
    }
}

/// A pod of the Jobs, run here: its script with the environment Kubernetes gives it, the
/// results folder `results`, stackbench on PATH, and the simulated GPU as its node.
struct Pod {
    bin: tempfile::TempDir,
    results: PathBuf,
}

impl Pod {
    fn new(results: &Path) -> Pod {
        let bin = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(common::stackbench_bin(), bin.path().join("stackbench"))
            .unwrap();
        Pod {
            bin,
            results: results.to_path_buf(),
        }
    }

    /// `/bin/bash -c SCRIPT` of `job`, as its container runs it.
    fn command(&self, job: &str, env: &[(&str, &str)]) -> Command {
        let mut command = Command::new("/bin/bash");
        command
            .arg("-c")
            .arg(script(job))
            .env_clear()
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", self.bin.path().display()),
            )
            .env("HOME", self.bin.path())
            .env("RESULTS", &self.results)
            .envs(env.iter().copied());
        command
    }

    /// Node `node`'s textfile directory (its hostPath), created.
    fn textfile(&self, node: &str) -> PathBuf {
        let dir = self.results.join(format!("textfile-{node}"));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The `.prom` files in node `node`'s textfile directory, by name, with their text.
    fn metrics(&self, node: &str) -> Vec<(String, String)> {
        let dir = self.textfile(node);
        let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| {
                let name = e.unwrap().file_name().to_string_lossy().into_owned();
                let text = read(&dir.join(&name));
                (name, text)
            })
            .collect();
        files.sort();
        files
    }

    /// A bench pod of the Job `stackbench-bench-test` on node `node`, the simulator's `profile`,
    /// its check cut off after `check_timeout` seconds.
    fn bench(&self, node: &str, index: &str, profile: &str, check_timeout: &str) -> Command {
        let sim = common::simulator();
        let profile_path = self.results.join(format!("{node}.toml"));
        std::fs::write(&profile_path, profile).unwrap();
        let on_sim = format!(
            "--no-system --root {} --driver-dir {}",
            sim.toolkit_dir.display(),
            sim.driver_dir.display()
        );
        let bench_options = format!("{on_sim} --quick --repeat 1 --filter cublas/f16/");
        let mut command = self.command(
            "bench-job.yaml",
            &[
                ("JOB_NAME", "stackbench-bench-test"),
                ("NODE_NAME", node),
                ("JOB_COMPLETION_INDEX", index),
                ("CHECK_TIMEOUT", check_timeout),
                ("BENCH_TIMEOUT", "120"),
                ("CHECK_OPTIONS", &on_sim),
                ("BENCH_OPTIONS", &bench_options),
                ("TEXTFILE_DIR", self.textfile(node).to_str().unwrap()),
            ],
        );
        command.env("STACKBENCH_SIM_PROFILE", profile_path);
        command
    }
}

/// The `status` file of `node`, as `key=value` pairs.
fn status(results: &Path, node: &str) -> Vec<(String, String)> {
    read(
        &results
            .join("stackbench-bench-test")
            .join(node)
            .join("status"),
    )
    .lines()
    .map(|l| {
        let (k, v) = l.split_once('=').expect("key=value");
        (k.to_string(), v.to_string())
    })
    .collect()
}

fn steps(results: &Path, node: &str) -> (String, String) {
    let status = status(results, node);
    let get = |key: &str| {
        (status.iter())
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("{node}: no {key} in {status:?}"))
    };
    (get("check"), get("bench"))
}

#[test]
fn each_pod_records_its_nodes_steps_and_the_merge_step_marks_the_failed_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let pod = Pod::new(dir.path());
    let run_dir = dir.path().join("stackbench-bench-test");
    let healthy = pod.bench("node-a", "0", "", "120").output().unwrap();
    assert_eq!(healthy.status.code(), Some(0), "{}", text(&healthy));
    assert_eq!(steps(dir.path(), "node-a"), ("0".into(), "0".into()));
    let node_a = run_dir.join("node-a");
    assert!(node_a.join("check.json").is_file());
    let bench_json = std::fs::read_dir(&node_a)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("bench-") && n.ends_with(".json"))
        .count();
    assert_eq!(bench_json, 1);
    // Wrong GEMMs: check and bench fail, the pod exits with check's status.
    let wrong = "[faults]\nwrong_results = \"gemm\"\n";
    let failed = pod.bench("node-b", "1", wrong, "120").output().unwrap();
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    assert_eq!(steps(dir.path(), "node-b"), ("1".into(), "1".into()));
    // A kernel that never completes: check is cut off (124) and bench still runs.
    let hang = "[faults]\nkernel_hang = \"vector_add\"\n";
    let hung = pod.bench("node-c", "2", hang, "3").output().unwrap();
    assert_eq!(hung.status.code(), Some(124), "{}", text(&hung));
    assert_eq!(steps(dir.path(), "node-c"), ("124".into(), "0".into()));
    assert!(!run_dir.join("node-c/check.json").exists());
    // Each node's metrics in its textfile directory: both steps' where both wrote JSON,
    // with node-b's failing GEMM check; only the bench's where the check hung.
    let names = |node| -> Vec<String> { pod.metrics(node).into_iter().map(|(n, _)| n).collect() };
    let both = ["stackbench-bench.prom", "stackbench-check.prom"];
    assert_eq!(names("node-a"), both);
    assert_eq!(names("node-b"), both);
    assert_eq!(names("node-c"), ["stackbench-bench.prom"]);
    let node_b = pod.metrics("node-b");
    let failed = node_b[1].1.lines().any(|l| {
        l.starts_with("stackbench_check_status{")
            && l.contains("check=\"cublas.")
            && l.ends_with("status=\"fail\"} 1")
    });
    assert!(failed, "{}", node_b[1].1);
    assert!(
        node_b[0].1.contains("\nstackbench_bench_status{"),
        "{}",
        node_b[0].1
    );

    let merged = pod.command("merge-job.yaml", &[]).output().unwrap();
    let said = String::from_utf8_lossy(&merged.stdout).into_owned();
    assert_eq!(merged.status.code(), Some(1), "{}", text(&merged));
    assert!(
        said.starts_with("run stackbench-bench-test: 3 nodes reported\n"),
        "{said}"
    );
    for line in [
        "ok     node-a (host ",
        "FAILED node-b (host ",
        "FAILED node-c (host ",
    ] {
        assert!(said.contains(line), "{line:?} in {said}");
    }
    assert!(said.contains("): check 124, bench 0\n"), "{said}");
    for (kind, nodes) in [("check", 2), ("bench", 3)] {
        let file = run_dir.join(format!("merged-{kind}.json"));
        let report: serde_json::Value = serde_json::from_str(&read(&file)).unwrap();
        assert_eq!(report["kind"], kind);
        assert_eq!(report["nodes"].as_array().unwrap().len(), nodes, "{kind}");
        assert!(run_dir.join(format!("merged-{kind}.md")).is_file());
        assert!(
            said.contains(&format!("stackbench merge ({kind}, {nodes} nodes)")),
            "{said}"
        );
    }
}

#[test]
fn a_pod_stopped_by_its_deadline_records_the_step_it_was_in() {
    let dir = tempfile::tempdir().unwrap();
    let pod = Pod::new(dir.path());
    let hang = "[faults]\nkernel_hang = \"vector_add\"\n";
    let mut child = pod
        .bench("node-d", "3", hang, "120")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status_file = dir.path().join("stackbench-bench-test/node-d/status");
    while !std::fs::read_to_string(&status_file).is_ok_and(|s| s.contains("check=running")) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "check never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // What the kubelet sends at activeDeadlineSeconds.
    let pid = child.id().to_string();
    let kill = run(Path::new("kill"), &["-TERM", &pid], None);
    assert!(kill.status.success());
    let code = child.wait().unwrap().code();
    assert_eq!(code, Some(143));
    assert_eq!(
        steps(dir.path(), "node-d"),
        ("terminated".into(), "pending".into())
    );
}

#[test]
fn the_merge_step_without_a_run_exits_2_saying_what_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let pod = Pod::new(dir.path());
    let output = pod.command("merge-job.yaml", &[]).output().unwrap();
    let said = text(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(
        said.contains("run ci/k8s/bench-job.yaml first (kubectl create -f)"),
        "{said}"
    );
    let named = (pod.command("merge-job.yaml", &[("RUN", "stackbench-bench-gone")]))
        .output()
        .unwrap();
    assert_eq!(named.status.code(), Some(2), "{}", text(&named));
    assert!(
        text(&named).contains("stackbench-bench-gone"),
        "{}",
        text(&named)
    );
}

/// The NCCL job's pods, run here: two pods of two simulated GPUs each (their own profiles and
/// loopback addresses, as two nodes), every rank meeting rank 0 at MASTER_ADDR; rank 0's report
/// holds all four ranks, every collective verified, and each pod exits 0.
#[test]
fn the_nccl_job_s_pods_run_every_rank_of_the_job_on_the_simulator() {
    let results = tempfile::tempdir().unwrap();
    let pod = Pod::new(results.path());
    let sim = common::simulator();
    let on_sim = format!(
        "--no-system --root {} --driver-dir {} --timeout 60",
        sim.toolkit_dir.display(),
        sim.driver_dir.display()
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let pods: Vec<_> = (0..2)
        .map(|index| {
            let profile = results.path().join(format!("node{index}.toml"));
            let toml = format!("[node]\ngpus = 2\naddress = \"127.0.0.{}\"\n", index + 1);
            std::fs::write(&profile, toml).unwrap();
            let mut command = pod.command(
                "nccl-job.yaml",
                &[
                    ("JOB_NAME", "stackbench-nccl-test"),
                    ("JOB_COMPLETION_INDEX", &index.to_string()),
                    ("NODES", "2"),
                    ("GPUS", "2"),
                    ("MASTER_ADDR", "127.0.0.1"),
                    ("MASTER_PORT", &port),
                    ("JOIN_WITHIN", "60"),
                    ("NODES_OPTIONS", &on_sim),
                ],
            );
            command.env("STACKBENCH_SIM_PROFILE", profile);
            command.stdout(Stdio::piped()).stderr(Stdio::piped());
            command.spawn().expect("start the pod's script")
        })
        .collect();
    let outputs: Vec<Output> = pods
        .into_iter()
        .map(|p| p.wait_with_output().unwrap())
        .collect();
    for (index, output) in outputs.iter().enumerate() {
        assert_eq!(
            output.status.code(),
            Some(0),
            "pod {index}: {}",
            text(output)
        );
    }
    let report: serde_json::Value = serde_json::from_str(&read(
        &results.path().join("stackbench-nccl-test/nodes.json"),
    ))
    .unwrap();
    let checks = report["combinations"][0]["checks"].as_array().unwrap();
    let check = |id: &str| checks.iter().find(|c| c["id"] == id).unwrap();
    assert!(
        check("nccl.init")["reason"]
            .as_str()
            .unwrap()
            .contains("one communicator of 4 rank(s)"),
        "{:#}",
        check("nccl.init")
    );
    for c in ["all_reduce", "all_gather", "reduce_scatter", "broadcast"] {
        let result = check(&format!("nccl.{c}"));
        assert_eq!(result["status"], "pass", "{result:#}");
        assert!(result["details"]["bus_gbs"].as_f64().unwrap() > 0.0);
    }
    let ranks = check("nccl.transport")["details"]["ranks"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(ranks, 4);
}
