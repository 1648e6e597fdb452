//! The messages of the directory protocol and their byte layout.
//!
//! Requests flow from agents (VL2 §4.2's shim), ToRs and peer directory servers to a directory
//! server; replies flow back. Integers are big-endian; strings are a length byte then bytes.
//! Every decoding failure names the message and field, so a server can tell a client exactly what
//! was wrong before it closes the connection.

use super::error::WireError;
use super::frame::write_frame;
use super::protocol::FIRST_PROTOCOL;
use crate::address::{Aa, La};
use crate::mapping::{validate_service, Mapping};
use crate::origin::Origin;
use crate::table::Resolution;

/// The longest authentication token accepted, in bytes.
pub const MAX_TOKEN_LEN: usize = 255;

/// Who opened a session; it decides which requests the session may send, and the credential
/// its Hello must carry (`[[principals]]`, see `credentials.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A VL2 agent: looks up mappings as its own AA and receives corrections for it.
    Agent = 1,
    /// A ToR reporting packets for AAs it no longer hosts (VL2 §4.3, reactive cache update).
    Tor = 2,
    /// Another directory server pushing acknowledged updates (VL2 §4.3.2).
    Peer = 3,
    /// The network provisioning system: updates and removes mappings (VL2 §4.3.2, "updates
    /// come from the network provisioning system"), within the services its credential names.
    Provisioner = 4,
}

