//! Who a worker runs as: this process's own user, or (when stackbench runs as root) the owner of
//! the files it loads, with that user's groups, home and no capabilities, set in the worker
//! between `fork` and `exec`, never in the parent; with nothing of root's environment but an
//! allow-list ([`super::environment`]) and no descriptor of root's but its standard streams.

use serde::{Deserialize, Serialize};
use std::ffi::{CStr, CString};
use std::path::PathBuf;

/// A user a worker runs as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups (the user's from the group database).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<u32>,
    /// The login name, when the user has a password-database entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::pathname::option")]
    pub home: Option<PathBuf>,
    /// The login shell, when the user has a password-database entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::pathname::option")]
    pub shell: Option<PathBuf>,
}

impl Identity {
    /// This process's effective user, by its ids alone: nothing is read (`doctor --sysroot`
    /// reads no file outside its tree), and its name is looked up only when a message needs it.
    pub fn current() -> Identity {
        // SAFETY: geteuid and getegid have no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        Identity {
            uid,
            gid,
            groups: Vec::new(),
            name: None,
            home: None,
            shell: None,
        }
    }

    /// The user `uid`: its primary group, groups and home from the databases, or `gid` (a group
    /// seen on its files) and no other group when it has no entry.
    pub fn of(uid: u32, gid: u32) -> Identity {
        match passwd(uid) {
            Some(entry) => Identity {
                uid,
                gid: entry.gid,
                groups: group_list(&entry.name, entry.gid),
                name: Some(entry.name),
                home: Some(entry.home),
                shell: Some(entry.shell),
            },
            None => Identity {
                uid,
                gid,
                groups: vec![gid],
                name: None,
                home: None,
                shell: None,
            },
        }
    }

    pub fn is_root(&self) -> bool {
        self.uid == 0
    }

    /// How people name the user: `alice (uid 1000)`, or `uid 4242` without an entry.
    pub fn label(&self) -> String {
        match &self.name {
            Some(name) => label(self.uid, Some(name)),
            None => owner_of(self.uid),
        }
    }

    /// The change to this user that [`crate::process::spawn`] makes in a child.
    pub fn switch(&self) -> Switch {
        Switch {
            uid: self.uid,
            gid: self.gid,
            groups: self.groups.clone(),
            descriptors: crate::contain::descriptor_limit(),
        }
    }
}

/// A change of user, made in a child before it executes anything: supplementary groups, group,
/// then user (real, effective and saved ids, so no way back to root and, with them, no
/// capabilities), `no_new_privs` so no set-uid file can regain any, and every descriptor it
/// inherited but its standard streams (the pipes to us) closed when it executes.
pub struct Switch {
    uid: libc::uid_t,
    gid: libc::gid_t,
    groups: Vec<libc::gid_t>,
    descriptors: libc::c_int,
}

impl Switch {
    /// Makes the change; only async-signal-safe system calls, on memory allocated before the
    /// fork.
    ///
    /// # Safety
    /// Only in a child between fork and exec.
    pub unsafe fn make(&self) -> std::io::Result<()> {
        let check = |status: libc::c_int| match status {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        };
        close_on_exec_from(3, self.descriptors);
        check(libc::setgroups(self.groups.len(), self.groups.as_ptr()))?;
        check(libc::setresgid(self.gid, self.gid, self.gid))?;
        check(libc::setresuid(self.uid, self.uid, self.uid))?;
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        // Root must be out of reach for good.
        if self.uid != 0 && libc::setuid(0) == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::EPERM));
        }
        Ok(())
    }
}

