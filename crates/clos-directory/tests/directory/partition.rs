//! A directory server cut off from the store answers from its table as current only within
//! `max_staleness`; after that it marks its answers stale with their age (`stale_lookups =
//! "serve"`, the default) or refuses them (`"refuse"`), and when the partition heals it
//! catches up.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clos_directory::address::La;
use clos_directory::cluster::{DirectoryServers, EtcdCluster, ServerOptions};
use clos_directory::mapping::Mapping;
use clos_directory::resolver::{Answer, LookupError, Resolver, ResolverConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::harness::{aa, binary, etcd, folder, provisioner, serial};

/// A TCP relay that can be frozen: while frozen it moves no bytes either way, like a network
/// partition that drops packets silently (connections stay open, nothing arrives). With
/// `delay_ms` above zero it holds each chunk that long before passing it on, like a slow link.
pub struct Partition {
    pub frozen: Arc<AtomicBool>,
    pub delay_ms: Arc<AtomicU64>,
    pub addr: SocketAddr,
}

impl Partition {
    pub async fn start(upstream: SocketAddr) -> Partition {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let frozen = Arc::new(AtomicBool::new(false));
        let delay_ms = Arc::new(AtomicU64::new(0));
        let (f, d) = (frozen.clone(), delay_ms.clone());
        tokio::spawn(async move {
            while let Ok((down, _)) = listener.accept().await {
                let Ok(up) = TcpStream::connect(upstream).await else { continue };
                let (dr, dw) = down.into_split();
                let (ur, uw) = up.into_split();
                tokio::spawn(relay(dr, uw, f.clone(), d.clone()));
                tokio::spawn(relay(ur, dw, f.clone(), d.clone()));
            }
        });
        Partition { frozen, delay_ms, addr }
    }
}

async fn relay(mut from: tokio::net::tcp::OwnedReadHalf, mut to: tokio::net::tcp::OwnedWriteHalf, frozen: Arc<AtomicBool>, delay_ms: Arc<AtomicU64>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        while frozen.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let delay = delay_ms.load(Ordering::Relaxed);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        while frozen.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// Cuts server 1 off from the store, updates through server 0, and watches server 1's answers
/// for 2.5 s: the old LA may come back unmarked only within `max_staleness` (1 s); after that
/// it must come back marked stale, with an age that tracks the time since the cut (`serve`),
/// or be refused (`refuse`). Then the partition heals and server 1 must catch up.
async fn partition(stale_lookups: &str) {
    let _serial = serial();
    let Some(etcd_bin) = etcd() else { return };
    let folder = folder(&format!("partition-{stale_lookups}"));
    let dir = folder.0.clone();
    let etcd = EtcdCluster::start(&dir, 1, &etcd_bin).unwrap();
    etcd.wait_healthy(Duration::from_secs(20)).await.unwrap();
    let direct = etcd.endpoints()[0].clone();
    let upstream: SocketAddr = direct.trim_start_matches("http://").parse().unwrap();
    let cut = Partition::start(upstream).await;
    let max_staleness = Duration::from_millis(1000);
    let options = ServerOptions {
        max_staleness: "1s".into(),
        probe_interval: "100ms".into(),
        stale_lookups: stale_lookups.into(),
        push_to_peers: false,
        ..ServerOptions::default()
    };
    // Server 0 reaches etcd directly; server 1 only through the partitionable relay.
    let endpoints = vec![vec![direct], vec![format!("http://{}", cut.addr)]];
    let ds = DirectoryServers::start(&dir, &binary(), &endpoints, &options).unwrap();
    ds.wait_ready(0, Duration::from_secs(20)).await.unwrap();
    ds.wait_ready(1, Duration::from_secs(20)).await.unwrap();

    let writer = provisioner(&ds);
    let web = |la| Some(Mapping { la: La(la), service: "web".into() });
    writer.update(aa(1), web(1)).await.unwrap();
    writer.update(aa(2), web(100)).await.unwrap();
    let mut only_b = ResolverConfig::new(vec![ds.addrs()[1]], ds.tokens.agent.as_bytes(), aa(1));
    only_b.cache = false;
    only_b.lookup_timeout = Duration::from_millis(300);
    let b = Resolver::new(only_b).unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    while b.lookup(aa(2)).await != Ok(La(100)) {
        assert!(Instant::now() < deadline, "server 1 never synchronised");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    cut.frozen.store(true, Ordering::Relaxed);
    let cut_at = Instant::now();
    let only_a = ResolverConfig::provisioner(vec![ds.addrs()[0]], ds.tokens.provisioner.as_bytes());
    Resolver::new(only_a).unwrap().update(aa(2), web(200)).await.expect("the connected server takes updates");

    // Watch server 1 for 2.5 s: unmarked old answers (100) only within the bound.
    let mut fresh_until = Duration::ZERO;
    let mut past_bound_from = None;
    let mut ages = Vec::new();
    while cut_at.elapsed() < Duration::from_millis(2500) {
        let at = cut_at.elapsed();
        match b.resolve(aa(2)).await {
            Answer { result: Ok(La(100)), stale: None } => fresh_until = at,
            Answer { result: Ok(La(100)), stale: Some(age) } => {
                past_bound_from.get_or_insert(at);
                ages.push((at, age));
            }
            Answer { result: Err(LookupError::Unavailable(_)), stale: None } => {
                past_bound_from.get_or_insert(at);
            }
            other => panic!("a partitioned server cannot answer {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let (first_age, last_age) = (ages.first().map(|a| a.1), ages.last().map(|a| a.1));
    eprintln!(
        "partition ({stale_lookups}): unmarked answers until {fresh_until:?}, marked or refused from {past_bound_from:?} (bound {max_staleness:?}); {} stale answers, ages {first_age:?} to {last_age:?}",
        ages.len()
    );
    let slack = Duration::from_millis(250);
    assert!(fresh_until <= max_staleness + slack, "passed old data off as current {fresh_until:?} after the partition, beyond the {max_staleness:?} bound");
    let past_bound_from = past_bound_from.expect("past the bound, answers must be marked stale or refused");
    assert!(past_bound_from <= max_staleness + slack, "marking or refusing began only at {past_bound_from:?}");
    match stale_lookups {
        "refuse" => assert!(ages.is_empty(), "stale_lookups = \"refuse\" must not serve stale answers"),
        _ => {
            assert!(ages.len() >= 20, "served only {} stale answers", ages.len());
            // The age is the time since the last contact, which was at most a probe interval
            // (100 ms) before the cut: it grows with the time since the cut.
            for (at, age) in &ages {
                assert!(*age >= max_staleness && *age + slack >= *at && *age <= *at + slack, "an answer at {at:?} after the cut has age {age:?}");
            }
        }
    }

    // Healing: server 1 resynchronises and serves the new mapping, unmarked.
    cut.frozen.store(false, Ordering::Relaxed);
    let healed = Instant::now();
    while b.resolve(aa(2)).await != (Answer { result: Ok(La(200)), stale: None }) {
        assert!(healed.elapsed() < Duration::from_secs(10), "server 1 never caught up after the partition healed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("partition ({stale_lookups}): caught up {:?} after healing", healed.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_server_marks_old_answers_stale_after_max_staleness() {
    partition("serve").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_server_set_to_refuse_stops_answering_after_max_staleness() {
    partition("refuse").await;
}
