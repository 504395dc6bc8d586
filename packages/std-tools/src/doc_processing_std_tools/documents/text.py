"""Plain text: the `reader.Reader` of text files, whose units are lines."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .reader import DocumentFormat, Part, TableBounds, TableFormat, Tables
from .render import Chunk
from .selection import parse_ranges
from .source import Source, decode_text

__all__ = ["FORMAT", "TextReader"]

_PREVIEW_CHARS = 500


def _lines(source: Source) -> tuple[list[str], str]:
    text, encoding = decode_text(source)
    return text.splitlines(), encoding


class TextReader:
    """Lines of a text file, decoded as `source.decode_text` decodes them."""

    def overview(self, source: Source) -> dict[str, object]:
        """Line, word and character counts, the encoding and a preview."""
        lines, encoding = _lines(source)
        body = "\n".join(lines)
        return {
            "line_count": len(lines),
            "word_count": len(body.split()),
            "character_count": len(body),
            "encoding": encoding,
            "preview": body[:_PREVIEW_CHARS],
        }

    def read(self, part: Part) -> Iterator[Chunk]:
        """The selected lines."""
        lines, _ = _lines(part.source)
        numbers = parse_ranges(part.pages, len(lines), "line")
        return (Chunk(f"{n}-", lines[n - 1] + "\n") for n in numbers)

    def tables(self, part: Part, style: TableFormat, bounds: TableBounds) -> Tables:
        """None: plain text has no tables, and the answer says so."""
        return Tables(answer=f"{part.source.name} is plain text, which has no tables.")

    def search(
        self, part: Part, match: Callable[[str], bool], no_text: list[int]
    ) -> Iterator[dict[str, object]]:
        """The selected lines that match, with their line number."""
        lines, _ = _lines(part.source)
        return (
            {"line": n, "text": lines[n - 1]}
            for n in parse_ranges(part.pages, len(lines), "line")
            if match(lines[n - 1])
        )


def _is_text(head: bytes) -> bool:
    return b"\x00" not in head


FORMAT = DocumentFormat(
    "text", "plain text", (".txt", ".text", ".log", ".rst"), TextReader(), looks_like=_is_text
)
"""Plain text: by its suffix, or any file of an unknown suffix without a NUL byte (the
last format tried)."""
