"""Tables as Markdown or CSV, and output assembled up to the output limit."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from .._text import truncate

__all__ = [
    "Chunk",
    "Span",
    "Table",
    "assemble",
    "cell_name",
    "markdown_row",
    "markdown_rule",
    "table_to_csv",
    "table_to_markdown",
]


@dataclass(frozen=True, slots=True)
class Span:
    """A cell that covers more than one grid position: its top-left row and column
    (from 0) and how many rows and columns it covers."""

    row: int
    column: int
    rows: int
    columns: int


def _column_name(index: int) -> str:
    name = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        name = chr(65 + rest) + name
    return name


def cell_name(row: int, column: int) -> str:
    """A grid position (from 0) as a spreadsheet names it: column letters, row number."""
    return f"{_column_name(column)}{row + 1}"


@dataclass(frozen=True, slots=True)
class Table:
    """A table found in a document: rows of cell texts, the first row being the header."""

    rows: list[list[str]]
    where: str
    """Where the table is, e.g. "page 3" or "section 2 (Totals)"."""
    restart: str
    """The `pages` value that reads on from this table's page or section, e.g. "3-"."""
    spans: tuple[Span, ...] = ()
    """Cells that cover several grid positions; their text is in the top-left position."""
    facts: tuple[tuple[str, object], ...] = ()
    """What the JSON form says of the table besides its rows: page, box, method, ..."""

    def spans_note(self) -> str:
        """The spanning cells, as ranges of grid positions ("B1:D1, A2:A3"), or ""."""
        names = []
        for s in self.spans:
            last = cell_name(s.row + s.rows - 1, s.column + s.columns - 1)
            names.append(f"{cell_name(s.row, s.column)}:{last}")
        return ", ".join(names)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of output that belongs to one unit (a page, a sheet's rows, a section)."""

    restart: str
    """The `pages` value that reads on from the start of this chunk, e.g. "4-"."""
    text: str


def _square(rows: Sequence[Sequence[str]]) -> list[list[str]]:
    width = max((len(r) for r in rows), default=0)
    return [list(r) + [""] * (width - len(r)) for r in rows]


def _md_cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def markdown_row(cells: Sequence[str]) -> str:
    """One row of a pipe table, with pipes escaped and whitespace collapsed."""
    return "| " + " | ".join(_md_cell(c) for c in cells) + " |"


def markdown_rule(width: int) -> str:
    """The line under a pipe table's header."""
    return "|" + "---|" * width


def table_to_markdown(rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-style pipe table; the first row is the header."""
    square = _square(rows)
    if not square or not square[0]:
        return ""
    lines = [markdown_row(square[0]), markdown_rule(len(square[0]))]
    lines.extend(markdown_row(row) for row in square[1:])
    return "\n".join(lines)


def table_to_csv(rows: Sequence[Sequence[str]]) -> str:
    """The rows as CSV text (comma-separated, quoted where needed, `\\n` line ends)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(_square(rows))
    return buffer.getvalue()


def assemble(chunks: Iterable[Chunk], limit: int, hint: Callable[[str], str]) -> str:
    """Join `chunks` until the output limit is passed, then cut with a marker.

    Chunks are drawn lazily, so a long document is read only as far as the output
    reaches. The marker carries `hint(restart)` for the chunk in which the cut falls, so
    the caller knows which `pages` value reads on without skipping anything.
    """
    parts: list[str] = []
    starts: list[tuple[int, str]] = []
    total = 0
    for chunk in chunks:
        starts.append((total, chunk.restart))
        parts.append(chunk.text)
        total += len(chunk.text)
        if total > limit:
            break
    text = "".join(parts)
    if len(text) <= limit:
        return text
    # The marker takes at most a few hundred characters from the end of the kept text.
    cut = max(limit - 300, 0)
    restart = next(r for start, r in reversed(starts) if start <= cut)
    return truncate(text, limit, hint=hint(restart))
