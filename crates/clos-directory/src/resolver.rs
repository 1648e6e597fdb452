//! The VL2 agent's resolver: the client library of the directory system (VL2 §4.3.2, §5.5).
//!
//! - A lookup goes to k (default 2) randomly chosen directory servers and takes the first
//!   decisive answer; a server that fails or refuses is replaced by another untried one.
//! - Answers are cached; a server's gratuitous correction (sent when a ToR reports that our
//!   cached mapping delivered a packet to the wrong ToR) overwrites the cached entry.
//! - A server that has lost contact with the store answers from memory, marking the answer
//!   stale with its age (protocol 2, `freshness.rs`). A stale answer is taken only when no copy
//!   of the lookup brought a current one; among stale ones, the most recently in contact wins.
//!   [`Resolver::resolve_many`] says which answers were stale; [`Resolver::lookup_many`] gives
//!   the addresses only.
//! - An update goes to one random server; if no acknowledgement arrives within the update
//!   timeout (VL2: 2 s) it is sent to another, "trading response time for reliability". Every
//!   attempt carries the same origin (this resolver's random writer id, and a sequence number
//!   per update, `origin.rs`), so a copy that lands late never overwrites a later update. When
//!   every server that answers has lost contact with the store, the update fails at once with
//!   [`UpdateError::StoreUnavailable`].
//!   Updates come from the provisioning system (VL2 §4.3.2): a resolver sends them only with a
//!   provisioner's credential ([`ResolverConfig::provisioner`]); an agent's only looks up.
//!
//! Many lookups can be resolved at once ([`Resolver::lookup_many`]): they are pipelined on the
//! sessions, which is how an agent absorbs a burst of new flows.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rustc_hash::FxHashMap;
use tokio::sync::mpsc;

use crate::address::{Aa, La};
use crate::connection::{Connection, CorrectionSink, Outcome};
use crate::mapping::Mapping;
use crate::origin::Origin;
use crate::table::Resolution;
use crate::tls::ClientTls;
use crate::wire::protocol::FIRST_PROTOCOL;
use crate::wire::{Reply, Request, Role};

/// The most directory servers one resolver spreads over (tried-sets are 64-bit masks).
pub const MAX_SERVERS: usize = 64;

#[derive(Clone, Debug)]
pub struct ResolverConfig {
    pub servers: Vec<SocketAddr>,
    /// This principal's own token (`[[principals]]` in the servers' configs).
    pub token: Vec<u8>,
    /// This agent's own AA: the requester for access control, the address corrections go to.
    /// Its credential must name it. Zero for other roles.
    pub aa: Aa,
    /// Agents look up, ToRs report misdeliveries, provisioners update and remove.
    pub role: Role,
    /// Servers each lookup is sent to at once (VL2 §5.5: two).
    pub k: usize,
    pub lookup_timeout: Duration,
    /// Wait for an acknowledgement before retrying elsewhere (VL2 §4.3.2: 2 s).
    pub update_timeout: Duration,
    pub update_attempts: usize,
    pub connect_timeout: Duration,
    /// Keep answers (VL2's agent cache). Benchmarks turn it off to measure the servers.
    pub cache: bool,
    pub seed: u64,
    /// TLS, verifying servers against a CA ([`ResolverConfig::with_tls`]); `None` speaks in
    /// clear, which a server with TLS on refuses.
    pub tls: Option<ClientTls>,
}

impl ResolverConfig {
    pub fn new(servers: Vec<SocketAddr>, token: &[u8], aa: Aa) -> ResolverConfig {
        ResolverConfig {
            servers,
            token: token.to_vec(),
            aa,
            role: Role::Agent,
            k: 2,
            lookup_timeout: Duration::from_secs(1),
            update_timeout: Duration::from_secs(2),
            update_attempts: 8,
            connect_timeout: Duration::from_millis(500),
            cache: true,
            seed: u64::from(aa.0) ^ 0x5eed,
            tls: None,
        }
    }

