"""What one run produced: its summary and its tables.

- `flows`: one row per flow (size, service, FCT, ideal FCT and slowdown, retransmits, dupACKs);
- `links`: one row per directed link (tier, bytes, drops, ECN marks, queueing, utilisation);
- `queues`: switch-port queue lengths every `output.queue_interval` (empty unless asked for);
- `timeseries`: payload delivered per service per `output.bin`;
- `link_timeseries`: bytes per link per bin (empty unless `output.link_timeseries`);
- `trace`: every packet event of the flows `output.trace` lists (send, resend, drop, drop_ack,
  arrive, ack_send, ack, timeout, probe, and multicast's mc_copy, mc_arrive, mc_discard; `link`
  is the port where a queue dropped it or a multicast copy left or arrived by, null elsewhere; `ecn`, `ece`, `cwr` and `sack` what the packet's headers said), which
  `write_pcap` (`pcap.py`) turns into a capture Wireshark opens.

On disk a run is a folder of Parquet files and a pretty `summary.json`, so that results can be
compared later without rerunning and read by any Parquet tool.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import polars as pl

from clos.results.pcap import write_pcap
from clos.results.saved_files import (
    OPTIONAL,
    PCAP,
    REQUIRED,
    SUMMARY,
    TABLES,
    write_summary,
)
from clos.results.summary_keys import summary_get

NO_LINK = 2**32 - 1
SACK_VALUES = 6


@dataclass(frozen=True, eq=False)
class Results:
    summary: dict[str, Any]
    flows: pl.DataFrame
    links: pl.DataFrame
    queues: pl.DataFrame
    timeseries: pl.DataFrame
    link_timeseries: pl.DataFrame
    trace: pl.DataFrame

    def __repr__(self) -> str:
        """One line a notebook can show: what ran and its headline numbers, not every table."""
        name = self.get("scenario", "name") or "scenario"
        flows, finished = self.get("flows", "count"), self.get("flows", "finished")
        parts = [f"{type(self).__name__}({name!r}", f"{flows} flows ({finished} finished)"]
        if (goodput := self.get("goodput", "aggregate_bps")) is not None:
            parts.append(f"goodput {goodput / 1e9:.3g} Gb/s")
        if (fct := self.get("flows", "fct_p99_s")) is not None:
            parts.append(f"FCT p99 {fct * 1e3:.3g} ms")
        if (dropped := self.get("packets", "dropped")) is not None:
            parts.append(f"{dropped} packets dropped")
        tables = ", ".join(f"{t} {getattr(self, t).height} rows" for t in TABLES)
        return ", ".join(parts) + f"; tables: {tables})"

    def get(self, *keys: str) -> Any:
        """A value deep in the summary; None where a section is null or absent (older results)."""
        return summary_get(self.summary, *keys)

    def flow_total(self, column: str) -> int:
        """The sum of a flows-table counter (`retransmits`, `timeouts`) over every flow."""
        return int(self.flows[column].sum())

    @classmethod
    def from_core(cls, output: dict[str, Any]) -> Results:
        """Wrap the dict `clos._core.run` returns (summary as JSON text, tables as columns)."""
        trace = dict(output["trace"])
        # Three SACK blocks (start, end) a row, flat: one fixed-size array a row.
        sack = pl.Series("sack", trace.pop("sack")).reshape((-1, SACK_VALUES))
        tables = {table: _frame(output[table]) for table in TABLES if table != "trace"}
        # No link: the core's u32::MAX (`metrics/trace.rs`, NO_LINK).
        link = pl.col("link")
        tables["trace"] = _frame(trace).with_columns(
            pl.when(link == NO_LINK).then(None).otherwise(link).alias("link"), sack
        )
        return cls(json.loads(output["summary"]), **tables)

    def tenant_timeseries(self) -> pl.DataFrame:
        """Goodput per tenant per bin, with its weight and weight-normalised goodput (empty
        without `[[tenants]]`); see `clos.results.tenants`."""
        from clos.results.tenants import tenant_timeseries

        return tenant_timeseries(self)

    def write_pcap(
        self, path: str | PathLike[str], vantage: str = "sender", flows: list[int] | None = None
    ) -> Path:
        """The traced flows' packets (`output.trace`) as a pcap file Wireshark, tshark and tcptrace
        open, as a capture on each flow's `vantage` host ("sender" or "receiver") would show
        them; `flows`: only these. See `clos.results.pcap`."""
        return write_pcap(self, path, vantage, flows)

    def save(self, directory: str | PathLike[str]) -> Path:
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        for table in TABLES:
            getattr(self, table).write_parquet(folder / f"{table}.parquet")
        if vantage := self.get("scenario", "output", "pcap"):
            self.write_pcap(folder / PCAP, vantage)
        else:
            (folder / PCAP).unlink(missing_ok=True)  # an earlier run's, in a folder run again
        write_summary(folder, self.summary)
        return folder

    @classmethod
    def load(cls, directory: str | PathLike[str]) -> Results:
        folder = Path(directory)
        missing = [name for name in REQUIRED if not (folder / name).is_file()]
        if missing:
            raise FileNotFoundError(
                f"{folder} does not hold saved results: missing {', '.join(missing)} "
                "(a results folder is written by `clos run` or Results.save)"
            )
        summary = json.loads((folder / SUMMARY).read_text(encoding="utf-8"))
        return cls(summary, *(_read(folder / f"{table}.parquet") for table in TABLES))


def _read(path: Path) -> pl.DataFrame:
    return pl.read_parquet(path) if path.is_file() or path.stem not in OPTIONAL else pl.DataFrame()


def _frame(columns: dict[str, Any]) -> pl.DataFrame:
    """Numpy columns keep their dtypes; list columns (node names, tiers) are text even if empty."""
    return pl.DataFrame(
        [
            pl.Series(name, values, dtype=pl.String if isinstance(values, list) else None)
            for name, values in columns.items()
        ]
    )
