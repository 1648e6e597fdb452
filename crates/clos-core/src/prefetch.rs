//! Software prefetch: ask the CPU to start loading a line it will need a few events from now.
//!
//! On large fabrics the state an event reaches for (its packet, the route row, the output port's
//! queue line) is spread over more memory than the caches hold, and each reach is a chain of
//! dependent loads. The event loop knows the next few events (the sorted bucket being run), so it
//! walks that chain ahead of time, one step per event, each step reading only what the step
//! before prefetched (`sim::World::prefetch_ahead`, docs/performance.md). A hint only: it never
//! faults and changes no result.

/// Start loading the cache line holding `r`.
#[inline]
pub fn line<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetching is a hint that never faults and reads nothing into the program.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(r as *const T as *const i8) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// Start loading every line of `r` (a value that may straddle two).
#[inline]
pub fn lines<T>(r: &T) {
    line(r);
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let last = (r as *const T as *const i8).wrapping_add(std::mem::size_of::<T>() - 1);
        // SAFETY: as above; the address lies inside `r`.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(last) }
    }
}

/// Start loading the line holding byte `offset` of `r` (which may lie past it) for writing.
#[inline]
pub fn line_for_write_at<T>(r: &T, offset: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
        let at = (r as *const T as *const i8).wrapping_add(offset);
        // SAFETY: prefetching is a hint that never faults, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_ET0>(at) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (r, offset);
}
