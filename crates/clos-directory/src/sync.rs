//! Keeping a directory server's table in step with the store (VL2 §4.3.2).
//!
//! VL2's directory servers "lazily synchronise their local mappings with the RSM every 30
//! seconds". We keep that full resynchronisation as a safety net and add etcd's change stream,
//! so committed updates reach every directory server within milliseconds instead of up to 30 s
//! (VL2 got the same effect from optional peer pushes, §5.5 "fast reconvergence").
//!
//! The loop: read a snapshot, open the change stream just after it, then apply changes while
//! probing the store. Every revision the store reports (snapshot, stream, probe) tells the
//! table how far the store has got, which bounds what a peer's push may claim (issue 42). Any failure (stream ended, probe failed, store unreachable) drops back to
//! a fresh snapshot, so a server that was partitioned or restarted always recovers from the store,
//! the source of truth.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{interval, sleep, MissedTickBehavior};
use tracing::{info, warn};

use crate::freshness::Freshness;
use crate::store::Store;
use crate::table::Table;

pub struct SyncSettings {
    pub resync_interval: Duration,
    pub probe_interval: Duration,
}

/// Runs forever; spawn it.
pub async fn keep_in_sync(store: Store, table: Arc<Table>, freshness: Arc<Freshness>, settings: SyncSettings) {
    let mut backoff = Duration::from_millis(50);
    loop {
        match follow(&store, &table, &freshness, &settings).await {
            Ok(()) => {}
            Err(e) => warn!(error = %e, "lost step with the store; will resynchronise"),
        }
        sleep(backoff).await;
        backoff = (backoff * 2).min(settings.probe_interval.max(Duration::from_millis(50)) * 4);
    }
}

/// The freshness mark says the table holds everything the store had committed at a given time
/// (`freshness.rs`). A read of the store sent at `t` that reports revision `r` proves that only
/// once the table has applied the stream through `r`: a probe held in a cut-off link returns
/// when the link heals, before the changes committed meanwhile arrive down the stream, and
/// marking on its reply would pass the table off as current while it misses them. So the mark
/// is dated from when the probe was sent, and waits (asking etcd for the stream's progress)
/// until the table has caught up with the probe's revision.
async fn follow(store: &Store, table: &Table, freshness: &Freshness, settings: &SyncSettings) -> Result<(), crate::store::StoreError> {
    let read_at = freshness.now();
    let (snapshot, revision, skipped) = store.snapshot().await?;
    let rows = snapshot.len();
    table.merge_snapshot(snapshot, revision);
    let mut changes = store.watch(revision).await?;
    freshness.mark_at(read_at);
    // A probe's (revision, time sent) that the table has not caught up with yet.
    let mut pending: Option<(i64, u64)> = None;
    info!(rows, skipped, revision, "synchronised with the store");

    let mut probe = interval(settings.probe_interval);
    probe.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut resync = interval(settings.resync_interval);
    resync.set_missed_tick_behavior(MissedTickBehavior::Delay);
    resync.tick().await;
    loop {
        tokio::select! {
            batch = changes.next() => {
                match batch? {
                    Some(batch) => {
                        table.learn(batch.store_revision);
                        table.apply_stream(batch.changes, batch.through);
                        if let Some((revision, sent)) = pending {
                            if table.streamed() >= revision {
                                freshness.mark_at(sent);
                                pending = None;
                            }
                        }
                    }
                    None => return Err(crate::store::StoreError::WatchCancelled("stream ended".into())),
                }
            }
            _ = probe.tick() => {
                // A linearizable read: its revision is the store's, a bound on what peers'
                // pushes may claim (`table.rs`).
                let sent = freshness.now();
                let revision = store.probe().await?;
                table.learn(revision);
                if table.streamed() >= revision {
                    freshness.mark_at(sent);
                } else {
                    pending = Some((revision, sent));
                    changes.request_progress().await?;
                }
            }
            _ = resync.tick() => {
                let (snapshot, revision, _) = store.snapshot().await?;
                let rows = snapshot.len();
                table.merge_snapshot(snapshot, revision);
                info!(rows, revision, "lazy resynchronisation");
            }
        }
    }
}
