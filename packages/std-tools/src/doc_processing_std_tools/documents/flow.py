"""Documents that flow from heading to heading (DOCX, HTML, Markdown) as sections.

Each reader feeds a `FlowBuilder`; the result is a list of sections, one per heading (plus
one for any text before the first heading), each holding its Markdown and its tables. The
four tools then work on sections the same way for every such format.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .reader import Tables, table_chunks
from .render import Chunk, Table, table_to_markdown
from .selection import parse_ranges

if TYPE_CHECKING:
    from .reader import Part, TableBounds, TableFormat
    from .source import Source

__all__ = [
    "FlowBuilder",
    "FlowDocument",
    "FlowReader",
    "Section",
    "overview",
    "read",
    "search",
    "tables",
]

_OUTLINE_MAX = 100
_PREVIEW_CHARS = 500


@dataclass
class Section:
    """The text from one heading to the next."""

    title: str
    """The heading's text; empty for the text before the first heading."""
    level: int
    """1-6 for a heading, 0 for the text before the first heading."""
    blocks: list[str] = field(default_factory=list)
    """Markdown blocks (paragraphs, lists, tables, code), in document order."""
    tables: list[list[list[str]]] = field(default_factory=list)

    @property
    def markdown(self) -> str:
        """The section as Markdown, starting with its heading."""
        head = [f"{'#' * self.level} {self.title}"] if self.level else []
        return "\n\n".join(head + self.blocks)


@dataclass
class FlowDocument:
    """A document split into sections, with its metadata and reader-specific counts."""

    metadata: dict[str, str]
    sections: list[Section]
    facts: dict[str, object] = field(default_factory=dict)
    """Extra counts for the overview, such as "paragraph_count"."""


class FlowBuilder:
    """Collects headings, paragraphs and tables into sections, in reading order."""

    def __init__(self) -> None:
        """Start with an empty section for text that comes before any heading."""
        self.sections: list[Section] = [Section(title="", level=0)]

    def heading(self, level: int, text: str) -> None:
        """Start a new section under this heading; a heading without text is ignored."""
        title = " ".join(text.split())
        if not title:
            return
        self.sections.append(Section(title=title, level=min(max(level, 1), 6)))

    def block(self, markdown: str) -> None:
        """Add a Markdown block (paragraph, list item, code) to the current section."""
        if markdown.strip():
            self.sections[-1].blocks.append(markdown.rstrip())

    def table(self, rows: list[list[str]]) -> None:
        """Add a table to the current section, as a Markdown block and as data."""
        rows = [r for r in rows if any(c.strip() for c in r)]
        if not rows:
            return
        self.sections[-1].tables.append(rows)
        self.sections[-1].blocks.append(table_to_markdown(rows))

    def build(self, metadata: dict[str, str], **facts: object) -> FlowDocument:
        """The finished document; an empty leading section is dropped."""
        sections = self.sections
        if not sections[0].blocks and len(sections) > 1:
            sections = sections[1:]
        return FlowDocument(metadata=metadata, sections=sections, facts=dict(facts))


def overview(document: FlowDocument) -> dict[str, object]:
    """Section count, headings outline, table count, metadata and a preview."""
    outline = [
        {
            "section": number,
            "level": section.level,
            "title": section.title or "(text before the first heading)",
        }
        for number, section in enumerate(document.sections, start=1)
    ]
    text = "\n\n".join(s.markdown for s in document.sections)
    result: dict[str, object] = {
        "section_count": len(document.sections),
        "metadata": document.metadata,
        **document.facts,
        "table_count": sum(len(s.tables) for s in document.sections),
        "outline": outline[:_OUTLINE_MAX],
    }
    if len(outline) > _OUTLINE_MAX:
        result["outline_more"] = len(outline) - _OUTLINE_MAX
    result["preview"] = text[:_PREVIEW_CHARS]
    return result


def read(document: FlowDocument, numbers: list[int]) -> Iterator[Chunk]:
    """The selected sections as Markdown."""
    for number in numbers:
        yield Chunk(restart=f"{number}-", text=document.sections[number - 1].markdown + "\n\n")


def tables(document: FlowDocument, numbers: list[int]) -> Iterator[Table]:
    """The tables of the selected sections."""
    for number in numbers:
        section = document.sections[number - 1]
        where = f"section {number}" + (f" ({section.title})" if section.title else "")
        for rows in section.tables:
            yield Table(rows=rows, where=where, restart=f"{number}-")


def search(
    document: FlowDocument, numbers: list[int], match: Callable[[str], bool]
) -> Iterator[dict[str, object]]:
    """Lines of the selected sections for which `match` is true, with their heading."""
    for number in numbers:
        section = document.sections[number - 1]
        for line in section.markdown.splitlines():
            if line.strip() and match(line):
                yield {"section": number, "heading": section.title, "text": line.strip()}


class FlowReader:
    """The `reader.Reader` of a format read into sections; `load` parses a source into a
    `FlowDocument` and names the text encoding it decoded (None for a binary format)."""

    def __init__(self, load: Callable[[Source], tuple[FlowDocument, str | None]]) -> None:
        self._load = load

    def _selected(self, part: Part) -> tuple[FlowDocument, list[int]]:
        document, _ = self._load(part.source)
        return document, parse_ranges(part.pages, len(document.sections), "section")

    def overview(self, source: Source) -> dict[str, object]:
        """`overview` of the document, with the encoding a text format was read in."""
        document, encoding = self._load(source)
        result = overview(document)
        if encoding:
            result["encoding"] = encoding
        return result

    def read(self, part: Part) -> Iterator[Chunk]:
        """The selected sections as Markdown."""
        return read(*self._selected(part))

    def tables(self, part: Part, style: TableFormat, bounds: TableBounds) -> Tables:
        """The tables of the selected sections (found instantly: `bounds` is not needed)."""
        return Tables(table_chunks(tables(*self._selected(part)), style))

    def search(
        self, part: Part, match: Callable[[str], bool], no_text: list[int]
    ) -> Iterator[dict[str, object]]:
        """Lines of the selected sections that match, with their heading."""
        document, numbers = self._selected(part)
        return search(document, numbers, match)