/// Marks every descriptor from `first` on close-on-exec, so that none reaches the program
/// executed, while std's own (its exec-error pipe) works until then: `close_range` where the
/// kernel has it (Linux 5.11), else each one below `limit`. Async-signal-safe.
fn close_on_exec_from(first: libc::c_int, limit: libc::c_int) {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range only changes descriptor flags.
    let marked = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        )
    };
    if marked == 0 {
        return;
    }
    for fd in first..limit {
        // SAFETY: fcntl on a descriptor that may not be open fails with EBADF, harmlessly.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}

/// ` as alice (uid 1000)` when a worker runs as another user, else nothing: for messages.
pub fn as_user(user: Option<&Identity>) -> String {
    user.map(|u| format!(" as {}", u.label()))
        .unwrap_or_default()
}

/// `alice (uid 1000)`, or `uid 4242` for a user with no name.
pub fn label(uid: u32, name: Option<&str>) -> String {
    match name {
        Some(name) => format!("{name} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}

/// `alice (uid 1000)` for the user `uid`, its name looked up, or `uid 4242` without one.
pub fn owner_of(uid: u32) -> String {
    label(uid, user_name(uid).as_deref())
}

/// The login name of `uid`, if it has one.
pub fn user_name(uid: u32) -> Option<String> {
    passwd(uid).map(|e| e.name)
}

/// The name of group `gid`, if it has one.
pub fn group_name(gid: u32) -> Option<String> {
    let mut buffer = vec![0 as libc::c_char; 16384];
    let mut group: libc::group = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::group = std::ptr::null_mut();
    // SAFETY: getgrgid_r writes into `group` and `buffer`, both live and of the sizes given.
    let status = unsafe {
        libc::getgrgid_r(
            gid,
            &mut group,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut found,
        )
    };
    if status != 0 || found.is_null() {
        return None;
    }
    // SAFETY: on success gr_name points into `buffer`, NUL-terminated.
    Some(
        unsafe { CStr::from_ptr(group.gr_name) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// A user's password-database entry, what of it a worker needs.
struct PasswdEntry {
    name: String,
    gid: u32,
    home: PathBuf,
    shell: PathBuf,
}

fn passwd(uid: u32) -> Option<PasswdEntry> {
    let mut buffer = vec![0 as libc::c_char; 16384];
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: getpwuid_r writes into `entry` and `buffer`, both live and of the sizes given.
    let status = unsafe {
        libc::getpwuid_r(
            uid,
            &mut entry,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut found,
        )
    };
    if status != 0 || found.is_null() {
        return None;
    }
    // SAFETY: on success the strings point into `buffer`, NUL-terminated.
    let text = |p: *const libc::c_char| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    Some(PasswdEntry {
        name: text(entry.pw_name),
        gid: entry.pw_gid,
        home: PathBuf::from(text(entry.pw_dir)),
        shell: PathBuf::from(text(entry.pw_shell)),
    })
}

/// The groups `name` belongs to, `gid` among them (as `initgroups` would set them).
fn group_list(name: &str, gid: u32) -> Vec<u32> {
    let Ok(name) = CString::new(name) else {
        return vec![gid];
    };
    let mut count: libc::c_int = 64;
    loop {
        let mut groups = vec![0 as libc::gid_t; usize::try_from(count).unwrap_or(64)];
        let asked = count;
        // SAFETY: `groups` holds `count` entries; getgrouplist writes at most that many and
        // sets `count` to how many there are.
        let status =
            unsafe { libc::getgrouplist(name.as_ptr(), gid, groups.as_mut_ptr(), &mut count) };
        if status >= 0 {
            groups.truncate(usize::try_from(count).unwrap_or(0));
            return groups;
        }
        if count <= asked {
            return vec![gid];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_without_an_entry_keeps_the_group_of_its_files() {
        let nobody = Identity::of(4242, 4343);
        assert_eq!(
            (nobody.uid, nobody.gid, nobody.groups),
            (4242, 4343, vec![4343])
        );
        assert_eq!(Identity::of(4242, 4343).label(), "uid 4242");
    }

    #[test]
    fn root_has_its_entry() {
        let root = Identity::of(0, 0);
        assert_eq!(root.name.as_deref(), Some("root"));
        assert!(root.groups.contains(&0));
        assert_eq!(root.label(), "root (uid 0)");
    }

    #[test]
    fn a_worker_runs_as_the_user_with_no_capabilities_nothing_of_our_environment_and_no_descriptor_of_ours(
    ) {
        if !crate::trust::running_as_root("a worker runs as the user") {
            return;
        }
        let user = Identity::of(4242, 4343);
        // A descriptor we hold without close-on-exec (dup2 clears the flag), as a runner's
        // inherited one would be.
        let file = std::fs::File::open("/proc/self/status").unwrap();
        // SAFETY: dup2 onto an unused descriptor number; closed below.
        let leaked = unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&file), 77) };
        assert_eq!(leaked, 77);
        let mut command = std::process::Command::new("sh");
        command.args([
            "-c",
            "id -u; id -g; id -G; grep -E '^Cap(Prm|Eff|Amb):' /proc/self/status; \
             echo \"fd77: $(readlink /proc/$$/fd/77 || echo closed)\"; env",
        ]);
        command
            .env("SET_BY_STACKBENCH", "kept")
            .stdout(std::process::Stdio::piped());
        let child = crate::process::spawn(&mut command, Some(&user), crate::process::Sight::Own);
        let out = child.unwrap().wait_with_output().unwrap();
        // SAFETY: closes the descriptor dup2 made.
        unsafe { libc::close(77) };
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[..3], ["4242", "4343", "4343"]);
        for line in &lines[3..6] {
            assert!(line.ends_with("0000000000000000"), "{line}");
        }
        assert_eq!(lines[6], "fd77: closed", "{text}");
        // Of the test runner's environment (HOME, cargo's CARGO_*, whatever CI adds) nothing
        // outside the allow-list arrives; sh itself adds PWD, SHLVL and _.
        let names: Vec<&str> = lines[7..]
            .iter()
            .filter_map(|l| l.split_once('=').map(|(n, _)| n))
            .collect();
        assert!(names.contains(&"SET_BY_STACKBENCH"), "{text}");
        for name in names {
            assert!(
                super::super::environment::is_kept(std::ffi::OsStr::new(name))
                    || ["SET_BY_STACKBENCH", "PATH", "PWD", "SHLVL", "_"].contains(&name),
                "{name} reached the worker: {text}"
            );
        }
        assert!(
            lines.contains(&format!("PATH={}", super::super::environment::SAFE_PATH).as_str()),
            "{text}"
        );
    }
}
