//! Runs every example of the README and the guide (`doc/`), so that none can drift from the
//! tool: a finding renamed, a check id changed or an option removed fails the page that shows it.
//!
//! # The format
//!
//! - Every fenced block whose info string is `console` in `README.md` or `doc/**/*.md` is run.
//! - A line starting `$ ` is a command; a line ending in `\` continues it on the next line. The
//!   lines after it, up to the next `$ ` line or the end of the block, are its expected output:
//!   stdout and stderr merged, as a terminal shows them. Trailing whitespace and trailing blank
//!   lines are ignored.
//! - In expected output, `[..]` matches any text within one line, and a line that is exactly
//!   `...` matches any number of lines, zero included.
//! - Where lines break is no difference: stackbench wraps its reports at a fixed width, and a
//!   path in a paragraph (the checkout's, before it is normalised) moves the breaks after it. An
//!   output that matches once both sides are read as runs of words matches.
//! - All console blocks of one page run in one bash session, in order: variables, functions, the
//!   working directory and files carry over from block to block. Each command has
//!   [`COMMAND_TIMEOUT`] to finish; `$?` is restored before the next command, so `$ echo $?`
//!   shows the status of the command before it.
//! - A command that exits non-zero must be followed, in its block, by `$ echo $?` (and the status
//!   line it prints): every reader sees the exit status. The session runs with `pipefail`, so a
//!   pipeline fails when any of its commands fails: `check ... | head -1` cannot hide an exit 1.
//!
//! # Where a page runs
//!
//! Each page gets a fresh scratch directory made to look like the repository root for a reader:
//! `tests/`, `.toolkits/`, `.toolkits-windows/` and `.build-fixtures/` are links to the real
//! ones; `ci/` is a directory of links to the real scripts, except `ci/sim`, which prints what
//! the real `ci/sim` printed when this test binary laid out the simulated GPU once (through
//! `common::simulator()`): pages running side by side must not lay it out again under each
//! other's feet, and its build chatter is no part of what a reader needs to see. `results/` and
//! anything else a page writes stay in scratch. `stackbench` on PATH is the binary under test,
//! and `cargo run --release -- ARGS` (a shell function) runs `stackbench ARGS`, so the README's
//! own commands can be shown either way; any other `cargo` command is the real cargo.
//!
//! The environment is cleared: PATH (the binary's directory, cargo's, `/usr/local/bin:/usr/bin:
//! /bin`), HOME (a fresh, empty directory), `LANG=C.UTF-8`, and the variables that say where
//! cargo, rustup and the fixtures are (`CARGO_HOME`, `RUSTUP_HOME`, `RUSTUP_TOOLCHAIN`,
//! `CARGO_TARGET_DIR`, `STACKBENCH_TOOLKITS`, `STACKBENCH_BUILD_FIXTURES`,
//! `STACKBENCH_WINDOWS_TOOLKITS`, `STACKBENCH_CI_TOOLS`, `STACKBENCH_BIN`) when set.
//!
//! Before matching, what differs between machines and runs is normalised, and nothing else: the
//! scratch directory and the repository's path read `~/stackbench` (the reader's checkout), the
//! cargo target directory when it is outside the repository reads `~/stackbench/target`, and
//! HOME reads `~`.
//!
//! # Output outside `console` blocks
//!
//! Other fenced blocks (`sh`, `toml`, `yaml`, ...) are not run. They may show commands to type
//! where this test cannot go (a GPU host, a cluster), never output of stackbench, which would
//! drift unseen. A page fails when a block that is not `console`:
//! - has a line starting `$ ` (a prompt: command and output belong in a `console` block; an
//!   instruction is written without the prompt), or
//! - has a line starting `stackbench WORD:` or `stackbench WORD (` (the first line of
//!   stackbench's terminal reports: `stackbench doctor: 1 error, ...`), or
//! - has a line with both `"schema"` and `"stackbench.` (a JSON result of stackbench).
//!
//! # Pages and links
//!
//! Every page has its own test, `page::NAME` (see [`pages!`]); `every_page_has_a_test` fails when a page in
//! `doc/` has none. Each page's relative links must point at files that exist, and the README
//! must link every page of the guide.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The longest one command of a page may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// One test per page: `name => "path"`. A page added to `doc/` needs its line here
/// (`every_page_has_a_test` says so).
macro_rules! pages {
    ($($name:ident => $path:literal,)*) => {
        const PAGES: &[&str] = &[$($path),*];
        /// One test per page: `cargo test --release --test docs page::NAME`.
        mod page {
            $(
                #[test]
                fn $name() {
                    super::run_page($path);
                }
            )*
        }
    };
}

