"""What this clos is: its version and the commit it was built from (`clos --version`).

A wheel carries the commit its extension was built from (crates/clos-py/build.rs). An editable
install in a git checkout asks git at run time, since Python changes reach it without a rebuild;
where the extension was built from another commit, both are named.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from clos import _core

CHECKOUT = Path(__file__).resolve().parents[2]


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(CHECKOUT), *args],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def checkout_commit() -> str | None:
    """The checkout's commit (with "-dirty" for uncommitted changes to tracked files), or None
    when this package is not running from a git checkout."""
    if not (CHECKOUT / ".git").exists() or not (CHECKOUT / "pyproject.toml").is_file():
        return None
    head = _git("rev-parse", "--short=12", "HEAD")
    if head is None:
        return None
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return f"{head}-dirty" if dirty else head


def describe() -> str:
    """One line: `clos VERSION (commit C)`, naming the core's own commit where it differs."""
    built = _core.commit()
    live = checkout_commit()
    if live is None or live == built:
        return f"clos {_core.version()} (commit {built})"
    return f"clos {_core.version()} (commit {live}; core built from {built})"
