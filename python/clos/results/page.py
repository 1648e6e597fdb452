"""Pieces of the static HTML pages `clos report` and `clos compare` write.

The pages are self-contained apart from their PNGs, which they reference by paths relative to the
page, so a page and its `plots/` folder can be copied, zipped or served as they are. No script:
a page must read the same in a browser, a mail attachment or a CI artefact viewer.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Plot:
    """One figure of a page: its PNG (none when drawn without a path), or why it was skipped
    (no file then); `figure` is the matplotlib Figure itself, for a notebook."""

    title: str
    caption: str
    file: Path | None = None
    skipped: str | None = None
    figure: Any = None


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 75em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { padding: 0.2em 0.8em; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.section { font-weight: bold; }
figure { margin: 1em 0 2em; }
figure img { max-width: 100%; }
figcaption, .note { color: #555; font-size: 0.9em; }
.skipped { color: #a60; }
"""


def document(title: str, body: Iterable[str]) -> str:
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def heading(text: str, level: int = 2) -> str:
    return f"<h{level}>{escape(text)}</h{level}>"


def paragraph(text: str, css: str | None = None) -> str:
    attribute = f' class="{css}"' if css else ""
    return f"<p{attribute}>{escape(text)}</p>"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], sections: bool = False) -> str:
    """A table of already formatted cells; with `sections`, the first column names row groups."""
    lines = ["<table>", "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>"]
    for row in rows:
        cells = [
            f'<td class="section">{escape(cell)}</td>'
            if sections and i == 0
            else f"<td>{escape(cell)}</td>"
            for i, cell in enumerate(row)
        ]
        lines.append("<tr>" + "".join(cells) + "</tr>")
    lines.append("</table>")
    return "\n".join(lines)


def figure(plot: Plot, page: Path) -> str:
    """The plot's image and caption, or a note that it was skipped and why."""
    if plot.file is None:
        return paragraph(f"{plot.title}: not plotted, {plot.skipped}.", "skipped")
    source = Path(os.path.relpath(plot.file, page.parent)).as_posix()
    return (
        f"<figure>\n<h3>{escape(plot.title)}</h3>\n"
        f'<img src="{escape(source)}" alt="{escape(plot.title)}">\n'
        f"<figcaption>{escape(plot.caption)}</figcaption>\n</figure>"
    )


def html_path(out: Path, default_name: str) -> Path:
    """`out` names the page itself if it ends in .html, else the folder to write it into."""
    return out if out.suffix.lower() == ".html" else out / default_name
