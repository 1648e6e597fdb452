//! The fault campaign's history and the checks run on it (docs/directory.md, "Fault
//! campaign").
//!
//! Every AA is an independent register, so a history is checked key by key (P-compositionality:
//! a history is linearizable if and only if each key's subhistory is; Herlihy and Wing 1990).
//! Each key's subhistory is searched with the Wing-Gong algorithm and Lowe's memoisation of
//! (linearised set, state) pairs (Lowe, "Testing for linearizability", 2017), the algorithm
//! Knossos and Porcupine implement. Two refinements specific to a register:
//!
//! - a read whose value equals the current state is linearised at once, without branching: it
//!   changes no state, and taking it out only relaxes the real-time constraints on the rest;
//! - an operation that timed out or failed (indeterminate) has no response: it may take effect
//!   at any point after its invocation, or never (it is simply never required to be linearised).
//!
//! A fresh (unmarked) lookup may miss an update committed up to `max_staleness` before it, by the
//! directory's documented contract, so it is checked as a read that may take effect anywhere from
//! `lag` before its invocation to its response; with `lag` zero the check is strict linearizability.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

/// Microseconds since the campaign started, on the clients' clock.
pub type Micros = u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Set the AA's LA (every update in a campaign writes a value no other update writes).
    Update(u32),
    Remove,
    Lookup,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// An update or removal acknowledged by a directory server.
    Acked,
    /// An update or removal that failed or timed out: it may or may not take effect.
    Indeterminate(String),
    /// A lookup answered: `la` `None` is `NotFound`; `stale` the age a `Stale` answer stated.
    Answered { la: Option<u32>, stale: Option<Duration> },
    /// A lookup not answered (every server failed or timed out); it tells nothing.
    Unanswered(String),
}

/// One operation: who issued it, on which AA, when it was invoked and completed, and how.
#[derive(Clone, Debug)]
pub struct Record {
    pub client: usize,
    pub key: u32,
    pub op: Op,
    pub invoke: Micros,
    pub complete: Micros,
    pub outcome: Outcome,
}

/// One register operation as the search sees it.
#[derive(Clone, Copy, Debug)]
struct RegisterOp {
    write: bool,
    value: Option<u32>,
    start: Micros,
    /// `None`: indeterminate, may take effect any time after `start`, or never.
    end: Option<Micros>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Linearizable,
    NotLinearizable,
    /// The search gave up after its step budget.
    Unknown,
}

/// Wing-Gong search with memoisation over one key's operations, from an absent initial state.
fn search(mut ops: Vec<RegisterOp>, budget: usize) -> Verdict {
    ops.sort_by_key(|o| o.start);
    let n = ops.len();
    let words = n.div_ceil(64).max(1);
    let required = ops.iter().filter(|o| o.end.is_some()).count();
    let mut done = vec![0u64; words];
    let is_done = |done: &[u64], i: usize| done[i / 64] & (1 << (i % 64)) != 0;
    // The operations that may be linearised next in state `state`.
    let candidates = |done: &[u64], state: Option<u32>| -> Vec<usize> {
        let min_end = (0..n).filter(|&i| !is_done(done, i)).filter_map(|i| ops[i].end).min().unwrap_or(Micros::MAX);
        let open: Vec<usize> = (0..n).take_while(|&i| ops[i].start <= min_end).filter(|&i| !is_done(done, i)).collect();
        if let Some(&read) = open.iter().find(|&&i| !ops[i].write && ops[i].value == state) {
            return vec![read];
        }
        open.into_iter().filter(|&i| ops[i].write).collect()
    };
    struct Frame {
        candidates: Vec<usize>,
        next: usize,
        /// The operation this frame's state came from, and the state before it.
        chosen: Option<(usize, Option<u32>)>,
    }
    let mut state: Option<u32> = None;
    let mut linearised = 0;
    if required == 0 {
        return Verdict::Linearizable;
    }
    let mut seen: HashSet<(Vec<u64>, Option<u32>)> = HashSet::new();
    let mut stack = vec![Frame { candidates: candidates(&done, state), next: 0, chosen: None }];
    let mut steps = 0;
    while let Some(top) = stack.last_mut() {
        if top.next < top.candidates.len() {
            let c = top.candidates[top.next];
            top.next += 1;
            done[c / 64] |= 1 << (c % 64);
            let before = state;
            if ops[c].write {
                state = ops[c].value;
            }
            if !seen.insert((done.clone(), state)) {
                done[c / 64] &= !(1 << (c % 64));
                state = before;
                continue;
            }
            steps += 1;
            if steps > budget {
                return Verdict::Unknown;
            }
            if ops[c].end.is_some() {
                linearised += 1;
                if linearised == required {
                    return Verdict::Linearizable;
                }
            }
            stack.push(Frame { candidates: candidates(&done, state), next: 0, chosen: Some((c, before)) });
        } else {
            let frame = stack.pop().expect("the loop holds a frame");
            if let Some((c, before)) = frame.chosen {
                done[c / 64] &= !(1 << (c % 64));
                state = before;
                if ops[c].end.is_some() {
                    linearised -= 1;
                }
            }
        }
    }
    Verdict::NotLinearizable
}

