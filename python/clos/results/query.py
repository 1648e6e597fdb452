"""Telemetry queries over a run's counters, in the spirit of Frenetic's query language (seed 004,
"Languages for Software-Defined Networks", L4625-L4745 and L4899-L4907; digest §4).

Frenetic reads traffic statistics with a query built from clauses: `Select(bytes)` (what to
count), `Where(...)` (which packets), `GroupBy([...])` (one counter per value of some fields) and
`Every(n)` (a reading every n seconds). `Query` builds the same clauses and evaluates them over
the counters the simulator keeps, returning a polars DataFrame:

    Query().select("bytes").where(switch="tor0").group_by("port").every("1ms").run(results)

The simulator counts at two places, so a query reads one of two kinds of counter:

- **Ports** (the `links` table, and `link_timeseries` per bin): every directed link out of a
  node. Fields: `switch` (the node the port belongs to: a switch, or a host's NIC), `port` (the
  link's id), `to` (the node at its other end), `tier` (host_tor, tor_agg, ...). Counts:
  `bytes`, `packets`, `drops`, `ecn_marks`; per interval (`every`) only `bytes`, which is what
  `output.link_timeseries` records, in bins of `output.bin`.
- **Flows** (the `flows` table, and `timeseries` per service and bin). Fields: `flow` (its id),
  `src` and `dst` (host indices), `service` (its name), `tenant` (the tenant owning the service,
  `[[tenants]]`). Counts: `bytes` (payload delivered), `drops`. Per interval, only `bytes`
  grouped by `service` or `tenant` (the simulator bins goodput per service, not per flow).

A query naming fields of both kinds is refused: there is no per-port, per-flow counter. Frenetic
counts packets matching a header pattern at a switch; here the pattern is the counter's fields.
Unlike Frenetic's, a query runs after the run, over what was recorded, not as a live callback.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import polars as pl

from clos.units import PICOSECONDS

PORT_FIELDS = ("switch", "port", "to", "tier")
PORT_COUNTS = ("bytes", "packets", "drops", "ecn_marks")
FLOW_FIELDS = ("flow", "src", "dst", "service", "tenant")
FLOW_COUNTS = ("bytes", "drops")
START = "interval_start_s"
PS_PER_S = 10**12


class QueryError(ValueError):
    """A query the counters cannot answer: the message names the clause and the fix."""


class Results(Protocol):
    """What of `clos.results.results.Results` a query reads (a protocol: `results.py` does not
    import this module, and this one does not import it)."""

    @property
    def flows(self) -> pl.DataFrame: ...

    @property
    def links(self) -> pl.DataFrame: ...

    @property
    def timeseries(self) -> pl.DataFrame: ...

    @property
    def link_timeseries(self) -> pl.DataFrame: ...

    def get(self, *path: str) -> Any: ...


def seconds(value: float | str) -> float:
    """An interval given as seconds or as a duration string ("1ms", "250us")."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        for unit in sorted(PICOSECONDS, key=len, reverse=True):
            if text.endswith(unit):
                try:
                    return float(text[: -len(unit)]) * (PICOSECONDS[unit] / PS_PER_S)
                except ValueError:
                    break
    raise QueryError(f'every: {value!r} is not a duration; give seconds or a string like "1ms"')


