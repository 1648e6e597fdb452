//! The replicated store: VL2's RSM tier (§4.3.2), here an etcd cluster.
//!
//! VL2 ran its own Paxos-based RSM. We use etcd, a widely deployed Raft implementation that
//! operators already run, rather than a home-made consensus engine: it gives the same guarantee
//! (an acknowledged write is on a majority and survives the loss of a minority, including the
//! leader) plus the two things a directory server needs to stay current, a paginated snapshot
//! read at a fixed revision and a stream of committed changes from a revision on.
//!
//! Layout: one key per AA, `<prefix>/aa/<aa>`, whose value is `"<la> <service>"`, so an operator
//! can inspect the directory with `etcdctl get --prefix /clos/vl2/aa/`.

use std::time::Duration;

use etcd_client::{
    Client, ConnectOptions, EventType, GetOptions, Txn, TxnOp, WatchOptions, WatchStream,
};
use rustc_hash::FxHashMap;

use crate::address::Aa;
use crate::mapping::{Mapping, Versioned};

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
}

/// One committed change read from the store.
#[derive(Clone, Debug)]
pub struct Change {
    pub aa: Aa,
    pub versioned: Versioned,
}

/// A handle on the etcd cluster. Cheap to clone: clones share one connection pool.
#[derive(Clone)]
pub struct Store {
    client: Client,
    prefix: String,
    timeout: Duration,
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
        let client = Client::connect(endpoints, Some(options)).await?;
        Ok(Store { client, prefix: prefix.trim_end_matches('/').to_string(), timeout })
    }

    fn key(&self, aa: Aa) -> String {
        format!("{}/aa/{}", self.prefix, aa)
    }

    fn aa_prefix(&self) -> String {
        format!("{}/aa/", self.prefix)
    }

    async fn bounded<T>(&self, f: impl std::future::Future<Output = Result<T, etcd_client::Error>>) -> Result<T, StoreError> {
        match tokio::time::timeout(self.timeout, f).await {
            Ok(r) => Ok(r?),
            Err(_) => Err(StoreError::Timeout(self.timeout)),
        }
    }

    /// Commits `ops` (a put for `Some`, a removal for `None`) as one transaction and returns
    /// the revision that committed it. etcd refuses transactions longer than its --max-txn-ops
    /// (128 by default): callers split larger batches.
    pub async fn commit(&self, ops: &[(Aa, Option<Mapping>)]) -> Result<i64, StoreError> {
        let txn_ops: Vec<TxnOp> = ops
            .iter()
            .map(|(aa, m)| match m {
                Some(m) => TxnOp::put(self.key(*aa), m.to_store_value(), None),
                None => TxnOp::delete(self.key(*aa), None),
            })
            .collect();
        let mut kv = self.client.kv_client();
        let response = self.bounded(kv.txn(Txn::new().and_then(txn_ops))).await?;
        Ok(response.header().ok_or(StoreError::NoHeader)?.revision())
    }

    /// Reads every mapping at one revision, page by page, and returns them with that revision.
    /// Values that do not parse (written by hand, say) are skipped and counted.
    pub async fn snapshot(&self) -> Result<(FxHashMap<Aa, Versioned>, i64, usize), StoreError> {
        let prefix = self.aa_prefix();
        let end = prefix_end(&prefix);
        let mut kv = self.client.kv_client();
        let mut table = FxHashMap::default();
        let mut skipped = 0;
        let mut from = prefix.clone().into_bytes();
        let mut revision = 0;
        loop {
            let mut options = GetOptions::new().with_range(end.clone()).with_limit(SNAPSHOT_PAGE);
            if revision > 0 {
                options = options.with_revision(revision);
            }
            let page = self.bounded(kv.get(from.clone(), Some(options))).await?;
            if revision == 0 {
                revision = page.header().ok_or(StoreError::NoHeader)?.revision();
            }
            for kv in page.kvs() {
                match parse_entry(&prefix, kv.key(), kv.value()) {
                    Some((aa, mapping)) => {
                        table.insert(aa, Versioned { mapping: Some(mapping), revision: kv.mod_revision() });
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
        let mut watch = self.client.watch_client();
        let stream = self.bounded(watch.watch(prefix.clone(), Some(options))).await?;
        Ok(ChangeStream { stream, prefix })
    }

    /// A linearizable read of nothing in particular: succeeds only if a quorum with a leader is
    /// reachable, which is what "in contact with the store" means for the staleness bound.
    pub async fn probe(&self) -> Result<i64, StoreError> {
        let mut kv = self.client.kv_client();
        let key = format!("{}/probe", self.prefix);
        let r = self.bounded(kv.get(key, Some(GetOptions::new().with_count_only()))).await?;
        Ok(r.header().ok_or(StoreError::NoHeader)?.revision())
    }

    /// Reads one mapping with a linearizable read (used by tests and tools, not by lookups).
    pub async fn read(&self, aa: Aa) -> Result<Option<(Mapping, i64)>, StoreError> {
        let mut kv = self.client.kv_client();
        let prefix = self.aa_prefix();
        let r = self.bounded(kv.get(self.key(aa), None)).await?;
        Ok(r.kvs()
            .first()
            .and_then(|kv| parse_entry(&prefix, kv.key(), kv.value()).map(|(_, m)| (m, kv.mod_revision()))))
    }
}

/// Committed changes, in revision order, as etcd streams them.
pub struct ChangeStream {
    stream: WatchStream,
    prefix: String,
}

impl ChangeStream {
    /// The next group of changes; `Ok(None)` when the stream ended. Unparseable values are
    /// dropped (they could only come from writers other than directory servers).
    pub async fn next(&mut self) -> Result<Option<Vec<Change>>, StoreError> {
        loop {
            let Some(response) = self.stream.message().await? else {
                return Ok(None);
            };
            if response.canceled() {
                return Err(StoreError::WatchCancelled(format!(
                    "{} (compacted at revision {})",
                    response.cancel_reason(),
                    response.compact_revision()
                )));
            }
            if response.events().is_empty() {
                continue;
            }
            let mut changes = Vec::with_capacity(response.events().len());
            for event in response.events() {
                let Some(kv) = event.kv() else { continue };
                let Some(aa) = kv.key().strip_prefix(self.prefix.as_bytes()).and_then(|k| std::str::from_utf8(k).ok()).and_then(|k| k.parse::<Aa>().ok()) else {
                    continue;
                };
                let mapping = match event.event_type() {
                    EventType::Put => match Mapping::from_store_value(kv.value()) {
                        Ok(m) => Some(m),
                        Err(_) => continue,
                    },
                    EventType::Delete => None,
                };
                changes.push(Change { aa, versioned: Versioned { mapping, revision: kv.mod_revision() } });
            }
            return Ok(Some(changes));
        }
    }
}

fn parse_entry(prefix: &str, key: &[u8], value: &[u8]) -> Option<(Aa, Mapping)> {
    let aa = std::str::from_utf8(key.strip_prefix(prefix.as_bytes())?).ok()?.parse().ok()?;
    Some((aa, Mapping::from_store_value(value).ok()?))
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
