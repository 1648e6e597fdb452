"""The load-balancing schemes the core implements (`routing.scheme`).

The list lives in the Rust core (`lb::Scheme::ALL`), so it cannot drift from what runs.
"""

from dataclasses import dataclass

from clos import _core


@dataclass(frozen=True)
class Scheme:
    name: str
    description: str


def schemes() -> list[Scheme]:
    return [Scheme(name, description) for name, description in _core.schemes()]
