//! Demand that varies in time (Pisces §4.3, "Dynamic Workloads", Figure 5a; seed 004 lines
//! 8237-8254): a tenant's demand on the storage service as a function of time, beside the
//! constant demand of `service.demand`. The seed describes its tenants only as "bursty",
//! "diurnal" and "constant" and shows the result as a picture, so the shapes are ours:
//!
//! - **Bursty** (`profile = "bursty"`): on/off. The tenant's demand is its peak (the demand's
//!   `concurrency` or `rate`) inside each of the `peaks` intervals `[from, to)`, and `low`
//!   outside them: a square pulse per burst.
//! - **Diurnal** (`profile = "diurnal"`): a raised cosine over each interval, one "day"
//!   compressed into `[from, to)`: `low + (peak - low) (1 - cos(2 pi (t - from) / (to - from))) / 2`,
//!   which rises from `low` at `from` to the peak at the interval's middle and falls back to
//!   `low` at `to`; `low` outside. A raised cosine rather than a piecewise-linear ramp: a
//!   sinusoid is the usual model of daily load, it has no corners (demand turns smoothly at
//!   the trough and the crest, as Figure 5a's curves do), and it needs no breakpoints beyond
//!   the interval.
//!
//! What the level means depends on the demand: for a closed-loop tenant it is the number of
//! requests kept outstanding (rounded to the nearest whole number; a tenant above its level
//! issues nothing until completions bring it below), for an open-loop tenant the Poisson rate
//! (a non-homogeneous Poisson process, drawn by thinning at the peak rate).

use crate::error::{bad, Result};
use crate::units::{Duration, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a tenant's demand varies in time (`service.demand[i].profile`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProfileKind {
    /// The same demand all the run.
    #[default]
    Constant,
    /// The peak inside each of `peaks`, `low` outside.
    Bursty,
    /// A raised-cosine hump over each of `peaks` (one day each), `low` outside.
    Diurnal,
}

/// A tenant's demand in time: its level at any time.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub kind: ProfileKind,
    pub peak: f64,
    pub low: f64,
    /// `[from, to)` in picoseconds, increasing and disjoint.
    pub peaks: Vec<(Time, Time)>,
}

impl Profile {
    /// The demand's level at `now` (module doc).
    pub fn level(&self, now: Time) -> f64 {
        let Some(&(from, to)) = self.peaks.iter().find(|&&(from, to)| from <= now && now < to) else {
            return self.low;
        };
        match self.kind {
            ProfileKind::Constant => self.peak,
            ProfileKind::Bursty => self.peak,
            ProfileKind::Diurnal => {
                let phase = (now - from) as f64 / (to - from) as f64;
                self.low + (self.peak - self.low) * (1.0 - (2.0 * std::f64::consts::PI * phase).cos()) / 2.0
            }
        }
    }
}

