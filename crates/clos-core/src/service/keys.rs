//! Keys: each tenant's objects drawn by Zipf popularity and hashed into its partitions
//! (Pisces §4, seed 004 lines 8094-8100: YCSB's "Zipf-distributed key-value request workload
//! (alpha = 0.99) over a fully cached data set of 100,000 1kB objects").
//!
//! Object of popularity rank k (1-based) is asked for with probability `k^-alpha / H`, `H` the
//! sum over all ranks. Which object holds rank k, and so which partition a request goes to, is
//! a hash of (tenant, phase, k): every tenant has its own hot objects, spread over its
//! partitions as a key-hashing store spreads them. A demand shift (`service.shift`, §4.3:
//! "a different, equally skewed distribution") moves to phase 1, whose hash is another, and the
//! next shift back to phase 0.

use crate::rng::{mix64, unit, Stream};

/// The popularity of ranks 1..=n and the hash of ranks to partitions.
#[derive(Clone, Debug)]
pub struct Keys {
    /// `cdf[k]`: probability of ranks 1..=k+1.
    cdf: Vec<f64>,
    partitions: u32,
    salt: u64,
}

impl Keys {
    /// Zipf(alpha) over `objects` ranks, hashed into `partitions` partitions.
    pub fn new(objects: u32, alpha: f64, partitions: u32, seed: u64) -> Keys {
        let mut cdf = Vec::with_capacity(objects as usize);
        let mut sum = 0.0;
        for k in 1..=objects {
            sum += (k as f64).powf(-alpha);
            cdf.push(sum);
        }
        for c in &mut cdf {
            *c /= sum;
        }
        Keys { cdf, partitions, salt: mix64(seed ^ 0x6b65_7973) }
    }

    /// Probability of rank `k` (0-based).
    pub fn probability(&self, k: usize) -> f64 {
        self.cdf[k] - if k == 0 { 0.0 } else { self.cdf[k - 1] }
    }

    /// A rank drawn by popularity (0-based).
    pub fn draw(&self, rng: &mut Stream) -> usize {
        let u = unit(rng);
        self.cdf.partition_point(|&c| c <= u).min(self.cdf.len() - 1)
    }

    /// The partition holding rank `k` of `tenant`'s objects in `phase` (0 or 1).
    pub fn partition(&self, tenant: usize, phase: u32, k: usize) -> usize {
        let h = mix64(self.salt ^ (tenant as u64) << 40 ^ (phase as u64 & 1) << 36 ^ k as u64);
        (h % self.partitions as u64) as usize
    }

    /// Each partition's share of `tenant`'s demand in phase 0 (what placement is told).
    pub fn partition_shares(&self, tenant: usize) -> Vec<f64> {
        let mut shares = vec![0.0; self.partitions as usize];
        for k in 0..self.cdf.len() {
            shares[self.partition(tenant, 0, k)] += self.probability(k);
        }
        shares
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_xoshiro::rand_core::SeedableRng;

    /// By hand: Zipf(1) over 4 ranks has H = 1 + 1/2 + 1/3 + 1/4 = 25/12, so rank 1 is asked
    /// for 12/25 = 0.48 of the time and rank 4 3/25 = 0.12. 100,000 draws land within
    /// 4 standard deviations (sqrt(p(1-p)/n) <= 0.0016) of those.
    #[test]
    fn draws_follow_the_zipf_probabilities() {
        let keys = Keys::new(4, 1.0, 2, 1);
        assert!((keys.probability(0) - 0.48).abs() < 1e-12);
        assert!((keys.probability(3) - 0.12).abs() < 1e-12);
        let mut rng = Stream::seed_from_u64(7);
        let mut count = [0u32; 4];
        for _ in 0..100_000 {
            count[keys.draw(&mut rng)] += 1;
        }
        let p = [0.48, 0.24, 0.16, 0.12];
        for k in 0..4 {
            assert!((count[k] as f64 / 1e5 - p[k]).abs() < 4.0 * 0.0016, "rank {k}: {count:?}");
        }
        let shares = keys.partition_shares(0);
        assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    /// A shift rehashes: phase 1 puts ranks in other partitions than phase 0 for most ranks,
    /// and tenants differ from each other.
    #[test]
    fn phases_and_tenants_hash_differently() {
        let keys = Keys::new(1000, 0.99, 32, 1);
        let moved = (0..1000).filter(|&k| keys.partition(0, 0, k) != keys.partition(0, 1, k)).count();
        let other = (0..1000).filter(|&k| keys.partition(0, 0, k) != keys.partition(1, 0, k)).count();
        // Independent hashes agree with probability 1/32: about 969 of 1,000 differ.
        assert!(moved > 900 && other > 900, "moved {moved}, other {other}");
        assert_eq!(keys.partition(0, 2, 5), keys.partition(0, 0, 5), "phase 2 is phase 0 again");
    }
}
