//! Locked clocks, as the driver keeps them: set with `nvmlDeviceSetGpuLockedClocks` and
//! `nvmlDeviceSetMemoryLockedClocks` (root only), held until reset or the next boot, seen by
//! every process of the host. The simulator keeps them in a file beside its profile, one per
//! boot (`<profile>.locked-clocks-boot<N>`), a line per locked clock: `<device> sm <min> <max>`
//! or `<device> memory <min> <max>`. Without a profile file there is nowhere to keep them, and
//! the calls answer `NVML_ERROR_NOT_SUPPORTED`.

use crate::profile::{Device, PROFILE_VAR};
use std::path::PathBuf;

/// Which clock a lock holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locked {
    Sm,
    Memory,
}

impl Locked {
    fn word(self) -> &'static str {
        match self {
            Locked::Sm => "sm",
            Locked::Memory => "memory",
        }
    }
}

/// The locks of one device: each clock's `(min, max)`, MHz.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Locks {
    pub sm: Option<(u32, u32)>,
    pub memory: Option<(u32, u32)>,
}

/// The file this boot's locks are kept in; `None` without a profile file.
fn file(device: &Device) -> Option<PathBuf> {
    let profile = std::env::var_os(PROFILE_VAR).filter(|p| !p.is_empty())?;
    let mut name = profile;
    name.push(format!(".locked-clocks-boot{}", crate::clock::boot(device)));
    Some(PathBuf::from(name))
}

/// Every lock line of this boot's file.
fn lines(device: &Device) -> Vec<(u32, Locked, u32, u32)> {
    let Some(text) = file(device).and_then(|f| std::fs::read_to_string(f).ok()) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let [index, kind, min, max] = words[..] else {
                return None;
            };
            let kind = match kind {
                "sm" => Locked::Sm,
                "memory" => Locked::Memory,
                _ => return None,
            };
            Some((
                index.parse().ok()?,
                kind,
                min.parse().ok()?,
                max.parse().ok()?,
            ))
        })
        .collect()
}

/// The locks device `index` holds now.
pub fn of(device: &Device, index: u32) -> Locks {
    let mut locks = Locks::default();
    for (at, kind, min, max) in lines(device) {
        if at == index {
            match kind {
                Locked::Sm => locks.sm = Some((min, max)),
                Locked::Memory => locks.memory = Some((min, max)),
            }
        }
    }
    locks
}

/// Sets (`Some`) or resets (`None`) device `index`'s lock of `kind`: `false` when there is no
/// profile file to keep it beside, or it could not be written.
pub fn set(device: &Device, index: u32, kind: Locked, range: Option<(u32, u32)>) -> bool {
    let Some(path) = file(device) else {
        return false;
    };
    let mut kept: Vec<String> = lines(device)
        .into_iter()
        .filter(|(at, k, _, _)| !(*at == index && *k == kind))
        .map(|(at, k, min, max)| format!("{at} {} {min} {max}", k.word()))
        .collect();
    if let Some((min, max)) = range {
        kept.push(format!("{index} {} {min} {max}", kind.word()));
    }
    // Written whole and renamed into place: another process reads the old locks or the new.
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    let text: String = kept.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&temporary, text).is_ok() && std::fs::rename(&temporary, &path).is_ok()
}
