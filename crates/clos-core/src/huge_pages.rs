//! Transparent huge pages for the large arrays the event loop reaches into at random.
//!
//! On large fabrics the packet pool alone outgrows what 4 KB pages let the TLB map (B2: ~110,000
//! packets alive, 9 MB, 2,200 pages), so a packet's first touch at each hop also walks the page
//! tables, and on a virtual machine that walk is itself a chain of memory reads. Backing the
//! array with 2 MB pages removes most of those walks. Linux gives an anonymous mapping huge pages
//! where `madvise(MADV_HUGEPAGE)` asks for them (the default setting of
//! `/sys/kernel/mm/transparent_hugepage/enabled` on common distributions); pages already touched
//! keep their size (until the kernel's background collapse, if ever), so arrays are advised as
//! soon as they are allocated or moved. Measured in docs/performance.md ("Design decisions":
//! huge pages, and the calendar's arena).
//!
//! Only a hint: where the kernel says no, or on other systems, nothing changes but speed.

/// The huge page size on x86-64 and most arm64 kernels.
const HUGE: usize = 2 << 20;

/// Ask for huge pages under `v`'s whole capacity (the 2 MB-aligned ranges inside it; a buffer
/// smaller than two huge pages is left alone, as its rounding would cover little of it).
pub fn advise<T>(v: &Vec<T>) {
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes < 2 * HUGE {
        return;
    }
    let start = v.as_ptr() as usize;
    let first = start.next_multiple_of(HUGE);
    let end = (start + bytes) / HUGE * HUGE;
    #[cfg(target_os = "linux")]
    if end > first {
        // SAFETY: the range lies inside `v`'s allocation, which stays alive across the call;
        // MADV_HUGEPAGE changes how future page faults are served, never the memory's contents.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (first, end);
}
