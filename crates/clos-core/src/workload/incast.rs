//! Incast: in each round some of the hosts (a count, or a fraction of them) each request `bytes`
//! from several others at once, and all the responses start together (DRILL §4: "10% of them send simultaneous
//! requests for 10KB flows to 10% of the other hosts (all randomly selected)").
//!
//! Requests themselves are not simulated (they are a few bytes each way); a round is the
//! instant the responses start. Requesters and responders are drawn afresh every round.

use super::hosts::Share;
use super::FlowSpec;
use crate::error::{bad, Result};
use crate::rng::{below, Stream};
use crate::units::Time;

pub struct Incast {
    /// Hosts requesting in each round, of the workload's.
    pub requesters: Share,
    /// Hosts answering each requester, of the other hosts.
    pub fan_in: Share,
    /// The field that gave `fan_in` (`fan_in` or `responders`), for errors.
    pub fan_field: &'static str,
    pub bytes: u64,
    /// One round at `start` when absent.
    pub interval: Option<Time>,
}

impl Incast {
    /// (requesters per round, responders per requester) for a group of `m` hosts.
    pub fn sizes(&self, m: usize, path: &str) -> Result<(usize, usize)> {
        let requesters = self.requesters.of(m);
        if requesters > m {
            return Err(bad(format!("{path}.requesters"), format!("{requesters} requesters need more than the workload's {m} hosts")));
        }
        let fan = self.fan_in.of(m - 1);
        if fan >= m {
            return Err(bad(format!("{path}.{}", self.fan_field), format!("{fan} responders need more than the workload's {m} hosts")));
        }
        Ok((requesters, fan))
    }

    pub fn flows(&self, group: &[u32], (start, stop): (Time, Time), path: &str, rng: &mut Stream) -> Result<Vec<FlowSpec>> {
        let m = group.len();
        let (n_req, fan) = self.sizes(m, path)?;
        let mut flows = Vec::new();
        let mut order: Vec<usize> = (0..m).collect();
        let mut others: Vec<usize> = Vec::with_capacity(m);
        let mut t = start;
        while t < stop {
            choose(&mut order, n_req, rng);
            for &r in &order[..n_req] {
                others.clear();
                others.extend((0..m).filter(|&x| x != r));
                choose(&mut others, fan, rng);
                for &s in &others[..fan] {
                    flows.push(FlowSpec { src: group[s], dst: group[r], bytes: self.bytes, start: t, service: 0 });
                }
            }
            match self.interval {
                Some(i) => t += i,
                None => break,
            }
        }
        Ok(flows)
    }
}

/// Move a uniform random `k`-subset of `v` to its front (partial Fisher-Yates).
fn choose(v: &mut [usize], k: usize, rng: &mut Stream) {
    for i in 0..k {
        let j = i + below(rng, (v.len() - i) as u64) as usize;
        v.swap(i, j);
    }
}
