//! Issue 27's exploit, as tests: a user leaves a library with a constructor in their own
//! virtualenv and waits for root to run stackbench. Run as root (CI runs as root; the trees are
//! given to unused uids with `chown`), the constructor never runs as root: it runs as the owner,
//! and a tree that anyone else could write is not loaded at all. Run as another ordinary user,
//! the tree is read statically only. Each library beside the constructor's is a real NVIDIA one
//! (the CUDA 12.9 runtime of the fixtures), so the findings compared are real ones.
//!
//! Issue 40's ways past the rule, as an attacker would try them: root's environment (its CI
//! secrets) reaching the owner's worker, a search directory that does not exist yet, a
//! `glibc-hwcaps` subdirectory of another user below root's own search directory, another
//! user's RUNPATH directory in `check`, and files of two users in one installation.
//!
//! Every test here gives files to other users, which only root can: run as an ordinary user,
//! each says it is skipped and why, and passes.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

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

/// C source of a library whose constructor appends its effective uid to `witness`, and writes
/// the names of its environment's variables to `witness.env` (with a line `SECRET VALUE SEEN`
/// where a value holds [`SECRET`]).
fn constructor_writing_to(witness: &Path) -> String {
    format!(
        r#"#include <stdio.h>
#include <string.h>
#include <unistd.h>
extern char **environ;
__attribute__((constructor)) static void ran(void) {{
    FILE *f = fopen("{witness}", "a");
    if (f) {{ fprintf(f, "constructor ran as uid %d\n", (int)geteuid()); fclose(f); }}
    FILE *e = fopen("{witness}.env", "w");
    if (!e) return;
    for (char **v = environ; v && *v; v++) {{
        const char *eq = strchr(*v, '=');
        fprintf(e, "%.*s\n", (int)(eq ? eq - *v : (long)strlen(*v)), *v);
        if (strstr(*v, "{SECRET}")) fprintf(e, "SECRET VALUE SEEN\n");
    }}
    fclose(e);
}}
int cuptiGetVersion(unsigned *version) {{ *version = 26; return 0; }}
"#,
        witness = witness.display()
    )
}

/// What a runner's secret looks like in root's environment.
const SECRET: &str = "s3cr3t-runner-token";

/// Whether the test calling it can run: it gives files to other users, which only root can.
/// Run as an ordinary user it says it is skipped and why (CI runs as root and runs it).
fn as_root(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped: {test}: needs root (it gives files to other users); CI runs as root");
    }
    root
}

/// The names of the variables the constructor at `witness` saw last, and whether a value held
/// the secret.
fn environment_seen(witness: &Path) -> (Vec<String>, bool) {
    let text = fs::read_to_string(witness.with_extension("env")).unwrap_or_default();
    let secret = text.lines().any(|l| l == "SECRET VALUE SEEN");
    let names = text
        .lines()
        .filter(|l| *l != "SECRET VALUE SEEN")
        .map(str::to_owned)
        .collect();
    (names, secret)
}

/// Root's own tree: the real CUDA 12.9 runtime and a `libcublas.so.12` that needs
/// `libcupti.so.12`, which the tree does not hold (a test puts one where it wants the loader to
/// look), with `runpath` as its RUNPATH if given. Its constructor, root's own code, writes the
/// `LD_LIBRARY_PATH` its worker got to the tree's `search-witness`.
struct RootTree {
    dir: tempfile::TempDir,
}

