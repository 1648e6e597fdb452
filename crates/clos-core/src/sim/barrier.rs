//! The barrier the partitioned engine's threads meet at between windows (`parallel.rs`), and
//! whose round the window analysis measures (`windows.rs`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A sense-reversing spin barrier: the last thread to arrive resets the count and flips the
/// sense that the others wait on. It yields after a while, so that a machine with fewer free
/// cores than threads still makes progress.
pub struct SpinBarrier {
    threads: usize,
    arrived: AtomicUsize,
    sense: AtomicBool,
}

impl SpinBarrier {
    pub fn new(threads: usize) -> SpinBarrier {
        SpinBarrier { threads, arrived: AtomicUsize::new(0), sense: AtomicBool::new(false) }
    }

    pub fn wait(&self, local: &mut bool) {
        *local = !*local;
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            self.sense.store(*local, Ordering::Release);
        } else {
            let mut spins = 0u32;
            while self.sense.load(Ordering::Acquire) != *local {
                spins += 1;
                if spins < 2_000 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }
}
