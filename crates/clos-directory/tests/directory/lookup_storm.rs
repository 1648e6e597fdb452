//! VL2 §5.5, Figure 13(a): with k = 2, killing a directory server during a lookup storm must
//! not fail lookups, because every lookup also went to another copy.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clos_directory::address::La;
use clos_directory::cluster::ServerOptions;
use clos_directory::mapping::Mapping;
use clos_directory::resolver::{Resolver, ResolverConfig};

use crate::harness::{aa, provisioner, quantile, serial, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_keep_succeeding_when_a_directory_server_is_killed_mid_storm() {
    let _serial = serial();
    let Some(mut sys) = start("storm", 1, 3, ServerOptions::default()).await else { return };
    let population = 300u32;
    let writer = provisioner(&sys.ds);
    for i in 0..population {
        writer.update(aa(i), Some(Mapping { la: La(5000 + i), service: "web".into() })).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;

    let agents: Vec<Arc<Resolver>> = (0..8)
        .map(|a| {
            let mut c = ResolverConfig::new(sys.ds.addrs(), sys.ds.tokens.agent.as_bytes(), aa(a));
            c.cache = false;
            c.seed = a as u64;
            Arc::new(Resolver::new(c).unwrap())
        })
        .collect();
    for a in &agents {
        assert_eq!(a.connect_all().await, 3);
    }
    // Bounded storm: 8 agents x 120 bursts x 10 lookups, a burst every 10 ms per agent (about
    // 8,000 lookups/s), killing server 1 a third of the way through.
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (a, agent) in agents.iter().enumerate() {
        let agent = agent.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut wrong = Vec::new();
            for burst in 0..120u32 {
                let targets: Vec<_> = (0..10).map(|j| aa((burst * 31 + j * 7 + a as u32 * 13) % population)).collect();
                let t = Instant::now();
                let results = agent.lookup_many(&targets).await;
                latencies.push(t.elapsed().as_secs_f64() * 1e3);
                for (target, r) in targets.iter().zip(results) {
                    if r != Ok(La(5000 + target.0 - 0x0a00_0000)) {
                        wrong.push(format!("{target}: {r:?}"));
                    }
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            (latencies, wrong)
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    sys.ds.kill(1);
    let killed_at = started.elapsed();
    let mut latencies = Vec::new();
    let mut wrong = Vec::new();
    for t in tasks {
        let (l, w) = t.await.unwrap();
        latencies.extend(l);
        wrong.extend(w);
    }
    let took = started.elapsed();
    assert!(killed_at < took / 2, "the kill must land mid-storm ({killed_at:?} of {took:?})");
    assert!(wrong.is_empty(), "{} lookups failed or were wrong, e.g. {:?}", wrong.len(), &wrong[..wrong.len().min(5)]);
    let p99 = quantile(&mut latencies, 0.99);
    let max = quantile(&mut latencies, 1.0);
    eprintln!("lookup storm: {} bursts, server killed at {killed_at:?}, burst p99 {p99:.2} ms, max {max:.2} ms", latencies.len());
    assert!(max < 500.0, "a burst took {max:.1} ms: the surviving copies should answer at once");
}
