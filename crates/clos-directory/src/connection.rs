//! One agent-side session with a directory server: a writer task that coalesces requests into as
//! few writes as possible, and a reader task that routes each reply to whoever waits for its id.
//!
//! Pipelining many lookups on one connection is what lets a burst of new flows (VL2 §4.3.1:
//! "servers can communicate with up to hundreds of other servers in a short time period") be
//! resolved with a handful of system calls instead of one round trip each.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rustc_hash::FxHashMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::address::{Aa, La};
use crate::tls::{ClientTls, SessionReader, SessionWriter};
use crate::wire::protocol::{rejected_as_first_protocol, FIRST_PROTOCOL};
use crate::wire::{FrameBuffer, Reply, Request, Role, DEFAULT_MAX_FRAME_BYTES, PROTOCOL};

/// What a waiter learns about one request.
#[derive(Clone, Debug)]
pub enum Outcome {
    Reply(Reply),
    /// The connection closed before the reply came.
    Lost,
    /// The server rejected the session (a request its role may not send, say) and closed it;
    /// its message says why. Another server would say the same.
    Rejected(String),
}

/// A waiter: the channel of the call that sent the request, and the call's own tag for it.
type Waiter = (mpsc::UnboundedSender<(u32, Outcome)>, u32);

/// Receives corrections the server pushes (VL2 §4.3 reactive cache update).
pub type CorrectionSink = Arc<dyn Fn(Aa, La, i64) + Send + Sync>;

pub struct Connection {
    pub server: SocketAddr,
    /// The protocol revision of the session (`wire/protocol.rs`): this build's, or 1 with a
    /// server that only speaks that.
    pub protocol: u8,
    requests: mpsc::UnboundedSender<Request>,
    waiters: Mutex<FxHashMap<u64, Waiter>>,
    alive: AtomicBool,
}

impl Connection {
    /// Connects (in TLS if `tls` is given, verifying the server against its CA) and
    /// authenticates. Fails if the server does not welcome us within `timeout`; a server that
    /// refuses the session or is not trusted gives `PermissionDenied` with the reason. A server
    /// that only speaks protocol 1 rejects this build's Hello; the session is then opened again
    /// as protocol 1.
    pub async fn open(
        server: SocketAddr,
        role: Role,
        aa: Aa,
        token: &[u8],
        tls: Option<&ClientTls>,
        timeout: Duration,
        corrections: Option<CorrectionSink>,
    ) -> std::io::Result<Arc<Connection>> {
        let handshake = |protocol: u8| async move {
            let (mut rd, mut wr) = crate::tls::connect(server, tls).await?;
            let mut hello = Vec::new();
            Request::Hello { role, aa, token: token.to_vec(), protocol }.encode(&mut hello);
            wr.write_all(&hello).await?;
            wr.flush().await?;
            let mut frames = FrameBuffer::new(DEFAULT_MAX_FRAME_BYTES);
            loop {
                if rd.read_buf(frames.spare(1024)).await? == 0 {
                    return Err(std::io::Error::other("server closed the session during Hello"));
                }
                if let Some(body) = frames.next_frame().map_err(std::io::Error::other)? {
                    return match Reply::decode(body).map_err(std::io::Error::other)? {
                        Reply::Welcome => Ok((rd, wr, frames)),
                        Reply::Rejected { message } => Err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, message)),
                        other => Err(std::io::Error::other(format!("unexpected reply to Hello: {other:?}"))),
                    };
                }
            }
        };
        let mut protocol = PROTOCOL;
        let (rd, wr, frames) = loop {
            let opened = tokio::time::timeout(timeout, handshake(protocol))
                .await
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, format!("{server} did not answer Hello within {timeout:?}")))?;
            match opened {
                Err(e) if protocol > FIRST_PROTOCOL && rejected_as_first_protocol(&e.to_string()) => protocol = FIRST_PROTOCOL,
                opened => break opened?,
            }
        };
        let (requests, queue) = mpsc::unbounded_channel();
        let connection = Arc::new(Connection { server, protocol, requests, waiters: Mutex::new(FxHashMap::default()), alive: AtomicBool::new(true) });
        // The tasks hold weak references: dropping the last `Arc` closes the request queue,
        // which ends the writer, which half-closes the socket, which ends the server's session
        // and so the reader.
        tokio::spawn(write_requests(wr, queue, Arc::downgrade(&connection)));
        tokio::spawn(read_replies(rd, frames, Arc::downgrade(&connection), corrections));
        Ok(connection)
    }

    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Relaxed)
    }

    /// Sends `request` (which must carry `id`); its reply goes to `waiter`. Returns false if the
    /// connection is already gone (the waiter then hears nothing and should not wait).
    pub fn send(&self, id: u64, request: Request, waiter: Waiter) -> bool {
        if !self.is_alive() {
            return false;
        }
        self.waiters.lock().expect("waiters lock poisoned").insert(id, waiter);
        if self.requests.send(request).is_err() {
            self.waiters.lock().expect("waiters lock poisoned").remove(&id);
            return false;
        }
        true
    }

    /// Forgets a request whose answer is no longer wanted.
    pub fn forget(&self, id: u64) {
        self.waiters.lock().expect("waiters lock poisoned").remove(&id);
    }

    fn fail_all(&self, outcome: Outcome) {
        self.alive.store(false, Ordering::Relaxed);
        let waiters = std::mem::take(&mut *self.waiters.lock().expect("waiters lock poisoned"));
        for (_, (tx, tag)) in waiters {
            let _ = tx.send((tag, outcome.clone()));
        }
    }
}

