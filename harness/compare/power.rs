//! `compare`'s verdicts calibrated at the statistics level on runs that vary as GPU runs do:
//! each `bench` command on its own boot (a shift of `boot_sigma`), each repetition a fresh
//! process (a shift of `run_sigma`), each sample with its own noise. Seeded, so every figure
//! here is the same on every run of the tests, and fast: thousands of comparisons in a second.
//! Being seeded, each figure is asserted exactly: every share doc/statistics.md quotes is one of
//! these tests' assertions, so the page cannot drift from what the statistics do.

use super::floor::learned;
use super::stats::{estimate, mean, Floor, Verdict};
use crate::bench::model::Side;

/// How GPU runs vary, as relative standard deviations.
#[derive(Debug, Clone, Copy)]
struct Variation {
    boot_sigma: f64,
    run_sigma: f64,
    noise: f64,
}

/// Each process apart by 1.5%, each boot by 1% (the simulator's default `boot_sigma`).
const UNKIND: Variation = Variation {
    boot_sigma: 0.01,
    run_sigma: 0.015,
    noise: 0.005,
};

/// Repetitions that agree within 0.3% while whole runs move by 1.5%: what a floor of 0%
/// between runs calls slower or faster in 15-26% of A/A pairs.
const SHIFTED: Variation = Variation {
    boot_sigma: 0.015,
    run_sigma: 0.003,
    noise: 0.005,
};

/// Samples per repetition.
const SAMPLES: usize = 40;
/// Pairs per figure: at 200, one false verdict is 0.5%.
const PAIRS: u64 = 200;
/// The default threshold.
const THRESHOLD: f64 = 0.02;

/// SplitMix64 and Box-Muller: normal draws of their own, sharing nothing with the bootstrap.
struct Normal(u64);

