"""`clos reproduce`: run a paper's experiments and set each claim's value beside ours.

Every run goes through the sweep machinery (`clos.sweep.batch.run_many`): a local process pool or a
Dask cluster, and a cache keyed by the normalised scenario, so an interrupted reproduction
resumes and a second one only re-evaluates.

Each claim gets a verdict:
- `matches`: the paper gives a number and ours is within the claim's relative `close` of it;
- `deviates`: ours is outside `close`, but the claim's qualitative statement (`holds`) is true;
  the claim's `explain` says why (docs/reproduction.md has the longer story);
- `holds`: a qualitative claim (no number) whose statement is true;
- `FAILS`: the qualitative statement is false: the result flipped. `clos reproduce` exits 1;
- `differs`: the statement is false for a claim recorded as a `known_deviation` (we do not
  reproduce the paper's direction and say why); reported, but does not fail the run;
- `missing`: a run did not produce the value (e.g. no flow finished). Also exits 1.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from clos._core import ScenarioError, multicast_eval
from clos.reproduce.claim_expr import Missing, Node, check, evaluate
from clos.reproduce.experiments import SCALES, Claim, Experiment, Paper
from clos.results.results import Results
from clos.sweep.batch import RunRecord, run_many

PASSING = ("matches", "deviates", "holds", "differs")


@dataclass(frozen=True)
class Verdict:
    claim: Claim
    ours: float | None
    status: str
    note: str

    @property
    def ratio(self) -> float | None:
        """Ours over the paper's value."""
        if self.ours is None or not self.claim.paper_value:
            return None
        return self.ours / self.claim.paper_value


def select(papers: dict[str, Paper], paper: str, only: Sequence[str] = ()) -> list[Claim]:
    """The claims to reproduce: a paper's (or `all` papers'), optionally only those named."""
    if paper != "all" and paper not in papers:
        raise ScenarioError(
            f"no paper {paper!r}: choose one of {', '.join(papers)}, or all "
            "(`clos reproduce --list` lists the claims)"
        )
    chosen = [p for key, p in papers.items() if paper in ("all", key)]
    claims = [c for p in chosen for c in p.claims]
    if only:
        known = {c.name for c in claims}
        unknown = [n for n in only if n not in known]
        if unknown:
            raise ScenarioError(
                f"--only {unknown[0]}: no such claim for {paper} (`clos reproduce --list`)"
            )
        claims = [c for c in claims if c.name in only]
    return claims


def needed_runs(
    papers: dict[str, Paper], claims: Sequence[Claim], only_read: bool = False
) -> list[tuple[Experiment, str]]:
    """Every run of the experiments the claims read, each once, in file order; with `only_read`,
    only the runs the claims' expressions name (`--only`: a paper-scale check of one claim
    need not run its experiment's other runs, which the plots alone would show)."""
    wanted: list[tuple[Experiment, str]] = []
    for claim in claims:
        for name in claim.experiments:
            experiment = papers[claim.paper].experiments[name]
            for run in experiment.runs:
                if only_read and (name, run) not in claim.runs:
                    continue
                if (experiment, run) not in wanted:
                    wanted.append((experiment, run))
    return wanted


def run_experiments(
    runs: Sequence[tuple[Experiment, str]],
    scale: str,
    out: str | PathLike[str],
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = True,
) -> dict[tuple[str, str, str], RunRecord]:
    """Simulate (or find in `<out>/runs`) every run at `scale`; keyed by (paper, experiment, run).

    Runs of "multicast-eval" experiments call the statistical evaluation in this process (it is
    seconds, not a simulation) and leave their summary in `<out>/runs/<paper>-<exp>-<run>.json`."""
    if scale not in SCALES:
        raise ScenarioError(f"--scale {scale}: choose one of {', '.join(SCALES)}")
    simulated = [(e, run) for e, run in runs if e.kind == "scenario"]
    evaluated = [(e, run) for e, run in runs if e.kind != "scenario"]
    batch = [
        (
            {"paper": e.paper, "experiment": e.name, "run": run, "scale": scale},
            e.scenario_for(scale, run),
        )
        for e, run in simulated
    ]
    records = (
        run_many(
            batch,
            Path(out) / "runs",
            scheduler=scheduler,
            workers=workers,
            progress=progress,
            title=f"reproduce ({scale})",
        )
        if batch
        else []
    )
    found = {(e.paper, e.name, run): r for (e, run), r in zip(simulated, records, strict=True)}
    for e, run in evaluated:
        found[(e.paper, e.name, run)] = _evaluate(e, run, scale, Path(out) / "runs", progress)
    return found


def _evaluate(experiment: Experiment, run: str, scale: str, out: Path, progress: bool) -> RunRecord:
    """One run of a "multicast-eval" experiment."""
    params = experiment.params_for(scale, run)
    name = f"{experiment.paper}-{experiment.name}-{run}"
    if progress:
        print(f"{name}: multicast evaluation ({scale})", flush=True)
    summary = multicast_eval(params)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}-{scale}.json").write_text(
        json.dumps({"params": params, "summary": summary}, indent=1), encoding="utf-8"
    )
    parameters = {"paper": experiment.paper, "experiment": experiment.name, "run": run}
    return RunRecord(parameters | {"scale": scale}, name, name, summary, None, False)


def judge(
    claims: Sequence[Claim],
    papers: dict[str, Paper],
    records: dict[tuple[str, str, str], RunRecord],
) -> list[Verdict]:
    names = {key: _names(paper, records) for key, paper in papers.items()}
    return [_judge(claim, names[claim.paper]) for claim in claims]


def _names(paper: Paper, records: dict[tuple[str, str, str], RunRecord]) -> dict[str, Any]:
    """experiment -> run -> the run's summary as a Node, for the claim expressions."""
    names: dict[str, Any] = {}
    for experiment in paper.experiments.values():
        runs = {}
        for run in experiment.runs:
            record = records.get((paper.key, experiment.name, run))
            if record is None:
                continue
            tables = functools.partial(Results.load, record.folder) if record.folder else None
            runs[run] = Node(record.summary, f"{experiment.name}.{run}", tables)
        names[experiment.name] = runs
    return names


def _judge(claim: Claim, names: dict[str, Any]) -> Verdict:
    try:
        ours = evaluate(claim.ours, names)
        if isinstance(ours, bool) or not isinstance(ours, int | float):
            raise Missing(f"{claim.ours_text} is not a number")
        ours = float(ours)
        holds = check(claim.holds, {"ours": ours, "paper": claim.paper_value})
    except Missing as missing:
        return Verdict(claim, None, "missing", f"no value: {missing}")
    if not holds and claim.known_deviation:
        return Verdict(claim, ours, "differs", claim.known_deviation)
    if not holds:
        return Verdict(claim, ours, "FAILS", f"expected {claim.holds_text}")
    if claim.paper_value is None:
        return Verdict(claim, ours, "holds", claim.holds_text)
    if claim.close is not None and abs(ours / claim.paper_value - 1) <= claim.close:
        return Verdict(claim, ours, "matches", f"within {claim.close:.0%} of the paper")
    return Verdict(claim, ours, "deviates", claim.explain or "no explanation recorded")


def passed(verdicts: Sequence[Verdict]) -> bool:
    return all(v.status in PASSING for v in verdicts)
