//! Time from a roofline model of the profile, never from the host clock. Each device has three
//! timelines, one per engine: its SMs (kernels, memsets, copies within the device, library work)
//! and two copy engines, one per direction (host to device and peer copies in; device to host
//! and peer copies out), so that copies both ways overlap, as on hardware. Every operation
//! takes `slowdown x slow x (overhead + duration) x (1 + noise x z)`, `z` a standard normal and
//! `slow` the device's `slow_device` factor; a copy starts once its stream's earlier work is
//! done, its engine is free, and not before the SMs' timeline (the device's present), which a
//! host synchronisation moves on to the end of the copies done. Events read the timelines (see
//! [`crate::driver`]).
//!
//! As on hardware, the figures vary at three levels (GUIDE.md section 10): per operation
//! (`noise`), per process (`run_sigma`: each process draws its own factor for the memory
//! bandwidth and for each compute peak) and per boot (`boot_sigma`, drawn from the boot's
//! number, so every process of one boot shares it). Only the profile's `seed` pins the draws;
//! without one each process draws afresh. The first `ramp_ms` of a process's work run at
//! a lower clock, as a card's boost ramps up, and the `throttle` fault's clocks lengthen every
//! kernel in proportion: the clock NVML reports, so a locked clock (which holds against the SW
//! reasons) sets kernel times as it sets the readings. With `other_processes = N` the device is time-sliced with N busy
//! programs: each operation takes `1 + N u` times as long, `u` drawn per operation between
//! [`FOREIGN_SHARE`]'s bounds (the others' work comes in bursts), so a busy device is both
//! slower and noisier, as a shared card is.

use crate::nvml::model::{clock_mhz, clocks_event_reasons, max_clock_mhz, ClockType};
use crate::profile::{Device, Faults};

/// A kernel launch's fixed cost, seconds.
pub const LAUNCH_LATENCY: f64 = 2e-6;
/// A copy's or memset's fixed cost, seconds.
pub const MEMOP_LATENCY: f64 = 1e-6;
/// Host-device transfers over PCIe, bytes per second: the default of `[node] pcie_gbs`.
pub const PCIE_BYTES_PER_SECOND: f64 = 25e9;
/// How much longer work takes at the very start of the ramp (falling linearly to none).
pub const RAMP_SLOWDOWN: f64 = 0.25;

/// The share of the device each other process takes from an operation: uniform between these.
pub const FOREIGN_SHARE: (f64, f64) = (0.4, 1.0);

/// The precision whose peak a kernel's arithmetic runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peak {
    Fp32 = 0,
    Tf32 = 1,
    Fp16 = 2,
    Bf16 = 3,
    Fp8 = 4,
}

/// The direction of a copy engine's copies, as seen from its device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Host to device, or from a peer.
    In = 0,
    /// Device to host, or to a peer.
    Out = 1,
}

/// One device's model timelines.
#[derive(Debug, Clone)]
pub struct Clock {
    /// The SMs' timeline, seconds since the device was initialised: the device's present.
    now: f64,
    /// Each copy engine's timeline, by [`Direction`].
    copies: [f64; 2],
    bandwidth: f64,
    /// FLOP/s of each precision's peak: FP32, TF32, FP16, BF16, FP8.
    peaks: [f64; 5],
    slowdown: f64,
    /// The device's `slow_device` factor.
    slow: f64,
    /// Kernels' duration factor from the throttled clock: max clock over the clock held back.
    throttle: f64,
    /// Seconds of model time the clocks take to ramp up.
    ramp: f64,
    /// Other users' busy processes on the device (`other_processes`).
    foreign: f64,
    noise: f64,
    rng: u64,
}

/// The seed of this process's draws: the profile's when it pins one, else fresh entropy.
fn process_seed(device: &Device, index: usize) -> u64 {
    let spread = (index as u64).wrapping_mul(0xd1b5_4a32_d192_ed03);
    match device.seed {
        Some(seed) => seed ^ spread,
        None => {
            let time = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            let mut state = time ^ u64::from(std::process::id()).rotate_left(32) ^ spread;
            splitmix64(&mut state)
        }
    }
}

/// A factor of `exp(sigma z)` for the bandwidth and each 16-bit-or-wider peak (FP32, TF32,
/// FP16, BF16); FP8 runs on BF16's tensor cores and clock, and varies with it (and a seeded
/// profile draws what it drew before FP8 was modelled).
fn factors(sigma: f64, state: &mut u64) -> [f64; 5] {
    std::array::from_fn(|_| (sigma * standard_normal(state)).exp())
}

