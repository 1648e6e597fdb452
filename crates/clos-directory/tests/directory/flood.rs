//! Issue 39: one credential holder cannot crowd out the others. A flooding agent principal
//! opens sessions far beyond its cap and pipelines lookups on each as fast as the server reads
//! them; meanwhile another agent opens a session and looks up one at a time. With
//! `max_per_principal` the flooder holds only its cap of sessions, so the victim is admitted
//! though `max_sessions` is small; with the per-session rate limit the flood is read at
//! `rate` per session, so the victim's lookups stay fast.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clos_directory::address::La;
use clos_directory::cluster::ServerOptions;
use clos_directory::credentials::PrincipalConfig;
use clos_directory::mapping::Mapping;
use clos_directory::resolver::{Resolver, ResolverConfig};
use clos_directory::wire::{FrameBuffer, Reply, Request, Role, PROTOCOL};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::harness::{aa, provisioner, quantile, serial, start};

const FLOODER: &str = "flooding-agent-token-0001";
const FLOOD_FOR: Duration = Duration::from_secs(2);

/// The limits under test, and the old behaviour (no cap beyond `max_sessions`, no rate).
fn options(limited: bool, max_sessions: usize) -> ServerOptions {
    ServerOptions {
        principals: vec![PrincipalConfig { aas: Some(vec![aa(100).to_string()]), ..PrincipalConfig::new("flooder", Role::Agent, FLOODER) }],
        max_sessions,
        max_unauthenticated: 24,
        max_per_principal: if limited { 4 } else { max_sessions },
        rate: if limited { 2_000 } else { 10_000_000 },
        burst: if limited { 200 } else { 1_000_000 },
        ..ServerOptions::default()
    }
}

/// Opens a flooder session; `None` if the server turned it away (closed it, or `Rejected`).
async fn flooder_session(server: SocketAddr) -> Option<TcpStream> {
    let mut s = TcpStream::connect(server).await.ok()?;
    let mut hello = Vec::new();
    Request::Hello { role: Role::Agent, aa: aa(100), token: FLOODER.as_bytes().to_vec(), protocol: PROTOCOL }.encode(&mut hello);
    s.write_all(&hello).await.ok()?;
    let mut frames = FrameBuffer::new(4096);
    let welcome = async {
        loop {
            match s.read_buf(frames.spare(1024)).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {
                    if let Ok(Some(body)) = frames.next_frame() {
                        return Some(Reply::decode(body).ok()? == Reply::Welcome);
                    }
                }
            }
        }
    };
    match tokio::time::timeout(Duration::from_secs(2), welcome).await {
        Ok(Some(true)) => Some(s),
        _ => None,
    }
}

/// Pipelines lookups on `s` until `until`, reading and counting the answers.
async fn flood(s: TcpStream, until: Instant, answered: Arc<AtomicU64>) {
    let (mut rd, mut wr) = s.into_split();
    let reader = tokio::spawn(async move {
        let mut frames = FrameBuffer::new(4096);
        while let Ok(n) = rd.read_buf(frames.spare(64 * 1024)).await {
            if n == 0 {
                break;
            }
            while let Ok(Some(_)) = frames.next_frame() {
                answered.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let mut batch = Vec::new();
    for id in 0..256u64 {
        Request::Lookup { id, target: aa(1) }.encode(&mut batch);
    }
    while Instant::now() < until {
        match tokio::time::timeout_at(until.into(), wr.write_all(&batch)).await {
            Ok(Ok(())) => {}
            _ => break,
        }
    }
    drop(wr);
    let _ = tokio::time::timeout(Duration::from_secs(3), reader).await;
}

struct Measured {
    flooder_sessions: usize,
    flood_answered: u64,
    /// The victim's lookups during the flood, in milliseconds; `None` if it was turned away.
    victim_ms: Option<Vec<f64>>,
}

async fn run(name: &str, limited: bool, max_sessions: usize) -> Option<Measured> {
    let sys = start(name, 1, 1, options(limited, max_sessions)).await?;
    let server = sys.ds.addrs()[0];
    provisioner(&sys.ds).update(aa(1), Some(Mapping { la: La(7), service: "web".into() })).await.expect("update");
    provisioner(&sys.ds).update(aa(100), Some(Mapping { la: La(8), service: "web".into() })).await.expect("update");

    // The flooder asks for 32 sessions, more than max_sessions (24) in all.
    let mut sessions = Vec::new();
    for _ in 0..32 {
        if let Some(s) = flooder_session(server).await {
            sessions.push(s);
        }
    }
    let flooder_sessions = sessions.len();
    let answered = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + FLOOD_FOR;
    let flooders: Vec<_> = sessions.into_iter().map(|s| tokio::spawn(flood(s, until, answered.clone()))).collect();
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Another agent (the cluster's agent principal) opens its session during the flood and
    // looks up one AA at a time, 200 times, 5 ms apart.
    let mut config = ResolverConfig::new(vec![server], sys.ds.tokens.agent.as_bytes(), aa(1));
    config.cache = false;
    let victim = Resolver::new(config).unwrap();
    let victim_ms = if victim.connect_all().await == 1 {
        let mut ms = Vec::new();
        for _ in 0..200 {
            let t = Instant::now();
            assert_eq!(victim.lookup(aa(1)).await, Ok(La(7)), "the victim's lookups are answered");
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Some(ms)
    } else {
        None
    };
    // Answers counted while the flood ran (the backlog in the sockets is read on after it).
    tokio::time::sleep_until(until.into()).await;
    let flood_answered = answered.load(Ordering::Relaxed);
    for f in flooders {
        let _ = f.await;
    }
    Some(Measured { flooder_sessions, flood_answered, victim_ms })
}

/// Bounds, on this project's 2-core machine shared by etcd, the server, the flooding client
/// and the victim: unflooded, a lookup takes 0.1-0.3 ms, and the flood the limits let through
/// (4 sessions × 2,000/s) costs the server under 1% of a core. The victim's p99 is held to VL2's
/// own criterion for lookups, 10 ms (§5.5), and its slowest lookup to 100 ms, as in the idle
/// sessions test: room for a busy machine, and far below what an unlimited flood does (p99
/// 44-121 ms with the limits off).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_principal_neither_locks_out_nor_slows_other_agents() {
    let _serial = serial();
    let Some(m) = run("flood", true, 24).await else { return };
    let mut victim = m.victim_ms.expect("the victim's session must be admitted while the flooder is at its cap");
    let p99 = quantile(&mut victim, 0.99);
    let max = quantile(&mut victim, 1.0);
    let flood_rate = m.flood_answered as f64 / FLOOD_FOR.as_secs_f64();
    eprintln!("flood: {} flooder sessions admitted, flood answered {flood_rate:.0}/s; victim p99 {p99:.2} ms, max {max:.2} ms", m.flooder_sessions);
    assert_eq!(m.flooder_sessions, 4, "the flooder holds only max_per_principal sessions");
    // 4 sessions × (2,000/s + a burst of 200 over the 2 s), with 10% to spare.
    assert!(flood_rate < 4.0 * (2_000.0 + 200.0 / 2.0) * 1.1, "the flood was answered at {flood_rate:.0}/s, beyond the sessions' rate");
    assert!(p99 < 10.0 && max < 100.0, "the victim's lookups took p99 {p99:.2} ms, max {max:.2} ms during the flood");
}
