//! Replica selection (Pisces §3.3, "RS"; seed 004 lines 7966-8036, Table 2 eq. 14 at lines
//! 7807-7818): each request router keeps, for each tenant, one request window per storage node,
//! moves it FAST-TCP style from the latency it measures there, and splits the tenant's requests
//! across a partition's replicas in proportion to the windows of their nodes.
//!
//! What the seed says: "Each RR updates its per-node windows according to the FAST-TCP gradient
//! ascent equation ... approximated by request latency" (lines 8004-8007), and prints
//!
//! ```text
//! w(m+1) = (1 - alpha) w(m) + alpha (l_base / l_est)                        (lines 8007-8018)
//! ```
//!
//! with `l_base` "the desired average request latency", `l_est` an EWMA of measured latency and
//! alpha limiting the step (lines 8023-8026). That cannot be the whole formula: its fixed point is
//! `w = l_base / l_est <= 1`, a window of at most one request whatever the node's share, which
//! contradicts the next sentence ("the greater the local share, the larger the node's request
//! window will be", line 8026). FAST TCP's published update (Jin, Wei and Low, INFOCOM 2004) is
//!
//! ```text
//! w <- min(2 w, (1 - gamma) w + gamma (baseRTT / RTT x w + alpha))
//! ```
//!
//! so the seed's text has lost the factor `w` on the ratio (and FAST's additive `alpha`, the
//! number of packets the flow keeps queued). We implement FAST's form, in request terms:
//!
//! ```text
//! w <- min(2 w, (1 - step) w + step (l_base / l_est x w + queued))
//! ```
//!
//! - `step` is the seed's alpha (FAST's gamma), in (0, 1].
//! - `queued` is FAST's alpha: the fixed point is `w = queued x l_est / (l_est - l_base)`, i.e.
//!   the window at which `w x (l_est - l_base) / l_est = queued` requests wait at the node
//!   (Little's law: throughput `w / l_est` times queueing delay `l_est - l_base`). The window
//!   stops changing exactly when the latency is the base latency plus that queueing. A node with
//!   a larger local share serves the tenant faster, so the same queueing allows a larger window.
//! - `l_base` is FAST's baseRTT, the least latency measured at the node so far (ours: the seed's
//!   "desired average request latency" is not given a value anywhere).
//! - `l_est` is an EWMA of measured latencies with gain `ewma` (ours; the seed does not give it),
//!   started at the first sample.
//! - Windows update when the router calls [`ReplicaSelector::update`] (FAST: once per RTT); a node
//!   with no latency sample yet keeps its initial window.
//!
//! Splitting: a request for a partition whose replicas are on nodes `S` goes to node n with
//! probability `w_n / sum_{k in S} w_k` ([`ReplicaSelector::proportions`]); the caller draws the
//! uniform number from its own seeded stream, so selection stays deterministic.

use crate::error::{bad, Result};

/// The window update's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowParams {
    /// Step size in (0, 1]: the seed's alpha, FAST's gamma.
    pub step: f64,
    /// Requests the tenant aims to keep waiting at each node (> 0): FAST's alpha.
    pub queued: f64,
    /// Gain of the latency EWMA in (0, 1]: 1 uses the last sample alone.
    pub ewma: f64,
    /// Window of a node before any update (> 0), in requests.
    pub initial_window: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct NodeWindow {
    window: f64,
    /// Least latency measured (FAST's baseRTT), once a sample has arrived.
    base: Option<f64>,
    /// EWMA of measured latency, once a sample has arrived.
    estimate: Option<f64>,
}

/// One tenant's request windows at one router, one per storage node.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplicaSelector {
    params: WindowParams,
    nodes: Vec<NodeWindow>,
}

