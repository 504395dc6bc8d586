"""Attacks: a document swapped for a symbolic link to an outside document during a call.

A swapper child process (the shared one of the link-race attacks) keeps exchanging a document inside
the workspace with a symbolic link to a document outside it that holds a secret marker.
The four document tools are called in a loop meanwhile, bounded in time and count. A call
may be refused while the link is in place, but no answer may ever hold the marker: the
file the checks passed is the file the PDF, DOCX and XLSX readers read.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import docx
import openpyxl
import pytest
from fpdf import FPDF
from link_swapper import MARKER, SECONDS, hammer, swapping
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools import docs_server
from doc_processing_std_tools.config import get_settings, load_settings, reset_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.filesystem.operations import Workspace


def _pdf(path: Path, text: str) -> None:
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.cell(text=text)
    with pdf.table() as table:
        for values in (("Key", "Value"), ("word", text)):
            row = table.row()
            for value in values:
                row.cell(value)
    pdf.output(str(path))


def _docx(path: Path, text: str) -> None:
    document = docx.Document()
    document.add_heading("Title", level=1)
    document.add_paragraph(text)
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "word"
    table.rows[0].cells[1].text = text
    document.save(str(path))


def _xlsx(path: Path, text: str) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["Key", "Value"])
    sheet.append(["word", text])
    book.save(str(path))


WRITERS: dict[str, Callable[[Path, str], None]] = {"pdf": _pdf, "docx": _docx, "xlsx": _xlsx}


@pytest.fixture(params=sorted(WRITERS))
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(the document inside the workspace, the outside document holding the marker)."""
    suffix = str(request.param)
    root = tmp_path / "workspace"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = root / f"victim.{suffix}"
    secret = outside / f"secret.{suffix}"
    WRITERS[suffix](victim, "inside words")
    WRITERS[suffix](secret, f"outside secret {MARKER}")
    reset_settings(
        load_settings({"DPTTOOLS_WORKSPACE_DIR": str(root), "DPTTOOLS_MAX_FILE_SIZE_MB": "1"})
    )
    yield victim, secret
    reset_settings()


CALLS: dict[str, Callable[[Workspace, str], str]] = {
    "get_file_overview": api.get_file_overview,
    "read_document": api.read_document,
    "search_document": lambda ws, name: api.search_document(ws, name, "o"),
    "extract_tables": api.extract_tables,
}


def test_document_tools_never_read_a_document_swapped_in_from_outside(
    site: tuple[Path, Path],
) -> None:
    victim, secret = site
    ws = Workspace.from_settings(get_settings())
    # The marker is in each tool's answer when it reads the outside document.
    outside = Workspace(secret.parent, ws.max_file_bytes, ws.output_limit)
    for call in CALLS.values():
        assert MARKER in call(outside, secret.name)
    tools = itertools.cycle(CALLS.items())
    leaked: list[str] = []

    def next_call() -> str:
        tool, call = next(tools)
        text = call(ws, victim.name)
        if MARKER in text:
            leaked.append(tool)
        return text

    with swapping(victim, secret):
        calls, refused, leaks = hammer(next_call)
    assert leaks == [], f"{len(leaks)} of {calls} calls read the outside document: {leaked}"
    assert refused < calls, "no call ever succeeded: the attack proved nothing"


@pytest.mark.anyio
async def test_read_document_over_mcp_never_reads_a_document_swapped_in_from_outside(
    site: tuple[Path, Path],
) -> None:
    victim, secret = site
    calls = leaks = 0
    with swapping(victim, secret):
        async with Client(docs_server) as client:
            deadline = time.monotonic() + SECONDS
            while time.monotonic() < deadline:
                calls += 1
                result = await client.call_tool("read_document", {"path": victim.name})
                block = result.content[0]
                assert isinstance(block, TextContent)
                leaks += MARKER in block.text
    assert calls > 20
    assert leaks == 0, f"{leaks} of {calls} MCP calls read the outside document"
