//! The layers of doc/architecture.md, checked on the sources: every module of `harness/` sits in
//! one layer of [`LAYERS`] (top first), and an import may only point down the layers, or stay in
//! its own. Every `crate::` path counts (in `use`, inline, or in a string such as a serde
//! attribute's), and every `super::` path, resolved; comments and `#[cfg(test)] mod tests { .. }`
//! blocks do not.
//!
//! A failure lists one line per import: `file:line: from-layer -> to-layer (crate::path)`. Move
//! the definition down to a layer the file may reach, or the file up; a module in no layer is
//! added to [`LAYERS`], where doc/architecture.md says it belongs.

// The test reads the checkout's own sources, not host files.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

/// The layers, from the top down: a name, and the module prefixes it holds. A module belongs to
/// the layer of its longest matching prefix (`check` holds `check::worker::nccl`).
const LAYERS: &[(&str, &[&str])] = &[
    ("entry", &["main", "lib", "init", "app"]),
    ("cli", &["cli", "options"]),
    ("report", &["report", "progress"]),
    ("fleet", &["merge", "baseline", "fleet"]),
    ("history", &["history"]),
    ("store", &["store"]),
    ("compare", &["compare", "roofline"]),
    ("bench", &["bench"]),
    ("check", &["check"]),
    ("node", &["node", "cluster", "nccl"]),
    ("schema", &["schema"]),
    ("findings", &["doctor", "diagnose"]),
    ("build", &["command", "toolchain"]),
    (
        "host",
        &[
            "scan",
            "discover",
            "resolve",
            "elf",
            "pe",
            "probe",
            "devices",
            "gpu",
            "model",
            "version",
            "compat",
            "catalog",
            "symlink",
            "machine",
            "search_path",
            "kernels",
            "tolerance",
            "e4m3",
        ],
    ),
    (
        "process",
        &["exit", "process", "contain", "lifetime", "trust"],
    ),
    (
        "ground",
        &[
            "hostfs",
            "output",
            "timestamp",
            "run_id",
            "error",
            "figures",
            "tags",
            "pathname",
        ],
    ),
];

/// One path a file names in another module: `segments` is the path below the crate root
/// (`["check", "model", "Status"]`), `line` 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reference {
    line: usize,
    segments: Vec<String>,
}

impl Reference {
    fn display(&self) -> String {
        format!("crate::{}", self.segments.join("::"))
    }
}

/// The index in [`LAYERS`] of the layer holding `segments`, by the longest prefix matching on
/// `::` boundaries; `None` when no prefix matches.
fn layer_of(segments: &[String]) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (index, (_, prefixes)) in LAYERS.iter().enumerate() {
        for prefix in prefixes.iter() {
            let parts: Vec<&str> = prefix.split("::").collect();
            let matches = parts.len() <= segments.len()
                && parts.iter().zip(segments).all(|(p, s)| *p == s.as_str());
            if matches && best.is_none_or(|(length, _)| parts.len() > length) {
                best = Some((parts.len(), index));
            }
        }
    }
    best.map(|(_, index)| index)
}

/// A source file's module, from its path below `harness/`: `check/worker/nvml/mod.rs` is
/// `["check", "worker", "nvml"]`, `app.rs` is `["app"]`, `lib.rs` and `main.rs` are the crate
/// root (`[]`).
fn module_of(relative: &Path) -> Vec<String> {
    let mut segments: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let file = segments.pop().unwrap_or_default();
    let stem = file.strip_suffix(".rs").unwrap_or(&file).to_string();
    let at_root = segments.is_empty() && (stem == "lib" || stem == "main");
    if stem != "mod" && !at_root {
        segments.push(stem);
    }
    segments
}

/// The module a file is layered by: its module, or `lib` / `main` for the crate roots.
fn layer_key(relative: &Path) -> Vec<String> {
    let module = module_of(relative);
    if module.is_empty() {
        let stem = relative.file_stem().unwrap_or_default().to_string_lossy();
        vec![stem.into_owned()]
    } else {
        module
    }
}