impl ReplicaSelector {
    /// Windows for `nodes` storage nodes, all at the initial window.
    pub fn new(nodes: usize, params: WindowParams) -> Result<Self> {
        if nodes == 0 {
            return Err(bad("pisces.nodes", "no storage nodes to select among"));
        }
        let unit = |x: f64| x.is_finite() && x > 0.0 && x <= 1.0;
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if !unit(params.step) {
            return Err(bad("pisces.replica_selection.step", format!("{} is not in (0, 1]", params.step)));
        }
        if !unit(params.ewma) {
            return Err(bad("pisces.replica_selection.ewma", format!("{} is not in (0, 1]", params.ewma)));
        }
        if !positive(params.queued) {
            return Err(bad("pisces.replica_selection.queued", format!("{} is not a positive request count", params.queued)));
        }
        if !positive(params.initial_window) {
            return Err(bad("pisces.replica_selection.initial_window", format!("{} is not a positive window", params.initial_window)));
        }
        let node = NodeWindow { window: params.initial_window, base: None, estimate: None };
        Ok(ReplicaSelector { params, nodes: vec![node; nodes] })
    }

    /// The window at `node`, in requests.
    pub fn window(&self, node: usize) -> Option<f64> {
        self.nodes.get(node).map(|n| n.window)
    }

    /// Record one request's measured latency at `node` (any positive unit, the same throughout).
    pub fn observe(&mut self, node: usize, latency: f64) -> Result<()> {
        if !(latency.is_finite() && latency > 0.0) {
            return Err(bad("pisces.replica_selection.latency", format!("{latency} is not a positive latency")));
        }
        let ewma = self.params.ewma;
        let n = self.node_mut(node)?;
        n.base = Some(n.base.map_or(latency, |b| b.min(latency)));
        n.estimate = Some(n.estimate.map_or(latency, |e| (1.0 - ewma) * e + ewma * latency));
        Ok(())
    }

    /// One window update at every node that has a latency sample (module doc).
    pub fn update(&mut self) {
        let WindowParams { step, queued, .. } = self.params;
        for n in &mut self.nodes {
            if let (Some(base), Some(est)) = (n.base, n.estimate) {
                let w = n.window;
                n.window = (2.0 * w).min((1.0 - step) * w + step * (base / est * w + queued));
            }
        }
    }

    /// The fraction of requests for a partition replicated on `replicas` that each replica gets:
    /// its node's window over the sum of the replicas' windows.
    pub fn proportions(&self, replicas: &[usize]) -> Result<Vec<f64>> {
        if replicas.is_empty() {
            return Err(bad("pisces.replicas", "a partition needs at least one replica"));
        }
        let windows = replicas.iter().map(|&r| self.window(r).ok_or_else(|| out_of_range(r, self.nodes.len())));
        let windows: Vec<f64> = windows.collect::<Result<_>>()?;
        let total: f64 = windows.iter().sum();
        Ok(windows.iter().map(|w| w / total).collect())
    }

    /// The replica (an index into `replicas`) for a request, given `u` uniform in [0, 1).
    pub fn choose(&self, replicas: &[usize], u: f64) -> Result<usize> {
        if !(0.0..1.0).contains(&u) {
            return Err(bad("pisces.replica_selection.u", format!("{u} is not in [0, 1)")));
        }
        let proportions = self.proportions(replicas)?;
        let mut cumulative = 0.0;
        for (i, p) in proportions.iter().enumerate() {
            cumulative += p;
            if u < cumulative {
                return Ok(i);
            }
        }
        // Rounding can leave the cumulative sum just under 1.
        Ok(replicas.len() - 1)
    }

    /// The request rate node `node`'s window sustains: `w / l_est` (Little's law), once a
    /// latency sample has arrived.
    pub fn rate(&self, node: usize) -> Option<f64> {
        let n = self.nodes.get(node)?;
        n.estimate.map(|e| n.window / e)
    }