    /// Speaks TLS (`Some`) or in clear (`None`) to every server.
    pub fn with_tls(self, tls: Option<ClientTls>) -> ResolverConfig {
        ResolverConfig { tls, ..self }
    }

    /// The provisioning system's client: updates and removals with a provisioner's credential.
    pub fn provisioner(servers: Vec<SocketAddr>, token: &[u8]) -> ResolverConfig {
        ResolverConfig { role: Role::Provisioner, cache: false, ..ResolverConfig::new(servers, token, Aa(0)) }
    }

    /// A ToR's client: misdelivery reports with a ToR's credential.
    pub fn tor(servers: Vec<SocketAddr>, token: &[u8]) -> ResolverConfig {
        ResolverConfig { role: Role::Tor, cache: false, ..ResolverConfig::new(servers, token, Aa(0)) }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    #[error("no mapping for this AA")]
    NotFound,
    #[error("access denied by the directory's policy")]
    Denied,
    #[error("no directory server answered: {0}")]
    Unavailable(String),
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    /// No server acknowledged it (unreachable, no quorum): it may be retried.
    #[error("update not acknowledged after {attempts} attempts: {last}")]
    Unacknowledged { attempts: usize, last: String },
    /// A server refused it for this credential (or rejected the session); every server
    /// would, so it was not sent elsewhere.
    #[error("update refused: {0}")]
    Refused(String),
    /// Every directory server that answered had lost contact with the replicated store (no
    /// quorum, or cut off from it) and did not send the update there: it is not committed by
    /// those attempts. Lookups are still answered, marked stale. Retry once the store is back.
    #[error("update not committed: the replicated store is out of reach of every directory server that answered ({0})")]
    StoreUnavailable(String),
}

/// One lookup's outcome, and how current the answer is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub result: Result<La, LookupError>,
    /// `Some(age)`: every server that answered had lost contact with the store, the chosen one
    /// `age` ago (beyond its `max_staleness`), and answered from memory; the answer misses no
    /// update committed more than `age` before it. `None`: current within the server's bound,
    /// from this resolver's cache, or an error.
    pub stale: Option<Duration>,
}

struct Slot {
    connection: Option<Arc<Connection>>,
    last_attempt: Option<Instant>,
}

/// How long a server that refused a connection is left alone before the next attempt.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(250);

pub struct Resolver {
    config: ResolverConfig,
    slots: Vec<Mutex<Slot>>,
    cache: Arc<Mutex<FxHashMap<Aa, (La, i64)>>>,
    corrections: Arc<AtomicU64>,
    retries: AtomicU64,
    next_id: AtomicU64,
    /// This resolver's writer id and the sequence number of its last update (`origin.rs`).
    writer: u64,
    last_seq: AtomicU64,
    rng: Mutex<Xoshiro256PlusPlus>,
    /// Why a server last refused this resolver's Hello (a wrong token, an AA the credential
    /// does not name), to report instead of "unreachable".
    rejected: Mutex<Option<String>>,
}

impl Resolver {
    /// Creates a resolver; sessions open lazily on first use. Fails only on a bad config.
    pub fn new(config: ResolverConfig) -> Result<Resolver, String> {
        if config.servers.is_empty() || config.servers.len() > MAX_SERVERS {
            return Err(format!("servers: give 1 to {MAX_SERVERS} directory servers, got {}", config.servers.len()));
        }
        if config.k == 0 {
            return Err("k: must be at least 1".into());
        }
        let slots = config.servers.iter().map(|_| Mutex::new(Slot { connection: None, last_attempt: None })).collect();
        let rng = Mutex::new(Xoshiro256PlusPlus::seed_from_u64(config.seed));
        Ok(Resolver {
            config,
            slots,
            cache: Arc::new(Mutex::new(FxHashMap::default())),
            corrections: Arc::new(AtomicU64::new(0)),
            retries: AtomicU64::new(0),
            next_id: AtomicU64::new(1),
            writer: fresh_writer_id(),
            last_seq: AtomicU64::new(0),
            rng,
            rejected: Mutex::new(None),
        })
    }

