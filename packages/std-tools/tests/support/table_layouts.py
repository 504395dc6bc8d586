"""PDFs of tables in known layouts, with the cells each table must come back with.

Used by the table tests and by benchmarks/bench_pdf_tables.py. Every layout is drawn with
fpdf2 from a grid of cell texts: ruled on every side, rules between rows only, rules above
and below the header only, a frame around an unruled body, no rules at all; with a header
cell spanning columns, cells of two lines, two tables on a page, a table set sideways, a
table continued over a page break. Pages that hold no table (text in two columns, a bar
chart, an empty ruled form, a frame around text) come with an empty list.

A spanning cell's text is expected in its top-left position, the rest of it empty; a cell
of two lines is expected as its lines joined by a space.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from fpdf import FPDF

__all__ = ["LAYOUTS", "NON_TABLES", "Expected", "write_layout"]

_PLACES = [
    "Austria", "Belgium", "Croatia", "Denmark", "Estonia", "Finland", "France", "Germany",
    "Greece", "Hungary", "Ireland", "Italy", "Latvia", "Lithuania", "Luxembourg", "Malta",
    "Netherlands", "Poland", "Portugal", "Romania", "Slovakia", "Slovenia", "Spain",
    "Sweden", "Norway", "Iceland", "United Kingdom", "Czech Republic", "Cyprus", "Bulgaria",
]  # fmt: skip
_GOODS = ["hammer", "brush", "lamp", "board", "pot"]
_HEADS = ["Revenue", "Costs", "Staff", "Share %", "Change", "Exports", "Imports", "Total"]
_TEXT = (
    "the report sets out how each region spent its budget over the year and what "
    "changed compared with the year before while noting where figures are provisional "
    "and may be revised once the final accounts are closed by the statistics office "
    "next spring"
)
_WORDS = _TEXT.split(" ")
_NOTES = ["see note 3", "provisional", "revised in May", "estimate", "final figure"]

_FONT = 9.0
_LINE = 5.0  # mm per text line
_PAD = 2.0  # mm between a cell's side and its text


@dataclass
class Expected:
    """One table as the finder must return it: rows of cell texts (a spanning cell's text
    in its first position) and the spans as (row, column, rows, columns)."""

    rows: list[list[str]]
    spans: list[tuple[int, int, int, int]] = field(default_factory=list)
    continues: bool = False
    """Whether the table carries on the last table of the page before: the tools join the
    two (without this part's first row when it repeats the table's column heads)."""


@dataclass
class _Grid:
    cells: list[list[str]]  # "\n" separates the lines of a cell
    spans: list[tuple[int, int, int, int]] = field(default_factory=list)
    numeric_from: int = 1  # columns from this one on are right-aligned


def _number(rng: random.Random) -> str:
    return f"{rng.randint(0, 99999):,}" if rng.random() < 0.5 else f"{rng.uniform(0, 100):.1f}"


def _grid(
    rng: random.Random,
    rows: int,
    columns: int,
    *,
    span: bool = False,
    two_lines: bool = False,
    sparse: bool = False,
    two_line_header: bool = False,
) -> _Grid:
    heads = rng.sample(_HEADS, columns - 1)
    if two_line_header:
        heads = [
            f"{head}\n({rng.choice(['EUR m', 'units', '% of total', 'thousands'])})"
            for head in heads
        ]
    header = ["Country", *heads]
    body = []
    for place in rng.sample(_PLACES, rows):
        values = [_number(rng) for _ in range(columns - 1)]
        if sparse:
            values = [v if rng.random() < 0.7 else "" for v in values]
            values[0] = values[0] or _number(rng)
        body.append([place, *values])
    cells = [header, *body]
    spans: list[tuple[int, int, int, int]] = []
    if span:
        # A header row above the column heads, one cell spanning the number columns.
        cells.insert(0, ["", "Year 2024 in thousands", *([""] * (columns - 2))])
        spans.append((0, 1, 1, columns - 1))
    if two_lines:
        for row in cells[2 + span :: 3]:
            row[0] = f"{row[0]}\n({rng.choice(_NOTES)})"
    return _Grid(cells, spans)


def _expected(grid: _Grid, continues: bool = False) -> Expected:
    """The table as found: the lines of a cell joined by spaces."""
    rows = [[" ".join(c.split("\n")) for c in row] for row in grid.cells]
    return Expected(rows, list(grid.spans), continues)


def _draw(
    pdf: FPDF,
    grid: _Grid,
    x: float,
    y: float,
    rules: str,
    *,
    widths: list[float] | None = None,
    size: float = _FONT,
    gap: float = 3.0,
    leading: float = 1.5,
    shaded: bool = False,
) -> tuple[float, list[float]]:
    """Draw `grid` at (x, y) with `rules` ("all", "rows", "booktabs", "frame", "none"),
    in a font of `size` points with `gap` mm added between columns and `leading` mm
    between rows, every other row on a grey band when `shaded`; returns the y below it
    and the column widths."""
    pdf.set_font("helvetica", size=size)
    line = _LINE * size / _FONT
    columns = len(grid.cells[0])
    spanned = {(r, c) for r, c, nr, nc in grid.spans for c in range(c, c + nc) for r in [r]}
    if widths is None:
        widths = []
        for c in range(columns):
            texts = [
                line
                for r, row in enumerate(grid.cells)
                if (r, c) not in spanned
                for line in row[c].split("\n")
            ]
            widths.append(max(pdf.get_string_width(t) for t in texts) + 2 * _PAD + gap)
        for r, c, _nr, nc in grid.spans:
            need = pdf.get_string_width(grid.cells[r][c]) + 2 * _PAD
            have = sum(widths[c : c + nc])
            if need > have:
                widths[c + nc - 1] += need - have
    edges = [x]
    for w in widths:
        edges.append(edges[-1] + w)
    heights = [max(len(c.split("\n")) for c in row) * line + leading for row in grid.cells]
    tops = [y]
    for h in heights:
        tops.append(tops[-1] + h)
    pdf.set_line_width(0.3)
    if shaded:
        pdf.set_fill_color(225, 225, 225)
        for r in range(1, len(grid.cells), 2):
            pdf.rect(edges[0], tops[r], edges[-1] - edges[0], heights[r], style="F")
    for r, row in enumerate(grid.cells):
        for c, text in enumerate(row):
            if not text:
                continue
            width = widths[c]
            align = "R" if c >= grid.numeric_from else "L"
            for sr, sc, _nr, nc in grid.spans:
                if (sr, sc) == (r, c):
                    width = sum(widths[c : c + nc])
                    align = "C"
            for k, text_line in enumerate(text.split("\n")):
                pdf.set_xy(edges[c] + _PAD, tops[r] + 0.75 + k * line)
                pdf.cell(width - 2 * _PAD, line, text_line, align=align)
    left, right, top, bottom = edges[0], edges[-1], tops[0], tops[-1]
    if rules in ("all", "rows"):
        for t in tops:
            pdf.line(left, t, right, t)
    if rules == "all":
        for c, e in enumerate(edges):
            for r in range(len(grid.cells)):
                inner = 0 < c < columns
                covered = any(sr == r and sc < c < sc + nc for sr, sc, _nr, nc in grid.spans)
                if not (inner and covered):
                    pdf.line(e, tops[r], e, tops[r + 1])
    if rules == "booktabs":
        header_end = tops[1 + len(grid.spans)]
        for t in (top, header_end, bottom):
            pdf.line(left, t, right, t)
    if rules == "frame":
        pdf.rect(left - 1, top - 1, right - left + 2, bottom - top + 2)
        pdf.line(left - 1, tops[1 + len(grid.spans)], right + 1, tops[1 + len(grid.spans)])
    return bottom, widths


def _prose(pdf: FPDF, rng: random.Random, x: float, y: float, width: float, lines: int) -> float:
    pdf.set_font("helvetica", size=_FONT)
    text = " ".join(rng.choice(_WORDS) for _ in range(lines * 14))
    pdf.set_xy(x, y)
    pdf.multi_cell(width, _LINE, text, align="L", max_line_height=_LINE)
    return pdf.get_y()


def _title(pdf: FPDF, text: str, y: float) -> float:
    pdf.set_font("helvetica", style="B", size=11)
    pdf.set_xy(20, y)
    pdf.cell(0, 7, text)
    return y + 10


def _one(rules: str, **options: bool) -> Callable[[FPDF, random.Random], list[list[Expected]]]:
    def write(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
        pdf.add_page()
        y = _title(pdf, "Table 4: Figures by country", 20)
        y = _prose(pdf, rng, 20, y, 170, 3) + 6
        grid = _grid(rng, rng.randint(6, 12), rng.randint(3, 6), **options)
        size = rng.choice([7.0, 8.0, 9.0, 10.0])
        gap = rng.choice([3.0, 4.0, 6.0, 9.0])
        y, _ = _draw(pdf, grid, 20, y, rules, size=size, gap=gap)
        _prose(pdf, rng, 20, y + 8, 170, 4)
        return [[_expected(grid)]]

    return write


def _shaded(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    """A table without rules whose rows are told apart by grey bands only: its lines are
    evenly spaced, those of a cell of two lines as those of two rows."""
    pdf.add_page()
    y = _title(pdf, "Table 3: Figures by country", 20)
    grid = _grid(rng, rng.randint(6, 10), rng.randint(3, 5), two_lines=True)
    _draw(pdf, grid, 20, y, "none", leading=0.0, shaded=True, gap=rng.choice([4.0, 8.0]))
    return [[_expected(grid)]]


def _vertical_heads(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    """A ruled table whose column heads are set vertically, reading upwards."""
    pdf.add_page()
    y = _title(pdf, "Table 5: Votes by district", 20)
    grid = _grid(rng, rng.randint(5, 9), rng.randint(4, 7))
    widths = [40.0, *[14.0] * (len(grid.cells[0]) - 1)]
    edges = [20.0]
    for w in widths:
        edges.append(edges[-1] + w)
    tops = [y, y + 24.0]
    for _ in grid.cells[1:]:
        tops.append(tops[-1] + _LINE + 1.5)
    pdf.set_font("helvetica", size=_FONT)
    pdf.set_line_width(0.3)
    for c, head in enumerate(grid.cells[0]):
        if c == 0:
            pdf.set_xy(edges[0] + _PAD, tops[1] - _LINE - 1)
            pdf.cell(widths[0] - 2 * _PAD, _LINE, head)
            continue
        x, base = edges[c] + widths[c] / 2 + 1.2, tops[1] - 2
        with pdf.rotation(90, x, base):
            pdf.text(x, base, head)
    for r, row in enumerate(grid.cells[1:], start=1):
        for c, text in enumerate(row):
            pdf.set_xy(edges[c] + _PAD, tops[r] + 0.75)
            pdf.cell(widths[c] - 2 * _PAD, _LINE, text, align="R" if c else "L")
    for t in tops:
        pdf.line(edges[0], t, edges[-1], t)
    for e in edges:
        pdf.line(e, tops[0], e, tops[-1])
    return [[_expected(grid)]]


def _comments(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    """A ruled table with a column of long comments beside short cells."""
    pdf.add_page()
    y = _title(pdf, "Table 8: Outbreaks reported", 20)
    grid = _grid(rng, rng.randint(4, 7), 3)
    grid.cells[0].append("Comments")
    for row in grid.cells[1:]:
        row.append(" ".join(rng.choice(_WORDS) for _ in range(rng.randint(14, 22))))
    pdf.set_font("helvetica", size=_FONT)
    widths = [35.0, 22.0, 22.0, 90.0]
    edges = [20.0]
    for w in widths:
        edges.append(edges[-1] + w)
    wrapped = [
        cast(
            list[str],
            pdf.multi_cell(widths[3] - 2 * _PAD, _LINE, row[3], dry_run=True, output="LINES"),
        )
        for row in grid.cells
    ]
    tops = [y]
    for lines in wrapped:
        tops.append(tops[-1] + len(lines) * _LINE + 2)
    for r, row in enumerate(grid.cells):
        for c, text in enumerate(row[:3]):
            pdf.set_xy(edges[c] + _PAD, tops[r] + 1)
            pdf.cell(widths[c] - 2 * _PAD, _LINE, text, align="R" if c else "L")
        pdf.set_xy(edges[3] + _PAD, tops[r] + 1)
        pdf.multi_cell(widths[3] - 2 * _PAD, _LINE, row[3])
    pdf.set_line_width(0.3)
    for t in tops:
        pdf.line(edges[0], t, edges[-1], t)
    for e in edges:
        pdf.line(e, tops[0], e, tops[-1])
    rows = [[*row[:3], " ".join(lines)] for row, lines in zip(grid.cells, wrapped, strict=True)]
    return [[Expected(rows)]]


def _overprinted(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    """A table without rules whose first column is made bold by printing it twice."""
    pdf.add_page()
    y = _title(pdf, "Table 9: Results", 20)
    grid = _grid(rng, rng.randint(6, 10), rng.randint(3, 5))
    _draw(pdf, grid, 20, y, "none")
    again = _Grid([[row[0], *([""] * (len(row) - 1))] for row in grid.cells])
    _draw(pdf, again, 20, y, "none", widths=_draw_widths(pdf, grid))
    return [[_expected(grid)]]


def _draw_widths(pdf: FPDF, grid: _Grid, gap: float = 3.0) -> list[float]:
    pdf.set_font("helvetica", size=_FONT)
    return [
        max(pdf.get_string_width(row[c]) for row in grid.cells) + 2 * _PAD + gap
        for c in range(len(grid.cells[0]))
    ]


def _numbered_list(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    """Steps numbered 1. to 5., set with a hanging indent: a list, not a table."""
    pdf.add_page()
    y = _title(pdf, "Method", 20)
    y = _prose(pdf, rng, 20, y, 170, 3) + 4
    pdf.set_font("helvetica", size=_FONT)
    for k in range(1, rng.randint(4, 7)):
        pdf.set_xy(28, y)
        pdf.cell(8, _LINE, f"{k}.")
        pdf.set_xy(40, y)
        pdf.cell(120, _LINE, " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 9))))
        y += _LINE + 1
    _prose(pdf, rng, 20, y + 4, 170, 3)
    return [[]]


def _price_list(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    """A list of items and prices under headings of one cell, without rules."""
    pdf.add_page()
    y = _title(pdf, "Price list", 20)
    rows: list[list[str]] = []
    for heading in rng.sample(["Tools", "Paint", "Garden", "Timber", "Lighting"], 3):
        rows.append([heading, ""])
        for _ in range(rng.randint(3, 5)):
            item = " ".join(rng.sample(["steel", "large", "oak", "outdoor", "white", "set"], 2))
            rows.append(
                [
                    f"{item.capitalize()} {rng.choice(_GOODS)}",
                    f"{rng.randint(2, 90)}.{rng.randint(0, 99):02d} EUR",
                ]
            )
    grid = _Grid(rows)
    _draw(pdf, grid, 20, y, "none", gap=60.0)
    return [[_expected(grid)]]


def _sections(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    """One unruled table in sections: a heading of one cell over each, a wider space
    before each heading than between rows (as key figures in a report are set)."""
    pdf.add_page()
    y = _title(pdf, "Key figures", 20)
    years = ["2024", "2023"]
    parts: list[_Grid] = []
    for k, heading in enumerate(rng.sample(["Class A", "Class B", "Total", "Reserves"], 3)):
        rows = [[heading, "", ""]]
        for item in rng.sample(["Net assets", "Units", "Value per unit", "Costs", "Result"], 3):
            rows.append([f"{item} at 31 December", _number(rng), _number(rng)])
        parts.append(_Grid([["", *years], *rows] if k == 0 else rows))
    widths = [90.0, 35.0, 35.0]
    expected: list[list[str]] = []
    for part in parts:
        y, _ = _draw(pdf, part, 20, y, "none", widths=widths)
        y += rng.choice([6.0, 7.0, 8.0])
        expected.extend(part.cells)
    _prose(pdf, rng, 20, y + 6, 170, 3)
    return [[Expected(expected)]]


def _same_columns(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    """Two unruled tables of the same columns, one under the other, each under its own
    caption and with its own column heads: two tables, not one."""
    pdf.add_page()
    first, second = _grid(rng, 4, 3), _grid(rng, 5, 3)
    second.cells[0] = list(first.cells[0])
    y = _title(pdf, "Table 1: Spring", 20)
    y, widths = _draw(pdf, first, 20, y, "none", gap=20.0)
    y = _title(pdf, "Table 2: Autumn", y + 4)
    _draw(pdf, second, 20, y, "none", widths=widths)
    return [[_expected(first), _expected(second)]]


def _two_tables(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    pdf.add_page()
    y = _title(pdf, "Table 1: First quarter", 20)
    first = _grid(rng, 5, 4)
    y, _ = _draw(pdf, first, 20, y, "none")
    y = _prose(pdf, rng, 20, y + 8, 170, 2) + 6
    y = _title(pdf, "Table 2: Second quarter", y)
    second = _grid(rng, 6, 5)
    _draw(pdf, second, 20, y, "rows")
    return [[_expected(first), _expected(second)]]


def _rotated(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    pdf.add_page()
    grid = _grid(rng, 10, 6)
    with pdf.rotation(90, 105, 148):
        _draw(pdf, grid, 40, 110, "booktabs")
    return [[_expected(grid)]]


def _continued(
    heads: bool, pages: int = 2
) -> Callable[[FPDF, random.Random], list[list[Expected]]]:
    """A table continued over `pages` pages, under the same column heads on each further
    page (`heads`) or without them."""

    def write(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
        grid = _grid(rng, 30, 4)
        extra = 8 + 38 * (pages - 2)
        grid.cells.extend(
            [f"Region {k}", *(_number(rng) for _ in range(3))] for k in range(1, extra + 1)
        )
        pdf.set_auto_page_break(False)
        pdf.add_page()
        y = _title(pdf, "Table 7: All countries", 20)
        y = _prose(pdf, rng, 20, y, 170, 12) + 6
        # As many rows as fit above the bottom margin, the rest at the top of the next
        # pages, a full page each but the last.
        fit = int((280 - y) // (_LINE + 1.5)) - 1
        top = _Grid(grid.cells[: fit + 1])
        _, widths = _draw(pdf, top, 20, y, "rows")
        found = [[_expected(top)]]
        body = grid.cells[fit + 1 :]
        while body:
            pdf.add_page()
            room = int(260 // (_LINE + 1.5)) - (1 if heads else 0)
            part, body = body[:room], body[room:]
            rest = _Grid([grid.cells[0], *part] if heads else part)
            y, _ = _draw(pdf, rest, 20, 20, "rows", widths=widths)
            found.append([_expected(rest, continues=True)])
        _prose(pdf, rng, 20, y + 8, 170, 3)
        return found

    return write


def _text_columns(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    pdf.add_page()
    _title(pdf, "Annual review", 20)
    _prose(pdf, rng, 20, 32, 80, 30)
    _prose(pdf, rng, 110, 32, 80, 30)
    return [[]]


def _chart(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    pdf.add_page()
    _title(pdf, "Figure 2: Exports by country", 20)
    pdf.set_font("helvetica", size=_FONT)
    pdf.set_line_width(0.3)
    base, left = 150.0, 40.0
    pdf.line(left, 40, left, base)
    pdf.line(left, base, 190, base)
    for k in range(6):
        y = base - k * 20
        pdf.line(left, y, 190, y)
        pdf.set_xy(20, y - 2.5)
        pdf.cell(16, 5, str(k * 200), align="R")
    places = rng.sample(_PLACES[:12], 6)
    for k, place in enumerate(places):
        height = rng.uniform(20, 100)
        pdf.set_fill_color(90, 120, 200)
        pdf.rect(left + 6 + k * 24, base - height, 14, height, style="F")
        pdf.set_xy(left + 2 + k * 24, base + 2)
        pdf.cell(22, 5, place[:9], align="C")
    _prose(pdf, rng, 20, 170, 170, 4)
    return [[]]


def _empty_form(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    pdf.add_page()
    _title(pdf, "Form B: to be filled in by hand", 20)
    pdf.set_line_width(0.3)
    for r in range(9):
        pdf.line(20, 40 + r * 10, 190, 40 + r * 10)
    for c in range(6):
        pdf.line(20 + c * 34, 40, 20 + c * 34, 120)
    _prose(pdf, rng, 20, 130, 170, 3)
    return [[]]


def _framed_text(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    pdf.add_page()
    pdf.set_line_width(0.5)
    pdf.rect(12, 12, 186, 273)
    _title(pdf, "Foreword", 20)
    _prose(pdf, rng, 20, 32, 170, 25)
    return [[]]


def _lined_text(pdf: FPDF, rng: random.Random) -> list[list[Expected]]:
    """Text in two columns over a grid of background lines."""
    pdf.add_page()
    _title(pdf, "Outreach", 20)
    pdf.set_draw_color(200, 200, 200)
    pdf.set_line_width(0.2)
    for r in range(9):
        pdf.line(15, 35 + r * 15, 195, 35 + r * 15)
    for c in range(7):
        pdf.line(15 + c * 30, 35, 15 + c * 30, 155)
    pdf.set_draw_color(0, 0, 0)
    _prose(pdf, rng, 20, 36, 80, 22)
    _prose(pdf, rng, 110, 36, 80, 22)
    return [[]]


LAYOUTS: dict[str, Callable[[FPDF, random.Random], list[list[Expected]]]] = {
    "ruled": _one("all"),
    "ruled_two_line_cells": _one("all", two_lines=True),
    "ruled_spanning_header": _one("all", span=True),
    "ruled_vertical_heads": _vertical_heads,
    "ruled_with_comments": _comments,
    "overprinted_bold_column": _overprinted,
    "rules_between_rows": _one("rows"),
    "rules_between_rows_two_line_cells": _one("rows", two_lines=True),
    "header_rules": _one("booktabs"),
    "framed_unruled_body": _one("frame"),
    "unruled": _one("none"),
    "unruled_spanning_header": _one("none", span=True),
    "unruled_sparse": _one("none", sparse=True),
    "unruled_two_line_header": _one("none", two_line_header=True),
    "unruled_two_line_cells": _one("none", two_lines=True),
    "shaded_rows_two_line_cells": _shaded,
    "header_rules_two_line_cells": _one("booktabs", two_lines=True),
    "price_list": _price_list,
    "sections_under_headings": _sections,
    "two_tables_same_columns": _same_columns,
    "two_tables": _two_tables,
    "rotated": _rotated,
    "continued_over_a_page": _continued(heads=True),
    "continued_without_heads": _continued(heads=False),
    "continued_over_three_pages": _continued(heads=True, pages=3),
}
"""Layouts with tables: each writes its pages and returns the expected tables per page."""

NON_TABLES: dict[str, Callable[[FPDF, random.Random], list[list[Expected]]]] = {
    "text_in_two_columns": _text_columns,
    "bar_chart": _chart,
    "empty_ruled_form": _empty_form,
    "frame_around_text": _framed_text,
    "text_over_a_grid": _lined_text,
    "numbered_list": _numbered_list,
}
"""Pages that hold no table; a finder must return nothing for them."""


def write_layout(path: Path, name: str, seed: int = 0) -> list[list[Expected]]:
    """Write the PDF of layout `name` (from `LAYOUTS` or `NON_TABLES`) to `path`; the
    expected tables of each of its pages."""
    rng = random.Random(f"{name}:{seed}")
    pdf = FPDF(format="A4")
    pdf.set_margins(20, 20, 20)
    pdf.set_auto_page_break(False)
    write = LAYOUTS.get(name) or NON_TABLES[name]
    expected = write(pdf, rng)
    pdf.output(str(path))
    return expected
