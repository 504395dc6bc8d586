"""Spreadsheets: XLSX through openpyxl in read-only (streaming) mode, CSV with the
standard library. Rows are read as the output needs them, never all at once."""

from __future__ import annotations

import csv
import io
import re
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any
from xml.etree import ElementTree

from ..errors import DocumentError, InvalidArgumentError
from .render import Chunk, markdown_row, markdown_rule, table_to_csv, table_to_markdown
from .selection import parse_ranges, parse_span
from .source import Source, decode_text, missing_extra

__all__ = [
    "CsvDocument",
    "SheetSelection",
    "csv_overview",
    "csv_rows",
    "csv_search",
    "load_csv",
    "parse_sheets",
    "sheet_names",
    "workbook",
    "xlsx_overview",
    "xlsx_rows",
    "xlsx_search",
]

_PREVIEW_ROWS = 5
_CHUNK_ROWS = 50
_MAX_COLUMNS = 200
_SNIFF_CHARS = 4096


@dataclass(frozen=True, slots=True)
class SheetSelection:
    """One sheet to read (1-based number and name) and the sheet rows to read from it."""

    number: int
    name: str
    first_row: int = 1
    last_row: int | None = None


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime) and value.time() == time(0) and value.tzinfo is None:
        return value.date().isoformat()
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def _trim(cells: list[str]) -> list[str]:
    end = len(cells)
    while end and not cells[end - 1]:
        end -= 1
    return cells[:end]


def _openpyxl() -> Any:
    """The openpyxl module, or the error that names the extra to install."""
    try:
        import openpyxl  # type: ignore[import-untyped]
    except ImportError as exc:
        raise missing_extra("XLSX") from exc
    return openpyxl


@contextmanager
def workbook(source: Source) -> Iterator[Any]:
    """The workbook, opened by openpyxl in read-only mode for the block; pass it to
    `sheet_names`, `xlsx_rows` or `xlsx_search`. A damaged package is a `DocumentError`."""
    openpyxl = _openpyxl()
    from openpyxl.utils.exceptions import InvalidFileException  # type: ignore[import-untyped]

    try:
        # Read-only workbooks read the package as rows are drawn: the stream stays open
        # for the block (and closes with the workbook).
        book = openpyxl.load_workbook(source.file(), read_only=True, data_only=True)
    except (InvalidFileException, zipfile.BadZipFile, KeyError, ValueError, TypeError) as exc:
        raise DocumentError(
            f"{source.name!r} could not be read as XLSX: the workbook is damaged or "
            f"incomplete ({type(exc).__name__})."
        ) from None
    try:
        yield book
    finally:
        book.close()


def _rows(sheet: Any, first: int = 1, last: int | None = None) -> Iterator[tuple[int, list[str]]]:
    """(sheet row number, trimmed cell texts) for non-empty rows from `first` to `last`."""
    for number, values in enumerate(
        sheet.iter_rows(min_row=first, max_row=last, values_only=True), start=first
    ):
        cells = _trim([_text(v) for v in values[:_MAX_COLUMNS]])
        if cells:
            yield number, cells


def _worksheet(book: Any, name: str) -> Any | None:
    sheet = book[name]
    return sheet if hasattr(sheet, "iter_rows") else None


_MAIN_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_DIMENSION = re.compile(rb"<(?:\w+:)?dimension\s+ref=\"([A-Z]+[0-9]+(?::[A-Z]+[0-9]+)?)\"")
_HEAD_BYTES = 65536


