//! Incast: in each round some of the hosts (a count, or a fraction of them) each request `bytes`
//! from several others at once, and all the responses start together (DRILL §4: "10% of them send simultaneous
//! requests for 10KB flows to 10% of the other hosts (all randomly selected)").
//!
//! By default requests are not simulated: a round is the instant the responses start. With
//! `request` each request is a flow of its own from the requester to the responder, started at
//! the round's instant, and its response starts when the request has arrived: a requester's
//! requests leave one after another through its NIC and cross the fabric, so the responses
//! start spread as real ones do, and a lost request delays its response by the request's
//! recovery. Requesters and responders are drawn afresh every round.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::hosts::Share;
use super::FlowSpec;
use crate::error::{bad, Result};
use crate::rng::{below, Stream};
use crate::units::Time;

/// How a workload's flows use connections (`connections`, for incast and flows workloads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Connections {
    /// A new connection for every flow (each response and request).
    #[default]
    Fresh,
    /// One connection per requester and responder, kept across rounds: a response continues its
    /// connection's congestion state, restarted after idle as Linux does
    /// (`Sender::resume`), and waits for the connection's previous response to arrive.
    Persistent,
}

/// `(previous, next)` for each flow that continues the connection of an earlier one: flows of
/// the same source and destination, in the order given.
pub fn connections(flows: impl Iterator<Item = (u32, u32, u32)>) -> Vec<(u32, u32)> {
    let mut last = std::collections::HashMap::new();
    flows.filter_map(|(id, src, dst)| last.insert((src, dst), id).map(|prev| (prev, id))).collect()
}

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
    /// Bytes of each simulated request (none: requests are not simulated).
    pub request: Option<u64>,
}

/// An incast's flows: the responses, and with simulated requests, each request with the index
/// in `responses` of the response it starts.
pub struct Rounds {
    pub responses: Vec<FlowSpec>,
    pub requests: Vec<(FlowSpec, usize)>,
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

    pub fn flows(&self, group: &[u32], (start, stop): (Time, Time), path: &str, rng: &mut Stream) -> Result<Rounds> {
        let m = group.len();
        let (n_req, fan) = self.sizes(m, path)?;
        let mut flows = Vec::new();
        let mut requests = Vec::new();
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
                    if let Some(bytes) = self.request {
                        requests.push((FlowSpec { src: group[r], dst: group[s], bytes, start: t, service: 0 }, flows.len()));
                    }
                    flows.push(FlowSpec { src: group[s], dst: group[r], bytes: self.bytes, start: t, service: 0 });
                }
            }
            match self.interval {
                Some(i) => t += i,
                None => break,
            }
        }
        Ok(Rounds { responses: flows, requests })
    }
}

/// Move a uniform random `k`-subset of `v` to its front (partial Fisher-Yates).
fn choose(v: &mut [usize], k: usize, rng: &mut Stream) {
    for i in 0..k {
        let j = i + below(rng, (v.len() - i) as u64) as usize;
        v.swap(i, j);
    }
}
