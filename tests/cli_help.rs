//! `--help` against the guide: `stackbench --help` lists the commands in the order a user meets
//! them, and each command's help has a one-line purpose, names its page under doc/, and groups
//! its options under exactly the `### ` headings of that page's `## Options` section, in order.
//! Move an option to another heading, add a heading, rename one on either side or reorder the
//! commands, and this fails until the help and the guide agree again.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The visible commands, in the order `stackbench --help` must list them.
const COMMANDS: [&str; 9] = [
    "doctor", "check", "bench", "compare", "report", "merge", "ingest", "baseline", "scan",
];

/// Headings clap writes itself, which no guide page lists: `Options` holds only the flags
/// every command takes (`--color`, `-h`, `-V`).
const GENERIC_HEADINGS: [&str; 3] = ["Usage", "Options", "Commands"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `stackbench ARGS` with colour off; its standard output, which must be its only output.
fn help(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_stackbench"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .output()
        .expect("run stackbench");
    assert!(output.status.success(), "stackbench {args:?}: {output:?}");
    assert!(
        output.stderr.is_empty(),
        "stackbench {args:?} wrote to stderr: {output:?}"
    );
    String::from_utf8(output.stdout).expect("UTF-8 help")
}

/// The section headings of a help text (`Where to look:` at the start of a line), in order.
fn help_headings(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| !line.starts_with(' ') && line.ends_with(':') && !line.contains("  "))
        .map(|line| line.trim_end_matches(':').to_string())
        .filter(|heading| !GENERIC_HEADINGS.contains(&heading.as_str()))
        .collect()
}

/// The lines of one section of a help text: from its heading to the next blank-line-separated
/// heading.
fn help_section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    let mut lines = text
        .lines()
        .skip_while(|line| *line != format!("{heading}:"));
    lines.next();
    lines
        .take_while(|line| line.is_empty() || line.starts_with(' '))
        .filter(|line| !line.trim().is_empty())
        .collect()
}

/// The `### ` headings under a Markdown page's `## Options`, in order (fenced blocks skipped).
fn page_option_headings(page: &str) -> Vec<String> {
    let mut headings = Vec::new();
    let (mut in_options, mut in_fence) = (false, false);
    for line in page.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if let Some(title) = line.strip_prefix("## ") {
            in_options = title.trim() == "Options";
        } else if let Some(title) = line.strip_prefix("### ") {
            if in_options {
                headings.push(title.trim().to_string());
            }
        }
    }
    headings
}

/// The text of the `### heading` subsection under a page's `## Options` (up to the next heading).
fn page_option_section(page: &str, heading: &str) -> String {
    let mut text = String::new();
    let (mut in_options, mut inside) = (false, false);
    for line in page.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            in_options = title.trim() == "Options";
            inside = false;
        } else if let Some(title) = line.strip_prefix("### ") {
            inside = in_options && title.trim() == heading;
        } else if inside {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

/// The names a help section lists: each option's long name (`--root`) and each argument's
/// (`OLD`, `COMMAND`), from the short help's one line per entry.
fn help_entries(section: &[&str]) -> Vec<String> {
    section
        .iter()
        .filter_map(|line| {
            let entry = line.trim_start();
            if let Some(rest) = entry.strip_prefix(['[', '<']) {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase())
                    .collect();
                return (!name.is_empty()).then_some(name);
            }
            let long = entry
                .split_whitespace()
                .find(|word| word.starts_with("--"))?;
            Some(long.trim_end_matches(',').to_string())
        })
        .collect()
}

/// Whether `text` names `name` as a whole word (`--device` is not named by `--devices`).
fn names(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    // An argument's name (`OLD`) must not be the tail of another word either.
    let argument = name.starts_with(|c: char| c.is_ascii_uppercase());
    text.match_indices(name).any(|(at, _)| {
        let word_before = text[..at].chars().next_back().is_some_and(word);
        let word_after = text[at + name.len()..].chars().next().is_some_and(word);
        !(word_after || (argument && word_before))
    })
}

#[test]
fn commands_are_listed_in_the_order_a_user_meets_them() {
    let text = help(&["--help"]);
    let listed: Vec<&str> = help_section(&text, "Commands")
        .iter()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert_eq!(listed, COMMANDS, "stackbench --help lists:\n{text}");
}