async fn write_requests(mut wr: SessionWriter, mut queue: mpsc::UnboundedReceiver<Request>, connection: Weak<Connection>) {
    let mut out = Vec::with_capacity(16 * 1024);
    while let Some(request) = queue.recv().await {
        request.encode(&mut out);
        while out.len() < 64 * 1024 {
            match queue.try_recv() {
                Ok(r) => r.encode(&mut out),
                Err(_) => break,
            }
        }
        if wr.write_all(&out).await.is_err() || wr.flush().await.is_err() {
            break;
        }
        out.clear();
    }
    let _ = wr.shutdown().await;
    if let Some(connection) = connection.upgrade() {
        connection.fail_all(Outcome::Lost);
    }
}

async fn read_replies(mut rd: SessionReader, mut frames: FrameBuffer, weak: Weak<Connection>, corrections: Option<CorrectionSink>) {
    let outcome = loop {
        // Hold the connection only while routing replies, never across the read below.
        let Some(connection) = weak.upgrade() else { return };
        if let Err(outcome) = route_replies(&mut frames, &connection, &corrections) {
            break outcome;
        }
        drop(connection);
        match rd.read_buf(frames.spare(16 * 1024)).await {
            Ok(0) | Err(_) => break Outcome::Lost,
            Ok(_) => {}
        }
    };
    if let Some(connection) = weak.upgrade() {
        connection.fail_all(outcome);
    }
}

/// Routes every complete reply in `frames`; an error ends the session: the server rejected it
/// (`Outcome::Rejected`) or broke the protocol (`Outcome::Lost`).
fn route_replies(frames: &mut FrameBuffer, connection: &Connection, corrections: &Option<CorrectionSink>) -> Result<(), Outcome> {
    loop {
        let body = match frames.next_frame() {
            Ok(Some(body)) => body,
            Ok(None) => return Ok(()),
            Err(_) => return Err(Outcome::Lost),
        };
        let Ok(reply) = Reply::decode(body) else { return Err(Outcome::Lost) };
        let id = match &reply {
            Reply::Found { id, .. }
            | Reply::NotFound { id }
            | Reply::Denied { id }
            | Reply::Unavailable { id, .. }
            | Reply::Acked { id, .. }
            | Reply::Refused { id, .. }
            | Reply::Stale { id, .. }
            | Reply::StoreUnreachable { id, .. } => *id,
            Reply::Correction { target, la, revision } => {
                if let Some(sink) = corrections {
                    sink(*target, *la, *revision);
                }
                continue;
            }
            Reply::Rejected { message } => return Err(Outcome::Rejected(message.clone())),
            Reply::Welcome => return Err(Outcome::Lost),
        };
        let waiter = connection.waiters.lock().expect("waiters lock poisoned").remove(&id);
        if let Some((tx, tag)) = waiter {
            let _ = tx.send((tag, Outcome::Reply(reply)));
        }
    }
}
