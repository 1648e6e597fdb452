//! Packets and the pool they live in.
//!
//! A packet is a small plain struct addressed by a `u32` handle; handles are recycled through a
//! free list, so the steady state allocates nothing per packet (the pool only grows while the
//! number of packets alive grows).

/// Bytes a segment carries on the wire besides its payload, following the layering of a real frame.
pub mod wire {
    /// IPv4 header without options.
    pub const IP: u64 = 20;
    /// TCP header without options (SACK and timestamp options are modelled, not counted).
    pub const TCP: u64 = 20;
    /// Ethernet header (14) and FCS (4).
    pub const ETHERNET: u64 = 18;
    /// Preamble + start delimiter (8) and minimum inter-frame gap (12): time on the wire, no data.
    pub const PREAMBLE_AND_GAP: u64 = 20;
    /// Minimum Ethernet frame (header + payload + FCS).
    pub const MIN_FRAME: u64 = 64;
    /// VL2's agent adds two IP headers (to the Intermediate anycast LA, then to the ToR LA).
    pub const VL2_ENCAP_HEADER: u64 = IP;

    /// Wire bytes of a TCP segment carrying `payload` bytes with `encap` extra IP headers.
    #[inline]
    pub fn frame(payload: u64, encap: u64) -> u64 {
        let l3 = payload + IP + TCP + encap * VL2_ENCAP_HEADER;
        (l3 + ETHERNET).max(MIN_FRAME) + PREAMBLE_AND_GAP
    }
}

pub const FLAG_ACK: u8 = 1;
/// ECN-capable transport (set by DCTCP senders).
pub const FLAG_ECT: u8 = 2;
/// Congestion experienced (set by a switch whose queue exceeds its marking threshold).
pub const FLAG_CE: u8 = 4;
/// ECN echo (set by a DCTCP receiver on ACKs).
pub const FLAG_ECE: u8 = 8;
/// A retransmission (for the receiver's count of loss against reordering; not on the wire).
pub const FLAG_RETX: u8 = 16;

/// Up to three SACK blocks, as fit in a TCP option alongside timestamps (RFC 2018).
pub type SackBlocks = [(u32, u32); 3];

#[derive(Clone, Copy, Debug, Default)]
pub struct Packet {
    pub flow: u32,
    /// Source and destination hosts (the inner AA header).
    pub src: u32,
    pub dst: u32,
    /// Data: segment index. ACK: cumulative ACK (next segment expected).
    pub seg: u32,
    /// Payload bytes (0 for a pure ACK).
    pub payload: u32,
    pub flags: u8,
    /// Extra IP headers currently on the packet (VL2 encapsulation: 2, then 1 after the
    /// Intermediate, then 0 after the destination ToR).
    pub encap: u8,
    /// Switch hops so far, for loop protection: counted only where loops can happen (not in a
    /// plain run, `sim/shape.rs`, nor on a hop the look-ahead chose, which it does only on a
    /// fabric that never changes).
    pub hops: u8,
    /// CONGA: congestion-experienced metric, the max of the DREs along the path (CONGA §3.2).
    pub conga_ce: u8,
    /// The port the packet last left by (its ingress link at the node it arrives at).
    pub via: u32,
    /// Scheme-owned tag: Presto's path label (a mixed-radix path index consumed hop by hop),
    /// CONGA's LBTag (the source leaf's uplink index), random spraying's nonce (`lb/spray.rs`).
    pub lb_tag: u32,
    /// CONGA feedback piggybacked to the destination leaf: `(uplink index + 1, metric)`; 0 = none.
    pub conga_fb: (u8, u8),
    /// The epoch of the link it was put on (see `Ports::fail`): a packet whose link failed
    /// while it was queued or on the wire is lost. Only kept when the scenario has failures.
    pub epoch: u16,
    /// Controller mode (`control/`): the routing version a two-phase update's ingress switch
    /// stamped the packet with, and the versions its hops' rules agree with (`lo`, and
    /// `255 - hi`; zeros: every version). In the struct's padding: the packet stays 80 bytes.
    pub version: u8,
    pub versions_lo: u8,
    pub versions_hi_inv: u8,
    /// Hash of the flow's 5-tuple in this direction: ECMP's key, and VL2's outer source address.
    pub entropy: u64,
    /// Send time of the data segment (data) or the echoed one (ACK): RFC 7323 timestamps.
    pub ts: u64,
    /// SACK blocks on ACKs; `(0, 0)` is unused.
    pub sack: SackBlocks,
}

