//! A benchmark's history as inline SVG: per series, the median of each run joined by a line,
//! its interquartile range as a shaded band and a bar, the spread of its repetitions' medians
//! (the variation between runs) as a capped whisker, and a marker where the versions behind
//! the figure changed. A benchmark with a rate is charted in it (GB/s, TFLOP/s: higher is
//! better), any other in time; the axis always starts at zero, so that a wobble of 0.01% looks
//! like one. No script, no fonts or styles to fetch.

use super::html::escape;
use super::{version_mark, version_sets};
use crate::history::{Chart, Point, RunEntry};
use std::fmt::Write;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 280.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 44.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 48.0;
/// Most run labels on the time axis; beyond it, every n-th run is labelled.
const MAX_RUN_LABELS: usize = 10;

/// One colour per series, in turn (Okabe and Ito's palette, readable with colour blindness).
pub const PALETTE: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442",
];

/// The chart of `chart`; `runs` names the runs its points refer to.
pub fn chart(chart: &Chart, runs: &[RunEntry]) -> String {
    let mut slots: Vec<usize> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.run))
        .collect();
    slots.sort_unstable();
    slots.dedup();
    let plot_width = WIDTH - LEFT - RIGHT;
    let x = |run: usize| {
        let slot = slots.iter().position(|&s| s == run).unwrap_or(0);
        if slots.len() == 1 {
            LEFT + plot_width / 2.0
        } else {
            LEFT + plot_width * slot as f64 / (slots.len() - 1) as f64
        }
    };
    let in_rates = chart.unit.is_some();
    // A time as the chart shows it: itself, or the point's rate at that time.
    let shown = |p: &Point, ns: f64| match p.rate {
        Some(rate) if in_rates && ns > 0.0 => rate * p.median_ns / ns,
        _ => ns,
    };
    let points = chart.series.iter().flat_map(|s| s.points.iter());
    let high = points
        .flat_map(|p| {
            let (low, high) = p.spread_ns.unwrap_or((p.q1_ns, p.q3_ns));
            [p.q1_ns, p.q3_ns, low, high].map(|ns| shown(p, ns))
        })
        .fold(f64::NEG_INFINITY, f64::max);
    let axis = match &chart.unit {
        Some(unit) => Axis::rate(high, unit),
        None => Axis::time(high),
    };
    let y = |p: &Point, ns: f64| {
        TOP + (HEIGHT - TOP - BOTTOM) * (axis.high - shown(p, ns)) / (axis.high - axis.low)
    };
    let at_value =
        |value: f64| TOP + (HEIGHT - TOP - BOTTOM) * (axis.high - value) / (axis.high - axis.low);

    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{}: median and interquartile range per run">"#,
        escape(&chart.benchmark)
    );
    // The time axis: a grid line and a label per tick, the unit at the top.
    for tick in axis.ticks() {
        let at = at_value(tick);
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" x2="{}" y1="{at:.1}" y2="{at:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end" font-size="11" fill="#444">{}</text>"##,
            WIDTH - RIGHT,
            LEFT - 6.0,
            at + 4.0,
            axis.label(tick)
        );
    }
    let _ = write!(
        svg,
        r##"<text x="4" y="{}" font-size="11" fill="#444">{}</text>"##,
        TOP - 4.0,
        escape(&axis.unit)
    );
    // The run axis: every run, labelled with its date when there is room.
    let every = slots.len().div_ceil(MAX_RUN_LABELS);
    for (slot, &run) in slots.iter().enumerate() {
        let at = x(run);
        let _ = write!(
            svg,
            r##"<line x1="{at:.1}" x2="{at:.1}" y1="{}" y2="{}" stroke="#888"/>"##,
            HEIGHT - BOTTOM,
            HEIGHT - BOTTOM + 4.0
        );
        if slot % every == 0 {
            let _ = write!(
                svg,
                r##"<text x="{at:.1}" y="{}" text-anchor="middle" font-size="11" fill="#444">{}</text>"##,
                HEIGHT - BOTTOM + 18.0,
                escape(&short_date(&runs[run].when))
            );
        }
    }
    let _ = write!(
        svg,
        r##"<line x1="{LEFT}" x2="{}" y1="{bottom}" y2="{bottom}" stroke="#888"/><line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{bottom}" stroke="#888"/><text x="{}" y="{}" text-anchor="middle" font-size="11" fill="#444">run (start, UTC)</text>"##,
        WIDTH - RIGHT,
        LEFT + plot_width / 2.0,
        HEIGHT - 8.0,
        bottom = HEIGHT - BOTTOM,
    );
    let sets = version_sets(chart);
    for (i, series) in chart.series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let _ = write!(
            svg,
            r#"<g class="series" data-label="{}">"#,
            escape(&series.label)
        );
        if series.points.len() > 1 {
            let upper = series.points.iter().map(|p| (x(p.run), y(p, p.q3_ns)));
            let lower = series
                .points
                .iter()
                .rev()
                .map(|p| (x(p.run), y(p, p.q1_ns)));
            let _ = write!(
                svg,
                r#"<polygon points="{}" fill="{colour}" fill-opacity="0.12" stroke="none"/>"#,
                coordinates(upper.chain(lower))
            );
            let _ = write!(
                svg,
                r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
                coordinates(series.points.iter().map(|p| (x(p.run), y(p, p.median_ns))))
            );
        }
        for point in &series.points {
            let (at, median) = (x(point.run), y(point, point.median_ns));
            let (q1, q3) = (y(point, point.q1_ns), y(point, point.q3_ns));
            let top = q1.min(q3);
            let mark = version_mark(&sets, &point.versions);
            // A simulated figure is a hollow point, and says so on hover.
            let (fill, simulated) = if point.simulated {
                (
                    format!(r#"white" stroke="{colour}"#),
                    "; SIMULATED GPU, not a GPU's figure",
                )
            } else {
                (colour.to_owned(), "")
            };
            // The spread between the run's repetitions: a thin capped whisker beside the bar.
            let spread = match (point.spread_ns, point.repetitions) {
                (Some((low, high)), Some(n)) => {
                    let (top, bottom) = (
                        y(point, high).min(y(point, low)),
                        y(point, high).max(y(point, low)),
                    );
                    let side = at + 4.0;
                    let _ = write!(
                        svg,
                        r#"<path class="spread" d="M{side:.1},{top:.1}V{bottom:.1}M{:.1},{top:.1}H{:.1}M{:.1},{bottom:.1}H{:.1}" stroke="{colour}" stroke-width="1" fill="none"/>"#,
                        side - 2.0,
                        side + 2.0,
                        side - 2.0,
                        side + 2.0
                    );
                    format!(
                        "; {n} repetitions, their medians {} to {}",
                        super::bench::duration(low),
                        super::bench::duration(high)
                    )
                }
                _ => String::new(),
            };
            let rate = match (point.rate, &chart.unit) {
                (Some(rate), Some(unit)) => format!("{rate:.1} {} at the ", escape(unit)),
                _ => String::new(),
            };
            let _ = write!(
                svg,
                r#"<line x1="{at:.1}" x2="{at:.1}" y1="{q1:.1}" y2="{q3:.1}" stroke="{colour}" stroke-width="1.5"/><circle cx="{at:.1}" cy="{median:.1}" r="3.5" fill="{fill}"><title>{}, {}: {rate}median {} (interquartile {} to {}){spread}; {mark}: {}{simulated}</title></circle>"#,
                escape(&series.label),
                escape(&runs[point.run].when),
                super::bench::duration(point.median_ns),
                super::bench::duration(point.q1_ns),
                super::bench::duration(point.q3_ns),
                escape(&point.versions)
            );
            if point.versions_changed {
                let _ = write!(
                    svg,
                    r#"<text x="{:.1}" y="{:.1}" font-size="10" font-weight="bold" fill="{colour}">{mark}</text>"#,
                    at + 5.0,
                    top - 4.0
                );
            }
        }
        svg.push_str("</g>");
    }
    svg.push_str("</svg>");
    svg
}

