//! Time from a roofline model of the profile, never from the host clock. Each device has one
//! timeline; every operation it completes moves it on by
//! `slowdown x (overhead + duration) x (1 + noise x z)`, `z` a standard normal drawn from the
//! device's seeded generator, so a run gives the same times every time. Events read it.

use crate::profile::Device;

/// A kernel launch's fixed cost, seconds.
pub const LAUNCH_LATENCY: f64 = 2e-6;
/// A copy's or memset's fixed cost, seconds.
pub const MEMOP_LATENCY: f64 = 1e-6;
/// Host-device transfers over PCIe, bytes per second.
pub const PCIE_BYTES_PER_SECOND: f64 = 25e9;

/// The precision whose peak a kernel's arithmetic runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peak {
    Fp32 = 0,
    Tf32 = 1,
    Fp16 = 2,
    Bf16 = 3,
}

/// One device's model timeline.
#[derive(Debug, Clone)]
pub struct Clock {
    /// Seconds since the device was initialised.
    now: f64,
    bandwidth: f64,
    /// FLOP/s of each precision's peak: FP32, TF32, FP16, BF16.
    peaks: [f64; 4],
    slowdown: f64,
    noise: f64,
    rng: u64,
}

impl Clock {
    /// A timeline at 0 for the device at `index` of the profile.
    pub fn new(device: &Device, index: usize) -> Clock {
        Clock {
            now: 0.0,
            bandwidth: device.memory_bandwidth_gbs * 1e9,
            peaks: [
                device.fp32_tflops,
                device.tf32_tflops,
                device.fp16_tflops,
                device.bf16_tflops,
            ]
            .map(|tflops| tflops * 1e12),
            slowdown: device.slowdown,
            noise: device.noise,
            rng: device.seed ^ (index as u64).wrapping_mul(0xd1b5_4a32_d192_ed03),
        }
    }

    /// The timeline now, seconds.
    pub fn now(&self) -> f64 {
        self.now
    }

    /// A kernel that moved `bytes` of global memory and did `flops` FP32 operations.
    pub fn kernel(&mut self, bytes: u64, flops: u64) {
        self.kernel_at(bytes, flops, Peak::Fp32);
    }

    /// A kernel that moved `bytes` of global memory and did `flops` operations at `peak`'s
    /// rate (a library's GEMM in TF32, FP16 or BF16 runs at that precision's peak).
    pub fn kernel_at(&mut self, bytes: u64, flops: u64, peak: Peak) {
        let memory = bytes as f64 / self.bandwidth;
        let compute = flops as f64 / self.peaks[peak as usize];
        self.advance(LAUNCH_LATENCY, memory.max(compute));
    }

    /// A device-to-device copy: every byte read and written.
    pub fn copy(&mut self, bytes: usize) {
        self.advance(MEMOP_LATENCY, 2.0 * bytes as f64 / self.bandwidth);
    }

    /// A memset: every byte written.
    pub fn memset(&mut self, bytes: usize) {
        self.advance(MEMOP_LATENCY, bytes as f64 / self.bandwidth);
    }

    /// A host-to-device or device-to-host copy, over PCIe.
    pub fn transfer(&mut self, bytes: usize) {
        self.advance(MEMOP_LATENCY, bytes as f64 / PCIE_BYTES_PER_SECOND);
    }

    fn advance(&mut self, overhead: f64, duration: f64) {
        let z = self.normal();
        let factor = (1.0 + self.noise * z).max(0.0);
        self.now += self.slowdown * (overhead + duration) * factor;
    }

    /// A standard normal (Box-Muller on two uniform draws).
    fn normal(&mut self) -> f64 {
        let uniform = |state: &mut u64| (splitmix64(state) >> 11) as f64 / (1u64 << 53) as f64;
        let u1 = uniform(&mut self.rng).max(f64::MIN_POSITIVE);
        let u2 = uniform(&mut self.rng);
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
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

    #[test]
    fn without_noise_the_model_is_exact() {
        let device = Device {
            noise: 0.0,
            memory_bandwidth_gbs: 1000.0,
            fp32_tflops: 10.0,
            ..Device::default()
        };
        let mut clock = Clock::new(&device, 0);
        clock.memset(1_000_000);
        assert!((clock.now() - (1e-6 + 1e-6)).abs() < 1e-15);
        let before = clock.now();
        // 1 GFLOP at 10 TFLOP/s outweighs 1 kB at 1 TB/s.
        clock.kernel(1000, 1_000_000_000);
        assert!((clock.now() - before - (2e-6 + 1e-4)).abs() < 1e-12);
    }

    #[test]
    fn noise_is_seeded_and_centred() {
        let device = Device {
            noise: 0.1,
            ..Device::default()
        };
        let run = || {
            let mut clock = Clock::new(&device, 0);
            (0..10_000).map(|_| clock.normal()).collect::<Vec<_>>()
        };
        let draws = run();
        assert_eq!(draws, run());
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let var = draws.iter().map(|z| (z - mean).powi(2)).sum::<f64>() / draws.len() as f64;
        assert!(mean.abs() < 0.05, "{mean}");
        assert!((var - 1.0).abs() < 0.05, "{var}");
    }
}
