//! Closed loop: every server keeps a number of flows open and starts a new one the moment one
//! of its flows ends (VL2 §5.2: "each server draws its number of concurrent flows from the
//! Fig. 3 distribution and holds it; each new flow's size is drawn from the Fig. 2 distribution").
//!
//! A server's concurrency is drawn once, when it joins, and held for the run. Only the flows a
//! server *sends* count towards it. The generator lives in the simulator's `World`, which calls
//! [`ClosedLoop::replace`] when a flow delivers its last byte.

use super::cdf::Cdf;
use super::pattern::Destinations;
use super::FlowSpec;
use crate::rng::{below, Stream};
use crate::units::Time;

/// Concurrency per server: fixed, or drawn from a distribution.
pub enum Concurrency {
    Fixed(u32),
    Drawn(Cdf),
}

/// One closed-loop workload (a service may have its own).
pub struct Loop {
    pub service: u32,
    pub group: Vec<u32>,
    pub dest: Destinations,
    pub sizes: Cdf,
    pub stop: Time,
    /// For each host id, its position in `group`, or `u32::MAX`.
    position: Vec<u32>,
    /// Flows each group member keeps open.
    pub target: Vec<u32>,
    rng: Stream,
}

impl Loop {
    /// Draw each member's concurrency and its first flows, which start when it joins (`joins[i]`)
    /// plus a uniform jitter in `[0, jitter]`.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        service: u32,
        group: Vec<u32>,
        dest: Destinations,
        sizes: Cdf,
        concurrency: &Concurrency,
        joins: &[Time],
        jitter: Time,
        stop: Time,
        n_hosts: usize,
        mut rng: Stream,
    ) -> (Loop, Vec<FlowSpec>) {
        let mut position = vec![u32::MAX; n_hosts];
        for (i, &h) in group.iter().enumerate() {
            position[h as usize] = i as u32;
        }
        let target: Vec<u32> = group
            .iter()
            .map(|_| match concurrency {
                Concurrency::Fixed(n) => *n,
                Concurrency::Drawn(c) => c.sample(&mut rng) as u32,
            })
            .collect();
        let mut flows = Vec::new();
        for (i, &src) in group.iter().enumerate() {
            if joins[i] >= stop {
                continue;
            }
            for _ in 0..target[i] {
                let start = joins[i] + if jitter > 0 { below(&mut rng, jitter + 1) } else { 0 };
                let dst = dest.pick(i, &mut rng);
                flows.push(FlowSpec { src, dst, bytes: sizes.sample(&mut rng), start, service });
            }
        }
        (Loop { service, group, dest, sizes, stop, position, target, rng }, flows)
    }
}

/// Every closed loop of a workload; open-loop flows pass through untouched.
#[derive(Default)]
pub struct ClosedLoop {
    pub loops: Vec<Loop>,
}

impl ClosedLoop {
    /// The flow that replaces `done`, which finished at `now`, if `done` belongs to a closed
    /// loop that is still running.
    pub fn replace(&mut self, done: &FlowSpec, now: Time) -> Option<FlowSpec> {
        let l = self.loops.iter_mut().find(|l| l.service == done.service)?;
        let i = *l.position.get(done.src as usize)?;
        if i == u32::MAX || now >= l.stop {
            return None;
        }
        let dst = l.dest.pick(i as usize, &mut l.rng);
        Some(FlowSpec { src: done.src, dst, bytes: l.sizes.sample(&mut l.rng), start: now, service: l.service })
    }

    pub fn is_empty(&self) -> bool {
        self.loops.is_empty()
    }
}
