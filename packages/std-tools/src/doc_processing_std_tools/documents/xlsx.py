"""An XLSX package read straight from its XML: sheets, their rows as text, and what a
reader should know is there (formulas without a computed value, hidden sheets, rows and
columns, merged ranges, cell comments).

openpyxl, in read-only mode, offers a cell either its formula or its cached value, never
both, and builds an object per XML element; this reader streams each worksheet part
through expat and turns each cell into its text at once. openpyxl's number-format tables
and date conversion are used for what they define (which format is a date, the 1900 and
1904 calendars, shared formula translation).

Data flow: `Workbook(stream, name)` reads the workbook part, its relations, the shared
strings and the cell formats; `Workbook.rows(sheet, first, last)` feeds the sheet's part to expat
in blocks and yields (row number, cell texts) for each non-empty row, so a caller that
stops early stops the parsing; `Workbook.facts(sheet)` scans a sheet's bytes with regular
expressions for counts, without parsing it.

A damaged package is a `DocumentError` that names the part and what is wrong with it
(missing, not unpackable, not well-formed XML at a line and column), whichever part it is:
every part is read through `Workbook.part_xml` (or `optional_part_xml`) or
`Workbook.open_part`.
"""

from __future__ import annotations

import contextlib
import functools
import posixpath
import re
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import IO, Any
from xml.etree import ElementTree
from xml.parsers import expat

from ..errors import DocumentError

__all__ = ["NOT_COMPUTED", "SheetFacts", "SheetPart", "Workbook", "cell_text"]

#: What follows a formula shown in place of the value it has never been given.
NOT_COMPUTED = " (formula, not computed)"
#: Cells of a row beyond this column are not read.
MAX_COLUMNS = 200
_BLOCK = 256 * 1024
_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_NS = f"{{{_MAIN}}}"
_REL_ID = f"{{{_REL}}}id"
#: What Python's ZIP reader raises for a member it cannot unpack.
_UNPACKING_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError)


def cell_text(value: object) -> str:
    """A cell's value as text: dates in ISO form, whole floats without ``.0``."""
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


@dataclass(frozen=True, slots=True)
class SheetPart:
    """One sheet of the workbook, in the order the workbook lists them."""

    name: str
    part: str | None
    """The worksheet's part in the package; None for a chart sheet (no cells)."""
    state: str
    """"visible", "hidden" or "veryHidden" (hidden, and not offered by Excel's menu)."""


@dataclass(frozen=True, slots=True)
class SheetFacts:
    """Counts found in a worksheet's XML without parsing it."""

    formulas_not_computed: int
    hidden_rows: int
    hidden_columns: int
    merged_ranges: int


def _local(name: str) -> str:
    return name.rpartition(":")[2]


_NUMBER = re.compile(r"-?[0-9]+")
_DIGITS = "0123456789"
_TRUE = ("1", "true")


