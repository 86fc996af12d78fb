//! Issue 27's exploit, as tests: a user leaves a library with a constructor in their own
//! virtualenv and waits for root to run stackbench. Run as root (CI runs as root; the trees are
//! given to unused uids with `chown`), the constructor never runs as root: it runs as the owner,
//! and a tree that anyone else could write is not loaded at all. Run as another ordinary user,
//! the tree is read statically only. Each library beside the constructor's is a real NVIDIA one
//! (the CUDA 12.9 runtime of the fixtures), so the findings compared are real ones.

mod common;

use common::*;
use serde_json::Value;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The venv's owner, and another user; neither has an account here.
const OWNER: u32 = 4242;
const OTHER: u32 = 4243;

/// A virtualenv of `owner` holding the real CUDA 12.9 runtime and a `libcupti.so.12` whose
/// constructor appends `constructor ran as uid N` to the venv's `witness` file.
struct Venv {
    _dir: tempfile::TempDir,
    /// Its site-packages: the installation doctor reports.
    site: PathBuf,
    witness: PathBuf,
}

impl Venv {
    fn new(owner: u32) -> Venv {
        let dir = tempfile::tempdir().unwrap();
        // Root's and readable by all, as /home is: only what is below it is the user's.
        chmod(dir.path(), 0o755);
        let venv = dir.path().join("home/alice/venv");
        let site = venv.join("lib/python3.11/site-packages");
        let runtime = site.join("nvidia/cuda_runtime/lib");
        let cupti = site.join("nvidia/cuda_cupti/lib");
        fs::create_dir_all(&runtime).unwrap();
        fs::create_dir_all(&cupti).unwrap();
        fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        fs::copy(real_cudart(), runtime.join("libcudart.so.12")).unwrap();
        let witness = venv.join("witness");
        build_library(
            &cupti,
            "libcupti.so.12",
            "libcupti.so.12",
            &constructor_writing_to(&witness),
        );
        chown_all(&dir.path().join("home/alice"), owner);
        Venv {
            _dir: dir,
            site,
            witness,
        }
    }

    /// What the constructor wrote, a line per run of it.
    fn witnessed(&self) -> Vec<String> {
        fs::read_to_string(&self.witness)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// C source of a library whose constructor appends its effective uid to `witness`.
fn constructor_writing_to(witness: &Path) -> String {
    format!(
        r#"#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void ran(void) {{
    FILE *f = fopen("{}", "a");
    if (f) {{ fprintf(f, "constructor ran as uid %d\n", (int)geteuid()); fclose(f); }}
}}
int cuptiGetVersion(unsigned *version) {{ *version = 26; return 0; }}
"#,
        witness.display()
    )
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// Gives `path` and everything below it to `uid` (its group too).
fn chown_all(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    if fs::symlink_metadata(path).unwrap().is_dir() {
        for entry in fs::read_dir(path).unwrap() {
            chown_all(&entry.unwrap().path(), uid);
        }
    }
}

/// One `doctor --no-system --root ROOT --format json` run: as root, or as `user` (its groups
/// cleared), with `env` and `args` added.
fn doctor(root: &Path, user: Option<u32>, env: &[(&str, &str)], args: &[&str]) -> (i32, Value) {
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "these tests give trees to other users: run them as root, as CI does"
    );
    let home = tempfile::tempdir().unwrap();
    chmod(home.path(), 0o755);
    let mut command = Command::new(stackbench_bin());
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home.path())
        .envs(env.iter().copied())
        .args(["doctor", "--no-system", "--root"])
        .arg(root)
        .args(["--format", "json"])
        .args(args);
    if let Some(uid) = user {
        command.uid(uid).gid(uid);
    }
    let output = command.output().expect("run stackbench doctor");
    let code = output.status.code().expect("an exit code");
    assert!(
        code == 0 || code == 1,
        "exit {code}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (code, doctor_report(&output.stdout))
}

/// The findings as (severity, cause, message), in order.
fn said(report: &Value) -> Vec<(String, String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let text = |key: &str| f[key].as_str().unwrap_or_default().to_owned();
            (text("severity"), text("cause"), text("message"))
        })
        .collect()
}

/// The one finding of `cause`, checked to be of `severity`, and its message.
fn only_finding<'a>(report: &'a Value, cause: &str, severity: &str) -> (&'a Value, &'a str) {
    let found: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["cause"] == cause)
        .collect();
    assert_eq!(found.len(), 1, "one {cause}: {report:#}");
    assert_eq!(found[0]["severity"], severity, "{}", found[0]);
    (found[0], found[0]["message"].as_str().unwrap())
}

/// One `check --no-system --target sm_90 --root SITE --format json` run as root.
fn check_json(site: &Path) -> (Option<i32>, Value) {
    let output = Command::new(stackbench_bin())
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .args(["check", "--no-system", "--target", "sm_90", "--root"])
        .arg(site)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&output.stderr));
    });
    (output.status.code(), report)
}

