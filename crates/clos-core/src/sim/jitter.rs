//! Timing noise. Hosts' (`[host] jitter`): the software between TCP and the NIC (the stack, its
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
//!
//! Links' (`topology.link_jitter`): a software switch or NIC shaped by a token bucket (Linux's
//! tbf, as in the kernel comparison's testbed) sends each packet when its tokens allow, but the
//! timer and softirq that dequeue it run a little late, a different time for each packet. The
//! rate stays exact (a late packet's successor finds its tokens waiting and follows at once),
//! so the noise does not accumulate: each packet reaches the far end of its link an exponential
//! time of mean `link_jitter` after its exact arrival, never before the packet ahead of it. At the
//! kernel comparison's switch the gaps between departures of back-to-back packets spread over
//! 110-132 us (5th-95th percentile) around the 121 us a frame takes at 100 Mb/s
//! (docs/validation.md); the difference of two such delays spreads over about 4.6 means, so a
//! mean of 5 us. Where ports keep exact time, flows whose packets reach a full drop-tail port in
//! step lock one another out, as above; with the noise, which of them takes a freed slot varies
//! from slot to slot. Each port draws from its own stream.

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
        exponential(&mut self.streams[host as usize], self.mean)
    }
}

/// An exponential draw of `mean` picoseconds from `stream`.
fn exponential(stream: &mut Stream, mean: f64) -> Time {
    (-mean * (1.0 - unit(stream)).ln()).round() as Time
}

/// Links' timing noise: the mean delay, each port's stream, and the last arrival it scheduled
/// (the next may not overtake it).
pub struct LinkJitter {
    mean: f64,
    streams: Vec<Stream>,
    last: Vec<Time>,
}

impl LinkJitter {
    /// `None` without `topology.link_jitter` (or with a zero mean).
    pub fn new(mean: Option<Time>, ports: usize, seed: u64) -> Option<Box<LinkJitter>> {
        let mean = mean.filter(|&m| m > 0)?;
        let mut streams = Streams::new(seed ^ 0x4c49_4e4b_4a49_5454);
        Some(Box::new(LinkJitter { mean: mean as f64, streams: (0..ports).map(|_| streams.stream()).collect(), last: vec![0; ports] }))
    }

    /// When a packet that leaves `port` for an exact `arrival` reaches the far end.
    pub fn arrival(&mut self, port: u32, arrival: Time) -> Time {
        let p = port as usize;
        let at = (arrival + exponential(&mut self.streams[p], self.mean)).max(self.last[p]);
        self.last[p] = at;
        at
    }
}

impl World {
    /// When a packet leaving `port` for an exact `arrival` reaches the far end: later by the
    /// link's noise, if the run has any.
    pub(super) fn link_arrival(&mut self, port: u32, arrival: Time) -> Time {
        match self.link_jitter.as_deref_mut() {
            Some(j) => j.arrival(port, arrival),
            None => arrival,
        }
    }

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
    use super::{Jitter, LinkJitter};
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

    /// A held NIC is idle, not sending: while a host's software wait is pending, the link's
    /// sent bytes never exceed what it accepted (nor wrap below zero), each bin of the link time
    /// series stays within the link's capacity, and the bins add up to what each link sent.
    /// Flows of 10 segments, 10 us waits (longer than a segment's 1.2 us at 10 Gb/s), 1 us bins.
    #[test]
    fn a_software_wait_is_not_counted_as_bytes_sent() {
        let s = Scenario::from_json(
            r#"{"seed": 7, "topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 2},
                "host": {"jitter": "10us"}, "workload": {"kind": "permutation", "bytes": 14600},
                "output": {"bin": "1us", "link_timeseries": true}}"#,
        )
        .unwrap();
        let mut w = World::new(&s).unwrap();
        for t in 1..=200 {
            w.run_until(t * 1_000_000);
            for p in 0..w.ports.len() as u32 {
                assert!(w.ports.sent_bytes(p, w.now) <= w.ports.accepted(p).bytes, "port {p} at {t} us");
            }
        }
        let r = crate::run(&s).unwrap();
        let bins = &r.link_timeseries;
        assert!(!bins.bytes.is_empty());
        for (i, &u) in bins.utilisation.iter().enumerate() {
            assert!(u <= 1.0 + 1e-9, "link {} bin at {} ps: utilisation {u}", bins.link[i], bins.bin_start_ps[i]);
        }
        for (link, &accepted) in r.links.bytes.iter().enumerate() {
            let binned: u64 = bins.link.iter().zip(&bins.bytes).filter(|(l, _)| **l as usize == link).map(|(_, b)| b).sum();
            assert!(binned <= accepted, "link {link}: {binned} binned of {accepted} accepted");
        }
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

    /// A link's noise, by hand on a train of 10,000 packets due at the far end exactly 121 us
    /// apart (back to back at 100 Mb/s), with a mean of 5 us: no packet arrives before its exact
    /// time or before the one ahead of it; the delays average 5 us within 5% (the standard error
    /// is 5 us / 100, 1%); and they do not add up: the last packet is as late as any, not 10,000
    /// draws late (the rate stays exact).
    #[test]
    fn a_links_noise_keeps_order_and_rate() {
        let (mean, gap) = (5_000_000u64, 121_000_000u64);
        let mut j = LinkJitter::new(Some(mean), 3, 9).expect("on");
        let exact: Vec<u64> = (1..=10_000).map(|k| k * gap).collect();
        let late: Vec<u64> = exact.iter().map(|&t| j.arrival(2, t)).collect();
        assert!(late.iter().zip(&exact).all(|(l, e)| l >= e), "never early");
        assert!(late.windows(2).all(|w| w[0] <= w[1]), "in order");
        let delays: Vec<u64> = late.iter().zip(&exact).map(|(l, e)| l - e).collect();
        let avg = delays.iter().sum::<u64>() as f64 / delays.len() as f64;
        assert!((avg / mean as f64 - 1.0).abs() < 0.05, "mean delay {avg}");
        assert!(*delays.last().unwrap() < 20 * mean, "the last packet {} ps late", delays.last().unwrap());
        assert!(LinkJitter::new(Some(0), 3, 9).is_none() && LinkJitter::new(None, 3, 9).is_none());
    }

    /// A train of packets due at one instant (a port's several links, or a burst the exact
    /// model lets through together) leaves in its order: each no earlier than the one before.
    /// A run with link noise conserves its packets and is the same again from the same seed.
    #[test]
    fn a_run_with_link_noise_conserves_packets_and_repeats() {
        let mut j = LinkJitter::new(Some(1_000_000), 1, 3).unwrap();
        let at: Vec<u64> = (0..100).map(|_| j.arrival(0, 50)).collect();
        assert!(at.windows(2).all(|w| w[0] <= w[1]) && at[0] >= 50);
        let s = Scenario::from_json(
            r#"{"seed": 7, "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2, "link_jitter": "2us"},
                "workload": {"kind": "permutation", "bytes": 200000}}"#,
        )
        .unwrap();
        let run = || {
            let mut w = World::new(&s).unwrap();
            w.run();
            w.check_conservation().unwrap();
            (w.finished.clone(), w.events)
        };
        let first = run();
        assert!(first.0.iter().all(Option::is_some));
        assert_eq!(run(), first, "deterministic");
    }
}