    /// As [`ReplicaSelector::choose`], but in proportion to the rates the windows sustain,
    /// `w_n / l_est_n`, rather than to the windows. A window bounds the requests in flight at a
    /// node (FAST's window bounds the packets in flight), so what it admits there is the window
    /// over the latency: routing a node's share by its window alone would ignore that requests
    /// take longer where the queue is long. A replica without a latency sample yet is given the
    /// mean rate of the others (all equal when none has one).
    pub fn choose_by_rate(&self, replicas: &[usize], u: f64) -> Result<usize> {
        if !(0.0..1.0).contains(&u) {
            return Err(bad("pisces.replica_selection.u", format!("{u} is not in [0, 1)")));
        }
        if replicas.is_empty() {
            return Err(bad("pisces.replicas", "a partition needs at least one replica"));
        }
        if let Some(&r) = replicas.iter().find(|&&r| r >= self.nodes.len()) {
            return Err(out_of_range(r, self.nodes.len()));
        }
        let known: Vec<f64> = replicas.iter().filter_map(|&r| self.rate(r)).collect();
        let fill = if known.is_empty() { 1.0 } else { known.iter().sum::<f64>() / known.len() as f64 };
        let rates: Vec<f64> = replicas.iter().map(|&r| self.rate(r).unwrap_or(fill)).collect();
        let total: f64 = rates.iter().sum();
        let mut cumulative = 0.0;
        for (i, x) in rates.iter().enumerate() {
            cumulative += x / total;
            if u < cumulative {
                return Ok(i);
            }
        }
        Ok(replicas.len() - 1)
    }

    fn node_mut(&mut self, node: usize) -> Result<&mut NodeWindow> {
        let count = self.nodes.len();
        self.nodes.get_mut(node).ok_or_else(|| out_of_range(node, count))
    }
}