/// `x1,y1 x2,y2 ...` for a polyline or polygon.
fn coordinates(points: impl Iterator<Item = (f64, f64)>) -> String {
    points
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `2026-11-23T06:01:02Z` as `11-23 06:01`; what is not such a time stays as it is.
fn short_date(when: &str) -> String {
    match (when.get(5..10), when.get(11..16)) {
        (Some(day), Some(time)) => format!("{day} {time}"),
        _ => when.to_owned(),
    }
}

/// The vertical axis: a range with round ends and steps, in a unit the figures read well in.
struct Axis {
    low: f64,
    high: f64,
    step: f64,
    unit: String,
    scale: f64,
}

impl Axis {
    /// A time axis from zero to `high` (ns) and a margin, in the unit the times read well in.
    fn time(high: f64) -> Axis {
        let (unit, scale) = match high {
            h if h < 1e3 => ("ns", 1.0),
            h if h < 1e6 => ("µs", 1e3),
            h if h < 1e9 => ("ms", 1e6),
            _ => ("s", 1e9),
        };
        Axis {
            unit: unit.to_owned(),
            scale,
            ..Axis::new(0.0, high)
        }
    }

    /// A rate axis from zero to `high` and a margin, in `unit`.
    fn rate(high: f64, unit: &str) -> Axis {
        Axis {
            unit: unit.to_owned(),
            ..Axis::new(0.0, high)
        }
    }

    /// An axis holding `low..=high` with a margin, on steps of 1, 2 or 5 times a power of
    /// ten, in the figures' own unit; a single value gets a range around it.
    fn new(low: f64, high: f64) -> Axis {
        let (low, high) = if low.is_finite() && high.is_finite() {
            (low, high)
        } else {
            (0.0, 1.0)
        };
        let span = if high > low {
            high - low
        } else {
            high.abs().max(1.0) * 0.1
        };
        let raw_step = span * 1.2 / 5.0;
        let magnitude = 10f64.powf(raw_step.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .into_iter()
            .map(|m| m * magnitude)
            .find(|s| *s >= raw_step)
            .unwrap_or(10.0 * magnitude);
        let lower = ((low - span * 0.1) / step).floor() * step;
        let upper = ((high + span * 0.1) / step).ceil() * step;
        Axis {
            low: lower.max(0.0),
            high: upper,
            step,
            unit: String::new(),
            scale: 1.0,
        }
    }

    /// The values with a grid line.
    fn ticks(&self) -> impl Iterator<Item = f64> + '_ {
        let first = (self.low / self.step).ceil() as i64;
        let last = (self.high / self.step).floor() as i64;
        (first..=last).map(move |k| k as f64 * self.step)
    }

    /// A tick's label in the axis's unit, with the decimals the step needs.
    fn label(&self, ns: f64) -> String {
        let step = self.step / self.scale;
        let decimals = if step >= 1.0 {
            0
        } else {
            (-step.log10().floor()) as usize
        };
        format!("{:.*}", decimals, ns / self.scale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_axis_holds_its_values_on_round_steps() {
        let axis = Axis::new(21.3e6, 24.9e6);
        assert!(axis.low <= 21.3e6 && axis.high >= 24.9e6);
        assert_eq!(axis.ticks().count(), 7);
        // A chart's axis starts at zero, in the unit its figures read well in.
        let time = Axis::time(24.9e6);
        assert_eq!((time.low, time.unit.as_str()), (0.0, "ms"));
        let labels: Vec<String> = time.ticks().map(|t| time.label(t)).collect();
        assert_eq!(labels, ["0", "10", "20", "30"]);
        let rate = Axis::rate(689.3, "TFLOP/s");
        assert_eq!((rate.low, rate.unit.as_str()), (0.0, "TFLOP/s"));
        assert!(rate.high >= 689.3);
    }

    #[test]
    fn dates_are_shortened_to_day_and_minute() {
        assert_eq!(short_date("2026-11-23T06:01:02Z"), "11-23 06:01");
        assert_eq!(short_date("yesterday"), "yesterday");
    }

    proptest! {
        #[test]
        fn every_range_gets_a_few_ordered_ticks_inside_it(
            low in 1.0f64..1e10,
            width in 0.0f64..1e10,
        ) {
            let axis = Axis::new(low, low + width);
            prop_assert!(axis.low <= low && axis.high >= low + width);
            let ticks: Vec<f64> = axis.ticks().collect();
            prop_assert!((2..=12).contains(&ticks.len()), "{} ticks", ticks.len());
            prop_assert!(ticks.windows(2).all(|w| w[0] < w[1]));
        }
    }
}