class Workbook:
    """An XLSX package opened for reading; close it (or use it in a ``with`` block).

    `name` is how messages name the file. A part that is missing, cannot be unpacked or
    is not well-formed XML is a `DocumentError` naming the part and the cause, when the
    workbook is opened (workbook, relations, shared strings, styles) or when a sheet is
    read.

    Raises (on opening): zipfile.BadZipFile (not a ZIP package at all), DocumentError
    (a damaged part).
    """

    def __init__(self, stream: IO[bytes], name: str = "the workbook") -> None:
        from openpyxl.utils.datetime import (  # type: ignore[import-untyped]
            CALENDAR_MAC_1904,
            CALENDAR_WINDOWS_1900,
        )

        self.name = name
        """How messages name the file (its workspace path)."""
        self.package = zipfile.ZipFile(stream)
        """The ZIP package, for parts this class does not read (document properties)."""
        try:
            book = self.part_xml("xl/workbook.xml")
            relations = self.part_xml("xl/_rels/workbook.xml.rels")
            targets = {r.get("Id"): r.get("Target", "") for r in relations}
            self.sheets: list[SheetPart] = []
            for sheet in book.iter(f"{_NS}sheet"):
                target = targets.get(sheet.get(_REL_ID), "")
                part = target.lstrip("/") if target.startswith("/") else f"xl/{target}"
                self.sheets.append(
                    SheetPart(
                        sheet.get("name", ""),
                        part if "worksheets/" in part else None,
                        sheet.get("state", "visible"),
                    )
                )
            properties = book.find(f"{_NS}workbookPr")
            in_1904 = properties is not None and properties.get("date1904") in _TRUE
            self._epoch = CALENDAR_MAC_1904 if in_1904 else CALENDAR_WINDOWS_1900
            self._strings = self._shared_strings()
            self._dates = self._date_styles()
        except BaseException:
            self.package.close()
            raise

    def close(self) -> None:
        """Close the package (not the stream it was given)."""
        self.package.close()

    def __enter__(self) -> Workbook:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def sheet(self, name: str) -> SheetPart:
        """The sheet called `name` (one of `sheets`)."""
        return next(s for s in self.sheets if s.name == name)

    def damaged(self, part: str, problem: str) -> DocumentError:
        """The error for `part` of this package, which `problem` ("is missing", ...)."""
        return DocumentError(
            f"{self.name!r} could not be read as XLSX: the file looks damaged: its part "
            f"{part} {problem}. Open the file in Excel or LibreOffice and save it again, or "
            "get an undamaged copy."
        )

    def _unpacking(self, part: str, exc: BaseException) -> DocumentError:
        detail = " ".join(str(exc).split())[:200] or type(exc).__name__
        return self.damaged(part, f"cannot be unpacked ({detail})")

    def part_xml(self, part: str) -> ElementTree.Element:
        """The parsed XML of `part`.

        Raises:
            DocumentError: the part is missing, cannot be unpacked, or is not well-formed
                XML; the message names the part and the cause.
        """
        root = self.optional_part_xml(part)
        if root is None:
            raise self.damaged(part, "is missing")
        return root

    def optional_part_xml(self, part: str) -> ElementTree.Element | None:
        """The parsed XML of `part`, or None when the package has no such part.

        Raises:
            DocumentError: the part cannot be unpacked or is not well-formed XML.
        """
        try:
            data = self.package.read(part)
        except KeyError:
            return None
        except _UNPACKING_ERRORS as exc:
            raise self._unpacking(part, exc) from None
        try:
            return ElementTree.fromstring(data)
        except ElementTree.ParseError as exc:
            raise self.damaged(part, f"is not well-formed XML ({exc})") from None

    @contextmanager
    def open_part(self, part: str) -> Iterator[IO[bytes]]:
        """`part` as a stream for the block; damage found while opening or reading it is a
        `DocumentError` naming the part (as `part_xml` words it)."""
        try:
            stream = self.package.open(part)
        except KeyError:
            raise self.damaged(part, "is missing") from None
        except _UNPACKING_ERRORS as exc:
            raise self._unpacking(part, exc) from None
        with stream:
            try:
                yield stream
            except _UNPACKING_ERRORS as exc:
                raise self._unpacking(part, exc) from None

    def _shared_strings(self) -> list[str]:
        root = self.optional_part_xml("xl/sharedStrings.xml")
        if root is None:
            return []
        strings: list[str] = []
        for item in root.iter(f"{_NS}si"):
            # Rich text runs, without phonetic guides (rPh).
            texts = [t.text or "" for t in item.iter(f"{_NS}t")]
            guides = {id(t) for p in item.iter(f"{_NS}rPh") for t in p.iter(f"{_NS}t")}
            if guides:
                texts = [t.text or "" for t in item.iter(f"{_NS}t") if id(t) not in guides]
            strings.append("".join(texts))
        return strings

    def _date_styles(self) -> dict[str, bool]:
        """Cell format index (as the cells' ``s`` attribute writes it) -> True for a date
        or time, False for a duration; formats that are neither are left out."""
        from openpyxl.styles.numbers import (  # type: ignore[import-untyped]
            BUILTIN_FORMATS,
            is_date_format,
            is_timedelta_format,
        )

        styles = self.optional_part_xml("xl/styles.xml")
        if styles is None:
            return {}
        codes: dict[int, str] = dict(BUILTIN_FORMATS)
        for fmt in styles.iter(f"{_NS}numFmt"):
            number = fmt.get("numFmtId", "")
            if number.isdigit():
                codes[int(number)] = fmt.get("formatCode", "")
        found: dict[str, bool] = {}
        formats = styles.find(f"{_NS}cellXfs")
        for index, xf in enumerate(formats if formats is not None else []):
            number = xf.get("numFmtId", "0")
            code = codes.get(int(number), "") if number.isdigit() else ""
            if code and is_date_format(code):
                found[str(index)] = not is_timedelta_format(code)
        return found

    def _number(self, raw: str, style: str | None) -> str:
        from openpyxl.utils.datetime import from_excel

        kind = self._dates.get(style) if style else None
        if kind is None and _NUMBER.fullmatch(raw):
            return raw
        try:
            value: Any = float(raw)
        except ValueError:
            return raw
        if kind is not None:
            with contextlib.suppress(ValueError, OverflowError):
                value = from_excel(value, self._epoch, timedelta=not kind)
        return cell_text(value)

    def rows(
        self, sheet: SheetPart, first: int = 1, last: int | None = None
    ) -> Iterator[tuple[int, list[str]]]:
        """(row number, cell texts without trailing empty cells) for each non-empty row
        of `sheet` from `first` to `last`; a formula without a cached value reads as
        ``=FORMULA (formula, not computed)``."""
        if sheet.part is None:
            return
        reader = _SheetReader(self, first, last)
        with self.open_part(sheet.part) as stream:
            while not reader.done and (block := stream.read(_BLOCK)):
                _feed(reader, sheet, block, final=False)
                yield from reader.take()
            if not reader.done:
                _feed(reader, sheet, b"", final=True)
            yield from reader.take()

    def comments(self, sheet: SheetPart) -> list[tuple[str, str, str]]:
        """The cell comments (notes) of `sheet` as (cell, author, text), in the order the
        file lists them; they live in a part of their own, next to the sheet."""
        if sheet.part is None:
            return []
        folder, _, name = sheet.part.rpartition("/")
        relations = self.optional_part_xml(f"{folder}/_rels/{name}.rels")
        if relations is None:
            return []
        found: list[tuple[str, str, str]] = []
        for relation in relations:
            if not relation.get("Type", "").endswith("/comments"):
                continue
            target = relation.get("Target", "")
            part = target.lstrip("/") if target.startswith("/") else f"{folder}/{target}"
            root = self.optional_part_xml(posixpath.normpath(part))
            if root is None:
                continue
            authors = [a.text or "" for a in root.iter(f"{_NS}author")]
            for comment in root.iter(f"{_NS}comment"):
                number = comment.get("authorId", "")
                author = (
                    authors[int(number)] if number.isdigit() and int(number) < len(authors) else ""
                )
                text = "".join(t.text or "" for t in comment.iter(f"{_NS}t"))
                text = " ".join(text.split())
                if text:
                    found.append((comment.get("ref", ""), author, text))
        return found

    def recorded_range(self, sheet: SheetPart) -> str | None:
        """The used range `sheet` records at its start (``A1:F50001``), or None."""
        if sheet.part is None:
            return None
        with self.open_part(sheet.part) as stream:
            head = stream.read(_HEAD_BYTES)
        match = _DIMENSION.search(head)
        return match.group(1).decode() if match else None

    def facts(self, sheet: SheetPart) -> SheetFacts:
        """Counts of `sheet` read from its XML bytes with regular expressions (no parse)."""
        counts = [0, 0, 0, 0]
        if sheet.part is None:
            return SheetFacts(0, 0, 0, 0)
        carry = b""
        with self.open_part(sheet.part) as stream:
            while True:
                block = stream.read(1 << 20)
                data = carry + block
                cut = _last_cell_end(data) if block else len(data)
                whole, carry = data[:cut], data[cut:]
                for found in _FACTS.finditer(whole):
                    start = found.start()
                    if found.group("f"):
                        counts[0] += _UNCOMPUTED.match(whole, start) is not None
                    elif found.group("row"):
                        counts[1] += 1
                    elif found.group("col"):
                        columns = _COLUMN_SPAN.match(whole, start)
                        if columns:
                            counts[2] += int(columns.group(2)) - int(columns.group(1)) + 1
                    else:
                        counts[3] += 1
                if not block:
                    break
        return SheetFacts(*counts)


