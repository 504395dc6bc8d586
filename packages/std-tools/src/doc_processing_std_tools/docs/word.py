"""DOCX through python-docx: headings become sections, tables stay tables."""

from __future__ import annotations

import re
import zipfile
from typing import Any

from ..errors import DocumentError
from .flow import FlowBuilder, FlowDocument
from .source import Source, missing_extra

__all__ = ["load"]

_HEADING = re.compile(r"heading\s*(\d)", re.IGNORECASE)


def _open(source: Source) -> Any:
    try:
        import docx
        from docx.opc.exceptions import PackageNotFoundError
    except ImportError as exc:
        raise missing_extra("DOCX") from exc
    try:
        with source.file() as stream:
            return docx.Document(stream)
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise DocumentError(
            f"{source.name!r} could not be read as DOCX: the package is damaged or "
            f"incomplete ({type(exc).__name__})."
        ) from None


def _metadata(document: Any) -> dict[str, str]:
    props = document.core_properties
    found: dict[str, str] = {}
    for key, value in (
        ("title", props.title),
        ("author", props.author),
        ("subject", props.subject),
        ("keywords", props.keywords),
        ("last_modified_by", props.last_modified_by),
        ("created", props.created),
        ("modified", props.modified),
    ):
        if value:
            found[key] = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return found


def _style_name(paragraph: Any) -> str:
    style = paragraph.style
    return str(style.name) if style is not None and style.name else ""


def load(source: Source) -> FlowDocument:
    """The DOCX as sections: "Heading N" and "Title" styles start sections, list styles
    become bullet items, and tables are kept in reading order."""
    document = _open(source)
    from docx.table import Table as DocxTable

    builder = FlowBuilder()
    paragraphs = words = 0
    for item in document.iter_inner_content():
        if isinstance(item, DocxTable):
            builder.table([[cell.text.strip() for cell in row.cells] for row in item.rows])
            continue
        text = item.text.strip()
        if not text:
            continue
        style = _style_name(item)
        heading = _HEADING.match(style)
        if heading:
            builder.heading(int(heading.group(1)), text)
        elif style == "Title":
            builder.heading(1, text)
        else:
            paragraphs += 1
            words += len(text.split())
            builder.block(f"- {text}" if "List" in style else text)
    return builder.build(_metadata(document), paragraph_count=paragraphs, word_count=words)