impl Role {
    /// The name used in config files and messages.
    pub fn name(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Tor => "tor",
            Role::Peer => "peer",
            Role::Provisioner => "provisioner",
        }
    }

    pub fn from_name(name: &str) -> Option<Role> {
        [Role::Agent, Role::Tor, Role::Peer, Role::Provisioner].into_iter().find(|r| r.name() == name)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Must open every session. `aa` is the agent's own AA (the requester for access control and
    /// the address corrections are sent to), which its credential must name; zero for ToRs,
    /// peers and provisioners. `protocol` is the client's revision (`protocol.rs`); 1 is sent
    /// as no byte at all, as earlier clients did.
    Hello {
        role: Role,
        aa: Aa,
        token: Vec<u8>,
        protocol: u8,
    },
    Lookup {
        id: u64,
        target: Aa,
    },
    /// `origin` (protocol 2): the same on every attempt of this update (`origin.rs`).
    Update {
        id: u64,
        aa: Aa,
        mapping: Mapping,
        origin: Option<Origin>,
    },
    Remove {
        id: u64,
        aa: Aa,
        origin: Option<Origin>,
    },
    /// A ToR received a packet from `sender` for `target`, which it no longer hosts.
    Report {
        id: u64,
        sender: Aa,
        target: Aa,
        stale_la: La,
    },
    /// A peer's acknowledged update, tagged with the store revision that committed it.
    PeerPush {
        aa: Aa,
        revision: i64,
        mapping: Option<Mapping>,
    },
    /// A correction a peer could not deliver itself: `sender` has no session with it.
    PeerCorrection {
        sender: Aa,
        target: Aa,
        la: La,
        revision: i64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Welcome,
    Found {
        id: u64,
        la: La,
        revision: i64,
    },
    NotFound {
        id: u64,
    },
    /// Access control refused the lookup (VL2 §4.2.1).
    Denied {
        id: u64,
    },
    /// The server cannot answer now (store unreachable, table too stale); try another server.
    Unavailable {
        id: u64,
        reason: String,
    },
    /// The update is committed in the replicated store at `revision`.
    Acked {
        id: u64,
        revision: i64,
    },
    /// A gratuitous correction of a stale cache entry (VL2 §4.3, "updating caches reactively").
    Correction {
        target: Aa,
        la: La,
        revision: i64,
    },
    /// The request broke the protocol; the server closes the session after sending this.
    Rejected {
        message: String,
    },
    /// The update or removal is not authorised for this session's credential (and would not be
    /// at any other server): `reason` names the field and the fix. The session stays open.
    Refused {
        id: u64,
        reason: String,
    },
    /// Protocol 2. The server has had no contact with the store for `age_ms`, longer than its
    /// staleness bound, and answers from its in-memory table (VL2 §4.3.2: directory servers
    /// answer lookups from their cache, for availability): `answer` misses no update committed
    /// more than `age_ms` before it, but may miss later ones.
    Stale {
        id: u64,
        age_ms: u64,
        answer: Resolution,
    },
    /// Protocol 2. The server has had no contact with the store for `age_ms`, longer than its
    /// staleness bound, so it did not send the update to the store: it is not committed (by this
    /// attempt). Another server may reach the store.
    StoreUnreachable {
        id: u64,
        age_ms: u64,
    },
}

mod kind {
    pub const HELLO: u8 = 1;
    pub const LOOKUP: u8 = 2;
    pub const UPDATE: u8 = 3;
    pub const REMOVE: u8 = 4;
    pub const REPORT: u8 = 5;
    pub const PEER_PUSH: u8 = 6;
    pub const PEER_CORRECTION: u8 = 7;
    pub const WELCOME: u8 = 0x81;
    pub const FOUND: u8 = 0x82;
    pub const NOT_FOUND: u8 = 0x83;
    pub const DENIED: u8 = 0x84;
    pub const UNAVAILABLE: u8 = 0x85;
    pub const ACKED: u8 = 0x86;
    pub const CORRECTION: u8 = 0x87;
    pub const REJECTED: u8 = 0x88;
    pub const REFUSED: u8 = 0x89;
    pub const STALE: u8 = 0x8a;
    pub const STORE_UNREACHABLE: u8 = 0x8b;
}

/// Reads fields off a frame body, naming the message and field when one is missing or bad.
struct Fields<'a> {
    body: &'a [u8],
    message: &'static str,
}

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8], WireError> {
        if self.body.len() < n {
            return Err(WireError::Malformed(format!("{}.{field}: frame ends early (needs {n} more bytes, has {})", self.message, self.body.len())));
        }
        let (head, rest) = self.body.split_at(n);
        self.body = rest;
        Ok(head)
    }
    fn u8(&mut self, field: &str) -> Result<u8, WireError> {
        Ok(self.take(1, field)?[0])
    }
    fn u32(&mut self, field: &str) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.take(4, field)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self, field: &str) -> Result<u64, WireError> {
        Ok(u64::from_be_bytes(self.take(8, field)?.try_into().expect("8 bytes")))
    }
    fn i64(&mut self, field: &str) -> Result<i64, WireError> {
        Ok(self.u64(field)? as i64)
    }
    fn bytes(&mut self, field: &str) -> Result<&'a [u8], WireError> {
        let n = self.u8(field)? as usize;
        self.take(n, field)
    }
    fn text(&mut self, field: &str) -> Result<String, WireError> {
        let raw = self.bytes(field)?;
        String::from_utf8(raw.to_vec()).map_err(|_| WireError::Malformed(format!("{}.{field}: not UTF-8", self.message)))
    }
    fn service(&mut self) -> Result<String, WireError> {
        let service = self.text("service")?;
        validate_service(&service).map_err(|e| WireError::Malformed(format!("{}.{e}", self.message)))?;
        Ok(service)
    }
    /// An update's optional origin: the writer and sequence number, if the frame goes on.
    fn origin(&mut self) -> Result<Option<Origin>, WireError> {
        if self.body.is_empty() {
            return Ok(None);
        }
        Ok(Some(Origin { writer: self.u64("writer")?, seq: self.u64("seq")? }))
    }
    fn end(self) -> Result<(), WireError> {
        if self.body.is_empty() {
            Ok(())
        } else {
            Err(WireError::Malformed(format!("{}: {} unexpected bytes after the last field", self.message, self.body.len())))
        }
    }
}

