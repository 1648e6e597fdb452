"""A run's results and how they are shown: the `Results` tables (`results.py`), a saved run as
reports read it (`run_folder.py`), the key numbers (`key_numbers.py`), plots, the HTML pages'
pieces (`page.py`), `clos report` (`report.py`), `clos compare` (`compare.py`), telemetry
queries over a run's counters (`query.py`), and a folder's file names and the writers that need
no dataframe library (`saved_files.py`), and a summary's values by their keys (`summary_keys.py`)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clos.results.query import Query, QueryError
    from clos.results.results import Results

# Imported when first used (PEP 562): they import polars, which `clos run -q` does without
# (`clos.cli.plain_run` imports `saved_files` alone).
_LAZY = {"Query": "clos.results.query", "QueryError": "clos.results.query"}
_LAZY["Results"] = "clos.results.results"


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'clos.results' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__all__ = ["Query", "QueryError", "Results"]
