"""PDF tables in every layout come back cell for cell, as an agent gets them over MCP.

The PDFs are drawn by `support/table_layouts` with known cells: ruled on every side, rules
between rows only, header rules only, a ruled frame around an unruled body, no rules at
all; spanning headers, cells of two lines, two tables on a page, a sideways table, a
table continued over a page. Pages without a table (text in two columns, a bar chart, an
empty form, a framed page) must give none.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fpdf import FPDF
from mcp import Client
from mcp.types import TextContent
from table_layouts import LAYOUTS, NON_TABLES, Expected, write_layout

from doc_processing_std_tools.config import get_settings, load_settings, reset_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.documents.server import docs_server
from doc_processing_std_tools.filesystem.operations import Workspace


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """A workspace with one PDF per layout (seed 0), named after the layout."""
    work = tmp_path / "workspace"
    work.mkdir()
    reset_settings(
        load_settings(
            {"DPTTOOLS_WORKSPACE_DIR": str(work), "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT": "200000"}
        )
    )
    yield work.resolve()
    reset_settings()


async def _call(name: str, **arguments: object) -> str:
    async with Client(docs_server) as client:
        result = await client.call_tool(name, arguments)
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert not result.is_error, block.text
    return block.text


def _joined(expected: list[list[Expected]]) -> list[tuple[Expected, list[int]]]:
    """The tables as the tools return them, with the pages of their parts: a table that
    continues one on the page before is joined to it, without a repeated first row."""
    tables: list[tuple[Expected, list[int]]] = []
    for number, page in enumerate(expected, start=1):
        for table in page:
            if table.continues:
                whole, pages = tables[-1]
                skip = 1 if table.rows[0] == whole.rows[0] else 0
                joined = Expected([*whole.rows, *table.rows[skip:]], whole.spans)
                tables[-1] = (joined, [*pages, number])
            else:
                tables.append((table, [number]))
    return tables


@pytest.mark.anyio
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
async def test_each_layout_comes_back_cell_for_cell_over_mcp(folder: Path, layout: str) -> None:
    expected = _joined(write_layout(folder / f"{layout}.pdf", layout))
    answer = json.loads(await _call("extract_tables", path=f"{layout}.pdf", format="json"))
    found = answer["tables"]
    assert [t["rows"] for t in found] == [e.rows for e, _ in expected]
    for (want, pages), got in zip(expected, found, strict=True):
        spans = [(s["row"], s["column"], s["rows"], s["columns"]) for s in got["spans"]]
        assert spans == want.spans
        assert got["method"] in ("ruled", "aligned")
        assert 0.0 < got["confidence"] <= 1.0
        assert got["page"] == pages[0]
        boxes = [got["box"]]
        if len(pages) > 1:
            assert [p["page"] for p in got["parts"]] == pages
            boxes = [p["box"] for p in got["parts"]]
        else:
            assert "parts" not in got
        for left, top, right, bottom in boxes:
            assert 0 <= left < right <= 842 and 0 <= top < bottom <= 842


@pytest.mark.anyio
@pytest.mark.parametrize("layout", sorted(NON_TABLES))
async def test_pages_without_a_table_give_none(folder: Path, layout: str) -> None:
    write_layout(folder / f"{layout}.pdf", layout)
    text = await _call("extract_tables", path=f"{layout}.pdf")
    assert text == f"No tables were found in {layout}.pdf."


def _grid_methods(folder: Path, layout: str) -> list[str]:
    write_layout(folder / f"{layout}.pdf", layout)
    answer = json.loads(
        api.extract_tables(Workspace.from_settings(get_settings()), f"{layout}.pdf", "", "json")
    )
    return [t["method"] for t in answer["tables"]]


def test_the_method_says_whether_rules_or_alignment_found_the_table(folder: Path) -> None:
    assert _grid_methods(folder, "ruled") == ["ruled"]
    assert _grid_methods(folder, "unruled") == ["aligned"]
    assert _grid_methods(folder, "rules_between_rows") == ["aligned"]


def test_a_ruled_frame_does_not_swallow_the_unruled_body(folder: Path) -> None:
    # A frame and a rule under the header, nothing between the body's rows and columns:
    # each figure is a cell of its own, not one cell per row ("Austria 86.2 13.8 0 3,375").
    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    pdf.add_page()
    rows = [
        ["Country", "Share A", "Share B", "Other", "Count"],
        ["Austria", "86.2", "13.8", "0", "3,375"],
        ["Belgium", "71.0", "28.1", "0.9", "4,102"],
        ["Croatia", "64.4", "35.6", "0", "1,877"],
    ]
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            pdf.set_xy(22 + c * 34, 22 + r * 7)
            pdf.cell(30, 6, text, align="L" if c == 0 else "R")
    pdf.rect(20, 20, 174, 30)
    pdf.line(20, 28.5, 194, 28.5)
    pdf.output(str(folder / "framed.pdf"))
    answer = json.loads(
        api.extract_tables(Workspace.from_settings(get_settings()), "framed.pdf", "", "json")
    )
    assert [t["rows"] for t in answer["tables"]] == [rows]


def test_markdown_and_csv_say_which_spanning_cells_were_flattened(folder: Path) -> None:
    write_layout(folder / "span.pdf", "ruled_spanning_header")
    ws = Workspace.from_settings(get_settings())
    markdown = api.extract_tables(ws, "span.pdf")
    label = markdown.split("\n", 1)[0]
    assert label.startswith("### Table 1 (page 1, ruled, confidence ")
    assert label.endswith("; spanning cells flattened: B1:" + label[-3:-1] + ")")
    csv = api.extract_tables(ws, "span.pdf", format="csv")
    assert "; spanning cells flattened: B1:" in csv.split("\n", 1)[0]
    assert csv.split("\n")[1].startswith(",Year 2024 in thousands,,")


def test_a_table_over_a_page_break_is_one_table(folder: Path) -> None:
    expected = write_layout(folder / "long.pdf", "continued_over_a_page")
    (first,), (rest,) = expected
    ws = Workspace.from_settings(get_settings())
    answer = json.loads(api.extract_tables(ws, "long.pdf", "", "json"))
    (table,) = answer["tables"]
    # The column heads repeated on page 2 are left out; the part on page 2 starts at the
    # row after the last one of page 1.
    assert table["rows"] == [*first.rows, *rest.rows[1:]]
    assert [(p["page"], p["row"]) for p in table["parts"]] == [(1, 0), (2, len(first.rows))]
    text = api.extract_tables(ws, "long.pdf")
    label = text.split("\n", 1)[0]
    assert f"continued on page 2 from row {len(first.rows) + 1}" in label
    assert label.endswith("(repeated column heads left out))")
    # Read from page 2 on, the part there is a table of its own.
    alone = json.loads(api.extract_tables(ws, "long.pdf", "2", "json"))
    assert [t["rows"] for t in alone["tables"]] == [rest.rows]


def test_read_document_shows_tables_as_markdown_in_reading_order(folder: Path) -> None:
    expected = write_layout(folder / "two.pdf", "two_tables")
    text = api.read_document(Workspace.from_settings(get_settings()), "two.pdf")
    first, second = expected[0]
    order = [
        text.index("Table 1: First quarter"),
        text.index("| " + " | ".join(first.rows[0]) + " |"),
        text.index("| " + " | ".join(first.rows[-1]) + " |"),
        text.index("Table 2: Second quarter"),
        text.index("| " + " | ".join(second.rows[0]) + " |"),
        text.index("| " + " | ".join(second.rows[-1]) + " |"),
    ]
    assert order == sorted(order)
    # The table's words are not repeated as loose text beside it.
    assert text.count(first.rows[1][0]) == 1


def test_read_document_of_a_page_without_tables_is_its_text(folder: Path) -> None:
    write_layout(folder / "chart.pdf", "bar_chart")
    text = api.read_document(Workspace.from_settings(get_settings()), "chart.pdf")
    assert "|" not in text and "Figure 2: Exports by country" in text


def _expected_names(expected: list[list[Expected]]) -> list[str]:
    return [t.rows[1][0] for page in expected for t in page]


def test_a_sideways_table_is_read_upright(folder: Path) -> None:
    expected = write_layout(folder / "turned.pdf", "rotated")
    answer = json.loads(
        api.extract_tables(Workspace.from_settings(get_settings()), "turned.pdf", "", "json")
    )
    (table,) = answer["tables"]
    assert table["turned"] in (90, 270)
    assert [table["rows"][1][0]] == _expected_names(expected)