fn put_origin(out: &mut Vec<u8>, origin: &Option<Origin>) {
    if let Some(o) = origin {
        out.extend_from_slice(&o.writer.to_be_bytes());
        out.extend_from_slice(&o.seq.to_be_bytes());
    }
}

/// A length byte, then at most 255 bytes. Longer text is cut before a UTF-8 continuation byte,
/// so that a cut reason still decodes as UTF-8 (tokens are at most 255 bytes, never cut).
fn put_text(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut n = bytes.len().min(255);
    while n < bytes.len() && n > 0 && bytes[n] & 0xc0 == 0x80 {
        n -= 1;
    }
    out.push(n as u8);
    out.extend_from_slice(&bytes[..n]);
}

impl Request {
    /// Appends this request as one frame.
    pub fn encode(&self, out: &mut Vec<u8>) {
        write_frame(out, |b| match self {
            Request::Hello { role, aa, token, protocol } => {
                b.push(kind::HELLO);
                b.push(*role as u8);
                b.extend_from_slice(&aa.0.to_be_bytes());
                put_text(b, token);
                if *protocol > FIRST_PROTOCOL {
                    b.push(*protocol);
                }
            }
            Request::Lookup { id, target } => {
                b.push(kind::LOOKUP);
                b.extend_from_slice(&id.to_be_bytes());
                b.extend_from_slice(&target.0.to_be_bytes());
            }
            Request::Update { id, aa, mapping, origin } => {
                b.push(kind::UPDATE);
                b.extend_from_slice(&id.to_be_bytes());
                b.extend_from_slice(&aa.0.to_be_bytes());
                b.extend_from_slice(&mapping.la.0.to_be_bytes());
                put_text(b, mapping.service.as_bytes());
                put_origin(b, origin);
            }
            Request::Remove { id, aa, origin } => {
                b.push(kind::REMOVE);
                b.extend_from_slice(&id.to_be_bytes());
                b.extend_from_slice(&aa.0.to_be_bytes());
                put_origin(b, origin);
            }
            Request::Report { id, sender, target, stale_la } => {
                b.push(kind::REPORT);
                b.extend_from_slice(&id.to_be_bytes());
                b.extend_from_slice(&sender.0.to_be_bytes());
                b.extend_from_slice(&target.0.to_be_bytes());
                b.extend_from_slice(&stale_la.0.to_be_bytes());
            }
            Request::PeerPush { aa, revision, mapping } => {
                b.push(kind::PEER_PUSH);
                b.extend_from_slice(&aa.0.to_be_bytes());
                b.extend_from_slice(&revision.to_be_bytes());
                match mapping {
                    None => b.push(0),
                    Some(m) => {
                        b.push(1);
                        b.extend_from_slice(&m.la.0.to_be_bytes());
                        put_text(b, m.service.as_bytes());
                    }
                }
            }
            Request::PeerCorrection { sender, target, la, revision } => {
                b.push(kind::PEER_CORRECTION);
                b.extend_from_slice(&sender.0.to_be_bytes());
                b.extend_from_slice(&target.0.to_be_bytes());
                b.extend_from_slice(&la.0.to_be_bytes());
                b.extend_from_slice(&revision.to_be_bytes());
            }
        })
    }

