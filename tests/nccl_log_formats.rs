//! The NCCL INFO lines `check` and `bench` read (`harness/nccl/log.rs`), checked against NCCL's
//! own words: the printf formats in the real `libnccl.so.2` of every fixture that holds one, one
//! library per NCCL version. Each format of a ring edge, of a tuning choice and of a setting
//! taken from the environment is filled in as printf would fill it and parsed; a NCCL that words
//! one of these lines differently fails here, not on a user's node.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use stackbench::nccl::log::{parse, Transport};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `libnccl.so.2` below the fixtures, one per NCCL version (the version its
/// `NCCL version ...` string gives), with its printable strings.
fn libraries() -> BTreeMap<String, (PathBuf, Vec<String>)> {
    let mut found = BTreeMap::new();
    let mut stack = vec![common::toolkits()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(path);
            } else if entry.file_name() == "libnccl.so.2" {
                let strings = strings(&path);
                let version = (strings.iter())
                    .find_map(|s| announced_version(s))
                    .map(|v| v.split_whitespace().next().unwrap_or(v).to_owned())
                    .unwrap_or_else(|| panic!("{}: no `NCCL version` string", path.display()));
                found.entry(version).or_insert((path, strings));
            }
        }
    }
    found
}

/// The version of NCCL's announcement `NCCL version 2.27.5+cuda12.9`.
fn announced_version(text: &str) -> Option<&str> {
    text.strip_prefix("NCCL version ")
        .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()))
}

/// The runs of at least six printable ASCII characters in `path`, as `strings -n 6` lists them.
fn strings(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    bytes
        .split(|b| !(b' '..=b'~').contains(b))
        .filter(|run| run.len() >= 6)
        .map(|run| String::from_utf8_lossy(run).into_owned())
        .collect()
}

/// `format` as printf fills it: integers 0, 1, 2, ... in order, `%lx` a bus id, `%s` the word
/// `x`, `%p` a pointer, `%f` 1.5.
fn fill(format: &str) -> String {
    let mut out = String::new();
    let mut next = 0u32;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        while let Some(&c) = chars.peek() {
            chars.next();
            spec.push(c);
            if c.is_ascii_alphabetic() && !"lhzjt".contains(c) || c == '%' {
                break;
            }
        }
        match spec.chars().last() {
            Some('%') => out.push('%'),
            Some('s') => out.push('x'),
            Some('p') => out.push_str("0x1"),
            Some('f') => out.push_str("1.5"),
            Some('x') => out.push_str("1a000"),
            Some('d' | 'i' | 'u') => {
                let width: usize = (spec.trim_start_matches('0'))
                    .trim_end_matches(|c: char| c.is_ascii_alphabetic())
                    .parse()
                    .unwrap_or(0);
                let zero_padded = spec.starts_with('0');
                out.push_str(&match zero_padded {
                    true => format!("{next:0width$}"),
                    false => next.to_string(),
                });
                next += 1;
            }
            other => panic!("no filling for %{spec} ({other:?}) in {format:?}"),
        }
    }
    out
}

/// A line of NCCL's debug output, as `NCCL_DEBUG=INFO` writes `text`.
fn info(text: &str) -> String {
    format!("node1:4242:4250 [0] NCCL INFO {text}")
}

/// NCCL's ring-edge formats (`Channel %02d/%01d : %d[%d] -> %d[%d] via P2P/IPC%s%s`): each
/// parses as one edge, its transport read from NCCL's word after `via`, none unknown; P2P, SHM
/// and NET each have one. Mutation: `"SHM" => Transport::Shm` in `Transport::of` reading
/// `"SHM/"` fails it.
#[test]
fn every_ring_edge_format_of_every_fetched_nccl_parses_with_its_transport() {
    let libraries = libraries();
    assert!(!libraries.is_empty(), "no libnccl.so.2 in the fixtures");
    for (version, (path, strings)) in &libraries {
        let formats: Vec<&String> = (strings.iter())
            .filter(|s| s.starts_with("Channel %") && s.contains(" -> ") && s.contains(" via "))
            .collect();
        let mut transports = BTreeSet::new();
        for format in &formats {
            let line = fill(format);
            let seen = parse(&info(&line));
            assert_eq!(
                seen.edges.len(),
                1,
                "NCCL {version} ({}): {format:?} filled as {line:?} parsed as {:?}",
                path.display(),
                seen.edges
            );
            let edge = &seen.edges[0];
            let word = format.split(" via ").nth(1).unwrap_or_default();
            let expected = match word.split('/').next().unwrap_or_default() {
                "P2P" => Transport::P2p,
                "SHM" => Transport::Shm,
                "NET" => Transport::Net,
                other => panic!(
                    "NCCL {version}: a transport stackbench does not know: {other:?} in {format:?}"
                ),
            };
            assert_eq!(edge.transport, expected, "NCCL {version}: {format:?}");
            assert_eq!(edge.line, line);
            transports.insert(edge.transport);
        }
        assert_eq!(
            transports,
            BTreeSet::from([Transport::P2p, Transport::Shm, Transport::Net]),
            "NCCL {version} ({}): the edge formats {formats:?}",
            path.display()
        );
    }
}

