//! Per-tenant goodput and FCT, and Pisces's fairness metric, the Min-Max Ratio (seed 004 §3,
//! Pisces §5, L8086-L8114: "MMR = x_min / x_max" of the dominant resource, here throughput).
//!
//! Pisces's goal is weighted max-min fairness: a tenant of weight w_t is owed a share in
//! proportion to w_t. Its MMR compares the tenants' throughput divided by their weights, so 1 is
//! exactly weighted-fair and 0 is a tenant starved. Pisces reports it over all tenants and
//! within each weight class (its 64 tenants of weights 100, 10 and 1: "> 0.91 MMR within each
//! class", L8207-L8215), and so does this module. MMR only means fairness when every tenant
//! wants more than its share (Pisces's tenants are all backlogged): a tenant that asks for less
//! lowers it without anyone being unfair to it.

use super::percentile;
use crate::units::{seconds, Time};
use serde_json::{json, Value};

/// The tenants of a run: names and weights (`[[tenants]]`), and each workload part's tenant.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tenancy {
    pub names: Vec<String>,
    pub weights: Vec<f64>,
    /// Indexed by `FlowSpec::service`; `None` for parts of no tenant (a run without tenants).
    pub of_service: Vec<Option<u32>>,
}

/// min / max of `x`; `None` when there is nothing to compare (empty, or every value 0).
pub fn mmr(x: &[f64]) -> Option<f64> {
    let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = x.iter().copied().fold(f64::INFINITY, f64::min);
    (max > 0.0).then(|| min / max)
}

/// The MMR of weight-normalised throughput: `mmr(throughput_t / weight_t)`.
pub fn weighted_mmr(throughput: &[f64], weights: &[f64]) -> Option<f64> {
    let normalised: Vec<f64> = throughput.iter().zip(weights).map(|(x, w)| x / w).collect();
    mmr(&normalised)
}

/// Per weight class (tenants of equal weight), in increasing weight: the weight, how many
/// tenants have it, and their MMR (plain throughput: equal weights need no normalising).
pub fn mmr_by_weight(throughput: &[f64], weights: &[f64]) -> Vec<(f64, usize, Option<f64>)> {
    let mut classes: Vec<f64> = weights.to_vec();
    classes.sort_by(f64::total_cmp);
    classes.dedup();
    classes
        .into_iter()
        .map(|w| {
            let x: Vec<f64> = throughput.iter().zip(weights).filter(|&(_, &v)| v == w).map(|(&x, _)| x).collect();
            (w, x.len(), mmr(&x))
        })
        .collect()
}

/// One flow as the tenant summary reads it.
pub struct FlowRecord {
    pub service: u32,
    pub start: Time,
    pub delivered: u64,
    /// When its last byte arrived; `None` if unfinished.
    pub end: Option<Time>,
}