fn write_of(r: &Record) -> Option<RegisterOp> {
    let value = match r.op {
        Op::Update(la) => Some(la),
        Op::Remove => None,
        Op::Lookup => return None,
    };
    match r.outcome {
        Outcome::Acked => Some(RegisterOp { write: true, value, start: r.invoke, end: Some(r.complete) }),
        Outcome::Indeterminate(_) => Some(RegisterOp { write: true, value, start: r.invoke, end: None }),
        _ => None,
    }
}

/// What the checks found, over a whole history.
#[derive(Clone, Debug, Default)]
pub struct Findings {
    pub keys: usize,
    /// Keys whose updates, removals and fresh lookups admit no linearisation (check a).
    pub not_linearizable: Vec<u32>,
    /// Keys the search gave up on.
    pub unknown: Vec<u32>,
    /// Stale answers whose value was current at no moment within their age + slack (check b).
    pub stale_beyond_bound: Vec<Record>,
    /// Keys whose final linearizable read of the store no linearisation of the acknowledged
    /// (and possibly applied) writes explains: a lost acknowledged update (check c).
    pub lost: Vec<u32>,
    pub fresh_lookups: usize,
    pub stale_lookups: usize,
}

/// Checks a history: (a) per key, acknowledged and indeterminate writes with the fresh lookups,
/// each fresh lookup allowed to take effect up to `lag` before its invocation; (b) each stale
/// answer against its stated age + `slack`; (c) per key, the writes with `finals`, the store's
/// final values read after the run (`None` absent), at time `final_at`.
pub fn check(history: &[Record], lag: Duration, slack: Duration, finals: &BTreeMap<u32, Option<u32>>, final_at: Micros, budget: usize) -> Findings {
    let mut by_key: BTreeMap<u32, Vec<&Record>> = BTreeMap::new();
    for r in history {
        by_key.entry(r.key).or_default().push(r);
    }
    for key in finals.keys() {
        by_key.entry(*key).or_default();
    }
    let lag = lag.as_micros() as Micros;
    let mut findings = Findings { keys: by_key.len(), ..Findings::default() };
    for (key, records) in &by_key {
        let mut writes: Vec<RegisterOp> = records.iter().filter_map(|r| write_of(r)).collect();
        prune_unobserved(&mut writes, records, finals.get(key));
        let mut ops = writes.clone();
        for r in records {
            if let (Op::Lookup, Outcome::Answered { la, stale }) = (r.op, &r.outcome) {
                match stale {
                    None => {
                        findings.fresh_lookups += 1;
                        ops.push(RegisterOp { write: false, value: *la, start: r.invoke.saturating_sub(lag), end: Some(r.complete) });
                    }
                    Some(age) => {
                        findings.stale_lookups += 1;
                        if !within_bound(&writes, *la, r.invoke.saturating_sub((*age + slack).as_micros() as Micros), r.complete) {
                            findings.stale_beyond_bound.push((*r).clone());
                        }
                    }
                }
            }
        }
        match search(ops, budget) {
            Verdict::Linearizable => {}
            Verdict::NotLinearizable => findings.not_linearizable.push(*key),
            Verdict::Unknown => findings.unknown.push(*key),
        }
        if let Some(value) = finals.get(key) {
            let mut ops = writes;
            ops.push(RegisterOp { write: false, value: *value, start: final_at, end: Some(final_at) });
            if search(ops, budget) != Verdict::Linearizable {
                findings.lost.push(*key);
            }
        }
    }
    findings
}

