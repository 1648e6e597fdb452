//! Issue 42: a peer session that pushes a forged mapping at revision `i64::MAX` (which nothing
//! committed can ever overtake) poisons that server's answer only until its next lazy
//! resynchronisation, which drops every push the store has not confirmed.

use std::time::Duration;

use clos_directory::address::La;
use clos_directory::cluster::ServerOptions;
use clos_directory::mapping::Mapping;
use clos_directory::resolver::{Resolver, ResolverConfig};
use clos_directory::wire::{Request, Role};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::harness::{aa, serial, start};

/// A fresh agent without a cache, so that every lookup asks the server.
fn uncached(sys: &crate::harness::System) -> Resolver {
    let mut config = ResolverConfig::new(sys.ds.addrs(), sys.ds.token.as_bytes(), aa(1));
    config.cache = false;
    Resolver::new(config).expect("resolver")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_peer_push_is_gone_within_one_resync_interval() {
    let _serial = serial();
    let options = ServerOptions { resync_interval: "1s".into(), ..ServerOptions::default() };
    let Some(sys) = start("forged-push", 1, 1, options).await else { return };
    let web = |la: u32| Some(Mapping { la: La(la), service: "web".into() });
    let agent = uncached(&sys);
    agent.update(aa(1), web(5)).await.expect("update");
    agent.update(aa(2), web(7)).await.expect("update");
    assert_eq!(agent.lookup(aa(2)).await, Ok(La(7)));

    // The attack: a session opened as a peer with the cluster's token.
    let mut bytes = Vec::new();
    Request::Hello { role: Role::Peer, aa: aa(0), token: sys.ds.token.as_bytes().to_vec() }.encode(&mut bytes);
    Request::PeerPush { aa: aa(2), revision: i64::MAX, mapping: web(666) }.encode(&mut bytes);
    let mut s = TcpStream::connect(sys.ds.addrs()[0]).await.unwrap();
    s.write_all(&bytes).await.unwrap();
    s.shutdown().await.unwrap();
    let poisoned = async {
        while agent.lookup(aa(2)).await != Ok(La(666)) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(2), poisoned).await.expect("the push lands at first (the attack is real)");

    // A legitimate update after the attack is acknowledged; within one resync interval (1 s,
    // with 1 s to spare for the snapshot) the server answers the store's mapping again.
    agent.update(aa(2), web(8)).await.expect("update");
    let healed = async {
        while agent.lookup(aa(2)).await != Ok(La(8)) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(2), healed).await.expect("the forged mapping must be gone after a resync");
}
