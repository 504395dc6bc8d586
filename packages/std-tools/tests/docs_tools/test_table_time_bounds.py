"""extract_tables is bounded in time per page and per call, and says what it cut.

Table finding on a dense ruled grid with text in every cell grows faster than the grid:
100 x 100 cells take under a second, 200 x 200 a few seconds. The tests draw such grids with fpdf2
and set small bounds, so each finishes within its bound plus a margin.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fpdf import FPDF
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools.config import get_settings, load_settings, reset_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.documents.server import docs_server
from doc_processing_std_tools.filesystem.operations import Workspace

from .samples import INVOICE_ROWS

# The exception that stops table detection may land in a finalizer the garbage collector
# runs meanwhile; Python reports it there as unraisable (and the bound fires again).
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

#: Cells of the dense grid, each way: a few seconds of table finding.
GRID = 200
#: Seconds a bounded call may take over its bound: opening the file, the worker's reply.
MARGIN = 3.0


def add_grid_page(pdf: FPDF, lines: int) -> None:
    """A page ruled by `lines` + 1 horizontal and vertical lines, a digit in every cell:
    one large table."""
    pdf.add_page()
    pdf.set_line_width(0.1)
    pdf.set_font("helvetica", size=2)
    step = 180 / lines
    for index in range(lines + 1):
        pdf.line(15, 15 + index * step, 195, 15 + index * step)
        pdf.line(15 + index * step, 15, 15 + index * step, 195)
    for row in range(lines):
        for column in range(lines):
            pdf.text(15.3 + column * step, 15 + (row + 0.8) * step, "7")
    pdf.set_font("helvetica", size=10)


def add_invoice_page(pdf: FPDF) -> None:
    pdf.add_page()
    with pdf.table() as table:
        for values in INVOICE_ROWS:
            row = table.row()
            for value in values:
                row.cell(value)


@pytest.fixture
def bounded(tmp_path: Path) -> Iterator[Path]:
    """A workspace with a grid PDF ("grid.pdf": invoice, dense grid, invoice) and table
    bounds of 0.5 s per page and 30 s per call."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    add_invoice_page(pdf)
    add_grid_page(pdf, GRID)
    add_invoice_page(pdf)
    pdf.output(str(folder / "grid.pdf"))
    grids = FPDF()
    for _ in range(3):
        add_grid_page(grids, GRID)
    grids.output(str(folder / "grids.pdf"))
    reset_settings(
        load_settings(
            {
                "DPTTOOLS_WORKSPACE_DIR": str(folder),
                "DPTTOOLS_TABLE_PAGE_SECONDS": "0.5",
                "DPTTOOLS_TABLE_CALL_SECONDS": "30",
            }
        )
    )
    yield folder.resolve()
    reset_settings()


def test_the_grid_pdf_is_small(bounded: Path) -> None:
    assert (bounded / "grid.pdf").stat().st_size < 192 * 1024


def test_a_dense_grid_page_is_cut_at_the_page_bound_and_the_others_are_read(
    bounded: Path,
) -> None:
    start = time.perf_counter()
    text = api.extract_tables(Workspace.from_settings(get_settings()), "grid.pdf")
    elapsed = time.perf_counter() - start
    assert elapsed < 0.5 + MARGIN
    assert "### Table 1 (page 1, ruled" in text and "### Table 2 (page 3, ruled" in text
    assert "page 2" not in text.split("[", 1)[0]
    assert text.rstrip().endswith(
        "[tables not extracted: page 2 (its table detection took longer than "
        "DPTTOOLS_TABLE_PAGE_SECONDS=0.5 s); raise that setting to extract them]"
    )


async def call(name: str, **arguments: object) -> tuple[str, bool, float]:
    async with Client(docs_server) as client:
        # A first call starts the document worker; only the second one is timed.
        await client.call_tool("get_file_overview", {"path": arguments["path"]})
        start = time.perf_counter()
        result = await client.call_tool(name, arguments)
        elapsed = time.perf_counter() - start
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text, result.is_error, elapsed


@pytest.mark.anyio
async def test_the_call_bound_stops_the_call_and_names_the_pages_left(bounded: Path) -> None:
    reset_settings(
        load_settings(
            {
                "DPTTOOLS_WORKSPACE_DIR": str(bounded),
                "DPTTOOLS_TABLE_PAGE_SECONDS": "20",
                "DPTTOOLS_TABLE_CALL_SECONDS": "1",
            }
        )
    )
    text, error, elapsed = await call("extract_tables", path="grids.pdf")
    assert not error
    assert elapsed < 1 + MARGIN
    assert text == (
        "No tables were found in grids.pdf.\n\n"
        "[tables not extracted: pages 1-3 (the call's DPTTOOLS_TABLE_CALL_SECONDS=1 s ran "
        'out); call extract_tables with pages="1-3" to go on, or raise that setting]'
    )


@pytest.mark.anyio
async def test_through_the_server_a_grid_page_is_cut_and_said_so(bounded: Path) -> None:
    text, error, elapsed = await call("extract_tables", path="grid.pdf", format="csv")
    assert not error
    assert elapsed < 0.5 + MARGIN
    assert text.startswith("Table 1 (page 1, ruled, confidence ")
    assert "):\nItem,Qty,Price\nWidget,2,3.50\n" in text
    assert "Table 2 (page 3, ruled" in text
    assert "page 2 (its table detection took longer than DPTTOOLS_TABLE_PAGE_SECONDS=0.5 s)" in (
        text
    )


def test_both_bounds_are_reported_together(bounded: Path) -> None:
    # Each grid page is cut at its own bound, until the call's bound ends the call.
    reset_settings(
        load_settings(
            {
                "DPTTOOLS_WORKSPACE_DIR": str(bounded),
                "DPTTOOLS_TABLE_PAGE_SECONDS": "0.5",
                "DPTTOOLS_TABLE_CALL_SECONDS": "1.5",
            }
        )
    )
    start = time.perf_counter()
    text = api.extract_tables(Workspace.from_settings(get_settings()), "grids.pdf", "1-3")
    assert time.perf_counter() - start < 1.5 + MARGIN
    found, note = text.split("\n\n", 1)
    assert found == "No tables were found in grids.pdf in the selected part (1-3)."
    assert note.startswith("[tables not extracted: page")
    assert "took longer than DPTTOOLS_TABLE_PAGE_SECONDS=0.5 s)" in note
    assert "(the call's DPTTOOLS_TABLE_CALL_SECONDS=1.5 s ran out)" in note
    assert note.endswith('" to go on, or raise those settings]')
