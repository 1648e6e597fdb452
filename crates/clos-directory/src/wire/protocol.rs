//! Revisions of the directory protocol, and how clients and servers of different revisions
//! keep talking to each other.
//!
//! - **1**: the original protocol.
//! - **2**: lookups may be answered `Stale` (the server has lost contact with the store for
//!   longer than its staleness bound, and answers from memory, saying for how long); updates
//!   and removals carry their [`Origin`](crate::origin::Origin), so a retried update cannot
//!   overwrite a later one; an update a server cannot send to the store is answered
//!   `StoreUnreachable`.
//!
//! A client states its revision in its `Hello`, as one byte after the token; a `Hello` without
//! it is revision 1, byte for byte the Hello of earlier clients. A server sends a revision-2
//! reply only to a session that stated revision 2 or later, so an earlier client never sees a
//! reply kind it cannot decode: when its server is cut off from the store it gets
//! `Unavailable`, as before, and never a stale answer passed off as fresh. A server of revision
//! 1 rejects the extra Hello byte ("1 unexpected bytes after the last field"); the client then
//! opens the session again as revision 1 (`connection.rs`) and sends no origins, so new
//! clients work with old servers too. Origins are only sent in revision-2 sessions, since a
//! server of revision 1 would reject the extra bytes of the update.
//!
//! Entries written with origins have marks in their stored value, which servers of revision 1
//! cannot read (they skip such values): upgrade every directory server before any provisioning
//! client.

/// The revision this build speaks.
pub const PROTOCOL: u8 = 2;

/// The revision of the first protocol, which states no revision in its Hello.
pub const FIRST_PROTOCOL: u8 = 1;

/// Whether a server's rejection of a revision-2 Hello means it only speaks revision 1: it
/// found bytes after the token, where revision 1 ends.
pub fn rejected_as_first_protocol(message: &str) -> bool {
    message.contains("Hello: 1 unexpected bytes after the last field")
}