/// The summary's `tenants` section: per tenant its flows, delivered bytes, goodput over its
/// active period (its first flow's start to its last completion, or to `now` if a flow is
/// unfinished, as a service's), weight-normalised goodput and FCTs; and the MMR over all
/// tenants and within each weight class. `Value::Null` without tenants.
pub fn summary(t: &Tenancy, flows: &[FlowRecord], now: Time) -> Value {
    if t.names.is_empty() {
        return Value::Null;
    }
    let n = t.names.len();
    let mut goodput = vec![0.0; n];
    let rows: Vec<Value> = (0..n)
        .map(|k| {
            let mine: Vec<&FlowRecord> = flows.iter().filter(|f| t.of_service.get(f.service as usize).copied().flatten() == Some(k as u32)).collect();
            let delivered: u64 = mine.iter().map(|f| f.delivered).sum();
            let start = mine.iter().map(|f| f.start).min();
            let end = if mine.iter().all(|f| f.end.is_some()) { mine.iter().filter_map(|f| f.end).max() } else { Some(now) };
            let span = start.zip(end).map(|(s, e)| e.saturating_sub(s)).filter(|&d| d > 0);
            let bps = span.map(|d| delivered as f64 * 8.0 / seconds(d));
            goodput[k] = bps.unwrap_or(0.0);
            let mut fcts: Vec<Time> = mine.iter().filter_map(|f| f.end.map(|e| e - f.start)).collect();
            fcts.sort_unstable();
            let services: Vec<u32> = (0..t.of_service.len() as u32).filter(|&s| t.of_service[s as usize] == Some(k as u32)).collect();
            json!({
                "name": t.names[k],
                "weight": t.weights[k],
                "services": services,
                "flows": mine.len(),
                "finished": fcts.len(),
                "delivered_bytes": delivered,
                "goodput_bps": bps,
                "normalised_bps": bps.map(|b| b / t.weights[k]),
                "fct_mean_s": (!fcts.is_empty()).then(|| fcts.iter().map(|&x| seconds(x)).sum::<f64>() / fcts.len() as f64),
                "fct_p50_s": percentile(&fcts, 50.0).map(seconds),
                "fct_p99_s": percentile(&fcts, 99.0).map(seconds),
            })
        })
        .collect();
    let total: f64 = goodput.iter().sum();
    let mut rows = rows;
    for (k, r) in rows.iter_mut().enumerate() {
        r["share"] = json!((total > 0.0).then(|| goodput[k] / total));
    }
    let classes: Vec<Value> = mmr_by_weight(&goodput, &t.weights).into_iter().map(|(w, count, m)| json!({"weight": w, "tenants": count, "mmr": m})).collect();
    json!({"tenants": rows, "mmr": weighted_mmr(&goodput, &t.weights), "mmr_by_weight": classes})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::PS_PER_S;

    /// By hand: tenants of weights 1, 1, 2, 2 get 10, 20, 30 and 60 (Gb/s). Normalised: 10, 20,
    /// 15, 30, so the MMR is 10 / 30 = 1/3; within weight 1, 10 / 20 = 0.5; within weight 2,
    /// 30 / 60 = 0.5. Weighted-fair throughput (10, 10, 20, 20) gives 1.
    #[test]
    fn mmr_by_hand() {
        let w = [1.0, 1.0, 2.0, 2.0];
        assert!((weighted_mmr(&[10.0, 20.0, 30.0, 60.0], &w).unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(mmr_by_weight(&[10.0, 20.0, 30.0, 60.0], &w), vec![(1.0, 2, Some(0.5)), (2.0, 2, Some(0.5))]);
        assert_eq!(weighted_mmr(&[10.0, 10.0, 20.0, 20.0], &w), Some(1.0));
        assert_eq!(mmr(&[0.0, 5.0]), Some(0.0));
        assert_eq!(mmr(&[0.0, 0.0]), None);
        assert_eq!(mmr(&[]), None);
    }

    /// Two tenants of weights 1 and 3 over one second: tenant 0 delivers 1 MB in one flow,
    /// tenant 1 3 MB in two (services 1 and 2 both belong to it), so both get 8 Mb/s per unit
    /// of weight: MMR 1, shares 1/4 and 3/4.
    #[test]
    fn the_summary_adds_a_tenants_services_and_normalises_by_weight() {
        let t = Tenancy { names: vec!["a".into(), "b".into()], weights: vec![1.0, 3.0], of_service: vec![Some(0), Some(1), Some(1)] };
        let s = PS_PER_S;
        let flows = [
            FlowRecord { service: 0, start: 0, delivered: 1_000_000, end: Some(s) },
            FlowRecord { service: 1, start: 0, delivered: 1_000_000, end: Some(s / 2) },
            FlowRecord { service: 2, start: 0, delivered: 2_000_000, end: Some(s) },
        ];
        let v = summary(&t, &flows, 2 * s);
        assert_eq!(v["tenants"][0]["goodput_bps"], 8e6);
        assert_eq!(v["tenants"][1]["goodput_bps"], 24e6);
        assert_eq!(v["tenants"][1]["normalised_bps"], 8e6);
        assert_eq!(v["tenants"][1]["services"], json!([1, 2]));
        assert_eq!(v["tenants"][0]["share"], 0.25);
        assert_eq!(v["tenants"][1]["fct_p99_s"], 1.0);
        assert_eq!(v["mmr"], 1.0);
        assert_eq!(v["mmr_by_weight"][1], json!({"weight": 3.0, "tenants": 1, "mmr": 1.0}));
        assert_eq!(summary(&Tenancy::default(), &flows, s), Value::Null);
    }
}