/// The current boot's number: `STACKBENCH_SIM_BOOT` when set, else the profile's `boot`.
pub fn boot(device: &Device) -> u64 {
    std::env::var(BOOT_VAR)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(device.boot)
}

/// The environment variable naming the boot, over the profile's `boot`.
pub const BOOT_VAR: &str = "STACKBENCH_SIM_BOOT";

impl Clock {
    /// A timeline at 0 for the device at `index` of the profile, this process's and this
    /// boot's factors drawn.
    pub fn new(device: &Device, index: usize, faults: &Faults) -> Clock {
        let mut rng = process_seed(device, index);
        let mut boot_state = boot(device)
            ^ device.seed.unwrap_or(0).rotate_left(17)
            ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let by_boot = factors(device.boot_sigma, &mut boot_state);
        let by_process = factors(device.run_sigma, &mut rng);
        let rate = |i: usize, nominal: f64| nominal / (by_boot[i] * by_process[i]);
        let locked = crate::nvml::locks::of(device, index as u32).sm;
        let held = clock_mhz(
            device,
            ClockType::Sm,
            clocks_event_reasons(faults, 1),
            locked,
        );
        let tflops = [
            device.fp32_tflops,
            device.tf32_tflops,
            device.fp16_tflops,
            device.bf16_tflops,
            device.fp8_tflops,
        ];
        Clock {
            now: 0.0,
            copies: [0.0; 2],
            bandwidth: rate(0, device.memory_bandwidth_gbs * 1e9),
            peaks: std::array::from_fn(|i| rate((i + 1).min(4), tflops[i] * 1e12)),
            slowdown: device.slowdown,
            slow: (faults.slow_device.iter())
                .filter(|(d, _)| *d == index)
                .map(|(_, factor)| factor)
                .product(),
            throttle: f64::from(max_clock_mhz(device, ClockType::Sm)) / f64::from(held.max(1)),
            ramp: device.ramp_ms.max(0.0) * 1e-3,
            foreign: f64::from(faults.other_processes),
            noise: device.noise,
            rng,
        }
    }

    /// The SMs' timeline now, seconds.
    pub fn now(&self) -> f64 {
        self.now
    }

    /// Moves the SMs' timeline on to the end of everything the copy engines have done: the host
    /// has seen that work complete, so nothing it enqueues next starts earlier.
    pub fn settle(&mut self) {
        self.now = self.copies.iter().fold(self.now, |now, end| now.max(*end));
    }

    /// Moves the SMs' timeline on to `time` if it is behind (the stream of the next work waited
    /// for work that ends then, on another engine or device).
    pub fn wait_until(&mut self, time: f64) {
        self.now = self.now.max(time);
    }

    /// A kernel that moved `bytes` of global memory and did `flops` FP32 operations.
    pub fn kernel(&mut self, bytes: u64, flops: u64) {
        self.kernel_at(bytes, flops, Peak::Fp32);
    }

    /// A kernel that moved `bytes` of global memory and did `flops` operations at `peak`'s
    /// rate (a library's GEMM in TF32, FP16, BF16 or FP8 runs at that precision's peak).
    pub fn kernel_at(&mut self, bytes: u64, flops: u64, peak: Peak) {
        self.kernel_over_link(bytes, flops, peak, 0.0);
    }

    /// A kernel as [`Clock::kernel_at`] times it, that also moved bytes to or from a peer's
    /// memory taking `link` seconds over the link: the longer of the two.
    pub fn kernel_over_link(&mut self, bytes: u64, flops: u64, peak: Peak, link: f64) {
        let memory = bytes as f64 / self.bandwidth;
        let compute = flops as f64 / self.peaks[peak as usize];
        let throttle = self.throttle;
        let duration = (throttle * memory.max(compute)).max(link);
        self.advance(throttle * LAUNCH_LATENCY, duration);
    }

    /// A device-to-device copy: every byte read and written.
    pub fn copy(&mut self, bytes: usize) {
        self.advance(MEMOP_LATENCY, 2.0 * bytes as f64 / self.bandwidth);
    }

    /// A memset: every byte written.
    pub fn memset(&mut self, bytes: usize) {
        self.advance(MEMOP_LATENCY, bytes as f64 / self.bandwidth);
    }

