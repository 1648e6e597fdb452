//! Multiget reads (issue 37, item 3's second part): a read asks for several keys at once, the
//! client sends one request to every server holding some of them, and the read is done when the
//! last response has arrived: partition-aggregate fan-out, whose responses converge on the
//! client's link at once (incast). The mix is Eiger's Facebook TAO workload (seed 004 lines
//! 4055-4068, Eiger's Table 3: keys per read 1, 16 and 128 at the 50th, 90th and 99th
//! percentiles; values of 16 B, 32 B and 4 KB at the same percentiles). Its columns per key
//! (1/2/128) are not modelled: a key's value is one value.
//!
//! Ours where the seed gives only those percentiles: between them a quantity is interpolated
//! log-linearly in the percentile (a straight line on a log axis, as such CDFs are drawn), at
//! or below the 50th it is the 50th's value and above the 99th the 99th's; it is rounded to a
//! whole number. 4 KB is 4,096 bytes.

use crate::rng::{unit, Stream};

/// A quantity drawn by the log-linear interpolation of its (percentile, value) points.
#[derive(Clone, Debug)]
pub struct Quantiles {
    points: Vec<(f64, f64)>,
}

impl Quantiles {
    /// Points in increasing percentile (as fractions) and value, all values >= 1.
    pub fn new(points: &[(f64, f64)]) -> Quantiles {
        Quantiles { points: points.to_vec() }
    }

    /// TAO's keys per read: 1 / 16 / 128 at p50 / p90 / p99.
    pub fn keys_per_read() -> Quantiles {
        Quantiles::new(&[(0.0, 1.0), (0.5, 1.0), (0.9, 16.0), (0.99, 128.0), (1.0, 128.0)])
    }

    /// TAO's value sizes: 16 B / 32 B / 4 KB at p50 / p90 / p99.
    pub fn value_bytes() -> Quantiles {
        Quantiles::new(&[(0.0, 16.0), (0.5, 16.0), (0.9, 32.0), (0.99, 4096.0), (1.0, 4096.0)])
    }

    /// The value at `u` in [0, 1].
    pub fn at(&self, u: f64) -> u64 {
        let i = self.points.partition_point(|&(p, _)| p < u).clamp(1, self.points.len() - 1);
        let ((p0, v0), (p1, v1)) = (self.points[i - 1], self.points[i]);
        let f = if p1 > p0 { ((u - p0) / (p1 - p0)).clamp(0.0, 1.0) } else { 1.0 };
        (v0.ln() + f * (v1.ln() - v0.ln())).exp().round().max(1.0) as u64
    }

    pub fn draw(&self, rng: &mut Stream) -> u64 {
        self.at(unit(rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_xoshiro::rand_core::SeedableRng;

    /// The points themselves come back, and halfway between p50 and p90 (u = 0.7) the keys are
    /// the geometric mean of 1 and 16, 4; draws have the percentiles they were built from
    /// (nearest rank over 100,000: within one of 1, 16 and 128, the interpolation's slope there).
    #[test]
    fn the_tao_mix_has_its_percentiles() {
        let k = Quantiles::keys_per_read();
        assert_eq!((k.at(0.1), k.at(0.5), k.at(0.7), k.at(0.9), k.at(0.99), k.at(1.0)), (1, 1, 4, 16, 128, 128));
        let v = Quantiles::value_bytes();
        assert_eq!((v.at(0.5), v.at(0.9), v.at(0.99)), (16, 32, 4096));
        let mut rng = Stream::seed_from_u64(3);
        let mut draws: Vec<u64> = (0..100_000).map(|_| k.draw(&mut rng)).collect();
        draws.sort_unstable();
        let p = |q: f64| draws[(q * draws.len() as f64) as usize - 1];
        assert_eq!(p(0.5), 1);
        assert!((15..=17).contains(&p(0.9)), "p90 {}", p(0.9));
        assert!((127..=128).contains(&p(0.99)), "p99 {}", p(0.99));
    }
}
