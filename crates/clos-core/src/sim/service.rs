//! The simulator's side of the storage service (`crate::service`): requests and responses as
//! flows through the fabric, the servers' processing as events. Runs without a `[service]`
//! never come here: `World::service` is `None`, which `flow_finished` (once per flow, never per
//! packet) and the event match alone look at.

use super::World;
use crate::event::{Event, ServiceEvent};
use crate::service::{Arrived, Demand, Queued, Service};
use crate::workload::FlowSpec;

impl World {
    /// Build the service of a scenario with a `[service]` and schedule its clients' start and
    /// its periodic events; registers one workload part per tenant for its flows.
    pub(super) fn start_service(&mut self, s: &crate::scenario::Scenario) -> crate::error::Result<()> {
        let Some(spec) = &s.service else { return Ok(()) };
        let rng = crate::rng::Streams::new(crate::rng::mix64(s.seed ^ 0x5e72_1ce0)).stream();
        let mut svc = Service::new(spec, &s.tenants, self.topo.n_hosts as u32, self.max_time, rng, s.seed)?;
        for (t, name) in svc.names.clone().iter().enumerate() {
            let part = self.services.len() as u32;
            svc.part_of_tenant.push(part);
            self.services.push(format!("service {name}"));
            self.whole_segments.push(false);
            self.goodput_bins.push(Vec::new());
            self.tenancy.of_service.push(Some(t as u32));
            let class = if s.switch.tenant_queues { t as u8 } else { 0 };
            self.service_class.push(class);
        }
        let start = spec.start.map_or(0, |d| d.0);
        self.queue.schedule(start, Event::Service(ServiceEvent::Start));
        if spec.weight_allocation {
            let at = spec.wa_start.map_or(0, |d| d.0);
            self.queue.schedule(at, Event::Service(ServiceEvent::Allocate { first: true }));
        }
        if spec.replica_selection == crate::service::spec::SelectionKind::Pisces {
            self.queue.schedule(start + spec.rs_interval.0, Event::Service(ServiceEvent::Windows));
        }
        for d in &spec.shift {
            self.queue.schedule(d.0, Event::Service(ServiceEvent::Shift));
        }
        self.service = Some(Box::new(svc));
        Ok(())
    }

    pub(super) fn on_service_event(&mut self, e: ServiceEvent) {
        if self.service.is_none() {
            return;
        }
        match e {
            ServiceEvent::Start => {
                for t in 0..self.svc().tenants() {
                    match self.svc().demand[t] {
                        Demand::Closed(c) => {
                            let clients = self.svc().clients.len() as u32;
                            for slot in 0..c {
                                self.issue_request(t, slot % clients);
                            }
                        }
                        Demand::Open(_) => {
                            if let Some(gap) = self.svc().next_gap(t) {
                                self.queue.schedule(self.now + gap, Event::Service(ServiceEvent::Arrival { tenant: t as u32 }));
                            }
                        }
                    }
                }
            }
            ServiceEvent::Arrival { tenant } => {
                let t = tenant as usize;
                let c = self.svc().next_client(t);
                let gap = self.svc().next_gap(t);
                self.issue_request(t, c);
                if let Some(gap) = gap {
                    self.queue.schedule(self.now + gap, Event::Service(ServiceEvent::Arrival { tenant }));
                }
            }
            // The server finished the request `start_next` handed it (whose response was
            // scheduled then, to leave now): it moves on to the next.
            ServiceEvent::Served { server } => self.serve_next(server),
            ServiceEvent::Allocate { first } => {
                let period = self.svc().spec().wa_period.0;
                if first {
                    self.svc().reset_arrivals();
                } else {
                    self.svc().allocate(period);
                }
                self.queue.schedule(self.now + period, Event::Service(ServiceEvent::Allocate { first: false }));
            }
            ServiceEvent::Windows => {
                self.svc().update_windows();
                let every = self.svc().spec().rs_interval.0;
                self.queue.schedule(self.now + every, Event::Service(ServiceEvent::Windows));
            }
            ServiceEvent::Shift => self.svc().shift(),
        }
    }

    fn svc(&mut self) -> &mut Service {
        self.service.as_mut().expect("only called with a service")
    }

    /// Server `server` takes its next request, if one waits: the response leaves when it is
    /// processed, and the server is free again then.
    fn serve_next(&mut self, server: u32) {
        let now = self.now;
        if let Some((id, done)) = self.svc().start_next(server, now) {
            self.queue.schedule(done, Event::Service(ServiceEvent::Served { server }));
            self.respond_after(id, done);
        }
    }

    /// Tenant `t`'s client `c` issues a read now: its requests' flows to the servers start.
    fn issue_request(&mut self, t: usize, c: u32) {
        let now = self.now;
        let svc = self.svc();
        let requests = svc.issue(t, c, now);
        let service = svc.part_of_tenant[t];
        for (id, src, dst, bytes) in requests {
            let flow = self.add_flow(FlowSpec { src, dst, bytes, start: now, service });
            self.svc().bind(flow, id, false);
        }
    }