fn is_ident(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Two views of `source`, each byte for byte as long as it, newlines kept: `code` has every
/// comment (`//`, `///`, `//!`, `/* */`) blanked, and `bare` also has the contents of string and
/// char literals blanked, for counting braces.
fn strip_comments(source: &str) -> (String, String) {
    let chars: Vec<char> = source.chars().collect();
    let mut code = String::with_capacity(source.len());
    let mut bare = String::with_capacity(source.len());
    let blank = |out: &mut String, c: char| {
        if c == '\n' {
            out.push('\n');
        } else {
            out.extend(std::iter::repeat_n(' ', c.len_utf8()));
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let ident_at = |k: usize| chars[k].is_alphanumeric() || chars[k] == '_';
        // `r` opens a raw string where it starts a token, or follows a `b` that does.
        let token_start =
            i == 0 || !ident_at(i - 1) || (chars[i - 1] == 'b' && (i == 1 || !ident_at(i - 2)));
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                blank(&mut code, chars[i]);
                blank(&mut bare, chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                }
                let opens = chars[i] == '/' && chars.get(i + 1) == Some(&'*');
                let closes = chars[i] == '*' && chars.get(i + 1) == Some(&'/');
                let closing = closes && depth == 0;
                let steps = if opens || closes { 2 } else { 1 };
                for &ch in &chars[i..(i + steps).min(chars.len())] {
                    blank(&mut code, ch);
                    blank(&mut bare, ch);
                }
                i += steps;
                if closing {
                    break;
                }
            }
        } else if c == 'r'
            && token_start
            && matches!(next, Some('"') | Some('#'))
            && raw_string_hashes(&chars, i + 1).is_some()
        {
            // A raw string: r"..", r#".."#, br#".."#.
            let hashes = raw_string_hashes(&chars, i + 1).unwrap_or(0);
            let open = i + 1 + hashes + 1;
            for &ch in &chars[i..open] {
                code.push(ch);
                bare.push(ch);
            }
            i = open;
            while i < chars.len() {
                let closes =
                    chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#'));
                if closes {
                    for &ch in &chars[i..i + 1 + hashes] {
                        code.push(ch);
                        bare.push(ch);
                    }
                    i += 1 + hashes;
                    break;
                }
                code.push(chars[i]);
                blank(&mut bare, chars[i]);
                i += 1;
            }
        } else if c == '"' {
            code.push(c);
            bare.push(c);
            i += 1;
            while i < chars.len() {
                let ch = chars[i];
                if ch == '\\' && i + 1 < chars.len() {
                    code.push(ch);
                    code.push(chars[i + 1]);
                    blank(&mut bare, ch);
                    blank(&mut bare, chars[i + 1]);
                    i += 2;
                    continue;
                }
                code.push(ch);
                if ch == '"' {
                    bare.push(ch);
                    i += 1;
                    break;
                }
                blank(&mut bare, ch);
                i += 1;
            }
        } else if c == '\'' && char_literal_end(&chars, i).is_some() {
            let end = char_literal_end(&chars, i).unwrap_or(i);
            for (k, &ch) in chars.iter().enumerate().take(end + 1).skip(i) {
                code.push(ch);
                if k == i || k == end {
                    bare.push(ch);
                } else {
                    blank(&mut bare, ch);
                }
            }
            i = end + 1;
        } else {
            code.push(c);
            bare.push(c);
            i += 1;
        }
    }
    (code, bare)
}

/// After the `r` of a raw string at `start`: the number of `#` before its opening `"`.
fn raw_string_hashes(chars: &[char], start: usize) -> Option<usize> {
    let hashes = chars[start..].iter().take_while(|&&c| c == '#').count();
    (chars.get(start + hashes) == Some(&'"')).then_some(hashes)
}

