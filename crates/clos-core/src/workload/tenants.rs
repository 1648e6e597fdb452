//! Tenants: who owns each workload part, with what weight, and how the fabric isolates them
//! (issue 37, items 1 and 2; Pisces, seed 004 §3, L7484-L7491: "per-tenant weighted max-min
//! fairness", a tenant's weight w_t setting its global share).
//!
//! A scenario lists `[[tenants]]` (a name and a weight), and every workload part names its
//! tenant (`tenant = "web"`): a flow belongs to its part's tenant, as it belongs to its part
//! (`FlowSpec::service`), so a tenant may own several parts and a host may carry several
//! tenants' flows (VMs of different tenants on one server). With `switch.tenant_queues`, every
//! switch port holds one queue per tenant, served by the existing scheduler
//! (`fabric/scheduler.rs`): deficit weighted round robin with the tenants' weights, and strict
//! priority between tenants of different `priority`. That is Pisces's fair queuing (§3.3,
//! "Fair Queuing", DWRR with tokens in proportion to the weights) moved from the storage nodes
//! to the fabric's ports; the weights are global, not Pisces's per-node local shares, since
//! there is no weight allocation here (not yet built).
//!
//! Without `tenant_queues` the tenants are only accounted: their goodput, FCTs and the Min-Max
//! Ratio (`metrics/tenants.rs`) are reported and the ports stay FIFO (or the `switch.classes`
//! the scenario gives).

use super::spec::WorkloadSpec;
use crate::error::{bad, Result};
use crate::fabric::scheduler::{Class, MAX_CLASSES};
use crate::metrics::tenants::Tenancy;
use crate::units::ByteSize;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The largest tenant weight, as a class's (`switch.classes[i].weight`): DWRR adds
/// `quantum x weight` bytes a turn, so a weight of 1,000 already lets one turn send 1.5 MB.
pub const MAX_WEIGHT: i64 = 1000;

/// One tenant (`tenants[i]`): a name workloads refer to, and its weight.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantSpec {
    /// The name a workload's `tenant` gives.
    pub name: String,
    /// The tenant's weight (a whole number in 1..=1000, default 1): its share of a link it
    /// contends for under `switch.tenant_queues` is weight / the sum of the backlogged tenants'
    /// weights, and the Min-Max Ratio divides its throughput by it.
    #[serde(default = "one")]
    pub weight: i64,
    /// Under `switch.tenant_queues`, the strict-priority level of its queue: 0 is served first
    /// (default 0; tenants of one level share by weight).
    #[serde(default)]
    pub priority: u8,
    /// Under `switch.tenant_queues`, the most bytes its queue may hold at a port (default: no
    /// limit of its own; every tenant shares the port's `switch.buffer`, which an unresponsive
    /// tenant can fill).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer: Option<ByteSize>,
}

fn one() -> i64 {
    1
}

/// What of `[switch]` the tenants' checks read.
#[derive(Clone, Copy, Debug, Default)]
pub struct SwitchQueues {
    /// `switch.tenant_queues`.
    pub tenant_queues: bool,
    /// Whether `switch.classes` lists any class.
    pub classes: bool,
    /// `switch.buffer`.
    pub buffer: ByteSize,
}

