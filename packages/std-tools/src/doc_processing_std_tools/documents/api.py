"""The four document tools as plain functions: workspace and path in, text out."""

from __future__ import annotations

import contextlib
import json
import logging
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from typing import TypeVar

from .._text import fit_json
from ..config import Settings, get_settings
from ..errors import DocumentError, InvalidArgumentError
from ..filesystem.bounded_regex import BoundedRegex
from ..workspace import Workspace
from .formats import FORMATS, reader_for
from .pdf import PDF_TABLE_PAGES
from .reader import Part, TableBounds, TableFormat
from .render import Chunk, assemble
from .selection import spans
from .source import Source, open_source

__all__ = [
    "MAX_SEARCH_RESULTS",
    "PDF_TABLE_PAGES",
    "TableFormat",
    "extract_tables",
    "get_file_overview",
    "read_document",
    "search_document",
]

#: Upper bound of `search_document`'s `max_results`.
MAX_SEARCH_RESULTS = 500
_MATCH_CHARS = 300
_OVERVIEW_HINT = "read_document reads the document itself, part by part with pages."
_SEARCH_HINT = "Pass pages or a smaller max_results to see every match of a part."

logger = logging.getLogger(__name__)
T = TypeVar("T")


def _settings(settings: Settings | None) -> Settings:
    """The settings of the call: those passed (a document worker passes the caller's), or
    the process's current settings for a direct call."""
    return settings if settings is not None else get_settings()


@contextmanager
def _opened(ws: Workspace, path: str, settings: Settings | None) -> Iterator[Source]:
    """`open_source` under the call's settings, with a library's failure on a damaged
    file turned into a `DocumentError` (see `_reading`)."""
    bound = _settings(settings).doc_max_unpacked_mb
    opened = open_source(ws, path, formats=FORMATS, max_unpacked_mb=bound)
    with opened as source, _reading(source):
        yield source


