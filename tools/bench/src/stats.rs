// SPDX-License-Identifier: GPL-2.0

//! Medians and percentiles.

/// Returns the median of `sorted` (the mean of the middle two for an even count), or NaN
/// if it is empty.
pub fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Returns the median of `values`, or NaN if there are none.
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().collect();
    v.sort_by(f64::total_cmp);
    median_sorted(&v)
}

/// Returns the `p`th percentile of `sorted` by the nearest rank (the smallest value with
/// at least `p`% of the values at or below it), or NaN if it is empty.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    // CAST: a rank between 1 and `len`, far inside `usize`; the float is non-negative.
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_count_is_mean_of_middle_two() {
        assert_eq!(median([4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn median_of_odd_count_is_middle_value() {
        assert_eq!(median([5.0, 1.0, 3.0]), 3.0);
    }

    #[test]
    fn p99_of_hundred_values_is_the_99th() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile_sorted(&v, 99.0), 99.0);
    }

    #[test]
    fn p99_of_few_values_is_the_largest() {
        assert_eq!(percentile_sorted(&[1.0, 2.0, 3.0], 99.0), 3.0);
    }
}