pages! {
    readme => "README.md",
    guide_index => "doc/README.md",
    doctor => "doc/doctor.md",
    scan => "doc/scan.md",
    check => "doc/check.md",
    bench => "doc/bench.md",
    compare => "doc/compare.md",
    merge => "doc/merge.md",
    ingest => "doc/ingest.md",
    baseline => "doc/baseline.md",
    report => "doc/report.md",
    schemas => "doc/schemas.md",
    statistics => "doc/statistics.md",
    simulated_gpu => "doc/simulated-gpu.md",
    windows => "doc/windows.md",
    tests_and_fixtures => "doc/tests.md",
    ci_github => "doc/ci-github.md",
    ci_slurm => "doc/ci-slurm.md",
    ci_kubernetes => "doc/ci-kubernetes.md",
    install => "doc/install.md",
    architecture => "doc/architecture.md",
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------------
// Markdown: fenced blocks, commands, links

/// A fenced block of a page.
#[derive(Debug)]
struct Block {
    /// The first word of the info string (`console`, `sh`, ...; empty for none).
    info: String,
    /// 1-based line number of the opening fence.
    line: usize,
    /// The lines between the fences, the fence's indentation removed.
    lines: Vec<String>,
}

/// Every fenced block (``` or ~~~, three or more) of `text`.
fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((number, line)) = lines.next() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let fence_char = match trimmed.chars().next() {
            Some(c @ ('`' | '~')) => c,
            _ => continue,
        };
        let fence_len = trimmed.chars().take_while(|&c| c == fence_char).count();
        if fence_len < 3 {
            continue;
        }
        let info = trimmed[fence_len..]
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_string();
        let mut body = Vec::new();
        for (_, inner) in lines.by_ref() {
            let t = inner.trim_start();
            if t.chars().take_while(|&c| c == fence_char).count() >= fence_len
                && t.trim_start_matches(fence_char).trim().is_empty()
            {
                break;
            }
            let strip = inner.len() - t.len();
            body.push(inner[strip.min(indent)..].to_string());
        }
        out.push(Block {
            info,
            line: number + 1,
            lines: body,
        });
    }
    out
}

/// A command of a console block and the output it should print.
#[derive(Debug)]
struct Example {
    /// 1-based line number of its `$ ` line in the page.
    line: usize,
    command: String,
    expected: Vec<String>,
}

/// The commands of a console block; an error for text before the first command.
fn examples(block: &Block) -> Result<Vec<Example>, String> {
    let mut out: Vec<Example> = Vec::new();
    let mut i = 0;
    while i < block.lines.len() {
        let line = &block.lines[i];
        let number = block.line + 1 + i;
        if let Some(first) = line.strip_prefix("$ ") {
            let mut command = first.to_string();
            while command.trim_end().ends_with('\\') && i + 1 < block.lines.len() {
                i += 1;
                command.push('\n');
                command.push_str(&block.lines[i]);
            }
            out.push(Example {
                line: number,
                command,
                expected: Vec::new(),
            });
        } else if let Some(example) = out.last_mut() {
            example.expected.push(line.clone());
        } else if !line.trim().is_empty() {
            return Err(format!(
                "{number}: output before any `$ ` command in a console block"
            ));
        }
        i += 1;
    }
    Ok(out)
}

/// Why a block that is not `console` may not stand as it is (see the module's documentation).
fn output_outside_console(block: &Block) -> Option<String> {
    for (i, line) in block.lines.iter().enumerate() {
        let number = block.line + 1 + i;
        let t = line.trim_start();
        if t.starts_with("$ ") {
            return Some(format!(
                "{number}: a `$ ` prompt in a ```{} block: show the command and its output \
                 in a ```console block (run by this test), or write the command without the prompt",
                block.info
            ));
        }
        if let Some(rest) = t.strip_prefix("stackbench ") {
            let word_len = rest.chars().take_while(|c| c.is_ascii_lowercase()).count();
            let after = &rest[word_len..];
            if word_len > 0 && (after.starts_with(':') || after.starts_with(" (")) {
                return Some(format!(
                    "{number}: stackbench's report in a ```{} block ({t:?}): output belongs \
                     in a ```console block, where this test runs it",
                    block.info
                ));
            }
        }
        if t.contains("\"schema\"") && t.contains("\"stackbench.") {
            return Some(format!(
                "{number}: a stackbench JSON result in a ```{} block: show it with a command \
                 in a ```console block, where this test runs it",
                block.info
            ));
        }
    }
    None
}

