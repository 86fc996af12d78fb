//! A GPU's roofline as inline SVG, both axes logarithmic: arithmetic intensity (FLOP per byte)
//! across, TFLOP/s up; the memory roof rising at the card's bandwidth until it meets each
//! precision's compute roof, and each kernel a point under its precision's roof.

use super::html::escape;
use crate::roofline::Roofline;
use std::fmt::Write;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 110.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 48.0;

/// The roofs drawn, in order, with their colours (Okabe and Ito's palette).
const ROOFS: [(&str, &str); 5] = [
    ("f32", "#0072b2"),
    ("tf32", "#009e73"),
    ("f16", "#cc79a7"),
    ("bf16", "#d55e00"),
    ("fp8", "#e69f00"),
];

/// The colour of `precision`'s roof and points.
fn colour(precision: &str) -> &'static str {
    ROOFS
        .iter()
        .find(|(p, _)| *p == precision)
        .map_or("#444444", |(_, c)| c)
}

/// Logarithmic axes from `10^low` to `10^high` decades, across and up.
struct Axes {
    x: (i32, i32),
    y: (i32, i32),
}

impl Axes {
    fn x(&self, intensity: f64) -> f64 {
        let (low, high) = (f64::from(self.x.0), f64::from(self.x.1));
        LEFT + (WIDTH - LEFT - RIGHT) * (intensity.log10() - low) / (high - low)
    }

    fn y(&self, tflops: f64) -> f64 {
        let (low, high) = (f64::from(self.y.0), f64::from(self.y.1));
        TOP + (HEIGHT - TOP - BOTTOM) * (high - tflops.log10()) / (high - low)
    }
}

/// `10^k` as an axis label: `0.01`, `1`, `1000`.
fn decade(k: i32) -> String {
    match k {
        k if k < 0 => format!("{:.*}", k.unsigned_abs() as usize, 10f64.powi(k)),
        k => format!("{}", 10u64.pow(k.unsigned_abs())),
    }
}