impl Normal {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn draw(&mut self) -> f64 {
        let u1 = self.uniform().max(f64::MIN_POSITIVE);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// One `bench` command of `repeat` repetitions of a benchmark whose true time is `center`.
fn bench(center: f64, repeat: usize, v: Variation, random: &mut Normal) -> Vec<Vec<f64>> {
    let boot = v.boot_sigma * random.draw();
    (0..repeat)
        .map(|_| {
            let process = boot + v.run_sigma * random.draw();
            (0..SAMPLES)
                .map(|_| center * (process + v.noise * random.draw()).exp())
                .collect()
        })
        .collect()
}

/// `count` earlier runs of `repeat` repetitions around `center`, as history keeps them: each
/// repetition's log median.
fn earlier(
    center: f64,
    count: usize,
    repeat: usize,
    v: Variation,
    random: &mut Normal,
) -> Vec<Vec<f64>> {
    (0..count)
        .map(|_| {
            bench(center, repeat, v, random)
                .iter()
                .map(|samples| crate::figures::median(&mut samples.clone()).ln())
                .collect()
        })
        .collect()
}

/// Which floor a comparison is held to.
#[derive(Debug, Clone, Copy)]
enum FloorOf {
    /// The stated GPU default.
    Default,
    /// None between runs: what stackbench assumed before issue 20.
    Zero,
    /// Learned from this many earlier runs of each side's environment.
    History(usize),
}

/// The verdicts of [`PAIRS`] comparisons of a run at 1 against one `change` times as slow,
/// each at `repeat` repetitions, held to `floor`.
fn verdicts(change: f64, repeat: usize, floor: FloorOf, v: Variation, seed: u64) -> Vec<Verdict> {
    (0..PAIRS)
        .map(|pair| {
            let mut random = Normal(seed ^ pair.wrapping_mul(0x2545_f491_4f6c_dd1d));
            let old = bench(1.0, repeat, v, &mut random);
            let new = bench(change, repeat, v, &mut random);
            let floor = match floor {
                FloorOf::Default => Floor::default_for(Side::Gpu),
                FloorOf::Zero => Floor {
                    between_runs: 0.0,
                    ..Floor::default_for(Side::Gpu)
                },
                FloorOf::History(runs) => {
                    let before = earlier(1.0, runs, repeat, v, &mut random);
                    let after = earlier(change, runs, repeat, v, &mut random);
                    learned(&[before, after]).expect("enough history")
                }
            };
            estimate(&slices(&old), &slices(&new), &floor)
                .expect("positive samples")
                .ratio
                .verdict(THRESHOLD)
        })
        .collect()
}

/// A run's repetitions as `estimate` takes them.
fn slices(run: &[Vec<f64>]) -> Vec<&[f64]> {
    run.iter().map(Vec::as_slice).collect()
}

/// The share of `verdicts` that are `wanted`.
fn share(verdicts: &[Verdict], wanted: &[Verdict]) -> f64 {
    verdicts.iter().filter(|v| wanted.contains(v)).count() as f64 / verdicts.len() as f64
}

/// `share` is the documented percentage, exactly: of 200 pairs, each is a multiple of 0.5%.
fn assert_share(share: f64, documented_pct: f64, what: &str) {
    assert!(
        (100.0 * share - documented_pct).abs() < 1e-9,
        "{what}: {:.1}%, doc/statistics.md says {documented_pct:.1}%",
        100.0 * share
    );
}

#[test]
fn a_a_pairs_are_never_called_slower_faster_or_same() {
    for (name, v) in [("unkind", UNKIND), ("shifted", SHIFTED)] {
        for (repeat, floor) in [
            (3, FloorOf::Default),
            (5, FloorOf::Default),
            (20, FloorOf::Default),
            (3, FloorOf::History(3)),
            (5, FloorOf::History(3)),
        ] {
            let aa = verdicts(1.0, repeat, floor, v, 11);
            let what = format!("A/A {name}, --repeat {repeat}, {floor:?}");
            assert_share(share(&aa, &[Verdict::Slower, Verdict::Faster]), 0.0, &what);
            // No A/A pair is `same` at 2%: its interval would have to fit within ±2%.
            assert_share(share(&aa, &[Verdict::Same]), 0.0, &what);
        }
    }
}

#[test]
fn without_a_floor_between_runs_a_a_pairs_were_called_slower_or_faster() {
    // (variation, repeat, % slower or faster) under a floor of 0% between runs.
    let table = [
        (UNKIND, 3, 1.5),
        (UNKIND, 5, 0.5),
        (UNKIND, 20, 2.0),
        (SHIFTED, 3, 14.0),
        (SHIFTED, 5, 19.5),
        (SHIFTED, 20, 27.0),
    ];
    for (v, repeat, documented) in table {
        let aa = verdicts(1.0, repeat, FloorOf::Zero, v, 11);
        let wrong = share(&aa, &[Verdict::Slower, Verdict::Faster]);
        assert_share(
            wrong,
            documented,
            &format!("{v:?}, --repeat {repeat}, floor 0"),
        );
    }
}

#[test]
fn the_power_to_see_a_slowdown() {
    // (change, repeat, floor, % called slower), as doc/statistics.md quotes them.
    let table = [
        (1.03, 3, FloorOf::Default, 0.0),
        (1.03, 5, FloorOf::Default, 0.0),
        (1.03, 5, FloorOf::History(10), 0.0),
        (1.05, 3, FloorOf::Default, 1.5),
        (1.05, 5, FloorOf::Default, 1.0),
        (1.05, 3, FloorOf::History(3), 1.5),
        (1.05, 5, FloorOf::History(3), 1.5),
        (1.05, 5, FloorOf::History(10), 3.5),
        (1.08, 5, FloorOf::Default, 34.0),
        (1.10, 5, FloorOf::Default, 76.5),
        (1.12, 5, FloorOf::Default, 98.0),
        (1.15, 5, FloorOf::Default, 99.5),
    ];
    for (change, repeat, floor, documented) in table {
        let called = verdicts(change, repeat, floor, UNKIND, 23);
        let what = format!("{change} slower, --repeat {repeat}, {floor:?}");
        assert_share(share(&called, &[Verdict::Slower]), documented, &what);
        assert_share(share(&called, &[Verdict::Faster]), 0.0, &what);
    }
}

/// The driver change: each run and each boot 0.5% apart.
const STEADY: Variation = Variation {
    boot_sigma: 0.005,
    run_sigma: 0.005,
    noise: 0.005,
};

#[test]
fn a_driver_change_with_history_on_both_sides_is_slower_and_pooled_it_is_not() {
    // Three runs of history at `--repeat 3` on each driver, the new one 8% slower.
    let (mut apart, mut pooled) = (0usize, 0usize);
    for pair in 0..PAIRS {
        let mut random = Normal(31 ^ pair.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let old = bench(1.0, 3, STEADY, &mut random);
        let new = bench(1.08, 3, STEADY, &mut random);
        let before = earlier(1.0, 3, 3, STEADY, &mut random);
        let after = earlier(1.08, 3, 3, STEADY, &mut random);
        let slower = |floor: Option<Floor>| {
            let floor = floor.expect("enough history");
            let e = estimate(&slices(&old), &slices(&new), &floor).expect("positive samples");
            usize::from(e.ratio.verdict(THRESHOLD) == Verdict::Slower)
        };
        apart += slower(learned(&[before.clone(), after.clone()]));
        pooled += slower(learned(&[[before, after].concat()]));
    }
    let share = |n: usize| n as f64 / PAIRS as f64;
    assert_share(
        share(apart),
        81.0,
        "8% on a new driver, each driver's spread apart",
    );
    assert_share(share(pooled), 0.0, "8% on a new driver, pooled");
}

/// The simulated GPU's default variation: each boot and each process 1% apart.
const SIMULATED: Variation = Variation {
    boot_sigma: 0.01,
    run_sigma: 0.01,
    noise: 0.005,
};

/// Over [`PAIRS`] driver changes of `change` on a card that varies as `v`, with `history` earlier
/// runs at `--repeat 3` on each driver (each run on its own boot), the verdicts of the compared
/// runs judged as `compare` judges them: one run against one other held to the learned floor,
/// and every run of each driver together.
fn driver_changes(change: f64, history: usize, v: Variation) -> (Vec<Verdict>, Vec<Verdict>) {
    (0..PAIRS)
        .map(|pair| {
            let mut random = Normal(47 ^ pair.wrapping_mul(0x2545_f491_4f6c_dd1d));
            let old = bench(1.0, 3, v, &mut random);
            let new = bench(change, 3, v, &mut random);
            let before = earlier(1.0, history, 3, v, &mut random);
            let after = earlier(change, history, 3, v, &mut random);
            let floor = learned(&[before.clone(), after.clone()]).expect("enough history");
            let threshold = super::stats::evidence_threshold(&floor);
            let one = estimate(&slices(&old), &slices(&new), &floor).expect("positive samples");
            let figures = |compared: &[Vec<f64>], earlier: &[Vec<f64>]| {
                let logs: Vec<f64> = (compared.iter())
                    .map(|samples| crate::figures::median(&mut samples.clone()).ln())
                    .collect();
                std::iter::once(mean(&logs))
                    .chain(earlier.iter().map(|r| mean(r)))
                    .collect::<Vec<f64>>()
            };
            let all =
                super::stats::estimate_runs(&figures(&old, &before), &figures(&new, &after), None)
                    .expect("runs on both sides");
            (one.ratio.verdict(threshold), all.ratio.verdict(threshold))
        })
        .unzip()
}

#[test]
fn a_driver_change_is_judged_on_every_run_of_each_driver() {
    // The simulated GPU's variation, three earlier runs on each driver, 8% slower: one run
    // against one other, held to the spread history shows, rarely clears it; the four runs of
    // each driver together do.
    let (one, all) = driver_changes(1.08, 3, SIMULATED);
    let what = "8% on a new driver, the simulated GPU's variation";
    assert_share(
        share(&one, &[Verdict::Slower]),
        20.0,
        &format!("{what}, one run a side"),
    );
    assert_share(
        share(&all, &[Verdict::Slower]),
        99.5,
        &format!("{what}, every run"),
    );
    // No change: never slower or faster, either way.
    let (one, all) = driver_changes(1.0, 3, SIMULATED);
    for (how, verdicts) in [("one run a side", one), ("every run", all)] {
        let what = format!("no change, {how}");
        assert_share(
            share(&verdicts, &[Verdict::Slower, Verdict::Faster]),
            0.0,
            &what,
        );
    }
}
