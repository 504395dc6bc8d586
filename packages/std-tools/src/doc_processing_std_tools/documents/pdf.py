"""PDF through PDFium (pypdfium2): text, metadata, and the geometry tables are found in.

A page is read only when it is asked for, so an overview of a long PDF touches the first
few pages and the document catalog, not the whole file. Table finding (`pdf_tables`) runs
under a time bound per page and per call, as a page can hold many thousands of ruling
lines; `read_document` shows a page's tables as Markdown tables where they stand.
"""

from __future__ import annotations

import ctypes
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from ..errors import DocumentError, EncryptedDocumentError
from .pdf_tables import (
    PageTables,
    as_table,
    continues,
    might_hold_tables,
    page_tables,
    woven_text,
)
from .reader import DocumentFormat, Part, TableBounds, TableFormat, Tables, table_chunks
from .render import Chunk, Table
from .selection import parse_ranges, spans
from .source import Source, missing_extra
from .table_grid import FoundTable

__all__ = [
    "FORMAT",
    "OVERVIEW_PAGES",
    "PDF_TABLE_PAGES",
    "PdfReader",
    "TableBounds",
    "opened",
    "overview",
    "read",
    "search",
    "tables",
]

#: Pages of a PDF that `extract_tables` looks at when no `pages` are given.
PDF_TABLE_PAGES = 50
#: Pages whose first line and text layer an overview looks at.
OVERVIEW_PAGES = 20
_OUTLINE_MAX = 50
_PREVIEW_CHARS = 500
_SCANNED_NOTE = (
    "[page {n} has no text layer: it is probably a scanned image, and reading it needs OCR]"
)
_BLANK_NOTE = "[page {n} has no text]"
_DATE = re.compile(r"D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?")
#: Seconds `read_document` spends finding the tables of one page before it shows the
#: page as plain text.
READ_TABLE_SECONDS = 2.0
_SLOW_NOTE = (
    "[the tables of page {n} are shown as plain text: finding them took longer than "
    "{s:g} s; extract_tables with a larger DPTTOOLS_TABLE_PAGE_SECONDS finds them]"
)
T = TypeVar("T")


# PDFium is not thread-safe, and the SDK runs tools in worker threads: one user at a time.
_PDFIUM_LOCK = threading.RLock()


def _refusal(source: Source, pdfium: Any) -> DocumentError:
    """Why PDFium would not open the file.

    The error code of a refused load can be stale: PDFium keeps the last failure's code,
    and a document that loads but has no page sets none. So load once more through the
    raw API, which tells the two cases apart.
    """
    raw = pdfium.raw
    data = source.read_all()
    handle = raw.FPDF_LoadMemDocument(data, len(data), None)
    if handle:
        raw.FPDF_CloseDocument(handle)
        return DocumentError(f"{source.name!r} is a PDF without any page.")
    if raw.FPDF_GetLastError() in (raw.FPDF_ERR_PASSWORD, raw.FPDF_ERR_SECURITY):
        return EncryptedDocumentError(
            f"{source.name!r} is a password-protected PDF; its text cannot be read "
            "without the password. Save an unprotected copy and read that."
        )
    return _damaged(source, "PDFium reports a format error")


def _damaged(source: Source, detail: str) -> DocumentError:
    """The one message of a damaged PDF, whichever reader finds the damage."""
    return DocumentError(
        f"{source.name!r} could not be opened as a PDF: the file is damaged or "
        f"incomplete ({detail})."
    )


@contextmanager
def opened(source: Source) -> Iterator[Any]:
    """The PDF as a PDFium document (`len()` is its page count), open for the block and
    under PDFium's lock; pass it to `read` or `search`.

    An encrypted, damaged or page-less file is a `DocumentError` here, before any page is
    read; a page that cannot be loaded (a page tree that loops, say) is the same
    `DocumentError` when it is read inside the block.
    """
    try:
        import pypdfium2 as pdfium  # type: ignore[import-untyped]
    except ImportError as exc:
        raise missing_extra("PDF") from exc
    with _PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(source.file(), autoclose=True)
        except pdfium.PdfiumError:
            raise _refusal(source, pdfium) from None
        # Before any page is loaded: form field values are read through the form handle.
        document.init_forms()
        try:
            yield document
        except pdfium.PdfiumError as exc:
            raise _damaged(source, str(exc)) from None
        finally:
            document.close()


@dataclass(frozen=True, slots=True)
class _Page:
    """What one page holds: its text layer, whether it has images, and the text of its
    annotations (notes, comments, filled-in form fields), which is not in the text layer."""

    text: str
    has_images: bool
    annotations: list[str]

    @property
    def lines(self) -> list[str]:
        """The text's lines, then one line per annotation."""
        return [*self.text.splitlines(), *self.annotations]

    @property
    def markdown(self) -> str:
        """The text, then the annotations, one per line."""
        return "\n\n".join(part for part in (self.text, "\n".join(self.annotations)) if part)