    /// A copy on the copy engine of `direction` (host to device, device to host, or between
    /// devices) of `bytes` at `bytes_per_second`, its duration times `slow` (the device's
    /// `slow_device` factor, or the larger of two devices'), that may start at `ready` (its
    /// stream's earlier work done); when it ends.
    pub fn transfer(
        &mut self,
        direction: Direction,
        ready: f64,
        bytes: usize,
        bytes_per_second: f64,
        slow: f64,
    ) -> f64 {
        let begin = ready.max(self.copies[direction as usize]).max(self.now);
        let span = self.span(begin, slow, MEMOP_LATENCY, bytes as f64 / bytes_per_second);
        self.copies[direction as usize] = begin + span;
        begin + span
    }

    /// A collective's part that takes `seconds` on the links (see [`crate::libs::nccl`]): only
    /// the profile's `slowdown` and the noise vary it. The links' rates already hold the
    /// `slow_device` and `slow_link` factors, and neither the SM clock's ramp nor its throttling
    /// moves a link.
    pub fn collective(&mut self, seconds: f64) {
        let z = standard_normal(&mut self.rng);
        let shared = self.shared();
        self.now += self.slowdown * shared * seconds * (1.0 + self.noise * z).max(0.0);
    }

    /// How many times as long an operation takes on a device time-sliced with the other
    /// processes: `1 + N u`, `u` uniform in [`FOREIGN_SHARE`]; 1 without them.
    fn shared(&mut self) -> f64 {
        if self.foreign == 0.0 {
            return 1.0;
        }
        let u = (splitmix64(&mut self.rng) >> 11) as f64 / (1u64 << 53) as f64;
        let (low, high) = FOREIGN_SHARE;
        1.0 + self.foreign * (low + (high - low) * u)
    }

    /// The device's own `slow_device` factor.
    pub fn slow(&self) -> f64 {
        self.slow
    }

    /// Moves the SMs' timeline on by an operation's time.
    fn advance(&mut self, overhead: f64, duration: f64) {
        self.now += self.span(self.now, self.slow, overhead, duration);
    }

    /// The time an operation beginning at `begin` takes, its duration times `slow`.
    fn span(&mut self, begin: f64, slow: f64, overhead: f64, duration: f64) -> f64 {
        let z = standard_normal(&mut self.rng);
        let factor = (1.0 + self.noise * z).max(0.0) * self.shared();
        let ramp = if begin < self.ramp {
            1.0 + RAMP_SLOWDOWN * (1.0 - begin / self.ramp)
        } else {
            1.0
        };
        self.slowdown * slow * ramp * (overhead + duration) * factor
    }
}

