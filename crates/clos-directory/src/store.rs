//! The replicated store: VL2's RSM tier (§4.3.2), here an etcd cluster.
//!
//! VL2 ran its own Paxos-based RSM. We use etcd, a widely deployed Raft implementation that
//! operators already run, rather than a home-made consensus engine: it gives the same guarantee
//! (an acknowledged write is on a majority and survives the loss of a minority, including the
//! leader) plus the two things a directory server needs to stay current, a paginated snapshot
//! read at a fixed revision and a stream of committed changes from a revision on.
//!
//! Layout: one key per AA, `<prefix>/aa/<aa>`, whose value is `"<la> <service>"`, followed by
//! the marks of the updates it includes when they came with origins (`origin.rs`), so an
//! operator can inspect the directory with `etcdctl get --prefix /clos/vl2/aa/`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, Compare, CompareOp, ConnectOptions, EventType, GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse, WatchOptions, WatchStream};
use rustc_hash::FxHashMap;

use crate::address::Aa;
use crate::mapping::{decode_entry, encode_entry, Mapping, Versioned};
use crate::origin::Marks;

/// Rows per page of a snapshot read; keeps each response well under gRPC's 4 MB message limit.
const SNAPSHOT_PAGE: i64 = 5_000;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("etcd: {0}")]
    Etcd(#[from] etcd_client::Error),
    #[error("etcd did not answer within {0:?}")]
    Timeout(Duration),
    #[error("etcd response without a header")]
    NoHeader,
    #[error("the change stream was cancelled: {0}")]
    WatchCancelled(String),
    /// Every member was tried once and failed; each member's own error, in the order tried.
    /// (Only the last one used to be reported: when the leader died, that was the dead
    /// member's "connection refused", hiding that the others were answering "no leader".)
    #[error("every etcd member failed: {}", .0.iter().map(|(m, e)| format!("{m}: {e}")).collect::<Vec<_>>().join("; "))]
    AllMembers(Vec<(String, StoreError)>),
}

/// One committed change read from the store.
#[derive(Clone, Debug)]
pub struct Change {
    pub aa: Aa,
    pub versioned: Versioned,
}

/// What a commit writes to one AA's key: the mapping (`None`: removed) and the marks of the
/// updates the entry then includes. A removal with marks leaves a tombstone value that expires
/// with a lease; one without is a plain delete.
#[derive(Clone, Debug)]
pub struct Write {
    pub aa: Aa,
    pub mapping: Option<Mapping>,
    pub marks: Marks,
}

/// What a guarded commit did.
#[derive(Clone, Debug)]
pub enum Guarded {
    /// Written at this revision.
    Committed(i64),
    /// A guarded key had moved: nothing was written. `current` holds each guarded key's entry
    /// at `revision`, in the order of the guards (`None`: absent; a value that does not parse
    /// has `mapping: None` and its revision).
    Moved { current: Vec<Option<Versioned>>, revision: i64 },
}

/// One response of the change stream: the changes, the highest revision among them (the
/// stream has delivered everything up to it), and the store's revision when it was sent.
#[derive(Clone, Debug)]
pub struct StreamBatch {
    pub changes: Vec<Change>,
    pub through: i64,
    pub store_revision: i64,
}

/// A handle on the etcd cluster. Cheap to clone: clones share the connections.
///
/// It keeps one client per member and talks to one member at a time, moving to the next when a
/// request fails, as etcd's own Go client does. (etcd-client's built-in balancer spreads
/// requests over all endpoints and keeps sending some to a member that has died; measured here,
/// a third of the requests then failed with "tcp connect error".)
#[derive(Clone)]
pub struct Store {
    members: Arc<Vec<Client>>,
    /// Each member's client URL, to name it in errors.
    endpoints: Arc<Vec<String>>,
    current: Arc<AtomicUsize>,
    prefix: String,
    timeout: Duration,
}

/// After a request to member `failed` fails, points `current` at the member after it, unless
/// another task already moved on. `current` always holds an index below `members`: comparing
/// it with `failed` is what tells whether someone else moved first, so it must not grow past
/// the last member (it once did, and after one full round of failures, as when the leader dies
/// and the others refuse requests while they elect a new one, every request went to the dead
/// member for good).
fn move_on_from(current: &AtomicUsize, failed: usize, members: usize) {
    let _ = current.compare_exchange(failed, (failed + 1) % members, Ordering::Relaxed, Ordering::Relaxed);
}

