//! The wheel's buckets, stored as chains of fixed-size chunks in one arena.
//!
//! Each bucket was its own vector, grown to the largest bucket seen so that recycling them never
//! allocated. As the vectors took turns, every one of them ended up touched to that size: on B2
//! (512 buckets) the run's peak resident memory was 41 MB, against 23 MB with this storage, for
//! ~3.5 MB of events pending, and the tails being written lay on hundreds of different pages.
//!
//! Here a bucket is a chain of 1 KB chunks taken from, and given back to, one arena: its memory
//! follows the events pending, and it is one mapping that can be backed by huge pages
//! (`huge_pages`). Chunks are recycled through a free list, so once the arena has grown to the
//! most events ever pending nothing is allocated.
//!
//! Every chain always ends in a chunk with room (an emptied bucket keeps its last chunk), so a
//! push writes first and adds a chunk after, when it filled one: the call is then the push's
//! last act, and the hot path holds nothing across it (B2: 14 instructions per event fewer,
//! saving and restoring registers, than taking a chunk before the write).

use super::Entry;

/// Entries per chunk: 1 KB of 16-byte entries (2 KB chunks measured no faster). A bucket
/// wastes at most one partly filled chunk, and a chunk holds enough for the copy out of it to
/// run at memory speed.
const CHUNK: usize = 64;

/// A bucket's chain: its first and last chunk, and how many entries it holds.
#[derive(Clone, Copy)]
struct Chain {
    first: u32,
    last: u32,
    len: u32,
}

pub(super) struct Buckets {
    chains: Vec<Chain>,
    arena: Vec<[Entry; CHUNK]>,
    /// `next[c]`: the chunk after chunk `c` in its chain.
    next: Vec<u32>,
    /// Chunks not in any chain.
    free: Vec<u32>,
}

impl Buckets {
    /// `buckets` empty chains, each with its one chunk.
    pub(super) fn new(buckets: usize) -> Buckets {
        let arena = vec![[super::PLACEHOLDER; CHUNK]; buckets];
        crate::huge_pages::advise(&arena);
        Buckets { chains: (0..buckets as u32).map(|c| Chain { first: c, last: c, len: 0 }).collect(), arena, next: vec![u32::MAX; buckets], free: Vec::new() }
    }

    /// Entries in bucket `slot`.
    #[inline]
    pub(super) fn len(&self, slot: usize) -> usize {
        self.chains[slot].len as usize
    }

    #[inline]
    pub(super) fn push(&mut self, slot: usize, e: Entry) {
        let chain = &mut self.chains[slot];
        let fill = chain.len as usize % CHUNK;
        let at = &mut self.arena[chain.last as usize][fill];
        *at = e;
        // The bucket's next push, tens of microseconds from now, writes the next line: ask for
        // it now (past the chunk's end it is a hint about the next chunk, harmless). A write
        // to a line not in the cache had stalled the loop once the store buffer filled: 10%
        // of B2's samples sat on this write before, 8% after (docs/performance.md).
        crate::prefetch::line_for_write_at(at, 64);
        chain.len += 1;
        if fill == CHUNK - 1 {
            self.add_chunk(slot);
        }
    }

    /// Start a new chunk at the end of `slot`'s chain, whose last one just filled: once in
    /// `CHUNK` pushes, so out of line, to keep `push` small.
    #[inline(never)]
    fn add_chunk(&mut self, slot: usize) {
        let c = match self.free.pop() {
            Some(c) => c,
            None => self.grow(),
        };
        let chain = &mut self.chains[slot];
        self.next[chain.last as usize] = c;
        chain.last = c;
    }

    /// A new chunk at the end of the arena, which asks for huge pages whenever it moves.
    #[cold]
    fn grow(&mut self) -> u32 {
        let c = self.arena.len() as u32;
        let capacity = self.arena.capacity();
        self.arena.push([super::PLACEHOLDER; CHUNK]);
        self.next.push(u32::MAX);
        if self.arena.capacity() != capacity {
            crate::huge_pages::advise(&self.arena);
        }
        c
    }

    /// Append bucket `slot`'s entries to `out`, in the order they were pushed, and empty it;
    /// it keeps its last chunk, which has room.
    pub(super) fn drain_into(&mut self, slot: usize, out: &mut Vec<Entry>) {
        let Chain { first, last, len } = self.chains[slot];
        let (mut c, mut left) = (first, len as usize);
        out.reserve(left);
        loop {
            let n = left.min(CHUNK);
            out.extend_from_slice(&self.arena[c as usize][..n]);
            left -= n;
            if c == last {
                break;
            }
            self.free.push(c);
            c = self.next[c as usize];
        }
        self.chains[slot] = Chain { first: last, last, len: 0 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: u64) -> Entry {
        Entry { key: i, event: super::super::Packed(i) }
    }

    /// Buckets keep their entries apart and in order across chunk boundaries, and drained
    /// chunks are reused rather than the arena growing.
    #[test]
    fn buckets_keep_order_and_reuse_chunks() {
        let mut b = Buckets::new(4);
        for i in 0..1000u64 {
            b.push((i % 3) as usize, entry(i));
        }
        assert_eq!([b.len(0), b.len(1), b.len(2), b.len(3)], [334, 333, 333, 0]);
        let chunks = b.arena.len();
        let mut out = Vec::new();
        b.drain_into(1, &mut out);
        assert_eq!(out.iter().map(|e| e.key).collect::<Vec<_>>(), (0..1000).filter(|i| i % 3 == 1).collect::<Vec<_>>());
        assert_eq!(b.len(1), 0);
        for i in 0..333u64 {
            b.push(3, entry(i));
        }
        assert_eq!(b.arena.len(), chunks, "the drained bucket's chunks were reused");
        out.clear();
        b.drain_into(3, &mut out);
        assert_eq!(out.len(), 333);
        assert!(out.iter().enumerate().all(|(i, e)| e.key == i as u64));
    }
}