    /// Opens a session with every server now (instead of on first use); returns how many opened.
    pub async fn connect_all(&self) -> usize {
        let mut opened = 0;
        for i in 0..self.slots.len() {
            if self.connection(i).await.is_some() {
                opened += 1;
            }
        }
        opened
    }

    /// Updates that had to be sent to a second server (or more), so far.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Corrections received from directory servers, so far.
    pub fn corrections(&self) -> u64 {
        self.corrections.load(Ordering::Relaxed)
    }

    pub fn cached(&self, aa: Aa) -> Option<La> {
        self.cache.lock().expect("cache lock poisoned").get(&aa).map(|(la, _)| *la)
    }

    fn correction_sink(&self) -> CorrectionSink {
        let cache = Arc::downgrade(&self.cache);
        let count = self.corrections.clone();
        Arc::new(move |target, la, revision| {
            count.fetch_add(1, Ordering::Relaxed);
            if let Some(cache) = cache.upgrade() {
                let mut cache = cache.lock().expect("cache lock poisoned");
                let newer = cache.get(&target).is_none_or(|(_, r)| *r < revision);
                if newer {
                    cache.insert(target, (la, revision));
                }
            }
        })
    }

    /// The session with server `i`, opening it if needed; `None` if the server is unreachable
    /// (then it is not retried for [`RECONNECT_BACKOFF`]).
    async fn connection(&self, i: usize) -> Option<Arc<Connection>> {
        {
            let mut slot = self.slots[i].lock().expect("slot lock poisoned");
            if let Some(c) = &slot.connection {
                if c.is_alive() {
                    return Some(c.clone());
                }
            }
            if slot.last_attempt.is_some_and(|t| t.elapsed() < RECONNECT_BACKOFF) {
                return None;
            }
            slot.last_attempt = Some(Instant::now());
            slot.connection = None;
        }
        let opened = match Connection::open(
            self.config.servers[i],
            self.config.role,
            self.config.aa,
            &self.config.token,
            self.config.tls.as_ref(),
            self.config.connect_timeout,
            Some(self.correction_sink()),
        )
        .await
        {
            Ok(c) => {
                *self.rejected.lock().expect("rejected lock poisoned") = None;
                c
            }
            Err(e) => {
                if e.kind() == std::io::ErrorKind::PermissionDenied {
                    *self.rejected.lock().expect("rejected lock poisoned") = Some(e.to_string());
                }
                return None;
            }
        };
        let mut slot = self.slots[i].lock().expect("slot lock poisoned");
        slot.connection = Some(opened.clone());
        Some(opened)
    }

    /// Why a server last rejected this resolver's session, if one did.
    pub fn rejection(&self) -> Option<String> {
        self.rejected.lock().expect("rejected lock poisoned").clone()
    }

    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Picks an untried server at random; `None` if all were tried.
    fn pick(&self, tried: u64) -> Option<usize> {
        let n = self.slots.len();
        let untried = n - (tried.count_ones() as usize);
        if untried == 0 {
            return None;
        }
        let mut nth = (self.rng.lock().expect("rng lock poisoned").next_u64() % untried as u64) as usize;
        (0..n).find(|&s| {
            if tried & (1 << s) != 0 {
                return false;
            }
            if nth == 0 {
                return true;
            }
            nth -= 1;
            false
        })
    }

    /// Resolves one AA. See [`Resolver::lookup_many`].
    pub async fn lookup(&self, target: Aa) -> Result<La, LookupError> {
        self.lookup_many(&[target]).await.pop().expect("one result per target")
    }

