"""The four document tools as plain functions: workspace and path in, text out."""

from __future__ import annotations

import contextlib
import logging
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from typing import Literal, TypeVar

from .._text import fit_json
from ..config import get_settings
from ..errors import DocumentError, InvalidArgumentError
from ..filesystem.bounded_regex import BoundedRegex
from ..workspace import Workspace
from . import flow, pdf, sheets
from .flow import FlowDocument
from .markup import load_html, load_markdown
from .render import Chunk, Table, assemble, table_to_csv, table_to_markdown
from .selection import parse_ranges
from .source import Source, decode_text, open_source

__all__ = [
    "MAX_SEARCH_RESULTS",
    "PDF_TABLE_PAGES",
    "TableFormat",
    "extract_tables",
    "get_file_overview",
    "read_document",
    "search_document",
]

TableFormat = Literal["markdown", "csv"]
#: Upper bound of `search_document`'s `max_results`.
MAX_SEARCH_RESULTS = 500
#: Pages of a PDF that `extract_tables` looks at when no `pages` are given.
PDF_TABLE_PAGES = 50
_MATCH_CHARS = 300
_PREVIEW_CHARS = 500
_OVERVIEW_HINT = "read_document reads the document itself, part by part with pages."
_SEARCH_HINT = "Pass pages or a smaller max_results to see every match of a part."

logger = logging.getLogger(__name__)
T = TypeVar("T")


def _flow(source: Source) -> tuple[FlowDocument, str | None]:
    if source.format == "docx":
        from . import word

        return word.load(source), None
    text, encoding = decode_text(source)
    loader = load_html if source.format == "html" else load_markdown
    return loader(text), encoding


def _lines(source: Source) -> tuple[list[str], str]:
    text, encoding = decode_text(source)
    return text.splitlines(), encoding


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


def get_file_overview(ws: Workspace, path: str) -> str:
    """JSON: format, size, the file's modification time, page/sheet/section count,
    metadata, outline and a preview.

    Bounded work: a PDF is looked at through its first `pdf.OVERVIEW_PAGES` pages, an
    XLSX through the used ranges its sheets record and the first rows of one sheet.
    """
    with open_source(ws, path) as source, _reading(source):
        modified = datetime.fromtimestamp(source.modified, UTC)
        result: dict[str, object] = {
            "path": source.name,
            "format": source.format,
            "size_bytes": source.size,
            # Every format has this date, also those that carry no metadata of their own.
            "file_modified": modified.isoformat(timespec="seconds"),
        }
        if source.format == "pdf":
            result.update(pdf.overview(source))
        elif source.format == "xlsx":
            result.update(sheets.xlsx_overview(source))
        elif source.format == "csv":
            result.update(sheets.csv_overview(sheets.load_csv(source)))
        elif source.format == "text":
            lines, encoding = _lines(source)
            body = "\n".join(lines)
            result.update(
                {
                    "line_count": len(lines),
                    "word_count": len(body.split()),
                    "character_count": len(body),
                    "encoding": encoding,
                    "preview": body[:_PREVIEW_CHARS],
                }
            )
        else:
            document, flow_encoding = _flow(source)
            result.update(flow.overview(document))
            if flow_encoding:
                result["encoding"] = flow_encoding
        return fit_json(result, ws.output_limit, hint=_OVERVIEW_HINT)


def _units(source: Source, pages: str, stack: ExitStack) -> Iterator[Chunk]:
    """The content `pages` selects, as chunks (pages, sheets, rows, lines or sections).

    A PDF or XLSX is opened once, on `stack`, and read from while `stack` is open; a
    file that cannot be opened is refused before `pages` is checked.
    """
    if source.format == "pdf":
        document = stack.enter_context(pdf.opened(source))
        return pdf.read(document, parse_ranges(pages, len(document), "page"))
    if source.format == "xlsx":
        book = stack.enter_context(sheets.workbook(source))
        selection = sheets.parse_sheets(pages, sheets.sheet_names(book))
        return sheets.xlsx_rows(book, selection, with_comments=True)
    if source.format == "csv":
        table = sheets.load_csv(source)
        numbers = parse_ranges(pages, len(table.rows), "row")
        return sheets.csv_rows(table, numbers)
    if source.format == "text":
        lines, _ = _lines(source)
        numbers = parse_ranges(pages, len(lines), "line")
        return (Chunk(f"{n}-", lines[n - 1] + "\n") for n in numbers)
    document, _ = _flow(source)
    numbers = parse_ranges(pages, len(document.sections), "section")
    return flow.read(document, numbers)


def read_document(ws: Workspace, path: str, pages: str = "") -> str:
    """The document, or the selected part of it, as Markdown.

    `pages` selects pages (PDF), sheets (XLSX: numbers or names, optionally `!rows`),
    sections (DOCX, HTML, Markdown: as numbered in the overview's outline), data rows
    (CSV) or lines (text). Output stops at the output limit with a marker naming the
    `pages` value that reads on.
    """
    with open_source(ws, path) as source, _reading(source), ExitStack() as stack:
        chunks = _units(source, pages, stack)
        with _closed_after(chunks) as drawn:
            return assemble(
                drawn,
                ws.output_limit,
                hint=lambda restart: f'call read_document with pages="{restart}" to read on',
            )