@dataclass(frozen=True)
class Query:
    """A telemetry query: `select`, `where`, `group_by` and `every` clauses, each returning a new
    query, then `run(results)`. Without `every` the counts are totals over the run."""

    count: str = "bytes"
    filters: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    groups: tuple[str, ...] = ()
    interval_s: float | None = None
    _fields: tuple[str, ...] = field(default=(), repr=False)

    def select(self, count: str) -> Query:
        """What to count: "bytes", "packets", "drops" or "ecn_marks" (ports), "bytes" or "drops"
        (flows)."""
        if count not in PORT_COUNTS:
            raise QueryError(f"select: {count!r} is not a counter; choose one of {PORT_COUNTS}")
        return replace(self, count=count)

    def where(self, **match: Any) -> Query:
        """Only what matches every field given; a list, tuple or set matches any of its values."""
        filters = list(self.filters)
        for name, value in match.items():
            _check_field("where", name)
            values = (
                tuple(value)
                if isinstance(value, Iterable) and not isinstance(value, str)
                else (value,)
            )
            filters.append((name, values))
        return replace(self, filters=tuple(filters))

    def group_by(self, *names: str) -> Query:
        """One count per distinct value of these fields."""
        for name in names:
            _check_field("group_by", name)
        return replace(self, groups=self.groups + names)

    def every(self, interval: float | str) -> Query:
        """One count per interval (seconds, or "1ms"); a multiple of the run's `output.bin`."""
        s = seconds(interval)
        if not s > 0:
            raise QueryError(f"every: the interval must be positive, got {interval!r}")
        return replace(self, interval_s=s)

    def fields(self) -> list[str]:
        return [name for name, _ in self.filters] + list(self.groups)

    def kind(self) -> str:
        """ "ports" or "flows": which counters the query's fields read (ports when none)."""
        names = set(self.fields())
        ports, flows = names & set(PORT_FIELDS), names & set(FLOW_FIELDS)
        if ports and flows:
            raise QueryError(
                f"where/group_by: {sorted(ports)} are port fields and {sorted(flows)} flow fields; "
                "the simulator counts per port and per flow, not both at once: query one kind"
            )
        return "flows" if flows else "ports"

    def run(self, results: Results) -> pl.DataFrame:
        """Evaluate over a run's results: the group fields (and `interval_start_s` with `every`),
        then the count, named after it."""
        if self.kind() == "flows":
            frame, binned = _flow_frame(self, results)
        else:
            frame, binned = _port_frame(self, results)
        for name, values in self.filters:
            frame = frame.filter(pl.col(name).is_in(list(values)))
        keys = list(self.groups)
        if binned:
            width = round(self.interval_s * PS_PER_S)
            frame = frame.with_columns(
                ((pl.col("bin_start_ps") // width) * width / PS_PER_S).alias(START)
            )
            keys = [START, *keys]
        if not keys:
            return frame.select(pl.col(self.count).sum())
        return frame.group_by(keys).agg(pl.col(self.count).sum()).sort(keys)


def _check_field(clause: str, name: str) -> None:
    if name not in PORT_FIELDS + FLOW_FIELDS:
        raise QueryError(
            f"{clause}: {name!r} is not a field; ports have {PORT_FIELDS}, flows {FLOW_FIELDS}"
        )


def _check_bin(q: Query, table: str, frame: pl.DataFrame) -> None:
    """`every` must be a whole number of the recorded bins."""
    starts = frame["bin_start_ps"].unique().sort()
    if starts.len() < 2:
        return
    bin_ps = int(starts.diff().drop_nulls().min())
    width = round(q.interval_s * PS_PER_S)
    if width % bin_ps:
        raise QueryError(
            f"every: {q.interval_s:g} s is not a multiple of the {bin_ps / PS_PER_S:g} s bins "
            f"of `{table}`; choose a multiple, or set output.bin"
        )


def _port_frame(q: Query, results: Results) -> tuple[pl.DataFrame, bool]:
    links = results.links.select(
        pl.col("id").alias("port"),
        pl.col("src").alias("switch"),
        pl.col("dst").alias("to"),
        "tier",
        *PORT_COUNTS,
    )
    if q.interval_s is None:
        return links, False
    if q.count != "bytes":
        raise QueryError(
            f'select: per interval the ports count only "bytes" (output.link_timeseries), '
            f"not {q.count!r}; drop every() for a total"
        )
    binned = results.link_timeseries
    if binned.is_empty():
        raise QueryError(
            "every: per-port counts over time need output.link_timeseries = true in the scenario"
        )
    _check_bin(q, "link_timeseries", binned)
    frame = binned.select("bin_start_ps", pl.col("link").alias("port"), "bytes").join(
        links.select("port", "switch", "to", "tier"), on="port", how="left"
    )
    return frame, True


def _flow_frame(q: Query, results: Results) -> tuple[pl.DataFrame, bool]:
    if q.count not in FLOW_COUNTS:
        raise QueryError(
            f"select: flows count {FLOW_COUNTS}, not {q.count!r}; query ports for {q.count!r}"
        )
    services = [s.get("name", str(i)) for i, s in enumerate(results.get("services") or [])]
    owner = {
        services[s]: t["name"]
        for t in results.get("tenants", "tenants") or []
        for s in t["services"]
        if s < len(services)
    }
    if q.interval_s is None:
        frame = results.flows.select(
            pl.col("id").alias("flow"),
            "src",
            "dst",
            "service",
            pl.col("delivered").alias("bytes"),
            "drops",
        )
        return frame.with_columns(_tenant(owner)), False
    names = set(q.fields())
    if q.count != "bytes" or names - {"service", "tenant"}:
        raise QueryError(
            "every: flows are counted over time only as bytes per service or tenant "
            "(the timeseries table); drop every() or the fields "
            f"{sorted(names - {'service', 'tenant'})}"
        )
    ts = results.timeseries
    _check_bin(q, "timeseries", ts)
    frame = ts.select("bin_start_ps", "service", "bytes")
    return frame.with_columns(_tenant(owner)), True


def _tenant(owner: dict[str, str]) -> pl.Expr:
    return (
        pl.col("service")
        .replace_strict(owner, default=None, return_dtype=pl.String)
        .alias("tenant")
    )
