//! Periodic fixed-size flows: DRILL Table 1's "50 KB mice every 100 ms" beside its elephants.
//!
//! Each host sends one flow every `interval` to a destination drawn by the pattern. DRILL does
//! not say how the hosts' mice line up; we give each host a uniformly random phase, so mice do
//! not all leave at the same instant (which would be an incast, measured separately).

use super::pattern::Destinations;
use super::FlowSpec;
use crate::rng::{below, Stream};
use crate::units::Time;

pub fn flows(group: &[u32], dest: &Destinations, bytes: u64, interval: Time, (start, stop): (Time, Time), rng: &mut Stream) -> Vec<FlowSpec> {
    let mut flows = Vec::new();
    for (i, &src) in group.iter().enumerate() {
        let mut t = start + below(rng, interval);
        while t < stop {
            let dst = dest.pick(i, rng);
            flows.push(FlowSpec { src, dst, bytes, start: t, service: 0 });
            t += interval;
        }
    }
    flows.sort_by_key(|f| f.start);
    flows
}
