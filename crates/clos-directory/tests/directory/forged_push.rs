//! Issue 42, replication that cannot be forged. The attack as reported: a hostile tenant (one
//! etcd member, two directory servers, isolation on) opens a peer session and pushes AA 2 at
//! revision `i64::MAX` with an LA of its choice, and AA 3 as removed; nothing committed can
//! overtake `i64::MAX`, so the server answered the forged LA (and `NotFound`) past several
//! resync intervals, even after a legitimate update. Now:
//!
//! - an agent's credential opens no peer session at all;
//! - even with a peer's credential, a push above the store's revision as the server knows it is
//!   refused, so the store's mapping is served throughout, and a forged correction never
//!   reaches an agent's cache.

use std::time::{Duration, Instant};

use clos_directory::address::La;
use clos_directory::cluster::ServerOptions;
use clos_directory::mapping::Mapping;
use clos_directory::resolver::{LookupError, Resolver, ResolverConfig};
use clos_directory::wire::{Reply, Request, Role};

use crate::harness::{aa, exchange, provisioner, serial, start, System};

fn web(la: u32) -> Option<Mapping> {
    Some(Mapping { la: La(la), service: "web".into() })
}

/// An agent of AA 1 talking to server `i` only, without a cache, so every lookup asks it.
fn uncached(sys: &System, i: usize) -> Resolver {
    let mut config = ResolverConfig::new(vec![sys.ds.addrs()[i]], sys.ds.tokens.agent.as_bytes(), aa(1));
    config.cache = false;
    Resolver::new(config).expect("resolver")
}

/// Two servers, a 1 s resynchronisation, AA 1 (the requester), 2 and 3 mapped in service web.
async fn system(name: &str) -> Option<System> {
    let options = ServerOptions { resync_interval: "1s".into(), ..ServerOptions::default() };
    let sys = start(name, 1, 2, options).await?;
    let provisioning = provisioner(&sys.ds);
    for (n, la) in [(1, 5), (2, 7), (3, 9)] {
        provisioning.update(aa(n), web(la)).await.expect("update");
    }
    for i in 0..2 {
        let agent = uncached(&sys, i);
        let deadline = Instant::now() + Duration::from_secs(2);
        while agent.lookup(aa(3)).await != Ok(La(9)) {
            assert!(Instant::now() < deadline, "server {i} never learnt the mappings");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    Some(sys)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_session_needs_a_peer_credential() {
    let _serial = serial();
    let Some(sys) = system("peer-credential").await else { return };
    // The tenant holds an agent's credential (formerly: the one cluster token).
    let mut bytes = Vec::new();
    Request::Hello { role: Role::Peer, aa: aa(0), token: sys.ds.tokens.agent.as_bytes().to_vec(), protocol: 1 }.encode(&mut bytes);
    Request::PeerPush { aa: aa(2), revision: i64::MAX, mapping: web(666) }.encode(&mut bytes);
    let replies = exchange(sys.ds.addrs()[0], &bytes).await;
    match replies.as_slice() {
        [Reply::Rejected { message }] => assert!(message.contains("wrong token for a peer session"), "{message}"),
        other => panic!("a peer session with an agent's token must be rejected, got {other:?}"),
    }
    assert_eq!(uncached(&sys, 0).lookup(aa(2)).await, Ok(La(7)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_peer_push_is_refused_and_the_store_is_believed() {
    let _serial = serial();
    let Some(sys) = system("forged-push").await else { return };
    let server = sys.ds.addrs()[0];
    // An agent of AA 1 with a session at server 0 and AA 2 in its cache: the target of a
    // forged correction.
    let mut config = ResolverConfig::new(vec![server], sys.ds.tokens.agent.as_bytes(), aa(1));
    config.seed = 1;
    let cached = Resolver::new(config).unwrap();
    assert_eq!(cached.lookup(aa(2)).await, Ok(La(7)));

    // The attack, with a peer's credential (ds1's, stolen): a mapping and a removal at
    // i64::MAX, one just above the last revision the store acknowledged, and a correction.
    let acked = provisioner(&sys.ds).update(aa(4), web(11)).await.expect("update");
    let mut bytes = Vec::new();
    Request::Hello { role: Role::Peer, aa: aa(0), token: sys.ds.tokens.peers[1].as_bytes().to_vec(), protocol: 1 }.encode(&mut bytes);
    Request::PeerPush { aa: aa(2), revision: i64::MAX, mapping: web(666) }.encode(&mut bytes);
    Request::PeerPush { aa: aa(3), revision: i64::MAX, mapping: None }.encode(&mut bytes);
    Request::PeerPush { aa: aa(4), revision: acked + 1, mapping: web(667) }.encode(&mut bytes);
    Request::PeerCorrection { sender: aa(1), target: aa(2), la: La(666), revision: i64::MAX }.encode(&mut bytes);
    assert_eq!(exchange(server, &bytes).await, vec![Reply::Welcome], "a peer session takes pushes silently");

    // For one and a half resync intervals the poisoned server must answer the store's
    // mappings, never the forged ones.
    let agent = uncached(&sys, 0);
    let attacked = Instant::now();
    while attacked.elapsed() < Duration::from_millis(1500) {
        let results = agent.lookup_many(&[aa(2), aa(3), aa(4)]).await;
        assert_eq!(results, vec![Ok(La(7)), Ok(La(9)), Ok(La(11))], "{:?} after the forged pushes", attacked.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(cached.cached(aa(2)), Some(La(7)), "a forged correction must not reach an agent's cache");
    assert_eq!(cached.corrections(), 0);

    // A legitimate update through the same server is acknowledged and served at once.
    let only_0 = Resolver::new(ResolverConfig::provisioner(vec![server], sys.ds.tokens.provisioner.as_bytes())).unwrap();
    only_0.update(aa(2), web(8)).await.expect("update");
    only_0.update(aa(3), None).await.expect("removal");
    let deadline = Instant::now() + Duration::from_millis(500);
    while agent.lookup_many(&[aa(2), aa(3)]).await != vec![Ok(La(8)), Err(LookupError::NotFound)] {
        assert!(Instant::now() < deadline, "the legitimate update was not served");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
