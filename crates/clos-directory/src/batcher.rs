//! Update batching: VL2 §5.5 "we batch updates over a short time interval (i.e., 50 ms)".
//!
//! Sessions hand updates to one batcher task per directory server. It waits `batch_window` after
//! the first update of a batch, commits everything gathered in as few store transactions as etcd
//! allows, and only then acknowledges each update (VL2 §4.3.2: the RSM "replies with an
//! acknowledgment to the directory server, which in turn forwards the acknowledgment back to the
//! originating client"). A batch that cannot be committed within `commit_timeout` (no quorum, no
//! leader) is answered `Unavailable`, and the provisioner retries on another directory server.
//!
//! Only provisioners send updates, and each is authorised here (`authorisation.rs`) against
//! the AA's current entry, in arrival order. The transaction that commits a chunk is guarded by
//! the revision of every entry a decision was based on, so a decision made on a stale table
//! (another server wrote the AA a moment ago) is made again on the store's entries instead of
//! being committed. Refused updates are answered `Refused` with the reason.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;
use tokio::sync::mpsc;
use tokio::time::sleep;
use tracing::{debug, info, warn};

use crate::address::Aa;
use crate::authorisation::authorise;
use crate::credentials::Principal;
use crate::mapping::{Mapping, Versioned};
use crate::store::{Guarded, Store};
use crate::table::Table;
use crate::wire::Reply;

/// Where to send the outcome of one update: the session's outbox and the request id, and who
/// sent it (a provisioner, whose credential decides what it may write).
pub struct PendingUpdate {
    pub aa: Aa,
    pub mapping: Option<Mapping>,
    pub id: u64,
    pub outbox: mpsc::UnboundedSender<Reply>,
    pub writer: Arc<Principal>,
}

/// What a directory server tells its peers.
#[derive(Clone, Debug)]
pub enum PeerMessage {
    /// An acknowledged change (VL2's optional push to other directory servers).
    Committed { aa: Aa, versioned: Versioned },
    /// A correction for an agent with no session here (VL2 §4.3 reactive cache update).
    Correction { sender: Aa, target: Aa, la: crate::address::La, revision: i64 },
}

pub struct BatchSettings {
    pub window: Duration,
    pub max_txn_ops: usize,
    pub commit_timeout: Duration,
}

/// Runs until every sender is dropped; spawn it.
pub async fn run_batcher(
    mut inbox: mpsc::UnboundedReceiver<PendingUpdate>,
    store: Store,
    table: Arc<Table>,
    peers: tokio::sync::broadcast::Sender<PeerMessage>,
    settings: BatchSettings,
) {
    while let Some(first) = inbox.recv().await {
        sleep(settings.window).await;
        let mut batch = vec![first];
        while let Ok(more) = inbox.try_recv() {
            batch.push(more);
        }
        // The updates of each AA, in arrival order; AAs in order of their first update.
        let mut order: Vec<Aa> = Vec::new();
        let mut by_aa: FxHashMap<Aa, Vec<PendingUpdate>> = FxHashMap::default();
        for u in batch {
            let updates = by_aa.entry(u.aa).or_default();
            if updates.is_empty() {
                order.push(u.aa);
            }
            updates.push(u);
        }
        let started = Instant::now();
        for chunk in order.chunks(settings.max_txn_ops) {
            let updates: Vec<(Aa, Vec<PendingUpdate>)> = chunk.iter().map(|aa| (*aa, by_aa.remove(aa).unwrap_or_default())).collect();
            commit_chunk(&store, &table, &peers, updates, &settings).await;
        }
        debug!(aas = order.len(), took_ms = started.elapsed().as_millis() as u64, "committed batch");
    }
}

/// The decisions for one chunk, made against a base entry per AA.
struct Decided {
    /// The final value of each AA that at least one update may write.
    writes: Vec<(Aa, Option<Mapping>)>,
    /// Per AA, per update: `None` if authorised, else the reason.
    verdicts: Vec<Vec<Option<String>>>,
}

/// Authorises each AA's updates in order against `base` (an update sees the AA as the earlier
/// authorised ones of the batch left it). Within a batch the last authorised update of an AA
/// wins; all authorised ones are acknowledged with the revision that committed it.
fn decide(updates: &[(Aa, Vec<PendingUpdate>)], base: &[Base]) -> Decided {
    let mut writes = Vec::new();
    let mut verdicts = Vec::with_capacity(updates.len());
    for ((aa, list), base) in updates.iter().zip(base) {
        let mut state: Option<Mapping> = base.mapping.clone();
        let mut any = false;
        let mut verdict = Vec::with_capacity(list.len());
        for u in list {
            match authorise(&u.writer.services, *aa, state.as_ref(), u.mapping.as_ref()) {
                Ok(()) => {
                    state = u.mapping.clone();
                    any = true;
                    verdict.push(None);
                }
                Err(reason) => verdict.push(Some(reason)),
            }
        }
        if any {
            writes.push((*aa, state));
        }
        verdicts.push(verdict);
    }
    Decided { writes, verdicts }
}