/// The roofline of one GPU.
pub fn roofline(roofline: &Roofline) -> String {
    let spec = &roofline.spec;
    // Precisions of one rate share a roof (FP16 and BF16 everywhere): one line, both named,
    // in the last one's colour.
    let mut roofs: Vec<(String, &str, f64)> = Vec::new();
    for (precision, tflops) in (ROOFS.iter()).filter_map(|(p, _)| Some((*p, *spec.tflops.get(*p)?)))
    {
        match roofs.iter_mut().find(|(_, _, t)| *t == tflops) {
            Some((names, last, _)) => {
                *names = format!("{names}, {precision}");
                *last = precision;
            }
            None if tflops > 0.0 => roofs.push((precision.to_owned(), precision, tflops)),
            None => {}
        }
    }
    let highest = roofs.iter().map(|(_, _, t)| *t).fold(0.0, f64::max);
    let lowest_point = (roofline.points.iter())
        .map(|k| k.tflops)
        .fold(f64::INFINITY, f64::min);
    let axes = Axes {
        x: (-2, 4),
        y: (
            lowest_point.min(highest.max(1.0)).log10().floor().min(-1.0) as i32,
            (highest.max(lowest_point) * 2.0).log10().ceil().max(1.0) as i32,
        ),
    };
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="roofline of {}">"#,
        escape(&roofline.gpu)
    );
    let (right, bottom) = (WIDTH - RIGHT, HEIGHT - BOTTOM);
    for k in axes.x.0..=axes.x.1 {
        let at = axes.x(10f64.powi(k));
        let _ = write!(
            svg,
            r##"<line x1="{at:.1}" x2="{at:.1}" y1="{TOP}" y2="{bottom}" stroke="#e4e4e4"/><text x="{at:.1}" y="{:.1}" text-anchor="middle" font-size="11" fill="#444">{}</text>"##,
            bottom + 16.0,
            decade(k)
        );
    }
    for k in axes.y.0..=axes.y.1 {
        let at = axes.y(10f64.powi(k));
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" x2="{right}" y1="{at:.1}" y2="{at:.1}" stroke="#e4e4e4"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11" fill="#444">{}</text>"##,
            LEFT - 6.0,
            at + 4.0,
            decade(k)
        );
    }
    let _ = write!(
        svg,
        r##"<line x1="{LEFT}" x2="{right}" y1="{bottom}" y2="{bottom}" stroke="#888"/><line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{bottom}" stroke="#888"/><text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11" fill="#444">arithmetic intensity, FLOP per byte of DRAM traffic</text><text x="4" y="{:.1}" font-size="11" fill="#444">TFLOP/s</text>"##,
        LEFT + (right - LEFT) / 2.0,
        HEIGHT - 8.0,
        TOP - 4.0
    );
    let x_high = 10f64.powi(axes.x.1);
    if let Some(gbps) = spec.memory_gbps {
        // The memory roof: bandwidth × intensity, up to the highest compute roof.
        let tbps = gbps / 1e3;
        let start = 10f64.powi(axes.x.0).max(10f64.powi(axes.y.0) / tbps);
        let end = if highest > 0.0 {
            (highest / tbps).min(x_high)
        } else {
            x_high
        };
        // Its label along it, at an intensity of 1.
        let (x0, y0, x1, y1) = (
            axes.x(start),
            axes.y(tbps * start),
            axes.x(end),
            axes.y(tbps * end),
        );
        let angle = (y1 - y0).atan2(x1 - x0).to_degrees();
        let (lx, ly) = (axes.x(1.0), axes.y(tbps) - 6.0);
        let _ = write!(
            svg,
            r##"<line class="roof memory" x1="{x0:.1}" y1="{y0:.1}" x2="{x1:.1}" y2="{y1:.1}" stroke="#222" stroke-width="2"><title>memory: {gbps:.0} GB/s</title></line><text x="{lx:.1}" y="{ly:.1}" font-size="11" fill="#222" transform="rotate({angle:.1} {lx:.1} {ly:.1})">memory {gbps:.0} GB/s</text>"##
        );
    }
    for (names, precision, tflops) in &roofs {
        let ridge = spec
            .memory_gbps
            .map_or(10f64.powi(axes.x.0), |gbps| tflops * 1e3 / gbps);
        // On whole pixels: a 2-pixel line drawn crisp, not blended into three rows.
        let at = axes.y(*tflops).round();
        let colour = colour(precision);
        let _ = write!(
            svg,
            r##"<line class="roof" x1="{:.1}" x2="{right}" y1="{at:.1}" y2="{at:.1}" stroke="{colour}" stroke-width="2"><title>{names}: {tflops:.1} TFLOP/s</title></line><text x="{:.1}" y="{:.1}" font-size="11" fill="{colour}">{names} {tflops:.0}</text>"##,
            axes.x(ridge.max(10f64.powi(axes.x.0))),
            right + 4.0,
            at + 4.0
        );
    }
    for kernel in &roofline.points {
        let roof = spec
            .tflops
            .get(&kernel.precision)
            .map_or(String::new(), |t| {
                format!(
                    ", {:.1}% of the {} roof",
                    100.0 * kernel.tflops / t,
                    kernel.precision
                )
            });
        let _ = write!(
            svg,
            r##"<circle class="kernel" cx="{:.1}" cy="{:.1}" r="4.5" fill="{}" stroke="#000" stroke-width="0.6"><title>{}: {:.2} TFLOP/s at {:.3} FLOP/byte{roof}</title></circle>"##,
            axes.x(kernel.intensity),
            axes.y(kernel.tflops),
            colour(&kernel.precision),
            escape(&kernel.label),
            kernel.tflops,
            kernel.intensity
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decades_read_as_numbers() {
        assert_eq!(
            (-2..=3).map(decade).collect::<Vec<_>>(),
            ["0.01", "0.1", "1", "10", "100", "1000"]
        );
    }
}
