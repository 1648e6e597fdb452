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
//!
//! The same decision keeps retried updates in order (`origin.rs`): an update whose origin the
//! entry's marks already cover (a copy of an update another server committed, or one its
//! writer has since overtaken) is acknowledged without being written, and a written entry
//! records the origins of the updates it includes. Since the transaction is guarded by the
//! revision of the entry decided on, a copy that arrives late finds the entry moved, is decided
//! again on the store's entry and its marks, and never lands on top of a later update.

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
use crate::origin::{Marks, Origin};
use crate::store::{Guarded, Store, Write};
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
    /// Where the update comes from, scoped to `writer` (`Origin::scoped`); `None` from clients
    /// of protocol 1, whose updates are written whatever the entry's marks.
    pub origin: Option<Origin>,
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
    /// How long a removal's marks outlive it (`origin.rs`).
    pub tombstone_ttl: Duration,
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

/// What becomes of one update.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Verdict {
    /// Authorised: written (or overwritten by a later update of the same batch).
    Write,
    /// Already in the entry, or overtaken by a later update of its writer: acknowledged, not
    /// written again.
    Applied,
    /// Not authorised, for this reason.
    Refused(String),
}

/// The decisions for one chunk, made against a base entry per AA.
struct Decided {
    /// The final value of each AA that at least one update writes.
    writes: Vec<Write>,
    /// Per AA, per update.
    verdicts: Vec<Vec<Verdict>>,
}

/// Decides each AA's updates in order against `base` (an update sees the AA as the earlier
/// ones of the batch left it): one its origin's marks cover is already applied; the others are
/// authorised. Within a batch the last authorised update of an AA wins; all authorised and
/// applied ones are acknowledged with the revision that committed the chunk.
fn decide(updates: &[(Aa, Vec<PendingUpdate>)], base: &[Base]) -> Decided {
    let mut writes = Vec::new();
    let mut verdicts = Vec::with_capacity(updates.len());
    for ((aa, list), base) in updates.iter().zip(base) {
        let mut state: Option<Mapping> = base.mapping.clone();
        let mut marks = base.marks.clone();
        let mut any = false;
        let mut verdict = Vec::with_capacity(list.len());
        for u in list {
            if u.origin.is_some_and(|o| marks.covers(o)) {
                verdict.push(Verdict::Applied);
                continue;
            }
            match authorise(&u.writer.services, *aa, state.as_ref(), u.mapping.as_ref()) {
                Ok(()) => {
                    state = u.mapping.clone();
                    if let Some(o) = u.origin {
                        marks.record(o);
                    }
                    any = true;
                    verdict.push(Verdict::Write);
                }
                Err(reason) => verdict.push(Verdict::Refused(reason)),
            }
        }
        if any {
            writes.push(Write { aa: *aa, mapping: state, marks });
        }
        verdicts.push(verdict);
    }
    Decided { writes, verdicts }
}

/// An AA's entry as the decisions assume it: its mapping, the marks of the updates it
/// includes, and the revision its key is at in the store (0: absent), which the transaction is
/// guarded with.
#[derive(Clone, Debug, Default)]
struct Base {
    mapping: Option<Mapping>,
    marks: Marks,
    revision: i64,
}

impl Base {
    /// From the table's committed entry. A tombstone with marks is a key holding a tombstone
    /// value; one without is an absent key (deleted, or its tombstone expired).
    fn from_table(entry: Option<Versioned>) -> Base {
        match entry {
            Some(Versioned { mapping: None, marks, .. }) if marks.is_empty() => Base::default(),
            Some(Versioned { mapping, revision, marks }) => Base { mapping, marks, revision },
            None => Base::default(),
        }
    }

