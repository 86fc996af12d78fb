//! A benchmark's history as inline SVG: per series, the median of each run joined by a line,
//! its interquartile range as a shaded band and a bar, the spread of its repetitions' medians
//! (the variation between runs) as a capped whisker, and a marker where the versions behind
//! the figure changed. No script, no fonts or styles to fetch.

use super::html::escape;
use super::{version_mark, version_sets};
use crate::history::{Chart, RunEntry};
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
    let points = chart.series.iter().flat_map(|s| s.points.iter());
    let low = points
        .clone()
        .map(|p| p.spread_ns.map_or(p.q1_ns, |(l, _)| l.min(p.q1_ns)))
        .fold(f64::INFINITY, f64::min);
    let high = points
        .map(|p| p.spread_ns.map_or(p.q3_ns, |(_, h)| h.max(p.q3_ns)))
        .fold(f64::NEG_INFINITY, f64::max);
    let axis = Axis::new(low, high);
    let y = |ns: f64| TOP + (HEIGHT - TOP - BOTTOM) * (axis.high - ns) / (axis.high - axis.low);

    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{}: median and interquartile range per run">"#,
        escape(&chart.benchmark)
    );
    // The time axis: a grid line and a label per tick, the unit at the top.
    for tick in axis.ticks() {
        let at = y(tick);
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
        axis.unit
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
            let upper = series.points.iter().map(|p| (x(p.run), y(p.q3_ns)));
            let lower = series.points.iter().rev().map(|p| (x(p.run), y(p.q1_ns)));
            let _ = write!(
                svg,
                r#"<polygon points="{}" fill="{colour}" fill-opacity="0.12" stroke="none"/>"#,
                coordinates(upper.chain(lower))
            );
            let _ = write!(
                svg,
                r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
                coordinates(series.points.iter().map(|p| (x(p.run), y(p.median_ns))))
            );
        }
        for point in &series.points {
            let (at, median) = (x(point.run), y(point.median_ns));
            let (q1, q3) = (y(point.q1_ns), y(point.q3_ns));
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
                    let (top, bottom, side) = (y(high), y(low), at + 4.0);
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
            let _ = write!(
                svg,
                r#"<line x1="{at:.1}" x2="{at:.1}" y1="{q1:.1}" y2="{q3:.1}" stroke="{colour}" stroke-width="1.5"/><circle cx="{at:.1}" cy="{median:.1}" r="3.5" fill="{fill}"><title>{}, {}: median {} (interquartile {} to {}){spread}; {mark}: {}{simulated}</title></circle>"#,
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
                    q3 - 4.0
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
    unit: &'static str,
    scale: f64,
}

impl Axis {
    /// An axis holding `low..=high` (ns) with a margin, on steps of 1, 2 or 5 times a power of
    /// ten; a single value gets a range around it.
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
        let (unit, scale) = match high {
            h if h < 1e3 => ("ns", 1.0),
            h if h < 1e6 => ("µs", 1e3),
            h if h < 1e9 => ("ms", 1e6),
            _ => ("s", 1e9),
        };
        Axis {
            low: lower.max(0.0),
            high: upper,
            step,
            unit,
            scale,
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
        assert_eq!(axis.unit, "ms");
        assert!(axis.low <= 21.3e6 && axis.high >= 24.9e6);
        let labels: Vec<String> = axis.ticks().map(|t| axis.label(t)).collect();
        assert_eq!(labels, ["20", "21", "22", "23", "24", "25", "26"]);
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
