"""A value deep in a run's summary (`summary.json`), by its keys: what the results, the key
numbers and the run table read, without a dataframe library."""

from __future__ import annotations

from typing import Any


def summary_get(summary: Any, *keys: str) -> Any:
    """The value at `keys` in a summary; None where a section is null or absent."""
    value = summary
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value
