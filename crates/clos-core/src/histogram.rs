//! A log-bucketed histogram for values recorded in the event loop (queueing delays in ps).
//!
//! Recording must cost a few instructions and no allocation, and percentiles of delays spanning
//! nanoseconds to milliseconds must stay within a few percent, so buckets are log-linear (as in
//! HdrHistogram): values below 8 are exact, and every power of two above is split into 8 equal
//! sub-buckets. A reported quantile is its bucket's midpoint, at most 1/16 (6.25%) from any value
//! in the bucket.

/// Sub-buckets per power of two (a power of two itself).
const SUB: u32 = 8;
const SUB_BITS: u32 = SUB.trailing_zeros();
/// Buckets for every u64.
pub const BUCKETS: usize = ((64 - SUB_BITS + 1) * SUB) as usize;

/// Without a branch: values below `SUB` (a queueing delay of zero, an empty queue) and above
/// are mixed in no order a predictor could learn. Above, `v >> shift` is `SUB` plus the
/// sub-bucket, which makes the `+ 1` of `(shift + 1) * SUB`; below, the shift is 0 and the
/// bucket is the value.
#[inline]
pub fn bucket(v: u64) -> usize {
    let top = 63 - (v | 1).leading_zeros(); // position of the top bit
    let shift = top.saturating_sub(SUB_BITS);
    (shift * SUB + (v >> shift) as u32) as usize
}

/// Smallest value and width of bucket `i`.
pub fn bucket_range(i: usize) -> (u64, u64) {
    let i = i as u32;
    if i < SUB {
        return (i as u64, 1);
    }
    let shift = i / SUB - 1;
    (((SUB + i % SUB) as u64) << shift, 1u64 << shift)
}

/// Counts per bucket of one or more histograms (one per class, e.g. link tier), each in one
/// row with its maximum after its counts, so that recording reads and checks one row.
#[derive(Clone, Debug)]
pub struct Histograms {
    rows: Vec<[u64; BUCKETS + 1]>,
}

impl Histograms {
    pub fn new(classes: usize) -> Histograms {
        Histograms { rows: vec![[0; BUCKETS + 1]; classes] }
    }

    #[inline]
    pub fn record(&mut self, class: usize, v: u64) {
        let row = &mut self.rows[class];
        // `bucket` is below BUCKETS for every u64 (a test); the `min` says so to the compiler.
        row[bucket(v).min(BUCKETS - 1)] += 1;
        if v > row[BUCKETS] {
            row[BUCKETS] = v;
        }
    }

    /// Add another's counts (and take the larger maximum).
    pub fn absorb(&mut self, other: &Histograms) {
        for (a, b) in self.rows.iter_mut().zip(&other.rows) {
            for (x, y) in a[..BUCKETS].iter_mut().zip(&b[..BUCKETS]) {
                *x += y;
            }
            a[BUCKETS] = a[BUCKETS].max(b[BUCKETS]);
        }
    }

    pub fn count(&self, class: usize) -> u64 {
        self.of(class).iter().sum()
    }

    pub fn max(&self, class: usize) -> u64 {
        self.rows[class][BUCKETS]
    }

    fn of(&self, class: usize) -> &[u64] {
        &self.rows[class][..BUCKETS]
    }

    /// The `p`-th percentile (nearest rank) as its bucket's midpoint, capped at the maximum seen
    /// (which is exact: the 100th percentile is the maximum).
    pub fn percentile(&self, class: usize, p: f64) -> Option<u64> {
        let (i, largest) = rank_bucket(self.of(class), p)?;
        if largest {
            return Some(self.max(class));
        }
        let (low, width) = bucket_range(i);
        Some((low + width / 2).min(self.max(class)))
    }
}

/// Index of the bucket holding the `p`-th percentile (nearest rank) of values counted per
/// bucket, and whether that rank is the largest value; None if there are no values.
pub fn rank_bucket(counts: &[u64], p: f64) -> Option<(usize, bool)> {
    let n: u64 = counts.iter().sum();
    if n == 0 {
        return None;
    }
    let rank = ((p / 100.0) * n as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    let i = counts.iter().position(|&c| {
        seen += c;
        seen >= rank.min(n)
    })?;
    Some((i, rank >= n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_cover_u64() {
        for i in 0..BUCKETS - 1 {
            let (low, width) = bucket_range(i);
            assert_eq!(bucket(low), i);
            assert_eq!(bucket(low + width - 1), i);
            assert_eq!(bucket_range(i + 1).0, low + width, "bucket {i}");
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn percentiles_are_within_the_stated_relative_error() {
        let mut h = Histograms::new(2);
        for v in 1..=100_000u64 {
            h.record(1, v * 1000);
        }
        assert_eq!(h.count(0), 0);
        assert_eq!(h.percentile(0, 50.0), None);
        for (p, exact) in [(50.0, 50_000_000.0), (99.0, 99_000_000.0), (99.9, 99_900_000.0)] {
            let got = h.percentile(1, p).unwrap() as f64;
            assert!((got - exact).abs() / exact <= 1.0 / 16.0, "p{p}: {got} vs {exact}");
        }
        assert_eq!(h.percentile(1, 100.0), Some(100_000_000));
    }
}