    /// From the store's entry (`None`: absent). A value that does not parse (written by hand)
    /// guards at its revision, and counts as no mapping.
    fn from_store(entry: Option<Versioned>) -> Base {
        entry.map(|v| Base { mapping: v.mapping, marks: v.marks, revision: v.revision }).unwrap_or_default()
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
        match store.commit(&guards, &decided.writes, settings.tombstone_ttl).await {
            Ok(Guarded::Committed(revision)) => break Ok((decided, revision)),
            Ok(Guarded::Moved { current, revision }) => {
                // Decided on a stale entry (the table lags the store, or another server wrote
                // the AA meanwhile): decide again on the store's entries.
                debug!(revision, "an entry moved under the batch; deciding again");
                for ((aa, _), entry) in updates.iter().zip(&current) {
                    if let Some(v) = entry.as_ref().filter(|v| v.mapping.is_some() || !v.marks.is_empty()) {
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
            for Write { aa, mapping, marks } in decided.writes {
                let versioned = Versioned { mapping, revision, marks };
                table.apply(aa, versioned.clone());
                let _ = peers.send(PeerMessage::Committed { aa, versioned });
            }
            for ((aa, list), verdict) in updates.into_iter().zip(decided.verdicts) {
                for (u, verdict) in list.into_iter().zip(verdict) {
                    let reply = match verdict {
                        Verdict::Write => Reply::Acked { id: u.id, revision },
                        Verdict::Applied => {
                            debug!(writer = %u.writer.name, %aa, origin = ?u.origin, "update already applied; not written again");
                            Reply::Acked { id: u.id, revision }
                        }
                        Verdict::Refused(reason) => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::La;
    use crate::credentials::{Credentials, PrincipalConfig};
    use crate::wire::Role;

    fn provisioner() -> Arc<Principal> {
        let token = "provisioner-token-0001";
        let config = PrincipalConfig { services: Some(vec!["*".into()]), ..PrincipalConfig::new("p", Role::Provisioner, token) };
        Credentials::new(&[config]).unwrap().authenticate(Role::Provisioner, Aa(0), token.as_bytes()).unwrap()
    }

    fn update(la: u32, origin: Option<Origin>) -> PendingUpdate {
        let mapping = Some(Mapping { la: La(la), service: "web".into() });
        PendingUpdate { aa: Aa(1), mapping, id: 1, outbox: mpsc::unbounded_channel().0, writer: provisioner(), origin }
    }

    fn base(la: u32, origins: &[Origin]) -> Base {
        let mut marks = Marks::default();
        for o in origins.iter().rev() {
            marks.record(*o);
        }
        Base { mapping: Some(Mapping { la: La(la), service: "web".into() }), marks, revision: 9 }
    }

    /// The lost update of issue 39: writer W's update 1 was retried and committed elsewhere,
    /// then a later update (W's own 2, or another writer V's) committed; the first server's
    /// copy of update 1, decided again on that entry, is acknowledged and not written.
    #[test]
    fn a_late_copy_of_an_applied_update_is_not_written_again() {
        let (w1, w2, v1) = (Origin { writer: 7, seq: 1 }, Origin { writer: 7, seq: 2 }, Origin { writer: 8, seq: 1 });
        for later in [base(20, &[w2]), base(30, &[v1, w1])] {
            let decided = decide(&[(Aa(1), vec![update(10, Some(w1))])], &[later]);
            assert_eq!(decided.verdicts, vec![vec![Verdict::Applied]]);
            assert!(decided.writes.is_empty());
        }
        // A new update of W, and one without an origin (protocol 1), are written; the marks
        // of the other writers stay.
        let decided = decide(&[(Aa(1), vec![update(40, Some(Origin { writer: 7, seq: 3 })), update(50, None)])], &[base(30, &[v1, w1])]);
        assert_eq!(decided.verdicts, vec![vec![Verdict::Write, Verdict::Write]]);
        let write = &decided.writes[0];
        assert_eq!(write.mapping.as_ref().map(|m| m.la), Some(La(50)));
        assert!(write.marks.covers(Origin { writer: 7, seq: 3 }) && write.marks.covers(v1));
    }
}
