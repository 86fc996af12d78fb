//! Who may load what. Loading a shared object runs its constructors, so a worker only ever loads
//! files that its user could have written alone: the rule ([`rule`]) is read from metadata, and
//! a worker for files of another user runs as that user when stackbench runs as root
//! ([`identity`]). Static analysis needs no trust and goes on for every installation.

pub mod identity;
pub mod rule;

pub use identity::Identity;
pub use rule::{Distrust, Writers};

use identity::owner_of;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How a run decides who loads what.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The user stackbench runs as.
    pub me: Identity,
    /// `--load-untrusted`: load everything as ourselves, as stackbench once did.
    pub load_untrusted: bool,
}

impl Policy {
    /// The rule, for the user running stackbench.
    pub fn strict() -> Policy {
        Policy {
            me: Identity::current(),
            load_untrusted: false,
        }
    }

    /// The rule, or none with `load_untrusted`.
    pub fn new(load_untrusted: bool) -> Policy {
        Policy {
            load_untrusted,
            ..Policy::strict()
        }
    }

    /// Who may load `files` (each then searching `dirs`), and with which of `search_path`'s
    /// entries: as ourselves when every step is ours or root's; as their owner when we are root
    /// and they are one other user's; not at all otherwise.
    pub fn decide(&self, files: &[PathBuf], dirs: &[PathBuf], search_path: &str) -> Decision {
        if self.load_untrusted {
            return Decision::Load(Launch {
                user: None,
                search_path: search_path.to_owned(),
                left_out: Vec::new(),
            });
        }
        let mut owners: BTreeMap<u32, (u32, PathBuf)> = BTreeMap::new();
        for file in files {
            match rule::walk(file, false) {
                Ok(found) => {
                    for (uid, gid) in found.0 {
                        owners.entry(uid).or_insert((gid, file.clone()));
                    }
                }
                Err(distrust) => return Decision::Refuse(Refusal::Untrusted(distrust)),
            }
        }
        let others: Vec<(u32, (u32, PathBuf))> = owners
            .into_iter()
            .filter(|(uid, _)| *uid != self.me.uid)
            .collect();
        let user = match (others.as_slice(), self.me.is_root()) {
            ([], _) => None,
            ([(uid, (gid, _))], true) => Some(Identity::of(*uid, *gid)),
            ([(uid, (_, file)), ..], false) => {
                return Decision::Refuse(Refusal::NotOwned {
                    owner: owner_of(*uid),
                    path: rule::first_owned_by(file, *uid).unwrap_or_else(|| file.clone()),
                })
            }
            ([(first, _), (second, (_, file)), ..], true) => {
                return Decision::Refuse(Refusal::Mixed {
                    owners: vec![owner_of(*first), owner_of(*second)],
                    path: rule::first_owned_by(file, *second).unwrap_or_else(|| file.clone()),
                })
            }
        };
        let uid = user.as_ref().map_or(self.me.uid, |u| u.uid);
        for dir in dirs {
            if let Some(distrust) = search_distrust(dir, uid) {
                return Decision::Refuse(Refusal::Untrusted(distrust));
            }
        }
        let (search_path, left_out) = trusted_entries(search_path, uid);
        Decision::Load(Launch {
            user,
            search_path,
            left_out,
        })
    }

    /// The entries of `search_path` (an `LD_LIBRARY_PATH`) that our own workers may search.
    pub fn own_search_path(&self, search_path: &str) -> String {
        match self.load_untrusted {
            true => search_path.to_owned(),
            false => trusted_entries(search_path, self.me.uid).0,
        }
    }
}

/// What a worker for a set of files may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Load(Launch),
    Refuse(Refusal),
}

/// How a worker is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The user it runs as, when not ourselves.
    pub user: Option<Identity>,
    /// Its `LD_LIBRARY_PATH`: the entries that user may search.
    pub search_path: String,
    /// The entries left out, and why.
    pub left_out: Vec<LeftOut>,
}

/// A search-path entry a worker was not given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    pub entry: String,
    pub distrust: Distrust,
}

/// Why files are not loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Refusal {
    /// A step can be written by someone other than its owner, or cannot be read.
    Untrusted(Distrust),
    /// The files are another user's, and we are not root.
    NotOwned { owner: String, path: PathBuf },
    /// Steps of two users other than us: no one user may load them all.
    Mixed { owners: Vec<String>, path: PathBuf },
}

