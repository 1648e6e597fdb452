"""Where a batch's simulations run: in this process, in a local process pool, or on Dask.

Every backend takes jobs (an id and a scenario as JSON) and yields `(id, Outcome)` in whatever
order the runs finish; the caller puts them back in order. A run's outcome (its summary, and its
tables unless the batch keeps only summaries) always travels back to the process that asked for
it, which writes the cache. Workers therefore need no view of the output folder: on a cluster
without a shared filesystem, or with the output on the submitting machine's local disk, results
still land where they are wanted, and only one process ever writes an entry.

A simulation is deterministic given its scenario, so which backend runs it and how many runs
share a machine change only the timing numbers (events/s, CPU and wall time, peak memory).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clos import _core, extras
from clos.results.results import Results
from clos.sweep.run_cache import build_digest

if TYPE_CHECKING:
    from distributed import Client

Job = tuple[str, str]
"""(job id, scenario JSON)."""


@dataclass(frozen=True, eq=False)
class Outcome:
    """What a worker sends back: the summary, the tables if kept, and which clos produced them
    (its version, and its build's digest)."""

    version: str
    build: str
    summary: dict[str, Any]
    results: Results | None


class JobFailed(Exception):
    """A run raised (or its worker died); `job` says which, `__cause__` what happened."""

    def __init__(self, job: str, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.job = job
        self.error = error


def simulate(scenario_json: str, keep_tables: bool) -> Outcome:
    """Run one scenario; what pool and Dask workers execute."""
    results = Results.from_core(dict(_core.run(scenario_json)))
    return Outcome(
        _core.version(), build_digest(), results.summary, results if keep_tables else None
    )


def default_workers() -> int:
    """The CPUs this process may use, which is what CPU-bound simulations can make use of.

    The affinity mask honours `taskset` and cpusets; a CPU quota (Docker's `--cpus`) does not
    show in it, so under one pass `workers` explicitly.
    """
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def in_process(jobs: Sequence[Job], keep_tables: bool) -> Iterator[tuple[str, Outcome]]:
    """One run after another here: no start-up cost, and errors keep their full traceback."""
    for job, scenario_json in jobs:
        try:
            outcome = simulate(scenario_json, keep_tables)
        except Exception as error:
            raise JobFailed(job, error) from error
        yield job, outcome


# The usual causes of a worker dying, and the fix of the one that is the caller's.
_BROKEN_HINT = (
    "A worker died: out of memory, a crash, or, when a script calls clos.sweep or run_many, "
    'a missing `if __name__ == "__main__":` guard (workers are spawned, and import the script).'
)


def process_pool(
    jobs: Sequence[Job], keep_tables: bool, workers: int
) -> Iterator[tuple[str, Outcome]]:
    """Runs spread over `workers` local processes.

    Workers are spawned, not forked: the parent holds polars' thread pool and a progress bar's
    thread, and forking a process with running threads can deadlock the child (polars' docs warn
    about exactly this). Spawning costs each worker an import of clos, about half a second.
    """
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    try:
        futures: dict[Future[Outcome], str] = {
            pool.submit(simulate, scenario_json, keep_tables): job for job, scenario_json in jobs
        }
        for future in as_completed(futures):
            # Dropped as soon as read: a finished future holds its run's tables.
            job = futures.pop(future)
            try:
                outcome = future.result()
            except BrokenProcessPool as error:
                raise JobFailed(job, BrokenProcessPool(f"{error} {_BROKEN_HINT}")) from error
            except Exception as error:
                raise JobFailed(job, error) from error
            yield job, outcome
    finally:
        # On an error or Ctrl-C, runs not yet started are dropped rather than waited for.
        pool.shutdown(wait=True, cancel_futures=True)


def dask(
    jobs: Sequence[Job], keep_tables: bool, scheduler: str | Client
) -> Iterator[tuple[str, Outcome]]:
    """Runs on a Dask cluster: `scheduler` is its address (tcp://host:8786) or a Client.

    Task keys are `clos-run-<job id>`, so the dashboard shows which scenario each task is.
    """
    extras.require("dask", "a Dask scheduler")
    from distributed import Client
    from distributed import as_completed as dask_completed

    client = scheduler if isinstance(scheduler, Client) else connect(scheduler)
    try:
        futures = {
            client.submit(simulate, scenario_json, keep_tables, key=f"clos-run-{job}"): job
            for job, scenario_json in jobs
        }
        try:
            for future in dask_completed(futures, loop=client.loop):
                # Dropped as soon as read, so that the cluster can free the run's tables.
                job = futures.pop(future)
                try:
                    outcome = future.result()
                except Exception as error:
                    raise JobFailed(job, error) from error
                yield job, outcome
        finally:
            # Runs still queued would otherwise go on using the cluster after the sweep ends.
            client.cancel(list(futures))
    finally:
        if client is not scheduler:
            client.close()


def connect(address: str) -> Client:
    """A client of the Dask scheduler at `address`; a wrong address is one readable error.

    It waits as long as Dask's `distributed.comm.timeouts.connect` says (30 s unless set, e.g.
    by DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s), since a batch system may still be starting
    the scheduler.
    """
    extras.require("dask", "a Dask scheduler")
    from distributed import Client

    try:
        return Client(address, set_as_default=False)
    except (OSError, ValueError, TypeError) as error:
        raise OSError(
            f"scheduler {address}: cannot reach a Dask scheduler ({error}); start one with "
            "`dask scheduler` and give the address it prints, e.g. tcp://10.0.0.5:8786 "
            "(docs/sweeps.md)"
        ) from None
