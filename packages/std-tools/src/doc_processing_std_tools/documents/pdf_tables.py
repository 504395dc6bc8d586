"""The tables of PDF pages for the tools: found on a PDFium page (`table_finder`), labelled
with page, box, method and confidence, linked to the table they continue from the page
before, and woven into the page's text in reading order for `read_document`."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .page_layout import Layout, apply, read_layout
from .render import Span, Table, table_to_markdown
from .table_finder import find_tables
from .table_grid import FoundTable

__all__ = [
    "PageTables",
    "as_table",
    "continues",
    "might_hold_tables",
    "page_tables",
    "woven_text",
]

#: Share of the frame's height below a table (or above one) in which only a running footer
#: (or header) may stand for the table to run on over the page break.
_PAGE_EDGE = 0.2


@dataclass
class PageTables:
    """The tables found on one page, with the page's layout."""

    number: int
    layout: Layout
    tables: list[FoundTable]


def _page(document: Any, number: int) -> Any:
    """Page `number` (from 1); a page PDFium cannot load is named in the error."""
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

    try:
        return document[number - 1]
    except pdfium.PdfiumError:
        raise pdfium.PdfiumError(f"PDFium could not load page {number}") from None


def page_tables(document: Any, number: int) -> PageTables:
    """Find the tables of page `number` (from 1) of a PDFium document."""
    page = _page(document, number)
    try:
        textpage = page.get_textpage()
        try:
            layout = read_layout(page, textpage)
        finally:
            textpage.close()
    finally:
        page.close()
    return PageTables(number, layout, find_tables(layout))


def might_hold_tables(document: Any, number: int) -> bool:
    """Whether page `number` could hold a table, judged cheaply from PDFium's runs of text
    and the kinds of its objects: it draws lines or shapes, or two or more of its text
    lines hold runs apart from each other. A page of plain running text does not."""
    import pypdfium2.raw as raw  # type: ignore[import-untyped]

    page = _page(document, number)
    try:
        for index in range(raw.FPDFPage_CountObjects(page.raw)):
            kind = raw.FPDFPageObj_GetType(raw.FPDFPage_GetObject(page.raw, index))
            if kind in (raw.FPDF_PAGEOBJ_PATH, raw.FPDF_PAGEOBJ_FORM):
                return True
        textpage = page.get_textpage()
        try:
            runs: dict[int, int] = {}
            left, top, right, bottom = (ctypes.c_double() for _ in range(4))
            for index in range(raw.FPDFText_CountRects(textpage.raw, 0, -1)):
                raw.FPDFText_GetRect(textpage.raw, index, left, top, right, bottom)
                line = round((top.value + bottom.value) / 4)
                runs[line] = runs.get(line, 0) + 1
            return sum(1 for n in runs.values() if n >= 2) >= 2
        finally:
            textpage.close()
    finally:
        page.close()


def _lines_between(layout: Layout, top: float, bottom: float) -> int:
    return sum(1 for line in layout.lines if top <= line.top and line.bottom <= bottom)


def continues(before: PageTables, after: PageTables) -> bool:
    """Whether the first table of `after` carries on the last table of `before` (the page
    just before it): the one ends the page, the other starts the next, and their columns
    match."""
    if not before.tables or not after.tables or after.number != before.number + 1:
        return False
    last, first = before.tables[-1], after.tables[0]
    high, low = before.layout.height, after.layout.height
    if _lines_between(before.layout, last.box[3] + 1, high) > 2:
        return False
    if last.box[3] < high * (1 - 2 * _PAGE_EDGE):
        return False
    if _lines_between(after.layout, 0, first.box[1] - 1) > 3 or first.box[1] > low * 0.5:
        return False
    width_a, width_b = len(last.rows[0]), len(first.rows[0])
    if width_a != width_b:
        return False
    if last.rows[0] == first.rows[0]:
        return True
    page_width = max(before.layout.width, after.layout.width)
    inner_a, inner_b = last.columns[1:-1], first.columns[1:-1]
    return len(inner_a) == len(inner_b) and all(
        abs(a - b) <= page_width * 0.03 for a, b in zip(inner_a, inner_b, strict=True)
    )


