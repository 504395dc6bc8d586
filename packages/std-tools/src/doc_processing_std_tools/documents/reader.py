"""What a document format is: the `Reader` protocol that each format implements, the
small types its four methods share, and `DocumentFormat`, which each format module
declares: its name, file name suffixes, content check and reader.

Each of the four tools (`api`) opens and checks the document against the one table of
formats (`source.open_source` with `formats.FORMATS`), takes that format's reader, and
calls one of its methods: `overview`, `read`, `tables` or `search`. A reader parses its format and
knows its units (pages, sheets, rows, sections, lines); the tool does the rest that is
the same for every format: the output limit, the markers, the JSON answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Literal, Protocol

from .render import Chunk, Table, table_to_csv, table_to_markdown
from .source import Format, Source

__all__ = [
    "ContentCheck",
    "DocumentFormat",
    "Matcher",
    "Part",
    "Reader",
    "TableBounds",
    "TableFormat",
    "Tables",
    "table_chunks",
    "table_entry",
]

TableFormat = Literal["markdown", "csv", "json"]
Matcher = Callable[[str], bool]
"""Whether a line or cell of text is a match."""


@dataclass(frozen=True, slots=True)
class Part:
    """The part of a document that one call reads: the checked, open `source`, the
    caller's `pages` selection (not yet parsed: the reader knows its units), and the
    `stack` on which a reader keeps what it opens for the call (a PDF, a workbook), closed
    when the call ends."""

    source: Source
    pages: str
    stack: ExitStack


@dataclass
class TableBounds:
    """The time bounds of one table extraction and, once it has run, the pages they cut."""

    page_seconds: float
    """Seconds table detection may spend on one page."""
    call_seconds: float
    """Seconds table detection may spend in the whole call."""
    slow_pages: list[int] = field(default_factory=list)
    """Pages given up on because they alone took longer than `page_seconds`."""
    unread_pages: list[int] = field(default_factory=list)
    """Pages given up on, or never started, because the call's time ran out."""


@dataclass
class Tables:
    """What a reader found for `extract_tables`."""

    chunks: Iterator[Chunk] = field(default_factory=lambda: iter(()))
    """The tables, rendered, each with the `pages` value that reads on from it."""
    note: str = ""
    """A closing note of the reader's own (what it did not look at, and how to)."""
    room: int = 0
    """Characters to keep free for notes that are only known once the tables are read."""
    answer: str = ""
    """The whole answer when the format has no tables at all (nothing else is read)."""


class Reader(Protocol):
    """A format's reader. Every method reads the document through `Source.file` (or the
    descriptor), never by name, and raises `DocumentError` (or lets the tool turn a
    library's failure into one) for a damaged file."""

    def overview(self, source: Source) -> dict[str, object]:
        """The format's facts for `get_file_overview`: counts, metadata, outline, preview.
        Bounded work: a large document is looked at through its first parts only."""
        ...

    def read(self, part: Part) -> Iterator[Chunk]:
        """The selected units as Markdown chunks, drawn lazily, in document order."""
        ...

    def tables(self, part: Part, style: TableFormat, bounds: TableBounds) -> Tables:
        """The tables of the selected units, rendered in `style`; `bounds` limits the time
        spent detecting tables (where detection is slow) and records what it cut."""
        ...

    def search(self, part: Part, match: Matcher, no_text: list[int]) -> Iterator[dict[str, object]]:
        """The lines or cells of the selected units that `match`, each a dict with the
        place fields of the format and ``text``. Units that hold no text at all (a
        scanned page) are appended to `no_text`."""
        ...


ContentCheck = Callable[[Source, bytes, float], None]
"""A format's content check: the checked `Source`, its first bytes and the call's
DPTTOOLS_DOC_MAX_UNPACKED_MB; raises `DocumentError` (or a subclass) when the content
does not match the format."""


def _no_check(source: Source, head: bytes, max_unpacked_mb: float) -> None:
    """The content check of a format that any bytes may be (a text format)."""


@dataclass(frozen=True, slots=True)
class DocumentFormat:
    """One format the document tools read, as its module declares it; `formats.FORMATS`
    lists them all (a `source.FormatRules`).

    Attributes:
        name: the format's name (``Source.format``; upper-cased in messages).
        label: its name in the list of formats read (``PDF``, ``plain text``).
        suffixes: the file name suffixes read as this format (lower case, with the dot).
        reader: the format's `Reader`.
        content_check: raises when the content does not match the format.
        looks_like: whether the first bytes of a file with an unknown suffix are of this
            format (None: such a file is never taken for it).
        saved_from: suffixes of formats the tools do not read that can be saved as this
            one; such a file is refused with that advice.
    """

    name: Format
    label: str
    suffixes: tuple[str, ...]
    reader: Reader
    content_check: ContentCheck = _no_check
    looks_like: Callable[[bytes], bool] | None = None
    saved_from: tuple[str, ...] = ()

    def sniff(self, head: bytes) -> bool:
        """Whether a file of an unknown suffix that starts with `head` is of this format."""
        return self.looks_like is not None and self.looks_like(head)

    def check(self, source: Source, head: bytes, max_unpacked_mb: float) -> None:
        """Run the format's content check on the open `source`."""
        self.content_check(source, head, max_unpacked_mb)


def table_entry(number: int, table: Table) -> dict[str, object]:
    """A table's JSON form: its number, where it is, what the reader knows of it (page,
    box, method, ...), its rows, and its spanning cells."""
    entry: dict[str, object] = {"table": number, "where": table.where.split(",", 1)[0]}
    entry.update(table.facts)
    entry["rows"] = table.rows
    entry["spans"] = [
        {"row": s.row, "column": s.column, "rows": s.rows, "columns": s.columns}
        for s in table.spans
    ]
    return entry


def table_chunks(tables: Iterator[Table], style: TableFormat) -> Iterator[Chunk]:
    """Found tables, numbered and labelled with where they are, in `style`: Markdown or
    CSV with the spanning cells named in the label (their text is in the cell's first
    position, the rest is left empty), or one JSON object per line."""
    for number, table in enumerate(tables, start=1):
        spans = table.spans_note()
        label = table.where + (f"; spanning cells flattened: {spans}" if spans else "")
        if style == "json":
            text = json.dumps(table_entry(number, table), ensure_ascii=False) + "\n"
        elif style == "csv":
            text = f"Table {number} ({label}):\n{table_to_csv(table.rows)}\n"
        else:
            text = f"### Table {number} ({label})\n\n{table_to_markdown(table.rows)}\n\n"
        yield Chunk(table.restart, text)