/// An AA's entry as the decisions assume it: its mapping, and the revision its key is at in
/// the store (0: absent), which the transaction is guarded with.
#[derive(Clone, Debug, Default)]
struct Base {
    mapping: Option<Mapping>,
    revision: i64,
}

impl Base {
    /// From the table's committed entry: a tombstone is an absent key.
    fn from_table(entry: Option<Versioned>) -> Base {
        match entry {
            Some(Versioned { mapping: Some(m), revision }) => Base { mapping: Some(m), revision },
            _ => Base::default(),
        }
    }

    /// From the store's entry (`None`: absent). A value that does not parse (written by hand)
    /// guards at its revision, and counts as no mapping.
    fn from_store(entry: Option<Versioned>) -> Base {
        entry.map(|v| Base { mapping: v.mapping, revision: v.revision }).unwrap_or_default()
    }
}

/// Authorises and commits one chunk of at most `max_txn_ops` AAs, retrying transient store
/// failures (leader elections) until `commit_timeout`, and deciding again whenever the store
/// shows that an entry the decisions were based on had moved. Answers every update.
async fn commit_chunk(
    store: &Store,
    table: &Table,
    peers: &tokio::sync::broadcast::Sender<PeerMessage>,
    updates: Vec<(Aa, Vec<PendingUpdate>)>,
    settings: &BatchSettings,
) {
    let deadline = Instant::now() + settings.commit_timeout;
    let mut backoff = Duration::from_millis(20);
    // What the table says first; what the store says after a guard failed.
    let mut base: Vec<Base> = updates.iter().map(|(aa, _)| Base::from_table(table.committed(*aa))).collect();
    let outcome = loop {
        let decided = decide(&updates, &base);
        let guards: Vec<(Aa, i64)> = updates.iter().zip(&base).map(|((aa, _), b)| (*aa, b.revision)).collect();
        match store.commit_guarded(&guards, &decided.writes).await {
            Ok(Guarded::Committed(revision)) => break Ok((decided, revision)),
            Ok(Guarded::Moved { current, revision }) => {
                // Decided on a stale entry (the table lags the store, or another server wrote
                // the AA meanwhile): decide again on the store's entries.
                debug!(revision, "an entry moved under the batch; deciding again");
                for ((aa, _), entry) in updates.iter().zip(&current) {
                    if let Some(v) = entry.as_ref().filter(|v| v.mapping.is_some()) {
                        table.apply(*aa, v.clone());
                    }
                }
                base = current.into_iter().map(Base::from_store).collect();
                if Instant::now() >= deadline {
                    break Err("the entries kept moving under the batch".to_string());
                }
            }
            Err(e) => {
                if Instant::now() + backoff >= deadline {
                    break Err(e.to_string());
                }
                debug!(error = %e, "commit failed; retrying");
                sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(200));
            }
        }
    };
    match outcome {
        Ok((decided, revision)) => {
            for (aa, mapping) in decided.writes {
                let versioned = Versioned { mapping, revision };
                table.apply(aa, versioned.clone());
                let _ = peers.send(PeerMessage::Committed { aa, versioned });
            }
            for ((aa, list), verdict) in updates.into_iter().zip(decided.verdicts) {
                for (u, refusal) in list.into_iter().zip(verdict) {
                    let reply = match refusal {
                        None => Reply::Acked { id: u.id, revision },
                        Some(reason) => {
                            info!(writer = %u.writer.name, %aa, reason = %reason, "refused an update");
                            Reply::Refused { id: u.id, reason }
                        }
                    };
                    let _ = u.outbox.send(reply);
                }
            }
        }
        Err(e) => {
            let count: usize = updates.iter().map(|(_, l)| l.len()).sum();
            warn!(updates = count, error = %e, "batch not committed; answering Unavailable");
            let reason = format!("update not committed: {e}");
            for (_, list) in updates {
                for u in list {
                    let _ = u.outbox.send(Reply::Unavailable { id: u.id, reason: reason.clone() });
                }
            }
        }
    }
}