    /// Resolves many AAs at once, each at k random servers, first decisive answer wins. Stale
    /// answers count as answers; [`Resolver::resolve_many`] tells them apart.
    pub async fn lookup_many(&self, targets: &[Aa]) -> Vec<Result<La, LookupError>> {
        self.resolve_many(targets).await.into_iter().map(|a| a.result).collect()
    }

    /// Resolves one AA, saying whether the answer was stale. See [`Resolver::resolve_many`].
    pub async fn resolve(&self, target: Aa) -> Answer {
        self.resolve_many(&[target]).await.pop().expect("one answer per target")
    }

    /// Resolves many AAs at once, each at k random servers. A current answer (found, not found,
    /// denied) decides at once. A stale one is held while other copies are out; when none is
    /// left, the stale answer of the server most recently in contact with the store is taken,
    /// rather than asking more servers. Only when every copy failed is another server asked.
    pub async fn resolve_many(&self, targets: &[Aa]) -> Vec<Answer> {
        let n = targets.len();
        let mut results: Vec<Option<Answer>> = vec![None; n];
        if self.config.cache {
            let cache = self.cache.lock().expect("cache lock poisoned");
            for (i, t) in targets.iter().enumerate() {
                if let Some((la, _)) = cache.get(t) {
                    results[i] = Some(Answer { result: Ok(*la), stale: None });
                }
            }
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut tried = vec![0u64; n];
        let mut outstanding = vec![0u32; n];
        let mut sent: Vec<(Arc<Connection>, u64)> = Vec::with_capacity(n * self.config.k);
        let mut last_reason: Vec<Option<String>> = vec![None; n];
        // The stale answer of the server most recently in contact with the store, per target.
        let mut held: Vec<Option<(Duration, Resolution)>> = vec![None; n];
        let mut open = 0;
        for i in 0..n {
            if results[i].is_none() {
                self.dispatch(i, targets[i], self.config.k, &mut tried[i], &mut outstanding[i], &tx, &mut sent).await;
                if outstanding[i] == 0 {
                    let reason = self.rejection().unwrap_or_else(|| "no directory server reachable".into());
                    results[i] = Some(Answer { result: Err(LookupError::Unavailable(reason)), stale: None });
                } else {
                    open += 1;
                }
            }
        }
        let deadline = tokio::time::Instant::now() + self.config.lookup_timeout;
        while open > 0 {
            let Ok(Some((tag, outcome))) = tokio::time::timeout_at(deadline, rx.recv()).await else { break };
            let i = tag as usize;
            if results[i].is_some() {
                continue;
            }
            outstanding[i] -= 1;
            let decided = match outcome {
                Outcome::Reply(Reply::Found { la, revision, .. }) => Some(self.settle(targets[i], Resolution::Found { la, revision }, None)),
                Outcome::Reply(Reply::NotFound { .. }) => Some(self.settle(targets[i], Resolution::NotFound, None)),
                Outcome::Reply(Reply::Denied { .. }) => Some(self.settle(targets[i], Resolution::Denied, None)),
                Outcome::Reply(Reply::Stale { age_ms, answer, .. }) => {
                    let age = Duration::from_millis(age_ms);
                    if held[i].as_ref().is_none_or(|(held_age, _)| age < *held_age) {
                        held[i] = Some((age, answer));
                    }
                    None
                }
                Outcome::Reply(Reply::Unavailable { reason, .. }) => {
                    last_reason[i] = Some(reason);
                    None
                }
                Outcome::Reply(other) => {
                    last_reason[i] = Some(format!("unexpected reply {other:?}"));
                    None
                }
                Outcome::Lost => {
                    last_reason[i] = Some("session lost".into());
                    None
                }
                Outcome::Rejected(message) => {
                    last_reason[i] = Some(format!("rejected: {message}"));
                    None
                }
            };
            match decided {
                Some(answer) => {
                    results[i] = Some(answer);
                    open -= 1;
                }
                None if outstanding[i] == 0 => {
                    if let Some((age, answer)) = held[i].take() {
                        results[i] = Some(self.settle(targets[i], answer, Some(age)));
                        open -= 1;
                        continue;
                    }
                    // Both copies failed: fall back to another server, as VL2's agent would
                    // after its timeout, but without waiting for it.
                    self.dispatch(i, targets[i], 1, &mut tried[i], &mut outstanding[i], &tx, &mut sent).await;
                    if outstanding[i] == 0 {
                        let reason = last_reason[i].take().unwrap_or_else(|| "no server left to try".into());
                        results[i] = Some(Answer { result: Err(LookupError::Unavailable(reason)), stale: None });
                        open -= 1;
                    }
                }
                None => {}
            }
        }
        for (connection, id) in sent {
            connection.forget(id);
        }
        let mut answers = Vec::with_capacity(n);
        for (i, result) in results.into_iter().enumerate() {
            answers.push(match (result, held[i].take()) {
                (Some(answer), _) => answer,
                // A copy never came back: the stale answer in hand beats none.
                (None, Some((age, answer))) => self.settle(targets[i], answer, Some(age)),
                (None, None) => Answer { result: Err(LookupError::Unavailable(format!("no answer within {:?}", self.config.lookup_timeout))), stale: None },
            });
        }
        answers
    }

    /// The answer a server's resolution gives, cached if found.
    fn settle(&self, target: Aa, resolution: Resolution, stale: Option<Duration>) -> Answer {
        let result = match resolution {
            Resolution::Found { la, revision } => {
                if self.config.cache {
                    self.cache.lock().expect("cache lock poisoned").insert(target, (la, revision));
                }
                Ok(la)
            }
            Resolution::NotFound => Err(LookupError::NotFound),
            Resolution::Denied => Err(LookupError::Denied),
        };
        Answer { result, stale }
    }

    #[allow(clippy::too_many_arguments)]
    async fn dispatch(
        &self,
        tag: usize,
        target: Aa,
        want: usize,
        tried: &mut u64,
        outstanding: &mut u32,
        tx: &mpsc::UnboundedSender<(u32, Outcome)>,
        sent: &mut Vec<(Arc<Connection>, u64)>,
    ) {
        let mut placed = 0;
        while placed < want {
            let Some(s) = self.pick(*tried) else { return };
            *tried |= 1 << s;
            let Some(connection) = self.connection(s).await else { continue };
            let id = self.id();
            if connection.send(id, Request::Lookup { id, target }, (tx.clone(), tag as u32)) {
                sent.push((connection, id));
                *outstanding += 1;
                placed += 1;
            }
        }
    }

    /// Sets (or with `None`, removes) the mapping of `aa`, returning the store revision that
    /// committed it. Retries on another server after `update_timeout`, up to `update_attempts`;
    /// every attempt carries the same origin. Fails with [`UpdateError::StoreUnavailable`] as
    /// soon as a round over the servers found only servers cut off from the store (and
    /// unreachable ones).
    pub async fn update(&self, aa: Aa, mapping: Option<Mapping>) -> Result<i64, UpdateError> {
        let origin = Origin { writer: self.writer, seq: self.last_seq.fetch_add(1, Ordering::Relaxed) + 1 };
        let mut tried = 0u64;
        let mut last = String::from("no directory server reachable");
        // This round: whether a server said it cannot reach the store, and whether any said
        // anything else.
        let (mut store_unreachable, mut other_outcome) = (false, false);
        for attempt in 0..self.config.update_attempts {
            if attempt > 0 {
                self.retries.fetch_add(1, Ordering::Relaxed);
            }
            if tried.count_ones() as usize == self.slots.len() {
                if store_unreachable && !other_outcome {
                    return Err(UpdateError::StoreUnavailable(last));
                }
                (store_unreachable, other_outcome) = (false, false);
                tried = 0;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let Some(s) = self.pick(tried) else { continue };
            tried |= 1 << s;
            let Some(connection) = self.connection(s).await else {
                if let Some(reason) = self.rejection() {
                    return Err(UpdateError::Refused(reason));
                }
                continue;
            };
            let id = self.id();
            // Servers of protocol 1 would reject the origin's bytes.
            let origin = (connection.protocol > FIRST_PROTOCOL).then_some(origin);
            let request = match &mapping {
                Some(m) => Request::Update { id, aa, mapping: m.clone(), origin },
                None => Request::Remove { id, aa, origin },
            };
            let (tx, mut rx) = mpsc::unbounded_channel();
            if !connection.send(id, request, (tx, 0)) {
                continue;
            }
            let outcome = tokio::time::timeout(self.config.update_timeout, rx.recv()).await;
            if let Ok(Some((_, Outcome::Reply(Reply::StoreUnreachable { age_ms, .. })))) = outcome {
                store_unreachable = true;
                last = format!("{} has had no contact with the store for {:.1} s", connection.server, age_ms as f64 / 1000.0);
                continue;
            }
            other_outcome = true;
            match outcome {
                Ok(Some((_, Outcome::Reply(Reply::Acked { revision, .. })))) => {
                    if self.config.cache {
                        let mut cache = self.cache.lock().expect("cache lock poisoned");
                        match &mapping {
                            Some(m) => cache.insert(aa, (m.la, revision)),
                            None => cache.remove(&aa),
                        };
                    }
                    return Ok(revision);
                }
                Ok(Some((_, Outcome::Reply(Reply::Unavailable { reason, .. })))) => last = reason,
                Ok(Some((_, Outcome::Reply(Reply::Refused { reason, .. })))) => return Err(UpdateError::Refused(reason)),
                Ok(Some((_, Outcome::Rejected(message)))) => return Err(UpdateError::Refused(message)),
                Ok(Some((_, other))) => last = format!("{other:?} from {}", connection.server),
                Ok(None) => last = format!("session with {} lost", connection.server),
                Err(_) => {
                    connection.forget(id);
                    last = format!("no acknowledgement from {} within {:?}", connection.server, self.config.update_timeout);
                }
            }
        }
        if store_unreachable && !other_outcome {
            return Err(UpdateError::StoreUnavailable(last));
        }
        Err(UpdateError::Unacknowledged { attempts: self.config.update_attempts, last })
    }

    /// As a ToR: reports that a packet from `sender` to `target` arrived here, at `stale_la`,
    /// which no longer hosts `target`. Returns the current LA the directory knows.
    pub async fn report_misdelivery(&self, sender: Aa, target: Aa, stale_la: La) -> Result<La, LookupError> {
        let mut tried = 0u64;
        while let Some(s) = self.pick(tried) {
            tried |= 1 << s;
            let Some(connection) = self.connection(s).await else { continue };
            let id = self.id();
            let (tx, mut rx) = mpsc::unbounded_channel();
            if !connection.send(id, Request::Report { id, sender, target, stale_la }, (tx, 0)) {
                continue;
            }
            match tokio::time::timeout(self.config.lookup_timeout, rx.recv()).await {
                Ok(Some((_, Outcome::Reply(Reply::Found { la, .. })))) => return Ok(la),
                Ok(Some((_, Outcome::Reply(Reply::NotFound { .. })))) => return Err(LookupError::NotFound),
                _ => connection.forget(id),
            }
        }
        Err(LookupError::Unavailable(self.rejection().unwrap_or_else(|| "no directory server took the report".into())))
    }
}

/// A writer id for this resolver's updates (`origin.rs`): random, so that two provisioning
/// clients never share one, whatever seeds their configurations give.
fn fresh_writer_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::io::Read;
    let mut bytes = [0u8; 8];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)).is_ok() {
        return u64::from_be_bytes(bytes);
    }
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.write_u32(std::process::id());
    h.finish()
}