    pub fn decode(body: &[u8]) -> Result<Request, WireError> {
        let (&k, rest) = body.split_first().ok_or_else(|| WireError::Malformed("frame: empty body".into()))?;
        let message = match k {
            kind::HELLO => "Hello",
            kind::LOOKUP => "Lookup",
            kind::UPDATE => "Update",
            kind::REMOVE => "Remove",
            kind::REPORT => "Report",
            kind::PEER_PUSH => "PeerPush",
            kind::PEER_CORRECTION => "PeerCorrection",
            other => return Err(WireError::Malformed(format!("unknown request kind {other:#04x}; expected 0x01 (Hello) to 0x07 (PeerCorrection)"))),
        };
        let mut f = Fields { body: rest, message };
        let request = match k {
            kind::HELLO => {
                let role = match f.u8("role")? {
                    1 => Role::Agent,
                    2 => Role::Tor,
                    3 => Role::Peer,
                    4 => Role::Provisioner,
                    r => return Err(WireError::Malformed(format!("Hello.role: {r} is not 1 (agent), 2 (tor), 3 (peer) or 4 (provisioner)"))),
                };
                let aa = Aa(f.u32("aa")?);
                let token = f.bytes("token")?.to_vec();
                let protocol = match f.body.is_empty() {
                    true => FIRST_PROTOCOL,
                    false => match f.u8("protocol")? {
                        p if p > FIRST_PROTOCOL => p,
                        p => return Err(WireError::Malformed(format!("Hello.protocol: {p} must be 2 or more (revision 1 is sent as no byte)"))),
                    },
                };
                Request::Hello { role, aa, token, protocol }
            }
            kind::LOOKUP => Request::Lookup { id: f.u64("id")?, target: Aa(f.u32("target")?) },
            kind::UPDATE => {
                let id = f.u64("id")?;
                let aa = Aa(f.u32("aa")?);
                let la = La(f.u32("la")?);
                let service = f.service()?;
                Request::Update { id, aa, mapping: Mapping { la, service }, origin: f.origin()? }
            }
            kind::REMOVE => Request::Remove { id: f.u64("id")?, aa: Aa(f.u32("aa")?), origin: f.origin()? },
            kind::REPORT => Request::Report { id: f.u64("id")?, sender: Aa(f.u32("sender")?), target: Aa(f.u32("target")?), stale_la: La(f.u32("stale_la")?) },
            kind::PEER_CORRECTION => {
                Request::PeerCorrection { sender: Aa(f.u32("sender")?), target: Aa(f.u32("target")?), la: La(f.u32("la")?), revision: f.i64("revision")? }
            }
            _ => {
                let aa = Aa(f.u32("aa")?);
                let revision = f.i64("revision")?;
                let mapping = match f.u8("present")? {
                    0 => None,
                    1 => {
                        let la = La(f.u32("la")?);
                        Some(Mapping { la, service: f.service()? })
                    }
                    p => return Err(WireError::Malformed(format!("PeerPush.present: {p} is not 0 (removed) or 1 (mapped)"))),
                };
                Request::PeerPush { aa, revision, mapping }
            }
        };
        f.end()?;
        Ok(request)
    }
}

impl Reply {
    /// Appends this reply as one frame.
    pub fn encode(&self, out: &mut Vec<u8>) {
        write_frame(out, |b| match self {
            Reply::Welcome => b.push(kind::WELCOME),
            Reply::Found { id, la, revision } => {
                b.push(kind::FOUND);
                b.extend_from_slice(&id.to_be_bytes());
                b.extend_from_slice(&la.0.to_be_bytes());
                b.extend_from_slice(&revision.to_be_bytes());
            }
            Reply::NotFound { id } => {
                b.push(kind::NOT_FOUND);
                b.extend_from_slice(&id.to_be_bytes());
            }
            Reply::Denied { id } => {
                b.push(kind::DENIED);
                b.extend_from_slice(&id.to_be_bytes());
            }
            Reply::Unavailable { id, reason } => {
                b.push(kind::UNAVAILABLE);
                b.extend_from_slice(&id.to_be_bytes());
                put_text(b, reason.as_bytes());
            }
            Reply::Acked { id, revision } => {
                b.push(kind::ACKED);
                b.extend_from_slice(&id.to_be_bytes());
                b.extend_from_slice(&revision.to_be_bytes());
            }
            Reply::Correction { target, la, revision } => {
                b.push(kind::CORRECTION);
                b.extend_from_slice(&target.0.to_be_bytes());
                b.extend_from_slice(&la.0.to_be_bytes());
                b.extend_from_slice(&revision.to_be_bytes());
            }
            Reply::Rejected { message } => {
                b.push(kind::REJECTED);
                put_text(b, message.as_bytes());
            }
            Reply::Refused { id, reason } => {
                b.push(kind::REFUSED);
                b.extend_from_slice(&id.to_be_bytes());
                put_text(b, reason.as_bytes());
            }
            Reply::Stale { id, age_ms, answer } => {
                // The answer as its fresh reply kind would carry it, less the id.
                b.push(kind::STALE);
                b.extend_from_slice(&id.to_be_bytes());
                b.extend_from_slice(&age_ms.to_be_bytes());
                match answer {
                    Resolution::Found { la, revision } => {
                        b.push(kind::FOUND);
                        b.extend_from_slice(&la.0.to_be_bytes());
                        b.extend_from_slice(&revision.to_be_bytes());
                    }
                    Resolution::NotFound => b.push(kind::NOT_FOUND),
                    Resolution::Denied => b.push(kind::DENIED),
                }
            }
            Reply::StoreUnreachable { id, age_ms } => {
                b.push(kind::STORE_UNREACHABLE);
                b.extend_from_slice(&id.to_be_bytes());
                b.extend_from_slice(&age_ms.to_be_bytes());
            }
        })
    }