/// Check a demand's profile fields (`field` is `service.demand[i]`): `peaks` and `low` only
/// with a profile, which needs at least one interval; intervals increasing and disjoint;
/// `low` at most the peak (and whole for a closed loop).
pub fn validate(field: &str, kind: ProfileKind, peaks: &[(Duration, Duration)], low: Option<f64>, peak: f64, closed: bool) -> Result<()> {
    if kind == ProfileKind::Constant {
        if !peaks.is_empty() {
            return Err(bad(format!("{field}.peaks"), "is only for a varying demand: add profile = \"bursty\" or \"diurnal\", or remove it"));
        }
        if low.is_some() {
            return Err(bad(format!("{field}.low"), "is only for a varying demand: add profile = \"bursty\" or \"diurnal\", or remove it"));
        }
        return Ok(());
    }
    if peaks.is_empty() {
        return Err(bad(format!("{field}.peaks"), "a bursty or diurnal demand needs its peak intervals, e.g. peaks = [[\"10s\", \"30s\"]] (from, to)"));
    }
    let mut last = 0;
    for (i, &(from, to)) in peaks.iter().enumerate() {
        if to.0 <= from.0 {
            return Err(bad(format!("{field}.peaks[{i}]"), format!("ends ({to}) at or before it starts ({from}); give [from, to] with from < to")));
        }
        if i > 0 && from.0 < last {
            return Err(bad(format!("{field}.peaks[{i}]"), "overlaps or precedes the interval before it; list intervals in time order, disjoint"));
        }
        last = to.0;
    }
    if let Some(low) = low {
        if !(low.is_finite() && low >= 0.0 && low <= peak) {
            return Err(bad(format!("{field}.low"), format!("{low} is not a demand between 0 and the peak ({peak})")));
        }
        if closed && low.fract() != 0.0 {
            return Err(bad(format!("{field}.low"), format!("{low} is not a whole number of outstanding requests (the demand is a concurrency)")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::PS_PER_S;

    fn s(x: f64) -> Time {
        (x * PS_PER_S as f64) as Time
    }

    /// A burst is its peak inside and `low` outside, the interval's end excluded; a day is a
    /// raised cosine: low at its ends, the peak at its middle, halfway at a quarter (cos of
    /// pi / 2 is 0) and three quarters.
    #[test]
    fn bursty_is_square_and_diurnal_a_raised_cosine() {
        let bursty = Profile { kind: ProfileKind::Bursty, peak: 32.0, low: 2.0, peaks: vec![(s(10.0), s(20.0)), (s(30.0), s(40.0))] };
        let at = |p: &Profile, x: f64| p.level(s(x));
        assert_eq!([at(&bursty, 0.0), at(&bursty, 10.0), at(&bursty, 19.99), at(&bursty, 20.0), at(&bursty, 35.0)], [2.0, 32.0, 32.0, 2.0, 32.0]);
        let day = Profile { kind: ProfileKind::Diurnal, peak: 10.0, low: 2.0, peaks: vec![(s(0.0), s(40.0))] };
        assert!((at(&day, 0.0) - 2.0).abs() < 1e-12);
        assert!((at(&day, 10.0) - 6.0).abs() < 1e-9);
        assert!((at(&day, 20.0) - 10.0).abs() < 1e-12);
        assert!((at(&day, 30.0) - 6.0).abs() < 1e-9);
        assert_eq!(at(&day, 40.0), 2.0);
        // Rising on the way up, falling on the way down.
        assert!(at(&day, 5.0) < at(&day, 15.0) && at(&day, 25.0) > at(&day, 35.0));
    }

    #[test]
    fn bad_profiles_name_the_field() {
        let d = |a: u64, b: u64| (Duration(a * PS_PER_S), Duration(b * PS_PER_S));
        let field = |r: Result<()>| match r {
            Err(crate::Error::Scenario { field, .. }) => field,
            other => panic!("expected an error, got {other:?}"),
        };
        let f = "service.demand[0]";
        assert_eq!(field(validate(f, ProfileKind::Constant, &[d(1, 2)], None, 8.0, true)), "service.demand[0].peaks");
        assert_eq!(field(validate(f, ProfileKind::Constant, &[], Some(1.0), 8.0, true)), "service.demand[0].low");
        assert_eq!(field(validate(f, ProfileKind::Bursty, &[], None, 8.0, true)), "service.demand[0].peaks");
        assert_eq!(field(validate(f, ProfileKind::Bursty, &[d(2, 2)], None, 8.0, true)), "service.demand[0].peaks[0]");
        assert_eq!(field(validate(f, ProfileKind::Diurnal, &[d(1, 5), d(4, 6)], None, 8.0, true)), "service.demand[0].peaks[1]");
        assert_eq!(field(validate(f, ProfileKind::Diurnal, &[d(1, 5)], Some(9.0), 8.0, true)), "service.demand[0].low");
        assert_eq!(field(validate(f, ProfileKind::Diurnal, &[d(1, 5)], Some(1.5), 8.0, true)), "service.demand[0].low");
        assert!(validate(f, ProfileKind::Diurnal, &[d(1, 5)], Some(1.5), 8.0, false).is_ok());
        assert!(validate(f, ProfileKind::Constant, &[], None, 8.0, true).is_ok());
    }
}