    /// Request `id`'s response leaves its server at `at` (when the server has processed it).
    fn respond_after(&mut self, id: u32, at: crate::units::Time) {
        let svc = self.service.as_ref().expect("present");
        let (src, dst, bytes) = svc.response(id);
        let service = svc.part_of_tenant[svc.owner(id).0];
        let flow = self.add_flow(FlowSpec { src, dst, bytes, start: at, service });
        self.service.as_mut().expect("present").bind(flow, id, true);
    }

    /// A flow finished: if the service's, a request reached its server (queue it, and serve it
    /// if the server was idle) or a response reached its client (count it; a closed-loop slot
    /// issues its next request). True if it was the service's.
    pub(super) fn service_flow_done(&mut self, flow: u32) -> bool {
        let Some(svc) = self.service.as_mut() else { return false };
        match svc.arrived(flow) {
            None => false,
            Some(Arrived::Request(id)) => {
                match svc.enqueue(id) {
                    Queued::Serve => {
                        let server = svc.server_of(id);
                        self.serve_next(server);
                    }
                    Queued::Waits => {}
                    Queued::Refused => {
                        // Refused: once its read is over, a closed-loop slot tries again.
                        let (t, c) = svc.owner(id);
                        if svc.refuse(id) && matches!(svc.demand[t], Demand::Closed(_)) {
                            self.issue_request(t, c);
                        }
                    }
                }
                true
            }
            Some(Arrived::Response(id)) => {
                let read_done = svc.complete(id, self.now);
                let (t, c) = svc.owner(id);
                if read_done && matches!(svc.demand[t], Demand::Closed(_)) {
                    self.issue_request(t, c);
                }
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;
    use crate::sim::World;
    use serde_json::Value;

    /// One server of `capacity` requests/s, clients h1 and h2, two tenants of weights 1 and 3
    /// keeping `c0` and `c1` requests outstanding, for `stop`.
    fn one_server(fq: bool, c0: u32, c1: u32, extra: &str) -> (World, Value) {
        let json = format!(
            r#"{{"seed": 1, "stop": "2s",
                "topology": {{"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 3, "host_rate": "1Gbps", "link_delay": "1us"}},
                "tenants": [{{"name": "a", "weight": 1}}, {{"name": "b", "weight": 3}}],
                "service": {{"servers": [0], "clients": ["1-2"], "capacity": 1000, "partitions": 4, "replication": 1,
                             "fair_queuing": {fq}, "bin": "100ms",
                             "demand": [{{"tenant": "a", "concurrency": {c0}}}, {{"tenant": "b", "concurrency": {c1}}}]{extra}}}}}"#
        );
        let s = Scenario::from_json(&json).unwrap();
        let mut w = World::new(&s).unwrap();
        w.run();
        w.check_conservation().unwrap();
        let v = w.service.as_ref().unwrap().summary(w.now);
        (w, v)
    }

    fn share(v: &Value, t: usize) -> f64 {
        let x = |k: usize| v["tenants"][k]["completed"].as_f64().unwrap();
        x(t) / (x(0) + x(1))
    }

    /// By hand: the server serves one request a millisecond and holds 16 outstanding ones
    /// while a request's round trip through the fabric takes tens of microseconds, so it never
    /// idles and completes 2,000 requests in 2 s (minus the first request's trip). Under FIFO
    /// each request waits behind all the others once per cycle of 16 services, so each tenant
    /// gets its share of the outstanding requests: 12 : 4 gives 3/4 : 1/4, whatever the
    /// weights. Under FQ with weights 1 : 3 (one token a request), DWRR serves 1 : 3 while both
    /// are backlogged, and tenant b, with 4 requests and at most one in flight, always is:
    /// 1/4 : 3/4 against FIFO's 3/4 : 1/4. Both within 1 point: the ends of the run move at
    /// most 16 requests of 2,000 (0.8%), DRR's bound a quantum (4 requests) more.
    #[test]
    fn fair_queuing_splits_one_server_by_weight_and_fifo_by_outstanding_requests() {
        let (_, fifo) = one_server(false, 12, 4, "");
        let done = fifo["completed"].as_f64().unwrap();
        assert!((1990.0..=2000.0).contains(&done), "completed {done}");
        assert!((share(&fifo, 0) - 0.75).abs() < 0.01, "FIFO a: {}", share(&fifo, 0));
        let (_, fq) = one_server(true, 12, 4, "");
        assert!((share(&fq, 0) - 0.25).abs() < 0.01, "FQ a: {}", share(&fq, 0));
        assert!((fq["mmr"].as_f64().unwrap() - 1.0).abs() < 0.03, "weighted MMR {}", fq["mmr"]);
        // Latency by Little's law: 16 outstanding at 1,000/s is 16 ms on average.
        let mean = (0..2).map(|t| fq["tenants"][t]["latency_mean_s"].as_f64().unwrap() * share(&fq, t)).sum::<f64>();
        assert!((mean - 0.016).abs() < 0.0005, "mean latency {mean}");
    }

    /// By hand: open-loop Poisson requests at 500/s to one server of 1,000/s, deterministic
    /// service: an M/D/1 queue at load 0.5, whose mean wait is rho / (2 mu (1 - rho)) = 0.5 ms
    /// (Pollaczek-Khinchine). A request's latency is that wait, the 1 ms of service and its two
    /// flows' trips through the switch (a 178 B and a 1,078 B frame, each serialised twice at
    /// 1 Gb/s, plus 4 us of links: about 24 us), so 1.524 ms on average. Over 10 s (5,000
    /// requests) the sample mean's error is about 0.03 ms (the wait's standard deviation is
    /// 0.76 ms, and successive waits are correlated over a few busy periods): within 0.15 ms.
    /// The throughput is the offered 500/s within 4 standard deviations of a Poisson count.
    #[test]
    fn an_open_loop_server_is_an_m_d_1_queue() {
        let json = r#"{"seed": 1, "stop": "11s",
            "topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 3, "host_rate": "1Gbps", "link_delay": "1us"},
            "tenants": [{"name": "a"}, {"name": "b"}],
            "service": {"servers": [0], "clients": ["1-2"], "capacity": 1000, "partitions": 4, "replication": 1, "measure_from": "1s",
                        "demand": [{"tenant": "a", "rate": 250.0}, {"tenant": "b", "rate": 250.0}]}}"#;
        let mut w = World::new(&Scenario::from_json(json).unwrap()).unwrap();
        w.run();
        w.check_conservation().unwrap();
        let v = w.service.as_ref().unwrap().summary(w.now);
        let done: f64 = (0..2).map(|t| v["tenants"][t]["throughput_rps"].as_f64().unwrap()).sum::<f64>() * 10.0;
        assert!((done - 5000.0).abs() < 4.0 * 5000f64.sqrt(), "completed {done} in the 10 s read");
        let mean = (0..2).map(|t| v["tenants"][t]["latency_mean_s"].as_f64().unwrap()).sum::<f64>() / 2.0;
        assert!((mean - 0.001524).abs() < 0.00015, "mean latency {mean}");
        assert_eq!(v["refused"], 0);
    }

    /// Multiget: open-loop reads at 200/s over 8 servers of 10,000 keys/s (2% busy, so nearly
    /// every read issued is answered by the end), each asking for TAO's keys per read. The keys
    /// answered per completed read average the distribution's mean, computed here from its
    /// quantile function, within 4 standard errors over the ~2,000 reads; a read asks each
    /// server once, so its flows are at most 2 x 8.
    #[test]
    fn multiget_reads_fan_out_with_the_tao_mix() {
        let json = r#"{"seed": 1, "stop": "10s",
            "topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 16, "host_rate": "1Gbps", "link_delay": "1us"},
            "tenants": [{"name": "a"}],
            "service": {"servers": ["8-15"], "clients": ["0-7"], "capacity": 10000, "multiget": true,
                        "demand": [{"tenant": "a", "rate": 200.0}]}}"#;
        let mut w = World::new(&Scenario::from_json(json).unwrap()).unwrap();
        w.run();
        w.check_conservation().unwrap();
        let v = w.service.as_ref().unwrap().summary(w.now);
        let t = &v["tenants"][0];
        let (reads, keys) = (t["completed"].as_f64().unwrap(), t["keys"].as_f64().unwrap());
        let issued = t["issued"].as_f64().unwrap();
        assert!(issued - reads <= 5.0, "issued {issued}, completed {reads}");
        let q = crate::service::multiget::Quantiles::keys_per_read();
        let n = 100_000;
        let draws: Vec<f64> = (0..n).map(|i| q.at((i as f64 + 0.5) / n as f64) as f64).collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let sd = (draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        let got = keys / reads;
        assert!((got - mean).abs() < 4.0 * sd / reads.sqrt(), "keys per read {got}, expected {mean} (sd {sd}, {reads} reads)");
        assert!(w.flows.len() as f64 <= 16.0 * issued);
        assert!(w.flows.len() as f64 > 2.0 * issued, "some reads fan out");
    }

    #[test]
    fn the_same_scenario_gives_the_same_run() {
        let (a, va) = one_server(true, 3, 5, r#", "replication": 1, "partitions": 8"#);
        let (b, vb) = one_server(true, 3, 5, r#", "replication": 1, "partitions": 8"#);
        assert_eq!(va, vb);
        assert_eq!(a.events, b.events);
    }
}