/// Check `tenants`, `switch.tenant_queues` and every workload part's `tenant`.
pub fn validate(tenants: &[TenantSpec], switch: &SwitchQueues, workload: &WorkloadSpec, min_frame: u64) -> Result<()> {
    for (i, t) in tenants.iter().enumerate() {
        let field = |f: &str| format!("tenants[{i}].{f}");
        if t.name.trim().is_empty() {
            return Err(bad(field("name"), "must not be empty: give the tenant a name workloads can refer to (tenant = \"web\")"));
        }
        if let Some(j) = tenants[..i].iter().position(|u| u.name == t.name) {
            return Err(bad(field("name"), format!("\"{}\" is also tenants[{j}]'s name; give each tenant its own", t.name)));
        }
        if !(1..=MAX_WEIGHT).contains(&t.weight) {
            return Err(bad(
                field("weight"),
                format!("must be a whole number in 1..={MAX_WEIGHT}, got {}; weights are relative (1 and 3 share 1:3)", t.weight),
            ));
        }
        if t.priority as usize >= MAX_CLASSES {
            return Err(bad(field("priority"), format!("must be below {MAX_CLASSES}, got {}", t.priority)));
        }
        if let Some(b) = t.buffer {
            if !switch.tenant_queues {
                return Err(bad(field("buffer"), "limits the tenant's queue at each switch port: set switch.tenant_queues = true, or remove it"));
            }
            if b.0 < min_frame || b > switch.buffer {
                return Err(bad(
                    field("buffer"),
                    format!("must hold a full-size packet ({min_frame} B) and be at most switch.buffer ({} B), got {} B", switch.buffer.0, b.0),
                ));
            }
        }
    }
    if switch.tenant_queues {
        if tenants.is_empty() {
            return Err(bad("switch.tenant_queues", "queues tenants, and the scenario lists none: add [[tenants]] tables (name, weight) or remove it"));
        }
        if switch.classes {
            return Err(bad(
                "switch.classes",
                "give either switch.classes or switch.tenant_queues, not both: with tenant_queues each tenant is a class (its weight and priority in [[tenants]])",
            ));
        }
        if tenants.len() > MAX_CLASSES {
            return Err(bad(
                "switch.tenant_queues",
                format!(
                    "{} tenants; a port has at most {MAX_CLASSES} queues (802.1Q's eight): queue at most {MAX_CLASSES} tenants, or turn tenant_queues off",
                    tenants.len()
                ),
            ));
        }
    } else if tenants.iter().any(|t| t.priority != 0) {
        let i = tenants.iter().position(|t| t.priority != 0).expect("one has");
        return Err(bad(format!("tenants[{i}].priority"), "applies to tenant queues: set switch.tenant_queues = true, or remove it"));
    }
    for (path, part) in super::parts_of(workload) {
        match (&part.tenant, tenants.is_empty()) {
            (Some(name), true) => {
                return Err(bad(
                    format!("{path}.tenant"),
                    format!("names tenant \"{name}\", and the scenario lists no tenants: add a [[tenants]] table with name = \"{name}\""),
                ));
            }
            (Some(name), false) if !tenants.iter().any(|t| &t.name == name) => {
                let known: Vec<&str> = tenants.iter().map(|t| t.name.as_str()).collect();
                return Err(bad(format!("{path}.tenant"), format!("unknown tenant \"{name}\"; the tenants are {}", known.join(", "))));
            }
            (None, false) => {
                return Err(bad(
                    format!("{path}.tenant"),
                    "is required when the scenario lists [[tenants]]: every workload belongs to one (tenant = \"name\")",
                ));
            }
            _ => {}
        }
        if part.class.is_some() && switch.tenant_queues {
            return Err(bad(format!("{path}.class"), "with switch.tenant_queues the tenant picks the queue: remove class"));
        }
    }
    Ok(())
}

/// The switch ports' classes under `switch.tenant_queues`: tenant i is class i.
pub fn port_classes(tenants: &[TenantSpec]) -> Vec<Class> {
    tenants.iter().map(|t| Class { priority: t.priority, weight: t.weight as u32 }).collect()
}

/// Each tenant's limit on its queue at a port, by class (`u64::MAX`: none).
pub fn class_limits(tenants: &[TenantSpec]) -> Vec<u64> {
    tenants.iter().map(|t| t.buffer.map_or(u64::MAX, |b| b.0)).collect()
}

/// The index into `tenants` of the tenant called `name`.
pub fn tenant_index(tenants: &[TenantSpec], name: Option<&str>) -> Option<u32> {
    name.and_then(|n| tenants.iter().position(|t| t.name == n)).map(|i| i as u32)
}

