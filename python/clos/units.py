"""Human-readable quantities for tables: times in ms or s, rates in Gb/s, memory in MB.

Each formatter shows a missing (`None`) value as "-": the core reports unfinished values as null.
"""

MISSING = "-"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return MISSING
    if abs(seconds) >= 1:
        return f"{seconds:.3f} s"
    return f"{seconds * 1e3:.3f} ms"


def rate(bits_per_second: float | None) -> str:
    if bits_per_second is None:
        return MISSING
    return f"{bits_per_second / 1e9:.2f} Gb/s"


def megabytes(size_bytes: float | None) -> str:
    if size_bytes is None:
        return MISSING
    return f"{size_bytes / 1e6:.1f} MB"


def count(n: int | None) -> str:
    if n is None:
        return MISSING
    return f"{n:,}"


def millions_per_second(per_second: float | None) -> str:
    if per_second is None:
        return MISSING
    return f"{per_second / 1e6:.2f} M/s"


def percent(fraction: float | None) -> str:
    if fraction is None:
        return MISSING
    return f"{fraction * 100:.1f} %"


def ratio(x: float | None) -> str:
    if x is None:
        return MISSING
    return f"{x:.3g}"
