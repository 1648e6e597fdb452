//! The fault campaign (docs/directory.md, "Fault campaign"): 3 etcd members and 3 directory
//! servers on loopback, provisioners updating and removing and agents looking up a set of AAs,
//! every invocation and completion recorded, while a nemesis with a seeded schedule kills,
//! restarts and pauses servers and members (the etcd leader included), takes the store's quorum
//! away, and cuts or slows the links between servers and members through relays. The history
//! is then checked (`history.rs`). `CLOS_CAMPAIGN_FAULTS` sets the number of faults (60 by
//! default; the long form is the ignored test, 500), `CLOS_CAMPAIGN_SEED` the schedule's seed.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clos_directory::address::{Aa, La};
use clos_directory::cluster::{DirectoryServers, EtcdCluster, ServerOptions};
use clos_directory::mapping::Mapping;
use clos_directory::resolver::{Answer, LookupError, Resolver, ResolverConfig, UpdateError};
use clos_directory::store::Store;
use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::harness::{binary, etcd, folder, serial};
use crate::history::{check, Micros, Op, Outcome, Record};
use crate::partition::Partition;

const MEMBERS: usize = 3;
const SERVERS: usize = 3;
const PROVISIONERS: usize = 3;
const AGENTS: usize = 4;
const MAX_STALENESS: Duration = Duration::from_secs(1);
/// Room for the change stream's delivery, a probe in flight and the slowest injected link
/// delay, on top of the documented bounds.
const SLACK: Duration = Duration::from_millis(500);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    KillServer(usize),
    PauseServer(usize),
    KillMember(usize),
    KillLeader,
    PauseMember(usize),
    /// Server `i` loses every link to the store (relays frozen).
    CutServer(usize),
    /// Every link of server `i` to the store delays each chunk by this many ms.
    DelayServer(usize, u64),
    /// Two members killed: no quorum anywhere.
    QuorumLoss,
}

impl Fault {
    fn kind(self) -> &'static str {
        match self {
            Fault::KillServer(_) => "kill a directory server",
            Fault::PauseServer(_) => "pause a directory server",
            Fault::KillMember(_) => "kill an etcd member",
            Fault::KillLeader => "kill the etcd leader",
            Fault::PauseMember(_) => "pause an etcd member",
            Fault::CutServer(_) => "cut a server from the store",
            Fault::DelayServer(..) => "delay a server's store links",
            Fault::QuorumLoss => "quorum loss (2 members killed)",
        }
    }
}

/// The nemesis' schedule: each fault, how long it lasts, and the pause after it heals. Every
/// 25th fault (from the 10th) takes the quorum away, for longer than `max_staleness`.
fn schedule(seed: u64, faults: usize) -> Vec<(Fault, Duration, Duration)> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut pick = |n: u64| rng.next_u64() % n;
    (0..faults)
        .map(|i| {
            let fault = if i % 25 == 10 {
                Fault::QuorumLoss
            } else {
                match pick(7) {
                    0 => Fault::KillServer(pick(SERVERS as u64) as usize),
                    1 => Fault::PauseServer(pick(SERVERS as u64) as usize),
                    2 => Fault::KillMember(pick(MEMBERS as u64) as usize),
                    3 => Fault::KillLeader,
                    4 => Fault::PauseMember(pick(MEMBERS as u64) as usize),
                    5 => Fault::CutServer(pick(SERVERS as u64) as usize),
                    _ => Fault::DelayServer(pick(SERVERS as u64) as usize, 20 + pick(180)),
                }
            };
            let lasts = match fault {
                Fault::QuorumLoss => Duration::from_millis(2500 + pick(1000)),
                Fault::CutServer(_) => Duration::from_millis(500 + pick(1500)),
                _ => Duration::from_millis(200 + pick(700)),
            };
            (fault, lasts, Duration::from_millis(100 + pick(300)))
        })
        .collect()
}

fn signal(pid: Option<u32>, sig: libc::c_int) {
    if let Some(pid) = pid {
        // SAFETY: kill(2) on a child process this test started; no memory is involved.
        unsafe { libc::kill(pid as libc::pid_t, sig) };
    }
}