#[test]
fn every_visible_command_is_in_the_list() {
    // A new command must take its place in COMMANDS (and get a page), not slip in unchecked.
    let text = help(&["--help"]);
    for line in help_section(&text, "Commands") {
        let name = line.split_whitespace().next().unwrap_or_default();
        assert!(
            name == "help" || COMMANDS.contains(&name),
            "{name} is listed by --help but has no place in COMMANDS"
        );
    }
}

#[test]
fn each_command_has_a_one_line_purpose() {
    for command in COMMANDS {
        let text = help(&[command, "-h"]);
        let first = text.lines().next().unwrap_or_default();
        assert!(
            !first.is_empty() && text.lines().nth(1) == Some(""),
            "{command} -h does not open with a one-line purpose:\n{text}"
        );
        assert!(
            first.len() <= 100,
            "{command}'s purpose is longer than a line of 100 columns: {first}"
        );
        // The same line heads the long help, and the command list says it too.
        let long = help(&[command, "--help"]);
        assert_eq!(
            long.lines().next().map(|line| line.trim_end_matches('.')),
            Some(first.trim_end_matches('.')),
            "{command} --help"
        );
        let list = help(&["--help"]);
        assert!(
            list.lines()
                .any(|line| line.trim_start().starts_with(command) && line.ends_with(first)),
            "stackbench --help does not give {command} its purpose `{first}`:\n{list}"
        );
    }
}

#[test]
fn each_command_names_its_guide_page() {
    for command in COMMANDS {
        let page = format!("doc/{command}.md");
        for flag in ["-h", "--help"] {
            let text = help(&[command, flag]);
            assert!(
                text.lines().any(|line| line == format!("Guide: {page}")),
                "{command} {flag} does not end with `Guide: {page}`:\n{text}"
            );
        }
        assert!(repo().join(&page).is_file(), "{page} does not exist");
    }
}

#[test]
fn help_headings_are_the_guide_pages_option_headings() {
    for command in COMMANDS {
        let text = help(&[command, "--help"]);
        assert!(
            !text.lines().any(|line| line == "Arguments:"),
            "{command}: an argument has no heading of its own:\n{text}"
        );
        // Only the flags every command takes are left under clap's own `Options`.
        let mut generic: Vec<&str> = help_section(&text, "Options")
            .into_iter()
            .filter(|line| line.trim_start().starts_with('-'))
            .map(|line| line.trim())
            .collect();
        generic.sort_unstable();
        assert_eq!(
            generic,
            ["--color <COLOR>", "-V, --version", "-h, --help"],
            "{command}: an option has no heading of its own:\n{text}"
        );
        let page_path = repo().join(format!("doc/{command}.md"));
        let page = std::fs::read_to_string(&page_path)
            .unwrap_or_else(|error| panic!("{}: {error}", page_path.display()));
        let on_page = page_option_headings(&page);
        let in_help = help_headings(&text);
        assert!(
            !in_help.is_empty(),
            "{command} --help has no option headings:\n{text}"
        );
        assert_eq!(
            in_help,
            on_page,
            "{command}: --help's option headings (left) are not {}'s `### ` headings under \
             `## Options` (right)",
            relative(&page_path)
        );
    }
}

#[test]
fn each_option_is_described_under_its_heading_on_the_page() {
    // Moving an option to another heading in the help, or its description to another
    // subsection of the page, fails here: the page must name it where --help puts it.
    for command in COMMANDS {
        let text = help(&[command, "-h"]);
        let page_path = repo().join(format!("doc/{command}.md"));
        let page = std::fs::read_to_string(&page_path)
            .unwrap_or_else(|error| panic!("{}: {error}", page_path.display()));
        for heading in help_headings(&text) {
            let described = page_option_section(&page, &heading);
            let missing: Vec<String> = help_entries(&help_section(&text, &heading))
                .into_iter()
                .filter(|name| !names(&described, name))
                .collect();
            assert!(
                missing.is_empty(),
                "{command}: --help lists {missing:?} under `{heading}`, and {}'s `### {heading}` \
                 does not name them",
                relative(&page_path)
            );
        }
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(repo())
        .unwrap_or(path)
        .display()
        .to_string()
}
