//! A fuzz target over the directory protocol's framing and message decoders (`src/wire/`),
//! run by `cargo test` for a bounded time (issue 39).
//!
//! Inputs are mutations of a committed corpus of valid frames, one or more of every message
//! kind (`tests/wire_corpus.txt`), and purely random bytes: bit flips, overwritten bytes,
//! truncations, insertions, splices of two frames, and length fields rewritten to anything up
//! to 4 GiB, fed to a [`FrameBuffer`] in random chunks. It asserts that
//!
//! - no input makes framing or decoding panic (a panic fails the case);
//! - no length field makes them allocate beyond a bound set by the bytes actually received
//!   (measured by a counting allocator on the decoding thread), so a hostile length cannot make
//!   a server reserve gigabytes;
//! - whatever decodes re-encodes to the same bytes (the encoding is canonical), and every valid
//!   message, drawn field by field, survives encoding and decoding.
//!
//! proptest, not cargo-fuzz: cargo-fuzz (libFuzzer) needs a nightly compiler and runs apart
//! from `cargo test`, while CI has stable Rust only; proptest runs on stable inside the test
//! suite, shrinks a failure to a minimal input, and records it in
//! `tests/wire_fuzz.proptest-regressions` (committed, replayed first on every run). Each
//! property runs `PROPTEST_CASES` cases (default 30,000: about a second in all in release).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeSet;

use clos_directory::address::{Aa, La};
use clos_directory::mapping::Mapping;
use clos_directory::origin::Origin;
use clos_directory::table::Resolution;
use clos_directory::wire::{FrameBuffer, Reply, Request, Role, WireError};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// Counts the bytes this thread has allocated and not freed, and their peak.
struct CountingAllocator;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn account(delta: isize) {
    // `try_with`: the thread's counters may be gone while it exits.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        account(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        account(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        account(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Runs `f` and returns its result with the most bytes it held allocated at once.
fn peak_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let result = f();
    let peak = PEAK.with(Cell::get) - base;
    (result, peak.max(0) as usize)
}

/// The committed corpus: (name, whole frame with its length prefix).
fn corpus() -> Vec<(String, Vec<u8>)> {
    let text = include_str!("wire_corpus.txt");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, hex) = l.split_once(' ').expect("each corpus line is: name hex");
            let hex = hex.trim();
            let bytes = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")).collect();
            (name.to_string(), bytes)
        })
        .collect()
}

/// Decodes a frame body as whichever side its kind byte belongs to (replies are 0x80 and up).
fn decode(body: &[u8]) -> Result<Vec<u8>, WireError> {
    let mut out = Vec::new();
    if body.first().is_some_and(|k| *k >= 0x80) {
        Reply::decode(body)?.encode(&mut out);
    } else {
        Request::decode(body)?.encode(&mut out);
    }
    Ok(out)
}

/// Every message kind the decoders know: a kind byte whose error is not "unknown ... kind".
fn known_kinds() -> BTreeSet<u8> {
    (0..=255u8)
        .filter(|&k| {
            let err = if k >= 0x80 { Reply::decode(&[k]).err() } else { Request::decode(&[k]).err() };
            err.is_none_or(|e| !e.to_string().contains("unknown"))
        })
        .collect()
}

#[test]
fn the_corpus_has_a_valid_frame_of_every_kind() {
    let mut seen = BTreeSet::new();
    for (name, frame) in corpus() {
        let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(len + 4, frame.len(), "{name}: the length prefix must match the body");
        let encoded = decode(&frame[4..]).unwrap_or_else(|e| panic!("{name}: a corpus frame must decode: {e}"));
        assert_eq!(encoded, frame, "{name}: must re-encode to itself");
        seen.insert(frame[4]);
    }
    let missing: Vec<String> = known_kinds().difference(&seen).map(|k| format!("{k:#04x}")).collect();
    assert!(missing.is_empty(), "message kinds with no frame in tests/wire_corpus.txt: {missing:?}; add one of each");
}

/// A way to damage a frame.
#[derive(Clone, Debug)]
enum Mutation {
    Flip {
        at: usize,
        bit: u8,
    },
    Set {
        at: usize,
        byte: u8,
    },
    Truncate {
        at: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    /// Rewrites the length prefix.
    Length(u32),
    /// Appends another corpus frame, whole or cut.
    Splice {
        other: usize,
        cut: usize,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Set { at, byte }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16)).prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        prop_oneof![Just(0u32), 1u32..300, Just(u32::MAX), Just(1 << 20), Just((1 << 20) + 1), any::<u32>()].prop_map(Mutation::Length),
        (any::<usize>(), any::<usize>()).prop_map(|(other, cut)| Mutation::Splice { other, cut }),
    ]
}

