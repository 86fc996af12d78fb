//! How a child process ended, in words every layer shares: `killed by SIGSEGV`,
//! `exited with status 3`, and the last lines it wrote before it died.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// The last three non-blank lines a worker wrote to standard error, joined: what it said before it died.
pub fn last_words(said: &str) -> String {
    let lines: Vec<&str> = said.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// How a worker ended, for people: `killed by SIGSEGV`, `exited with status 3`.
pub fn died(status: Option<ExitStatus>) -> String {
    match status {
        Some(status) => match (status.signal(), status.code()) {
            (Some(signal), _) => format!(
                "killed by {}",
                signal_name(signal)
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("signal {signal}"))
            ),
            (None, Some(code)) => format!("exited with status {code}"),
            (None, None) => "ended".to_owned(),
        },
        None => "its status could not be read".to_owned(),
    }
}

/// The name of a signal number (11 -> "SIGSEGV"), for the signals a library can die from.
pub fn signal_name(signal: i32) -> Option<&'static str> {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    };
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn deaths_read_well() {
        assert_eq!(died(Some(ExitStatus::from_raw(11))), "killed by SIGSEGV");
        assert_eq!(
            died(Some(ExitStatus::from_raw(3 << 8))),
            "exited with status 3"
        );
    }

    #[rstest]
    #[case(11, Some("SIGSEGV"))]
    #[case(6, Some("SIGABRT"))]
    #[case(9, Some("SIGKILL"))]
    #[case(7, Some("SIGBUS"))]
    #[case(0, None)]
    #[case(64, None)]
    fn signals(#[case] signal: i32, #[case] name: Option<&str>) {
        assert_eq!(signal_name(signal), name);
    }
}
