"""Without the docs extra: the composed server still starts over stdio and lists every
tool; PDF, DOCX and XLSX calls name the command that installs the extra, and the formats
read with the standard library keep working.

The extra's libraries are installed in the test environment, so the server runs with a
`sitecustomize` module on its PYTHONPATH whose `sys.meta_path` finder makes importing
them fail exactly as it would if they were missing; the document worker processes the
server starts inherit it, as they would inherit a real environment without the extra.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

pytestmark = pytest.mark.anyio

INSTALL = 'pip install "doc-processing-std-tools[docs]"'

_WITHOUT_EXTRA = """
import importlib.abc, sys

BLOCKED = {"pypdfium2", "pypdfium2_raw", "pdfplumber", "pdfminer", "docx", "openpyxl"}

class WithoutDocsExtra(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, WithoutDocsExtra())
"""


def text_of(result: object) -> str:
    content = getattr(result, "content", [])
    assert len(content) == 1 and isinstance(content[0], TextContent)
    return content[0].text


async def test_calls_on_pdf_docx_xlsx_name_the_extra_to_install(
    library: Path, tmp_path: Path
) -> None:
    (tmp_path / "sitecustomize.py").write_text(_WITHOUT_EXTRA, encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools", "--workspace", str(library)],
        env={"PYTHONPATH": str(tmp_path)},
    )
    async with Client(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"get_file_overview", "read_document", "extract_tables"} <= names
        for tool, path, what in [
            ("get_file_overview", "report.pdf", "PDF"),
            ("read_document", "report.pdf", "PDF"),
            ("extract_tables", "report.pdf", "PDF"),
            ("get_file_overview", "handbook.docx", "DOCX"),
            ("read_document", "book.xlsx", "XLSX"),
            ("get_file_overview", "book.xlsx", "XLSX"),
        ]:
            result = await client.call_tool(tool, {"path": path})
            assert result.is_error, (tool, path)
            assert text_of(result).endswith(f"Reading {what} files needs the docs extra: {INSTALL}")
        searched = await client.call_tool(
            "search_document", {"path": "report.pdf", "query": "invoice"}
        )
        assert searched.is_error and INSTALL in text_of(searched)
        # CSV and HTML need nothing extra.
        overview = json.loads(
            text_of(await client.call_tool("get_file_overview", {"path": "people.csv"}))
        )
        assert overview["format"] == "csv"
        html = await client.call_tool("read_document", {"path": "policy.html"})
        assert not html.is_error
