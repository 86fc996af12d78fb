//! The host compilers a toolkit's nvcc accepts, read from the toolkit's own
//! `crt/host_config.h` (CUDA 13.0: `#if __GNUC__ > 15` ... `#error -- unsupported GNU version!`),
//! never from a table of ours.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What one `host_config.h` allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostLimits {
    /// The file the limits were read from.
    #[serde(with = "crate::pathname")]
    pub source: PathBuf,
    /// The newest GCC major nvcc accepts (`__GNUC__ > 15`: 15).
    pub gnu_max: Option<u32>,
    /// The oldest GCC major it accepts, where the file says (`__GNUC__ < 6`: 6).
    pub gnu_min: Option<u32>,
    /// The newest clang major it accepts (`__clang_major__ >= 21`: 20).
    pub clang_max: Option<u32>,
}

/// A host compiler family, as nvcc tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompilerKind {
    Gnu,
    Clang,
}

impl HostLimits {
    /// Reads the limits from the text of `host_config.h`: the `#if` lines that guard an
    /// `unsupported ... version` error for GCC and for the host clang (not Grace's, ICX's or
    /// other vendors' compilers, which have lines of their own).
    pub fn parse(source: PathBuf, text: &str) -> HostLimits {
        let mut limits = HostLimits {
            source,
            gnu_max: None,
            gnu_min: None,
            clang_max: None,
        };
        let conditions = text
            .lines()
            .map(str::trim)
            .filter(|l| {
                l.starts_with("#if") && !l.starts_with("#ifdef") && !l.starts_with("#ifndef")
            })
            .filter(|l| !OTHER_COMPILERS.iter().any(|m| l.contains(m)));
        for line in conditions {
            for (op, n) in comparisons(line, "__GNUC__") {
                match op {
                    ">" if limits.gnu_max.is_none() => limits.gnu_max = Some(n),
                    ">=" if limits.gnu_max.is_none() => limits.gnu_max = n.checked_sub(1),
                    "<" if limits.gnu_min.is_none() => limits.gnu_min = Some(n),
                    _ => {}
                }
            }
            for (op, n) in comparisons(line, "__clang_major__") {
                match op {
                    ">=" if limits.clang_max.is_none() => limits.clang_max = n.checked_sub(1),
                    ">" if limits.clang_max.is_none() => limits.clang_max = Some(n),
                    _ => {}
                }
            }
        }
        limits
    }

    /// Why nvcc refuses a `kind` compiler of major version `major`, or `None` when it takes it.
    pub fn refuses(&self, kind: CompilerKind, major: u32) -> Option<String> {
        let source = self.source.display();
        match kind {
            CompilerKind::Gnu => match (self.gnu_max, self.gnu_min) {
                (Some(max), _) if major > max => Some(format!(
                    "gcc {major} is newer than {max}, the newest {source} accepts"
                )),
                (_, Some(min)) if major < min => Some(format!(
                    "gcc {major} is older than {min}, the oldest {source} accepts"
                )),
                _ => None,
            },
            CompilerKind::Clang => match self.clang_max {
                Some(max) if major > max => Some(format!(
                    "clang {major} is newer than {max}, the newest {source} accepts"
                )),
                _ => None,
            },
        }
    }

    /// The limits in words: `gcc <= 15, clang <= 20`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        match (self.gnu_min, self.gnu_max) {
            (Some(min), Some(max)) => parts.push(format!("gcc {min} to {max}")),
            (None, Some(max)) => parts.push(format!("gcc <= {max}")),
            _ => {}
        }
        if let Some(max) = self.clang_max {
            parts.push(format!("clang <= {max}"));
        }
        match parts.is_empty() {
            true => "no limits found".into(),
            false => parts.join(", "),
        }
    }
}

/// Markers of the `#if` lines for compilers other than GCC and the host clang.
const OTHER_COMPILERS: [&str; 8] = [
    "__GRCO_CLANG_COMPILER__",
    "__ICC",
    "__INTEL",
    "__ibmxl",
    "__xlC__",
    "_MSC_VER",
    "__PGI",
    "__NVCOMPILER",
];

/// Each `NAME op NUMBER` in `line`.
fn comparisons<'a>(line: &'a str, name: &'a str) -> impl Iterator<Item = (&'a str, u32)> + 'a {
    line.match_indices(name).filter_map(move |(at, _)| {
        let rest = line[at + name.len()..].trim_start();
        let op = [">=", "<=", ">", "<", "=="]
            .into_iter()
            .find(|op| rest.starts_with(op))?;
        let digits: String = rest[op.len()..]
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        Some((op, digits.parse().ok()?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of CUDA 13.0's `crt/host_config.h` (nvidia-cuda-crt 13.0.88) that matter, with
    /// Grace's clang between them.
    const CUDA_13_0: &str = "
#if (__GRCO_CLANG_COMPILER__ == 1) && ((__clang_major__ < 16) || (__clang_major__ > 20))
#error -- unsupported Grace clang version!
#endif
#if defined(__GNUC__)
#if __GNUC__ > 15
#error -- unsupported GNU version! gcc versions later than 15 are not supported!
#endif /* __GNUC__ > 15 */
#if (__clang_major__ >= 21) || (__clang_major__ < 3) || ((__clang_major__ == 3) &&  (__clang_minor__ < 3))
#error -- unsupported clang version! clang version must be less than 21 and greater than 3.2 .
#endif
#if _MSC_VER < 1920 || _MSC_VER >= 1950
";

    #[test]
    fn cuda_13_takes_gcc_15_and_clang_20_and_not_one_more() {
        let limits = HostLimits::parse("host_config.h".into(), CUDA_13_0);
        assert_eq!(
            (limits.gnu_max, limits.gnu_min, limits.clang_max),
            (Some(15), None, Some(20))
        );
        assert_eq!(limits.refuses(CompilerKind::Gnu, 15), None);
        assert!(limits.refuses(CompilerKind::Gnu, 16).is_some());
        assert_eq!(limits.refuses(CompilerKind::Clang, 20), None);
        assert!(limits.refuses(CompilerKind::Clang, 21).is_some());
        assert_eq!(limits.describe(), "gcc <= 15, clang <= 20");
    }

    #[test]
    fn a_file_without_limits_refuses_nothing() {
        let limits = HostLimits::parse("x".into(), "#if defined(__GNUC__)\n#endif\n");
        assert_eq!(limits.refuses(CompilerKind::Gnu, 99), None);
        assert_eq!(limits.describe(), "no limits found");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in "(#if .{0,40}\n){0,8}") {
            let limits = HostLimits::parse("x".into(), &text);
            let _ = limits.refuses(CompilerKind::Clang, 0);
        }
    }
}