/// Restarts a process, trying again if the spawn itself fails (once seen as a transient
/// ENOENT from exec on a loaded machine); a process that cannot be started fails the test.
async fn retry(mut restart: impl FnMut() -> anyhow::Result<()>) {
    for attempt in 1.. {
        match restart() {
            Ok(()) => return,
            Err(e) if attempt < 5 => {
                eprintln!("campaign: restart failed ({e:#}), trying again");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("cannot restart a process: {e:#}"),
        }
    }
}

fn micros(t0: Instant) -> Micros {
    t0.elapsed().as_micros() as Micros
}

struct Cluster {
    etcd: EtcdCluster,
    ds: DirectoryServers,
    /// `links[i][j]`: server i's link to member j.
    links: Vec<Vec<Partition>>,
}

impl Cluster {
    async fn healthy(&self) {
        self.etcd.wait_healthy(Duration::from_secs(20)).await.expect("the store recovers after each fault");
    }

    /// Injects `fault` for `lasts`, then heals it; returns the quorum loss's window, if any.
    async fn inject(&mut self, fault: Fault, lasts: Duration, t0: Instant) -> Option<(Micros, Micros)> {
        let mut window = None;
        match fault {
            Fault::KillServer(i) => {
                self.ds.kill(i);
                tokio::time::sleep(lasts).await;
                retry(|| self.ds.restart(i)).await;
            }
            Fault::PauseServer(i) => {
                signal(self.ds.pid(i), libc::SIGSTOP);
                tokio::time::sleep(lasts).await;
                signal(self.ds.pid(i), libc::SIGCONT);
            }
            Fault::KillMember(_) | Fault::KillLeader => {
                let j = match fault {
                    Fault::KillMember(j) => j,
                    _ => tokio::time::timeout(Duration::from_secs(2), self.etcd.leader()).await.ok().and_then(Result::ok).unwrap_or(0),
                };
                self.etcd.kill(j);
                tokio::time::sleep(lasts).await;
                retry(|| self.etcd.restart(j)).await;
                self.healthy().await;
            }
            Fault::PauseMember(j) => {
                signal(self.etcd.pid(j), libc::SIGSTOP);
                tokio::time::sleep(lasts).await;
                signal(self.etcd.pid(j), libc::SIGCONT);
                self.healthy().await;
            }
            Fault::CutServer(i) | Fault::DelayServer(i, _) => {
                let delay = if let Fault::DelayServer(_, ms) = fault { ms } else { 0 };
                for link in &self.links[i] {
                    link.frozen.store(delay == 0, Ordering::Relaxed);
                    link.delay_ms.store(delay, Ordering::Relaxed);
                }
                tokio::time::sleep(lasts).await;
                for link in &self.links[i] {
                    link.frozen.store(false, Ordering::Relaxed);
                    link.delay_ms.store(0, Ordering::Relaxed);
                }
            }
            Fault::QuorumLoss => {
                self.etcd.kill(1);
                self.etcd.kill(2);
                let from = micros(t0);
                tokio::time::sleep(lasts).await;
                window = Some((from, micros(t0)));
                retry(|| self.etcd.restart(1)).await;
                retry(|| self.etcd.restart(2)).await;
                self.healthy().await;
            }
        }
        window
    }
}

fn web(la: u32) -> Option<Mapping> {
    Some(Mapping { la: La(la), service: "web".into() })
}

/// A provisioner: updates (80%, each to a new LA) and removals of random keys until `stop`.
async fn provision(client: usize, resolver: Arc<Resolver>, keys: Vec<u32>, seed: u64, stop: Arc<AtomicBool>, t0: Instant) -> Vec<Record> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut records = Vec::new();
    let mut next_la = 0x1400_0000 + ((client as u32) << 20);
    while !stop.load(Ordering::Relaxed) {
        let key = keys[(rng.next_u64() % keys.len() as u64) as usize];
        let op = if rng.next_u64() % 5 == 0 {
            Op::Remove
        } else {
            next_la += 1;
            Op::Update(next_la)
        };
        let invoke = micros(t0);
        let result = resolver.update(Aa(key), if let Op::Update(la) = op { web(la) } else { None }).await;
        let complete = micros(t0);
        // A provisioning system told the store is out of reach waits before its next update.
        let wait = if matches!(result, Err(UpdateError::StoreUnavailable(_))) { 100 } else { 5 };
        let outcome = match result {
            Ok(_) => Outcome::Acked,
            Err(e) => Outcome::Indeterminate(e.to_string()),
        };
        records.push(Record { client, key, op, invoke, complete, outcome });
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
    records
}

/// An agent: lookups of random keys, without a cache, at k = 2 servers, until `stop`.
async fn look_up(client: usize, resolver: Arc<Resolver>, keys: Vec<u32>, seed: u64, stop: Arc<AtomicBool>, t0: Instant) -> Vec<Record> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut records = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let key = keys[(rng.next_u64() % keys.len() as u64) as usize];
        let invoke = micros(t0);
        let Answer { result, stale } = resolver.resolve(Aa(key)).await;
        let outcome = match result {
            Ok(la) => Outcome::Answered { la: Some(la.0), stale },
            Err(LookupError::NotFound) => Outcome::Answered { la: None, stale },
            Err(e) => Outcome::Unanswered(e.to_string()),
        };
        records.push(Record { client, key, op: Op::Lookup, invoke, complete: micros(t0), outcome });
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    records
}