/// Drops indeterminate updates whose value no lookup and no final read observed, when every
/// update of the key wrote a value of its own. Such an update may always be taken as never
/// applied: had it taken effect, no read saw it, so the state it set was overwritten before any
/// read, and the history without it is explained by the same order. Fewer pending writes keep
/// the search small when a quorum loss leaves many updates indeterminate.
fn prune_unobserved(writes: &mut Vec<RegisterOp>, records: &[&Record], last: Option<&Option<u32>>) {
    let mut written = HashSet::new();
    if !writes.iter().filter_map(|w| w.value).all(|v| written.insert(v)) {
        return;
    }
    let observed: HashSet<u32> = records
        .iter()
        .filter_map(|r| match r.outcome {
            Outcome::Answered { la, .. } => la,
            _ => None,
        })
        .chain(last.copied().flatten())
        .collect();
    writes.retain(|w| w.end.is_some() || w.value.is_none_or(|v| observed.contains(&v)));
}

/// Whether `value` may have been the register's value at some moment in `[from, to]`: some
/// write of it (or the absent initial state) could have taken effect by `to`, at a point not
/// followed, before `from`, by a write that certainly took effect after it. A necessary
/// condition of any linearisation, so a `false` is a definite violation.
fn within_bound(writes: &[RegisterOp], value: Option<u32>, from: Micros, to: Micros) -> bool {
    let initial = RegisterOp { write: true, value: None, start: 0, end: Some(0) };
    let sources = writes.iter().chain(value.is_none().then_some(&initial)).filter(|w| w.value == value && w.start <= to);
    sources.into_iter().any(|w| {
        let latest = w.end.unwrap_or(Micros::MAX).min(to);
        latest >= from || !writes.iter().any(|o| o.end.is_some_and(|end| o.start > latest && end < from))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(key: u32, la: Option<u32>, invoke: Micros, complete: Micros, acked: bool) -> Record {
        let op = la.map_or(Op::Remove, Op::Update);
        let outcome = if acked { Outcome::Acked } else { Outcome::Indeterminate("timed out".into()) };
        Record { client: 0, key, op, invoke, complete, outcome }
    }

    fn lookup(key: u32, la: Option<u32>, invoke: Micros, complete: Micros, stale: Option<Duration>) -> Record {
        Record { client: 1, key, op: Op::Lookup, invoke, complete, outcome: Outcome::Answered { la, stale } }
    }

    fn run(history: &[Record], lag_ms: u64) -> Findings {
        check(history, Duration::from_millis(lag_ms), Duration::from_millis(100), &BTreeMap::new(), 0, 100_000)
    }

    #[test]
    fn the_checker_rejects_a_lookup_that_goes_back_to_an_overwritten_value() {
        // x = 1, then x = 2, both acknowledged; then a lookup sees 2, and a later one 1 again.
        let history = [
            write(7, Some(1), 0, 10_000, true),
            write(7, Some(2), 20_000, 30_000, true),
            lookup(7, Some(2), 40_000, 41_000, None),
            lookup(7, Some(1), 50_000, 51_000, None),
            // Another key, linearizable on its own, must not be blamed.
            write(8, Some(5), 0, 10_000, true),
            lookup(8, Some(5), 5_000, 12_000, None),
        ];
        let f = run(&history, 0);
        assert_eq!(f.not_linearizable, vec![7]);
        assert!(f.unknown.is_empty());
        // With 10 ms of lag the second lookup still begins after x = 2 was acknowledged.
        assert_eq!(run(&history, 10).not_linearizable, vec![7]);
    }

    #[test]
    fn the_checker_allows_a_lookup_within_its_lag_to_miss_a_new_update() {
        let history = [write(7, Some(1), 0, 10_000, true), write(7, Some(2), 20_000, 30_000, true), lookup(7, Some(1), 40_000, 41_000, None)];
        assert_eq!(run(&history, 0).not_linearizable, vec![7], "strictly, the lookup missed an acknowledged update");
        assert!(run(&history, 100).not_linearizable.is_empty(), "100 ms of lag reaches back before the update");
    }

    #[test]
    fn an_indeterminate_update_may_take_effect_late_or_never_but_only_once() {
        let base = [write(7, Some(1), 0, 10_000, true), write(7, Some(2), 20_000, 30_000, false)];
        let never = [&base[..], &[lookup(7, Some(1), 900_000, 901_000, None)]].concat();
        assert!(run(&never, 0).not_linearizable.is_empty());
        let late = [&base[..], &[lookup(7, Some(1), 900_000, 901_000, None), lookup(7, Some(2), 950_000, 951_000, None)]].concat();
        assert!(run(&late, 0).not_linearizable.is_empty());
        let flapping = [&late[..], &[lookup(7, Some(1), 990_000, 991_000, None)]].concat();
        assert_eq!(run(&flapping, 0).not_linearizable, vec![7]);
    }

    #[test]
    fn an_unobserved_indeterminate_update_is_dropped_but_an_observed_one_is_kept() {
        // 2 is indeterminate and never read: dropping it changes nothing. 3 is read once, after
        // which 1 is read again, which no order explains.
        let history = [
            write(7, Some(1), 0, 10_000, true),
            write(7, Some(2), 20_000, 30_000, false),
            write(7, Some(3), 40_000, 50_000, false),
            lookup(7, Some(1), 60_000, 61_000, None),
            lookup(7, Some(3), 70_000, 71_000, None),
        ];
        assert!(run(&history, 0).not_linearizable.is_empty());
        let back = [&history[..], &[lookup(7, Some(1), 80_000, 81_000, None)]].concat();
        assert_eq!(run(&back, 0).not_linearizable, vec![7]);
    }

    #[test]
    fn the_checker_rejects_a_stale_answer_older_than_its_stated_age() {
        // x = 1 was overwritten by 30 ms; an answer at 5 s says it is 1 s old, so it may miss
        // only updates after 4 s (- 100 ms of slack): 1 was not current then.
        let writes = [write(7, Some(1), 0, 10_000, true), write(7, Some(2), 20_000, 30_000, true)];
        let beyond = [&writes[..], &[lookup(7, Some(1), 5_000_000, 5_001_000, Some(Duration::from_secs(1)))]].concat();
        assert_eq!(run(&beyond, 0).stale_beyond_bound.len(), 1);
        let within = [&writes[..], &[lookup(7, Some(1), 5_000_000, 5_001_000, Some(Duration::from_secs(5)))]].concat();
        assert!(run(&within, 0).stale_beyond_bound.is_empty());
        // A removed AA answered as absent, and a never-written one, are within any bound.
        let removed = [&writes[..], &[write(7, None, 40_000, 50_000, true), lookup(7, None, 5_000_000, 5_001_000, Some(Duration::from_secs(1)))]].concat();
        assert!(run(&removed, 0).stale_beyond_bound.is_empty());
        // An absent answer after the AA was set long ago is beyond the bound.
        let absent = [&writes[..], &[lookup(7, None, 5_000_000, 5_001_000, Some(Duration::from_secs(1)))]].concat();
        assert_eq!(run(&absent, 0).stale_beyond_bound.len(), 1);
    }

    #[test]
    fn the_checker_finds_a_lost_acknowledged_update_in_the_final_read() {
        let history = [write(7, Some(1), 0, 10_000, true), write(7, Some(2), 20_000, 30_000, true), write(7, Some(3), 40_000, 50_000, false)];
        let check_final = |value| check(&history, Duration::ZERO, Duration::ZERO, &BTreeMap::from([(7, value)]), 1_000_000, 100_000).lost;
        assert!(check_final(Some(2)).is_empty());
        assert!(check_final(Some(3)).is_empty(), "the indeterminate update may have landed");
        assert_eq!(check_final(Some(1)), vec![7], "the acknowledged 2 was lost");
        assert_eq!(check_final(None), vec![7], "nothing removed it");
    }
}