fn apply(frame: &mut Vec<u8>, m: &Mutation, corpus: &[(String, Vec<u8>)]) {
    let n = frame.len().max(1);
    match m {
        Mutation::Flip { at, bit } => {
            if let Some(b) = frame.get_mut(at % n) {
                *b ^= 1 << bit;
            }
        }
        Mutation::Set { at, byte } => {
            if let Some(b) = frame.get_mut(at % n) {
                *b = *byte;
            }
        }
        Mutation::Truncate { at } => frame.truncate(at % n),
        Mutation::Insert { at, bytes } => {
            let at = at % (frame.len() + 1);
            frame.splice(at..at, bytes.iter().copied());
        }
        Mutation::Length(len) => {
            if frame.len() >= 4 {
                frame[..4].copy_from_slice(&len.to_be_bytes());
            }
        }
        Mutation::Splice { other, cut } => {
            let other = &corpus[other % corpus.len()].1;
            frame.extend_from_slice(&other[..cut % (other.len() + 1)]);
        }
    }
}

/// Feeds `bytes` to a frame buffer `chunk` bytes at a time, as reads off a socket would, and
/// decodes every frame, until the input ends or the framing refuses it (as a server closes
/// the session then). Returns the peak allocation.
fn feed(bytes: &[u8], chunk: usize, max_frame: usize) -> usize {
    let ((), peak) = peak_allocation(|| {
        let mut frames = FrameBuffer::new(max_frame);
        for piece in bytes.chunks(chunk.max(1)) {
            frames.spare(piece.len()).extend_from_slice(piece);
            loop {
                match frames.next_frame() {
                    Ok(Some(body)) => {
                        if let Ok(encoded) = decode(body) {
                            assert_eq!(&encoded[4..], body, "a decoded frame must re-encode to the same bytes");
                        }
                    }
                    Ok(None) => break,
                    Err(WireError::Oversized { len, max }) => {
                        assert!(len > max && max == max_frame);
                        return;
                    }
                    Err(WireError::Malformed(_)) => return,
                }
            }
        }
    });
    peak
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(30_000);
    ProptestConfig { cases, failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))), ..ProptestConfig::default() }
}

/// The most a decode may hold for `input` bytes: the frame buffer's initial 16 KiB, twice what
/// was received (a `Vec` at most doubles), and a few KiB of messages and error text.
fn allocation_bound(input: usize) -> usize {
    16 * 1024 + 2 * (input + 8 * 1024) + 4 * 1024
}

fn role() -> impl Strategy<Value = Role> {
    prop_oneof![Just(Role::Agent), Just(Role::Tor), Just(Role::Peer), Just(Role::Provisioner)]
}

/// Service names as `mapping::validate_service` accepts them.
fn service() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9_.-]{0,62}"
}

fn mapping() -> impl Strategy<Value = Mapping> {
    (any::<u32>(), service()).prop_map(|(la, service)| Mapping { la: La(la), service })
}

fn origin() -> impl Strategy<Value = Option<Origin>> {
    prop::option::of((any::<u64>(), any::<u64>()).prop_map(|(writer, seq)| Origin { writer, seq }))
}

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        (role(), any::<u32>(), prop::collection::vec(any::<u8>(), 0..=255), 1u8..=255).prop_map(|(role, aa, token, protocol)| Request::Hello {
            role,
            aa: Aa(aa),
            token,
            protocol
        }),
        (any::<u64>(), any::<u32>()).prop_map(|(id, t)| Request::Lookup { id, target: Aa(t) }),
        (any::<u64>(), any::<u32>(), mapping(), origin()).prop_map(|(id, aa, mapping, origin)| Request::Update { id, aa: Aa(aa), mapping, origin }),
        (any::<u64>(), any::<u32>(), origin()).prop_map(|(id, aa, origin)| Request::Remove { id, aa: Aa(aa), origin }),
        (any::<u64>(), any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(id, s, t, la)| Request::Report {
            id,
            sender: Aa(s),
            target: Aa(t),
            stale_la: La(la)
        }),
        (any::<u32>(), any::<i64>(), prop::option::of(mapping())).prop_map(|(aa, revision, mapping)| Request::PeerPush { aa: Aa(aa), revision, mapping }),
        (any::<u32>(), any::<u32>(), any::<u32>(), any::<i64>()).prop_map(|(s, t, la, revision)| Request::PeerCorrection {
            sender: Aa(s),
            target: Aa(t),
            la: La(la),
            revision
        }),
    ]
}

/// Any text up to 255 bytes (what a length byte can carry), multi-byte characters included.
fn text() -> impl Strategy<Value = String> {
    ".{0,80}".prop_map(|s: String| {
        let mut end = s.len().min(255);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s[..end].to_string()
    })
}

fn resolution() -> impl Strategy<Value = Resolution> {
    prop_oneof![
        (any::<u32>(), any::<i64>()).prop_map(|(la, revision)| Resolution::Found { la: La(la), revision }),
        Just(Resolution::NotFound),
        Just(Resolution::Denied),
    ]
}

