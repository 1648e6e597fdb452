"""Many runs: sweep specs and their tidy table (`sweep.py`), batches of runs (`batch.py`) on
local processes or a Dask cluster (`executors.py`), and the cache that makes them resumable
(`run_cache.py`)."""

import sys
import types
from typing import Any

from clos.sweep.sweep import SweepResult, SweepSpec, bundled_spec_names, run_sweep, sweep


class _CallablePackage(types.ModuleType):
    """`clos.sweep(spec)` is the public call, and `clos.sweep` is also this package: importing
    `clos.sweep.batch` binds the package there, over the function that `clos` binds when first
    asked for it (`clos/__init__.py` imports lazily). Calling the package calls the function, so
    the call works whichever was bound last."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage

__all__ = ["SweepResult", "SweepSpec", "bundled_spec_names", "run_sweep", "sweep"]
