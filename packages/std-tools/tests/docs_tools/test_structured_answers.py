"""Every sample document's overview and search answer conforms to the output schema the
tool publishes, so a reader that starts writing a field of another type fails here, not
in a client (a structured answer the schema refuses is a failed call)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools.documents.server import docs_server

pytestmark = pytest.mark.anyio

READABLE = {
    "report.pdf",
    "scanned.pdf",
    "book.xlsx",
    "handbook.docx",
    "people.csv",
    "policy.html",
    "notes.md",
    "plain.txt",
}


@pytest.fixture
def names(library: Path) -> list[str]:
    """Every sample document, the bad inputs included."""
    return sorted(p.name for p in library.iterdir() if p.is_file())


@pytest.mark.usefixtures("ws")
async def test_every_sample_answers_with_structured_content_its_schema_accepts(
    names: list[str],
) -> None:
    answered: set[tuple[str, str]] = set()
    async with Client(docs_server) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        calls = [("get_file_overview", {"path": name}) for name in names] + [
            ("search_document", {"path": name, "query": "e"}) for name in names
        ]
        for tool, arguments in calls:
            schema = schemas[tool]
            assert schema is not None
            # The SDK's client has checked the answer against the schema already; a
            # refused one would have raised.
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                continue
            block = result.content[0]
            assert isinstance(block, TextContent)
            assert result.structured_content == json.loads(block.text), (tool, arguments)
            jsonschema.Draft202012Validator(schema).validate(result.structured_content)
            answered.add((tool, arguments["path"]))
    for tool in ("get_file_overview", "search_document"):
        assert {(tool, name) for name in READABLE} <= answered
