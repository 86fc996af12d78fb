//! Who a worker runs as: this process's own user, or (when stackbench runs as root) the owner of
//! the files it loads, with that user's groups, home and no capabilities, set in the worker
//! between `fork` and `exec`, never in the parent.

use serde::{Deserialize, Serialize};
use std::ffi::{CStr, CString};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

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
    pub home: Option<PathBuf>,
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
            },
            None => Identity {
                uid,
                gid,
                groups: vec![gid],
                name: None,
                home: None,
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

    /// Makes `command` run as this user: supplementary groups, group, then user set in the child
    /// before it executes anything (real, effective and saved ids, so no way back to root and,
    /// with them, no capabilities), `no_new_privs` so no set-uid file can regain any, and the
    /// user's `HOME`, `USER` and `LOGNAME`.
    pub fn apply(&self, command: &mut Command) {
        let (uid, gid, groups) = (self.uid, self.gid, self.groups.clone());
        if let Some(home) = &self.home {
            command.env("HOME", home);
        }
        if let Some(name) = &self.name {
            command.env("USER", name).env("LOGNAME", name);
        }
        // SAFETY: the closure runs in the child between fork and exec and makes only
        // async-signal-safe system calls on memory allocated before the fork.
        unsafe {
            command.pre_exec(move || {
                let check = |status: libc::c_int| match status {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                };
                check(libc::setgroups(groups.len(), groups.as_ptr()))?;
                check(libc::setresgid(gid, gid, gid))?;
                check(libc::setresuid(uid, uid, uid))?;
                check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
                // Root must be out of reach for good.
                if uid != 0 && libc::setuid(0) == 0 {
                    return Err(std::io::Error::from_raw_os_error(libc::EPERM));
                }
                Ok(())
            });
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
    fn a_worker_runs_as_the_user_with_no_capabilities() {
        assert_eq!(
            Identity::current().uid,
            0,
            "drops privileges: run as root, as CI does"
        );
        let user = Identity::of(4242, 4343);
        let mut command = Command::new("sh");
        command.args([
            "-c",
            "id -u; id -g; id -G; grep -E '^Cap(Prm|Eff|Amb):' /proc/self/status",
        ]);
        user.apply(&mut command);
        let out = command.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[..3], ["4242", "4343", "4343"]);
        for line in &lines[3..] {
            assert!(line.ends_with("0000000000000000"), "{line}");
        }
    }
}