/// The tuning line (`%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}`), a setting
/// taken from the environment (`%s set by environment to %s`) and the version line read as
/// NCCL writes them.
#[test]
fn the_tuning_environment_and_version_lines_of_every_fetched_nccl_parse() {
    for (version, (path, strings)) in &libraries() {
        let at = |what: &str| format!("NCCL {version} ({}): {what}", path.display());
        let tuning: Vec<&String> = strings
            .iter()
            .filter(|s| s.contains(" Bytes -> Algo "))
            .collect();
        assert!(!tuning.is_empty(), "{}", at("no tuning format"));
        for format in tuning {
            let seen = parse(&info(&fill(format)));
            assert_eq!(seen.choices.len(), 1, "{}: {format:?}", at("tuning"));
            assert_eq!(seen.choices[0].bytes, 0, "{format:?}");
        }
        let setting = (strings.iter())
            .find(|s| s.ends_with(" set by environment to %s"))
            .unwrap_or_else(|| panic!("{}", at("no setting format")));
        let filled = fill(setting);
        assert_eq!(parse(&info(&filled)).environment, [filled]);
        let announced = (strings.iter())
            .find(|s| announced_version(s).is_some())
            .expect("the version string");
        let seen = parse(&info(announced));
        assert!(
            seen.version
                .as_deref()
                .is_some_and(|v| v.starts_with(version.as_str())),
            "{}: {seen:?}",
            at("version")
        );
    }
}

/// What NCCL says of its network between nodes, as `check --nodes` reads it: the network it
/// chose (`Using network %s`), rdma-core missing (`Failed to open libibverbs.so[.1]`) and
/// GPUDirect RDMA (`NET/%s : GPU Direct RDMA %s for HCA %d '%s'`, and `GPU Direct RDMA Disabled
/// for GPU %d / HCA %lx (distance %d > %d)`, the one without `NET/` before it), from every
/// fetched NCCL's own strings; the cross-node edge formats (`... [send] via NET/%s/%d%s%s%s`)
/// give NET edges above. Mutation: `is_net` not knowing `GPU Direct RDMA` fails it.
#[test]
fn the_network_lines_of_every_fetched_nccl_parse() {
    for (version, (path, strings)) in &libraries() {
        let at = |what: &str| format!("NCCL {version} ({}): {what}", path.display());
        let find = |wanted: &dyn Fn(&str) -> bool, what: &str| {
            (strings.iter())
                .find(|s| wanted(s))
                .unwrap_or_else(|| panic!("{}", at(what)))
                .clone()
        };
        let using = find(&|s| s == "Using network %s", "no `Using network %s`");
        let seen = parse(&info(&using.replace("%s", "Socket")));
        assert_eq!(seen.network.as_deref(), Some("Socket"), "{}", at("network"));
        let verbs = find(
            &|s| s.starts_with("Failed to open libibverbs"),
            "no `Failed to open libibverbs`",
        );
        assert_eq!(parse(&info(&verbs)).net, [verbs], "{}", at("rdma-core"));
        let gdr = find(
            &|s| s.contains("GPU Direct RDMA %s for HCA"),
            "no GPU Direct RDMA format",
        );
        let line = gdr
            .replacen("%s", "IB", 1)
            .replacen("%s", "Disabled", 1)
            .replacen("%d", "0", 1)
            .replacen("%s", "mlx5_0", 1);
        assert_eq!(parse(&info(&line)).net, [line], "{}", at("GDR"));
        let distance = find(
            &|s| s.starts_with("GPU Direct RDMA Disabled for GPU"),
            "no GPU Direct RDMA distance format",
        );
        let filled = fill(&distance);
        assert_eq!(
            parse(&info(&filled)).net,
            [filled],
            "{}",
            at("GDR distance")
        );
        let sends = (strings.iter())
            .filter(|s| s.starts_with("Channel %") && s.contains("[send] via NET/"))
            .count();
        assert!(sends > 0, "{}", at("no cross-node edge format"));
    }
}

#[test]
fn printf_formats_fill_as_printf_would() {
    assert_eq!(
        fill("Channel %02d/%01d : %d[%d] -> %d[%d] via SHM/%s/%s"),
        "Channel 00/1 : 2[3] -> 4[5] via SHM/x/x"
    );
    assert_eq!(
        fill("%s: %ld Bytes -> %lx %p 100%%"),
        "x: 0 Bytes -> 1a000 0x1 100%"
    );
}
