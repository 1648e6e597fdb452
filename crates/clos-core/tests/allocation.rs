//! The event loop allocates nothing in steady state (issue 6): pools, queues and recorders reach
//! their working size during warm-up, after which a million events run without one allocation.
//! A counting global allocator (this test binary only) observes every allocation.

use clos_core::scenario::Scenario;
use clos_core::sim::World;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const MS: u64 = 1_000_000_000;

/// B1 of `clos bench` (python/clos/data/bench/b1-fat-tree-k8.toml): a k=8 fat tree carrying a
/// cross-pod permutation of long DCTCP flows under `scheme`.
fn b1(scheme: &str) -> Scenario {
    b1_with(scheme, serde_json::json!(null))
}

/// B1 with `directory` as its `[directory]` table (null: none).
fn b1_with(scheme: &str, directory: serde_json::Value) -> Scenario {
    let mut json = serde_json::json!({
        "seed": 1, "stop": "20ms",
        "topology": {"kind": "fat_tree", "k": 8, "host_rate": "10Gbps", "fabric_rate": "10Gbps"},
        "switch": {"buffer": "300KB", "ecn_threshold": "97.5KB"},
        "routing": {"scheme": scheme},
        "transport": {"kind": "dctcp", "mss": 1460},
        "workload": {"kind": "permutation", "bytes": "1GB", "cross_pod": true},
        "output": {"queue_interval": "10us"},
    });
    if !directory.is_null() {
        json["directory"] = directory;
    }
    Scenario::from_json(&json.to_string()).unwrap()
}

fn steady_state_allocations(s: &Scenario, warm_up_ms: u64, window_ms: u64) -> (u64, u64) {
    let mut w = World::new(s).unwrap();
    w.run_until(warm_up_ms * MS);
    let (allocs, events) = (ALLOCATIONS.load(Ordering::Relaxed), w.events);
    w.run_until((warm_up_ms + window_ms) * MS);
    (ALLOCATIONS.load(Ordering::Relaxed) - allocs, w.events - events)
}

#[test]
fn a_million_events_after_warm_up_allocate_nothing() {
    // Warm up 10 ms, then ~2 ms is ~1.1 M events. Queue sampling is on: recorders count too.
    for scheme in ["ecmp", "spray-random"] {
        let (allocs, events) = steady_state_allocations(&b1(scheme), 10, 2);
        assert!(events >= 1_000_000, "{scheme}: {events} events");
        assert_eq!(allocs, 0, "{scheme}: {allocs} allocations in {events} events");
    }
    // The VL2 directory model: once every flow's lookups are answered, agents map packets by index
    // and allocate nothing either. Lookups take no time here, so that the traffic is as above and
    // has reached its working set by 10 ms (with measured lookups, flows start ~0.4 ms later and
    // a few SACK scoreboards are still growing then). One test function: the counter is global.
    let instant = serde_json::json!({"lookup_latency": "0s"});
    let (allocs, events) = steady_state_allocations(&b1_with("ecmp", instant), 10, 2);
    assert!(events >= 1_000_000, "directory: {events} events");
    assert_eq!(allocs, 0, "directory: {allocs} allocations in {events} events");
}