def _table_chunks(tables: Iterator[Table], style: TableFormat) -> Iterator[Chunk]:
    for number, table in enumerate(tables, start=1):
        if style == "csv":
            text = f"Table {number} ({table.where}):\n{table_to_csv(table.rows)}\n"
        else:
            text = f"### Table {number} ({table.where})\n\n{table_to_markdown(table.rows)}\n\n"
        yield Chunk(table.restart, text)


def _spans(numbers: list[int]) -> str:
    """Page numbers as short ranges: [1, 2, 3, 7] -> "1-3,7"."""
    spans: list[str] = []
    first = last = numbers[0]
    for number in [*numbers[1:], 0]:
        if number == last + 1:
            last = number
            continue
        spans.append(f"{first}-{last}" if last > first else f"{first}")
        first = last = number
    return ",".join(spans)


def _pages_word(numbers: list[int]) -> str:
    return f"{'pages' if len(numbers) > 1 else 'page'} {_spans(numbers)}"


def _cut_note(bounds: pdf.TableBounds) -> str:
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
            f'call extract_tables with pages="{_spans(bounds.unread_pages)}" to go on, or '
            f"raise {'those settings' if bounds.slow_pages else 'that setting'}"
        )
    else:
        advice = "raise that setting to extract them"
    return f"[tables not extracted: {'; '.join(parts)}; {advice}]"


def extract_tables(ws: Workspace, path: str, pages: str = "", format: str = "markdown") -> str:
    """The document's tables as Markdown or CSV, each labelled with where it was found.

    `pages` selects pages, sheets or sections as for `read_document`. A sheet (XLSX) or
    the whole file (CSV) counts as one table. Without `pages`, a PDF is searched for
    tables on its first `PDF_TABLE_PAGES` pages only (table detection is slow), and the
    output says which `pages` value continues. Table detection on a PDF is bounded in
    time per page (DPTTOOLS_TABLE_PAGE_SECONDS) and per call
    (DPTTOOLS_TABLE_CALL_SECONDS); the output names the pages those bounds cut.
    """
    if format not in ("markdown", "csv"):
        raise InvalidArgumentError(f"format must be 'markdown' or 'csv', not {format!r}.")
    style: TableFormat = "csv" if format == "csv" else "markdown"
    with open_source(ws, path) as source, _reading(source), ExitStack() as stack:
        chunks: Iterator[Chunk]
        note = ""
        # Characters kept free for the cut note: it names at most every selected page
        # twice, in ranges, among a few hundred characters of words.
        cut_room = 0
        settings = get_settings()
        bounds = pdf.TableBounds(settings.table_page_seconds, settings.table_call_seconds)
        if source.format == "pdf":
            count = pdf.page_count(source)
            numbers = parse_ranges(pages, count, "page")
            if not pages.strip() and count > PDF_TABLE_PAGES:
                numbers = numbers[:PDF_TABLE_PAGES]
                note = (
                    f"[looked for tables on pages 1-{PDF_TABLE_PAGES} of {count}; call "
                    f'extract_tables with pages="{PDF_TABLE_PAGES + 1}-" for the rest]'
                )
            chunks = _table_chunks(pdf.tables(source, numbers, bounds), style)
            cut_room = 400 + 2 * len(_spans(numbers)) if numbers else 0
        elif source.format == "xlsx":
            book = stack.enter_context(sheets.workbook(source))
            selection = sheets.parse_sheets(pages, sheets.sheet_names(book))
            chunks = sheets.xlsx_rows(book, selection, style)
        elif source.format == "csv":
            table = sheets.load_csv(source)
            numbers = parse_ranges(pages, len(table.rows), "row")
            chunks = sheets.csv_rows(table, numbers, style)
        elif source.format == "text":
            return f"{source.name} is plain text, which has no tables."
        else:
            document, _ = _flow(source)
            numbers = parse_ranges(pages, len(document.sections), "section")
            chunks = _table_chunks(flow.tables(document, numbers), style)
        with _closed_after(chunks) as drawn:
            text = assemble(
                drawn,
                max(ws.output_limit - cut_room - len(note) - 2, 0),
                hint=lambda restart: f'call extract_tables with pages="{restart}" to read on',
            )
        if not text:
            where = f" in the selected part ({pages})" if pages.strip() else ""
            text = f"No tables were found in {source.name}{where}."
        notes = [n for n in (_cut_note(bounds), note) if n]
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
        open_source(ws, path) as source,
        _reading(source),
        bounded or contextlib.nullcontext(),
        ExitStack() as stack,
    ):
        found: Iterator[dict[str, object]]
        no_text: list[int] = []
        if source.format == "pdf":
            document = stack.enter_context(pdf.opened(source))
            numbers = parse_ranges(pages, len(document), "page")
            found = pdf.search(document, numbers, match, no_text)
        elif source.format == "xlsx":
            book = stack.enter_context(sheets.workbook(source))
            selection = sheets.parse_sheets(pages, sheets.sheet_names(book))
            found = sheets.xlsx_search(book, selection, match)
        elif source.format == "csv":
            table = sheets.load_csv(source)
            found = sheets.csv_search(table, parse_ranges(pages, len(table.rows), "row"), match)
        elif source.format == "text":
            lines, _ = _lines(source)
            found = (
                {"line": n, "text": lines[n - 1]}
                for n in parse_ranges(pages, len(lines), "line")
                if match(lines[n - 1])
            )
        else:
            document, _ = _flow(source)
            found = flow.search(
                document, parse_ranges(pages, len(document.sections), "section"), match
            )
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
