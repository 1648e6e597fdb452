"""`clos compare`: several saved runs side by side, as an HTML page and a terminal table.

Runs are labelled by their folder names, because that is what the user typed and what tells
`results/ecmp` from `results/vlb` even when both ran the same scenario. Two folders with the same
name (`a/ecmp`, `b/ecmp`) are told apart by their parent folder.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.table import Table

from clos.results import key_numbers, page
from clos.results.run_folder import SavedRun, is_sweep, load_run, sweep_runs

COMPARISON = "compare.html"
PLOTS = "plots"


def load_runs(dirs: Sequence[str | Path]) -> dict[str, SavedRun]:
    """The runs in `dirs`, in the order given, keyed by their labels. A sweep's folder stands
    for all of its runs, each labelled by its sweep and parameters."""
    folders = [Path(d) for d in dirs]
    plain = iter(run_labels([f for f in folders if not is_sweep(f)]))
    labelled: list[tuple[str, Path]] = []
    for folder in folders:
        if is_sweep(folder):
            sweep = folder.resolve().name or str(folder)
            labelled += [(f"{sweep}: {label}", run) for label, run in sweep_runs(folder)]
        else:
            labelled.append((next(plain), folder))
    return {label: load_run(run) for label, run in labelled}


def run_labels(folders: Sequence[Path]) -> list[str]:
    """Folder names, with the parent folder added where names repeat, then a number if still."""

    def name(folder: Path) -> str:
        return folder.resolve().name or str(folder)

    names = Counter(name(folder) for folder in folders)
    labels = [
        name(f) if names[name(f)] == 1 else f"{f.resolve().parent.name}/{name(f)}" for f in folders
    ]
    # The same folder given twice, or a/x/run and b/x/run: number the repeats rather than guess.
    seen: Counter[str] = Counter()
    unique = []
    for label in labels:
        seen[label] += 1
        unique.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return unique


def write_comparison(dirs: Sequence[str | Path], out: str | Path) -> Path:
    """Write the comparison of the runs in `dirs`; returns the HTML file's path.

    `out` is the HTML file if it ends in .html, else the folder for `compare.html`.
    """
    return write_runs(load_runs(dirs), out)


def write_runs(runs: Mapping[str, SavedRun], out: str | Path) -> Path:
    html = page.html_path(Path(out), COMPARISON)
    html.parent.mkdir(parents=True, exist_ok=True)
    html.write_text(render(runs, html), encoding="utf-8")
    return html


def render(runs: Mapping[str, SavedRun], html: Path) -> str:
    """The page's HTML; draws the plots into `plots/` beside `html` as a side effect."""
    from clos.results import plots  # matplotlib, an extra: the terminal table does without it

    folder = html.parent / PLOTS
    figures = [
        plots.fct_cdf(runs, folder / "fct_cdf.png"),
        plots.slowdown_by_bucket(runs, folder / "slowdown_by_bucket.png"),
        plots.goodput_over_time(runs, folder / "goodput_over_time.png"),
        plots.per_hop_queueing(runs, folder / "per_hop_queueing.png"),
    ]
    title = "clos comparison: " + ", ".join(runs)
    body = [
        page.heading(title, 1),
        page.table(
            ("run", "scenario", "folder"),
            ((label, run.name, str(run.folder)) for label, run in runs.items()),
        ),
        page.heading("Key numbers"),
        page.table(
            ("section", "quantity", *runs), key_numbers.rows(list(runs.values())), sections=True
        ),
        page.heading("Plots"),
        *(page.figure(plot, html) for plot in figures),
    ]
    return page.document(title, body)


def key_numbers_table(runs: Mapping[str, SavedRun]) -> Table:
    """The key numbers of each run, one column per run, for the terminal."""
    table = Table(title="comparison")
    table.add_column("section", style="bold")
    table.add_column("quantity")
    for label in runs:
        table.add_column(label, justify="right")
    for i, row in enumerate(key_numbers.rows(list(runs.values()))):
        if row[0] and i > 0:
            table.add_section()
        table.add_row(*row)
    return table
