"""Spreadsheets: XLSX streamed from its XML (see `xlsx`), CSV with the standard library.
Rows are read as the output needs them, never all at once."""

from __future__ import annotations

import csv
import io
import re
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import DocumentError, InvalidArgumentError
from . import xlsx
from .reader import DocumentFormat, Part, TableBounds, TableFormat, Tables
from .render import Chunk, markdown_row, markdown_rule, table_to_csv, table_to_markdown
from .selection import parse_ranges, parse_span
from .source import Source, check_office_package, decode_text, missing_extra
from .xlsx import SheetPart, Workbook

__all__ = [
    "CSV",
    "XLSX",
    "CsvDocument",
    "CsvReader",
    "SheetSelection",
    "XlsxReader",
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
_SNIFF_CHARS = 4096


@dataclass(frozen=True, slots=True)
class SheetSelection:
    """One sheet to read (1-based number and name) and the sheet rows to read from it."""

    number: int
    name: str
    first_row: int = 1
    last_row: int | None = None


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
def workbook(source: Source) -> Iterator[Workbook]:
    """The workbook, open for the block; pass it to `sheet_names`, `xlsx_rows` or
    `xlsx_search`. A damaged package is a `DocumentError`."""
    _openpyxl()
    with source.file() as stream:
        try:
            book = Workbook(stream, source.name)
        except (zipfile.BadZipFile, ValueError) as exc:
            detail = " ".join(str(exc).split())[:200] or type(exc).__name__
            raise DocumentError(
                f"{source.name!r} could not be read as XLSX: the file is not a complete ZIP "
                f"package, which an XLSX file is ({detail}). Open it in Excel or LibreOffice "
                "and save it again, or get an undamaged copy."
            ) from None
        try:
            yield book
        finally:
            book.close()


def _rows(
    book: Workbook, sheet: SheetPart, first: int = 1, last: int | None = None
) -> Iterator[tuple[int, list[str]]]:
    """(sheet row number, trimmed cell texts) for non-empty rows from `first` to `last`."""
    for number, cells in book.rows(sheet, first, last):
        cells = _trim(cells)
        if cells:
            yield number, cells


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


def _core_metadata(book: Workbook) -> dict[str, str]:
    core = book.optional_part_xml("docProps/core.xml")
    if core is None:
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


def sheet_names(book: Workbook) -> list[str]:
    """The names of the sheets of `book` (from `workbook`), in order."""
    return [sheet.name for sheet in book.sheets]


def _sheet_entry(book: Workbook, number: int, sheet: SheetPart) -> dict[str, object]:
    """One sheet in the overview's outline, with what a reader should know it holds."""
    entry: dict[str, object] = {"sheet": number, "name": sheet.name}
    if sheet.state != "visible":
        entry["hidden"] = "very hidden" if sheet.state == "veryHidden" else "hidden"
    if sheet.part is None:
        entry["kind"] = "chart sheet"
        return entry
    entry.update(_size_facts(book.recorded_range(sheet)))
    facts = book.facts(sheet)
    for key, count in (
        ("comments", len(book.comments(sheet))),
        ("formulas_not_computed", facts.formulas_not_computed),
        ("hidden_rows", facts.hidden_rows),
        ("hidden_columns", facts.hidden_columns),
        ("merged_ranges", facts.merged_ranges),
    ):
        if count:
            entry[key] = count
    return entry


def _notes(outline: list[dict[str, object]]) -> list[str]:
    """Sentences about what the outline's counts mean for a reader of the sheets."""
    notes: list[str] = []
    hidden = [str(e["name"]) for e in outline if "hidden" in e]
    if hidden:
        notes.append(
            f"{len(hidden)} hidden {'sheet' if len(hidden) == 1 else 'sheets'}: "
            f"{', '.join(hidden)} (read like the others, e.g. pages={hidden[0]!r})"
        )
    formulas = sum(int(str(e.get("formulas_not_computed", 0))) for e in outline)
    if formulas:
        notes.append(
            f"{formulas} {'formula' if formulas == 1 else 'formulas'} without a computed "
            "value (the file was never recalculated by a spreadsheet program): shown as "
            f"'=FORMULA{xlsx.NOT_COMPUTED}'"
        )
    if any("hidden_rows" in e or "hidden_columns" in e for e in outline):
        notes.append("hidden rows and columns are read like visible ones")
    if any("comments" in e for e in outline):
        notes.append("cell comments are read after each sheet's table")
    if any("merged_ranges" in e for e in outline):
        notes.append("a merged range's value is shown in its first cell only")
    return notes


def xlsx_overview(source: Source) -> dict[str, object]:
    """Sheet names with the used ranges the file records, hidden sheets, counts of what a
    reader should know (formulas without a computed value, hidden rows and columns,
    merged ranges), metadata, and the first rows of the first worksheet.

    No sheet is parsed in full: the counts come from a scan of each sheet's bytes.
    """
    with workbook(source) as book:
        outline = [_sheet_entry(book, n, s) for n, s in enumerate(book.sheets, start=1)]
        result: dict[str, object] = {
            "sheet_count": len(book.sheets),
            "metadata": _core_metadata(book),
            "outline": outline,
        }
        notes = _notes(outline)
        if notes:
            result["notes"] = notes
        first = next((s for s in book.sheets if s.part is not None), None)
        rows = [cells for _, cells in _rows(book, first, 1, _PREVIEW_ROWS)] if first else []
        result["preview"] = table_to_markdown(rows)
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
    book: Workbook,
    selection: list[SheetSelection],
    style: str = "markdown",
    *,
    with_comments: bool = False,
) -> Iterator[Chunk]:
    """The selected sheets of `book` (from `workbook`, and drawn inside its block) as
    Markdown tables (or CSV when `style` is "csv"); row 1 is the header. `_CHUNK_ROWS`
    rows per chunk, so reading stops as soon as the output is full. With `with_comments`,
    the cell comments on the selected rows follow each sheet's table."""
    render = markdown_row if style == "markdown" else _csv_row
    for chosen in selection:
        sheet = book.sheet(chosen.name)
        hidden = {"hidden": " (hidden)", "veryHidden": " (very hidden)"}.get(sheet.state, "")
        heading = f"## Sheet {chosen.number}: {chosen.name}{hidden}\n\n"
        if sheet.part is None:
            yield Chunk(f"{chosen.number}-", heading + "(a chart sheet: no cells)\n\n")
            continue
        header = next(_rows(book, sheet, 1, 1), None)
        if header is None:
            yield Chunk(f"{chosen.number}-", heading + "(empty sheet)\n\n")
            continue
        width = _table_width(book, sheet, header[1])
        lines = [render((header[1] + [""] * width)[:width])]
        if style == "markdown":
            lines.append(markdown_rule(width))
        restart = f"{chosen.number}!{max(chosen.first_row, 2)}-"
        start = max(chosen.first_row, 2)
        if chosen.first_row > 2:
            heading += f"(rows {chosen.first_row} and on; row 1 is the header)\n\n"
        pending = heading + "\n".join(lines) + "\n"
        count = 0
        for number, cells in _rows(book, sheet, start, chosen.last_row):
            if count == 0:
                restart = f"{chosen.number}!{number}-"
            row = (cells + [""] * width)[: max(width, len(cells))]
            pending += render(row) + "\n"
            count += 1
            if count == _CHUNK_ROWS:
                yield Chunk(restart, pending)
                pending, count = "", 0
        comments = _comments(book, sheet, chosen) if with_comments else []
        if comments:
            pending += "\nComments:\n" + "".join(
                f"- {cell}{f' ({author})' if author else ''}: {text}\n"
                for cell, author, text in comments
            )
        yield Chunk(restart, pending + "\n")


