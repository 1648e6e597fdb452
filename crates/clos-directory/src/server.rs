//! A directory server (VL2 §4.3.2): answers lookups from its in-memory table, forwards updates
//! to the store in batches, corrects stale agent caches when ToRs report misdelivered packets,
//! and optionally pushes acknowledged updates to peer directory servers.
//!
//! Every session authenticates as a principal (`credentials.rs`), whose role decides what it
//! may send (issue 42), and nothing a session asserts beyond its credential is believed:
//!
//! | role | may send |
//! |---|---|
//! | agent | `Lookup`, as the AA its credential names |
//! | ToR | `Report` |
//! | provisioner | `Update`, `Remove`, within its services (`authorisation.rs`) |
//! | peer | `PeerPush` (applied only within the store's revisions, `table.rs`), `PeerCorrection` (delivered only if this server's committed entry confirms it) |

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustc_hash::FxHashMap;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{broadcast, mpsc};
use tracing::{debug, info, warn};

use crate::address::{Aa, La};
use crate::batcher::{run_batcher, BatchSettings, PeerMessage, PendingUpdate};
use crate::config::{ServerConfig, SessionConfig};
use crate::credentials::{Aas, Credentials, Principal};
use crate::freshness::{Contact, Freshness, Serving};
use crate::mapping::{Mapping, Versioned};
use crate::origin::Origin;
use crate::peers::push_to_peers;
use crate::policy::Policy;
use crate::principal_sessions::{PrincipalSessions, PrincipalSlot};
use crate::rate_limit::TokenBucket;
use crate::store::Store;
use crate::sync::{keep_in_sync, SyncSettings};
use crate::table::{Resolution, Table};
use crate::wire::{FrameBuffer, Reply, Request, Role, WireError};

/// The sessions of each connected agent, by session number: where its corrections go.
type AgentSessions = FxHashMap<Aa, Vec<(u64, mpsc::UnboundedSender<Reply>)>>;

/// What every session of one server shares.
struct Shared {
    table: Arc<Table>,
    policy: Policy,
    freshness: Arc<Freshness>,
    credentials: Credentials,
    max_frame: usize,
    updates: mpsc::UnboundedSender<PendingUpdate>,
    /// Agents connected to this server, by their AA: where corrections for them are sent.
    agents: Mutex<AgentSessions>,
    peers: broadcast::Sender<PeerMessage>,
    limits: SessionConfig,
    /// Open sessions, and those of them still waiting for their Hello.
    sessions: AtomicUsize,
    unauthenticated: AtomicUsize,
    /// Authenticated sessions per principal, capped at `limits.max_per_principal`.
    principal_sessions: Arc<PrincipalSessions>,
}

/// One admitted session's place in the counts, given back when it ends.
struct Admitted {
    shared: Arc<Shared>,
    authenticated: bool,
}

impl Admitted {
    /// A new connection, if the limits leave room for it (`[sessions]`).
    fn admit(shared: &Arc<Shared>) -> Option<Admitted> {
        let limits = &shared.limits;
        if shared.sessions.fetch_add(1, Ordering::AcqRel) >= limits.max_sessions {
            shared.sessions.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        if shared.unauthenticated.fetch_add(1, Ordering::AcqRel) >= limits.max_unauthenticated {
            shared.unauthenticated.fetch_sub(1, Ordering::AcqRel);
            shared.sessions.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Admitted { shared: shared.clone(), authenticated: false })
    }

    fn authenticated(&mut self) {
        if !std::mem::replace(&mut self.authenticated, true) {
            self.shared.unauthenticated.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        if !self.authenticated {
            self.shared.unauthenticated.fetch_sub(1, Ordering::AcqRel);
        }
        self.shared.sessions.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Raises the soft limit on open descriptors to the hard one, so that sessions are bounded by
/// `[sessions]` rather than by a default soft limit of 1,024.
fn raise_descriptor_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed to them.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                warn!(soft = limit.rlim_cur, "could not raise the open-descriptor limit");
            }
        }
    }
}

