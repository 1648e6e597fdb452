//! Shared-buffer switches with dynamic thresholds (`[switch] pool`, `alpha`).
//!
//! Datacenter ToRs built on merchant silicon keep one packet memory per switch (or per pipeline)
//! and let each output queue take from it while it is shorter than a threshold proportional to
//! what is still free: a queue of q bytes admits a packet of w bytes while
//! `q + w <= alpha * (pool - used)` and `used + w <= pool`, where `used` is every queue of the
//! switch together (Choudhury and Hahne's dynamic threshold, IEEE/ACM ToN 1998). With one
//! congested queue it settles at `alpha / (1 + alpha)` of the pool; with n, each at
//! `alpha / (1 + n * alpha)`, so a burst into one port (an incast) can take most of the memory
//! while many busy ports keep room for each other. The static per-port `buffer` stays a cap on
//! every queue as well.
//!
//! The default alpha, 2, lets one congested queue take two thirds of the pool, which is what a
//! Trident 3-class ToR's documentation states for its default (Extreme SLX 9150: "it can take up
//! to 66.67% of the shared pool"); the DT paper's own examples use alpha = 1 (half the pool).
//!
//! The static check runs first, in the queue's own line (`Ports::enqueue`): a port of a pooled
//! switch has a static limit of 0, so every enqueue there falls through to this module, while a
//! switch without a pool pays nothing for it.

pub struct SharedBuffers {
    /// Bytes of the pool, per switch.
    pool: u64,
    alpha: f64,
    /// The static cap every queue keeps (`switch.buffer`).
    cap: u64,
    /// Per port: the first port of its switch and one past the last; (0, 0) for host ports,
    /// which are not pooled.
    switch_ports: Vec<(u32, u32)>,
}

impl SharedBuffers {
    pub fn new(pool: u64, alpha: f64, cap: u64, switch_ports: Vec<(u32, u32)>) -> SharedBuffers {
        SharedBuffers { pool, alpha, cap, switch_ports }
    }

    /// Whether `port`, holding `backlog` bytes, admits `wire` more; `backlog_of(p)` is any
    /// port's backlog at the same instant.
    pub fn admits(&self, port: u32, backlog: u64, wire: u64, backlog_of: impl Fn(u32) -> u64) -> bool {
        let (first, end) = self.switch_ports[port as usize];
        if first == end {
            return false;
        }
        let used: u64 = (first..end).map(backlog_of).sum();
        let free = self.pool.saturating_sub(used);
        backlog + wire <= self.cap && used + wire <= self.pool && (backlog + wire) as f64 <= self.alpha * free as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand, a pool of 100 KB, alpha 2, four ports. One queue alone may grow while
    /// q + w <= 2 (100,000 - q): with 1,000 B packets up to q = 66,333 B, two thirds of the pool. Two queues of 30 KB each
    /// leave 40 KB free, a threshold of 80 KB: a third may reach it only while the pool lasts.
    #[test]
    fn one_queue_takes_alpha_over_one_plus_alpha_of_the_pool() {
        let b = SharedBuffers::new(100_000, 2.0, u64::MAX, vec![(0, 4); 4]);
        let alone = |q: u64| move |p: u32| if p == 0 { q } else { 0 };
        assert!(b.admits(0, 65_000, 1_000, alone(65_000)), "66,000 <= 2 x 35,000");
        assert!(b.admits(0, 66_000, 1_000, alone(66_000)), "67,000 <= 2 x 34,000");
        assert!(!b.admits(0, 66_500, 1_000, alone(66_500)), "67,500 > 2 x 33,500");
        let two = |p: u32| if p < 2 { 30_000 } else { 0 };
        assert!(b.admits(2, 0, 1_500, two));
        let three = |p: u32| [30_000, 30_000, 39_000, 0][p as usize];
        assert!(!b.admits(2, 39_000, 1_500, three), "the pool's 100 KB would be exceeded");
        let capped = SharedBuffers::new(100_000, 2.0, 10_000, vec![(0, 4); 4]);
        assert!(!capped.admits(0, 9_000, 1_500, alone(9_000)), "the static cap still holds");
    }
}