impl Packet {
    #[inline]
    pub fn wire_bytes(&self) -> u64 {
        wire::frame(self.payload as u64, self.encap as u64)
    }
    #[inline]
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

#[derive(Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    free: Vec<u32>,
}

impl PacketPool {
    /// A pool with room for `n` packets before it grows, backed by huge pages where it is large
    /// (`huge_pages`): on big fabrics most packet touches are TLB misses otherwise.
    pub fn with_capacity(n: usize) -> PacketPool {
        let pool = PacketPool { slots: Vec::with_capacity(n), free: Vec::new() };
        crate::huge_pages::advise(&pool.slots);
        pool
    }

    #[inline]
    pub fn alloc(&mut self, p: Packet) -> u32 {
        if let Some(h) = self.free.pop() {
            self.slots[h as usize] = p;
            h
        } else {
            self.grow_if_full();
            self.slots.push(p);
            (self.slots.len() - 1) as u32
        }
    }

    /// Grow a full pool here rather than in `push`, so that the new capacity is advised too.
    #[cold]
    fn grow_if_full(&mut self) {
        if self.slots.len() == self.slots.capacity() {
            self.slots.reserve(1);
            crate::huge_pages::advise(&self.slots);
        }
    }

    #[inline]
    pub fn free(&mut self, h: u32) {
        self.free.push(h);
    }

    #[inline]
    pub fn get(&self, h: u32) -> &Packet {
        &self.slots[h as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, h: u32) -> &mut Packet {
        &mut self.slots[h as usize]
    }

    /// Ask the CPU to start loading packet `h` into the cache, without waiting for it. On large
    /// fabrics the pool outgrows the caches (B2: ~115,000 packets alive, 9 MB) and the first touch
    /// of a packet at each hop was the single largest cost (35% of B2's samples in the Rust core,
    /// docs/performance.md); the event loop calls this for the packet eight events ahead
    /// (`sim::World::prefetch_ahead`). A hint only: it changes no result.
    #[inline]
    pub fn prefetch(&self, h: u32) {
        if let Some(p) = self.slots.get(h as usize) {
            crate::prefetch::lines(p);
        }
    }

    /// Packet `h` if it is allocated or was: for looking ahead, where a handle may be stale.
    #[inline]
    pub fn peek(&self, h: u32) -> Option<&Packet> {
        self.slots.get(h as usize)
    }

    /// Packets currently allocated.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_segment_and_ack_occupy_the_expected_wire_bytes() {
        // 1460 payload + 40 TCP/IP + 18 Ethernet + 20 preamble/gap = 1538 bytes of wire time.
        assert_eq!(wire::frame(1460, 0), 1538);
        // A bare ACK is padded to the 64-byte minimum frame: 84 bytes of wire time.
        assert_eq!(wire::frame(0, 0), 84);
        // VL2 encapsulation adds 20 bytes per outer header.
        assert_eq!(wire::frame(1460, 2), 1578);
    }

    /// The controller's version fields sit in what was padding: a packet is still 80 bytes.
    #[test]
    fn a_packet_is_80_bytes() {
        assert_eq!(std::mem::size_of::<Packet>(), 80);
    }

    #[test]
    fn pool_recycles_handles() {
        let mut pool = PacketPool::default();
        let a = pool.alloc(Packet::default());
        let _b = pool.alloc(Packet::default());
        pool.free(a);
        assert_eq!(pool.alloc(Packet::default()), a);
        assert_eq!(pool.live(), 2);
    }
}
