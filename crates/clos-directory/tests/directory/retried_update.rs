//! Issue 39: the lost update. A provisioner's update times out at one directory server whose
//! commit is still on its way, is sent again to another server and committed, and a later
//! update of the same AA commits after it. The first server's copy, arriving late, must not
//! land on top of the later update, nor bring back an AA removed after it. Here the first
//! server reaches etcd through a relay the test freezes, so its commit waits exactly as long as
//! the test wants.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clos_directory::address::{Aa, La};
use clos_directory::cluster::{DirectoryServers, EtcdCluster, ServerOptions};
use clos_directory::connection::{Connection, Outcome};
use clos_directory::mapping::Mapping;
use clos_directory::origin::{Marks, Origin};
use clos_directory::store::{Store, Write};
use clos_directory::wire::{Reply, Request, Role, PROTOCOL};
use tokio::sync::mpsc;

use crate::harness::{aa, binary, etcd, folder, provisioner, serial};
use crate::partition::Partition;

fn remove(id: u64, target: Aa, writer: u64, seq: u64) -> Request {
    Request::Remove { id, aa: target, origin: Some(Origin { writer, seq }) }
}

fn update(id: u64, target: Aa, la: u32, writer: u64, seq: u64) -> Request {
    Request::Update { id, aa: target, mapping: Mapping { la: La(la), service: "web".into() }, origin: Some(Origin { writer, seq }) }
}

/// Sends `request` and waits for its acknowledgement.
async fn acked(connection: &Connection, id: u64, request: Request) -> i64 {
    let (tx, mut rx) = mpsc::unbounded_channel();
    assert!(connection.send(id, request, (tx, 0)));
    match tokio::time::timeout(Duration::from_secs(3), rx.recv()).await {
        Ok(Some((_, Outcome::Reply(Reply::Acked { revision, .. })))) => revision,
        other => panic!("update {id} not acknowledged: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_copy_of_a_retried_update_never_overwrites_a_later_one() {
    let _serial = serial();
    let Some(etcd_bin) = etcd() else { return };
    let folder = folder("retried-update");
    let dir = folder.0.clone();
    let etcd = EtcdCluster::start(&dir, 1, &etcd_bin).unwrap();
    etcd.wait_healthy(Duration::from_secs(20)).await.unwrap();
    let direct = etcd.endpoints()[0].clone();
    let upstream: SocketAddr = direct.trim_start_matches("http://").parse().unwrap();
    let relay = Partition::start(upstream).await;
    // Server 0 reaches etcd only through the relay; server 1 directly.
    let endpoints = vec![vec![format!("http://{}", relay.addr)], vec![direct.clone()]];
    let ds = DirectoryServers::start(&dir, &binary(), &endpoints, &ServerOptions { push_to_peers: false, ..ServerOptions::default() }).unwrap();
    ds.wait_ready(0, Duration::from_secs(20)).await.unwrap();
    ds.wait_ready(1, Duration::from_secs(20)).await.unwrap();
    let (x, y, z) = (aa(1), aa(2), aa(3));
    let setup = provisioner(&ds);
    setup.update(x, Some(Mapping { la: La(10), service: "web".into() })).await.unwrap();
    setup.update(y, Some(Mapping { la: La(20), service: "web".into() })).await.unwrap();
    setup.update(z, Some(Mapping { la: La(30), service: "web".into() })).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    // One provisioning client (writer W) with a session at each server, as the resolver keeps.
    let token = ds.tokens.provisioner.as_bytes();
    let open = |i: usize| Connection::open(ds.addrs()[i], Role::Provisioner, Aa(0), token, ds.tls.as_ref(), Duration::from_secs(1), None);
    let (first, second) = (open(0).await.unwrap(), open(1).await.unwrap());
    assert_eq!((first.protocol, second.protocol), (PROTOCOL, PROTOCOL));
    let (w, v) = (0x5eed_0001, 0x5eed_0002);

    // W's updates 1, 2, 3 (of x, y, z) reach server 0, whose commit is now stuck.
    relay.frozen.store(true, Ordering::Relaxed);
    let (tx, mut late) = mpsc::unbounded_channel();
    assert!(first.send(1, update(1, x, 11, w, 1), (tx.clone(), 1)));
    assert!(first.send(2, update(2, y, 21, w, 2), (tx.clone(), 2)));
    assert!(first.send(3, update(3, z, 31, w, 3), (tx, 3)));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(late.try_recv().is_err(), "server 0's commit must still be on its way");
    // W times out and sends them again, to server 1, which commits them. Then later updates
    // commit there: W's own update 4 of x, another writer V's update of y, and W's removal
    // of z.
    for (id, request) in [(1, update(1, x, 11, w, 1)), (2, update(2, y, 21, w, 2)), (3, update(3, z, 31, w, 3))] {
        acked(&second, id, request).await;
    }
    let later_x = acked(&second, 4, update(4, x, 12, w, 4)).await;
    let later_y = acked(&second, 5, update(5, y, 22, v, 1)).await;
    acked(&second, 6, remove(6, z, w, 5)).await;

    // Server 0's copies now reach the store, guarded by the entries they were decided on.
    relay.frozen.store(false, Ordering::Relaxed);
    for _ in 0..3 {
        match tokio::time::timeout(Duration::from_secs(3), late.recv()).await {
            Ok(Some((tag, Outcome::Reply(Reply::Acked { .. })))) => eprintln!("retried update: server 0 acknowledged its late copy of update {tag}"),
            other => panic!("server 0 must answer its late copies: {other:?}"),
        }
    }
    let store = Store::connect(&[direct], "/clos/vl2", Duration::from_secs(2)).await.unwrap();
    let (got_x, got_y, got_z) = (store.read(x).await.unwrap(), store.read(y).await.unwrap(), store.read(z).await.unwrap());
    eprintln!("retried update: x = {got_x:?} (later update at {later_x}), y = {got_y:?} (later update at {later_y}), z = {got_z:?} (removed)");
    assert_eq!(got_x.map(|(m, r)| (m.la, r)), Some((La(12), later_x)), "W's late copy of update 1 overwrote W's update 3");
    assert_eq!(got_y.map(|(m, r)| (m.la, r)), Some((La(22), later_y)), "W's late copy of update 2 overwrote V's update");
    assert_eq!(got_z, None, "W's late copy of update 3 brought back the AA W removed after it");

    // The removal left a tombstone holding W's mark, under a lease: etcd deletes it when the
    // lease expires (`tombstone_ttl`; 1 s here).
    let key = |a: Aa| format!("/clos/vl2/aa/{a}");
    let mut etcd_client = etcd_client::Client::connect([etcd.endpoints()[0].clone()], None).await.unwrap();
    let tombstone = etcd_client.get(key(z), None).await.unwrap();
    let kv = tombstone.kvs().first().expect("the removal keeps a tombstone");
    assert!(kv.value_str().unwrap().starts_with("removed ") && kv.lease() != 0, "{:?}", kv.value_str());
    let mut marks = Marks::default();
    marks.record(Origin { writer: w, seq: 9 });
    let w_removes = Write { aa: aa(4), mapping: None, marks };
    store.commit(&[(aa(4), 0)], &[w_removes], Duration::from_secs(1)).await.unwrap();
    let written = std::time::Instant::now();
    while etcd_client.get(key(aa(4)), None).await.unwrap().count() > 0 {
        assert!(written.elapsed() < Duration::from_secs(10), "a tombstone under a 1 s lease was never deleted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("retried update: a tombstone with a 1 s lease was deleted after {:?}", written.elapsed());
}