def _recorded_sizes(
    source: Source,
) -> tuple[list[tuple[str, str | None, bool]], dict[str, str]]:
    """(name, recorded used range or None, is a worksheet) for each sheet, in order, and
    the document properties.

    Reads the workbook part and the first bytes of each sheet straight from the ZIP
    package. openpyxl, asked for the size of a sheet that does not record it, would parse
    the whole sheet; this never does.
    """
    try:
        with source.file() as packed, zipfile.ZipFile(packed) as package:
            workbook = ElementTree.fromstring(package.read("xl/workbook.xml"))
            relations = ElementTree.fromstring(package.read("xl/_rels/workbook.xml.rels"))
            targets = {r.get("Id"): r.get("Target", "") for r in relations}
            found: list[tuple[str, str | None, bool]] = []
            for sheet in workbook.iter(f"{_MAIN_NS}sheet"):
                target = targets.get(sheet.get(_REL_ID), "")
                part = target.lstrip("/") if target.startswith("/") else f"xl/{target}"
                if "worksheets/" not in part:
                    found.append((sheet.get("name", ""), None, False))
                    continue
                with package.open(part) as stream:
                    head = stream.read(_HEAD_BYTES)
                match = _DIMENSION.search(head)
                used = match.group(1).decode() if match else None
                found.append((sheet.get("name", ""), used, True))
            return found, _core_metadata(package)
    except (KeyError, zipfile.BadZipFile, ElementTree.ParseError) as exc:
        raise DocumentError(
            f"{source.name!r} could not be read as XLSX: the workbook is damaged or "
            f"incomplete ({type(exc).__name__})."
        ) from None


_CELL = re.compile(r"([A-Z]+)([0-9]+)")
_CORE = {
    "{http://purl.org/dc/elements/1.1/}title": "title",
    "{http://purl.org/dc/elements/1.1/}creator": "author",
    "{http://purl.org/dc/elements/1.1/}subject": "subject",
    "{http://schemas.openxmlformats.org/package/2006/metadata/core-properties}keywords": (
        "keywords"
    ),
    "{http://schemas.openxmlformats.org/package/2006/metadata/core-properties}"
    "lastModifiedBy": "last_modified_by",
    "{http://purl.org/dc/terms/}created": "created",
    "{http://purl.org/dc/terms/}modified": "modified",
}


def _core_metadata(package: zipfile.ZipFile) -> dict[str, str]:
    try:
        core = ElementTree.fromstring(package.read("docProps/core.xml"))
    except KeyError:
        return {}
    found: dict[str, str] = {}
    for element in core:
        if element.tag in _CORE and element.text and element.text.strip():
            found[_CORE[element.tag]] = element.text.strip()
    return found


def _cell_position(reference: str) -> tuple[int, int]:
    match = _CELL.fullmatch(reference)
    if match is None:
        return 1, 1
    column = 0
    for letter in match.group(1):
        column = column * 26 + ord(letter) - ord("A") + 1
    return column, int(match.group(2))


def _size_facts(used: str | None) -> dict[str, object]:
    if used is None:
        return {"used_range": "not recorded in the file"}
    first, _, last = used.partition(":")
    first_col, first_row = _cell_position(first)
    last_col, last_row = _cell_position(last or first)
    return {
        "used_range": used,
        "rows": last_row - first_row + 1,
        "columns": last_col - first_col + 1,
    }


def sheet_names(book: Any) -> list[str]:
    """The names of the sheets of `book` (from `workbook`), in order."""
    return list(book.sheetnames)


def xlsx_overview(source: Source) -> dict[str, object]:
    """Sheet names with the used ranges the file records, metadata, and the first rows of
    the first worksheet; no sheet is read in full.

    When a sheet does not record its used range (some generators leave it out), opening
    the workbook would mean reading every row, so the preview is left out with a note.
    """
    _openpyxl()
    sizes, metadata = _recorded_sizes(source)
    outline: list[dict[str, object]] = []
    for number, (name, used, is_worksheet) in enumerate(sizes, start=1):
        if is_worksheet:
            outline.append({"sheet": number, "name": name, **_size_facts(used)})
        else:
            outline.append({"sheet": number, "name": name, "kind": "chart sheet"})
    result: dict[str, object] = {"sheet_count": len(sizes), "metadata": metadata}
    if all(used is not None for _, used, is_worksheet in sizes if is_worksheet):
        with workbook(source) as book:
            first = next((name for name, _, is_worksheet in sizes if is_worksheet), None)
            sheet = _worksheet(book, first) if first is not None else None
            rows = [cells for _, cells in _rows(sheet, 1, _PREVIEW_ROWS)] if sheet else []
            result["outline"] = outline
            result["preview"] = table_to_markdown(rows)
    else:
        result["outline"] = outline
        result["preview"] = ""
        result["note"] = (
            "the workbook does not record its sheet sizes, so no rows were read for a "
            "preview; read_document with pages='1!1-10' shows the first rows"
        )
    return result