@contextmanager
def _reading(source: Source) -> Iterator[None]:
    """Turn a format library's failure on a damaged file into a `DocumentError`.

    The libraries report broken content with generic exceptions (XML syntax errors, bad
    ZIP members, missing keys); the traceback goes to the log, the gist to the caller.
    """
    try:
        yield
    except (SyntaxError, ValueError, LookupError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        logger.warning("Reading %s failed", source.path, exc_info=True)
        detail = " ".join(str(exc).split())[:200]
        raise DocumentError(
            f"{source.name!r} could not be read as {source.format.upper()}: the file looks "
            f"damaged ({type(exc).__name__}: {detail})."
        ) from None


@contextmanager
def _closed_after(items: Iterator[T]) -> Iterator[Iterator[T]]:
    """`items`, closed (when it is a generator) as soon as the block ends.

    A reader's generator may be suspended inside the document it reads; closing it here,
    before the document it was given is closed, ends it even when the block stops early
    or fails.
    """
    try:
        yield items
    finally:
        close = getattr(items, "close", None)
        if callable(close):
            close()


def get_file_overview(ws: Workspace, path: str, *, settings: Settings | None = None) -> str:
    """JSON: format, size, the file's modification time, page/sheet/section count,
    metadata, outline and a preview.

    Bounded work: a PDF is looked at through its first `pdf.OVERVIEW_PAGES` pages, an
    XLSX through the used ranges its sheets record and the first rows of one sheet.
    """
    with _opened(ws, path, settings) as source:
        modified = datetime.fromtimestamp(source.modified, UTC)
        result: dict[str, object] = {
            "path": source.name,
            "format": source.format,
            "size_bytes": source.size,
            # Every format has this date, also those that carry no metadata of their own.
            "file_modified": modified.isoformat(timespec="seconds"),
        }
        result.update(reader_for(source).overview(source))
        return fit_json(result, ws.output_limit, hint=_OVERVIEW_HINT)


def read_document(
    ws: Workspace, path: str, pages: str = "", *, settings: Settings | None = None
) -> str:
    """The document, or the selected part of it, as Markdown.

    `pages` selects pages (PDF), sheets (XLSX: numbers or names, optionally `!rows`),
    sections (DOCX, HTML, Markdown: as numbered in the overview's outline), data rows
    (CSV) or lines (text). Output stops at the output limit with a marker naming the
    `pages` value that reads on. A PDF or XLSX is opened once and read while the call
    runs; a file that cannot be opened is refused before `pages` is checked.
    """
    with _opened(ws, path, settings) as source, ExitStack() as stack:
        chunks = reader_for(source).read(Part(source, pages, stack))
        with _closed_after(chunks) as drawn:
            return assemble(
                drawn,
                ws.output_limit,
                hint=lambda restart: f'call read_document with pages="{restart}" to read on',
            )


def _pages_word(numbers: list[int]) -> str:
    return f"{'pages' if len(numbers) > 1 else 'page'} {spans(numbers)}"


def _cut_note(bounds: TableBounds) -> str:
    """What the time bounds of `extract_tables` cut, and how to get it; "" if nothing."""
    parts: list[str] = []
    if bounds.slow_pages:
        whose = "its" if len(bounds.slow_pages) == 1 else "each one's"
        parts.append(
            f"{_pages_word(bounds.slow_pages)} ({whose} table detection took longer than "
            f"DPTTOOLS_TABLE_PAGE_SECONDS={bounds.page_seconds:g} s)"
        )
    if bounds.unread_pages:
        parts.append(
            f"{_pages_word(bounds.unread_pages)} (the call's "
            f"DPTTOOLS_TABLE_CALL_SECONDS={bounds.call_seconds:g} s ran out)"
        )
    if not parts:
        return ""
    if bounds.unread_pages:
        advice = (
            f'call extract_tables with pages="{spans(bounds.unread_pages)}" to go on, or '
            f"raise {'those settings' if bounds.slow_pages else 'that setting'}"
        )
    else:
        advice = "raise that setting to extract them"
    return f"[tables not extracted: {'; '.join(parts)}; {advice}]"


def _json_tables(
    source: Source, chunks: Iterator[Chunk], limit: int, notes: Callable[[], list[str]]
) -> str:
    """The tables (one JSON object per chunk) as one JSON answer within `limit`: as many
    whole tables as fit, and where to read on."""
    tables: list[object] = []
    used = 200
    truncated = ""
    for chunk in chunks:
        if tables and used + len(chunk.text) > limit:
            truncated = (
                f"more tables follow; call extract_tables with pages="
                f'"{chunk.restart}" and format="json" to read on'
            )
            break
        used += len(chunk.text)
        tables.append(json.loads(chunk.text))
    payload: dict[str, object] = {"path": source.name, "count": len(tables), "tables": tables}
    said = notes()
    if said:
        payload["notes"] = said
    if truncated:
        payload["truncated"] = truncated
    return fit_json(payload, limit, hint="Pass pages to see fewer tables at a time.")


def extract_tables(
    ws: Workspace,
    path: str,
    pages: str = "",
    format: str = "markdown",
    *,
    settings: Settings | None = None,
) -> str:
    """The document's tables as Markdown, CSV or JSON, each labelled with where it was
    found.

    `pages` selects pages, sheets or sections as for `read_document`. A sheet (XLSX) or
    the whole file (CSV) counts as one table (and has no JSON form). A PDF's tables carry
    their page, box, the method that found them and a confidence; their spanning cells
    are listed. Without `pages`, a PDF is searched for tables on its first
    `PDF_TABLE_PAGES` pages only, and the output says which `pages` value continues.
    Table finding on a PDF is bounded in time per page (DPTTOOLS_TABLE_PAGE_SECONDS) and
    per call (DPTTOOLS_TABLE_CALL_SECONDS); the output names the pages those bounds cut.
    """
    if format not in ("markdown", "csv", "json"):
        raise InvalidArgumentError(f"format must be 'markdown', 'csv' or 'json', not {format!r}.")
    style: TableFormat = "csv" if format == "csv" else "json" if format == "json" else "markdown"
    current = _settings(settings)
    bounds = TableBounds(current.table_page_seconds, current.table_call_seconds)
    with _opened(ws, path, settings) as source, ExitStack() as stack:
        found = reader_for(source).tables(Part(source, pages, stack), style, bounds)
        if style == "json":
            if found.answer:
                return fit_json(
                    {"path": source.name, "count": 0, "tables": [], "notes": [found.answer]},
                    ws.output_limit,
                )
            with _closed_after(found.chunks) as drawn:
                return _json_tables(
                    source,
                    drawn,
                    max(ws.output_limit - found.room - len(found.note), 0),
                    lambda: [n for n in (_cut_note(bounds), found.note) if n],
                )
        if found.answer:
            return found.answer
        with _closed_after(found.chunks) as drawn:
            text = assemble(
                drawn,
                max(ws.output_limit - found.room - len(found.note) - 2, 0),
                hint=lambda restart: f'call extract_tables with pages="{restart}" to read on',
            )
        if not text:
            where = f" in the selected part ({pages})" if pages.strip() else ""
            text = f"No tables were found in {source.name}{where}."
        notes = [n for n in (_cut_note(bounds), found.note) if n]
        return "\n\n".join([text.rstrip(), *notes]) if notes else text


def _plain_matcher(query: str, ignore_case: bool) -> Callable[[str], bool]:
    if ignore_case:
        folded = query.casefold()
        return lambda text: folded in text.casefold()
    return lambda text: query in text


def _every(_text: str) -> bool:
    """The matcher that keeps every candidate, for regular expressions matched later."""
    return True


def search_document(
    ws: Workspace,
    path: str,
    query: str,
    pages: str = "",
    regex: bool = False,
    ignore_case: bool = True,
    max_results: int = 50,
    *,
    settings: Settings | None = None,
) -> str:
    """JSON list of the matches and where they are: page and line (PDF), sheet and cell
    (XLSX), row and column (CSV), section and heading (DOCX, HTML, Markdown) or line
    (text). A regular expression that takes longer than `MATCH_SECONDS` on a batch of
    lines is stopped and refused."""
    if not 1 <= max_results <= MAX_SEARCH_RESULTS:
        raise InvalidArgumentError(
            f"max_results must be between 1 and {MAX_SEARCH_RESULTS}, not {max_results}."
        )
    if not query.strip():
        raise InvalidArgumentError("query is empty; pass the text to look for.")
    # A regular expression is matched in a child process under a time bound, so the
    # readers hand over every line or cell and the bounded matcher filters them.
    bounded = BoundedRegex(query, ignore_case=ignore_case, what="query") if regex else None
    match = _every if bounded else _plain_matcher(query, ignore_case)
    with (
        _opened(ws, path, settings) as source,
        bounded or contextlib.nullcontext(),
        ExitStack() as stack,
    ):
        no_text: list[int] = []
        found = reader_for(source).search(Part(source, pages, stack), match, no_text)
        if bounded is not None:
            found = bounded.filter(found, lambda item: str(item["text"]))
        matches: list[dict[str, object]] = []
        stopped = False
        with _closed_after(found) as items:
            for item in items:
                if len(matches) == max_results:
                    stopped = True
                    break
                text = str(item["text"])
                if len(text) > _MATCH_CHARS:
                    item["text"] = text[:_MATCH_CHARS] + "…"
                matches.append(item)
        payload: dict[str, object] = {
            "path": source.name,
            "query": query,
            "count": len(matches),
            "matches": matches,
        }
        if stopped:
            payload["stopped"] = f"more matches exist; only the first {max_results} are listed"
        if no_text:
            payload["pages_without_text"] = no_text
            payload["note"] = (
                "some pages have no text layer (probably scanned images); their text cannot be "
                "searched without OCR"
            )
        return fit_json(payload, ws.output_limit, hint=_SEARCH_HINT)
