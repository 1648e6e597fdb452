"""The load-balancing schemes the core implements (`routing.scheme`).

The list lives in the Rust core (`lb::Scheme::ALL`), so it cannot drift from what runs.
"""

from dataclasses import dataclass

from clos import _core


@dataclass(frozen=True)
class Param:
    name: str
    default: str
    doc: str


@dataclass(frozen=True)
class Scheme:
    name: str
    description: str
    params: tuple[Param, ...]


def schemes() -> list[Scheme]:
    return [
        Scheme(name, description, tuple(Param(*p) for p in params))
        for name, description, params in _core.schemes()
    ]
