//! Per-entity random streams derived from the scenario seed.
//!
//! Every consumer of randomness (the workload generator, each switch's hash salt, each spraying
//! switch) gets its own Xoshiro256++ stream, obtained by `jump()`ing a base generator: streams are
//! 2^128 draws apart, so they never overlap and results do not depend on the order in which
//! entities draw.

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

pub type Stream = Xoshiro256PlusPlus;

/// Hands out independent streams, one per purpose, in a fixed order.
pub struct Streams {
    next: Xoshiro256PlusPlus,
}

impl Streams {
    pub fn new(seed: u64) -> Self {
        Streams { next: Xoshiro256PlusPlus::seed_from_u64(seed) }
    }

    /// The next independent stream.
    pub fn stream(&mut self) -> Stream {
        let s = self.next.clone();
        self.next.jump();
        s
    }
}

/// Uniform integer in `0..n` (Lemire's multiply-shift; the tiny bias for huge `n` is irrelevant here).
#[inline]
pub fn below(rng: &mut Stream, n: u64) -> u64 {
    ((rng.next_u64() as u128 * n as u128) >> 64) as u64
}

/// Uniform float in [0, 1) with 53 random bits.
#[inline]
pub fn unit(rng: &mut Stream) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

pub fn next_u64(rng: &mut Stream) -> u64 {
    rng.next_u64()
}

/// Fisher-Yates shuffle.
pub fn shuffle<T>(rng: &mut Stream, v: &mut [T]) {
    for i in (1..v.len()).rev() {
        let j = below(rng, i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

/// A 64-bit finaliser (from SplitMix64): the hash used for flow keys and ECMP choices.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let mut a = Streams::new(7);
        let mut b = Streams::new(7);
        let (mut a0, mut a1) = (a.stream(), a.stream());
        let (mut b0, _) = (b.stream(), b.stream());
        let x: Vec<u64> = (0..4).map(|_| a0.next_u64()).collect();
        let y: Vec<u64> = (0..4).map(|_| b0.next_u64()).collect();
        let z: Vec<u64> = (0..4).map(|_| a1.next_u64()).collect();
        assert_eq!(x, y);
        assert_ne!(x, z);
    }

    #[test]
    fn below_is_roughly_uniform() {
        let mut s = Streams::new(1).stream();
        let mut counts = [0u32; 4];
        for _ in 0..40_000 {
            counts[below(&mut s, 4) as usize] += 1;
        }
        // Binomial(40000, 1/4): sd = 87; 5 sd = 433.
        for c in counts {
            assert!((c as i64 - 10_000).abs() < 433, "{counts:?}");
        }
    }
}