impl Refusal {
    /// One line saying why nothing was loaded.
    pub fn reason(&self) -> String {
        match self {
            Refusal::Untrusted(distrust) => format!("not loaded: {}", distrust.describe()),
            Refusal::NotOwned { owner, .. } => {
                format!("not loaded: owned by {owner} (static analysis only)")
            }
            Refusal::Mixed { owners, path } => format!(
                "not loaded: its files belong to {}, and {} is {}'s: no one user may load them all",
                owners.join(" and "),
                path.display(),
                owners.last().map_or("another user", String::as_str)
            ),
        }
    }

    /// The one thing to do about it.
    pub fn fix(&self) -> String {
        match self {
            Refusal::Untrusted(distrust) => distrust.fix(),
            Refusal::NotOwned { owner, .. } => format!(
                "run stackbench as {owner} (or as root, which loads each user's files as that user) to load them"
            ),
            Refusal::Mixed { path, .. } => format!(
                "give {} to the installation's owner, or copy the file into the installation",
                path.display()
            ),
        }
    }
}

impl Distrust {
    /// What is wrong, in words: the path and who can write it.
    pub fn describe(&self) -> String {
        match self {
            Distrust::Writable { path, by } => {
                format!("{} can be written by {}", path.display(), by.describe())
            }
            Distrust::Owned { path, owner } => {
                format!("{} belongs to {}", path.display(), owner_of(*owner))
            }
            Distrust::Unreadable { path, reason } => {
                format!("{} cannot be checked: {reason}", path.display())
            }
            Distrust::Missing { path } => format!("{} is missing", path.display()),
        }
    }

    /// The one thing to do about it.
    pub fn fix(&self) -> String {
        match self {
            Distrust::Writable { path, .. } => format!("chmod go-w {}", path.display()),
            Distrust::Owned { path, .. } => {
                format!(
                    "chown root {} (or remove it from the search path)",
                    path.display()
                )
            }
            Distrust::Unreadable { path, .. } | Distrust::Missing { path } => {
                format!("check {} and its links", path.display())
            }
        }
    }
}

impl Writers {
    /// `everyone`, or `group video (gid 44)`.
    pub fn describe(&self) -> String {
        match self {
            Writers::Everyone => "every user".to_owned(),
            Writers::Group(gid) => match identity::group_name(*gid) {
                Some(name) => format!("group {name} (gid {gid})"),
                None => format!("group {gid}"),
            },
        }
    }
}

/// Whether a distrust stands against loading: a missing place holds nothing to load.
fn is_serious(distrust: &Distrust) -> bool {
    !matches!(distrust, Distrust::Missing { .. })
}

/// The standard output of `program ARGS` run as ourselves within `timeout`, if the trust rule
/// lets this user run it (a program another user could change is their code); otherwise, or
/// when it fails or hangs, why not.
pub fn output_if_trusted(
    program: &Path,
    args: &[&str],
    timeout: std::time::Duration,
) -> Result<String, String> {
    let shown = program.display();
    rule::check(program, false, Identity::current().uid)
        .map_err(|distrust| format!("{shown} not run: {}", distrust.describe()))?;
    let mut command = std::process::Command::new(program);
    command.args(args);
    crate::process::output_within(command, timeout)
        .ok_or_else(|| format!("{shown} {} failed or did not answer", args.join(" ")))
}

/// Why `uid` may not search `dir` (the directory, or a shared object in it), if it may not; a
/// missing directory holds nothing and may be searched.
pub fn search_distrust(dir: &Path, uid: u32) -> Option<Distrust> {
    searchable(dir, uid).err().filter(is_serious)
}

/// Whether `uid` may search `dir`: the directory, and every shared object in it.
fn searchable(dir: &Path, uid: u32) -> Result<(), Distrust> {
    rule::check(dir, true, uid)?;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().contains(".so") {
            if let Some(distrust) = rule::check(&entry.path(), false, uid)
                .err()
                .filter(is_serious)
            {
                return Err(distrust);
            }
        }
    }
    Ok(())
}

/// The entries of an `LD_LIBRARY_PATH` that `uid` may search (empty and relative ones stand for
/// places below the current directory and are checked there), and the rest with why; a missing
/// directory is kept, as it holds nothing.
fn trusted_entries(search_path: &str, uid: u32) -> (String, Vec<LeftOut>) {
    let mut kept = Vec::new();
    let mut left_out = Vec::new();
    if search_path.is_empty() {
        return (String::new(), left_out);
    }
    for entry in search_path.split(':') {
        let place = if entry.is_empty() { "." } else { entry };
        match search_distrust(Path::new(place), uid) {
            None => kept.push(entry),
            Some(distrust) => left_out.push(LeftOut {
                entry: entry.to_owned(),
                distrust,
            }),
        }
    }
    (kept.join(":"), left_out)
}