def _table_width(book: Workbook, sheet: SheetPart, header: list[str]) -> int:
    """Columns of the sheet's table: its header's, or more when the used range the sheet
    records goes further right (a formula column without a heading, say), so that no row
    holds more cells than the header and the Markdown table stays rectangular."""
    used = book.recorded_range(sheet)
    if used is None:
        return len(header)
    last_column, _ = _cell_position(used.partition(":")[2] or used)
    return max(len(header), min(last_column, xlsx.MAX_COLUMNS))


def _comments(
    book: Workbook, sheet: SheetPart, chosen: SheetSelection
) -> list[tuple[str, str, str]]:
    """The cell comments of `sheet` on the rows `chosen` selects."""
    found: list[tuple[str, str, str]] = []
    for cell, author, text in book.comments(sheet):
        _, row = _cell_position(cell)
        if row >= chosen.first_row and (chosen.last_row is None or row <= chosen.last_row):
            found.append((cell, author, text))
    return found


def _csv_row(cells: list[str]) -> str:
    return table_to_csv([cells]).rstrip("\n")


def xlsx_search(
    book: Workbook, selection: list[SheetSelection], match: Callable[[str], bool]
) -> Iterator[dict[str, object]]:
    """Cells of the selected sheets of `book` (from `workbook`, and drawn inside its block)
    whose text matches, with sheet name and cell address; then the matching cell comments
    (``[comment by Author] text``)."""
    from openpyxl.utils import get_column_letter  # type: ignore[import-untyped]

    for chosen in selection:
        sheet = book.sheet(chosen.name)
        for number, cells in _rows(book, sheet, chosen.first_row, chosen.last_row):
            for column, text in enumerate(cells, start=1):
                if text and match(text):
                    yield {
                        "sheet": chosen.name,
                        "cell": f"{get_column_letter(column)}{number}",
                        "text": text,
                    }
        for cell, author, text in _comments(book, sheet, chosen):
            line = f"[comment{f' by {author}' if author else ''}] {text}"
            if match(line):
                yield {"sheet": chosen.name, "cell": cell, "text": line}


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


