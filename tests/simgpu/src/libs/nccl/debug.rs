//! NCCL's environment and its debug output, read once per process as NCCL reads them
//! (`src/debug.cc`, `src/graph/paths.cc`, `src/misc/param.cc` of NCCL 2.28.9).
//!
//! - `NCCL_DEBUG` (case-insensitive): `VERSION`, `WARN`, `INFO`, `ABORT`, `TRACE`; INFO lines
//!   are written from `INFO` up (`ABORT` and `TRACE` included), WARN lines from `WARN` up.
//! - `NCCL_DEBUG_SUBSYS`: a comma-separated list of subsystems (`^` first: all but those);
//!   unset: `INIT,BOOTSTRAP,ENV`. A line is written when one of its subsystems is listed.
//! - `NCCL_DEBUG_FILE`: the file lines go to (`%h` the host name up to its first dot, `%p` the
//!   process id, `%%` a percent sign), created or truncated at the first line; else stdout.
//! - `NCCL_P2P_DISABLE=1`, `NCCL_SHM_DISABLE=1`, `NCCL_P2P_DIRECT_DISABLE=1`: see
//!   [`super::topology`].
//!
//! A line reads `<host>:<pid>:<tid> [<cudaDev>] NCCL INFO <text>` (the version line, at levels
//! `VERSION` and `WARN`, is its bare text); a WARN line is preceded by
//! an empty line and reads `<host>:<pid>:<tid> [<cudaDev>] <file>:<line> NCCL WARN <text>`,
//! and its text is what `ncclGetLastError` answers from then on.

use std::ffi::CString;
use std::io::Write;
use std::sync::{Mutex, OnceLock, PoisonError};

/// NCCL's subsystems (`NCCL_INIT`, ...), as bits.
pub const INIT: u64 = 0x1;
pub const P2P: u64 = 0x4;
pub const SHM: u64 = 0x8;
pub const NET: u64 = 0x10;
pub const GRAPH: u64 = 0x20;
pub const TUNING: u64 = 0x40;
pub const ENV: u64 = 0x80;
pub const BOOTSTRAP: u64 = 0x1000;
pub const ALL: u64 = !0;

/// `NCCL_DEBUG_SUBSYS`'s names and bits (those NCCL 2.28 knows).
const SUBSYSTEMS: [(&str, u64); 17] = [
    ("INIT", INIT),
    ("COLL", 0x2),
    ("P2P", P2P),
    ("SHM", SHM),
    ("NET", NET),
    ("GRAPH", GRAPH),
    ("TUNING", TUNING),
    ("ENV", ENV),
    ("ALLOC", 0x100),
    ("CALL", 0x200),
    ("PROXY", 0x400),
    ("NVLS", 0x800),
    ("BOOTSTRAP", BOOTSTRAP),
    ("REG", 0x2000),
    ("PROFILE", 0x4000),
    ("RAS", 0x8000),
    ("ALL", ALL),
];
/// The subsystems written when `NCCL_DEBUG_SUBSYS` is unset: `INIT,BOOTSTRAP,ENV`.
const DEFAULT_MASK: u64 = INIT | BOOTSTRAP | ENV;

/// `NCCL_DEBUG`'s levels, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    None,
    Version,
    Warn,
    Info,
    Abort,
    Trace,
}

/// What the environment tells NCCL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Env {
    pub level: Level,
    /// The subsystems written.
    pub mask: u64,
    /// `NCCL_DEBUG_FILE` as given (`%h` and `%p` not yet replaced).
    pub file: Option<String>,
    /// `NCCL_P2P_DISABLE`, `NCCL_SHM_DISABLE`, `NCCL_P2P_DIRECT_DISABLE` as numbers, if set.
    pub p2p_disable: Option<i64>,
    pub shm_disable: Option<i64>,
    pub p2p_direct_disable: Option<i64>,
    /// `NCCL_NET`: the one network NCCL may use between nodes (`IB`, `Socket`), if set.
    pub net: Option<String>,
}