/// Relative link targets of `text` (`[text](target)`), without their `#anchor`; absolute
/// addresses and pure anchors left out. Fenced blocks are not searched.
fn relative_links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced: Option<char> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(c) = t.chars().next().filter(|&c| c == '`' || c == '~') {
            if t.starts_with(&c.to_string().repeat(3)) {
                fenced = match fenced {
                    Some(open) if open == c => None,
                    None => Some(c),
                    other => other,
                };
                continue;
            }
        }
        if fenced.is_some() {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            let target = target.split('#').next().unwrap_or("");
            if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
                out.push((i + 1, target.to_string()));
            }
            rest = &after[end..];
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Matching

/// Whether `actual` matches the expected line `pattern`, where `[..]` matches any text.
fn line_matches(pattern: &str, actual: &str) -> bool {
    let pattern = pattern.trim_end();
    let actual = actual.trim_end();
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() {
        return false;
    }
    if !actual[first.len()..].ends_with(last) {
        return false;
    }
    let mut middle = &actual[first.len()..actual.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match middle.find(part) {
            Some(at) => middle = &middle[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Lines with trailing whitespace and trailing blank lines removed.
fn tidy<S: AsRef<str>>(lines: &[S]) -> Vec<&str> {
    let mut out: Vec<&str> = lines.iter().map(|l| l.as_ref().trim_end()).collect();
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out
}

/// Whether `actual` matches `expected`, line by line, with `[..]` within lines and `...` lines.
fn output_matches<E: AsRef<str>, A: AsRef<str>>(expected: &[E], actual: &[A]) -> bool {
    let expected = tidy(expected);
    let actual = tidy(actual);
    // reach[j]: the first i expected lines can match the first j actual lines.
    let mut reach = vec![false; actual.len() + 1];
    reach[0] = true;
    for pattern in &expected {
        let mut next = vec![false; actual.len() + 1];
        if *pattern == "..." {
            let mut any = false;
            for j in 0..=actual.len() {
                any |= reach[j];
                next[j] = any;
            }
        } else {
            for j in 0..actual.len() {
                if reach[j] && line_matches(pattern, actual[j]) {
                    next[j + 1] = true;
                }
            }
        }
        reach = next;
    }
    reach[actual.len()]
}

/// Whether `actual` matches `expected` once both are read as runs of words: where a line breaks
/// and how much whitespace separates words are no difference. stackbench wraps its reports at a
/// fixed width, so a path of another length (the checkout's, before it reads `~/stackbench`)
/// moves the breaks of the paragraph it is in. `[..]` matches any text within one line of
/// `actual`, and a `...` line any text at all.
fn reflowed_matches<E: AsRef<str>, A: AsRef<str>>(expected: &[E], actual: &[A]) -> bool {
    let expected = tidy(expected);
    let mut pattern = String::from(r"\A\s*");
    let mut words = 0;
    for line in &expected {
        if *line == "..." {
            // Whole words only: what it stands for is set off by whitespace.
            pattern.push_str(if words == 0 {
                r"(?:[\s\S]*?\s)?"
            } else {
                r"(?:\s[\s\S]*?)?"
            });
            continue;
        }
        for word in line.split_whitespace() {
            if words > 0 {
                pattern.push_str(r"\s+");
            }
            let parts: Vec<String> = word.split("[..]").map(regex::escape).collect();
            pattern.push_str(&parts.join(r"[^\n]*?"));
            words += 1;
        }
    }
    if words == 0 {
        return output_matches(&expected, actual);
    }
    pattern.push_str(r"\s*\z");
    let actual = tidy(actual).join("\n");
    regex::Regex::new(&pattern).is_ok_and(|re| re.is_match(&actual))
}

/// A diff-like view of expected against actual: `  ` for a line that matches (the lines a
/// `...` stands for are not repeated), `- ` for an expected line that is not there, `+ ` for an
/// actual line that nothing expected. The fewest `-` and `+` lines that explain the mismatch.
fn diff<E: AsRef<str>, A: AsRef<str>>(expected: &[E], actual: &[A]) -> String {
    let expected = tidy(expected);
    let actual = tidy(actual);
    let (n, m) = (expected.len(), actual.len());
    // cost[i][j]: the fewest unmatched lines between expected[i..] and actual[j..].
    let mut cost = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..=n).rev() {
        for j in (0..=m).rev() {
            cost[i][j] = if i == n {
                m - j
            } else if expected[i] == "..." {
                let skip = cost[i + 1][j];
                if j < m {
                    skip.min(cost[i][j + 1])
                } else {
                    skip
                }
            } else if j == m {
                cost[i + 1][j] + 1
            } else if line_matches(expected[i], actual[j]) {
                cost[i + 1][j + 1]
            } else {
                (cost[i + 1][j] + 1).min(cost[i][j + 1] + 1)
            };
        }
    }
    let mut out = String::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && expected[i] == "..." {
            if cost[i + 1][j] == cost[i][j] {
                out.push_str("  ...\n");
                i += 1;
            } else {
                j += 1; // a line the `...` stands for
            }
        } else if i < n
            && j < m
            && line_matches(expected[i], actual[j])
            && cost[i + 1][j + 1] == cost[i][j]
        {
            out.push_str(&format!("  {}\n", actual[j]));
            i += 1;
            j += 1;
        } else if j < m && (i == n || cost[i][j + 1] + 1 == cost[i][j]) {
            out.push_str(&format!("+ {}\n", actual[j]));
            j += 1;
        } else {
            out.push_str(&format!("- {}\n", expected[i]));
            i += 1;
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The bash session

/// A persistent bash running a page's commands one at a time.
struct Session {
    bash: Child,
    stdin: std::process::ChildStdin,
    /// Where commands, their output and their status go (outside the scratch directory).
    control: tempfile::TempDir,
    scratch: tempfile::TempDir,
    home: tempfile::TempDir,
    count: usize,
}

/// What one command printed and how it exited.
struct Ran {
    output: String,
    status: i32,
}

impl Session {
    fn start() -> Session {
        let repo = repo();
        let control = tempfile::tempdir().expect("control directory");
        let scratch = tempfile::tempdir().expect("scratch directory");
        let home = tempfile::tempdir().expect("HOME");

        // The reader's checkout: links to the real fixtures and tests.
        let link = |target: PathBuf, name: &str| {
            std::os::unix::fs::symlink(&target, scratch.path().join(name))
                .unwrap_or_else(|e| panic!("link {name} -> {}: {e}", target.display()));
        };
        link(repo.join("tests"), "tests");
        link(common::toolkits_location(), ".toolkits");
        for (var, default) in [
            ("STACKBENCH_WINDOWS_TOOLKITS", ".toolkits-windows"),
            ("STACKBENCH_BUILD_FIXTURES", ".build-fixtures"),
        ] {
            let target = std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map_or_else(|| repo.join(default), PathBuf::from);
            link(target, default);
        }
        let ci = scratch.path().join("ci");
        std::fs::create_dir(&ci).expect("scratch ci/");
        for entry in std::fs::read_dir(repo.join("ci")).expect("read ci/") {
            let entry = entry.expect("ci/ entry");
            if entry.file_name() != "sim" {
                std::os::unix::fs::symlink(entry.path(), ci.join(entry.file_name()))
                    .expect("link a ci/ script");
            }
        }

        // stackbench on PATH, and ci/sim as laid out once for this test binary.
        let bin = control.path().join("bin");
        std::fs::create_dir(&bin).expect("bin directory");
        std::os::unix::fs::symlink(common::stackbench_bin(), bin.join("stackbench"))
            .expect("link stackbench");
        let sim_printed = control.path().join("sim.out");
        let sim_script = format!(
            "#!/usr/bin/env bash\n\
             # The simulated GPU as tests/docs.rs laid it out once (see its documentation).\n\
             cat '{}'\n",
            sim_printed.display()
        );
        std::fs::write(ci.join("sim"), sim_script).expect("write ci/sim");
        std::fs::set_permissions(
            ci.join("sim"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("make ci/sim executable");

        let mut path = vec![bin.clone()];
        if let Some(cargo) = std::env::var_os("CARGO").map(PathBuf::from) {
            if let Some(dir) = cargo.parent() {
                path.push(dir.to_path_buf());
            }
        }
        path.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(PathBuf::from));
        let path = std::env::join_paths(path).expect("PATH");

        let mut command = Command::new("bash");
        command
            .args(["--noprofile", "--norc"])
            .env_clear()
            .env("PATH", path)
            .env("HOME", home.path())
            .env("LANG", "C.UTF-8")
            .current_dir(scratch.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let real_home = std::env::var_os("HOME").map(PathBuf::from);
        for (var, default) in [("CARGO_HOME", ".cargo"), ("RUSTUP_HOME", ".rustup")] {
            match (std::env::var_os(var), &real_home) {
                (Some(v), _) => command.env(var, v),
                (None, Some(h)) => command.env(var, h.join(default)),
                (None, None) => &mut command,
            };
        }
        for var in [
            "RUSTUP_TOOLCHAIN",
            "CARGO_TARGET_DIR",
            "STACKBENCH_TOOLKITS",
            "STACKBENCH_BUILD_FIXTURES",
            "STACKBENCH_WINDOWS_TOOLKITS",
            "STACKBENCH_CI_TOOLS",
            "STACKBENCH_BIN",
        ] {
            if let Some(v) = std::env::var_os(var) {
                command.env(var, v);
            }
        }
        let mut bash = command.spawn().expect("start bash");
        let mut stdin = bash.stdin.take().expect("bash's stdin");
        writeln!(
            stdin,
            "set -o pipefail\n\
             __docs_status=0\n\
             cargo() {{\n\
             \x20 if [ \"$1\" = run ] && [ \"$2\" = --release ] && [ \"$3\" = -- ]; then\n\
             \x20   shift 3; stackbench \"$@\"\n\
             \x20 else command cargo \"$@\"; fi\n\
             }}"
        )
        .expect("set up bash");
        Session {
            bash,
            stdin,
            control,
            scratch,
            home,
            count: 0,
        }
    }

    /// Lays out the simulated GPU once for this test binary and lets this page's `ci/sim`
    /// print where it is.
    fn with_simulator(&self) {
        let sim = common::simulator();
        std::fs::write(
            self.control.path().join("sim.out"),
            format!(
                "driver_dir={}\ntoolkit_dir={}\n",
                sim.driver_dir.display(),
                sim.toolkit_dir.display()
            ),
        )
        .expect("write what ci/sim prints");
    }

    /// Runs `command` in the session, waiting at most [`COMMAND_TIMEOUT`].
    fn run(&mut self, command: &str) -> Result<Ran, String> {
        self.count += 1;
        let dir = self.control.path();
        let script = dir.join(format!("cmd{}", self.count));
        let out = dir.join(format!("out{}", self.count));
        let status = dir.join(format!("status{}", self.count));
        std::fs::write(&script, format!("{command}\n")).expect("write the command");
        let q = |p: &Path| format!("'{}'", p.display());
        let line = format!(
            "(exit $__docs_status); source {} >{} 2>&1 </dev/null; __docs_status=$?; \
             echo $__docs_status >{}.tmp; mv {}.tmp {}\n",
            q(&script),
            q(&out),
            q(&status),
            q(&status),
            q(&status)
        );
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("the bash session is gone ({e})"))?;
        let start = Instant::now();
        loop {
            if let Ok(text) = std::fs::read_to_string(&status) {
                let status = text.trim().parse().expect("a status");
                let output =
                    String::from_utf8_lossy(&std::fs::read(&out).unwrap_or_default()).into_owned();
                return Ok(Ran {
                    output: self.normalise(&output),
                    status,
                });
            }
            if let Ok(Some(exit)) = self.bash.try_wait() {
                return Err(format!(
                    "the bash session ended ({exit}) during this command: a page may not `exit`"
                ));
            }
            if start.elapsed() > COMMAND_TIMEOUT {
                return Err(format!(
                    "timed out after {} s (output so far:\n{})",
                    COMMAND_TIMEOUT.as_secs(),
                    String::from_utf8_lossy(&std::fs::read(&out).unwrap_or_default())
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The output with what differs between machines replaced (see the module's documentation).
    fn normalise(&self, output: &str) -> String {
        let checkout = "~/stackbench";
        let repo = repo();
        let target = common::stackbench_bin()
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf);
        let mut pairs: Vec<(String, String)> = Vec::new();
        let mut add = |path: &Path, to: &str| {
            let mut forms = vec![path.to_path_buf()];
            if let Ok(canonical) = path.canonicalize() {
                forms.push(canonical);
            }
            for form in forms {
                pairs.push((form.display().to_string(), to.to_string()));
            }
        };
        if let Some(target) = target.filter(|t| !t.starts_with(&repo)) {
            add(&target, &format!("{checkout}/target"));
        }
        add(self.home.path(), "~");
        add(self.scratch.path(), checkout);
        add(&repo, checkout);
        // Longest first, so that a path inside another is replaced whole.
        pairs.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
        let mut text = output.to_string();
        for (from, to) in pairs {
            text = text.replace(&from, &to);
        }
        text
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // The bash session and anything it left running.
        unsafe {
            libc::kill(-(self.bash.id() as i32), libc::SIGKILL);
        }
        let _ = self.bash.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// A page

/// Runs every console block of `page` (relative to the repository) and checks its other
/// blocks and its links; panics with every failure found.
fn run_page(page: &str) {
    let path = repo().join(page);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{page}: cannot read it ({e}): every page in the guide's index must exist")
    });
    let mut failures: Vec<String> = Vec::new();

    for (line, target) in relative_links(&text) {
        let base = path.parent().expect("a page's directory");
        if !base.join(&target).exists() {
            failures.push(format!(
                "{page}:{line}: link to {target}, which does not exist"
            ));
        }
    }

    let blocks = blocks(&text);
    let mut session: Option<Session> = None;
    for block in &blocks {
        if block.info != "console" {
            if let Some(why) = output_outside_console(block) {
                failures.push(format!("{page}:{why}"));
            }
            continue;
        }
        let examples = match examples(block) {
            Ok(examples) => examples,
            Err(why) => {
                failures.push(format!("{page}:{why}"));
                continue;
            }
        };
        let session = session.get_or_insert_with(|| {
            let session = Session::start();
            if text.contains("ci/sim") {
                session.with_simulator();
            }
            session
        });
        for (k, example) in examples.iter().enumerate() {
            let started = Instant::now();
            let ran = match session.run(&example.command) {
                Ok(ran) => ran,
                Err(why) => {
                    failures.push(format!(
                        "{page}:{} (block at line {}): $ {}\n{why}",
                        example.line, block.line, example.command
                    ));
                    // The session cannot go on.
                    return fail_on(page, failures);
                }
            };
            if std::env::var_os("STACKBENCH_DOCS_TIMES").is_some() {
                eprintln!(
                    "{page}:{}: {:.2} s: $ {}",
                    example.line,
                    started.elapsed().as_secs_f64(),
                    example.command
                );
            }
            let actual: Vec<&str> = ran.output.lines().collect();
            if !output_matches(&example.expected, &actual)
                && !reflowed_matches(&example.expected, &actual)
            {
                failures.push(format!(
                    "{page}:{} (block at line {}): $ {}\n\
                     its output does not match (- expected, + actual, exit status {}):\n{}\
                     the whole output (what a `...` stands for included):\n{}",
                    example.line,
                    block.line,
                    example.command,
                    ran.status,
                    diff(&example.expected, &actual),
                    actual
                        .iter()
                        .map(|l| format!("| {l}\n"))
                        .collect::<String>()
                ));
            }
            let next_is_status = examples
                .get(k + 1)
                .is_some_and(|next| next.command.trim() == "echo $?");
            if ran.status != 0 && !next_is_status {
                failures.push(format!(
                    "{page}:{} (block at line {}): $ {}\n\
                     exited {} and the block does not show it: follow it with `$ echo $?` and \
                     the status it prints",
                    example.line, block.line, example.command, ran.status
                ));
            }
        }
    }
    fail_on(page, failures);
}

fn fail_on(page: &str, failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{page}: {} failure(s)\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Pages, links

/// README.md and every Markdown page under doc/, relative to the repository.
fn all_pages() -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, base, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                let relative = path.strip_prefix(base).expect("under the repository");
                out.push(relative.display().to_string());
            }
        }
    }
    let repo = repo();
    let mut out = vec!["README.md".to_string()];
    walk(&repo.join("doc"), &repo, &mut out);
    out.sort();
    out
}

#[test]
fn every_page_has_a_test() {
    let missing: Vec<String> = all_pages()
        .into_iter()
        .filter(|page| !PAGES.contains(&page.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "pages no test runs: {missing:?}: give each a line in tests/docs.rs's pages! {{ ... }}"
    );
}

#[test]
fn the_readme_and_the_index_link_every_page_of_the_guide() {
    let repo = repo();
    for (index, prefix) in [("README.md", "doc/"), ("doc/README.md", "")] {
        let text = std::fs::read_to_string(repo.join(index)).expect("read the index");
        let links: Vec<String> = relative_links(&text).into_iter().map(|(_, t)| t).collect();
        let unlinked: Vec<String> = all_pages()
            .into_iter()
            .filter(|page| page.starts_with("doc/") && page != "doc/README.md")
            .filter(|page| {
                let wanted = format!("{prefix}{}", page.trim_start_matches("doc/"));
                !links.iter().any(|l| l.trim_start_matches("./") == wanted)
            })
            .collect();
        assert!(
            unlinked.is_empty(),
            "{index} does not link {unlinked:?}: every page of the guide is linked from it"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The runner's own parts

#[test]
fn a_line_matches_with_wildcards() {
    assert!(line_matches("exact", "exact"));
    assert!(line_matches("trailing   ", "trailing"));
    assert!(!line_matches("exact", "exactly"));
    assert!(line_matches("took [..] s", "took 1.25 s"));
    assert!(line_matches("took [..] s", "took  s"));
    assert!(line_matches("[..]", "anything at all"));
    assert!(line_matches("[..]", ""));
    assert!(line_matches("[..]end", "the end"));
    assert!(line_matches("start[..]", "start here"));
    assert!(line_matches("a [..] b [..] c", "a 1 b 2 c"));
    assert!(!line_matches("a [..] b [..] c", "a 1 c 2 b"));
    // Prefix and suffix may not overlap.
    assert!(!line_matches("ab[..]ba", "aba"));
    assert!(!line_matches("took [..] s", "took 1.25 ms and more"));
}

#[test]
fn dots_match_any_number_of_lines() {
    let actual = ["one", "two", "three", "four"];
    assert!(output_matches(&["one", "two", "three", "four"], &actual));
    assert!(output_matches(&["...", "four"], &actual));
    assert!(output_matches(&["one", "..."], &actual));
    assert!(output_matches(&["one", "...", "four"], &actual));
    assert!(output_matches(&["...", "two", "...", "four"], &actual));
    assert!(output_matches(
        &["one", "two", "...", "three", "four"],
        &actual
    ));
    assert!(output_matches(&["..."], &actual));
    assert!(output_matches(&["..."], &[] as &[&str]));
    assert!(output_matches(&["...", "t[..]", "..."], &actual));
    // Trailing blank lines on either side are no difference.
    assert!(output_matches(
        &["one", "two", "three", "four", ""],
        &actual
    ));
}

#[test]
fn lines_broken_elsewhere_match_and_other_words_do_not() {
    let expected = [
        "fix: put zlibwapi.dll beside cudnn64_8.dll in",
        "  [..]/nvidia/cudnn/bin, or upgrade to",
        "  cuDNN 9",
        "...",
        "notes",
    ];
    let longer = [
        "fix: put zlibwapi.dll beside cudnn64_8.dll in",
        "  /a/longer/checkout/nvidia/cudnn/bin, or upgrade",
        "  to cuDNN 9",
        "warnings",
        "notes",
    ];
    assert!(!output_matches(&expected, &longer));
    assert!(reflowed_matches(&expected, &longer));
    let shorter = [
        "fix: put zlibwapi.dll beside cudnn64_8.dll in /c/nvidia/cudnn/bin, or",
        "  upgrade to cuDNN 9",
        "notes",
    ];
    assert!(reflowed_matches(&expected, &shorter));
    // A word changed, a word dropped, a line left over, words run together: no match.
    let renamed = [
        "fix: put zlibwapi.dll beside cudnn64_9.dll in /c/nvidia/cudnn/bin, or upgrade to cuDNN 9",
        "notes",
    ];
    assert!(!reflowed_matches(&expected, &renamed));
    let dropped = [
        "fix: put zlibwapi.dll beside cudnn64_8.dll in /c/nvidia/cudnn/bin, or to cuDNN 9",
        "notes",
    ];
    assert!(!reflowed_matches(&expected, &dropped));
    let more = [
        "fix: put zlibwapi.dll beside cudnn64_8.dll in /c/nvidia/cudnn/bin, or upgrade to cuDNN 9",
        "notes",
        "more",
    ];
    assert!(!reflowed_matches(&expected, &more));
    assert!(!reflowed_matches(&["one", "...", "four"], &["onefour"]));
    assert!(reflowed_matches(&["one", "...", "four"], &["one", "four"]));
    assert!(reflowed_matches(&["...", "four"], &["one two", "four"]));
    assert!(!reflowed_matches(&["...", "four"], &["onefour"]));
    assert!(reflowed_matches(&["..."], &["anything"]));
    // `[..]` stays within one line of the output.
    assert!(!reflowed_matches(&["a [..] d"], &["a b", "c d"]));
}

#[test]
fn a_mismatch_is_found_and_shown() {
    let actual = ["one", "two", "three"];
    assert!(!output_matches(&["one", "three"], &actual));
    assert!(!output_matches(&["one", "two"], &actual));
    assert!(!output_matches(&["...", "four"], &actual));
    assert!(!output_matches(&["one", "two", "three", "four"], &actual));
    assert!(!output_matches(&[] as &[&str], &actual));
    let shown = diff(&["one", "2", "three"], &actual);
    assert!(
        shown == "  one\n+ two\n- 2\n  three\n" || shown == "  one\n- 2\n+ two\n  three\n",
        "{shown}"
    );
    // The lines a `...` stands for are not shown; the mismatch after it is.
    let actual = ["one", "two", "three", "four", "five"];
    assert_eq!(
        diff(&["one", "...", "four", "six"], &actual),
        "  one\n  ...\n  four\n+ five\n- six\n"
    );
}

#[test]
fn console_blocks_become_commands_and_their_output() {
    let page = "text\n\n```console\n$ echo a \\\n  b\na b\n$ true\n```\n\n~~~sh\nls\n~~~\n";
    let found = blocks(page);
    assert_eq!(found.len(), 2);
    assert_eq!((found[0].info.as_str(), found[0].line), ("console", 3));
    assert_eq!((found[1].info.as_str(), found[1].line), ("sh", 10));
    let examples = examples(&found[0]).expect("commands");
    assert_eq!(examples.len(), 2);
    assert_eq!(examples[0].command, "echo a \\\n  b");
    assert_eq!(examples[0].expected, ["a b"]);
    assert_eq!(examples[0].line, 4);
    assert_eq!(examples[1].line, 7);
    assert!(examples[1].expected.is_empty());
}

#[test]
fn stackbench_output_outside_console_blocks_is_refused() {
    let refused = |body: &str| {
        output_outside_console(&Block {
            info: "sh".into(),
            line: 1,
            lines: body.lines().map(String::from).collect(),
        })
    };
    assert!(refused("$ stackbench doctor").is_some());
    assert!(refused("stackbench doctor: 1 error, 2 warnings, 0 notes").is_some());
    assert!(refused("stackbench compare (3 rows):").is_some());
    assert!(refused("{\n  \"schema\": \"stackbench.check/v1\",\n}").is_some());
    assert!(refused("stackbench check --no-system --root \"$toolkit_dir\"").is_none());
    assert!(refused("kubectl apply -f ci/k8s/healthcheck.yaml").is_none());
}

#[test]
fn a_session_keeps_state_and_statuses() {
    let mut session = Session::start();
    let ran = session.run("x=41; cd tests").expect("run");
    assert_eq!((ran.output.as_str(), ran.status), ("", 0));
    let ran = session
        .run("echo $((x + 1)) $(basename $PWD)")
        .expect("run");
    assert_eq!(ran.output, "42 tests\n");
    let ran = session.run("false").expect("run");
    assert_eq!(ran.status, 1);
    let ran = session.run("echo $?").expect("run");
    assert_eq!(ran.output, "1\n");
    let ran = session.run("echo out; echo err >&2").expect("run");
    assert_eq!(ran.output, "out\nerr\n");
    let ran = session.run("cd ..; pwd; echo $HOME").expect("run");
    assert_eq!(ran.output, "~/stackbench\n~\n");
    let ran = session.run("type -t cargo stackbench").expect("run");
    assert_eq!(ran.output, "function\nfile\n");
}