/// Starts every task of a directory server and serves until the process is told to stop.
pub async fn serve(config: ServerConfig) -> anyhow::Result<()> {
    let credentials = config.credentials().map_err(|e| anyhow::anyhow!("{e}"))?;
    if config.policy.isolate_services {
        for p in credentials.principals().filter(|p| p.aas == Aas::Any) {
            warn!(principal = %p.name, "this agent credential may speak as any AA (aas = [\"*\"]), which bypasses isolate_services; name its AAs instead");
        }
    }
    let tls = match &config.tls {
        Some(tls) => tls.server().map_err(anyhow::Error::msg)?,
        None => anyhow::bail!("tls: missing; see docs/directory.md#tls"),
    };
    let peer_tls = match &config.tls {
        Some(tls) if !config.peers.is_empty() => tls.peer_client().map_err(anyhow::Error::msg)?,
        _ => None,
    };
    if tls.is_none() {
        warn!(
            "TLS IS OFF ([tls] enabled = false): tokens and answers travel in clear; whoever can read this network can take a token and act as its principal"
        );
    }
    let listener = TcpListener::bind(config.listen).await.map_err(|e| anyhow::anyhow!("listen: cannot bind {}: {e}", config.listen))?;
    let store = loop {
        match Store::connect(&config.store.endpoints, &config.store.prefix, config.store.request_timeout).await {
            Ok(store) => break store,
            Err(e) => {
                warn!(error = %e, "cannot reach the store yet; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    };
    let table = Arc::new(Table::new());
    let freshness = Arc::new(Freshness::new(config.sync.max_staleness, config.sync.stale_lookups, config.sync.max_stale_age));
    tokio::spawn(keep_in_sync(
        store.clone(),
        table.clone(),
        freshness.clone(),
        SyncSettings { resync_interval: config.sync.resync_interval, probe_interval: config.sync.probe_interval },
    ));
    let (committed, _) = broadcast::channel::<PeerMessage>(65_536);
    let (updates, inbox) = mpsc::unbounded_channel();
    tokio::spawn(run_batcher(
        inbox,
        store,
        table.clone(),
        committed.clone(),
        BatchSettings {
            window: config.updates.batch_window,
            max_txn_ops: config.updates.max_txn_ops,
            commit_timeout: config.updates.commit_timeout,
            tombstone_ttl: config.updates.tombstone_ttl,
        },
    ));
    let peer_token = config.peer_token().unwrap_or_default();
    for peer in &config.peers {
        tokio::spawn(push_to_peers(*peer, peer_token.clone(), peer_tls.clone(), committed.subscribe()));
    }
    let peers = committed.clone();
    let shared = Arc::new(Shared {
        table,
        policy: Policy::new(&config.policy),
        freshness,
        credentials,
        max_frame: config.max_frame_bytes,
        updates,
        agents: Mutex::new(FxHashMap::default()),
        peers,
        principal_sessions: PrincipalSessions::new(config.sessions.max_per_principal),
        limits: config.sessions,
        sessions: AtomicUsize::new(0),
        unauthenticated: AtomicUsize::new(0),
    });
    raise_descriptor_limit();
    let mut refused = 0u64;
    info!(name = %config.name, listen = %config.listen, store = ?config.store.endpoints, tls = tls.is_some(), "listening");
    let mut next_session = 0u64;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, from) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let Some(admitted) = Admitted::admit(&shared) else {
                    // Closed at once: a flood of idle connections cannot take the descriptors
                    // legitimate sessions need.
                    refused += 1;
                    if refused.is_power_of_two() {
                        warn!(%from, refused, "session limit reached: connection closed");
                    }
                    continue;
                };
                let _ = stream.set_nodelay(true);
                next_session += 1;
                let shared = shared.clone();
                let session = next_session;
                let tls = tls.clone();
                tokio::spawn(async move {
                    let ended = match tls {
                        None => run_session(stream, shared, session, admitted).await,
                        // The handshake, like the Hello, must come within hello_timeout.
                        Some(tls) => match tokio::time::timeout(shared.limits.hello_timeout, tls.accept(stream)).await {
                            Ok(Ok(stream)) => run_session(stream, shared, session, admitted).await,
                            Ok(Err(e)) => Err(e),
                            Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no TLS handshake within sessions.hello_timeout")),
                        },
                    };
                    if let Err(e) = ended {
                        debug!(session, %from, error = %e, "session ended with an error");
                    }
                });
            }
            _ = shutdown_signal() => {
                info!(name = %config.name, "stopping");
                return Ok(());
            }
        }
    }
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("install SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// Who the session authenticated as: the role and AA of its Hello, vouched for by a credential.
struct Identity {
    role: Role,
    aa: Aa,
    principal: Arc<Principal>,
    /// The protocol revision the Hello stated (`wire/protocol.rs`): which replies it can read.
    protocol: u8,
    /// The session's place among its principal's, given back when the session ends.
    _slot: PrincipalSlot,
}

/// What handling one request asks the session to do next.
enum Next {
    Continue,
    /// Send what is queued, then close: the client broke the protocol.
    Close,
}

/// Serves one session, in TLS or in clear, until it closes.
async fn run_session<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, shared: Arc<Shared>, session: u64, mut admitted: Admitted) -> std::io::Result<()> {
    let hello_by = tokio::time::Instant::now() + shared.limits.hello_timeout;
    let (outbox, mut async_replies) = mpsc::unbounded_channel::<Reply>();
    let mut frames = FrameBuffer::new(shared.max_frame);
    let mut out = Vec::with_capacity(16 * 1024);
    let mut identity: Option<Identity> = None;
    // Requests are decoded only while the session has tokens; until the next one is due the
    // session is not read either, so a flood waits in the client's socket (`rate_limit.rs`).
    let mut bucket = TokenBucket::new(shared.limits.rate, shared.limits.burst, tokio::time::Instant::now());
    let mut throttled: Option<tokio::time::Instant> = None;
    let mut times_throttled = 0u64;
    let result = loop {
        let mut close = false;
        let mut decode = false;
        tokio::select! {
            read = stream.read_buf(frames.spare(8 * 1024)), if throttled.is_none() => {
                match read {
                    Ok(0) => {
                        if frames.pending() > 0 {
                            debug!(session, bytes = frames.pending(), "client closed mid-frame (truncated request)");
                        }
                        break Ok(());
                    }
                    Ok(_) => decode = true,
                    Err(e) => break Err(e),
                }
            }
            _ = tokio::time::sleep_until(throttled.unwrap_or(hello_by)), if throttled.is_some() => {
                throttled = None;
                decode = true;
            }
            Some(reply) = async_replies.recv() => {
                reply.encode(&mut out);
                while let Ok(reply) = async_replies.try_recv() {
                    reply.encode(&mut out);
                }
            }
            _ = tokio::time::sleep_until(hello_by), if identity.is_none() => {
                let wait = shared.limits.hello_timeout;
                reject(&format!("unauthenticated: no Hello within {wait:?}"), session, &mut out);
                close = true;
            }
        }
        while decode {
            if let Err(wait) = bucket.take(tokio::time::Instant::now()) {
                throttled = Some(tokio::time::Instant::now() + wait);
                times_throttled += 1;
                if times_throttled == 1 {
                    let principal = identity.as_ref().map_or("", |me| me.principal.name.as_str());
                    info!(
                        session,
                        principal,
                        rate = shared.limits.rate,
                        burst = shared.limits.burst,
                        "session over its request rate: reading it at sessions.rate"
                    );
                }
                break;
            }
            match frames.next_frame() {
                Ok(None) => {
                    bucket.refund();
                    decode = false;
                }
                Ok(Some(body)) => {
                    let next = match Request::decode(body) {
                        Ok(request) => handle(request, &mut identity, &shared, &outbox, session, &mut out),
                        Err(e) => reject(&e.to_string(), session, &mut out),
                    };
                    if let Next::Close = next {
                        close = true;
                        decode = false;
                    }
                }
                Err(e @ WireError::Oversized { .. }) | Err(e @ WireError::Malformed(_)) => {
                    reject(&e.to_string(), session, &mut out);
                    close = true;
                    decode = false;
                }
            }
        }
        if identity.is_some() {
            admitted.authenticated();
        }
        if !out.is_empty() {
            if let Err(e) = stream.write_all(&out).await {
                break Err(e);
            }
            if let Err(e) = stream.flush().await {
                break Err(e);
            }
            out.clear();
        }
        if close {
            let _ = stream.shutdown().await;
            break Ok(());
        }
    };
    if let Some(Identity { role: Role::Agent, aa, .. }) = identity {
        let mut agents = shared.agents.lock().expect("agents lock poisoned");
        if let Some(sessions) = agents.get_mut(&aa) {
            sessions.retain(|(s, _)| *s != session);
            if sessions.is_empty() {
                agents.remove(&aa);
            }
        }
    }
    result
}

fn reject(message: &str, session: u64, out: &mut Vec<u8>) -> Next {
    warn!(session, reason = message, "rejected a request; closing the session");
    Reply::Rejected { message: message.to_string() }.encode(out);
    Next::Close
}

/// Why a role may not send a request, and what would.
fn not_allowed(what: &str, role: Role) -> String {
    let who = match what {
        "Lookup" => "agents look up (role agent, with a credential naming the AA)",
        "Update" | "Remove" => "updates come from the provisioning system (VL2 §4.3.2): open the session as role provisioner with a provisioner credential",
        "Report" => "misdeliveries are reported by ToRs (role tor)",
        _ => "only directory servers push to each other (role peer, with a peer credential)",
    };
    format!("{what} is not allowed in a session opened as {role:?}: {who}")
}

fn handle(request: Request, identity: &mut Option<Identity>, shared: &Shared, outbox: &mpsc::UnboundedSender<Reply>, session: u64, out: &mut Vec<u8>) -> Next {
    let Some(me) = identity.as_ref() else {
        let Request::Hello { role, aa, token, protocol } = request else {
            return reject("unauthenticated: the first request of a session must be Hello with this principal's token", session, out);
        };
        let principal = match shared.credentials.authenticate(role, aa, &token) {
            Ok(p) => p,
            Err(reason) => return reject(&reason, session, out),
        };
        let slot = match shared.principal_sessions.admit(&principal) {
            Ok(slot) => slot,
            Err(reason) => return reject(&reason, session, out),
        };
        debug!(session, principal = %principal.name, role = role.name(), %aa, "session authenticated");
        if role == Role::Agent {
            let mut agents = shared.agents.lock().expect("agents lock poisoned");
            agents.entry(aa).or_default().push((session, outbox.clone()));
        }
        *identity = Some(Identity { role, aa, principal, protocol, _slot: slot });
        Reply::Welcome.encode(out);
        return Next::Continue;
    };
    match (me.role, request) {
        (_, Request::Hello { .. }) => reject("Hello: the session is already open; send it once", session, out),
        (Role::Agent, Request::Lookup { id, target }) => {
            let reply = match shared.freshness.serving(me.protocol) {
                Serving::Refuse(reason) => Reply::Unavailable { id, reason },
                Serving::Fresh => match shared.table.resolve(&shared.policy, me.aa, target) {
                    Resolution::Found { la, revision } => Reply::Found { id, la, revision },
                    Resolution::NotFound => Reply::NotFound { id },
                    Resolution::Denied => Reply::Denied { id },
                },
                Serving::Stale { age } => Reply::Stale { id, age_ms: age.as_millis() as u64, answer: shared.table.resolve(&shared.policy, me.aa, target) },
            };
            reply.encode(out);
            Next::Continue
        }
        (Role::Provisioner, Request::Update { id, aa, mapping, origin }) => {
            if mapping.la == La(0) || aa == Aa(0) {
                return reject("Update: aa and la must not be 0.0.0.0", session, out);
            }
            submit(shared, me, outbox, id, aa, Some(mapping), origin, out)
        }
        (Role::Provisioner, Request::Remove { id, aa, origin }) => submit(shared, me, outbox, id, aa, None, origin, out),
        (Role::Tor, Request::Report { id, sender, target, stale_la }) => {
            // The ToR learns the target's committed LA (ToRs are the fabric, VL2 §4.3); the
            // sender is corrected only with what it may resolve itself.
            let reply = match shared.table.committed(target) {
                Some(Versioned { mapping: Some(m), revision, .. }) => {
                    if m.la != stale_la {
                        if let Resolution::Found { la, revision } = shared.table.resolve_committed(&shared.policy, sender, target) {
                            if correct(shared, sender, target, la, revision) == 0 {
                                // The sender has no session here: let the peers that have one deliver it.
                                let _ = shared.peers.send(PeerMessage::Correction { sender, target, la, revision });
                            }
                        }
                    }
                    Reply::Found { id, la: m.la, revision }
                }
                _ => Reply::NotFound { id },
            };
            reply.encode(out);
            Next::Continue
        }
        (Role::Peer, Request::PeerPush { aa, revision, mapping }) => {
            if let Err(refused) = shared.table.apply_pushed(aa, Versioned { mapping, revision, marks: Default::default() }) {
                debug!(session, peer = %me.principal.name, %aa, reason = %refused, "peer push not applied");
            }
            Next::Continue
        }
        (Role::Peer, Request::PeerCorrection { sender, target, la: _, revision }) => {
            // The peer's claim is only a hint: what is delivered is this server's own committed
            // entry, if it is at least as new and the sender may resolve it. Delivered here or
            // nowhere: forwarding again could loop between peers.
            match shared.table.resolve_committed(&shared.policy, sender, target) {
                Resolution::Found { la, revision: held } if held >= revision => {
                    correct(shared, sender, target, la, held);
                }
                _ => debug!(session, peer = %me.principal.name, %sender, %target, revision, "peer correction not confirmed here; dropped"),
            }
            Next::Continue
        }
        (role, request) => {
            let what = match request {
                Request::Lookup { .. } => "Lookup",
                Request::Update { .. } => "Update",
                Request::Remove { .. } => "Remove",
                Request::Report { .. } => "Report",
                Request::PeerCorrection { .. } => "PeerCorrection",
                _ => "PeerPush",
            };
            reject(&not_allowed(what, role), session, out)
        }
    }
}

/// Hands an update (`None`: a removal) to the batcher, its origin scoped to the session's
/// principal (`origin.rs`). A server that has lost contact with the store answers at once that
/// it did not send the update there, rather than letting it wait for a store it cannot reach:
/// `StoreUnreachable` (protocol 2), or `Unavailable` with the same reason.
#[allow(clippy::too_many_arguments)]
fn submit(
    shared: &Shared,
    me: &Identity,
    outbox: &mpsc::UnboundedSender<Reply>,
    id: u64,
    aa: Aa,
    mapping: Option<Mapping>,
    origin: Option<Origin>,
    out: &mut Vec<u8>,
) -> Next {
    if let Contact::Lost { age } = shared.freshness.contact() {
        let reply = match me.protocol > crate::wire::protocol::FIRST_PROTOCOL {
            true => Reply::StoreUnreachable { id, age_ms: age.as_millis() as u64 },
            false => Reply::Unavailable { id, reason: format!("update not sent: no contact with the store for {:.1} s", age.as_secs_f64()) },
        };
        reply.encode(out);
        return Next::Continue;
    }
    let origin = origin.map(|o| o.scoped(&me.principal.name));
    let _ = shared.updates.send(PendingUpdate { aa, mapping, id, outbox: outbox.clone(), writer: me.principal.clone(), origin });
    Next::Continue
}

/// Sends the current mapping of `target` to every session of `sender` on this server (VL2 §4.3:
/// "correct the stale mapping in the source's cache via unicast"); returns how many got it.
fn correct(shared: &Shared, sender: Aa, target: Aa, la: La, revision: i64) -> usize {
    let agents = shared.agents.lock().expect("agents lock poisoned");
    let delivered = agents
        .get(&sender)
        .map(|sessions| sessions.iter().filter(|(_, outbox)| outbox.send(Reply::Correction { target, la, revision }).is_ok()).count())
        .unwrap_or(0);
    info!(%sender, %target, %la, delivered, "reactive cache correction");
    delivered
}