class XlsxReader:
    """The `reader.Reader` of workbooks: units are sheets (optionally with a row range)."""

    def _selected(self, part: Part) -> tuple[Workbook, list[SheetSelection]]:
        book = part.stack.enter_context(workbook(part.source))
        return book, parse_sheets(part.pages, sheet_names(book))

    def overview(self, source: Source) -> dict[str, object]:
        """See `xlsx_overview`."""
        return xlsx_overview(source)

    def read(self, part: Part) -> Iterator[Chunk]:
        """The selected rows as Markdown tables, with the cells' comments."""
        return xlsx_rows(*self._selected(part), with_comments=True)

    def tables(self, part: Part, style: TableFormat, bounds: TableBounds) -> Tables:
        """Each selected sheet as one table."""
        _no_json(style, "an XLSX sheet")
        return Tables(xlsx_rows(*self._selected(part), style))

    def search(
        self, part: Part, match: Callable[[str], bool], no_text: list[int]
    ) -> Iterator[dict[str, object]]:
        """Matching cells, with sheet and cell."""
        return xlsx_search(*self._selected(part), match)


def _no_json(style: TableFormat, what: str) -> None:
    """Refuse the JSON form for data that is one plain grid already."""
    if style == "json":
        raise InvalidArgumentError(
            f"format='json' describes tables found in a page or section (PDF, DOCX, HTML, "
            f"Markdown); {what} is one grid of cells already: use format='csv'."
        )


class CsvReader:
    """The `reader.Reader` of CSV and TSV files: units are data rows."""

    def _selected(self, part: Part) -> tuple[CsvDocument, list[int]]:
        table = load_csv(part.source)
        return table, parse_ranges(part.pages, len(table.rows), "row")

    def overview(self, source: Source) -> dict[str, object]:
        """See `csv_overview`."""
        return csv_overview(load_csv(source))

    def read(self, part: Part) -> Iterator[Chunk]:
        """The selected rows as one Markdown table."""
        return csv_rows(*self._selected(part))

    def tables(self, part: Part, style: TableFormat, bounds: TableBounds) -> Tables:
        """The selected rows as one table."""
        _no_json(style, "a CSV file")
        return Tables(csv_rows(*self._selected(part), style))

    def search(
        self, part: Part, match: Callable[[str], bool], no_text: list[int]
    ) -> Iterator[dict[str, object]]:
        """Matching cells, with row and column."""
        return csv_search(*self._selected(part), match)


XLSX = DocumentFormat(
    "xlsx",
    "XLSX",
    (".xlsx", ".xlsm"),
    XlsxReader(),
    content_check=check_office_package,
    saved_from=(".xls", ".ods"),
)
"""XLSX workbooks (and macro-enabled ones, whose macros are never run)."""

CSV = DocumentFormat("csv", "CSV", (".csv", ".tsv"), CsvReader())
"""CSV and tab-separated text."""