/// The probe of the installation below `site`.
fn probe<'a>(report: &'a Value, site: &Path) -> &'a Value {
    report["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| Path::new(p["root"].as_str().unwrap()).starts_with(site))
        .unwrap_or_else(|| panic!("no probe of {}: {}", site.display(), report["probes"]))
}

#[test]
fn root_loads_another_users_venv_as_that_user_and_sees_what_they_see() {
    let venv = Venv::new(OWNER);
    let (code, as_root) = doctor(&venv.site, None, &[], &[]);
    assert_eq!(
        venv.witnessed(),
        ["constructor ran as uid 4242"],
        "the constructor ran as the venv's owner, once, and never as root"
    );
    let probe = probe(&as_root, &venv.site);
    assert_eq!(probe["loaded_as"]["uid"], OWNER, "{probe}");
    assert!(probe.get("not_loaded").is_none(), "{probe}");
    let loads = probe["loads"].as_array().unwrap();
    assert_eq!(loads.len(), 2, "{probe}");
    for load in loads {
        assert_eq!(load["outcome"]["kind"], "loaded", "{load}");
    }
    // The owner, running doctor on their own venv, gets the same findings and exit status.
    let (owner_code, as_owner) = doctor(&venv.site, Some(OWNER), &[], &[]);
    assert_eq!(
        venv.witnessed().last().map(String::as_str),
        Some("constructor ran as uid 4242")
    );
    assert!(
        as_owner["probes"][0].get("loaded_as").is_none(),
        "the owner loads as themselves"
    );
    assert_eq!(said(&as_root), said(&as_owner));
    assert_eq!(code, owner_code);
    assert!(!said(&as_root).is_empty());
}

#[test]
fn a_world_writable_directory_above_a_library_is_untrusted_and_nothing_is_loaded() {
    let venv = Venv::new(OWNER);
    let open = venv.site.join("nvidia");
    chmod(&open, 0o777);
    let (code, report) = doctor(&venv.site, None, &[], &[]);
    assert!(venv.witnessed().is_empty(), "{:?}", venv.witnessed());
    assert_eq!(code, 1);
    let (finding, message) = only_finding(&report, "untrusted_location", "error");
    assert!(
        message.contains(&format!("{} can be written by every user", open.display())),
        "{message}"
    );
    assert_eq!(finding["fix"], format!("chmod go-w {}", open.display()));
    let probe = probe(&report, &venv.site);
    assert!(probe["loads"].as_array().unwrap().is_empty(), "{probe}");
    assert_eq!(probe["not_loaded"]["kind"], "untrusted", "{probe}");
    // Its static analysis stands: the installation and both libraries are reported.
    let installation = &report["installations"][0];
    assert_eq!(installation["libraries"].as_array().unwrap().len(), 2);
}

#[test]
fn a_group_writable_library_file_is_untrusted() {
    let venv = Venv::new(OWNER);
    let library = venv.site.join("nvidia/cuda_cupti/lib/libcupti.so.12");
    chmod(&library, 0o664);
    let (_, report) = doctor(&venv.site, None, &[], &[]);
    assert!(venv.witnessed().is_empty());
    let (_, message) = only_finding(&report, "untrusted_location", "error");
    assert!(
        message.contains(&format!(
            "{} can be written by group 4242",
            library.display()
        )),
        "{message}"
    );
}

