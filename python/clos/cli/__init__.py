"""The `clos` command (`main.py`, entered through `launch.py`, which starts a plain `clos run`'s
simulation early: `early_run.py`): its terminal tables (`tables.py`), the progress bar
(`progress.py`), the benchmarks (`bench.py`), the scheme list (`schemes.py`) and the directory
service's front end (`directory.py`)."""