impl Env {
    /// The environment as `lookup` gives each variable.
    pub fn parse(lookup: impl Fn(&str) -> Option<String>) -> Env {
        let level = match lookup("NCCL_DEBUG")
            .map(|l| l.to_ascii_uppercase())
            .as_deref()
        {
            Some("VERSION") => Level::Version,
            Some("WARN") => Level::Warn,
            Some("INFO") => Level::Info,
            Some("ABORT") => Level::Abort,
            Some("TRACE") => Level::Trace,
            _ => Level::None,
        };
        let mask = lookup("NCCL_DEBUG_SUBSYS").map_or(DEFAULT_MASK, |list| {
            let (invert, list) = match list.strip_prefix('^') {
                Some(rest) => (true, rest.to_owned()),
                None => (false, list),
            };
            let bits = |name: &str| {
                (SUBSYSTEMS.iter())
                    .find(|(known, _)| known.eq_ignore_ascii_case(name))
                    .map_or(0, |(_, bits)| *bits)
            };
            let listed = list.split(',').map(bits).fold(0, |mask, b| mask | b);
            if invert {
                !listed
            } else {
                listed
            }
        });
        let number = |name: &str| lookup(name).and_then(|v| parse_long(&v));
        Env {
            level,
            mask,
            file: lookup("NCCL_DEBUG_FILE").filter(|f| !f.is_empty()),
            p2p_disable: number("NCCL_P2P_DISABLE"),
            shm_disable: number("NCCL_SHM_DISABLE"),
            p2p_direct_disable: number("NCCL_P2P_DIRECT_DISABLE"),
            net: lookup("NCCL_NET").filter(|n| !n.is_empty()),
        }
    }

    /// Whether a line of `level` in `subsystems` is written.
    pub fn writes(&self, level: Level, subsystems: u64) -> bool {
        self.level >= level && subsystems & self.mask != 0
    }
}

/// A number as `strtol(str, NULL, 0)` reads it (decimal, `0x` hex, `0` octal); `None` when it
/// is not one.
fn parse_long(text: &str) -> Option<i64> {
    let text = text.trim();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let value = if let Some(hex) = digits.strip_prefix("0x").or(digits.strip_prefix("0X")) {
        i64::from_str_radix(hex, 16).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse().ok()?
    };
    Some(if negative { -value } else { value })
}

/// The process's environment, read at the first use.
pub fn env() -> &'static Env {
    static ENV_ONCE: OnceLock<Env> = OnceLock::new();
    ENV_ONCE.get_or_init(|| Env::parse(|name| std::env::var(name).ok()))
}

/// The host name up to its first dot, as NCCL's `getHostName` gives it.
pub fn hostname() -> String {
    let mut buffer = [0u8; 1024];
    // SAFETY: the buffer is writable for its length.
    let ok = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) } == 0;
    if !ok {
        return "unknown".into();
    }
    let end = buffer.iter().position(|&b| b == 0 || b == b'.');
    String::from_utf8_lossy(&buffer[..end.unwrap_or(buffer.len())]).into_owned()
}

/// `NCCL_DEBUG_FILE`'s name with `%h`, `%p` and `%%` replaced.
pub fn expand_file_name(pattern: &str, host: &str, pid: u32) -> String {
    let mut name = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            name.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => name.push('%'),
            Some('h') => name.push_str(host),
            Some('p') => name.push_str(&pid.to_string()),
            Some(other) => {
                name.push('%');
                name.push(other);
            }
            None => name.push('%'),
        }
    }
    name
}

/// Where lines go: the debug file, opened at the first line, or stdout.
static SINK: Mutex<Option<Box<dyn Write + Send>>> = Mutex::new(None);

/// The text of the last WARN, for `ncclGetLastError`.
static LAST_ERROR: Mutex<Option<CString>> = Mutex::new(None);

/// Writes one line, prefixed, if the environment asks for its level and subsystems.
fn write(level: Level, subsystems: u64, device: usize, site: &str, text: &str) {
    let env = env();
    if !env.writes(level, subsystems) {
        return;
    }
    let host = hostname();
    let pid = std::process::id();
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    let line = match level {
        Level::Version => format!("{text}\n"),
        Level::Warn => format!("\n{host}:{pid}:{tid} [{device}] {site} NCCL WARN {text}\n"),
        _ => format!("{host}:{pid}:{tid} [{device}] NCCL INFO {text}\n"),
    };
    let mut sink = SINK.lock().unwrap_or_else(PoisonError::into_inner);
    let out = sink.get_or_insert_with(|| {
        let file = (env.file.as_deref())
            .map(|pattern| expand_file_name(pattern, &host, pid))
            .and_then(|name| std::fs::File::create(name).ok());
        match file {
            Some(file) => Box::new(file),
            None => Box::new(std::io::stdout()),
        }
    });
    let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
}

