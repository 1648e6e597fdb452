//! Hosts' timing noise (`[host] jitter`): the software between TCP and the NIC (the stack, its
//! softirqs, the driver) takes a variable time before the NIC can start a packet. A model that
//! keeps exact time lets flows whose packets reach a drop-tail port in step lock one another
//! out (Floyd and Jacobson, "On traffic phase effects in packet-switched gateways", 1992); the
//! Linux hosts of the kernel comparison answer an ACK after 6-20 us (10th-90th percentile) of
//! software, close to exponential above its least (docs/validation.md, "Beside the Linux
//! kernel").
//!
//! Each packet a host hands to its NIC waits an exponential time of mean `jitter` first. The
//! wait holds the NIC (its next start is no earlier than the end of the wait), so a host never
//! reorders its own packets and a NIC already busy for longer than the wait starts the packet
//! as before. Each host draws from its own stream, so its delays do not depend on other hosts'
//! events.

use super::World;
use crate::rng::{unit, Stream, Streams};
use crate::units::Time;

pub struct Jitter {
    /// The mean wait, picoseconds.
    mean: f64,
    /// One stream per host.
    streams: Vec<Stream>,
}

impl Jitter {
    /// `None` without `[host] jitter` (or with a zero mean).
    pub fn new(mean: Option<Time>, hosts: usize, seed: u64) -> Option<Box<Jitter>> {
        let mean = mean.filter(|&m| m > 0)?;
        let mut streams = Streams::new(seed ^ 0x4a49_5454_4552_4a49);
        Some(Box::new(Jitter { mean: mean as f64, streams: (0..hosts).map(|_| streams.stream()).collect() }))
    }

    /// The next wait of `host`'s software, picoseconds.
    fn draw(&mut self, host: u32) -> Time {
        let u = unit(&mut self.streams[host as usize]);
        (-self.mean * (1.0 - u).ln()).round() as Time
    }
}

impl World {
    /// Hold `host`'s NIC for its software's wait before it takes the next packet.
    #[cold]
    #[inline(never)]
    pub(super) fn host_software_wait(&mut self, host: u32, port: u32) {
        let Some(j) = self.jitter.as_deref_mut() else { return };
        let until = self.now + j.draw(host);
        self.ports.hold_until(port, until);
    }
}

#[cfg(test)]
mod tests {
    use super::Jitter;
    use crate::scenario::Scenario;
    use crate::sim::World;

    fn pair(jitter: &str) -> Scenario {
        Scenario::from_json(&format!(
            r#"{{"seed": 7, "topology": {{"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 2}},
                "host": {{{jitter}}}, "workload": {{"kind": "permutation", "bytes": 1000}}}}"#
        ))
        .unwrap()
    }

    /// By hand: two hosts send each other one segment at time 0, their NICs idle. Each flow's
    /// last byte arrives later by exactly its sender's first wait, the first draw of that
    /// host's stream; the run is the same again, and conserves its packets.
    #[test]
    fn a_lone_segment_arrives_later_by_its_hosts_first_wait() {
        let run = |s: &Scenario| {
            let mut w = World::new(s).unwrap();
            w.run();
            w.check_conservation().unwrap();
            (w.finished.clone(), w.flows.iter().map(|f| f.src).collect::<Vec<_>>(), w.events)
        };
        let (exact, srcs, _) = run(&pair(""));
        let jittered = pair(r#""jitter": "10us""#);
        let (late, _, events) = run(&jittered);
        let mut j = Jitter::new(Some(10_000_000), 2, 7).unwrap();
        let first: Vec<u64> = (0..2).map(|h| j.draw(h)).collect();
        for (f, &src) in srcs.iter().enumerate() {
            let wait = first[src as usize];
            assert!(wait > 0);
            assert_eq!(late[f].unwrap() - exact[f].unwrap(), wait, "flow {f}");
        }
        assert_eq!(run(&jittered).2, events, "deterministic");
    }

    /// The waits are exponential with the mean asked for: over 100,000 draws the mean is within
    /// 1% of 8 us (the standard error is 8 us / sqrt(100,000), 0.3%), and the share above the
    /// mean is e^-1 = 0.368 within 0.01.
    #[test]
    fn waits_are_exponential_with_the_mean_asked_for() {
        let mean = 8_000_000u64;
        let mut j = Jitter::new(Some(mean), 2, 1).expect("on");
        let draws: Vec<u64> = (0..100_000).map(|_| j.draw(1)).collect();
        let avg = draws.iter().sum::<u64>() as f64 / draws.len() as f64;
        assert!((avg / mean as f64 - 1.0).abs() < 0.01, "mean {avg}");
        let above = draws.iter().filter(|&&d| d > mean).count() as f64 / draws.len() as f64;
        assert!((above - (-1f64).exp()).abs() < 0.01, "above the mean {above}");
        assert!(Jitter::new(Some(0), 2, 1).is_none() && Jitter::new(None, 2, 1).is_none());
    }
}
