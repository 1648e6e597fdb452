"""Many runs: sweep specs and their tidy table (`sweep.py`), batches of runs (`batch.py`) on
local processes or a Dask cluster (`executors.py`), and the cache that makes them resumable
(`run_cache.py`)."""

from clos.sweep.sweep import SweepResult, SweepSpec, bundled_spec_names, run_sweep, sweep

__all__ = ["SweepResult", "SweepSpec", "bundled_spec_names", "run_sweep", "sweep"]
