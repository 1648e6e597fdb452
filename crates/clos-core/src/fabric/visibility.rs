//! The bytes still entering a queue, which a forwarding engine does not see yet (DRILL §3.2.1:
//! "the queue length does not include the packets that are just entering the queue until after
//! they are being fully enqueued"). Kept per port only where the load balancer reads queue
//! lengths (`Ports::model_entering`), so the other schemes pay nothing for it.

use crate::units::Time;
use std::collections::VecDeque;

/// How long a packet stays out of the queue length a forwarding engine reads after it was
/// enqueued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visibility {
    /// A fixed time after its enqueue, the same for every packet (a pipeline delay).
    After(Time),
    /// Its own serialisation time at the port's rate: as long as writing it at line rate takes.
    Serialisation,
}

impl Visibility {
    /// How long a packet that takes `tx` to serialise stays invisible.
    #[inline]
    pub fn window(self, tx: Time) -> Time {
        match self {
            Visibility::After(t) => t,
            Visibility::Serialisation => tx,
        }
    }
}

/// The packets still entering one queue, each with the time it becomes visible and its bytes, in
/// the order they were enqueued; see `Ports::visible_backlog`. Entries leave once visible, so a
/// queue holds only the packets of the last visibility window.
#[derive(Clone, Debug, Default)]
pub struct Entering(VecDeque<(Time, u64)>);

impl Entering {
    /// A packet of `bytes` enters at `now`, invisible for `window`. Packets that have become
    /// visible leave from the front first. Under `Serialisation` a short packet may become
    /// visible before a long one ahead of it; it then leaves with that one, and
    /// `invisible_bytes` skips it in the meantime.
    #[inline]
    pub fn enter(&mut self, now: Time, window: Time, bytes: u64) {
        while self.0.front().is_some_and(|&(visible, _)| visible <= now) {
            self.0.pop_front();
        }
        self.0.push_back((now + window, bytes));
    }

    /// Bytes not yet visible at `now`.
    #[inline]
    pub fn invisible_bytes(&self, now: Time) -> u64 {
        self.0.iter().filter(|&&(visible, _)| visible > now).map(|&(_, bytes)| bytes).sum()
    }

    /// Nothing is entering any more (the queue's backlog was dropped or restated).
    pub fn clear(&mut self) {
        self.0.clear();
    }
}