fn out_of_range(node: usize, count: usize) -> crate::Error {
    bad("pisces.replicas", format!("node {node} is not one of the {count} storage nodes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(initial_window: f64) -> WindowParams {
        WindowParams { step: 0.5, queued: 5.0, ewma: 0.5, initial_window }
    }

    #[test]
    fn one_update_step_by_hand() {
        // Window 10, base 1 ms, estimate 4 ms (samples 1 then 7: EWMA 0.5 -> 4):
        // 0.5 x 10 + 0.5 x (1/4 x 10 + 5) = 5 + 3.75 = 8.75.
        let mut rs = ReplicaSelector::new(1, params(10.0)).unwrap();
        rs.observe(0, 1.0).unwrap();
        rs.observe(0, 7.0).unwrap();
        rs.update();
        assert_eq!(rs.window(0), Some(8.75));
        // With no queueing (estimate = base) it grows by step x queued: 10 -> 12.5.
        let mut rs = ReplicaSelector::new(1, params(10.0)).unwrap();
        rs.observe(0, 1.0).unwrap();
        rs.update();
        assert_eq!(rs.window(0), Some(12.5));
    }

    #[test]
    fn choosing_by_rate_weighs_windows_by_latency() {
        // Windows 1 and 1 (initial); latencies 1 and 3: rates 1 and 1/3, so node 0 takes
        // 1 / (1 + 1/3) = 3/4 of the requests: u below 0.75 picks it. A node with no sample
        // takes the mean of the known rates: nodes 0 and 2 split (1 and 1) evenly.
        let mut rs = ReplicaSelector::new(3, params(1.0)).unwrap();
        rs.observe(0, 1.0).unwrap();
        rs.observe(1, 3.0).unwrap();
        assert_eq!(rs.rate(1), Some(1.0 / 3.0));
        assert_eq!(rs.choose_by_rate(&[0, 1], 0.74).unwrap(), 0);
        assert_eq!(rs.choose_by_rate(&[0, 1], 0.76).unwrap(), 1);
        assert_eq!(rs.choose_by_rate(&[0, 2], 0.49).unwrap(), 0);
        assert_eq!(rs.choose_by_rate(&[0, 2], 0.51).unwrap(), 1);
        assert!(rs.choose_by_rate(&[0, 3], 0.5).is_err());
        assert!(rs.choose_by_rate(&[0], 1.0).is_err());
    }

    #[test]
    fn growth_is_capped_at_doubling() {
        // Window 1, no queueing, step 1: (1 + 5) = 6 would be the target; capped at 2.
        let mut rs = ReplicaSelector::new(1, WindowParams { step: 1.0, ..params(1.0) }).unwrap();
        rs.observe(0, 1.0).unwrap();
        rs.update();
        assert_eq!(rs.window(0), Some(2.0));
    }

    #[test]
    fn the_window_stops_where_latency_is_base_plus_the_target_queueing() {
        // Base 1, estimate 2 (samples 1 then 3). Fixed point: w = 5 x 2 / (2 - 1) = 10, where
        // w x (2 - 1) / 2 = 5 requests wait. At 10 the update returns exactly 10:
        // 0.5 x 10 + 0.5 x (0.5 x 10 + 5) = 10.
        let mut rs = ReplicaSelector::new(2, params(10.0)).unwrap();
        rs.observe(0, 1.0).unwrap();
        rs.observe(0, 3.0).unwrap();
        rs.update();
        assert_eq!(rs.window(0), Some(10.0));
        // Node 1 has no sample yet: its window does not move.
        assert_eq!(rs.window(1), Some(10.0));
        // From window 1 it converges to 10: away from the doubling cap the error shrinks by
        // 1 - step x (1 - base/est) = 0.75 a step, so 200 steps leave < 1e-12 x the start.
        let mut rs = ReplicaSelector::new(1, params(1.0)).unwrap();
        rs.observe(0, 1.0).unwrap();
        rs.observe(0, 3.0).unwrap();
        for _ in 0..200 {
            rs.update();
        }
        assert!((rs.window(0).unwrap() - 10.0).abs() < 1e-9, "{:?}", rs.window(0));
    }

    #[test]
    fn requests_split_in_proportion_to_windows() {
        // Node 0 at 10 (base 1, est 2), node 1 grows to 12.5 (no queueing), node 2 stays at 10.
        let mut rs = ReplicaSelector::new(3, params(10.0)).unwrap();
        rs.observe(0, 1.0).unwrap();
        rs.observe(0, 3.0).unwrap();
        rs.observe(1, 1.0).unwrap();
        rs.update();
        let p = rs.proportions(&[0, 1]).unwrap();
        assert_eq!(p, vec![10.0 / 22.5, 12.5 / 22.5]);
        assert_eq!(rs.choose(&[0, 1], 0.44).unwrap(), 0);
        assert_eq!(rs.choose(&[0, 1], 0.45).unwrap(), 1);
        assert_eq!(rs.choose(&[2], 0.999).unwrap(), 0);
    }

    #[test]
    fn bad_input_is_an_error_naming_the_field() {
        let field = |r: Result<ReplicaSelector>| match r {
            Err(crate::Error::Scenario { field, .. }) => field,
            other => panic!("expected a scenario error, got {other:?}"),
        };
        assert_eq!(field(ReplicaSelector::new(0, params(1.0))), "pisces.nodes");
        assert_eq!(field(ReplicaSelector::new(1, WindowParams { step: 0.0, ..params(1.0) })), "pisces.replica_selection.step");
        assert_eq!(field(ReplicaSelector::new(1, WindowParams { ewma: 1.5, ..params(1.0) })), "pisces.replica_selection.ewma");
        assert_eq!(field(ReplicaSelector::new(1, WindowParams { queued: 0.0, ..params(1.0) })), "pisces.replica_selection.queued");
        assert_eq!(field(ReplicaSelector::new(1, params(0.0))), "pisces.replica_selection.initial_window");
        let mut rs = ReplicaSelector::new(2, params(1.0)).unwrap();
        assert!(rs.observe(2, 1.0).is_err());
        assert!(rs.observe(0, 0.0).is_err());
        assert!(rs.proportions(&[]).is_err());
        assert!(rs.proportions(&[5]).is_err());
        assert!(rs.choose(&[0], 1.0).is_err());
    }
}
