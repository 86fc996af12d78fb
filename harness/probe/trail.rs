//! The worker's standard error, cut into one block per library: the dynamic loader's `LD_DEBUG=libs`
//! trail (`find library=...`, `search path=...`, `trying file=...`) and anything else written there.
//!
//! The worker writes a start marker before each library and an end marker after it; everything in
//! between (the loader's trail, a library's own messages) belongs to that library.

use std::collections::BTreeMap;

/// The tag that starts every marker line.
pub const MARKER: &str = "==stackbench-probe==";

/// The line written before library `index` is loaded.
pub fn start_marker(index: usize) -> String {
    format!("{MARKER} start {index}")
}

/// The line written after library `index` has been reported.
pub fn end_marker(index: usize) -> String {
    format!("{MARKER} end {index}")
}

/// The line written after library `index` is loaded, before its version APIs are called.
pub fn api_marker(index: usize) -> String {
    format!("{MARKER} api {index}")
}

/// What standard error said about one library.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Block {
    /// The loader's `LD_DEBUG` lines, without the pid prefix, blank ones dropped.
    pub trail: Vec<String>,
    /// Where in `trail` the version API calls began (the `dlopen` had returned).
    pub api_from: Option<usize>,
    /// Every other non-blank line (a library's own messages).
    pub messages: Vec<String>,
}

/// An object the trail shows being initialised: its path as the loader opened it, whether that
/// happened during the API calls, and whether the trail later shows it finalised (unloaded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Initialised {
    pub path: String,
    pub during_api: bool,
    pub finalised: bool,
}