impl Store {
    /// Connects to the cluster. `timeout` bounds every request, so a partitioned store shows up as
    /// an error rather than a hang.
    pub async fn connect(endpoints: &[String], prefix: &str, timeout: Duration) -> Result<Store, StoreError> {
        let options = ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_timeout(timeout)
            .with_keep_alive(Duration::from_secs(1), timeout)
            // Without this, a member cut off from its leader would keep serving an idle change
            // stream, and the directory server could not tell it had fallen behind.
            .with_require_leader(true);
        let mut members = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            members.push(Client::connect([endpoint], Some(options.clone())).await?);
        }
        Ok(Store {
            members: Arc::new(members),
            endpoints: Arc::new(endpoints.to_vec()),
            current: Arc::new(AtomicUsize::new(0)),
            prefix: prefix.trim_end_matches('/').to_string(),
            timeout,
        })
    }

    /// Runs `call` against the current member; on failure moves on to the next member and
    /// tries again, once per member. Every call here is safe to repeat: reads trivially, and
    /// the puts and deletes of a batch set absolute values.
    async fn on_some_member<T, F, Fut>(&self, call: F) -> Result<T, StoreError>
    where
        F: Fn(Client) -> Fut,
        Fut: std::future::Future<Output = Result<T, etcd_client::Error>>,
    {
        let mut failures = Vec::with_capacity(self.members.len());
        for _ in 0..self.members.len() {
            let index = self.current.load(Ordering::Relaxed);
            let result = match tokio::time::timeout(self.timeout, call(self.members[index].clone())).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(e)) => StoreError::Etcd(e),
                Err(_) => StoreError::Timeout(self.timeout),
            };
            move_on_from(&self.current, index, self.members.len());
            failures.push((self.endpoints[index].clone(), result));
        }
        if failures.len() == 1 {
            return Err(failures.pop().expect("one failure").1);
        }
        Err(StoreError::AllMembers(failures))
    }

    fn key(&self, aa: Aa) -> String {
        format!("{}/aa/{}", self.prefix, aa)
    }

    fn aa_prefix(&self) -> String {
        format!("{}/aa/", self.prefix)
    }

    /// Commits `writes` (a put for `Some`, a removal for `None`) as one transaction, if every
    /// key in `guards` is still at the revision given (0: the key does not exist). Those
    /// revisions are what the writes were authorised against (`authorisation.rs`); if any key
    /// moved, nothing is written and the current entry of every guarded key comes back, to
    /// decide again. etcd refuses transactions longer than its --max-txn-ops (128 by default)
    /// in any branch: callers split larger batches.
    pub async fn commit_guarded(&self, guards: &[(Aa, i64)], writes: &[(Aa, Option<Mapping>)]) -> Result<Guarded, StoreError> {
        let writes: Vec<Write> = writes.iter().map(|(aa, mapping)| Write { aa: *aa, mapping: mapping.clone(), marks: Marks::default() }).collect();
        self.commit(guards, &writes, Duration::ZERO).await
    }

    /// As [`Store::commit_guarded`], writing each entry with its marks. Tombstones (removals
    /// with marks) are put under a lease of `tombstone_ttl`, granted first, after which etcd
    /// deletes them.
    pub async fn commit(&self, guards: &[(Aa, i64)], writes: &[Write], tombstone_ttl: Duration) -> Result<Guarded, StoreError> {
        let tombstone = match writes.iter().any(|w| w.mapping.is_none() && !w.marks.is_empty()) {
            false => None,
            true => {
                let ttl = tombstone_ttl.as_secs().max(1) as i64;
                let lease = self.on_some_member(|c| async move { c.lease_client().grant(ttl, None).await }).await?;
                Some(PutOptions::new().with_lease(lease.id()))
            }
        };
        let compares: Vec<Compare> = guards
            .iter()
            .map(|(aa, revision)| match revision {
                0 => Compare::version(self.key(*aa), CompareOp::Equal, 0),
                r => Compare::mod_revision(self.key(*aa), CompareOp::Equal, *r),
            })
            .collect();
        let txn_ops: Vec<TxnOp> = writes
            .iter()
            .map(|w| match encode_entry(w.mapping.as_ref(), &w.marks) {
                Some(value) if w.mapping.is_none() => TxnOp::put(self.key(w.aa), value, tombstone.clone()),
                Some(value) => TxnOp::put(self.key(w.aa), value, None),
                None => TxnOp::delete(self.key(w.aa), None),
            })
            .collect();
        let reads: Vec<TxnOp> = guards.iter().map(|(aa, _)| TxnOp::get(self.key(*aa), None)).collect();
        let txn = Txn::new().when(compares).and_then(txn_ops).or_else(reads);
        let response = self
            .on_some_member(|c| {
                let txn = txn.clone();
                async move { c.kv_client().txn(txn).await }
            })
            .await?;
        let revision = response.header().ok_or(StoreError::NoHeader)?.revision();
        if response.succeeded() {
            return Ok(Guarded::Committed(revision));
        }
        let current = response
            .op_responses()
            .into_iter()
            .map(|r| match r {
                TxnOpResponse::Get(get) => get.kvs().first().map(|kv| {
                    let (mapping, marks) = decode_entry(kv.value()).unwrap_or_default();
                    Versioned { mapping, revision: kv.mod_revision(), marks }
                }),
                _ => None,
            })
            .collect();
        Ok(Guarded::Moved { current, revision })
    }

    /// Reads every mapping at one revision, page by page, and returns them with that revision.
    /// Tombstones come back as entries without a mapping. Values that do not parse (written by
    /// hand, say) are skipped and counted.
    pub async fn snapshot(&self) -> Result<(FxHashMap<Aa, Versioned>, i64, usize), StoreError> {
        let prefix = self.aa_prefix();
        let end = prefix_end(&prefix);
        let mut table = FxHashMap::default();
        let mut skipped = 0;
        let mut from = prefix.clone().into_bytes();
        let mut revision = 0;
        loop {
            let mut options = GetOptions::new().with_range(end.clone()).with_limit(SNAPSHOT_PAGE);
            if revision > 0 {
                options = options.with_revision(revision);
            }
            let page = self
                .on_some_member(|c| {
                    let (from, options) = (from.clone(), options.clone());
                    async move { c.kv_client().get(from, Some(options)).await }
                })
                .await?;
            if revision == 0 {
                revision = page.header().ok_or(StoreError::NoHeader)?.revision();
            }
            for kv in page.kvs() {
                match parse_entry(&prefix, kv.key(), kv.value()) {
                    Some((aa, mapping, marks)) => {
                        table.insert(aa, Versioned { mapping, revision: kv.mod_revision(), marks });
                    }
                    None => skipped += 1,
                }
            }
            match (page.more(), page.kvs().last()) {
                (true, Some(last)) => {
                    from = last.key().to_vec();
                    from.push(0);
                }
                _ => break,
            }
        }
        Ok((table, revision, skipped))
    }

    /// Opens the stream of committed changes to mappings after `revision`.
    pub async fn watch(&self, revision: i64) -> Result<ChangeStream, StoreError> {
        let prefix = self.aa_prefix();
        let options = WatchOptions::new().with_prefix().with_start_revision(revision + 1);
        let stream = self
            .on_some_member(|c| {
                let (prefix, options) = (prefix.clone(), options.clone());
                async move { c.watch_client().watch(prefix, Some(options)).await }
            })
            .await?;
        Ok(ChangeStream { stream, prefix })
    }

    /// A linearizable read of nothing in particular: succeeds only if a quorum with a leader is
    /// reachable, which is what "in contact with the store" means for the staleness bound.
    pub async fn probe(&self) -> Result<i64, StoreError> {
        let key = format!("{}/probe", self.prefix);
        let r = self
            .on_some_member(|c| {
                let key = key.clone();
                async move { c.kv_client().get(key, Some(GetOptions::new().with_count_only())).await }
            })
            .await?;
        Ok(r.header().ok_or(StoreError::NoHeader)?.revision())
    }

    /// Reads one mapping with a linearizable read (used by tests and tools, not by lookups).
    pub async fn read(&self, aa: Aa) -> Result<Option<(Mapping, i64)>, StoreError> {
        let prefix = self.aa_prefix();
        let key = self.key(aa);
        let r = self
            .on_some_member(|c| {
                let key = key.clone();
                async move { c.kv_client().get(key, None).await }
            })
            .await?;
        Ok(r.kvs().first().and_then(|kv| parse_entry(&prefix, kv.key(), kv.value()).and_then(|(_, m, _)| Some((m?, kv.mod_revision())))))
    }
}

