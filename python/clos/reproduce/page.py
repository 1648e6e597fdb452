"""What `clos reproduce` writes: the verdicts as a terminal table, `claims.csv`, and an HTML
page with, per experiment, a bar plot of its runs (the quantity the paper's figure shows, one
bar per scheme) and, per claim, the paper's value beside ours."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from rich.table import Table
from rich.text import Text

from clos import extras
from clos.reproduce.experiments import Paper
from clos.reproduce.verdicts import Verdict
from clos.results import page
from clos.results.page import Plot
from clos.sweep.batch import RunRecord

STYLES = {
    "matches": "green",
    "holds": "green",
    "deviates": "yellow",
    "differs": "magenta",
    "FAILS": "bold red",
    "missing": "bold red",
}


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if value != 0 and (abs(value) >= 1e4 or abs(value) < 1e-3):
        return f"{value:.3g}"
    return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"


def verdict_rows(verdicts: Sequence[Verdict]) -> list[list[str]]:
    rows = []
    for v in verdicts:
        c = v.claim
        rows.append(
            [
                f"{c.paper}/{c.name}",
                c.section,
                c.paper_text or "-",
                _number(v.ours) + (f" {c.unit}" if c.unit and v.ours is not None else ""),
                _number(v.ratio),
                v.status,
                v.note,
            ]
        )
    return rows


HEADER = ["claim", "where", "paper", "ours", "ours/paper", "verdict", "note"]


def verdict_table(verdicts: Sequence[Verdict], title: str, width: int) -> Table:
    """The terminal table for a console `width` columns wide. The claim, the paper's value, ours,
    the ratio and the verdict always show in full; "where" shows if it fits, and the note takes
    what is left, cut to one line (claims.csv and reproduce.html have it in full). On a narrow
    terminal (80 columns in CI logs) the numbers stay readable and only the words give way."""
    rows = verdict_rows(verdicts)
    # Paper texts such as "1.6x (1.5x in Fig. 9)" are cut to this; the page has them whole.
    rows = [[*r[:2], _cut(r[2], 16), *r[3:]] for r in rows]
    widths = {name: max([len(name)] + [len(r[i]) for r in rows]) for i, name in enumerate(HEADER)}
    shown = ["claim", "paper", "ours", "ours/paper", "verdict"]
    # Each column costs its width plus 3 (padding and a border), and the table 1 more.
    used = 1 + sum(widths[c] + 3 for c in shown)
    if used > width:
        return _narrow_table(rows, verdicts, title)
    if used + widths["where"] + 3 + 13 <= width:
        shown.insert(1, "where")
        used += widths["where"] + 3
    if used + 13 <= width:
        shown.append("note")
    table = Table(title=title, show_lines=False)
    for name in shown:
        if name == "note":
            table.add_column(name, no_wrap=True, overflow="ellipsis", max_width=width - used - 3)
        else:
            table.add_column(name, no_wrap=True, min_width=widths[name])
    for row, v in zip(rows, verdicts, strict=True):
        cells: dict[str, str | Text] = dict(zip(HEADER, row, strict=True))
        cells["verdict"] = Text(v.status, style=STYLES.get(v.status, ""))
        table.add_row(*(cells[name] for name in shown))
    return table


def _narrow_table(rows: list[list[str]], verdicts: Sequence[Verdict], title: str) -> Table:
    """Too narrow for a column each: the verdict, the claim, and "ours vs paper (ratio)" wrapped."""
    table = Table(title=title, box=None, show_header=True, pad_edge=False)
    table.add_column("verdict", no_wrap=True)
    table.add_column("claim", no_wrap=True)
    table.add_column("ours vs paper (ours/paper)", overflow="fold")
    for row, v in zip(rows, verdicts, strict=True):
        ratio = f" ({row[4]})" if row[4] != "-" else ""
        table.add_row(
            Text(v.status, style=STYLES.get(v.status, "")), row[0], f"{row[3]} vs {row[2]}{ratio}"
        )
    return table


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def write_report(
    verdicts: Sequence[Verdict],
    papers: dict[str, Paper],
    records: dict[tuple[str, str, str], RunRecord],
    scale: str,
    out: Path,
) -> Path:
    """`<out>/claims.csv` and `<out>/reproduce.html` with its plots in `<out>/plots/`."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "claims.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(
            ["paper", "claim", "where", "paper_value", "ours", "ratio", "verdict", "note"]
        )
        for v in verdicts:
            writer.writerow(
                [
                    v.claim.paper,
                    v.claim.name,
                    v.claim.section,
                    v.claim.paper_value,
                    v.ours,
                    v.ratio,
                    v.status,
                    v.note,
                ]
            )
    html = out / "reproduce.html"
    body = [page.heading(f"clos reproduce: {scale} scale", 1)]
    body.append(page.table(HEADER, verdict_rows(verdicts)))
    shown = {(v.claim.paper, e) for v in verdicts for e in v.claim.experiments}
    if not extras.installed("plots"):
        shown = set()
        body.append(
            page.paragraph("No plots: they need matplotlib, pip install 'clos[plots]'.", "note")
        )
    for key, paper in papers.items():
        for name, experiment in paper.experiments.items():
            if (key, name) not in shown or experiment.plot is None:
                continue
            plot = _bars(paper, name, records, out / "plots" / f"{key}-{name}.png")
            body.append(page.figure(plot, html))
    html.write_text(page.document(f"clos reproduce ({scale})", body), encoding="utf-8")
    return html


def _bars(
    paper: Paper, name: str, records: dict[tuple[str, str, str], RunRecord], path: Path
) -> Plot:
    """One bar per run of the experiment, or with `plot.x` one line per series of runs: the
    quantity its `plot.key` names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    experiment = paper.experiments[name]
    assert experiment.plot is not None
    keys = experiment.plot["key"].split(".")
    label = experiment.plot.get("label", experiment.plot["key"])
    title = f"{paper.title.split(':')[0]}: {name}"
    runs, values = [], []
    for run in experiment.runs:
        record = records.get((paper.key, name, run))
        value: object = record.summary if record else None
        for k in keys:
            value = value.get(k) if isinstance(value, dict) else None
        if isinstance(value, int | float):
            runs.append(run)
            values.append(float(value))
    if not values:
        return Plot(title, label, skipped=f"no run produced {experiment.plot['key']}")
    figure, axes = plt.subplots(figsize=(6, 3.2))
    lines = _series(runs, values) if "x" in experiment.plot else None
    if lines:
        # Runs named SERIES_X: one line per series over X (the paper's curves, e.g. vs load).
        for series, points in lines.items():
            axes.plot(*zip(*sorted(points), strict=True), marker="o", label=series)
        axes.set_xlabel(experiment.plot["x"])
        axes.legend()
    else:
        axes.bar(runs, values, color="#4c72b0")
    axes.set_ylabel(label)
    axes.set_title(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    shape = "one line per series of runs" if lines else "one bar per run"
    return Plot(
        title,
        f"{label}, {shape} ({experiment.scenario.name if experiment.scenario else experiment.kind})",
        file=path,
    )


def _series(runs: list[str], values: list[float]) -> dict[str, list[tuple[float, float]]]:
    """Runs named `<series>_<number>` grouped into lines; empty if any run is not so named."""
    lines: dict[str, list[tuple[float, float]]] = {}
    for run, value in zip(runs, values, strict=True):
        series, _, x = run.rpartition("_")
        try:
            lines.setdefault(series, []).append((float(x), value))
        except ValueError:
            return {}
    return lines if all(lines) else {}
