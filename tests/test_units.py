"""Table formatting: the units the tables promise, and "-" for quantities the core left null."""

import pytest

from clos import units


@pytest.mark.parametrize(
    ("formatted", "expected"),
    [
        (units.duration(0.0123), "12.300 ms"),
        (units.duration(2.5), "2.500 s"),
        (units.rate(7.5e9), "7.50 Gb/s"),
        (units.megabytes(12_345_678), "12.3 MB"),
        (units.percent(0.931), "93.1 %"),
        (units.count(1234567), "1,234,567"),
    ],
)
def test_units(formatted: str, expected: str):
    assert formatted == expected


@pytest.mark.parametrize(
    "formatter",
    [units.duration, units.rate, units.megabytes, units.count, units.percent, units.ratio],
)
def test_missing_is_a_dash(formatter):
    assert formatter(None) == "-"