#[test]
fn an_ordinary_user_reads_another_users_venv_statically_only() {
    let venv = Venv::new(OWNER);
    let (_, report) = doctor(&venv.site, Some(OTHER), &[], &[]);
    assert!(venv.witnessed().is_empty(), "{:?}", venv.witnessed());
    let (_, message) = only_finding(&report, "not_loaded", "info");
    assert!(
        message.ends_with("not loaded: owned by uid 4242 (static analysis only)"),
        "{message}"
    );
    assert_eq!(
        report["installations"][0]["libraries"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn roots_own_tree_loads_as_root_as_before() {
    let venv = Venv::new(0);
    let (_, report) = doctor(&venv.site, None, &[], &[]);
    assert_eq!(venv.witnessed(), ["constructor ran as uid 0"]);
    let probe = probe(&report, &venv.site);
    assert!(probe.get("loaded_as").is_none(), "{probe}");
    assert!(findings_of(&report, "untrusted_location").is_empty());
}

#[test]
fn load_untrusted_loads_as_root_and_says_so_first() {
    let venv = Venv::new(OWNER);
    let (_, report) = doctor(&venv.site, None, &[], &["--load-untrusted"]);
    assert_eq!(venv.witnessed(), ["constructor ran as uid 0"]);
    assert_eq!(report["load_untrusted"], true);
    let output = Command::new(stackbench_bin())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["doctor", "--no-system", "--load-untrusted", "--root"])
        .arg(&venv.site)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.lines()
            .next()
            .is_some_and(|l| l.starts_with("warning: --load-untrusted")),
        "{text}"
    );
}

/// An `LD_LIBRARY_PATH` entry of another user, before root's own installation: root's workers
/// leave it out (a dependency found only there is not loaded), and it is an error finding.
#[test]
fn another_users_search_path_entry_is_an_error_for_root_and_left_out_of_its_workers() {
    let alice = Venv::new(OWNER);
    let planted = alice.site.join("nvidia/cuda_cupti/lib");
    let root_tree = tempfile::tempdir().unwrap();
    let lib = root_tree.path().join("lib");
    fs::create_dir(&lib).unwrap();
    fs::copy(real_cudart(), lib.join("libcudart.so.12")).unwrap();
    // Root's own cuBLAS needs libcupti.so.12, which only alice's directory holds.
    let source = lib.join("cublas.c");
    fs::write(
        &source,
        "int cublasGetVersion_v2(void *h, int *v) { *v = 120901; return 0; }\n",
    )
    .unwrap();
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-Wl,-soname,libcublas.so.12", "-o"])
        .arg(lib.join("libcublas.so.12"))
        .arg(&source)
        .arg("-L")
        .arg(&planted)
        .args(["-Wl,--no-as-needed", "-l:libcupti.so.12"])
        .status()
        .unwrap();
    assert!(status.success());
    fs::remove_file(&source).unwrap();
    let value = planted.display().to_string();
    let (code, report) = doctor(root_tree.path(), None, &[("LD_LIBRARY_PATH", &value)], &[]);
    assert!(
        !alice.witnessed().iter().any(|l| l.ends_with("uid 0")),
        "{:?}",
        alice.witnessed()
    );
    assert_eq!(code, 1);
    let (_, message) = only_finding(&report, "untrusted_search_path", "error");
    assert!(message.contains("belongs to uid 4242"), "{message}");
    let probe = probe(&report, root_tree.path());
    let left_out = probe["left_out"].as_array().unwrap();
    assert_eq!(left_out[0]["entry"], value.as_str(), "{probe}");
    let cublas = probe["loads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["path"].as_str().unwrap().ends_with("libcublas.so.12"))
        .unwrap();
    assert_eq!(cublas["outcome"]["kind"], "failed", "{cublas}");
}

#[test]
fn check_runs_another_users_combination_as_that_user() {
    let venv = Venv::new(OWNER);
    let (_, report) = check_json(&venv.site);
    assert!(
        !venv.witnessed().is_empty()
            && venv
                .witnessed()
                .iter()
                .all(|l| l == "constructor ran as uid 4242"),
        "{:?}",
        venv.witnessed()
    );
    assert_eq!(
        report["combinations"][0]["loaded_as"], "uid 4242",
        "{report:#}"
    );
    // Made world-writable, the same combination is refused: every check fails with the reason.
    let witnessed = venv.witnessed().len();
    chmod(&venv.site.join("nvidia"), 0o777);
    let (code, report) = check_json(&venv.site);
    assert_eq!(code, Some(1));
    assert_eq!(venv.witnessed().len(), witnessed, "nothing more was loaded");
    let load = check_result(&report, "cudart.load");
    assert_eq!(load["status"], "fail");
    assert!(
        load["reason"]
            .as_str()
            .unwrap()
            .contains("can be written by every user; fix: chmod go-w"),
        "{load}"
    );
}

#[test]
fn for_an_ordinary_user_a_world_writable_entry_stays_the_hygiene_warning() {
    let venv = Venv::new(OWNER);
    let open = tempfile::tempdir().unwrap();
    chmod(open.path(), 0o777);
    let value = open.path().display().to_string();
    let (_, report) = doctor(
        &venv.site,
        Some(OWNER),
        &[("LD_LIBRARY_PATH", &value)],
        &["--no-load"],
    );
    only_finding(&report, "world_writable_search_path", "warning");
    assert!(findings_of(&report, "untrusted_search_path").is_empty());
}

/// Asking the `python3` on PATH for its site-packages runs it: another user's first on root's
/// PATH (an activated venv under `sudo -E`) is their code, and is not run.
#[test]
fn root_never_runs_another_users_python3_from_path() {
    let venv = Venv::new(OWNER);
    let bin = venv.site.join("../../../bin");
    fs::create_dir_all(&bin).unwrap();
    let python = bin.join("python3");
    fs::write(
        &python,
        format!(
            "#!/bin/sh\necho \"python3 ran as uid $(id -u)\" >> {}\nexec /usr/bin/python3 \"$@\"\n",
            venv.witness.display()
        ),
    )
    .unwrap();
    chmod(&python, 0o755);
    chown_all(&bin, OWNER);
    let home = tempfile::tempdir().unwrap();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let output = Command::new(stackbench_bin())
        .env_clear()
        .env("PATH", &path)
        .env("HOME", home.path())
        .args(["doctor", "--no-load", "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.code().is_some_and(|c| c < 2), "{output:?}");
    assert!(venv.witnessed().is_empty(), "{:?}", venv.witnessed());
}
