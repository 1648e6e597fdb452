//! Where an update comes from, and which updates a stored entry already includes: what keeps a
//! retried update from overwriting a later one.
//!
//! VL2's provisioning system "sends the same update to another directory server" when no
//! acknowledgement arrives within a timeout (§4.3.2). The first server's commit may still be on
//! its way; if a later update of the same AA commits in between, the first server's copy must
//! not land on top of it. Every update therefore carries an [`Origin`]: a writer id chosen at
//! random by each provisioning client, and a sequence number that grows with each update the
//! writer issues and stays the same on every attempt of one update. The store's entry records,
//! in [`Marks`], the highest sequence number of each recent writer whose update it includes.
//! A batch decides each update against the entry it reads, and its transaction is guarded by
//! that entry's revision (`store.rs`), so the decision and the write are one atomic step: an
//! update whose writer's mark is already at or past its sequence number is not written again
//! (a duplicate, or older than an update its own writer issued later) and is acknowledged as
//! applied. The marks of several writers are kept, so a retry is caught also after another
//! writer's update of the same AA.
//!
//! A removal leaves its marks behind in a tombstone value, which expires with an etcd lease
//! after `updates.tombstone_ttl`, so a late retry cannot resurrect an AA removed after it.
//!
//! Stored values (`mapping::encode_entry`), readable with etcdctl (one line per form):
//!
//! ```text
//! 20.0.0.1 web                        mapped; no origin recorded (written by a client of protocol 1)
//! 20.0.0.1 web 9f86d081884c7d65:12    mapped; includes writer 9f86d081884c7d65's updates up to 12
//! removed 9f86d081884c7d65:13         removed (a tombstone, expiring with its lease)
//! ```

use std::fmt;

/// Writers whose marks an entry keeps, most recent first. A retry is caught unless more than
/// this many other writers updated the AA between its commit and its late copy.
pub const MAX_MARKS: usize = 4;

/// Who issued an update and its place in that writer's order. Every attempt of one update
/// (at any directory server) carries the same origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    /// Chosen at random by each provisioning client (`resolver.rs`).
    pub writer: u64,
    /// 1, 2, 3, ... in the order the writer issued its updates.
    pub seq: u64,
}

impl Origin {
    /// The origin as the store records it: the writer id mixed with the name of the principal
    /// whose session sent it (FNV-1a over both), so writers of different principals never share
    /// marks, by accident or on purpose.
    pub fn scoped(self, principal: &str) -> Origin {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in principal.bytes().chain([0xff]).chain(self.writer.to_be_bytes()) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        Origin { writer: hash, seq: self.seq }
    }
}

/// The updates an entry includes: per recent writer, the highest sequence number applied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Marks(Vec<Origin>);

impl Marks {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the update of `origin` is already applied, or was overtaken by a later update of
    /// the same writer: then writing it would undo something newer.
    pub fn covers(&self, origin: Origin) -> bool {
        self.0.iter().any(|m| m.writer == origin.writer && m.seq >= origin.seq)
    }

    /// Records that the update of `origin` is applied; the writer moves to the front, and the
    /// least recent writer beyond [`MAX_MARKS`] is forgotten.
    pub fn record(&mut self, origin: Origin) {
        let seq = self.0.iter().find(|m| m.writer == origin.writer).map_or(origin.seq, |m| m.seq.max(origin.seq));
        self.0.retain(|m| m.writer != origin.writer);
        self.0.insert(0, Origin { writer: origin.writer, seq });
        self.0.truncate(MAX_MARKS);
    }

    pub fn parse(text: &str) -> Result<Marks, String> {
        let mut marks = Vec::new();
        for mark in text.split(',') {
            let (writer, seq) = mark.split_once(':').ok_or_else(|| format!("mark '{mark}' is not '<writer>:<seq>'"))?;
            let writer = u64::from_str_radix(writer, 16).map_err(|_| format!("mark '{mark}': writer is not hexadecimal"))?;
            let seq = seq.parse().map_err(|_| format!("mark '{mark}': sequence number is not a number"))?;
            marks.push(Origin { writer, seq });
        }
        marks.truncate(MAX_MARKS);
        Ok(Marks(marks))
    }
}

impl fmt::Display for Marks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, m) in self.0.iter().enumerate() {
            write!(f, "{}{:016x}:{}", if i == 0 { "" } else { "," }, m.writer, m.seq)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(writer: u64, seq: u64) -> Origin {
        Origin { writer, seq }
    }

    #[test]
    fn marks_cover_applied_and_overtaken_updates_of_their_writer_only() {
        let mut marks = Marks::default();
        marks.record(o(7, 3));
        assert!(marks.covers(o(7, 3)), "a duplicate");
        assert!(marks.covers(o(7, 2)), "overtaken by the writer's own later update");
        assert!(!marks.covers(o(7, 4)));
        assert!(!marks.covers(o(8, 1)), "another writer");
        marks.record(o(8, 1));
        assert!(marks.covers(o(7, 3)), "kept after another writer's update");
        for w in 9..9 + MAX_MARKS as u64 {
            marks.record(o(w, 1));
        }
        assert!(!marks.covers(o(7, 3)), "the least recent writer beyond MAX_MARKS is forgotten");
    }

    #[test]
    fn a_writer_id_is_scoped_to_its_principal() {
        assert_ne!(o(5, 1).scoped("web-provisioning").writer, o(5, 1).scoped("db-provisioning").writer);
        assert_eq!(o(5, 1).scoped("web-provisioning"), o(5, 1).scoped("web-provisioning"));
        assert_eq!(o(5, 9).scoped("p").seq, 9);
    }
}