    pub fn decode(body: &[u8]) -> Result<Reply, WireError> {
        let (&k, rest) = body.split_first().ok_or_else(|| WireError::Malformed("frame: empty body".into()))?;
        let mut f = Fields { body: rest, message: "Reply" };
        let reply = match k {
            kind::WELCOME => Reply::Welcome,
            kind::FOUND => Reply::Found { id: f.u64("id")?, la: La(f.u32("la")?), revision: f.i64("revision")? },
            kind::NOT_FOUND => Reply::NotFound { id: f.u64("id")? },
            kind::DENIED => Reply::Denied { id: f.u64("id")? },
            kind::UNAVAILABLE => Reply::Unavailable { id: f.u64("id")?, reason: f.text("reason")? },
            kind::ACKED => Reply::Acked { id: f.u64("id")?, revision: f.i64("revision")? },
            kind::CORRECTION => Reply::Correction { target: Aa(f.u32("target")?), la: La(f.u32("la")?), revision: f.i64("revision")? },
            kind::REJECTED => Reply::Rejected { message: f.text("message")? },
            kind::REFUSED => Reply::Refused { id: f.u64("id")?, reason: f.text("reason")? },
            kind::STALE => {
                let (id, age_ms) = (f.u64("id")?, f.u64("age_ms")?);
                let answer = match f.u8("answer")? {
                    kind::FOUND => Resolution::Found { la: La(f.u32("la")?), revision: f.i64("revision")? },
                    kind::NOT_FOUND => Resolution::NotFound,
                    kind::DENIED => Resolution::Denied,
                    other => return Err(WireError::Malformed(format!("Stale.answer: {other:#04x} is not 0x82 (found), 0x83 (not found) or 0x84 (denied)"))),
                };
                Reply::Stale { id, age_ms, answer }
            }
            kind::STORE_UNREACHABLE => Reply::StoreUnreachable { id: f.u64("id")?, age_ms: f.u64("age_ms")? },
            other => return Err(WireError::Malformed(format!("unknown reply kind {other:#04x}"))),
        };
        f.end()?;
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::FrameBuffer;

    fn round_trip_request(r: Request) {
        let mut out = Vec::new();
        r.encode(&mut out);
        let mut buf = FrameBuffer::new(1024);
        buf.spare(out.len()).extend_from_slice(&out);
        assert_eq!(Request::decode(buf.next_frame().unwrap().unwrap()).unwrap(), r);
    }

    #[test]
    fn every_request_survives_encoding() {
        let m = Mapping { la: La(7), service: "web".into() };
        round_trip_request(Request::Hello { role: Role::Agent, aa: Aa(1), token: b"secret".to_vec(), protocol: 1 });
        round_trip_request(Request::Hello { role: Role::Provisioner, aa: Aa(0), token: b"secret".to_vec(), protocol: 2 });
        round_trip_request(Request::Lookup { id: 9, target: Aa(2) });
        round_trip_request(Request::Update { id: 3, aa: Aa(2), mapping: m.clone(), origin: None });
        round_trip_request(Request::Update { id: 3, aa: Aa(2), mapping: m.clone(), origin: Some(Origin { writer: u64::MAX, seq: 7 }) });
        round_trip_request(Request::Remove { id: 4, aa: Aa(2), origin: None });
        round_trip_request(Request::Remove { id: 4, aa: Aa(2), origin: Some(Origin { writer: 1, seq: 8 }) });
        round_trip_request(Request::Report { id: 5, sender: Aa(1), target: Aa(2), stale_la: La(3) });
        round_trip_request(Request::PeerPush { aa: Aa(2), revision: 77, mapping: Some(m) });
        round_trip_request(Request::PeerPush { aa: Aa(2), revision: 78, mapping: None });
        round_trip_request(Request::PeerCorrection { sender: Aa(1), target: Aa(2), la: La(3), revision: 79 });
    }

    #[test]
    fn a_refusal_survives_encoding() {
        let refused = Reply::Refused { id: 7, reason: "Update.service: db is outside this credential's services (web)".into() };
        let mut out = Vec::new();
        refused.encode(&mut out);
        let mut buf = FrameBuffer::new(1024);
        buf.spare(out.len()).extend_from_slice(&out);
        assert_eq!(Reply::decode(buf.next_frame().unwrap().unwrap()).unwrap(), refused);
    }

    /// Protocol 2 (`protocol.rs`): a revision-1 Hello and origin-less updates are the bytes
    /// earlier clients sent, and the stale replies survive encoding.
    #[test]
    fn protocol_1_frames_are_unchanged_and_protocol_2_replies_round_trip() {
        let mut hello = Vec::new();
        Request::Hello { role: Role::Agent, aa: Aa(1), token: b"secret".to_vec(), protocol: 1 }.encode(&mut hello);
        assert_eq!(hello, [0, 0, 0, 13, kind::HELLO, 1, 0, 0, 0, 1, 6, b's', b'e', b'c', b'r', b'e', b't']);
        let mut remove = Vec::new();
        Request::Remove { id: 4, aa: Aa(2), origin: None }.encode(&mut remove);
        assert_eq!(remove.len(), 4 + 13);
        let err = Request::decode(&[kind::HELLO, 1, 0, 0, 0, 1, 0, 1]).unwrap_err();
        assert!(err.to_string().contains("Hello.protocol: 1 must be 2 or more"), "{err}");
        for reply in [
            Reply::Stale { id: 5, age_ms: 3_200, answer: Resolution::Found { la: La(9), revision: 77 } },
            Reply::Stale { id: 6, age_ms: 1, answer: Resolution::NotFound },
            Reply::Stale { id: 7, age_ms: u64::MAX, answer: Resolution::Denied },
            Reply::StoreUnreachable { id: 8, age_ms: 2_500 },
        ] {
            let mut out = Vec::new();
            reply.encode(&mut out);
            assert_eq!(Reply::decode(&out[4..]).unwrap(), reply);
        }
    }

    #[test]
    fn a_truncated_update_names_the_missing_field() {
        let err = Request::decode(&[kind::UPDATE, 0, 0, 0, 0, 0, 0, 0, 1, 10, 0, 0]).unwrap_err();
        assert!(err.to_string().contains("Update.aa: frame ends early"), "{err}");
        let err = Request::decode(&[0x42]).unwrap_err();
        assert!(err.to_string().contains("unknown request kind 0x42"), "{err}");
    }
}