/// Committed changes, in revision order, as etcd streams them.
pub struct ChangeStream {
    stream: WatchStream,
    prefix: String,
}

impl ChangeStream {
    /// Asks etcd to report how far the stream has got: a batch with no changes arrives when
    /// every change up to the store's current revision has been delivered.
    pub async fn request_progress(&mut self) -> Result<(), StoreError> {
        Ok(self.stream.request_progress().await?)
    }

    /// The next group of changes; `Ok(None)` when the stream ended. Unparseable values are
    /// dropped (they could only come from writers other than directory servers), but count in
    /// `through`. etcd sends all the events of one revision in one response, so after a
    /// response every change up to its highest revision has been delivered.
    pub async fn next(&mut self) -> Result<Option<StreamBatch>, StoreError> {
        loop {
            let Some(response) = self.stream.message().await? else {
                return Ok(None);
            };
            if response.canceled() {
                return Err(StoreError::WatchCancelled(format!("{} (compacted at revision {})", response.cancel_reason(), response.compact_revision())));
            }
            if response.events().is_empty() {
                // A progress report (`request_progress`): every change up to its revision has
                // been delivered. Not the reply that creates the watch, which comes before the
                // changes it replays from the start revision.
                match response.header().map(|h| h.revision()) {
                    Some(revision) if !response.created() && revision > 0 => {
                        return Ok(Some(StreamBatch { changes: Vec::new(), through: revision, store_revision: revision }));
                    }
                    _ => continue,
                }
            }
            let mut changes = Vec::with_capacity(response.events().len());
            let mut through = 0;
            for event in response.events() {
                let Some(kv) = event.kv() else { continue };
                through = through.max(kv.mod_revision());
                let Some(aa) = kv.key().strip_prefix(self.prefix.as_bytes()).and_then(|k| std::str::from_utf8(k).ok()).and_then(|k| k.parse::<Aa>().ok())
                else {
                    continue;
                };
                let (mapping, marks) = match event.event_type() {
                    EventType::Put => match decode_entry(kv.value()) {
                        Ok(entry) => entry,
                        Err(_) => continue,
                    },
                    EventType::Delete => (None, Marks::default()),
                };
                changes.push(Change { aa, versioned: Versioned { mapping, revision: kv.mod_revision(), marks } });
            }
            let store_revision = response.header().map(|h| h.revision()).unwrap_or(0);
            return Ok(Some(StreamBatch { changes, through, store_revision }));
        }
    }
}