def _read_utf16(function: Callable[..., int], *arguments: object) -> str:
    """A string PDFium hands out through a UTF-16 buffer: `function(*arguments, buffer,
    size)` returns the size it needs in bytes (with the final NUL)."""
    import pypdfium2.raw as raw  # type: ignore[import-untyped]

    size = function(*arguments, None, 0)
    if size <= 2:
        return ""
    buffer = ctypes.create_string_buffer(size)
    function(*arguments, ctypes.cast(buffer, ctypes.POINTER(raw.FPDF_WCHAR)), size)
    return buffer.raw[: size - 2].decode("utf-16-le", errors="replace").strip()


_ANNOTATION_WORDS = {
    "FPDF_ANNOT_TEXT": "note",
    "FPDF_ANNOT_FREETEXT": "text box",
    "FPDF_ANNOT_HIGHLIGHT": "comment on highlighted text",
    "FPDF_ANNOT_UNDERLINE": "comment on underlined text",
    "FPDF_ANNOT_SQUIGGLY": "comment on marked text",
    "FPDF_ANNOT_STRIKEOUT": "comment on struck-out text",
    "FPDF_ANNOT_STAMP": "stamp",
}


def _annotations(document: Any, page: Any) -> list[str]:
    """One line per annotation of `page` that carries text: ``[note: ...]``, ``[form field
    Name: value]``; links and pop-ups (a copy of their parent's text) are left out."""
    import pypdfium2.raw as raw

    words = {getattr(raw, name): word for name, word in _ANNOTATION_WORDS.items()}
    form = document.formenv.raw if document.formenv is not None else None
    lines: list[str] = []
    for index in range(raw.FPDFPage_GetAnnotCount(page.raw)):
        annotation = raw.FPDFPage_GetAnnot(page.raw, index)
        if not annotation:
            continue
        try:
            kind = raw.FPDFAnnot_GetSubtype(annotation)
            if kind in (raw.FPDF_ANNOT_POPUP, raw.FPDF_ANNOT_LINK):
                continue
            if kind == raw.FPDF_ANNOT_WIDGET:
                if form is None:
                    continue
                value = _read_utf16(raw.FPDFAnnot_GetFormFieldValue, form, annotation)
                name = _read_utf16(raw.FPDFAnnot_GetFormFieldName, form, annotation)
                if value:
                    lines.append(f"[form field {name or '(unnamed)'}: {value}]")
                continue
            contents = _read_utf16(raw.FPDFAnnot_GetStringValue, annotation, b"Contents")
            if contents:
                contents = " ".join(contents.split())
                lines.append(f"[{words.get(kind, 'annotation')}: {contents}]")
        finally:
            raw.FPDFPage_CloseAnnot(annotation)
    return lines


def _page_text(document: Any, index: int) -> _Page:
    """The page's text (with `\n` line ends), whether it holds images, and its annotations."""
    import pypdfium2 as pdfium

    try:
        page = document[index]
    except pdfium.PdfiumError:
        # Said with the page number; `opened` words it as a damaged file.
        raise pdfium.PdfiumError(f"PDFium could not load page {index + 1}") from None
    try:
        textpage = page.get_textpage()
        try:
            text = str(textpage.get_text_range())
        finally:
            textpage.close()
        text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
        has_images = False
        if not text:
            images = page.get_objects(filter=[pdfium.raw.FPDF_PAGEOBJ_IMAGE], max_depth=3)
            has_images = next(iter(images), None) is not None
        return _Page(text, has_images, _annotations(document, page))
    finally:
        page.close()


def _date(raw: str) -> str:
    match = _DATE.match(raw)
    if not match:
        return raw
    year, month, day, hour, minute, second = match.groups()
    date = f"{year}-{month or '01'}-{day or '01'}"
    return f"{date}T{hour}:{minute or '00'}:{second or '00'}" if hour else date


def _metadata(document: Any) -> dict[str, str]:
    names = {
        "Title": "title",
        "Author": "author",
        "Subject": "subject",
        "Keywords": "keywords",
        "Creator": "creator",
        "Producer": "producer",
        "CreationDate": "created",
        "ModDate": "modified",
    }
    found: dict[str, str] = {}
    for key, value in document.get_metadata_dict(skip_empty=True).items():
        if key in names and str(value).strip():
            text = str(value).strip()
            found[names[key]] = _date(text) if key.endswith("Date") else text
    return found


