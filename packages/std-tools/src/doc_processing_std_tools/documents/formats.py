"""The one table of the document formats: each format module declares its
`reader.DocumentFormat` (name, suffixes, content check, reader), and `FORMATS` lists them.

A new format is a module that declares its `DocumentFormat` (with a class implementing
`reader.Reader`) and one line in `FORMATS`. The order matters for a file whose suffix no
format claims: the formats are asked in this order whether its first bytes are theirs
(`DocumentFormat.looks_like`), so plain text, which takes anything without a NUL byte,
comes last.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from . import markup, pdf, sheets, text, word
from .reader import DocumentFormat, Reader
from .source import Format, Source

__all__ = ["FORMATS", "READERS", "reader_for"]

FORMATS: Final[tuple[DocumentFormat, ...]] = (
    pdf.FORMAT,
    word.FORMAT,
    sheets.XLSX,
    sheets.CSV,
    markup.HTML,
    markup.MARKDOWN,
    text.FORMAT,
)
"""Every format the document tools read, in the order `source.open_source` tries them."""

READERS: Final[Mapping[Format, Reader]] = {form.name: form.reader for form in FORMATS}
"""Each format's name, and its reader."""


def reader_for(source: Source) -> Reader:
    """The reader of `source`'s format."""
    return READERS[source.format]
