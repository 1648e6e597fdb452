//! Issue 42: connections that never authenticate (silent, or stalled mid-frame) cannot hold
//! the server. Beyond
//! `max_unauthenticated` a connection is closed at once, the others when `hello_timeout`
//! passes without a Hello, and an agent with a session is served throughout. (While the cap is
//! full a new connection is refused too, legitimate or not: the deadline bounds for how long.)

use std::time::{Duration, Instant};

use clos_directory::address::La;
use clos_directory::cluster::ServerOptions;
use clos_directory::mapping::Mapping;
use clos_directory::wire::{FrameBuffer, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::harness::{aa, agent, provisioner, serial, start};

/// Reads until the server closes `s` (or `limit` passes); the replies it sent, and when.
async fn until_closed(mut s: TcpStream, limit: Duration) -> Option<(Vec<Reply>, Instant)> {
    let mut frames = FrameBuffer::new(4096);
    let mut replies = Vec::new();
    let read = async {
        loop {
            match s.read_buf(frames.spare(1024)).await {
                Ok(0) | Err(_) => return Instant::now(),
                Ok(_) => {
                    while let Ok(Some(body)) = frames.next_frame() {
                        replies.push(Reply::decode(body).expect("server replies are well-formed"));
                    }
                }
            }
        }
    };
    let closed = tokio::time::timeout(limit, read).await.ok()?;
    Some((replies, closed))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_capped_and_timed_out_while_agents_are_served() {
    let _serial = serial();
    let options = ServerOptions { hello_timeout: "500ms".into(), max_unauthenticated: 16, ..ServerOptions::default() };
    let Some(mut sys) = start("idle", 1, 1, options).await else { return };
    let server = sys.ds.addrs()[0];
    let a = agent(&sys.ds, aa(1));
    provisioner(&sys.ds).update(aa(1), Some(Mapping { la: La(3), service: "web".into() })).await.expect("update");
    assert_eq!(a.lookup(aa(1)).await, Ok(La(3)), "the agent's session opens before the flood");

    // 64 connections that send nothing, or half a frame (a Hello's length and 3 of its 26
    // bytes): 16 are admitted, 48 closed at once.
    let opened = Instant::now();
    let mut idle = Vec::new();
    for i in 0..64 {
        let mut s = TcpStream::connect(server).await.unwrap();
        if i % 2 == 1 {
            let _ = s.write_all(&[0, 0, 0, 26, 1, 1, 10]).await;
        }
        idle.push(s);
    }
    // An agent whose session was open before is served throughout: lookups while the idle
    // connections sit there, each well under the 500 ms deadline they are waiting out.
    for _ in 0..20 {
        let t = Instant::now();
        assert_eq!(a.lookup(aa(1)).await, Ok(La(3)));
        assert!(t.elapsed() < Duration::from_millis(100), "a lookup took {:?}", t.elapsed());
    }
    let mut at_once = 0;
    let mut timed_out = 0;
    for s in idle {
        let (replies, closed) = until_closed(s, Duration::from_secs(3)).await.expect("every idle connection is closed");
        let after = closed - opened;
        match replies.last() {
            Some(Reply::Rejected { message }) => {
                assert!(message.contains("no Hello within"), "{message}");
                assert!(after >= Duration::from_millis(450), "closed after {after:?}, before the deadline");
                timed_out += 1;
            }
            None => at_once += 1,
            other => panic!("unexpected reply {other:?}"),
        }
    }
    assert_eq!((timed_out, at_once), (16, 48));
    // Once they are gone, a new agent's session is admitted again.
    let b = agent(&sys.ds, aa(1));
    assert_eq!(b.lookup(aa(1)).await, Ok(La(3)));
    assert!(sys.ds.is_running(0));
}