fn parse_entry(prefix: &str, key: &[u8], value: &[u8]) -> Option<(Aa, Option<Mapping>, Marks)> {
    let aa = std::str::from_utf8(key.strip_prefix(prefix.as_bytes())?).ok()?.parse().ok()?;
    let (mapping, marks) = decode_entry(value).ok()?;
    Some((aa, mapping, marks))
}

/// The smallest key greater than every key starting with `prefix` (etcd's range_end convention).
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three members, every request failing (the leader killed, the other two without a leader
    /// during the election): the cursor must keep cycling over all three, round after round,
    /// so that the first member to answer again is reached.
    #[test]
    fn the_member_cursor_keeps_cycling_after_a_full_round_of_failures() {
        let current = AtomicUsize::new(0);
        let mut visited = Vec::new();
        for _ in 0..7 {
            let index = current.load(Ordering::Relaxed);
            visited.push(index);
            move_on_from(&current, index, 3);
        }
        assert_eq!(visited, [0, 1, 2, 0, 1, 2, 0]);
    }

    /// The error of a request that no member answered names each member and its own error.
    #[test]
    fn a_request_no_member_answered_names_every_member() {
        let e = StoreError::AllMembers(vec![
            ("http://127.0.0.1:1".into(), StoreError::Timeout(Duration::from_millis(500))),
            ("http://127.0.0.1:2".into(), StoreError::NoHeader),
        ]);
        assert_eq!(
            e.to_string(),
            "every etcd member failed: http://127.0.0.1:1: etcd did not answer within 500ms; http://127.0.0.1:2: etcd response without a header"
        );
    }

    /// Two tasks fail on the same member at once: only the first moves the cursor on, so the
    /// second does not skip the next member.
    #[test]
    fn a_second_failure_on_the_same_member_does_not_skip_the_next() {
        let current = AtomicUsize::new(2);
        move_on_from(&current, 2, 3);
        move_on_from(&current, 2, 3);
        assert_eq!(current.load(Ordering::Relaxed), 0);
    }
}