/// An INFO line of `subsystems` on device `device`.
pub fn info(subsystems: u64, device: usize, text: &str) {
    write(Level::Info, subsystems, device, "", text);
}

/// A WARN line from NCCL's source `site` (`init.cc:2089`) on device `device`; its text becomes
/// the last error.
pub fn warn(site: &str, device: usize, text: &str) {
    let kept = CString::new(text.replace('\0', " ")).unwrap_or_default();
    *LAST_ERROR.lock().unwrap_or_else(PoisonError::into_inner) = Some(kept);
    write(Level::Warn, ALL, device, site, text);
}

/// The last WARN's text, NUL-terminated, kept until the next WARN.
pub fn last_error() -> *const std::ffi::c_char {
    static EMPTY: &std::ffi::CStr = c"";
    let last = LAST_ERROR.lock().unwrap_or_else(PoisonError::into_inner);
    // The string lives in the static until a later WARN replaces it, as NCCL's buffer does.
    last.as_ref().map_or(EMPTY.as_ptr(), |text| text.as_ptr())
}

/// What NCCL writes once per process at its first communicator: its version, and the
/// environment variables that change its transports.
pub fn announce(device: usize) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let env = env();
        let version = format!("NCCL version {}", super::VERSION_STRING);
        if matches!(env.level, Level::Version | Level::Warn) {
            write(Level::Version, ALL, device, "", &version);
        } else {
            info(ALL, device, &version);
        }
        if env.p2p_disable == Some(1) {
            info(ALL, device, "NCCL_P2P_DISABLE set by environment to 1");
        }
        let numbers = [
            ("NCCL_SHM_DISABLE", env.shm_disable),
            ("NCCL_P2P_DIRECT_DISABLE", env.p2p_direct_disable),
        ];
        let set = (numbers.into_iter())
            .filter_map(|(name, value)| Some((name, value?.to_string())))
            .chain(env.net.clone().map(|net| ("NCCL_NET", net)));
        for (name, value) in set {
            info(
                ENV,
                device,
                &format!("{name} set by environment to {value}."),
            );
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> Env {
        let map: HashMap<String, String> = (pairs.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Env::parse(|name| map.get(name).cloned())
    }

    #[test]
    fn levels_and_subsystems_filter_as_nccl_s_do() {
        let unset = env_of(&[]);
        assert_eq!(unset.level, Level::None);
        assert!(!unset.writes(Level::Info, INIT));
        let info = env_of(&[("NCCL_DEBUG", "info")]);
        assert!(info.writes(Level::Info, INIT) && info.writes(Level::Info, ENV));
        assert!(!info.writes(Level::Info, TUNING) && !info.writes(Level::Info, GRAPH));
        assert!(info.writes(Level::Info, ALL));
        let listed = env_of(&[
            ("NCCL_DEBUG", "INFO"),
            ("NCCL_DEBUG_SUBSYS", "INIT,graph,TUNING"),
        ]);
        assert!(listed.writes(Level::Info, TUNING) && listed.writes(Level::Info, GRAPH));
        assert!(!listed.writes(Level::Info, ENV) && listed.writes(Level::Info, INIT | SHM));
        let inverted = env_of(&[("NCCL_DEBUG", "TRACE"), ("NCCL_DEBUG_SUBSYS", "^INIT")]);
        assert!(!inverted.writes(Level::Info, INIT) && inverted.writes(Level::Info, TUNING));
        let warn = env_of(&[("NCCL_DEBUG", "WARN")]);
        assert!(warn.writes(Level::Warn, ALL) && !warn.writes(Level::Info, ALL));
    }

    #[test]
    fn numbers_read_as_strtol_and_file_names_expand() {
        let env = env_of(&[("NCCL_P2P_DISABLE", "1"), ("NCCL_SHM_DISABLE", "0x1")]);
        assert_eq!((env.p2p_disable, env.shm_disable), (Some(1), Some(1)));
        assert_eq!(env_of(&[("NCCL_P2P_DISABLE", "yes")]).p2p_disable, None);
        assert_eq!(
            expand_file_name("/d/n.%h.%p%%", "node7", 42),
            "/d/n.node7.42%"
        );
        assert_eq!(expand_file_name("a%xb%", "h", 1), "a%xb%");
    }
}
