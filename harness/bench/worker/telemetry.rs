//! NVML readings taken while a benchmark runs: SM clock, temperature, power and the clocks
//! event (throttle) reasons, every few milliseconds on a thread of their own, and which samples
//! were taken while a reason held the clocks back.

use crate::bench::model::Telemetry;
use crate::check::worker::nvml::clocks::{clock_event_names, clocks_event_reasons};
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::{Device, Nvml};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// How often NVML is read while sampling.
const INTERVAL: Duration = Duration::from_millis(10);

/// One NVML reading; a value NVML would not give is `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub at: Instant,
    pub sm_clock_mhz: Option<u32>,
    pub temperature_c: Option<u32>,
    pub power_mw: Option<u32>,
    /// The clocks event reasons' bits.
    pub reasons: Option<u64>,
}

impl Reading {
    fn take(device: &Device) -> Reading {
        Reading {
            at: Instant::now(),
            sm_clock_mhz: device.clock_info(Clock::SM).ok(),
            temperature_c: device.temperature(TemperatureSensor::Gpu).ok(),
            power_mw: device.power_usage().ok(),
            reasons: clocks_event_reasons(device).ok(),
        }
    }

    /// Whether a reason other than idling or the application clocks held the clocks back.
    fn throttled(&self) -> bool {
        self.reasons
            .is_some_and(|bits| !clock_event_names(bits).is_empty())
    }
}

/// A thread that reads NVML between `begin` and `end`.
pub struct Sampler {
    control: Sender<bool>,
    readings: Receiver<Vec<Reading>>,
}

impl Sampler {
    /// Opens NVML from `library` and finds the device at `pci_bus_id` (`0:1b:0.0`).
    pub fn start(library: PathBuf, pci_bus_id: String) -> Result<Sampler, String> {
        let (control, commands) = mpsc::channel::<bool>();
        let (send_readings, readings) = mpsc::channel();
        let (ready, opened) = mpsc::channel();
        std::thread::spawn(move || {
            let nvml = match Nvml::builder().lib_path(library.as_os_str()).init() {
                Ok(nvml) => nvml,
                Err(e) => {
                    let _ = ready.send(Err(format!("NVML did not initialise: {e}")));
                    return;
                }
            };
            let device = match nvml.device_by_pci_bus_id(pci_bus_id.as_str()) {
                Ok(device) => device,
                Err(e) => {
                    let _ = ready.send(Err(format!("NVML has no device at {pci_bus_id}: {e}")));
                    return;
                }
            };
            let _ = ready.send(Ok(()));
            // `true` starts a series, `false` ends it; the channel's end ends the thread.
            while let Ok(start) = commands.recv() {
                if !start {
                    continue;
                }
                let mut series = Vec::new();
                loop {
                    series.push(Reading::take(&device));
                    match commands.recv_timeout(INTERVAL) {
                        Err(RecvTimeoutError::Timeout) | Ok(true) => {}
                        Ok(false) | Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                series.push(Reading::take(&device));
                if send_readings.send(series).is_err() {
                    return;
                }
            }
        });
        opened
            .recv()
            .map_err(|_| "the NVML thread ended before it answered".to_owned())??;
        Ok(Sampler { control, readings })
    }

    /// Starts a series of readings.
    pub fn begin(&self) {
        let _ = self.control.send(true);
    }

    /// Ends the series and returns it.
    pub fn end(&self) -> Vec<Reading> {
        let _ = self.control.send(false);
        self.readings
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_default()
    }
}

/// The readings that speak for a sample run from `start` to `end`: those taken during it, or
/// for a sample shorter than the reading interval, the last one before its end.
fn during<'a>(readings: &'a [Reading], (start, end): &(Instant, Instant)) -> Vec<&'a Reading> {
    let inside: Vec<&Reading> = readings
        .iter()
        .filter(|r| r.at >= *start && r.at <= *end)
        .collect();
    if !inside.is_empty() {
        return inside;
    }
    readings
        .iter()
        .rev()
        .find(|r| r.at <= *end)
        .into_iter()
        .collect()
}