def parse_sheets(spec: str, names: list[str]) -> list[SheetSelection]:
    """Sheets chosen by `spec`: comma-separated sheet numbers, ranges or names, each
    optionally followed by `!rows` (e.g. `Sales`, `2`, `1-3`, `Sales!100-200`, `2!50-`).
    Empty means every sheet."""
    if not spec.strip():
        return [SheetSelection(n, name) for n, name in enumerate(names, start=1)]
    chosen: list[SheetSelection] = []
    for item in spec.split(","):
        if not item.strip():
            continue
        sheet_part, bang, rows_part = item.strip().rpartition("!")
        if not bang:
            sheet_part, rows_part = rows_part, ""
        first_row, last_row = 1, None
        if rows_part.strip():
            first_row, last = parse_span(rows_part, 1_048_576, "row")
            last_row = None if rows_part.strip().endswith("-") else last
        sheet_part = sheet_part.strip()
        if sheet_part in names:
            numbers = [names.index(sheet_part) + 1]
        elif sheet_part.replace("-", "").isdigit():
            numbers = parse_ranges(sheet_part, len(names), "sheet")
        else:
            folded = [n.casefold() for n in names]
            if sheet_part.casefold() not in folded:
                raise InvalidArgumentError(
                    f"There is no sheet {sheet_part!r}; the sheets are "
                    + ", ".join(repr(n) for n in names)
                    + ". Pass a sheet name or number."
                )
            numbers = [folded.index(sheet_part.casefold()) + 1]
        chosen.extend(SheetSelection(n, names[n - 1], first_row, last_row) for n in numbers)
    return chosen


def xlsx_rows(
    book: Any, selection: list[SheetSelection], style: str = "markdown"
) -> Iterator[Chunk]:
    """The selected sheets of `book` (from `workbook`, and drawn inside its block) as
    Markdown tables (or CSV when `style` is "csv"); row 1 is the header. `_CHUNK_ROWS`
    rows per chunk, so reading stops as soon as the output is full."""
    render = markdown_row if style == "markdown" else _csv_row
    for chosen in selection:
        sheet = _worksheet(book, chosen.name)
        heading = f"## Sheet {chosen.number}: {chosen.name}\n\n"
        if sheet is None:
            yield Chunk(f"{chosen.number}-", heading + "(a chart sheet: no cells)\n\n")
            continue
        header = next(_rows(sheet, 1, 1), None)
        if header is None:
            yield Chunk(f"{chosen.number}-", heading + "(empty sheet)\n\n")
            continue
        width = len(header[1])
        lines = [render(header[1])]
        if style == "markdown":
            lines.append(markdown_rule(width))
        restart = f"{chosen.number}!{max(chosen.first_row, 2)}-"
        start = max(chosen.first_row, 2)
        if chosen.first_row > 2:
            heading += f"(rows {chosen.first_row} and on; row 1 is the header)\n\n"
        pending = heading + "\n".join(lines) + "\n"
        count = 0
        for number, cells in _rows(sheet, start, chosen.last_row):
            if count == 0:
                restart = f"{chosen.number}!{number}-"
            row = (cells + [""] * width)[: max(width, len(cells))]
            pending += render(row) + "\n"
            count += 1
            if count == _CHUNK_ROWS:
                yield Chunk(restart, pending)
                pending, count = "", 0
        yield Chunk(restart, pending + "\n")


