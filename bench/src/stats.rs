//! Medians, percentiles and ratios of samples.

/// The summary of one set of samples (any unit; the caller knows which).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// How many samples.
    pub n: usize,
    /// The median.
    pub p50: f64,
    /// The 99th percentile (nearest rank).
    pub p99: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
}

/// The nearest-rank percentile `q` (0..=100) of sorted samples; `None` when empty.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    // Nearest rank: the smallest sample with at least q% of the samples at or below it.
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

/// Summarises samples; `None` when there are none. NaNs sort last and so never hide a median.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(Summary {
        n: sorted.len(),
        p50: median_sorted(&sorted)?,
        p99: percentile(&sorted, 99.0)?,
        min: *sorted.first()?,
        max: *sorted.last()?,
    })
}

/// The median of sorted samples (the mean of the middle two for an even count).
fn median_sorted(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => sorted.get(n / 2).copied(),
        _ => Some((sorted.get(n / 2 - 1)? + sorted.get(n / 2)?) / 2.0),
    }
}

/// `a / b`, or `None` when `b` is zero or either is missing.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// The median over rounds of `a[i] / b[i]`, taking only the rounds both have (and where
/// `b[i]` is not zero); `None` when there are none. With contenders taking turns inside each
/// round, a slow spell of the machine that lasts a round slows both sides of its ratio alike,
/// where it moves a ratio of two medians as far as it moves either median.
pub fn paired_ratio(a: &[Option<f64>], b: &[Option<f64>]) -> Option<f64> {
    let mut ratios: Vec<f64> = a.iter().zip(b).filter_map(|(a, b)| ratio(*a, *b)).collect();
    ratios.sort_by(f64::total_cmp);
    median_sorted(&ratios)
}

#[cfg(test)]
// The samples here are small integers and halves, exact in binary floating point.
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        let s = summarize(&[5.0, 1.0, 3.0]).expect("summary");
        assert_eq!((s.n, s.p50, s.min, s.max), (3, 3.0, 1.0, 5.0));
        let s = summarize(&[4.0, 1.0, 3.0, 2.0]).expect("summary");
        assert_eq!(s.p50, 2.5);
        assert!(summarize(&[]).is_none());
    }

    #[test]
    fn p99_is_the_nearest_rank() {
        let samples: Vec<f64> = (1..=1000).map(f64::from).collect();
        let s = summarize(&samples).expect("summary");
        assert_eq!(s.p99, 990.0);
        // With fewer than 100 samples p99 is the largest one.
        let few: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(summarize(&few).expect("summary").p99, 10.0);
        assert_eq!(percentile(&[7.0], 0.0), Some(7.0));
    }

    #[test]
    fn ratio_refuses_a_zero_or_missing_baseline() {
        assert_eq!(ratio(Some(3.0), Some(2.0)), Some(1.5));
        assert_eq!(ratio(Some(3.0), Some(0.0)), None);
        assert_eq!(ratio(None, Some(2.0)), None);
    }

    #[test]
    fn paired_ratio_pairs_rounds_and_skips_the_missing() {
        // The rounds' own ratios are 0.75, 1.4 and 0.83; the medians' ratio would be 28/20.
        let a = [Some(30.0), Some(28.0), Some(10.0)];
        let b = [Some(40.0), Some(20.0), Some(12.0)];
        assert_eq!(paired_ratio(&a, &b), Some(10.0 / 12.0));
        // A round either side lacks (or with a zero baseline) is left out, not misaligned.
        let a = [Some(5.0), None, Some(30.0), Some(9.0)];
        let b = [Some(10.0), Some(20.0), Some(40.0), Some(0.0)];
        assert_eq!(paired_ratio(&a, &b), Some(0.625));
        assert_eq!(paired_ratio(&[None], &[Some(1.0)]), None);
    }
}
