"""A titled text table in sections, drawn as rich draws its tables (`box.HEAVY_HEAD`): the run
table that `clos run` prints.

Why not rich itself: importing and rendering a rich table costs about 0.06 s of CPU, an eighth
of the B1 benchmark's whole simulation, and `clos run` of a short scenario is meant to cost
little more than the simulation (docs/performance.md, "`clos run` end to end"). The other
tables (`clos compare`, `clos bench`, sweeps) stay rich's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Justify = Literal["left", "right"]
BOLD, ITALIC, RESET = "\x1b[1m", "\x1b[3m", "\x1b[0m"


@dataclass
class BoxTable:
    title: str
    # (header, justification) per column; the first column is drawn bold.
    columns: list[tuple[str, Justify]]
    # Rows, with None where a section ends.
    rows: list[list[str] | None] = field(default_factory=list)

    def add_row(self, *cells: str) -> None:
        self.rows.append(list(cells))

    def add_section(self) -> None:
        self.rows.append(None)

    def render(self, styled: bool = False) -> str:
        """The table as lines of text; `styled` adds bold and italic as terminal escapes."""
        widths = [len(header) for header, _ in self.columns]
        for row in self.rows:
            for i, cell in enumerate(row or []):
                widths[i] = max(widths[i], len(cell))

        def rule(left: str, line: str, cross: str, right: str) -> str:
            return left + cross.join(line * (w + 2) for w in widths) + right

        def cells(edge: str, row: list[str], bold_first: bool, bold_all: bool = False) -> str:
            out = []
            for i, (cell, width, (_, justify)) in enumerate(
                zip(row, widths, self.columns, strict=True)
            ):
                text = cell.rjust(width) if justify == "right" else cell.ljust(width)
                if styled and cell and (bold_all or (bold_first and i == 0)):
                    text = text.replace(cell, f"{BOLD}{cell}{RESET}", 1)
                out.append(f" {text} ")
            return edge + edge.join(out) + edge

        total = sum(widths) + 3 * len(widths) + 1
        left = (total - len(self.title)) // 2
        right = total - len(self.title) - left
        title = f"{ITALIC}{self.title}{RESET}" if styled else self.title
        lines = [" " * left + title + " " * right]
        lines.append(rule("┏", "━", "┳", "┓"))
        lines.append(cells("┃", [header for header, _ in self.columns], False, bold_all=True))
        lines.append(rule("┡", "━", "╇", "┩"))
        body = self.rows[:-1] if self.rows and self.rows[-1] is None else self.rows
        for row in body:
            lines.append(rule("├", "─", "┼", "┤") if row is None else cells("│", row, True))
        lines.append(rule("└", "─", "┴", "┘"))
        return "\n".join(lines)