def _bookmarks(document: Any) -> list[dict[str, object]]:
    outline: list[dict[str, object]] = []
    for bookmark in document.get_toc(max_depth=4):
        if len(outline) >= _OUTLINE_MAX:
            break
        entry: dict[str, object] = {"level": bookmark.level + 1, "title": bookmark.get_title()}
        dest = bookmark.get_dest()
        index = dest.get_index() if dest is not None else None
        if index is not None:
            entry["page"] = index + 1
        outline.append(entry)
    return outline


def overview(source: Source) -> dict[str, object]:
    """Page count, metadata, outline (bookmarks, else first lines of the first pages),
    text-layer status and a preview; reads at most `OVERVIEW_PAGES` pages."""
    with opened(source) as document:
        count = len(document)
        sampled = min(count, OVERVIEW_PAGES)
        first_lines: list[dict[str, object]] = []
        no_text: list[int] = []
        scanned: list[int] = []
        preview = ""
        annotations = 0
        for index in range(sampled):
            page = _page_text(document, index)
            text, has_images = page.text, page.has_images
            annotations += len(page.annotations)
            if not text:
                no_text.append(index + 1)
                if has_images:
                    scanned.append(index + 1)
                continue
            first_lines.append({"page": index + 1, "first_line": text.splitlines()[0][:120]})
            if len(preview) < _PREVIEW_CHARS:
                preview = (preview + "\n\n" + text).strip()[:_PREVIEW_CHARS]
        result: dict[str, object] = {
            "page_count": count,
            "metadata": _metadata(document),
        }
        bookmarks = _bookmarks(document)
        if bookmarks:
            result["outline"] = bookmarks
        else:
            result["outline"] = first_lines
            result["outline_kind"] = "first line of each page"
        if sampled < count:
            result["pages_examined"] = sampled
        if annotations:
            # Read with the page they are on (they are not part of its text layer).
            result["annotations"] = annotations
    if len(no_text) == sampled:
        result["text_layer"] = (
            "none: the pages examined are scanned images without text; reading them needs OCR"
            if scanned
            else "none: the pages examined hold no text"
        )
    elif no_text:
        result["text_layer"] = "partial"
        result["pages_without_text"] = no_text
    else:
        result["text_layer"] = "present"
    result["preview"] = preview
    return result


def read(document: Any, pages: list[int]) -> Iterator[Chunk]:
    """Each selected page of `document` (from `opened`, and drawn inside its block) as
    Markdown under a `## Page N` heading, its tables as Markdown tables in reading order."""
    for number in pages:
        page = _page_text(document, number - 1)
        text = page.markdown
        if not page.text:
            empty = (_SCANNED_NOTE if page.has_images else _BLANK_NOTE).format(n=number)
            text = f"{empty}\n\n{text}" if text else empty
        elif might_hold_tables(document, number):
            found = _bounded(partial(page_tables, document, number), READ_TABLE_SECONDS)
            if found is None:
                text += "\n\n" + _SLOW_NOTE.format(n=number, s=READ_TABLE_SECONDS)
            elif found.tables:
                annotations = "\n".join(page.annotations)
                text = "\n\n".join(p for p in (woven_text(document, found), annotations) if p)
        yield Chunk(restart=f"{number}-", text=f"## Page {number}\n\n{text}\n\n")


class _OutOfTime(BaseException):
    """Raised into table detection when its time is up. Not an `Exception`, so that no
    `except Exception` inside the libraries can swallow it."""


#: Seconds between two attempts to stop table detection that is out of time.
_RETRY_SECONDS = 0.05
_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_set_async_exc.argtypes = (ctypes.c_ulong, ctypes.py_object)
_set_async_exc.restype = ctypes.c_int


def _bounded(work: Callable[[], T], seconds: float) -> T | None:
    """What `work` (finding a page's tables) returns, or None when it takes over `seconds`.

    Table finding runs in Python and cannot be stopped from outside, so a timer thread raises
    `_OutOfTime` into this thread (CPython's asynchronous exception, delivered between
    two bytecodes), and again every `_RETRY_SECONDS` until detection ends: one that lands
    in a finalizer (a `__del__` run by the garbage collector) is swallowed there. Once
    detection has ended, the timer is switched off under a lock and a pending exception
    is withdrawn, so none lands anywhere else.
    """
    thread = threading.get_ident()
    lock = threading.Lock()
    done = threading.Event()
    active = True

    def out_of_time() -> None:
        wait = seconds
        while not done.wait(wait):
            with lock:
                if active:
                    _set_async_exc(thread, ctypes.py_object(_OutOfTime))
            wait = _RETRY_SECONDS

    timer = threading.Thread(target=out_of_time, name="table-time-bound", daemon=True)
    try:
        try:
            timer.start()
            found = work()
        finally:
            while True:  # until the timer is off, even if a late exception lands here
                try:
                    with lock:
                        active = False
                    done.set()
                    _set_async_exc(thread, ctypes.py_object())  # NULL: withdraw a pending one
                    break
                except _OutOfTime:
                    continue
        return found
    except _OutOfTime:
        return None