/// A standard normal from the SplitMix64 `state` (Box-Muller on two uniform draws).
fn standard_normal(state: &mut u64) -> f64 {
    let uniform = |state: &mut u64| (splitmix64(state) >> 11) as f64 / (1u64 << 53) as f64;
    let u1 = uniform(state).max(f64::MIN_POSITIVE);
    let u2 = uniform(state);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The next value of a SplitMix64 generator.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Model time past the default profile's ramp.
    const RAMP: f64 = 5e-3;

    /// A device with no variation at any level, its draws pinned.
    fn exact() -> Device {
        Device {
            noise: 0.0,
            run_sigma: 0.0,
            boot_sigma: 0.0,
            seed: Some(1),
            memory_bandwidth_gbs: 1000.0,
            fp32_tflops: 10.0,
            ..Device::default()
        }
    }

    /// The time of one 1 MB memset, well after the ramp.
    fn memset_time(device: &Device, faults: &Faults) -> f64 {
        let mut clock = Clock::new(device, 0, faults);
        clock.now = RAMP;
        clock.memset(1_000_000);
        clock.now() - RAMP
    }

    #[test]
    fn without_variation_the_model_is_exact() {
        let mut clock = Clock::new(&exact(), 0, &Faults::default());
        clock.now = RAMP;
        clock.memset(1_000_000);
        assert!((clock.now() - RAMP - (1e-6 + 1e-6)).abs() < 1e-15);
        let before = clock.now();
        // 1 GFLOP at 10 TFLOP/s outweighs 1 kB at 1 TB/s.
        clock.kernel(1000, 1_000_000_000);
        assert!((clock.now() - before - (2e-6 + 1e-4)).abs() < 1e-12);
    }

    #[test]
    fn the_first_work_of_a_process_runs_at_a_lower_clock() {
        let mut clock = Clock::new(&exact(), 0, &Faults::default());
        clock.memset(1_000_000);
        let first = clock.now();
        assert!(
            (first / 2e-6 - (1.0 + RAMP_SLOWDOWN)).abs() < 1e-9,
            "{first}"
        );
        assert!((memset_time(&exact(), &Faults::default()) - 2e-6).abs() < 1e-15);
    }

    #[test]
    fn throttling_lengthens_kernels_as_the_clock_falls() {
        let hw = Faults {
            throttle: vec!["hw_slowdown".into()],
            ..Faults::default()
        };
        let kernel = |faults: &Faults| {
            let mut clock = Clock::new(&exact(), 0, faults);
            clock.now = RAMP;
            clock.kernel(1000, 1_000_000_000);
            clock.now() - RAMP
        };
        // NVML's HW slowdown halves the SM clock: the kernel takes twice as long.
        assert!((kernel(&hw) / kernel(&Faults::default()) - 2.0).abs() < 1e-9);
        // A memset is the copy engine's, not an SM's.
        assert_eq!(
            memset_time(&exact(), &hw),
            memset_time(&exact(), &Faults::default())
        );
    }

    #[test]
    fn other_processes_slow_every_operation_by_their_slices_and_vary_it() {
        let busy = Faults {
            other_processes: 2,
            ..Faults::default()
        };
        let alone = memset_time(&exact(), &Faults::default());
        let mut clock = Clock::new(&exact(), 0, &busy);
        clock.now = RAMP;
        let factors: Vec<f64> = (0..200)
            .map(|_| {
                let before = clock.now();
                clock.memset(1_000_000);
                (clock.now() - before) / alone
            })
            .collect();
        let (low, high) = FOREIGN_SHARE;
        assert!(factors
            .iter()
            .all(|f| (1.0 + 2.0 * low..=1.0 + 2.0 * high).contains(f)));
        let spread = factors.iter().fold(f64::MAX, |a, f| a.min(*f));
        let top = factors.iter().fold(0.0, |a: f64, f| a.max(*f));
        assert!(top - spread > 0.5, "{spread}..{top}");
    }

    #[test]
    fn processes_differ_unless_the_seed_is_pinned_and_boots_differ_by_their_number() {
        let faults = Faults::default();
        let unpinned = Device {
            noise: 0.0,
            seed: None,
            ..Device::default()
        };
        let a = memset_time(&unpinned, &faults);
        let b = memset_time(&unpinned, &faults);
        assert_ne!(a, b, "two processes, one boot, no seed");
        let pinned = Device {
            seed: Some(7),
            ..unpinned.clone()
        };
        assert_eq!(memset_time(&pinned, &faults), memset_time(&pinned, &faults));
        let other_boot = Device {
            boot: 1,
            ..pinned.clone()
        };
        assert_ne!(
            memset_time(&pinned, &faults),
            memset_time(&other_boot, &faults)
        );
        // Only the boot varies: every process of one boot shares its factor.
        let by_boot = |boot: u64| Device {
            run_sigma: 0.0,
            boot,
            ..unpinned.clone()
        };
        assert_eq!(
            memset_time(&by_boot(3), &faults),
            memset_time(&by_boot(3), &faults)
        );
        assert_ne!(
            memset_time(&by_boot(3), &faults),
            memset_time(&by_boot(4), &faults)
        );
    }

    #[test]
    fn the_run_factors_spread_as_the_profile_says() {
        let device = Device {
            run_sigma: 0.02,
            boot_sigma: 0.0,
            ..exact()
        };
        let logs: Vec<f64> = (0..2000)
            .map(|seed| {
                let device = Device {
                    seed: Some(seed),
                    ..device.clone()
                };
                (memset_time(&device, &Faults::default()) / 2e-6).ln()
            })
            .collect();
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / logs.len() as f64).sqrt();
        // The memset's fixed cost does not vary: about half the time moves with the bandwidth.
        assert!(sd > 0.007 && sd < 0.013, "{sd}");
    }

    #[test]
    fn noise_is_seeded_and_centred() {
        let run = || {
            let mut state = 1;
            (0..10_000)
                .map(|_| standard_normal(&mut state))
                .collect::<Vec<_>>()
        };
        let draws = run();
        assert_eq!(draws, run());
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let var = draws.iter().map(|z| (z - mean).powi(2)).sum::<f64>() / draws.len() as f64;
        assert!(mean.abs() < 0.05, "{mean}");
        assert!((var - 1.0).abs() < 0.05, "{var}");
    }
}