# One pass finds every element a count needs; the specific patterns then look at each.
_FACTS = re.compile(
    rb"<(?:\w+:)?(?:(?P<f>f)[\s>/]|(?P<row>row)\s[^>]*\bhidden=\"(?:1|true)\""
    rb"|(?P<col>col)\s[^>]*\bhidden=\"(?:1|true)\"|(?P<merged>mergeCell)\b)"
)
# A cell whose formula has no cached value: <f>..</f> (or <f .../>) then, at most, an
# empty <v/>, then the end of the cell.
_UNCOMPUTED = re.compile(
    rb"<(?:\w+:)?f\b[^>]*(?:/>|>[^<]*</(?:\w+:)?f>)\s*"
    rb"(?:<(?:\w+:)?v\s*/>|<(?:\w+:)?v>\s*</(?:\w+:)?v>)?\s*</(?:\w+:)?c>"
)
_COLUMN_SPAN = re.compile(rb"<(?:\w+:)?col\b(?=[^>]*\bmin=\"([0-9]+)\")(?=[^>]*\bmax=\"([0-9]+)\")")
_DIMENSION = re.compile(rb"<(?:\w+:)?dimension\s+ref=\"([A-Z]+[0-9]+(?::[A-Z]+[0-9]+)?)\"")
_HEAD_BYTES = 65536