fn reply() -> impl Strategy<Value = Reply> {
    prop_oneof![
        Just(Reply::Welcome),
        (any::<u64>(), any::<u32>(), any::<i64>()).prop_map(|(id, la, revision)| Reply::Found { id, la: La(la), revision }),
        any::<u64>().prop_map(|id| Reply::NotFound { id }),
        any::<u64>().prop_map(|id| Reply::Denied { id }),
        (any::<u64>(), text()).prop_map(|(id, reason)| Reply::Unavailable { id, reason }),
        (any::<u64>(), any::<i64>()).prop_map(|(id, revision)| Reply::Acked { id, revision }),
        (any::<u32>(), any::<u32>(), any::<i64>()).prop_map(|(t, la, revision)| Reply::Correction { target: Aa(t), la: La(la), revision }),
        text().prop_map(|message| Reply::Rejected { message }),
        (any::<u64>(), text()).prop_map(|(id, reason)| Reply::Refused { id, reason }),
        (any::<u64>(), any::<u64>(), resolution()).prop_map(|(id, age_ms, answer)| Reply::Stale { id, age_ms, answer }),
        (any::<u64>(), any::<u64>()).prop_map(|(id, age_ms)| Reply::StoreUnreachable { id, age_ms }),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Damaged corpus frames, in a stream of up to four, fed in random chunks to a buffer with
    /// a random frame limit: no panic, allocation bounded by the input.
    #[test]
    fn damaged_frames_never_panic_nor_allocate_from_their_length_field(
        picks in prop::collection::vec((any::<usize>(), prop::collection::vec(mutation(), 0..4)), 1..4),
        chunk in 1usize..64,
        max_frame in prop_oneof![Just(64usize), Just(1024), Just(1 << 20)],
    ) {
        let corpus = corpus();
        let mut input = Vec::new();
        for (pick, mutations) in &picks {
            let mut frame = corpus[pick % corpus.len()].1.clone();
            for m in mutations {
                apply(&mut frame, m, &corpus);
            }
            input.extend_from_slice(&frame);
        }
        let peak = feed(&input, chunk, max_frame);
        prop_assert!(peak <= allocation_bound(input.len()), "{peak} bytes allocated for {} bytes of input", input.len());
    }

    /// Random bytes, as frames or as bare bodies: no panic, allocation bounded by the input.
    #[test]
    fn random_bytes_never_panic_nor_allocate_from_a_length_field(bytes in prop::collection::vec(any::<u8>(), 0..600), chunk in 1usize..700) {
        let peak = feed(&bytes, chunk, 1 << 20);
        prop_assert!(peak <= allocation_bound(bytes.len()));
        let (_, peak) = peak_allocation(|| decode(&bytes));
        prop_assert!(peak <= allocation_bound(bytes.len()));
    }

    /// Every valid request and reply survives encoding, framing and decoding.
    #[test]
    fn valid_messages_round_trip(request in request(), reply in reply(), chunk in 1usize..64) {
        let mut wire = Vec::new();
        request.encode(&mut wire);
        reply.encode(&mut wire);
        let mut frames = FrameBuffer::new(1024);
        let mut bodies = Vec::new();
        for piece in wire.chunks(chunk) {
            frames.spare(piece.len()).extend_from_slice(piece);
            while let Some(body) = frames.next_frame().expect("valid frames") {
                bodies.push(body.to_vec());
            }
        }
        prop_assert_eq!(bodies.len(), 2);
        prop_assert_eq!(Request::decode(&bodies[0]).expect("a valid request decodes"), request);
        prop_assert_eq!(Reply::decode(&bodies[1]).expect("a valid reply decodes"), reply);
    }
}

proptest! {
    #![proptest_config(config())]

    /// A reason or message longer than its length byte carries (255 bytes) is cut on a
    /// character boundary, so the client can still decode it.
    #[test]
    fn long_text_is_cut_on_a_character_boundary(message in ".{0,200}") {
        let mut wire = Vec::new();
        Reply::Rejected { message: message.clone() }.encode(&mut wire);
        match Reply::decode(&wire[4..]) {
            Ok(Reply::Rejected { message: sent }) => {
                prop_assert!(message.starts_with(&sent) && sent.len() <= 255);
                prop_assert!(sent.len() == message.len() || sent.len() > 255 - 4, "cut to {} bytes of {}", sent.len(), message.len());
            }
            other => prop_assert!(false, "a long message must still decode, got {:?}", other),
        }
    }
}

/// The worst case the allocation property guards: a header claiming 4 GiB, under every limit.
#[test]
fn a_4_gib_length_field_allocates_nothing_like_it() {
    for max_frame in [64, 1024, 1 << 20] {
        let peak = feed(&[0xff, 0xff, 0xff, 0xff, 0x02, 0x00], 6, max_frame);
        eprintln!("a 6-byte input claiming 4 GiB, max_frame {max_frame}: {peak} bytes allocated");
        assert!(peak <= 64 * 1024, "{peak} bytes allocated for a 6-byte input claiming 4 GiB");
    }
}