impl RootTree {
    fn new(runpath: Option<&Path>) -> RootTree {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o755);
        let lib = dir.path().join("lib");
        let stub = dir.path().join("stub");
        fs::create_dir(&lib).unwrap();
        fs::create_dir(&stub).unwrap();
        fs::copy(real_cudart(), lib.join("libcudart.so.12")).unwrap();
        // A libcupti.so.12 to link against, gone before anything runs.
        build_library(
            &stub,
            "libcupti.so.12",
            "libcupti.so.12",
            "int cupti_stub;\n",
        );
        let witness = dir.path().join("search-witness");
        let source = lib.join("cublas.c");
        fs::write(
            &source,
            format!(
                r#"#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void ran(void) {{
    FILE *f = fopen("{}", "a");
    const char *path = getenv("LD_LIBRARY_PATH");
    if (f) {{ fprintf(f, "%s\n", path ? path : "(unset)"); fclose(f); }}
}}
int cublasGetVersion_v2(void *h, int *v) {{ *v = 120901; return 0; }}
"#,
                witness.display()
            ),
        )
        .unwrap();
        let mut cc = Command::new("cc");
        cc.args(["-shared", "-fPIC", "-Wl,-soname,libcublas.so.12", "-o"])
            .arg(lib.join("libcublas.so.12"))
            .arg(&source)
            .arg("-L")
            .arg(&stub)
            .args(["-Wl,--no-as-needed", "-l:libcupti.so.12"]);
        if let Some(runpath) = runpath {
            cc.arg(format!(
                "-Wl,--enable-new-dtags,-rpath,{}",
                runpath.display()
            ));
        }
        assert!(cc.status().unwrap().success());
        fs::remove_file(&source).unwrap();
        fs::remove_dir_all(&stub).unwrap();
        RootTree { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The `LD_LIBRARY_PATH` of each worker that loaded its cuBLAS, in order.
    fn search_paths_seen(&self) -> Vec<String> {
        fs::read_to_string(self.path().join("search-witness"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
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
    check_with(site, &[])
}

/// [`check_json`] with `env` added.
fn check_with(site: &Path, env: &[(&str, &str)]) -> (Option<i32>, Value) {
    let output = Command::new(stackbench_bin())
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .envs(env.iter().copied())
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
    if !as_root("root_loads_another_users_venv_as_that_user_and_sees_what_they_see") {
        return;
    }
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
    if !as_root("a_world_writable_directory_above_a_library_is_untrusted_and_nothing_is_loaded") {
        return;
    }
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
    if !as_root("a_group_writable_library_file_is_untrusted") {
        return;
    }
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
    if !as_root("an_ordinary_user_reads_another_users_venv_statically_only") {
        return;
    }
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
    if !as_root("roots_own_tree_loads_as_root_as_before") {
        return;
    }
    let venv = Venv::new(0);
    let (_, report) = doctor(&venv.site, None, &[], &[]);
    assert_eq!(venv.witnessed(), ["constructor ran as uid 0"]);
    let probe = probe(&report, &venv.site);
    assert!(probe.get("loaded_as").is_none(), "{probe}");
    assert!(findings_of(&report, "untrusted_location").is_empty());
}

#[test]
fn load_untrusted_loads_as_root_and_says_so_first() {
    if !as_root("load_untrusted_loads_as_root_and_says_so_first") {
        return;
    }
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
    if !as_root("another_users_search_path_entry_is_an_error_for_root_and_left_out_of_its_workers")
    {
        return;
    }
    let alice = Venv::new(OWNER);
    let planted = alice.site.join("nvidia/cuda_cupti/lib");
    // Root's own cuBLAS needs libcupti.so.12, which only alice's directory holds.
    let root_tree = RootTree::new(None);
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
    if !as_root("check_runs_another_users_combination_as_that_user") {
        return;
    }
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
    if !as_root("for_an_ordinary_user_a_world_writable_entry_stays_the_hygiene_warning") {
        return;
    }
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
/// PATH (an activated venv under `sudo -E`) is their code, so it runs as them, with none of
/// root's environment, never as root.
#[test]
fn another_users_python3_on_roots_path_runs_as_its_owner_without_roots_environment() {
    if !as_root("another_users_python3_on_roots_path_runs_as_its_owner_without_roots_environment") {
        return;
    }
    let venv = Venv::new(OWNER);
    let bin = venv.site.join("../../../bin");
    fs::create_dir_all(&bin).unwrap();
    let python = bin.join("python3");
    fs::write(
        &python,
        format!(
            "#!/bin/sh\necho \"python3 ran as uid $(id -u)\" >> {w}\nenv | grep -q {SECRET} && echo 'python3 saw the secret' >> {w}\nexec /usr/bin/python3 \"$@\"\n",
            w = venv.witness.display()
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
        .env("CI_SECRET_TOKEN", SECRET)
        .args(["doctor", "--no-load", "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.code().is_some_and(|c| c < 2), "{output:?}");
    assert_eq!(venv.witnessed(), ["python3 ran as uid 4242"]);
}

/// The `python3` on root's PATH, root's own (a venv root made), runs with `-I -S`: the `.pth`
/// files of its site directories, which `site` would execute, never run; the venv is found all
/// the same (its runtime is an installation of the report).
#[test]
fn python3_on_path_runs_no_pth_file_and_its_venv_is_found() {
    if !as_root("python3_on_path_runs_no_pth_file_and_its_venv_is_found") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    chmod(dir.path(), 0o755);
    let venv = dir.path().join("venv");
    let made = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success(), "python3 -m venv");
    let site = fs::read_dir(venv.join("lib"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("site-packages");
    let witness = dir.path().join("pth-witness");
    fs::write(
        site.join("evil.pth"),
        format!(
            "import os; open({:?}, 'a').write('pth ran as uid %d\\n' % os.geteuid())\n",
            witness.display().to_string()
        ),
    )
    .unwrap();
    let runtime = site.join("nvidia/cuda_runtime/lib");
    fs::create_dir_all(&runtime).unwrap();
    fs::copy(real_cudart(), runtime.join("libcudart.so.12")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        venv.join("bin").display()
    );
    let output = Command::new(stackbench_bin())
        .env_clear()
        .env("PATH", &path)
        .env("HOME", home.path())
        .args(["doctor", "--no-load", "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.code().is_some_and(|c| c < 2), "{output:?}");
    assert_eq!(
        fs::read_to_string(&witness).unwrap_or_default(),
        "",
        "a .pth file ran"
    );
    let report = doctor_report(&output.stdout);
    let roots: Vec<&str> = report["installations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["root"].as_str())
        .collect();
    assert!(
        roots.iter().any(|r| Path::new(r).starts_with(&venv)),
        "the venv is found: {roots:?}"
    );
}

/// Root's environment holds the runner's secrets; a worker run as the owner of a venv gets
/// none of it: only the allow-list, which the report names (never the values).
#[test]
fn a_worker_run_as_another_user_gets_none_of_roots_secrets_and_the_report_names_what_it_kept() {
    if !as_root(
        "a_worker_run_as_another_user_gets_none_of_roots_secrets_and_the_report_names_what_it_kept",
    ) {
        return;
    }
    let venv = Venv::new(OWNER);
    let env = [
        ("CI_SECRET_TOKEN", SECRET),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
        ("LANG", "C.UTF-8"),
        ("CUDA_VISIBLE_DEVICES", "0"),
    ];
    let (_, report) = doctor(&venv.site, None, &env, &[]);
    assert_eq!(venv.witnessed(), ["constructor ran as uid 4242"]);
    let (names, secret) = environment_seen(&venv.witness);
    assert!(!secret, "a value held root's secret: {names:?}");
    for name in ["CI_SECRET_TOKEN", "AWS_SECRET_ACCESS_KEY", "HOME"] {
        assert!(!names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    for name in ["LANG", "CUDA_VISIBLE_DEVICES", "PATH", "LD_LIBRARY_PATH"] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    let probe = probe(&report, &venv.site);
    assert_eq!(
        strings(&probe["environment"]),
        ["CUDA_VISIBLE_DEVICES", "LANG", "PATH"],
        "{probe}"
    );
    assert!(
        !report.to_string().contains(SECRET),
        "a value reached the report"
    );

    // check's workers likewise.
    let (_, report) = check_with(&venv.site, &env);
    assert!(venv
        .witnessed()
        .iter()
        .all(|l| l == "constructor ran as uid 4242"));
    let (names, secret) = environment_seen(&venv.witness);
    assert!(
        !secret && !names.iter().any(|n| n == "CI_SECRET_TOKEN"),
        "{names:?}"
    );
    assert_eq!(
        strings(&report["combinations"][0]["environment"]),
        ["CUDA_VISIBLE_DEVICES", "LANG", "PATH"]
    );
}

/// A search directory that does not exist when the rule decides is never searched, in `doctor`
/// or `check`: another user who creates it a moment later (here alice, in her home) would
/// otherwise have her library loaded by root's worker. For root it is an error finding.
#[test]
fn a_search_directory_missing_when_decided_is_never_searched() {
    if !as_root("a_search_directory_missing_when_decided_is_never_searched") {
        return;
    }
    let alice = Venv::new(OWNER);
    let home = alice.site.ancestors().nth(4).unwrap().to_path_buf();
    let later = home.join("later");
    let root_tree = RootTree::new(None);
    // Root's own libcupti, for its cuBLAS to load at all, after the entry that is missing.
    let deps = root_tree.path().join("deps");
    fs::create_dir(&deps).unwrap();
    build_library(
        &deps,
        "libcupti.so.12",
        "libcupti.so.12",
        "int cupti_own;\n",
    );
    let value = format!("{}:{}", later.display(), deps.display());
    let env = [("LD_LIBRARY_PATH", value.as_str())];

    let (code, report) = doctor(root_tree.path(), None, &env, &[]);
    assert_eq!(code, 1);
    let probe = probe(&report, root_tree.path());
    let left_out = probe["left_out"].as_array().unwrap();
    assert_eq!(left_out[0]["entry"], later.display().to_string(), "{probe}");
    assert_eq!(left_out[0]["distrust"]["problem"], "missing", "{probe}");
    let (_, message) = only_finding(&report, "untrusted_search_path", "error");
    assert!(
        message.contains(&format!(
            "{} does not exist yet, and another user could create it in {} ({} belongs to uid 4242)",
            later.display(),
            home.display(),
            home.display()
        )),
        "{message}"
    );

    let (_, report) = check_with(root_tree.path(), &env);
    let left_out = report["combinations"][0]["left_out"].as_array().unwrap();
    assert_eq!(
        left_out[0]["entry"],
        later.display().to_string(),
        "{report:#}"
    );

    // Every worker that loaded root's cuBLAS, in doctor and in check, searched without it.
    let seen = root_tree.search_paths_seen();
    assert!(seen.len() >= 2, "{seen:?}");
    for path in &seen {
        assert!(!path.split(':').any(|e| Path::new(e) == later), "{path}");
    }
}

/// glibc searches `glibc-hwcaps/<level>`, `tls` and the platform subdirectories below every
/// search directory before the directory itself: one of another user below root's own
/// directory is judged with it, and root's worker never searches the directory.
#[test]
fn a_hwcaps_subdirectory_of_another_user_is_never_searched_as_root() {
    if !as_root("a_hwcaps_subdirectory_of_another_user_is_never_searched_as_root") {
        return;
    }
    let root_tree = RootTree::new(None);
    let shared = tempfile::tempdir().unwrap();
    chmod(shared.path(), 0o755);
    let level = shared.path().join("glibc-hwcaps/x86-64-v2");
    fs::create_dir_all(&level).unwrap();
    chmod(&shared.path().join("glibc-hwcaps"), 0o755);
    let witness = shared.path().join("witness");
    build_library(
        &level,
        "libcupti.so.12",
        "libcupti.so.12",
        &constructor_writing_to(&witness),
    );
    chown_all(&level, OWNER);
    // Alice may write the witness, as her constructor would run as her.
    fs::write(&witness, "").unwrap();
    chown_all(&witness, OWNER);
    let value = shared.path().display().to_string();
    let (code, report) = doctor(root_tree.path(), None, &[("LD_LIBRARY_PATH", &value)], &[]);
    let ran = fs::read_to_string(&witness).unwrap();
    assert!(!ran.contains("uid 0"), "{ran}");
    assert_eq!(code, 1);
    let (_, message) = only_finding(&report, "untrusted_search_path", "error");
    assert!(
        message.contains(&format!("{} belongs to uid 4242", level.display())),
        "{message}"
    );
    let probe = probe(&report, root_tree.path());
    assert_eq!(probe["left_out"][0]["entry"], value.as_str(), "{probe}");
}

/// A RUNPATH directory of another user, where root's own cuBLAS finds its libcupti: `check`
/// (and `bench`, which decides the same way) judges it, and loads nothing of the combination.
#[test]
fn check_judges_a_runpath_directory_of_another_user() {
    if !as_root("check_judges_a_runpath_directory_of_another_user") {
        return;
    }
    let alice = Venv::new(OWNER);
    let planted = alice.site.join("nvidia/cuda_cupti/lib");
    let root_tree = RootTree::new(Some(&planted));
    let (code, report) = check_json(root_tree.path());
    assert!(
        !alice.witnessed().iter().any(|l| l.ends_with("uid 0")),
        "{:?}",
        alice.witnessed()
    );
    assert_eq!(code, Some(1));
    let (status, reason) = check_status(&report, "cublas.load");
    assert_eq!(status, "fail");
    assert!(reason.contains("belongs to uid 4242"), "{reason}");
    assert!(
        root_tree.search_paths_seen().is_empty(),
        "nothing was loaded"
    );
}

/// Files of two users in one installation: no one user may load them all, so neither does.
#[test]
fn an_installation_of_two_users_is_loaded_by_neither() {
    if !as_root("an_installation_of_two_users_is_loaded_by_neither") {
        return;
    }
    let venv = Venv::new(OWNER);
    let cupti = venv.site.join("nvidia/cuda_cupti/lib/libcupti.so.12");
    std::os::unix::fs::lchown(&cupti, Some(OTHER), Some(OTHER)).unwrap();
    let (code, report) = doctor(&venv.site, None, &[], &[]);
    assert!(venv.witnessed().is_empty(), "{:?}", venv.witnessed());
    assert_eq!(code, 1);
    let (_, message) = only_finding(&report, "untrusted_location", "error");
    assert!(
        message.ends_with(&format!(
            "not loaded: its files belong to uid 4242 and uid 4243, and {} is uid 4243's: no one user may load them all",
            cupti.display()
        )),
        "{message}"
    );
    let probe = probe(&report, &venv.site);
    assert_eq!(probe["not_loaded"]["kind"], "mixed", "{probe}");
    assert!(probe["loads"].as_array().unwrap().is_empty(), "{probe}");
}

/// `doctor --build` on another user's CUDA 13 wheels (a copy of the fixture given to them): the
/// probe is compiled by their nvcc as they, never as root, in a directory made over to them, and
/// compiles. Mutation: leaving out `user.apply` in `probe::run` fails the `ran_as` assertion.
#[test]
fn the_build_probe_of_another_users_toolkit_runs_as_that_user() {
    if !as_root("the_build_probe_of_another_users_toolkit_runs_as_that_user") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    chmod(dir.path(), 0o755);
    let venv = dir.path().join("venv");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(build_fixtures().join("venv-nvcc-cu13-nvvm"))
        .arg(&venv)
        .status()
        .unwrap();
    assert!(copied.success());
    chown_all(&venv, OWNER);
    let site = venv.join("lib/python3.11/site-packages");
    let (_, report) = doctor(&site, None, &[], &["--build"]);
    let toolkit = (report["build"]["toolkits"].as_array().unwrap().iter())
        .find(|t| t["root"] == site.display().to_string())
        .unwrap_or_else(|| panic!("{}", report["build"]));
    let probe = &toolkit["probe"];
    assert_eq!(probe["ran_as"], format!(" as uid {OWNER}"), "{probe}");
    assert_eq!(probe["compiled"], true, "{probe}");
}
