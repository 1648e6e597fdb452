//! Malformed, oversized and unauthenticated requests get a `Rejected` reply naming the problem
//! and a closed session, never a crash: the server keeps serving everyone else.

use clos_directory::address::La;
use clos_directory::cluster::ServerOptions;
use clos_directory::mapping::Mapping;
use clos_directory::wire::{Reply, Request, Role};

use crate::harness::{aa, agent, exchange, provisioner, serial, start};

fn hello(token: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    Request::Hello { role: Role::Agent, aa: aa(1), token: token.to_vec(), protocol: 1 }.encode(&mut out);
    out
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

fn rejected(replies: &[Reply]) -> String {
    match replies.last() {
        Some(Reply::Rejected { message }) => message.clone(),
        other => panic!("expected a Rejected reply last, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_rejected_with_a_reason_and_the_server_survives() {
    let _serial = serial();
    let Some(mut sys) = start("bad", 1, 1, ServerOptions::default()).await else { return };
    let server = sys.ds.addrs()[0];
    let token = sys.ds.tokens.agent.clone();
    let good = hello(token.as_bytes());

    let mut lookup = Vec::new();
    Request::Lookup { id: 1, target: aa(2) }.encode(&mut lookup);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("a lookup before Hello", lookup.clone(), "unauthenticated: the first request"),
        ("a wrong token", hello(b"guess"), "unauthenticated: wrong token"),
        ("an empty token", hello(b""), "unauthenticated: wrong token"),
        ("a 100 MB length", [&good[..], &(100_000_000u32).to_be_bytes()[..]].concat(), "frame of 100000000 bytes exceeds the limit of 1024 bytes"),
        ("an unknown kind", [&good[..], &frame(&[0x42, 1, 2])[..]].concat(), "unknown request kind 0x42"),
        ("a truncated lookup", [&good[..], &frame(&[2, 0, 0, 0])[..]].concat(), "Lookup.id: frame ends early"),
        ("trailing bytes", [&good[..], &frame(&[2, 0, 0, 0, 0, 0, 0, 0, 1, 10, 0, 0, 1, 9])[..]].concat(), "1 unexpected bytes after the last field"),
        (
            "a non-UTF-8 service",
            [&good[..], &frame(&[3, 0, 0, 0, 0, 0, 0, 0, 1, 10, 0, 0, 1, 20, 0, 0, 1, 2, 0xff, 0xfe])[..]].concat(),
            "Update.service: not UTF-8",
        ),
        ("an empty frame", [&good[..], &frame(&[])[..]].concat(), "empty body"),
        ("a bad role", frame(&[1, 9, 0, 0, 0, 0, 0]), "Hello.role: 9 is not"),
        ("a second Hello", [&good[..], &good[..]].concat(), "already open"),
        (
            "a peer push from an agent",
            {
                let mut b = good.clone();
                Request::PeerPush { aa: aa(2), revision: 1 << 40, mapping: None }.encode(&mut b);
                b
            },
            "PeerPush is not allowed in a session opened as Agent",
        ),
    ];
    for (what, bytes, expected) in &cases {
        let message = rejected(&exchange(server, bytes).await);
        assert!(message.contains(expected), "{what}: got '{message}', expected it to mention '{expected}'");
    }
    // A truncated frame followed by a close is dropped quietly (nothing to reply to).
    let partial = [&good[..], &[0, 0, 0, 13, 2, 0][..]].concat();
    let replies = exchange(server, &partial).await;
    assert_eq!(replies, vec![Reply::Welcome]);

    assert!(sys.ds.is_running(0), "the server must survive every bad request");
    let a = agent(&sys.ds, aa(1));
    provisioner(&sys.ds).update(aa(1), Some(Mapping { la: La(9), service: "web".into() })).await.expect("still serving updates");
    assert_eq!(a.lookup(aa(1)).await, Ok(La(9)), "still serving lookups");
}