def _csv_row(cells: list[str]) -> str:
    return table_to_csv([cells]).rstrip("\n")


def xlsx_search(
    book: Any, selection: list[SheetSelection], match: Callable[[str], bool]
) -> Iterator[dict[str, object]]:
    """Cells of the selected sheets of `book` (from `workbook`, and drawn inside its block)
    whose text matches, with sheet name and cell address."""
    from openpyxl.utils import get_column_letter  # type: ignore[import-untyped]

    for chosen in selection:
        sheet = _worksheet(book, chosen.name)
        if sheet is None:
            continue
        for number, cells in _rows(sheet, chosen.first_row, chosen.last_row):
            for column, text in enumerate(cells, start=1):
                if text and match(text):
                    yield {
                        "sheet": chosen.name,
                        "cell": f"{get_column_letter(column)}{number}",
                        "text": text,
                    }


@dataclass(frozen=True, slots=True)
class CsvDocument:
    """A parsed CSV: its header, data rows, delimiter and text encoding."""

    header: list[str]
    rows: list[list[str]]
    delimiter: str
    encoding: str


def load_csv(source: Source) -> CsvDocument:
    """Parse a CSV or TSV file, guessing the delimiter from its start."""
    text, encoding = decode_text(source)
    # csv.Sniffer's patterns are quadratic on some inputs (64 KB of ',"' takes half a
    # minute), so it sees whole lines from the first few kilobytes only.
    sample = text[:_SNIFF_CHARS]
    if len(text) > _SNIFF_CHARS and "\n" in sample:
        sample = sample[: sample.rindex("\n") + 1]
    if source.path.suffix.lower() == ".tsv":
        delimiter = "\t"
    else:
        try:
            delimiter = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    try:
        rows = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if row]
    except csv.Error as exc:
        raise DocumentError(f"{source.name!r} is not well-formed CSV: {exc}.") from None
    if not rows:
        raise DocumentError(f"{source.name!r} holds no rows.")
    return CsvDocument(header=rows[0], rows=rows[1:], delimiter=delimiter, encoding=encoding)


def csv_overview(document: CsvDocument) -> dict[str, object]:
    """Row and column counts, column names, delimiter, encoding and the first rows."""
    names = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
    return {
        "row_count": len(document.rows),
        "column_count": len(document.header),
        "columns": document.header[:100],
        "delimiter": names.get(document.delimiter, document.delimiter),
        "encoding": document.encoding,
        "preview": table_to_markdown([document.header, *document.rows[: _PREVIEW_ROWS - 1]]),
    }


def csv_rows(document: CsvDocument, numbers: list[int], style: str = "markdown") -> Iterator[Chunk]:
    """The selected data rows (1 is the first row after the header) as a Markdown table,
    or as CSV when `style` is "csv"."""
    render = markdown_row if style == "markdown" else _csv_row
    width = len(document.header)
    pending = render(document.header) + "\n"
    if style == "markdown":
        pending += markdown_rule(width) + "\n"
    restart = f"{numbers[0]}-" if numbers else "1-"
    for index, number in enumerate(numbers):
        if index % _CHUNK_ROWS == 0 and index:
            yield Chunk(restart, pending)
            pending, restart = "", f"{number}-"
        cells = document.rows[number - 1]
        pending += render((cells + [""] * width)[: max(width, len(cells))]) + "\n"
    yield Chunk(restart, pending)


def csv_search(
    document: CsvDocument, numbers: list[int], match: Callable[[str], bool]
) -> Iterator[dict[str, object]]:
    """Cells of the selected rows whose text matches, with row number and column name."""
    for number in numbers:
        for column, text in enumerate(document.rows[number - 1]):
            if text and match(text):
                name = document.header[column] if column < len(document.header) else ""
                yield {"row": number, "column": name or f"#{column + 1}", "text": text}
