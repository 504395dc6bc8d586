"""The one table from a document format to its reader.

A new format is a module with a class that implements `reader.Reader`, one line here,
and its file name suffixes in `source` (with the `Format` name they map to).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from . import word
from .flow import FlowDocument, FlowReader
from .markup import load_html, load_markdown
from .pdf import PdfReader
from .reader import Reader
from .sheets import CsvReader, XlsxReader
from .source import Format, Source, decode_text
from .text import TextReader

__all__ = ["READERS", "reader_for"]


def _docx(source: Source) -> tuple[FlowDocument, str | None]:
    return word.load(source), None


def _html(source: Source) -> tuple[FlowDocument, str | None]:
    text, encoding = decode_text(source)
    return load_html(text), encoding


def _markdown(source: Source) -> tuple[FlowDocument, str | None]:
    text, encoding = decode_text(source)
    return load_markdown(text), encoding


READERS: Final[Mapping[Format, Reader]] = {
    "pdf": PdfReader(),
    "docx": FlowReader(_docx),
    "xlsx": XlsxReader(),
    "csv": CsvReader(),
    "html": FlowReader(_html),
    "markdown": FlowReader(_markdown),
    "text": TextReader(),
}
"""Each format `source.open_source` can tell, and the reader of it."""


def reader_for(source: Source) -> Reader:
    """The reader of `source`'s format."""
    return READERS[source.format]
