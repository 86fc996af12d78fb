//! Figure arithmetic every layer shares: the median of a sample and a ratio written as a
//! signed percentage. One home, so a bench run, a node's outliers and a fleet's verdict take
//! the middle of their figures the same way.

/// The median of `values` (sorted in place); `values` must not be empty.
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// A ratio as a signed percentage change: `+1.50%`.
pub fn pct(ratio: f64) -> String {
    format!("{:+.2}%", 100.0 * (ratio - 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_odd_count_is_its_middle_and_of_an_even_count_the_mean_of_two() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn a_ratio_reads_as_a_signed_percentage() {
        assert_eq!(pct(1.015), "+1.50%");
        assert_eq!(pct(0.9), "-10.00%");
    }
}