def _feed(reader: _SheetReader, sheet: SheetPart, block: bytes, *, final: bool) -> None:
    """Parse `block` of `sheet`; broken XML is a `DocumentError` naming the part."""
    try:
        reader.parser.Parse(block, final)
    except expat.ExpatError as exc:
        raise reader.book.damaged(
            str(sheet.part),
            f"is not well-formed XML ({expat.ErrorString(exc.code)}: "
            f"line {exc.lineno}, column {exc.offset})",
        ) from None


def _last_cell_end(data: bytes) -> int:
    """Where counting may stop in `data` without cutting a match: after the last row end
    (a formula cell spans several tags and lies inside a row), else after the last tag
    (the other counts look at one tag each)."""
    row_end = data.rfind(b"row>")
    return row_end + 4 if row_end >= 0 else data.rfind(b">") + 1


class _SheetReader:
    """expat handlers that build each row's cell texts, and the rows finished so far."""

    def __init__(self, book: Workbook, first: int, last: int | None) -> None:
        self.book = book
        self.first = first
        self.last = last
        self.done = False
        self.finished: list[tuple[int, list[str]]] = []
        self.row_number = 0
        self.cells: list[str] = []
        self.column = 0
        self.kind: str | None = None
        self.style: str | None = None
        self.reference = ""
        self.value: list[str] | None = None
        self.formula: str | None = None
        self.shared: dict[str, tuple[str, str]] = {}
        self.shared_id: str | None = None
        self.text: list[str] = []
        self.collect: list[str] | None = None
        self.in_guide = False
        self.wanted = True
        parser = expat.ParserCreate()
        parser.buffer_text = True
        parser.StartElementHandler = self.start
        parser.EndElementHandler = self.end
        parser.CharacterDataHandler = self.data
        self.parser = parser

    def take(self) -> list[tuple[int, list[str]]]:
        rows, self.finished = self.finished, []
        return rows

    def data(self, text: str) -> None:
        if self.collect is not None and not self.in_guide:
            self.collect.append(text)

    def start(self, name: str, attributes: dict[str, str]) -> None:
        tag = _local(name) if ":" in name else name
        if tag == "c":
            if not self.wanted:
                return
            self.kind = attributes.get("t")
            self.style = attributes.get("s")
            reference = attributes.get("r")
            if reference:
                self.reference = reference
                letters = reference.rstrip(_DIGITS)
                self.column = _column_index(letters) if letters else self.column + 1
            else:
                self.column += 1
                self.reference = ""
            self.value = None
            self.formula = None
            self.shared_id = None
            self.text = []
        elif tag == "v" and self.wanted:
            self.value = []
            self.collect = self.value
        elif tag == "f" and self.wanted:
            self.formula = ""
            self.collect = []
            if attributes.get("t") == "shared":
                self.shared_id = attributes.get("si")
        elif tag == "t" and self.wanted:
            self.collect = self.text
        elif tag == "rPh":
            self.in_guide = True
        elif tag == "row":
            number = attributes.get("r")
            self.row_number = int(number) if number and number.isdigit() else self.row_number + 1
            self.cells = []
            self.column = 0
            self.wanted = self.row_number >= self.first
            if self.last is not None and self.row_number > self.last:
                self.wanted = False
                self.done = True
                self.parser.StartElementHandler = None
                self.parser.EndElementHandler = None
                self.parser.CharacterDataHandler = None

    def end(self, name: str) -> None:
        tag = _local(name) if ":" in name else name
        if tag == "c":
            if self.wanted and self.column <= MAX_COLUMNS:
                text = self.cell()
                if text:
                    if len(self.cells) < self.column - 1:
                        self.cells.extend([""] * (self.column - 1 - len(self.cells)))
                    self.cells.append(text)
        elif tag == "v" or tag == "t":
            self.collect = None
        elif tag == "f":
            if self.collect is not None:
                self.formula = "".join(self.collect)
            self.collect = None
            if self.shared_id is not None and self.formula:
                self.shared[self.shared_id] = (self.formula, self.reference)
        elif tag == "rPh":
            self.in_guide = False
        elif tag == "row" and self.wanted and self.cells:
            self.finished.append((self.row_number, self.cells))

    def cell(self) -> str:
        """The text of the cell just ended."""
        raw = "".join(self.value) if self.value else ""
        kind = self.kind
        if kind == "inlineStr":
            return "".join(self.text)
        if raw == "" and self.formula is not None:
            return self.uncomputed()
        if raw == "":
            return ""
        if kind == "s":
            strings = self.book._strings
            return strings[int(raw)] if raw.isdigit() and int(raw) < len(strings) else ""
        if kind is None or kind == "n":
            return self.book._number(raw, self.style)
        if kind == "b":
            return "TRUE" if raw in _TRUE else "FALSE"
        return raw  # "str" (a formula's text), "e" (an error such as #DIV/0!), "d" (ISO)

    def uncomputed(self) -> str:
        formula = self.formula or ""
        if not formula and self.shared_id in self.shared:
            from openpyxl.formula.translate import Translator  # type: ignore[import-untyped]

            origin, where = self.shared[self.shared_id]
            try:
                formula = Translator("=" + origin, where).translate_formula(self.reference)[1:]
            except (ValueError, KeyError, IndexError):
                formula = origin
        return f"={formula}{NOT_COMPUTED}" if formula else ""


@functools.lru_cache(maxsize=16384)
def _column_index(letters: str) -> int:
    index = 0
    for letter in letters:
        index = index * 26 + ord(letter) - 64
    return index
