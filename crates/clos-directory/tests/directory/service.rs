//! The service's everyday behaviour: updates reach every server, lookups honour access control,
//! a restarted server recovers from the store, and stale caches are corrected reactively.

use std::time::Duration;

use clos_directory::address::La;
use clos_directory::cluster::ServerOptions;
use clos_directory::mapping::Mapping;
use clos_directory::resolver::LookupError;

use clos_directory::resolver::{Resolver, ResolverConfig};

use crate::harness::{aa, agent, provisioner, serial, start};

fn web(la: u32) -> Option<Mapping> {
    Some(Mapping { la: La(la), service: "web".into() })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_are_acknowledged_then_resolved_by_every_server_with_access_control() {
    let _serial = serial();
    let Some(sys) = start("service", 1, 3, ServerOptions::default()).await else { return };
    let provisioning = provisioner(&sys.ds);
    provisioning.update(aa(1), web(100)).await.expect("register the requester");
    provisioning.update(aa(2), web(200)).await.expect("acked");
    provisioning.update(aa(3), Some(Mapping { la: La(300), service: "db".into() })).await.expect("acked");

    // Each server on its own: the change stream (or a peer push) brought the update to all.
    for server in sys.ds.addrs() {
        let mut config = ResolverConfig::new(vec![server], sys.ds.tokens.agent.as_bytes(), aa(1));
        config.cache = false;
        let one = Resolver::new(config).unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        loop {
            match one.lookup(aa(2)).await {
                Ok(la) => {
                    assert_eq!(la, La(200), "server {server}");
                    break;
                }
                Err(e) if tokio::time::Instant::now() > deadline => panic!("server {server} never learnt the update: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
        assert_eq!(one.lookup(aa(3)).await, Err(LookupError::Denied), "web may not resolve db (VL2 §4.2.1)");
        assert_eq!(one.lookup(aa(99)).await, Err(LookupError::NotFound));
    }
    let stranger = agent(&sys.ds, aa(50));
    assert_eq!(stranger.lookup(aa(2)).await, Err(LookupError::Denied), "an AA with no mapping resolves nothing");

    provisioning.update(aa(2), None).await.expect("removal acked");
    let fresh = agent(&sys.ds, aa(1));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(fresh.lookup(aa(2)).await, Err(LookupError::NotFound));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_directory_server_recovers_every_mapping_from_the_store() {
    let _serial = serial();
    let options = ServerOptions { push_to_peers: false, ..ServerOptions::default() };
    let Some(mut sys) = start("restart", 1, 1, options).await else { return };
    let writer = provisioner(&sys.ds);
    let n = 500;
    for i in 1..=n {
        writer.update(aa(i), web(1000 + i)).await.expect("acked");
    }
    sys.ds.kill(0);
    sys.ds.restart(0).unwrap();
    sys.ds.wait_ready(0, Duration::from_secs(20)).await.unwrap();
    let mut reader = ResolverConfig::new(sys.ds.addrs(), sys.ds.tokens.agent.as_bytes(), aa(1));
    reader.cache = false;
    let reader = Resolver::new(reader).unwrap();
    let targets: Vec<_> = (1..=n).map(aa).collect();
    let results = reader.lookup_many(&targets).await;
    for (i, r) in results.into_iter().enumerate() {
        assert_eq!(r, Ok(La(1001 + i as u32)), "mapping {} after restart", i + 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tor_report_corrects_the_senders_stale_cache_through_any_server() {
    let _serial = serial();
    let Some(sys) = start("correction", 1, 2, ServerOptions::default()).await else { return };
    let sender = agent(&sys.ds, aa(1));
    assert_eq!(sender.connect_all().await, 2, "the agent keeps a session with every server");
    let provisioning = provisioner(&sys.ds);
    provisioning.update(aa(1), web(100)).await.unwrap();
    provisioning.update(aa(7), web(700)).await.unwrap();
    assert_eq!(sender.lookup(aa(7)).await, Ok(La(700)));

    // The VM behind aa(7) migrates: the provisioning system updates the directory...
    provisioning.update(aa(7), web(701)).await.unwrap();
    assert_eq!(sender.cached(aa(7)), Some(La(700)), "the sender's cache is stale until used");
    // ...the sender's next packet lands at the old ToR, which reports it (VL2 §4.3).
    let tor = Resolver::new(ResolverConfig::tor(sys.ds.addrs(), sys.ds.tokens.tor.as_bytes())).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(tor.report_misdelivery(aa(1), aa(7), La(700)).await, Ok(La(701)));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while sender.cached(aa(7)) != Some(La(701)) {
        assert!(tokio::time::Instant::now() < deadline, "no correction reached the sender");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(sender.corrections() >= 1);

    // An agent with a session only with server 1, and a ToR that reports only to server 0:
    // server 0 hands the correction to its peer, which delivers it.
    let remote = Resolver::new(ResolverConfig::new(vec![sys.ds.addrs()[1]], sys.ds.tokens.agent.as_bytes(), aa(2))).unwrap();
    let tor0 = Resolver::new(ResolverConfig::tor(vec![sys.ds.addrs()[0]], sys.ds.tokens.tor.as_bytes())).unwrap();
    provisioning.update(aa(2), web(200)).await.unwrap();
    assert_eq!(remote.lookup(aa(7)).await, Ok(La(701)));
    provisioning.update(aa(7), web(702)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(tor0.report_misdelivery(aa(2), aa(7), La(701)).await, Ok(La(702)));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while remote.cached(aa(7)) != Some(La(702)) {
        assert!(tokio::time::Instant::now() < deadline, "the correction was not forwarded to the agent's server");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
