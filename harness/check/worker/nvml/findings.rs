//! What the devices' readings add up to for `driver.health`: the failed queries, the notes for
//! queries a device does not support, the problems found (each with its fix), and what a pass
//! may say was checked.

use super::clocks::clock_event_names;
use super::health::{DeviceHealth, Reading, Unread};

/// What the devices' readings add up to, gathered device by device.
#[derive(Debug, Default)]
pub struct Findings {
    /// `device N: ...` for each query that failed.
    pub failures: Vec<String>,
    /// `device N: ...` for each query a device does not support, or a device not readable.
    pub notes: Vec<String>,
    /// `N on device I` for each device with uncorrected ECC errors.
    ecc: Vec<String>,
    remap_failed: Vec<u32>,
    remap_pending: Vec<u32>,
    pages_pending: Vec<u32>,
    /// `device I (reasons)` for each device whose clocks are held back.
    throttled: Vec<String>,
    persistence_off: Vec<u32>,
    /// Whether any device answered each query (then the pass may say it was checked).
    saw_persistence: bool,
    saw_ecc: bool,
    saw_pages: bool,
    saw_remap: bool,
    saw_clocks: bool,
}

impl Findings {
    /// Adds one device's readings, in the order the reasons list them.
    pub fn add(&mut self, device: &DeviceHealth) {
        let index = device.index;
        let r = match &device.readings {
            Ok(r) => r,
            Err(Unread::Denied(reason)) => {
                self.notes
                    .push(format!("device {index}: not readable ({reason})"));
                return;
            }
            Err(Unread::Failed(reason)) => {
                self.failures.push(format!("device {index}: {reason}"));
                return;
            }
        };
        if let Some(&on) = self.answer(index, &r.persistence, "persistence mode not supported") {
            self.saw_persistence = true;
            if !on {
                self.persistence_off.push(index);
            }
        }
        let ecc_unsupported = match r.ecc_on {
            Some(false) => "ECC off",
            _ => "ECC error counts not supported",
        };
        if let Some(&count) = self.answer(index, &r.ecc_volatile_uncorrected, ecc_unsupported) {
            self.saw_ecc = true;
            if count > 0 {
                self.ecc.push(format!("{count} on device {index}"));
            }
        }
        let pages = &r.pages_pending_retirement;
        if let Some(&pending) = self.answer(index, pages, "page retirement not supported") {
            self.saw_pages = true;
            if pending {
                self.pages_pending.push(index);
            }
        }
        if let Some(remapping) = self.answer(index, &r.remapping, "row remapping not supported") {
            self.saw_remap = true;
            if remapping.failed {
                self.remap_failed.push(index);
            }
            if remapping.pending {
                self.remap_pending.push(index);
            }
        }
        let clocks = &r.clocks_event_reasons;
        if let Some(&bits) = self.answer(index, clocks, "clocks event reasons not supported") {
            self.saw_clocks = true;
            let names = clock_event_names(bits);
            if !names.is_empty() {
                self.throttled
                    .push(format!("device {index} ({})", names.join(", ")));
            }
        }
    }

    /// The value of device `index`'s `reading`; where there is none, notes it as `unsupported`
    /// or records its failure.
    fn answer<'r, T>(
        &mut self,
        index: u32,
        reading: &'r Reading<T>,
        unsupported: &str,
    ) -> Option<&'r T> {
        match reading {
            Reading::Value(value) => return Some(value),
            Reading::NotSupported => self.notes.push(format!("device {index}: {unsupported}")),
            Reading::Failed(e) => self.failures.push(format!("device {index}: {e}")),
        }
        None
    }

    /// One warning per kind of problem found, most serious first, each with its fix.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if !self.ecc.is_empty() {
            warnings.push(format!(
                "uncorrected ECC errors since the driver loaded: {} (nvidia-smi -q -d ECC shows \
                 where; reset the GPU, and if they recur the board needs service)",
                and_list(&self.ecc)
            ));
        }
        if !self.remap_failed.is_empty() {
            warnings.push(format!(
                "row remapping failed on {}: reset the GPU (nvidia-smi -r, or reboot); if it \
                 recurs the board needs service",
                on_devices(&self.remap_failed)
            ));
        }
        if !self.remap_pending.is_empty() {
            warnings.push(format!(
                "row remapping pending on {}: reset the GPU (nvidia-smi -r, or reboot) to apply \
                 it",
                on_devices(&self.remap_pending)
            ));
        }
        if !self.pages_pending.is_empty() {
            warnings.push(format!(
                "pages pending retirement on {}: reset the GPU or reboot to retire them",
                on_devices(&self.pages_pending)
            ));
        }
        if !self.throttled.is_empty() {
            warnings.push(format!(
                "clocks throttled on {}: check cooling, power and the power limit (nvidia-smi \
                 -q -d PERFORMANCE)",
                and_list(&self.throttled)
            ));
        }
        if !self.persistence_off.is_empty() {
            warnings.push(format!(
                "persistence mode off on {}: each process's first CUDA call pays driver \
                 initialisation; enable it with `nvidia-smi -pm 1` or run nvidia-persistenced",
                on_devices(&self.persistence_off)
            ));
        }
        warnings
    }

    /// What a pass says was checked: the queries some device answered.
    pub fn checked(&self) -> String {
        let mut checked = Vec::new();
        if self.saw_persistence {
            checked.push("persistence on");
        }
        if self.saw_ecc {
            checked.push("no ECC errors");
        }
        checked.push(match (self.saw_pages, self.saw_remap) {
            (true, true) => "no retired pages or pending remaps",
            (true, false) => "no pages pending retirement",
            (false, true) => "no pending row remaps",
            (false, false) => "",
        });
        if self.saw_clocks {
            checked.push("not throttled");
        }
        checked.retain(|phrase| !phrase.is_empty());
        if checked.is_empty() {
            "nothing NVML reports was supported".to_owned()
        } else {
            checked.join(", ")
        }
    }
}

/// "device 0" or "devices 0, 2".
fn on_devices(indices: &[u32]) -> String {
    let list: Vec<String> = indices.iter().map(u32::to_string).collect();
    match list.len() {
        1 => format!("device {}", list[0]),
        _ => format!("devices {}", list.join(", ")),
    }
}

/// "a", "a and b", "a, b and c".
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_sentences() {
        assert_eq!(on_devices(&[3]), "device 3");
        assert_eq!(on_devices(&[0, 2]), "devices 0, 2");
        let items = |n: usize| -> Vec<String> {
            ["a", "b", "c"][..n].iter().map(|s| s.to_string()).collect()
        };
        assert_eq!(and_list(&items(0)), "");
        assert_eq!(and_list(&items(1)), "a");
        assert_eq!(and_list(&items(2)), "a and b");
        assert_eq!(and_list(&items(3)), "a, b and c");
    }
}
