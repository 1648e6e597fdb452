//! Open-loop Poisson arrivals sized to a target load (the generator of DCTCP, pFabric, CONGA and
//! DRILL evaluations; HPCC's `traffic_gen.py` is the common public version).
//!
//! Load is defined against host link capacity, as REPRODUCTION.md §4 asks: each sending host
//! starts flows as a Poisson process of rate λ = load · C / (8 · E[size]) flows per second, so
//! the payload it offers averages `load` of its link rate C. The process is memoryless, so
//! dropping a host's arrivals before it joins (a `ramp`) is the same as starting it then.
//! DRILL takes interarrival times from the Facebook traces (Roy et al. 2015), which are not
//! public as files; a Poisson process at the same load is the usual substitute.

use super::cdf::Cdf;
use super::pattern::Destinations;
use super::FlowSpec;
use crate::rng::{unit, Stream};
use crate::topology::Topology;
use crate::units::{Time, PS_PER_S};

/// Flows arriving in `[start, stop)` from every host of `group`, in time order.
pub fn arrivals(group: &[u32], dest: &Destinations, cdf: &Cdf, load: f64, topo: &Topology, (start, stop): (Time, Time), rng: &mut Stream) -> Vec<FlowSpec> {
    let mut flows = Vec::new();
    for (i, &src) in group.iter().enumerate() {
        let rate_bps = topo.ports[topo.port_start[src as usize] as usize].rate_bps as f64;
        let flows_per_ps = load * rate_bps / (8.0 * cdf.mean()) / PS_PER_S as f64;
        let mut t = start as f64;
        loop {
            // Exponential gap by inversion; 1 - u lies in (0, 1], so the log is finite.
            t += -(1.0 - unit(rng)).ln() / flows_per_ps;
            if t >= stop as f64 {
                break;
            }
            let dst = dest.pick(i, rng);
            flows.push(FlowSpec { src, dst, bytes: cdf.sample(rng), start: t as Time, service: 0 });
        }
    }
    flows.sort_by_key(|f| f.start);
    flows
}
