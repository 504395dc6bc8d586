"""A damaged PDF whose page tree loops gets the damaged-PDF message from every tool.

PDFium opens such a file (its catalog is fine) and fails only when a page is loaded, for
its text or for its tables. That must end in the message any other damaged PDF gets,
through a real MCP session.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools.documents.server import docs_server

pytestmark = pytest.mark.anyio

# The page list (object 2) names itself as its only child: a loop, not a page.
LOOPING_PAGE_TREE = (
    b"%PDF-1.4\n"
    b"1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    b"2 0 obj<</Type/Pages/Kids[2 0 R]/Count 1>>endobj\n"
    b"trailer<</Root 1 0 R>>\n"
    b"%%EOF\n"
)

CALLS: dict[str, dict[str, object]] = {
    "get_file_overview": {},
    "read_document": {},
    "search_document": {"query": "invoice"},
    "extract_tables": {},
}


@pytest.mark.parametrize("tool", sorted(CALLS))
async def test_a_pdf_whose_page_tree_contains_itself_is_named_damaged(
    scratch: Path, tool: str
) -> None:
    (scratch / "loop.pdf").write_bytes(LOOPING_PAGE_TREE)
    async with Client(docs_server) as client:
        result = await client.call_tool(tool, {"path": "loop.pdf", **CALLS[tool]})
    assert result.is_error
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert block.text.startswith(
        f"Error executing tool {tool}: 'loop.pdf' could not be opened as a PDF: the file is "
        "damaged or incomplete ("
    )
    assert "page 1" in block.text