/// The index of the closing `'` of a char literal opening at `start`, or `None` for a lifetime
/// or a label (`'a`, `'outer:`).
fn char_literal_end(chars: &[char], start: usize) -> Option<usize> {
    match chars.get(start + 1)? {
        '\\' => (start + 3..chars.len().min(start + 12)).find(|&k| chars[k] == '\''),
        _ => (chars.get(start + 2) == Some(&'\'')).then_some(start + 2),
    }
}

/// Blanks, in both views, every `#[cfg(test)]` followed (after any other attributes) by a
/// `mod name {` line, down to the brace that closes it.
fn skip_test_modules(code: &str, bare: &str) -> (String, String) {
    let code_lines: Vec<&str> = code.split('\n').collect();
    let bare_lines: Vec<&str> = bare.split('\n').collect();
    let mut skipped = vec![false; code_lines.len()];
    let mut i = 0;
    while i < code_lines.len() {
        if code_lines[i].trim() != "#[cfg(test)]" {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < code_lines.len() && code_lines[j].trim().starts_with("#[") {
            j += 1;
        }
        let Some(line) = code_lines.get(j).map(|l| l.trim()) else {
            break;
        };
        let item = strip_visibility(line);
        if !(item.starts_with("mod ") && item.ends_with('{')) {
            i += 1;
            continue;
        }
        let mut depth: i64 = 0;
        let mut end = j;
        for (k, line) in bare_lines.iter().enumerate().skip(j) {
            depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
            end = k;
            if depth <= 0 {
                break;
            }
        }
        skipped[i..=end].iter_mut().for_each(|s| *s = true);
        i = end + 1;
    }
    let blank = |lines: &[&str]| {
        lines
            .iter()
            .zip(&skipped)
            .map(|(line, &skip)| {
                if skip {
                    " ".repeat(line.len())
                } else {
                    line.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    (blank(&code_lines), blank(&bare_lines))
}

/// `mod x {` from `pub mod x {`, `pub(crate) mod x {`, `mod x {`.
fn strip_visibility(item: &str) -> &str {
    let Some(rest) = item.strip_prefix("pub") else {
        return item;
    };
    let rest = match rest.strip_prefix('(') {
        Some(inner) => inner.split_once(')').map_or("", |(_, after)| after),
        None => rest,
    };
    rest.trim_start()
}

/// The inline modules (`mod name { .. }`) of a file: the byte span of each body, and its name.
fn inline_modules(bare: &str) -> Vec<(usize, usize, String)> {
    let bytes = bare.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while let Some(found) = bare[i..].find("mod") {
        let at = i + found;
        i = at + 3;
        if at > 0 && is_ident(bytes[at - 1]) {
            continue;
        }
        let mut j = at + 3;
        if j >= bytes.len() || !bytes[j].is_ascii_whitespace() {
            continue;
        }
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        let name_start = j;
        while j < bytes.len() && is_ident(bytes[j]) {
            j += 1;
        }
        let name = &bare[name_start..j];
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if name.is_empty() || bytes.get(j) != Some(&b'{') {
            continue;
        }
        let mut depth = 0;
        let mut end = bytes.len();
        for (k, &b) in bytes.iter().enumerate().skip(j) {
            match b {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                end = k;
                break;
            }
        }
        spans.push((j, end, name.to_string()));
    }
    spans
}

/// Skips spaces, tabs and newlines from `i`.
fn skip_space(code: &[u8], mut i: usize) -> usize {
    while i < code.len() && code[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Reads the identifier at `i`: it and the index after it.
fn ident_at(code: &[u8], i: usize) -> (&str, usize) {
    let mut j = i;
    while j < code.len() && is_ident(code[j]) {
        j += 1;
    }
    (std::str::from_utf8(&code[i..j]).unwrap_or(""), j)
}

/// Reads a path or use tree at `i`, below `prefix` (which its text has already named): a path
/// `a::b::C`, a glob `*`, `self`, or braces `{a::B, c::{d, e}}` (any depth, over lines).
/// Pushes each leaf, with the byte offset where its path began, to `out`; returns the index
/// after the tree.
fn parse_tree(
    code: &[u8],
    mut i: usize,
    mut prefix: Vec<String>,
    start: usize,
    out: &mut Vec<(usize, Vec<String>)>,
) -> usize {
    loop {
        match code.get(i) {
            Some(b'{') => {
                i += 1;
                loop {
                    i = skip_space(code, i);
                    match code.get(i) {
                        None => return i,
                        Some(b'}') => return i + 1,
                        Some(b',') => {
                            i += 1;
                            continue;
                        }
                        _ => {}
                    }
                    let before = i;
                    i = parse_tree(code, i, prefix.clone(), i, out);
                    i = skip_space(code, i);
                    if ident_at(code, i).0 == "as" {
                        let after_as = skip_space(code, i + 2);
                        i = skip_space(code, ident_at(code, after_as).1);
                    }
                    if i == before && !matches!(code.get(i), Some(b',') | Some(b'}')) {
                        return i; // not a use tree: stop rather than loop
                    }
                }
            }
            Some(b'*') => {
                prefix.push("*".to_string());
                out.push((start, prefix));
                return i + 1;
            }
            _ => {
                let (word, after) = ident_at(code, i);
                if word.is_empty() {
                    if !prefix.is_empty() {
                        out.push((start, prefix));
                    }
                    return i;
                }
                if word == "self" {
                    out.push((start, prefix));
                    return after;
                }
                prefix.push(word.to_string());
                if code[after..].starts_with(b"::") && code.get(after + 2) != Some(&b'<') {
                    i = after + 2;
                    continue;
                }
                out.push((start, prefix));
                return after;
            }
        }
    }
}

/// Every path `source` names in the crate: `crate::..` anywhere in its code (strings included),
/// and `super::..` resolved from `module` (the file's module; `[]` for a crate root). Comments
/// and `#[cfg(test)] mod .. { }` blocks are not read.
fn references(module: &[String], source: &str) -> Vec<Reference> {
    let (code, bare) = strip_comments(source);
    let (code, bare) = skip_test_modules(&code, &bare);
    let inline = inline_modules(&bare);
    let bytes = code.as_bytes();
    let line_of = |at: usize| bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let boundary = i == 0 || !is_ident(bytes[i - 1]);
        let rest = &bytes[i..];
        if boundary && rest.starts_with(b"crate::") {
            let mut leaves = Vec::new();
            i = parse_tree(bytes, i + 7, Vec::new(), i, &mut leaves);
            found.extend(leaves);
        } else if boundary && rest.starts_with(b"super::") {
            let start = i;
            let mut ups = 0;
            while bytes[i..].starts_with(b"super::") {
                ups += 1;
                i += 7;
            }
            let mut base: Vec<String> = module.to_vec();
            let mut enclosing: Vec<&(usize, usize, String)> = inline
                .iter()
                .filter(|(s, e, _)| *s < start && start < *e)
                .collect();
            enclosing.sort_by_key(|(s, _, _)| *s);
            base.extend(enclosing.iter().map(|(_, _, name)| name.clone()));
            if ups <= base.len() {
                base.truncate(base.len() - ups);
                let mut leaves = Vec::new();
                i = parse_tree(bytes, i, base, start, &mut leaves);
                found.extend(leaves);
            }
        } else {
            i += 1;
        }
    }
    found
        .into_iter()
        .map(|(at, segments)| Reference {
            line: line_of(at),
            segments,
        })
        .collect()
}

/// Every `*.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
        .map(|entry| entry.expect("reading a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

fn harness() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("harness")
}

#[test]
fn imports_point_down_the_layers() {
    let root = harness();
    let files = rust_files(&root);
    assert!(!files.is_empty(), "no .rs file under {}", root.display());
    let mut failures: Vec<(String, usize, String)> = Vec::new();
    let mut seen = 0;
    for file in &files {
        let relative = file.strip_prefix(&root).expect("a file under harness/");
        let shown = format!(
            "harness/{}",
            relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/")
        );
        let key = layer_key(relative);
        let Some(from) = layer_of(&key) else {
            failures.push((
                shown.clone(),
                0,
                format!(
                    "{shown}: module `{}` is in no layer of LAYERS: add `{}` to the table",
                    key.join("::"),
                    key[0]
                ),
            ));
            continue;
        };
        let source = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        for reference in references(&module_of(relative), &source) {
            seen += 1;
            let line = reference.line;
            let Some(to) = layer_of(&reference.segments) else {
                let first = reference.segments.first().cloned().unwrap_or_default();
                failures.push((
                    shown.clone(),
                    line,
                    format!(
                        "{shown}:{line}: `{}` is in no layer of LAYERS: add `{first}` to the table",
                        reference.display()
                    ),
                ));
                continue;
            };
            if to < from {
                failures.push((
                    shown.clone(),
                    line,
                    format!(
                        "{shown}:{line}: {} -> {} ({}): an import may only point down the layers \
                         of doc/architecture.md; move the definition down, or the file up",
                        LAYERS[from].0,
                        LAYERS[to].0,
                        reference.display()
                    ),
                ));
            }
        }
    }
    assert!(
        seen > 0,
        "no crate:: or super:: path found under harness/: the scanner is broken"
    );
    failures.sort();
    failures.dedup();
    if !failures.is_empty() {
        let lines: Vec<&str> = failures
            .iter()
            .map(|(_, _, message)| message.as_str())
            .collect();
        panic!(
            "{} import(s) break the layers:\n{}",
            failures.len(),
            lines.join("\n")
        );
    }
}

#[test]
fn every_module_of_lib_is_in_one_layer() {
    let mut problems = Vec::new();
    let mut prefixes: Vec<&str> = LAYERS.iter().flat_map(|(_, p)| p.iter().copied()).collect();
    prefixes.sort_unstable();
    for pair in prefixes.windows(2) {
        if pair[0] == pair[1] {
            problems.push(format!("`{}` is in LAYERS twice", pair[0]));
        }
    }
    let lib = harness().join("lib.rs");
    let source =
        std::fs::read_to_string(&lib).unwrap_or_else(|e| panic!("reading {}: {e}", lib.display()));
    let (code, _) = strip_comments(&source);
    let modules: Vec<&str> = code
        .lines()
        .filter_map(|line| strip_visibility(line.trim()).strip_prefix("mod "))
        .filter_map(|rest| rest.trim().strip_suffix(';'))
        .map(str::trim)
        .collect();
    assert!(
        !modules.is_empty(),
        "no `mod x;` line found in {}",
        lib.display()
    );
    for module in modules {
        if !prefixes.contains(&module) {
            problems.push(format!(
                "harness/lib.rs: module `{module}` is in no layer of LAYERS: add `{module}` to the table"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "LAYERS is wrong:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_scanner_reads_paths_as_rustc_does() {
    let module = |path: &str| module_of(Path::new(path));
    let paths = |module: &[String], source: &str| -> Vec<(usize, String)> {
        references(module, source)
            .iter()
            .map(|r| (r.line, r.display()))
            .collect()
    };
    let owned = |list: &[(usize, &str)]| -> Vec<(usize, String)> {
        list.iter().map(|(l, p)| (*l, p.to_string())).collect()
    };

    // Modules of files.
    assert_eq!(
        module("check/worker/nvml/mod.rs"),
        ["check", "worker", "nvml"]
    );
    assert_eq!(module("check/model.rs"), ["check", "model"]);
    assert_eq!(module("app.rs"), ["app"]);
    assert!(module("lib.rs").is_empty());
    assert_eq!(layer_key(Path::new("lib.rs")), ["lib"]);
    assert_eq!(layer_key(Path::new("main.rs")), ["main"]);

    // Layers: the longest prefix, on `::` boundaries.
    let segments = |p: &str| p.split("::").map(String::from).collect::<Vec<_>>();
    assert_eq!(
        layer_of(&segments("check::worker::nccl")).map(|i| LAYERS[i].0),
        Some("check")
    );
    assert_eq!(
        layer_of(&segments("nccl::api")).map(|i| LAYERS[i].0),
        Some("node")
    );
    assert_eq!(layer_of(&segments("checkpoint")), None);

    // Nested braces, over lines.
    let source =
        "use crate::{a::B, c::{d, e as f}};\nuse crate::{\n    g::{self, H},\n    i::*,\n};\n";
    assert_eq!(
        paths(&[], source),
        owned(&[
            (1, "crate::a::B"),
            (1, "crate::c::d"),
            (1, "crate::c::e"),
            (3, "crate::g"),
            (3, "crate::g::H"),
            (4, "crate::i::*"),
        ])
    );

    // Inline paths, `$crate`, and visibility that is no path.
    let source = "pub(crate) fn f() { crate::a::b::c(); $crate::d::E; }\npub(super) struct S;";
    assert_eq!(
        paths(&[], source),
        owned(&[(1, "crate::a::b::c"), (1, "crate::d::E")])
    );

    // super:: from mod.rs (module `top::foo`: super is `top`) and from a plain file (module
    // `top::foo::bar`: super is `top::foo`).
    let source = "use super::x::Y;\nfn f() { super::super::z(); }\nuse super::{p, q::R};";
    assert_eq!(
        paths(&module("top/foo/mod.rs"), source),
        owned(&[
            (1, "crate::top::x::Y"),
            (2, "crate::z"),
            (3, "crate::top::p"),
            (3, "crate::top::q::R")
        ])
    );
    assert_eq!(
        paths(&module("top/foo/bar.rs"), source),
        owned(&[
            (1, "crate::top::foo::x::Y"),
            (2, "crate::top::z"),
            (3, "crate::top::foo::p"),
            (3, "crate::top::foo::q::R")
        ])
    );
    // super:: inside an inline module names the file's own module.
    let source = "mod inner {\n    use super::helper;\n}\n";
    assert_eq!(
        paths(&module("top/foo/bar.rs"), source),
        owned(&[(2, "crate::top::foo::bar::helper")])
    );

    // Comments do not count; strings with `//` in them do not start one.
    let source = "//! crate::a::A\n/// See [`crate::b::B`].\n// use crate::c::C;\n/* crate::d::D /* nested */ crate::e */\nlet s = \"http://x\"; use crate::f::F; // crate::g\n";
    assert_eq!(paths(&[], source), owned(&[(5, "crate::f::F")]));

    // A path in an attribute's string.
    let source = "#[derive(Serialize)]\nstruct S {\n    #[serde(skip_serializing_if = \"crate::x::y\")]\n    a: u8,\n}\n";
    assert_eq!(paths(&[], source), owned(&[(3, "crate::x::y")]));

    // `#[cfg(test)] mod tests { .. }` is skipped, braces in literals or not; code after it is read.
    let source = "use crate::a::A;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::up::Up;\n    fn f() { let c = '{'; let s = \"}}\"; }\n}\nuse crate::b::B;\n#[cfg(test)]\nmod fixtures;\n";
    assert_eq!(
        paths(&module("m.rs"), source),
        owned(&[(1, "crate::a::A"), (8, "crate::b::B")])
    );

    // Raw strings and lifetimes leave the views aligned.
    let source = "fn f<'a>(x: &'a str) -> &'a str { let r = r#\"a \"quoted\" // no\"#; x }\nuse crate::z::Z;";
    assert_eq!(paths(&[], source), owned(&[(2, "crate::z::Z")]));
}
