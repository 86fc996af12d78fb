//! The packages a fleet installs (`ci/package`, which `ci/test` runs first): the x86_64 wheel and
//! tarball under `target/dist/` carry one binary, built from this checkout's commit, that needs
//! glibc 2.28 at most, installs with pip into a fresh venv, and runs `doctor` in a Debian 11
//! root (glibc 2.31, `ci/fetch-debian-root`), where a binary built on this machine cannot start.
//! Missing packages or root fail the tests, saying what to run.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The glibc the packages promise (ci/package's GLIBC).
const GLIBC: [u32; 2] = [2, 28];
const RELEASE: &str = env!("CARGO_PKG_VERSION");
const TRIPLE: &str = "x86_64-unknown-linux-gnu";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A file ci/package leaves in target/dist, which must be there.
fn packaged(name: &str) -> PathBuf {
    let path = repo().join("target/dist").join(name);
    assert!(
        path.is_file(),
        "{} is missing: run ci/package (ci/test does)",
        path.display()
    );
    path
}

fn wheel() -> PathBuf {
    packaged(&format!(
        "stackbench-{RELEASE}-py3-none-manylinux_2_28_x86_64.whl"
    ))
}

fn run(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"))
}

fn succeeded(command: &mut Command) -> String {
    let out = run(command);
    assert!(
        out.status.success(),
        "{command:?} failed: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The tarball's binary, unpacked into `dir`, after checking the tarball holds it, its licences
/// and its README, and nothing else.
fn tarball_binary(dir: &Path) -> PathBuf {
    let name = format!("stackbench-{RELEASE}-{TRIPLE}");
    let tarball = packaged(&format!("{name}.tar.gz"));
    let listing = succeeded(Command::new("tar").arg("-tzf").arg(&tarball));
    let mut entries: Vec<&str> = listing.lines().collect();
    entries.sort_unstable();
    let expected: Vec<String> = [
        "",
        "LICENSE-APACHE",
        "LICENSE-MIT",
        "README.md",
        "stackbench",
    ]
    .iter()
    .map(|file| format!("{name}/{file}"))
    .collect();
    assert_eq!(entries, expected, "what {} holds", tarball.display());
    std::fs::create_dir_all(dir).unwrap();
    succeeded(
        Command::new("tar")
            .arg("-xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(dir),
    );
    dir.join(&name).join("stackbench")
}

/// The wheel's binary, unpacked into `dir`.
fn wheel_binary(dir: &Path) -> PathBuf {
    succeeded(
        Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(wheel())
            .arg(dir),
    );
    dir.join(format!("stackbench-{RELEASE}.data/scripts/stackbench"))
}

/// The newest `GLIBC_x.y` in `objdump -T`'s dynamic symbols (binutils, not our ELF reader).
fn newest_glibc(binary: &Path) -> Vec<u32> {
    let symbols = succeeded(Command::new("objdump").arg("-T").arg(binary));
    symbols
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .filter_map(|word| word.strip_prefix("GLIBC_"))
        .filter_map(|v| {
            v.split('.')
                .map(|p| p.parse().ok())
                .collect::<Option<Vec<u32>>>()
        })
        .max()
        .expect("a binary linked against glibc names GLIBC_ versions")
}

fn dotted(version: &[u32]) -> String {
    version
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// The commit this checkout is at.
fn head() -> String {
    succeeded(
        Command::new("git")
            .arg("-C")
            .arg(repo())
            .args(["rev-parse", "HEAD"]),
    )
    .trim()
    .to_owned()
}

#[test]
fn the_wheel_and_the_tarball_carry_one_binary_that_needs_glibc_2_28_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let from_tarball = tarball_binary(&dir.path().join("tarball"));
    let from_wheel = wheel_binary(&dir.path().join("wheel"));
    assert!(
        std::fs::read(&from_tarball).unwrap() == std::fs::read(&from_wheel).unwrap(),
        "{} and {} differ",
        from_tarball.display(),
        from_wheel.display()
    );
    let needs = newest_glibc(&from_tarball);
    assert!(
        needs.as_slice() <= GLIBC.as_slice(),
        "the packaged binary needs glibc {}, newer than {}",
        dotted(&needs),
        dotted(&GLIBC)
    );
    let version = succeeded(Command::new(&from_tarball).arg("--version"));
    assert!(
        version.starts_with(&format!("stackbench {RELEASE} (")),
        "{version}"
    );
    assert!(
        version.contains(&format!("\nglibc: {} or newer\n", dotted(&needs))),
        "--version's glibc is not objdump's: {version}"
    );
    assert!(
        version.contains(&format!("\ncommit: {}", head())),
        "the packages were built from another commit than this checkout's (run ci/package): {version}"
    );
    assert!(
        version.contains(&format!("\ntarget: {TRIPLE}\n")),
        "{version}"
    );
    succeeded(
        Command::new("sha256sum")
            .args(["--check", "--quiet", "SHA256SUMS"])
            .current_dir(repo().join("target/dist")),
    );
}

#[test]
fn the_wheel_installs_into_a_fresh_venv_and_puts_stackbench_on_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    succeeded(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    succeeded(
        Command::new(venv.join("bin/pip"))
            .args([
                "install",
                "--quiet",
                "--no-index",
                "--disable-pip-version-check",
            ])
            .arg(wheel()),
    );
    let installed = venv.join("bin/stackbench");
    let from_tarball = tarball_binary(&dir.path().join("tarball"));
    assert!(
        std::fs::read(&installed).unwrap() == std::fs::read(&from_tarball).unwrap(),
        "pip installed another file than the packaged binary"
    );
    // By name, as a user runs it once the venv is active.
    let path = format!("{}:/usr/bin:/bin", venv.join("bin").display());
    let version = succeeded(
        Command::new("stackbench")
            .arg("--version")
            .env_clear()
            .env("PATH", path),
    );
    assert!(
        version.starts_with(&format!("stackbench {RELEASE} (")),
        "{version}"
    );
}

/// The Debian 11 root `ci/fetch-debian-root` made.
fn debian_root() -> PathBuf {
    let dir = std::env::var_os("STACKBENCH_DEBIAN_ROOT")
        .filter(|d| !d.is_empty())
        .map_or_else(|| repo().join(".debian-root"), PathBuf::from);
    assert!(
        dir.join(".complete").is_file(),
        "{} is missing: run ci/fetch-debian-root as root (ci/test does)",
        dir.display()
    );
    dir.join("root")
}

/// A copy of `binary` inside the root, removed when dropped.
struct Planted(PathBuf);

impl Planted {
    fn new(root: &Path, binary: &Path, name: &str) -> Self {
        let path = root
            .join("tmp")
            .join(format!("{name}-{}", std::process::id()));
        std::fs::copy(binary, &path).unwrap();
        Planted(path)
    }

    /// Runs it with `args`, chrooted into `root`. A copy just written can be "busy" for a
    /// moment: a child that another test thread forked while the copy was open for writing
    /// holds that descriptor until it executes, and exec refuses the file meanwhile (ETXTBSY,
    /// chroot's exit 126); that is retried, a bounded number of times.
    fn run_in(&self, root: &Path, args: &[&str]) -> Output {
        let inside = Path::new("/").join(self.0.strip_prefix(root).unwrap());
        let mut tries = 0;
        loop {
            let out = run(Command::new("chroot")
                .arg(root)
                .arg(&inside)
                .args(args)
                .env_clear()
                .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
                .env("HOME", "/root"));
            tries += 1;
            let busy =
                out.status.code() == Some(126) && text(&out.stderr).contains("Text file busy");
            if !busy || tries == 20 {
                return out;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

impl Drop for Planted {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn the_packaged_binary_runs_doctor_in_a_debian_11_root_where_a_host_build_cannot_start() {
    let root = debian_root();
    let libc = succeeded(Command::new("chroot").arg(&root).args(["ldd", "--version"]));
    assert!(
        libc.lines().next().is_some_and(|l| l.ends_with(" 2.31")),
        "the root's glibc is not Debian 11's 2.31: {libc}"
    );

    // The control: this machine's own build needs a newer glibc than the root has.
    let host_build = Planted::new(&root, &common::stackbench_bin(), "host-build");
    let refused = host_build.run_in(&root, &["--version"]);
    assert!(
        !refused.status.success() && text(&refused.stderr).contains("version `GLIBC_2."),
        "a binary built on this machine started in the Debian 11 root: the test proves nothing: {}",
        text(&refused.stderr)
    );

    let dir = tempfile::tempdir().unwrap();
    let binary = tarball_binary(dir.path());
    let packaged = Planted::new(&root, &binary, "packaged");
    let out = packaged.run_in(&root, &["doctor", "--no-load", "--color", "never"]);
    let stdout = text(&out.stdout);
    // No driver in the root: doctor finds that and says so (exit 1), it does not fail (exit 2).
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.starts_with("stackbench doctor: 1 error") && stdout.contains("no_driver"),
        "{stdout}"
    );
    // Without /proc no file can be reopened through the descriptor judged, the binary's own
    // included, and none is opened again by its name: --version says so rather than guessing.
    let version = text(&packaged.run_in(&root, &["--version"]).stdout);
    assert!(
        version.contains("\nglibc: unknown (skipped: cannot be reopened through its descriptor")
            && version.contains("mount /proc"),
        "without /proc, --version says why it cannot read its glibc: {version}"
    );
}
