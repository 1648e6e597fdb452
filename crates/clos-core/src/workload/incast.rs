//! Incast: in each round a fraction of the hosts each request `bytes` from several others at
//! once, and all the responses start together (DRILL §4: "10% of them send simultaneous
//! requests for 10KB flows to 10% of the other hosts (all randomly selected)").
//!
//! Requests themselves are not simulated (they are a few bytes each way); a round is the
//! instant the responses start. Requesters and responders are drawn afresh every round.

use super::FlowSpec;
use crate::error::{bad, Result};
use crate::rng::{below, Stream};
use crate::units::Time;

/// How many hosts answer each requester.
#[derive(Clone, Copy, Debug)]
pub enum FanIn {
    /// A fraction of the other hosts, rounded, at least 1.
    Fraction(f64),
    Hosts(u32),
}

pub struct Incast {
    pub requesters: f64,
    pub fan_in: FanIn,
    pub bytes: u64,
    /// One round at `start` when absent.
    pub interval: Option<Time>,
}

impl Incast {
    /// (requesters per round, responders per requester) for a group of `m` hosts.
    pub fn sizes(&self, m: usize, path: &str) -> Result<(usize, usize)> {
        let requesters = ((self.requesters * m as f64).round() as usize).max(1);
        let fan = match self.fan_in {
            FanIn::Fraction(f) => ((f * (m - 1) as f64).round() as usize).max(1),
            FanIn::Hosts(n) if n as usize >= m => {
                return Err(bad(format!("{path}.fan_in"), format!("{n} responders need more than the workload's {m} hosts")));
            }
            FanIn::Hosts(n) => n as usize,
        };
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
