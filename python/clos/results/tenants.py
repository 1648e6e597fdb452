"""Per-tenant goodput over time and Pisces's Min-Max Ratio (docs/tenants.md).

The core reports each tenant's goodput over its active period, and the MMR over those, in the
summary's `tenants` section (`crates/clos-core/src/metrics/tenants.rs`). The `timeseries` table
holds goodput per service per bin; a tenant owns one or more services (`tenants[i].services`,
indices into the summary's `services`), so its goodput over time is the sum of its services'.
Rows are in bin order and, within a bin, in service order, which is how a row's service is told
apart from another of the same name.
"""

from __future__ import annotations

from typing import Any, Protocol

import polars as pl


class Results(Protocol):
    """What of `clos.results.results.Results` these functions read (a protocol, so that this
    module, which `Results` calls, does not import it back)."""

    @property
    def timeseries(self) -> pl.DataFrame: ...

    def get(self, *path: str) -> Any: ...


def mmr(values: list[float]) -> float | None:
    """min / max (Pisces §5's Min-Max Ratio); None when there is nothing to compare."""
    if not values or max(values) <= 0:
        return None
    return min(values) / max(values)


def tenant_timeseries(results: Results) -> pl.DataFrame:
    """Payload delivered per tenant per bin: bin_start_ps, tenant, weight, bytes, goodput_bps,
    normalised_bps (goodput over weight). Empty for a run without tenants."""
    tenants: list[dict[str, Any]] = results.get("tenants", "tenants") or []
    services = results.get("services") or []
    ts = results.timeseries
    if not tenants or ts.is_empty() or not services:
        return pl.DataFrame(
            schema={
                "bin_start_ps": pl.UInt64,
                "tenant": pl.String,
                "weight": pl.Float64,
                "bytes": pl.UInt64,
                "goodput_bps": pl.Float64,
                "normalised_bps": pl.Float64,
            }
        )
    owner = {s: t["name"] for t in tenants for s in t["services"]}
    weight = {t["name"]: float(t["weight"]) for t in tenants}
    index = pl.int_range(pl.len(), dtype=pl.UInt32) % len(services)
    rows = ts.with_columns(
        index.replace_strict(owner, default=None, return_dtype=pl.String).alias("tenant")
    ).filter(pl.col("tenant").is_not_null())
    return (
        rows.group_by("bin_start_ps", "tenant", maintain_order=True)
        .agg(pl.col("bytes").sum(), pl.col("goodput_bps").sum())
        .with_columns(
            pl.col("tenant").replace_strict(weight, return_dtype=pl.Float64).alias("weight")
        )
        .with_columns((pl.col("goodput_bps") / pl.col("weight")).alias("normalised_bps"))
        .select("bin_start_ps", "tenant", "weight", "bytes", "goodput_bps", "normalised_bps")
        .sort("bin_start_ps", maintain_order=True)
    )


def window_mmr(results: Results, start_ps: int, end_ps: int) -> float | None:
    """The MMR of weight-normalised goodput over the bins that start in [start_ps, end_ps): the
    steady-state reading, leaving out the start-up a whole-run figure includes."""
    series = tenant_timeseries(results).filter(
        (pl.col("bin_start_ps") >= start_ps) & (pl.col("bin_start_ps") < end_ps)
    )
    per_tenant = series.group_by("tenant").agg(pl.col("normalised_bps").mean())
    return mmr(per_tenant["normalised_bps"].to_list())
