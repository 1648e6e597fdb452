//! Update batching: VL2 §5.5 "we batch updates over a short time interval (i.e., 50 ms)".
//!
//! Sessions hand updates to one batcher task per directory server. It waits `batch_window` after
//! the first update of a batch, commits everything gathered in as few store transactions as etcd
//! allows, and only then acknowledges each update (VL2 §4.3.2: the RSM "replies with an
//! acknowledgment to the directory server, which in turn forwards the acknowledgment back to the
//! originating client"). A batch that cannot be committed within `commit_timeout` (no quorum, no
//! leader) is answered `Unavailable`, and the agent retries on another directory server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;
use tokio::sync::mpsc;
use tokio::time::sleep;
use tracing::{debug, warn};

use crate::address::Aa;
use crate::mapping::{Mapping, Versioned};
use crate::store::Store;
use crate::table::Table;
use crate::wire::Reply;

/// Where to send the outcome of one update: the session's outbox and the request id.
pub struct PendingUpdate {
    pub aa: Aa,
    pub mapping: Option<Mapping>,
    pub id: u64,
    pub outbox: mpsc::UnboundedSender<Reply>,
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
        // Within a batch the last update of an AA wins; all of them are acknowledged with the
        // revision that committed it.
        let mut last: FxHashMap<Aa, usize> = FxHashMap::default();
        let mut ops: Vec<(Aa, Option<Mapping>)> = Vec::with_capacity(batch.len());
        for u in &batch {
            match last.get(&u.aa) {
                Some(&i) => ops[i].1 = u.mapping.clone(),
                None => {
                    last.insert(u.aa, ops.len());
                    ops.push((u.aa, u.mapping.clone()));
                }
            }
        }
        let started = Instant::now();
        let outcome = commit_with_retries(&store, &ops, &settings).await;
        match outcome {
            Ok(revisions) => {
                let revision_of = |op: usize| revisions[op / settings.max_txn_ops];
                for (op, (aa, mapping)) in ops.iter().enumerate() {
                    let versioned = Versioned { mapping: mapping.clone(), revision: revision_of(op) };
                    table.apply(*aa, versioned.clone());
                    let _ = peers.send(PeerMessage::Committed { aa: *aa, versioned });
                }
                for u in batch {
                    let revision = revision_of(last[&u.aa]);
                    let _ = u.outbox.send(Reply::Acked { id: u.id, revision });
                }
                debug!(updates = ops.len(), took_ms = started.elapsed().as_millis() as u64, "committed batch");
            }
            Err(e) => {
                warn!(updates = ops.len(), error = %e, "batch not committed; answering Unavailable");
                let reason = format!("update not committed: {e}");
                for u in batch {
                    let _ = u.outbox.send(Reply::Unavailable { id: u.id, reason: reason.clone() });
                }
            }
        }
    }
}

/// Commits `ops` in transactions of at most `max_txn_ops`, retrying transient store failures
/// (leader elections) until `commit_timeout`. A chunk that committed is never re-sent: retries
/// resume at the first chunk that failed.
async fn commit_with_retries(store: &Store, ops: &[(Aa, Option<Mapping>)], settings: &BatchSettings) -> Result<Vec<i64>, String> {
    let deadline = Instant::now() + settings.commit_timeout;
    let mut revisions = Vec::with_capacity(ops.len().div_ceil(settings.max_txn_ops));
    let mut backoff = Duration::from_millis(20);
    for chunk in ops.chunks(settings.max_txn_ops) {
        loop {
            match store.commit(chunk).await {
                Ok(revision) => {
                    revisions.push(revision);
                    break;
                }
                Err(e) => {
                    if Instant::now() + backoff >= deadline {
                        return Err(e.to_string());
                    }
                    debug!(error = %e, "commit failed; retrying");
                    sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(200));
                }
            }
        }
    }
    Ok(revisions)
}