/// What the readings say about a benchmark whose samples ran in `windows` (start, end): the
/// clock's range and its mean during the samples, the hottest and hungriest reading, every
/// reason seen, and the samples during which a reading showed the clocks held back.
pub fn summarize(readings: &[Reading], windows: &[(Instant, Instant)]) -> Telemetry {
    let clocks = readings.iter().filter_map(|r| r.sm_clock_mhz);
    let reasons: BTreeSet<String> = readings
        .iter()
        .filter_map(|r| r.reasons)
        .flat_map(clock_event_names)
        .collect();
    let per_sample: Vec<Vec<&Reading>> = windows.iter().map(|w| during(readings, w)).collect();
    let throttled_samples = per_sample
        .iter()
        .enumerate()
        .filter(|(_, speaking)| speaking.iter().any(|r| r.throttled()))
        .map(|(index, _)| index)
        .collect();
    let sample_clocks: Vec<f64> = per_sample
        .iter()
        .flatten()
        .filter_map(|r| r.sm_clock_mhz)
        .map(f64::from)
        .collect();
    let sm_clock_mhz_mean = (!sample_clocks.is_empty())
        .then(|| sample_clocks.iter().sum::<f64>() / sample_clocks.len() as f64);
    Telemetry {
        readings: readings.len(),
        sm_clock_mhz_min: clocks.clone().min(),
        sm_clock_mhz_max: clocks.max(),
        sm_clock_mhz_mean,
        temperature_c_max: readings.iter().filter_map(|r| r.temperature_c).max(),
        power_w_max: readings
            .iter()
            .filter_map(|r| r.power_mw)
            .max()
            .map(|mw| f64::from(mw) / 1e3),
        throttle_reasons: reasons.into_iter().collect(),
        throttled_samples,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(at: Instant, clock: u32, reasons: u64) -> Reading {
        Reading {
            at,
            sm_clock_mhz: Some(clock),
            temperature_c: Some(60),
            power_mw: Some(500_000),
            reasons: Some(reasons),
        }
    }

    #[test]
    fn samples_are_marked_by_the_readings_during_them() {
        let t = Instant::now();
        let ms = |n: u64| t + Duration::from_millis(n);
        // Idle (0x1) is harmless; SW power cap (0x4) holds the clocks back.
        let readings = vec![
            reading(ms(0), 1980, 0x1),
            reading(ms(10), 1980, 0x0),
            reading(ms(20), 1755, 0x4),
            reading(ms(30), 1980, 0x0),
        ];
        let windows = vec![
            (ms(1), ms(12)),  // the 10 ms reading: fine
            (ms(15), ms(25)), // the 20 ms reading: power cap
            (ms(21), ms(23)), // no reading inside: the last before its end, at 20 ms
            (ms(31), ms(35)), // none inside, the last (30 ms) fine
        ];
        let t = summarize(&readings, &windows);
        assert_eq!(t.throttled_samples, vec![1, 2]);
        assert_eq!(
            (t.sm_clock_mhz_min, t.sm_clock_mhz_max),
            (Some(1755), Some(1980))
        );
        // The readings speaking for each sample: 1980; 1755; 1755 again; 1980.
        assert_eq!(
            t.sm_clock_mhz_mean,
            Some((1980.0 + 1755.0 * 2.0 + 1980.0) / 4.0)
        );
        assert_eq!(t.throttle_reasons, vec!["SW power cap".to_owned()]);
        assert_eq!(t.power_w_max, Some(500.0));
        assert_eq!(t.readings, 4);
    }

    #[test]
    fn no_readings_mark_nothing() {
        let now = Instant::now();
        let t = summarize(&[], &[(now, now)]);
        assert!(t.throttled_samples.is_empty());
        assert_eq!((t.sm_clock_mhz_min, t.sm_clock_mhz_mean), (None, None));
    }
}