/// The tenants as the report reads them; `parts` is each workload part's tenant, indexed as
/// `Generated::services` (`Generated::tenants`).
pub fn tenancy(tenants: &[TenantSpec], parts: &[Option<String>]) -> Tenancy {
    Tenancy {
        names: tenants.iter().map(|t| t.name.clone()).collect(),
        weights: tenants.iter().map(|t| t.weight as f64).collect(),
        of_service: parts.iter().map(|p| tenant_index(tenants, p.as_deref())).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::spec::WorkloadKind;

    fn tenant(name: &str, weight: i64) -> TenantSpec {
        TenantSpec { name: name.into(), weight, priority: 0, buffer: None }
    }

    fn workload(tenant: Option<&str>) -> WorkloadSpec {
        let mut w: WorkloadSpec = serde_json::from_value(serde_json::json!({"kind": "permutation", "bytes": "1MB"})).unwrap();
        w.tenant = tenant.map(String::from);
        assert_eq!(w.kind, WorkloadKind::Permutation);
        w
    }

    fn error(r: Result<()>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn bad_tenants_name_the_field_and_the_fix() {
        let sw = SwitchQueues { buffer: ByteSize(150_000), ..SwitchQueues::default() };
        let ok = [tenant("a", 1), tenant("b", 3)];
        assert!(validate(&ok, &sw, &workload(Some("a")), 1538).is_ok());
        let e = error(validate(&[tenant("a", 0)], &sw, &workload(Some("a")), 1538));
        assert!(e.starts_with("tenants[0].weight: must be a whole number in 1..=1000, got 0"), "{e}");
        let e = error(validate(&[tenant("a", -2)], &sw, &workload(Some("a")), 1538));
        assert!(e.contains("got -2"), "{e}");
        let e = error(validate(&ok, &sw, &workload(Some("c")), 1538));
        assert_eq!(e, "workload.tenant: unknown tenant \"c\"; the tenants are a, b");
        let e = error(validate(&ok, &sw, &workload(None), 1538));
        assert!(e.starts_with("workload.tenant: is required"), "{e}");
        let e = error(validate(&[], &sw, &workload(Some("a")), 1538));
        assert!(e.contains("add a [[tenants]] table with name = \"a\""), "{e}");
        let e = error(validate(&[tenant("a", 1), tenant("a", 2)], &sw, &workload(Some("a")), 1538));
        assert!(e.starts_with("tenants[1].name"), "{e}");
        let queued = SwitchQueues { tenant_queues: true, ..sw };
        let e = error(validate(&[], &queued, &workload(None), 1538));
        assert!(e.starts_with("switch.tenant_queues"), "{e}");
        let both = SwitchQueues { tenant_queues: true, classes: true, ..sw };
        assert!(error(validate(&ok, &both, &workload(Some("a")), 1538)).starts_with("switch.classes: give either"));
        let nine: Vec<TenantSpec> = (0..9).map(|i| tenant(&format!("t{i}"), 1)).collect();
        assert!(error(validate(&nine, &queued, &workload(Some("t0")), 1538)).contains("9 tenants"));
        let prio = [TenantSpec { priority: 1, ..tenant("a", 1) }];
        assert!(error(validate(&prio, &sw, &workload(Some("a")), 1538)).starts_with("tenants[0].priority: applies to tenant queues"));
    }

    #[test]
    fn tenant_i_is_class_i_with_its_weight_and_priority() {
        let t = [tenant("a", 1), TenantSpec { priority: 2, ..tenant("b", 3) }];
        let c = port_classes(&t);
        assert_eq!((c[0].priority, c[0].weight, c[1].priority, c[1].weight), (0, 1, 2, 3));
        assert_eq!(tenant_index(&t, Some("b")), Some(1));
        assert_eq!(tenant_index(&t, None), None);
    }
}