impl Block {
    /// Every `calling init: PATH` in the trail, in order: objects with constructors that were
    /// mapped, including any that were unmapped again before the worker could look.
    pub fn initialised(&self) -> Vec<Initialised> {
        let mut out: Vec<Initialised> = Vec::new();
        for (at, line) in self.trail.iter().enumerate() {
            if let Some(path) = line.strip_prefix("calling init: ") {
                out.push(Initialised {
                    path: path.to_owned(),
                    during_api: self.api_from.is_some_and(|from| at >= from),
                    finalised: false,
                });
            } else if let Some(rest) = line.strip_prefix("calling fini: ") {
                // `calling fini: PATH [NAMESPACE]`
                let path = rest.rsplit_once(" [").map_or(rest, |(path, _)| path);
                if let Some(object) = out.iter_mut().rev().find(|o| o.path == path) {
                    object.finalised = true;
                }
            }
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Start(usize),
    Api(usize),
    End(usize),
}

/// A marker anywhere in `line` (a library may have left a partial line before it).
fn marker(line: &str) -> Option<Marker> {
    let at = line.find(MARKER)?;
    let mut words = line[at + MARKER.len()..].split_whitespace();
    let kind = words.next()?;
    let index = words.next()?.parse().ok()?;
    match kind {
        "start" => Some(Marker::Start(index)),
        "api" => Some(Marker::Api(index)),
        "end" => Some(Marker::End(index)),
        _ => None,
    }
}

/// The text of an `LD_DEBUG` line after its `     12345:` pid prefix, or `None` if the line has none.
pub fn strip_pid(line: &str) -> Option<&str> {
    let rest = line.trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    rest[digits..].strip_prefix(':')
}

/// Cuts `stderr` into blocks by library index. Lines before the first marker, between an end marker
/// and the next start, or after an end are the worker's own and belong to no library. A start with
/// no end (the library crashed or hung) runs to the end of the text.
pub fn split(stderr: &str) -> BTreeMap<usize, Block> {
    let mut blocks: BTreeMap<usize, Block> = BTreeMap::new();
    let mut current: Option<usize> = None;
    for line in stderr.lines() {
        match marker(line) {
            Some(Marker::Start(index)) => {
                blocks.entry(index).or_default();
                current = Some(index);
                continue;
            }
            Some(Marker::Api(index)) => {
                if let Some(block) = blocks.get_mut(&index).filter(|_| current == Some(index)) {
                    block.api_from = Some(block.trail.len());
                }
                continue;
            }
            Some(Marker::End(_)) => {
                current = None;
                continue;
            }
            None => {}
        }
        let Some(block) = current.and_then(|index| blocks.get_mut(&index)) else {
            continue;
        };
        match strip_pid(line) {
            Some(text) => {
                let text = text.trim();
                if !text.is_empty() {
                    block.trail.push(text.to_owned());
                }
            }
            None => {
                let text = line.trim_end();
                if !text.trim().is_empty() {
                    block.messages.push(text.to_owned());
                }
            }
        }
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(
        "     12345:\tfind library=libc.so.6 [0]; searching",
        Some("\tfind library=libc.so.6 [0]; searching")
    )]
    #[case("12:x", Some("x"))]
    #[case("   7:", Some(""))]
    #[case("hello: world", None)]
    #[case("12345 no colon", None)]
    #[case("", None)]
    fn pid_prefixes(#[case] line: &str, #[case] want: Option<&str>) {
        assert_eq!(strip_pid(line), want);
    }

    #[rstest]
    #[case("==stackbench-probe== start 3", Some(Marker::Start(3)))]
    #[case("==stackbench-probe== end 12", Some(Marker::End(12)))]
    #[case("partial line==stackbench-probe== start 0", Some(Marker::Start(0)))]
    #[case("==stackbench-probe== middle 1", None)]
    #[case("==stackbench-probe== start x", None)]
    #[case("start 3", None)]
    fn markers(#[case] line: &str, #[case] want: Option<Marker>) {
        assert_eq!(marker(line), want);
    }

    #[test]
    fn markers_round_trip() {
        assert_eq!(marker(&start_marker(7)), Some(Marker::Start(7)));
        assert_eq!(marker(&api_marker(7)), Some(Marker::Api(7)));
        assert_eq!(marker(&end_marker(7)), Some(Marker::End(7)));
    }

    const TRAIL: &str = "\
     100:\tfind library=libc.so.6 [0]; searching
     100:\t
==stackbench-probe== start 0
     100:\t
     100:\tfile=/x/libcudnn_ops_infer.so.8 [0];  dynamically loaded by ./stackbench [0]
     100:\tfind library=libcublasLt.so.11 [0]; searching
     100:\t search path=/x/lib:/y\t\t(RUNPATH from file /x/libcudnn_ops_infer.so.8)
     100:\t  trying file=/x/lib/libcublasLt.so.11
cuDNN says hello
     100:\t
==stackbench-probe== api 0
     100:\tcalling init: /d/libcuda.so.1
     100:\t
     100:\tcalling fini: /d/libcuda.so.1 [0]
==stackbench-probe== end 0
     100:\tcalling fini: between libraries
==stackbench-probe== start 1
     100:\tcalling init: /z/libcrash.so
     101:\tthread line
";

    #[test]
    fn splits_by_marker() {
        let blocks = split(TRAIL);
        assert_eq!(blocks.len(), 2);
        assert_eq!(
            blocks[&0].trail,
            [
                "file=/x/libcudnn_ops_infer.so.8 [0];  dynamically loaded by ./stackbench [0]",
                "find library=libcublasLt.so.11 [0]; searching",
                "search path=/x/lib:/y\t\t(RUNPATH from file /x/libcudnn_ops_infer.so.8)",
                "trying file=/x/lib/libcublasLt.so.11",
                "calling init: /d/libcuda.so.1",
                "calling fini: /d/libcuda.so.1 [0]",
            ]
        );
        assert_eq!(blocks[&0].api_from, Some(4));
        assert_eq!(blocks[&0].messages, ["cuDNN says hello"]);
        assert_eq!(
            blocks[&0].initialised(),
            [Initialised {
                path: "/d/libcuda.so.1".into(),
                during_api: true,
                finalised: true
            }]
        );
        assert_eq!(blocks[&1].api_from, None);
        assert_eq!(
            blocks[&1].initialised(),
            [Initialised {
                path: "/z/libcrash.so".into(),
                during_api: false,
                finalised: false
            }]
        );
        // No end marker: the block runs to the end (the library crashed or hung).
        assert_eq!(
            blocks[&1].trail,
            ["calling init: /z/libcrash.so", "thread line"]
        );
        assert!(blocks[&1].messages.is_empty());
    }

    #[rstest]
    #[case("")]
    #[case("     100:\tfind library=libc.so.6 [0]; searching\n")]
    #[case("==stackbench-probe== end 0\n     100:\tx\n")]
    fn nothing_outside_markers(#[case] text: &str) {
        assert!(split(text).is_empty());
    }

    #[test]
    fn empty_block_is_present() {
        let blocks = split("==stackbench-probe== start 4\n==stackbench-probe== end 4\n");
        assert_eq!(blocks.get(&4), Some(&Block::default()));
    }

    proptest::proptest! {
        #[test]
        fn any_stderr_splits_without_panicking(stderr in "(\\PC{0,40}\n){0,20}") {
            let _ = split(&stderr);
        }
    }
}
