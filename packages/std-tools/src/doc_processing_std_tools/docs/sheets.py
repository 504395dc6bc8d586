"""Spreadsheets: XLSX through openpyxl in read-only (streaming) mode, CSV with the
standard library. Rows are read as the output needs them, never all at once."""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any

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
    "xlsx_overview",
    "xlsx_rows",
    "xlsx_search",
]

_PREVIEW_ROWS = 5
_CHUNK_ROWS = 50
_MAX_COLUMNS = 200


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


@contextmanager
def _workbook(source: Source) -> Iterator[Any]:
    try:
        import openpyxl  # type: ignore[import-untyped]
        from openpyxl.utils.exceptions import (  # type: ignore[import-untyped]
            InvalidFileException,
        )
    except ImportError as exc:
        raise missing_extra("XLSX") from exc
    try:
        book = openpyxl.load_workbook(source.path, read_only=True, data_only=True)
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


def _dimensions(sheet: Any) -> dict[str, object]:
    try:
        used = str(sheet.calculate_dimension())
    except ValueError:
        return {"used_range": "unknown (the file does not record it)"}
    return {"used_range": used, "rows": sheet.max_row, "columns": sheet.max_column}


def sheet_names(source: Source) -> list[str]:
    """The names of the workbook's sheets, in order."""
    with _workbook(source) as book:
        return list(book.sheetnames)


def _metadata(book: Any) -> dict[str, str]:
    props = book.properties
    found: dict[str, str] = {}
    for key, value in (
        ("title", props.title),
        ("author", props.creator),
        ("subject", props.subject),
        ("keywords", props.keywords),
        ("last_modified_by", props.lastModifiedBy),
        ("created", props.created),
        ("modified", props.modified),
    ):
        if value:
            found[key] = _text(value)
    return found


def xlsx_overview(source: Source) -> dict[str, object]:
    """Sheet names with their used ranges (as recorded in the file), metadata, and the
    first rows of the first worksheet; no sheet is read in full."""
    with _workbook(source) as book:
        sheets: list[dict[str, object]] = []
        preview = ""
        for number, name in enumerate(book.sheetnames, start=1):
            sheet = _worksheet(book, name)
            if sheet is None:
                sheets.append({"sheet": number, "name": name, "kind": "chart sheet"})
                continue
            sheets.append({"sheet": number, "name": name, **_dimensions(sheet)})
            if not preview:
                rows = [cells for _, cells in _rows(sheet, 1, _PREVIEW_ROWS)]
                preview = table_to_markdown(rows)
        return {
            "sheet_count": len(sheets),
            "metadata": _metadata(book),
            "outline": sheets,
            "preview": preview,
        }


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
    source: Source, selection: list[SheetSelection], style: str = "markdown"
) -> Iterator[Chunk]:
    """The selected sheets as Markdown tables (or CSV when `style` is "csv"); row 1 is the
    header. `_CHUNK_ROWS` rows per chunk, so reading stops as soon as the output is full."""
    render = markdown_row if style == "markdown" else _csv_row
    with _workbook(source) as book:
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
    source: Source, selection: list[SheetSelection], match: Callable[[str], bool]
) -> Iterator[dict[str, object]]:
    """Cells of the selected sheets whose text matches, with sheet name and cell address."""
    from openpyxl.utils import get_column_letter  # type: ignore[import-untyped]

    with _workbook(source) as book:
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
    sample = text[:65536]
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