def tables(document: Any, pages: list[int], bounds: TableBounds) -> Iterator[Table]:
    """The tables found on the selected pages of `document` (from `opened`, and drawn
    inside its block), within `bounds`. A table that runs on over a page break comes as
    one table (see `pdf_tables.continues` and `pdf_tables.as_table`), so the last table
    of a page is held until the next page has been read.

    A page whose table finding takes longer than `bounds.page_seconds` is skipped and
    noted in `bounds.slow_pages`; once `bounds.call_seconds` have passed, the page at hand
    and the rest are noted in `bounds.unread_pages`.
    """
    deadline = time.monotonic() + bounds.call_seconds
    before: PageTables | None = None
    held: list[tuple[PageTables, FoundTable]] = []
    for index, number in enumerate(pages):
        left = deadline - time.monotonic()
        if left <= 0:
            bounds.unread_pages.extend(pages[index:])
            break
        found = _bounded(partial(page_tables, document, number), min(bounds.page_seconds, left))
        if found is None:
            cut = bounds.slow_pages if bounds.page_seconds < left else bounds.unread_pages
            cut.append(number)
            before = None
            if held:
                yield as_table(held)
                held = []
            continue
        linked = before is not None and continues(before, found)
        if held and not linked:
            yield as_table(held)
            held = []
        for position, table in enumerate(found.tables):
            if not (position == 0 and linked):
                if held:
                    yield as_table(held)
                held = []
            held.append((found, table))
            if position < len(found.tables) - 1:
                yield as_table(held)
                held = []
        before = found
    if held:
        yield as_table(held)


def search(
    document: Any, pages: list[int], match: Callable[[str], bool], no_text: list[int]
) -> Iterator[dict[str, object]]:
    """Lines of the selected pages of `document` (from `opened`, and drawn inside its
    block) for which `match` is true, with page and line number.

    The numbers of searched pages without any text are appended to `no_text`.
    """
    for number in pages:
        page = _page_text(document, number - 1)
        if not page.text:
            no_text.append(number)
        for line_number, line in enumerate(page.lines, start=1):
            if match(line):
                yield {"page": number, "line": line_number, "text": line}


class PdfReader:
    """The `reader.Reader` of PDF files: units are pages."""

    def _opened(self, part: Part) -> tuple[Any, list[int]]:
        document = part.stack.enter_context(opened(part.source))
        return document, parse_ranges(part.pages, len(document), "page")

    def overview(self, source: Source) -> dict[str, object]:
        """See `overview`."""
        return overview(source)

    def read(self, part: Part) -> Iterator[Chunk]:
        """The selected pages, each under a `## Page N` heading."""
        return read(*self._opened(part))

    def tables(self, part: Part, style: TableFormat, bounds: TableBounds) -> Tables:
        """The tables found on the selected pages, within `bounds`; without `pages`, on
        the first `PDF_TABLE_PAGES` pages only, and the note says so."""
        document, numbers = self._opened(part)
        count = len(document)
        note = ""
        if not part.pages.strip() and count > PDF_TABLE_PAGES:
            numbers = numbers[:PDF_TABLE_PAGES]
            note = (
                f"[looked for tables on pages 1-{PDF_TABLE_PAGES} of {count}; call "
                f'extract_tables with pages="{PDF_TABLE_PAGES + 1}-" for the rest]'
            )
        # Kept free for the note on what `bounds` cut: it names at most every selected
        # page twice, in ranges, among a few hundred characters of words.
        room = 400 + 2 * len(spans(numbers)) if numbers else 0
        return Tables(table_chunks(tables(document, numbers, bounds), style), note, room)

    def search(
        self, part: Part, match: Callable[[str], bool], no_text: list[int]
    ) -> Iterator[dict[str, object]]:
        """Matching lines, with page and line; pages without text go to `no_text`."""
        return search(*self._opened(part), match, no_text)


def _has_header(head: bytes) -> bool:
    return b"%PDF-" in head[:1024]


def _check_header(source: Source, head: bytes, max_unpacked_mb: float) -> None:
    if not _has_header(head):
        raise DocumentError(
            f"{source.name!r} is not a PDF: it lacks the PDF header, so it is damaged or "
            "another format renamed to .pdf."
        )


FORMAT = DocumentFormat(
    "pdf",
    "PDF",
    (".pdf",),
    PdfReader(),
    content_check=_check_header,
    looks_like=_has_header,
    saved_from=(".ppt", ".pptx"),
)
"""PDF: by its suffix, or by its header under any other name."""
