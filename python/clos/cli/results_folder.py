"""Where `clos run` saves a run: the default folder, and the check that it can be written before
anything is simulated. Plain Python, so that `clos run` (`plain_run.py`) needs no more."""

from __future__ import annotations

import hashlib
from pathlib import Path


def default_folder(slug: str, overrides: list[str]) -> Path:
    """`results/<scenario>`, or with overrides `results/<scenario>-<8 hex digits of them>`, so
    that a run with `--set` never replaces the plain run or one with other overrides; the same
    overrides, in the same order, land in the same folder again and replace it."""
    if not overrides:
        return Path("results", slug)
    digest = hashlib.sha256("\n".join(overrides).encode()).hexdigest()[:8]
    return Path("results", f"{slug}-{digest}")


def writable_folder(folder: Path) -> Path:
    """`folder`, created if need be, or one error line before anything is simulated."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".clos-write-check"
        probe.write_bytes(b"")
        probe.unlink()
    except (OSError, ValueError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise OSError(f"cannot write results to {folder}: {reason}; give another --out") from None
    return folder
