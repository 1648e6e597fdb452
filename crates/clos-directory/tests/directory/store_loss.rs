//! VL2 keeps lookups available when the replicated store is not: directory servers answer
//! "using the cached state" (§4.3.2), and the RSM is needed only to commit updates. With two of
//! three etcd members killed (no quorum), every lookup is still answered with the right LA,
//! marked stale with an age that grows with the outage; updates fail at once, saying the store
//! is out of reach; a client of protocol 1 gets `Unavailable`, never a stale answer passed off
//! as current; and when the members come back, answers are current again and updates commit.

use std::time::{Duration, Instant};

use clos_directory::address::La;
use clos_directory::cluster::ServerOptions;
use clos_directory::mapping::Mapping;
use clos_directory::resolver::{Answer, Resolver, ResolverConfig, UpdateError};
use clos_directory::wire::{Reply, Request, Role};

use crate::harness::{aa, exchange, provisioner, serial, start};

fn web(la: u32) -> Option<Mapping> {
    Some(Mapping { la: La(la), service: "web".into() })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_are_served_marked_stale_while_the_store_has_no_quorum() {
    let _serial = serial();
    let max_staleness = Duration::from_secs(1);
    let options = ServerOptions { max_staleness: "1s".into(), probe_interval: "100ms".into(), ..ServerOptions::default() };
    let Some(mut sys) = start("store-loss", 3, 3, options).await else { return };
    let writer = provisioner(&sys.ds);
    let mappings = 20;
    for n in 1..=mappings {
        writer.update(aa(n), web(n)).await.expect("setup");
    }
    let mut config = ResolverConfig::new(sys.ds.addrs(), sys.ds.tokens.agent.as_bytes(), aa(1));
    config.cache = false;
    let agent = Resolver::new(config).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    for n in 1..=mappings {
        assert_eq!(agent.resolve(aa(n)).await, Answer { result: Ok(La(n)), stale: None }, "before the loss");
    }

    // Two of three members die: the one left has no quorum, so no probe or commit succeeds.
    sys.etcd.kill(1);
    sys.etcd.kill(2);
    let lost_at = Instant::now();
    let mut current_until = Duration::ZERO;
    let mut stale = Vec::new();
    let mut wrong = Vec::new();
    let mut store_unavailable_after = None;
    let mut n = 0;
    while lost_at.elapsed() < Duration::from_secs(4) {
        n = n % mappings + 1;
        let at = lost_at.elapsed();
        match agent.resolve(aa(n)).await {
            Answer { result: Ok(la), stale: None } if la == La(n) => current_until = at,
            Answer { result: Ok(la), stale: Some(age) } if la == La(n) => stale.push((at, age)),
            other => wrong.push((at, other)),
        }
        // Once answers are stale, an update must fail at once, saying why.
        if !stale.is_empty() && store_unavailable_after.is_none() {
            let sent = Instant::now();
            match writer.update(aa(1), web(1000)).await {
                Err(UpdateError::StoreUnavailable(reason)) => {
                    assert!(reason.contains("no contact with the store"), "{reason}");
                    store_unavailable_after = Some(sent.elapsed());
                }
                other => panic!("an update without a store must fail with StoreUnavailable, got {other:?}"),
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A client of protocol 1 cannot be told an answer is stale: it is refused one.
    let mut old_client = Vec::new();
    Request::Hello { role: Role::Agent, aa: aa(1), token: sys.ds.tokens.agent.as_bytes().to_vec(), protocol: 1 }.encode(&mut old_client);
    Request::Lookup { id: 7, target: aa(2) }.encode(&mut old_client);
    let old_replies = exchange(sys.ds.addrs()[0], &old_client).await;

    let (first, last) = (stale.first().copied(), stale.last().copied());
    eprintln!(
        "store loss: current answers until {current_until:?}; {} stale answers, the first at {:?} (age {:?}), the last at {:?} (age {:?}); {} wrong or failed; an update failed after {store_unavailable_after:?}",
        stale.len(),
        first.map(|s| s.0),
        first.map(|s| s.1),
        last.map(|s| s.0),
        last.map(|s| s.1),
        wrong.len()
    );
    assert!(wrong.is_empty(), "every lookup must be answered with the right LA during the loss: {:?}", &wrong[..wrong.len().min(3)]);
    let slack = Duration::from_millis(300);
    assert!(current_until <= max_staleness + slack, "answered as current {current_until:?} after the loss, beyond the {max_staleness:?} bound");
    assert!(stale.len() >= 50, "only {} stale answers in 4 s", stale.len());
    for (at, age) in &stale {
        // The age is the time since the servers' last contact, at most a probe interval and a
        // probe's time before the loss.
        assert!(*age > max_staleness && *age <= *at + slack && *age + slack >= *at, "an answer {at:?} into the loss has age {age:?}");
    }
    assert!(last.unwrap().1 >= first.unwrap().1 + Duration::from_millis(2500), "the age must grow with the outage");
    assert!(store_unavailable_after.expect("an update was tried") < Duration::from_millis(500), "the update must fail at once");
    match &old_replies[..] {
        [Reply::Welcome, Reply::Unavailable { id: 7, reason }] => assert!(reason.contains("protocol (1)"), "{reason}"),
        other => panic!("a protocol-1 lookup must be refused, got {other:?}"),
    }

    // The members come back: answers are current again, and updates commit.
    sys.etcd.restart(1).unwrap();
    sys.etcd.restart(2).unwrap();
    let back = Instant::now();
    let mut current_in_a_row = 0;
    while current_in_a_row < 3 * sys.ds.addrs().len() {
        assert!(back.elapsed() < Duration::from_secs(20), "answers never became current again");
        n = n % mappings + 1;
        match agent.resolve(aa(n)).await {
            Answer { result: Ok(la), stale: None } if la == La(n) => current_in_a_row += 1,
            _ => current_in_a_row = 0,
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let current_after = back.elapsed();
    let revision = writer.update(aa(1), web(1001)).await.expect("updates commit again");
    let mut seen = None;
    for _ in 0..50 {
        if agent.resolve(aa(1)).await == (Answer { result: Ok(La(1001)), stale: None }) {
            seen = Some(back.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "store loss: members restarted; answers current after {current_after:?}; an update committed at revision {revision} and was resolved after {seen:?}"
    );
    assert!(seen.is_some(), "the update after recovery must be resolved");
}
