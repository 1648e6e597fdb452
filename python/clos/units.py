"""Human-readable quantities for tables: times in ms or s, rates in Gb/s, memory in MB.

Each formatter shows a missing (`None`) value as "-": the core reports unfinished values as null.
"""

from collections.abc import Callable
from functools import wraps
from typing import TypeVar

MISSING = "-"

# Picoseconds (the core's unit of time) per unit a user writes ("1ms", `unit="us"`).
PICOSECONDS = {"ns": 1e3, "us": 1e6, "ms": 1e9, "s": 1e12}

T = TypeVar("T", int, float)


def _or_missing(format_value: Callable[[T], str]) -> Callable[[T | None], str]:
    @wraps(format_value)
    def formatted(value: T | None) -> str:
        return MISSING if value is None else format_value(value)

    return formatted


@_or_missing
def duration(seconds: float) -> str:
    if abs(seconds) >= 1:
        return f"{seconds:.3f} s"
    return f"{seconds * 1e3:.3f} ms"


@_or_missing
def rate(bits_per_second: float) -> str:
    return f"{bits_per_second / 1e9:.2f} Gb/s"


@_or_missing
def megabytes(size_bytes: float) -> str:
    return f"{size_bytes / 1e6:.1f} MB"


@_or_missing
def count(n: int) -> str:
    return f"{n:,}"


@_or_missing
def millions_per_second(per_second: float) -> str:
    return f"{per_second / 1e6:.2f} M/s"


@_or_missing
def percent(fraction: float) -> str:
    return f"{fraction * 100:.1f} %"


@_or_missing
def ratio(x: float) -> str:
    return f"{x:.3g}"


@_or_missing
def kilobytes(size_bytes: float) -> str:
    return f"{size_bytes / 1e3:.1f} KB"