async fn campaign(faults: usize) {
    let _serial = serial();
    let Some(etcd_bin) = etcd() else { return };
    let seed: u64 = std::env::var("CLOS_CAMPAIGN_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(39);
    let started = Instant::now();
    let folder = folder("campaign");
    let dir = folder.0.clone();
    let etcd = EtcdCluster::start(&dir, MEMBERS, &etcd_bin).unwrap();
    etcd.wait_healthy(Duration::from_secs(20)).await.unwrap();
    let direct = etcd.endpoints();
    let mut links = Vec::new();
    for _ in 0..SERVERS {
        let mut row = Vec::new();
        for endpoint in &direct {
            let upstream: SocketAddr = endpoint.trim_start_matches("http://").parse().unwrap();
            row.push(Partition::start(upstream).await);
        }
        links.push(row);
    }
    let endpoints: Vec<Vec<String>> = links.iter().map(|row| row.iter().map(|l| format!("http://{}", l.addr)).collect()).collect();
    let options = ServerOptions { max_staleness: "1s".into(), probe_interval: "100ms".into(), isolate_services: false, ..ServerOptions::default() };
    let ds = DirectoryServers::start(&dir, &binary(), &endpoints, &options).unwrap();
    for i in 0..SERVERS {
        ds.wait_ready(i, Duration::from_secs(20)).await.unwrap();
    }
    let mut cluster = Cluster { etcd, ds, links };

    // One AA per 2.5 faults keeps each key's history about the same length in every form.
    let keys: Vec<u32> = (0..(faults * 2 / 5).max(24) as u32).map(|k| 0x0a00_1000 + k).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let mut clients = Vec::new();
    for p in 0..PROVISIONERS {
        let mut config = ResolverConfig::provisioner(cluster.ds.addrs(), cluster.ds.tokens.provisioner.as_bytes());
        config.update_timeout = Duration::from_millis(500);
        config.update_attempts = 4;
        config.connect_timeout = Duration::from_millis(300);
        let resolver = Arc::new(Resolver::new(config).unwrap());
        clients.push(tokio::spawn(provision(p, resolver, keys.clone(), seed ^ (p as u64 + 1), stop.clone(), t0)));
    }
    for a in 0..AGENTS {
        let mut config = ResolverConfig::new(cluster.ds.addrs(), cluster.ds.tokens.agent.as_bytes(), Aa(0x0a00_0001 + a as u32));
        config.cache = false;
        config.lookup_timeout = Duration::from_millis(300);
        config.connect_timeout = Duration::from_millis(300);
        config.seed = seed ^ (0x100 + a as u64);
        let resolver = Arc::new(Resolver::new(config).unwrap());
        clients.push(tokio::spawn(look_up(PROVISIONERS + a, resolver, keys.clone(), seed ^ (0x200 + a as u64), stop.clone(), t0)));
    }

    // The nemesis.
    let plan = schedule(seed, faults);
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    let mut losses = Vec::new();
    let mut timeline = Vec::new();
    tokio::time::sleep(Duration::from_millis(300)).await;
    for (fault, lasts, pause) in &plan {
        *by_kind.entry(fault.kind()).or_default() += 1;
        let from = micros(t0);
        losses.extend(cluster.inject(*fault, *lasts, t0).await);
        timeline.push(format!("{from:>12} {:>12} {fault:?}", micros(t0)));
        tokio::time::sleep(*pause).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut history = Vec::new();
    for c in clients {
        history.extend(c.await.expect("a client task"));
    }
    let ran = t0.elapsed();

    // Let copies still waiting in a server's batch land (`commit_timeout` 1.5 s), then read
    // every key from the store with a linearizable read.
    for i in 0..SERVERS {
        if !cluster.ds.is_running(i) {
            cluster.ds.restart(i).unwrap();
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let store = Store::connect(&direct, "/clos/vl2", Duration::from_secs(2)).await.unwrap();
    let final_at = micros(t0);
    let mut finals = BTreeMap::new();
    for key in &keys {
        finals.insert(*key, store.read(Aa(*key)).await.expect("final read").map(|(m, _)| m.la.0));
    }

    // Availability through each quorum loss: lookups invoked while it lasted.
    let during = |r: &&Record| r.op == Op::Lookup && losses.iter().any(|(from, to)| r.invoke >= *from && r.invoke < *to);
    let in_loss: Vec<&Record> = history.iter().filter(during).collect();
    let answered = in_loss.iter().filter(|r| matches!(r.outcome, Outcome::Answered { .. })).count();
    let stale_in_loss = in_loss.iter().filter(|r| matches!(r.outcome, Outcome::Answered { stale: Some(_), .. })).count();

    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for r in &history {
        if let Outcome::Indeterminate(why) | Outcome::Unanswered(why) = &r.outcome {
            *reasons.entry(why.chars().take(90).collect()).or_default() += 1;
        }
    }
    eprintln!("campaign: failures by reason: {reasons:?}");
    let checked = Instant::now();
    let findings = check(&history, MAX_STALENESS + SLACK, SLACK, &finals, final_at, 2_000_000);
    let check_time = checked.elapsed();
    // The same without the lag, for the record: how many keys saw a fresh lookup miss an
    // update (the documented bound allows it); a small budget, as it proves little.
    let strict = check(&history, Duration::ZERO, SLACK, &BTreeMap::new(), final_at, 50_000);
    let count = |f: &dyn Fn(&Record) -> bool| history.iter().filter(|r| f(r)).count();
    let updates = count(&|r| matches!(r.op, Op::Update(_)));
    let removals = count(&|r| r.op == Op::Remove);
    let indeterminate = count(&|r| matches!(r.outcome, Outcome::Indeterminate(_)));
    let unanswered = count(&|r| matches!(r.outcome, Outcome::Unanswered(_)));
    eprintln!(
        "campaign (seed {seed}): {} faults in {ran:.1?} ({by_kind:?}); {} operations by {} clients on {} keys: {updates} updates and {removals} removals ({indeterminate} indeterminate), {} lookups ({} fresh, {} stale, {unanswered} unanswered)",
        plan.len(),
        history.len(),
        history.iter().map(|r| r.client + 1).max().unwrap_or(0),
        findings.keys,
        findings.fresh_lookups + findings.stale_lookups + unanswered,
        findings.fresh_lookups,
        findings.stale_lookups,
    );
    eprintln!(
        "campaign: {} quorum losses, {} lookups during them, {answered} answered ({stale_in_loss} stale); not linearizable: {:?}, search gave up: {:?}; stale beyond the bound: {}; lost acknowledged updates: {:?}; strictly (no lag) not linearizable: {} keys, undecided {}; checked in {check_time:.1?}, {:.1?} in all",
        losses.len(),
        in_loss.len(),
        findings.not_linearizable,
        findings.unknown,
        findings.stale_beyond_bound.len(),
        findings.lost,
        strict.not_linearizable.len(),
        strict.unknown.len(),
        started.elapsed(),
    );
    // For diagnosis, kept with the logs when the test fails: the nemesis' timeline and the
    // history of every key a check flagged, in invocation order (times in microseconds).
    let flagged = findings.not_linearizable.iter().chain(&findings.unknown).chain(&findings.lost).chain(findings.stale_beyond_bound.iter().map(|r| &r.key));
    for key in flagged {
        let mut records: Vec<&Record> = history.iter().filter(|r| r.key == *key).collect();
        records.sort_by_key(|r| r.invoke);
        let lines: Vec<String> = records.iter().map(|r| format!("{:>12} {:>12} c{} {:?} {:?}", r.invoke, r.complete, r.client, r.op, r.outcome)).collect();
        let _ = std::fs::write(dir.join(format!("history-{key:x}.txt")), lines.join("\n") + &format!("\nfinal {:?}\n", finals.get(key)));
    }
    let _ = std::fs::write(dir.join("nemesis.txt"), timeline.join("\n"));
    assert!(plan.len() >= faults, "the schedule has {} faults", plan.len());
    assert!(history.len() >= 1000, "only {} operations", history.len());
    assert!(findings.not_linearizable.is_empty(), "keys not linearizable: {:?}", findings.not_linearizable);
    assert!(findings.unknown.is_empty(), "the search gave up on keys {:?}", findings.unknown);
    assert!(
        findings.stale_beyond_bound.is_empty(),
        "stale answers beyond their bound: {:?}",
        &findings.stale_beyond_bound[..findings.stale_beyond_bound.len().min(3)]
    );
    assert!(findings.lost.is_empty(), "acknowledged updates lost on keys {:?}", findings.lost);
    assert!(!losses.is_empty() && in_loss.len() >= 20, "{} lookups during {} quorum losses", in_loss.len(), losses.len());
    assert!(answered as f64 >= 0.95 * in_loss.len() as f64, "only {answered} of {} lookups answered through the quorum losses", in_loss.len());
    assert!(stale_in_loss > 0, "no stale answer during a quorum loss");
}

fn faults_from_env(default: usize) -> usize {
    std::env::var("CLOS_CAMPAIGN_FAULTS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_campaign_loses_no_acknowledged_update_and_keeps_lookups_within_their_bounds() {
    campaign(faults_from_env(60)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the long form: 500 faults, about 10 minutes"]
async fn a_long_fault_campaign_of_500_faults() {
    campaign(faults_from_env(500)).await;
}
