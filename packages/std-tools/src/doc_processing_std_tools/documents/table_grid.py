"""A found table as a grid: column and row boundaries, the cells they make, spanning cells,
and the words that fill them. Both table finders (`ruled_tables`, `aligned_tables`) end
here: they decide where the boundaries are and which of them are really there, this module
turns that into rows of cell texts.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from .page_layout import TextLine, Word
from .render import Span

__all__ = ["FoundTable", "Method", "build_table", "drop_empty"]

Method = Literal["ruled", "aligned"]


@dataclass
class FoundTable:
    """A table found on a page, in the page's upright frame."""

    rows: list[list[str]]
    spans: list[Span]
    box: tuple[float, float, float, float]
    """x0, top, x1, bottom in the upright frame."""
    method: Method
    confidence: float
    columns: list[float] = field(default_factory=list)
    """The column boundaries, left to right (for matching a table continued over a page)."""


class Groups:
    """Union-find over the numbers 0 to size - 1 (grid positions, ruling lines); each
    group is named by its smallest member."""

    def __init__(self, size: int) -> None:
        self.parent = list(range(size))

    def find(self, item: int) -> int:
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def join(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _line_text(words: list[Word]) -> str:
    return " ".join(w.text for w in sorted(words, key=lambda w: w.x0))


def build_table(
    xs: list[float],
    ys: list[float],
    lines: list[TextLine],
    *,
    vertical: Callable[[int, int], bool],
    horizontal: Callable[[int, int], bool],
) -> tuple[list[list[str]], list[Span], list[list[list[Word]]]]:
    """Rows of cell texts, the spanning cells, and the words of each grid position.

    `xs` and `ys` are the sorted column and row boundaries (n + 1 for n columns). A word
    belongs to the grid position its centre lies in. `vertical(r, j)` says whether the
    boundary `xs[j]` (0 < j < columns) separates the positions of row `r`;
    `horizontal(i, c)` whether `ys[i]` separates the positions of column `c`. Positions
    not separated form one cell (made rectangular); its text is in its top-left position
    and the others are empty.
    """
    n_rows, n_cols = len(ys) - 1, len(xs) - 1
    placed: list[list[list[Word]]] = [[[] for _ in range(n_cols)] for _ in range(n_rows)]
    for line in lines:
        middle = (line.top + line.bottom) / 2
        row = bisect_right(ys, middle) - 1
        if not 0 <= row < n_rows:
            continue
        for word in line.words:
            column = bisect_right(xs, word.center) - 1
            if 0 <= column < n_cols:
                placed[row][column].append(word)
    groups = Groups(n_rows * n_cols)
    for r in range(n_rows):
        for j in range(1, n_cols):
            if not vertical(r, j):
                groups.join(r * n_cols + j - 1, r * n_cols + j)
    for i in range(1, n_rows):
        for c in range(n_cols):
            if not horizontal(i, c):
                groups.join((i - 1) * n_cols + c, i * n_cols + c)
    # Make every group a rectangle: join everything inside its bounding box, until stable.
    changed = any(groups.find(k) != k for k in range(n_rows * n_cols))
    while changed:
        changed = False
        extent: dict[int, list[int]] = {}
        for r in range(n_rows):
            for c in range(n_cols):
                root = groups.find(r * n_cols + c)
                box = extent.setdefault(root, [r, c, r, c])
                box[0], box[1] = min(box[0], r), min(box[1], c)
                box[2], box[3] = max(box[2], r), max(box[3], c)
        for root, (r0, c0, r1, c1) in extent.items():
            for r in range(r0, r1 + 1):
                for c in range(c0, c1 + 1):
                    if groups.find(r * n_cols + c) != groups.find(root):
                        groups.join(root, r * n_cols + c)
                        changed = True
    rows = [["" for _ in range(n_cols)] for _ in range(n_rows)]
    spans: list[Span] = []
    members: dict[int, list[tuple[int, int]]] = {}
    for r in range(n_rows):
        for c in range(n_cols):
            members.setdefault(groups.find(r * n_cols + c), []).append((r, c))
    for cells in members.values():
        r, c = cells[0]
        height = cells[-1][0] - r + 1
        width = max(m[1] for m in cells) - c + 1
        rows[r][c] = _cell_text([w for rr, cc in cells for w in placed[rr][cc]])
        if height > 1 or width > 1:
            spans.append(Span(r, c, height, width))
    spans.sort(key=lambda s: (s.row, s.column))
    return rows, spans, placed


def _cell_text(words: list[Word]) -> str:
    """The words of one cell, line by line, joined by spaces."""
    if not words:
        return ""
    ordered = sorted(words, key=lambda w: w.baseline)
    lines: list[list[Word]] = [[ordered[0]]]
    for word in ordered[1:]:
        if abs(word.baseline - lines[-1][0].baseline) <= word.size * 0.3:
            lines[-1].append(word)
        else:
            lines.append([word])
    return " ".join(_line_text(line) for line in lines)


def drop_empty(table: FoundTable) -> FoundTable:
    """The table without rows and columns that are empty and not part of a span."""
    spanned_rows = {r for s in table.spans for r in range(s.row, s.row + s.rows)}
    spanned_cols = {c for s in table.spans for c in range(s.column, s.column + s.columns)}
    keep_rows = [r for r, row in enumerate(table.rows) if any(row) or r in spanned_rows]
    width = len(table.rows[0]) if table.rows else 0
    keep_cols = [c for c in range(width) if any(row[c] for row in table.rows) or c in spanned_cols]
    if len(keep_rows) == len(table.rows) and len(keep_cols) == width:
        return table
    row_at = {r: i for i, r in enumerate(keep_rows)}
    col_at = {c: i for i, c in enumerate(keep_cols)}
    rows = [[table.rows[r][c] for c in keep_cols] for r in keep_rows]
    spans = []
    for s in table.spans:
        r_in = [row_at[r] for r in range(s.row, s.row + s.rows) if r in row_at]
        c_in = [col_at[c] for c in range(s.column, s.column + s.columns) if c in col_at]
        if r_in and c_in and (len(r_in) > 1 or len(c_in) > 1):
            spans.append(Span(r_in[0], c_in[0], len(r_in), len(c_in)))
    columns = table.columns
    if columns and len(columns) == width + 1:
        columns = [columns[c] for c in keep_cols] + [columns[-1]]
    return FoundTable(rows, spans, table.box, table.method, table.confidence, columns)
