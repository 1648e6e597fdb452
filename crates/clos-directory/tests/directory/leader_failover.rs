//! VL2 §5.5: "the primary RSM server's failure leads to only about 1 s delay for updates until
//! a new primary is elected". We kill etcd's leader during an update storm and check that no
//! acknowledged update is lost, that the unacknowledged ones are retried until acknowledged,
//! and how long updates paused.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clos_directory::address::La;
use clos_directory::cluster::ServerOptions;
use clos_directory::mapping::Mapping;
use clos_directory::resolver::{Resolver, ResolverConfig};
use clos_directory::store::Store;

use crate::harness::{aa, serial, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_acknowledged_update_is_lost_when_the_store_leader_is_killed() {
    let _serial = serial();
    let Some(mut sys) = start("leader", 3, 2, ServerOptions::default()).await else { return };
    let writers = 16u32;
    let per_writer = 120u32;
    let acks: Arc<Mutex<Vec<(u32, Instant)>>> = Arc::default();
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut tasks = Vec::new();
    let mut agents = Vec::new();
    let started = Instant::now();
    for w in 0..writers {
        // A short update timeout makes the updates caught in the election time out and be
        // retried on the other directory server, which is the path under test.
        let mut config = ResolverConfig::provisioner(sys.ds.addrs(), sys.ds.tokens.provisioner.as_bytes());
        config.update_timeout = Duration::from_millis(300);
        config.seed = u64::from(w);
        let agent = Arc::new(Resolver::new(config).unwrap());
        agents.push(agent.clone());
        let (acks, failures) = (acks.clone(), failures.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..per_writer {
                let n = w * per_writer + i + 1;
                match agent.update(aa(n), Some(Mapping { la: La(n), service: "web".into() })).await {
                    Ok(_) => acks.lock().unwrap().push((n, Instant::now())),
                    Err(e) => failures.lock().unwrap().push(format!("{}: {e}", aa(n))),
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    let leader = sys.etcd.leader().await.expect("a leader");
    sys.etcd.kill(leader);
    let killed = Instant::now();
    for t in tasks {
        t.await.unwrap();
    }
    let acks = acks.lock().unwrap().clone();
    let failures = failures.lock().unwrap().clone();
    let retries: u64 = agents.iter().map(|a| a.retries()).sum();

    // The pause: the longest gap between consecutive acknowledgements after the kill.
    let mut times: Vec<Instant> = acks.iter().map(|(_, t)| *t).collect();
    times.sort();
    let before = times.iter().filter(|t| **t < killed).count();
    let pause = times.windows(2).filter(|w| w[1] > killed).map(|w| w[1] - w[0].max(killed)).max().unwrap_or_default();
    eprintln!(
        "leader failover: killed etcd member e{leader} at {:?}; {} acks before, {} after; longest pause {:?}; {} retried sends; {} failures",
        killed - started,
        before,
        acks.len() - before,
        pause,
        retries,
        failures.len()
    );
    // Failures first: updates that gave up after the kill also leave no acks after it, and
    // would otherwise be reported as a kill that missed the storm.
    assert!(
        failures.is_empty(),
        "unacknowledged updates must be retried until acknowledged: {} failed, e.g. {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    let total = (writers * per_writer) as usize;
    assert!(before > 0 && before < total, "the kill must land mid-storm: {before} of {total} acks came before it");
    assert!(retries > 0, "updates caught in the election should have timed out and been retried");
    assert_eq!(acks.len(), total);
    assert!(pause < Duration::from_secs(5), "updates paused for {pause:?}");

    // Every acknowledged update is in the store, read linearizably from the surviving quorum.
    let store = Store::connect(&sys.etcd.endpoints(), "/clos/vl2", Duration::from_secs(2)).await.unwrap();
    for (n, _) in &acks {
        let got = store.read(aa(*n)).await.expect("store readable").map(|(m, _)| m.la);
        assert_eq!(got, Some(La(*n)), "acknowledged update of {} lost", aa(*n));
    }
}