def as_table(parts: list[tuple[PageTables, FoundTable]]) -> Table:
    """A found table as the tools show it. `parts` are its pieces on consecutive pages
    (one, unless the table runs on over page breaks): they are joined into one table, a
    piece that repeats the table's first row (its column heads) without it; the JSON form
    lists each piece's page, box and first row in `parts`."""
    page, found = parts[0]
    box = page.layout.page_box(*found.box)
    rows = [list(row) for row in found.rows]
    spans = list(found.spans)
    pieces: list[dict[str, object]] = [{"page": page.number, "box": box, "row": 0}]
    dropped = False
    for later_page, later in parts[1:]:
        skip = 1 if later.rows[0] == found.rows[0] else 0
        dropped = dropped or bool(skip)
        start = len(rows)
        rows.extend(list(row) for row in later.rows[skip:])
        spans.extend(
            Span(s.row - skip + start, s.column, s.rows, s.columns)
            for s in later.spans
            if s.row >= skip
        )
        later_box = later_page.layout.page_box(*later.box)
        pieces.append({"page": later_page.number, "box": later_box, "row": start})
    confidence = min(f.confidence for _, f in parts)
    where = f"page {page.number}, {found.method}, confidence {confidence:.2f}, box " + (
        " ".join(f"{v:g}" for v in box)
    )
    if len(parts) > 1:
        where += ", continued on page " + ", ".join(str(p["page"]) for p in pieces[1:])
        where += " from row " + ", ".join(str(int(str(p["row"])) + 1) for p in pieces[1:])
        if dropped:
            where += " (repeated column heads left out)"
    facts: list[tuple[str, object]] = [
        ("page", page.number),
        ("box", box),
        ("method", found.method),
        ("confidence", confidence),
    ]
    if len(parts) > 1:
        facts.append(("parts", pieces))
    if page.layout.turned:
        facts.append(("turned", page.layout.turned))
    return Table(
        rows=rows,
        where=where,
        restart=f"{page.number}-",
        spans=tuple(spans),
        facts=tuple(facts),
    )


def woven_text(document: Any, page: PageTables) -> str:
    """The page's text with each table's text replaced by the table as Markdown, where
    the table's first character stands in PDFium's reading order."""
    import pypdfium2.raw as raw

    boxes = [(t.box[0] - 1, t.box[1] - 1, t.box[2] + 1, t.box[3] + 1) for t in page.tables]
    rendered = [_markdown(t) for t in page.tables]
    pdf_page = _page(document, page.number)
    try:
        textpage = pdf_page.get_textpage()
        try:
            parts: list[str] = []
            placed: set[int] = set()
            inside: int | None = None
            left, right, bottom, top = (ctypes.c_double() for _ in range(4))
            for index in range(raw.FPDFText_CountChars(textpage.raw)):
                code = raw.FPDFText_GetUnicode(textpage.raw, index)
                generated = raw.FPDFText_IsGenerated(textpage.raw, index) == 1
                where: int | None = None
                if not generated and code > 32:
                    raw.FPDFText_GetCharBox(textpage.raw, index, left, right, bottom, top)
                    x, y = apply(
                        page.layout.from_user,
                        (left.value + right.value) / 2,
                        (bottom.value + top.value) / 2,
                    )
                    where = next(
                        (k for k, b in enumerate(boxes) if b[0] < x < b[2] and b[1] < y < b[3]),
                        None,
                    )
                    inside = where
                if where is not None or (inside is not None and (generated or code <= 32)):
                    table = where if where is not None else inside
                    if table is not None and table not in placed:
                        placed.add(table)
                        parts.append(f"\n\n{rendered[table]}\n\n")
                    continue
                parts.append(_char(code))
            for table in range(len(page.tables)):
                if table not in placed:
                    parts.append(f"\n\n{rendered[table]}\n\n")
        finally:
            textpage.close()
    finally:
        pdf_page.close()
    text = "".join(parts).replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.rstrip() for line in text.split("\n")]
    merged: list[str] = []
    for line in lines:
        if not line and merged and not merged[-1]:
            continue
        merged.append(line)
    return "\n".join(merged).strip()


def _char(code: int) -> str:
    try:
        return chr(code)
    except ValueError:
        return "\ufffd"


def _markdown(found: FoundTable) -> str:
    table = Table(found.rows, "", "", tuple(found.spans))
    text = table_to_markdown(found.rows)
    note = table.spans_note()
    if note:
        text += f"\n\n(spanning cells flattened, text in the first position: {note})"
    return text


def walk(document: Any, numbers: list[int]) -> Iterator[PageTables]:
    """`page_tables` of each page number in turn."""
    for number in numbers:
        yield page_tables(document, number)
