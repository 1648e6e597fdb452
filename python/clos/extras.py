"""The optional parts of the install (pyproject.toml's extras; README, "Installing"): what each
needs, and one clear error naming the command that adds it when it is missing.
"""

from __future__ import annotations

from importlib.util import find_spec

# extra -> (the module that stands for it, what it adds)
EXTRAS = {
    "plots": (
        "matplotlib",
        "figures: clos report, the page of clos compare, reproduce.html's plots",
    ),
    "dask": ("distributed", "sweeps and reproductions on a Dask cluster (--scheduler)"),
    "notebook": (
        "pandas",
        "tables as pandas DataFrames (to_pandas), with the plots extra's figures",
    ),
}


class MissingExtra(OSError):
    """A command needs an extra that is not installed; the message names the install command."""


def installed(extra: str) -> bool:
    return find_spec(EXTRAS[extra][0]) is not None


def require(extra: str, what: str) -> None:
    """Raises MissingExtra, naming `pip install 'clos[extra]'`, when `extra` is missing."""
    if not installed(extra):
        module = EXTRAS[extra][0]
        raise MissingExtra(
            f"{what} needs {module}, which is not installed: pip install 'clos[{extra}]' "
            "(or 'clos[all]' for every optional part)"
        )
