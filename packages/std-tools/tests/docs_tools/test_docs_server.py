"""The document tools through a real in-memory MCP client."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools.documents.server import docs_server

pytestmark = pytest.mark.anyio


async def call(client: Client, name: str, **arguments: object) -> tuple[str, bool]:
    result = await client.call_tool(name, arguments)
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text, result.is_error


@pytest.mark.usefixtures("ws")
async def test_the_server_is_named_and_lists_the_four_tools() -> None:
    assert docs_server.name == "doc-tools"
    async with Client(docs_server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"get_file_overview", "read_document", "extract_tables", "search_document"}
    assert set(tools["search_document"].input_schema["required"]) == {"path", "query"}
    assert tools["extract_tables"].input_schema["properties"]["format"]["enum"] == [
        "markdown",
        "csv",
        "json",
    ]


@pytest.mark.usefixtures("ws")
async def test_an_agent_reads_an_invoice_pdf_step_by_step() -> None:
    async with Client(docs_server) as client:
        overview, error = await call(client, "get_file_overview", path="report.pdf")
        assert not error and json.loads(overview)["page_count"] == 3
        page, _ = await call(client, "read_document", path="report.pdf", pages="3")
        assert page == "## Page 3\n\nClosing remarks: total due 17.00 EUR\n\n"
        tables, _ = await call(client, "extract_tables", path="report.pdf", format="csv")
        assert "Widget,2,3.50" in tables
        found, _ = await call(client, "search_document", path="report.pdf", query="gadget")
        assert json.loads(found)["matches"][0]["page"] == 2


async def test_errors_reach_the_client_with_their_message(ws: object, library: Path) -> None:
    async with Client(docs_server) as client:
        text, error = await call(client, "read_document", path="encrypted.pdf")
        assert error and "password-protected" in text
        text, error = await call(client, "get_file_overview", path="corrupt.pdf")
        assert error and "damaged" in text
        text, error = await call(client, "extract_tables", path="report.pdf", pages="9")
        assert error and "the document has 3 pages" in text


@pytest.mark.usefixtures("ws")
async def test_concurrent_calls_on_pdfs_all_succeed() -> None:
    names = ["report.pdf", "scanned.pdf", "encrypted.pdf"] * 4
    results: dict[int, tuple[str, bool]] = {}
    async with Client(docs_server) as client:

        async def one(index: int, name: str) -> None:
            results[index] = await call(client, "read_document", path=name)

        async with anyio.create_task_group() as group:
            for index, name in enumerate(names):
                group.start_soon(one, index, name)
    for index, name in enumerate(names):
        text, error = results[index]
        if name == "encrypted.pdf":
            assert error and "password-protected" in text
        else:
            assert not error and text.startswith("## Page 1")


def test_the_server_is_exported_from_the_package() -> None:
    import doc_processing_std_tools as package

    assert "docs_server" in package.__all__
    assert package.docs_server is docs_server
