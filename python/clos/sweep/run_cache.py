"""A folder of finished runs, keyed by what they simulated, so that sweeps resume and reruns are
instant.

The key is a hash of the scenario as the core will run it (`clos.validate`: every default written
out, so a scenario that writes `seed = 1` and one that leaves it out share an entry), the clos
version and build (a digest of the core extension's file, so that a core rebuilt without a new
version number does not find the old build's runs), and the contents of the files the workload reads (a flows CSV or a CDF file can change
under the same path). Two spellings of one quantity that the core keeps as written (`"40us"` and
`"40000ns"`) hash apart: that costs a rerun, never a wrong answer.

An entry is `<cache>/<key>/`, exactly what `Results.save` writes, or only `summary.json` when a
batch does not keep tables. It is written into a temporary folder beside it and renamed into
place, so a crash or Ctrl-C leaves either a whole entry or none. An entry that is nonetheless
unreadable (copied in half, edited by hand, or holding another scenario) counts as missing, and
the run is done again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from clos import _core
from clos.results.results import SUMMARY, TABLES, Results

# 64 bits of SHA-256: no collision is expected below billions of runs, and the folder names stay
# short enough to type.
KEY_HEX_DIGITS = 16

# Workload fields that may name a file the core reads (docs/workloads.md).
_FILE_FIELDS = ("file", "cdf", "concurrency")


def scenario_key(normalised: dict[str, Any]) -> str:
    """The cache key of a normalised scenario (the dict `clos.validate` returns)."""
    identity = {
        "clos": _core.version(),
        "build": build_digest(),
        "scenario": normalised,
        "files": {path: _file_digest(path) for path in sorted(set(_workload_files(normalised)))},
    }
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:KEY_HEX_DIGITS]


@functools.cache
def build_digest() -> str:
    """A digest of the loaded core extension: two builds of one version hash apart."""
    return _file_digest(_core.__file__)[:KEY_HEX_DIGITS]


def _workload_files(normalised: dict[str, Any]) -> Iterator[str]:
    """Paths of the files the workload reads, in its services and background parts too.

    A `cdf` or `concurrency` value is a file only if one of that name exists; otherwise it names
    a bundled distribution. Relative paths are read from the working directory, as the core does.
    """
    pending = [normalised.get("workload")]
    while pending:
        part = pending.pop()
        if not isinstance(part, dict):
            continue
        for field in _FILE_FIELDS:
            value = part.get(field)
            if isinstance(value, str) and Path(value).is_file():
                yield value
        pending.extend(part.get("services") or [])
        pending.append(part.get("background"))


def _file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class RunCache:
    """Finished runs under one folder, one subfolder per scenario key."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def entry(self, key: str) -> Path:
        return self.folder / key

    def lookup(self, key: str, normalised: dict[str, Any], tables: bool) -> dict[str, Any] | None:
        """The saved summary of a whole, readable entry for this scenario; None means run it.

        With `tables`, an entry holding only a summary is not enough. Parquet files are checked
        by reading their footers, which costs a few milliseconds, not a read of the data.
        """
        folder = self.entry(key)
        try:
            summary = json.loads((folder / SUMMARY).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return None
        # A folder holding some other scenario (moved or copied by hand) is not this run.
        if not isinstance(summary, dict) or summary.get("scenario") != normalised:
            return None
        if tables:
            for table in TABLES:
                try:
                    pl.read_parquet_schema(folder / f"{table}.parquet")
                except (OSError, pl.exceptions.PolarsError):
                    return None
        return summary

    def store(self, key: str, summary: dict[str, Any], results: Results | None) -> Path:
        """Write an entry whole or not at all: into a temporary folder, then renamed into place.

        `results` None keeps only the summary. An entry already there is one `lookup` rejected
        (stale or partial), so it is replaced; if another sweep sharing this cache finished the
        same run a moment earlier, its entry is kept and this one dropped.
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        final = self.entry(key)
        temporary = self.folder / f".tmp-{key}-{uuid.uuid4().hex[:8]}"
        try:
            if results is None:
                temporary.mkdir()
                text = json.dumps(summary, indent=2) + "\n"
                (temporary / SUMMARY).write_text(text, encoding="utf-8")
            else:
                results.save(temporary)
            if final.exists():
                shutil.rmtree(final)
            try:
                os.rename(temporary, final)
            except OSError:
                if not (final / SUMMARY).is_file():
                    raise
        finally:
            shutil.rmtree(temporary, ignore_errors=True)
        return final
