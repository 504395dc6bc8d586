"""Structured output: every tool whose answer is a JSON object publishes an output schema
and sends that object as structured content next to its unchanged text block; answers cut
to the output limit conform too. Driven through the SDK's client (in memory and over
stdio) and fastmcp's client, against the composed server."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docx
import jsonschema
import openpyxl
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StdioTransport
from fpdf import FPDF
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from doc_processing_std_tools import make_composed_server
from doc_processing_std_tools.config import get_settings, load_settings, reset_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.filesystem import operations
from doc_processing_std_tools.filesystem.operations import Workspace
from doc_processing_std_tools.skills.server import skills_server_state as skills_state

pytestmark = pytest.mark.anyio

JSON_TOOLS = {
    "list_skills",
    "search_skills",
    "execute_skill_script",
    "get_file_info",
    "get_file_overview",
    "search_document",
}
DOCUMENTS = {
    "report.pdf": "total",
    "book.xlsx": "south",
    "handbook.docx": "invoices",
    "people.csv": "oslo",
    "notes.md": "owner",
    "page.html": "refund",
    "plain.txt": "gamma",
}
# One call of each JSON tool per kind of answer: every document format, files and folders.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_skills", {}),
    (
        "execute_skill_script",
        {"skill_name": "invoice-check", "script_path": "scripts/echo.py", "args": "a 'b c'"},
    ),
    ("get_file_info", {"path": "people.csv"}),
    ("get_file_info", {"path": "report.pdf"}),
    ("get_file_info", {"path": "."}),
    ("get_file_info", {"path": "link.txt"}),
    ("search_skills", {"query": "invoice"}),
    *[("get_file_overview", {"path": name}) for name in DOCUMENTS],
    *[("search_document", {"path": name, "query": query}) for name, query in DOCUMENTS.items()],
]


def write_pdf(path: Path) -> None:
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    pdf.set_title("Quarterly report")
    for page in range(1, 4):
        pdf.add_page()
        for line in range(1, 6):
            pdf.cell(
                0,
                10,
                f"Page {page} line {line}: total {page * line}.00 EUR",
                new_x="LMARGIN",
                new_y="NEXT",
            )
    pdf.output(str(path))


def write_xlsx(path: Path) -> None:
    book = openpyxl.Workbook()
    sales = book.active
    assert sales is not None
    sales.title = "Sales"
    for row in [("Region", "Total"), ("North", 10), ("South", 12), ("East", 7)]:
        sales.append(row)
    notes = book.create_sheet("Notes")
    notes.append(["Topic", "Note"])
    notes.append(["Review", "South numbers need a second look"])
    book.save(path)


def write_docx(path: Path) -> None:
    document = docx.Document()
    document.core_properties.title = "Supplier handbook"
    document.add_heading("Supplier handbook", level=0)
    document.add_heading("Payment terms", level=1)
    document.add_paragraph("Invoices are paid within 30 days.")
    table = document.add_table(rows=0, cols=2)
    for values in [("Item", "Price"), ("Widget", "3.50")]:
        cells = table.add_row().cells
        for cell, value in zip(cells, values, strict=True):
            cell.text = value
    document.save(str(path))


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """A skills folder (a skill with a script and metadata, and one broken skill) and a
    workspace holding a document of every format, a folder and a symbolic link."""
    skills = tmp_path / "skills"
    skill = skills / "invoice-check"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: invoice-check\ndescription: Checks invoice totals.\nlicense: MIT\n"
        "metadata:\n  owner: finance\n---\n\n# Steps\n",
        encoding="utf-8",
    )
    (skill / "scripts" / "echo.py").write_text(
        "import sys\nprint(' | '.join(sys.argv[1:]))\nprint('done', file=sys.stderr)\n",
        encoding="utf-8",
    )
    (skills / "draft").mkdir()
    (skills / "draft" / "SKILL.md").write_text("---\nname: draft\n---\n\nTODO\n", "utf-8")
    workspace = tmp_path / "workspace"
    (workspace / "sub").mkdir(parents=True)
    write_pdf(workspace / "report.pdf")
    write_xlsx(workspace / "book.xlsx")
    write_docx(workspace / "handbook.docx")
    (workspace / "people.csv").write_text("name,city\nAda,Oslo\nBo,Bergen\n", "utf-8")
    (workspace / "notes.md").write_text("# Notes\n\nThe owner signs.\n\n## Later\n\nMore.\n")
    (workspace / "page.html").write_text(
        "<html><head><title>Policy</title></head><body><h1>Refunds</h1>"
        "<p>A refund takes 5 days.</p></body></html>",
        encoding="utf-8",
    )
    (workspace / "plain.txt").write_text("alpha\nbeta gamma\n\ndelta\n", "utf-8")
    (workspace / "link.txt").symlink_to("plain.txt")
    return skills.resolve(), workspace.resolve()


def environment(folders: tuple[Path, Path], limit: int | None = None) -> dict[str, str]:
    skills, workspace = folders
    env = {"DPTTOOLS_SKILLS_DIR": str(skills), "DPTTOOLS_WORKSPACE_DIR": str(workspace)}
    if limit is not None:
        env["DPTTOOLS_OUTPUT_TRUNCATION_LIMIT"] = str(limit)
    return env


@pytest.fixture
def configured(folders: tuple[Path, Path]) -> Iterator[tuple[Path, Path]]:
    """The folders as the in-process settings (the default output limit)."""
    reset_settings(load_settings(environment(folders)))
    yield folders
    reset_settings()


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def check_answer(result: CallToolResult, schema: dict[str, Any]) -> dict[str, Any]:
    """The checks every JSON answer passes: its structured content is the object its text
    spells (or, when the limit leaves no room for a JSON object, the cut text under
    'truncated') and conforms to the published schema. Returns the structured content."""
    assert not result.is_error, text_of(result)
    text = text_of(result)
    structured = result.structured_content
    assert isinstance(structured, dict)
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        assert structured == parsed
    else:
        assert structured == {"truncated": text}
    jsonschema.Draft202012Validator(schema).validate(structured)
    return structured


async def schemas_of(client: Client) -> dict[str, dict[str, Any] | None]:
    return {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}


async def test_exactly_the_json_tools_publish_a_valid_output_schema(
    configured: tuple[Path, Path],
) -> None:
    async with Client(make_composed_server()) as client:
        schemas = await schemas_of(client)
    assert len(schemas) == 17
    assert {name for name, schema in schemas.items() if schema is not None} == JSON_TOOLS
    for name in JSON_TOOLS:
        schema = schemas[name]
        assert schema is not None
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert "truncated" in schema["properties"], name
        assert schema["if"] == {"not": {"required": ["truncated"]}}


async def test_every_json_answer_comes_as_structured_content_equal_to_its_text(
    configured: tuple[Path, Path],
) -> None:
    async with Client(make_composed_server()) as client:
        schemas = await schemas_of(client)
        answers = {}
        for tool, arguments in CALLS:
            schema = schemas[tool]
            assert schema is not None
            answer = check_answer(await client.call_tool(tool, arguments), schema)
            # Nothing is cut at the default limit: the schema's 'then' rule applied.
            assert "truncated" not in answer
            answers[(tool, json.dumps(arguments))] = answer
        # Text answers stay text only.
        read = await client.call_tool("read_document", {"path": "people.csv"})
        assert read.structured_content is None and "| Ada | Oslo |" in text_of(read)
        loaded = await client.call_tool("load_skill", {"skill_name": "invoice-check"})
        assert loaded.structured_content is None
    catalog = answers[("list_skills", "{}")]
    assert [skill["name"] for skill in catalog["skills"]] == ["invoice-check"]
    assert catalog["skills"][0]["metadata"] == {"owner": "finance"}
    assert [d["code"] for d in catalog["diagnostics"]] == ["missing_description"]
    run = answers[("execute_skill_script", json.dumps(CALLS[1][1]))]
    assert run == {"stdout": "a | b c\n", "stderr": "done\n", "exit_code": 0}
    link = answers[("get_file_info", json.dumps({"path": "link.txt"}))]
    assert link["symbolic_link_to"] == "plain.txt" and link["line_count"] == 4


async def test_the_text_block_is_what_the_tools_wrote_before(
    configured: tuple[Path, Path],
) -> None:
    """The text each tool's logic writes reaches the client byte for byte."""
    settings = get_settings()
    ws = Workspace.from_settings(settings)
    expected = {
        ("list_skills", "{}"): skills_state.scan(settings).json,
        ("get_file_info", '{"path": "people.csv"}'): operations.get_file_info(ws, "people.csv"),
        ("get_file_overview", '{"path": "book.xlsx"}'): api.get_file_overview(ws, "book.xlsx"),
        ("search_document", '{"path": "report.pdf", "query": "total"}'): (
            api.search_document(ws, "report.pdf", "total")
        ),
    }
    async with Client(make_composed_server()) as client:
        for (tool, arguments), text in expected.items():
            assert text_of(await client.call_tool(tool, json.loads(arguments))) == text


@pytest.mark.parametrize("limit", [1, 20, 40, 90, 200, 600])
async def test_answers_cut_to_the_output_limit_still_conform(
    folders: tuple[Path, Path], limit: int
) -> None:
    reset_settings(load_settings(environment(folders, limit)))
    try:
        async with Client(make_composed_server()) as client:
            schemas = await schemas_of(client)
            cut = 0
            for tool, arguments in CALLS:
                schema = schemas[tool]
                assert schema is not None
                result = await client.call_tool(tool, arguments)
                assert len(text_of(result)) <= limit
                cut += "truncated" in check_answer(result, schema)
    finally:
        reset_settings()
    assert cut > 0


async def test_the_schema_holds_a_complete_answer_to_its_fields() -> None:
    """The schema is no formality: without 'truncated' every documented field must be
    there, with its type; with 'truncated', what is left may be anything the type allows."""
    async with Client(make_composed_server()) as client:
        schemas = await schemas_of(client)
    listing, matches = schemas["list_skills"], schemas["search_document"]
    assert listing is not None and matches is not None
    validator = jsonschema.Draft202012Validator(listing)
    complete = {"skills": [], "skills_dir": "/skills", "count": 0}
    assert validator.is_valid(complete)
    assert not validator.is_valid({"skills": [], "skills_dir": "/skills"})
    assert validator.is_valid({"skills": [], "truncated": "cut"})
    assert not validator.is_valid({**complete, "count": "0"})
    # The entries are described in words, not checked: checking them is what makes each
    # agent run slower (see SkillsListing); that skills is an array is still checked.
    assert not validator.is_valid({**complete, "skills": "invoice-check"})
    assert '"name"' in listing["properties"]["skills"]["description"]
    validator = jsonschema.Draft202012Validator(matches)
    found = {"path": "a.pdf", "query": "total", "count": 1}
    assert validator.is_valid({**found, "matches": [{"page": 1, "line": 2, "text": "total"}]})
    assert not validator.is_valid({**found, "matches": [{"page": 1, "line": 2}]})
    assert not validator.is_valid({**found, "matches": [{"page": "1", "text": "total"}]})


async def test_the_sdk_client_over_stdio_reads_structured_content(
    folders: tuple[Path, Path],
) -> None:
    """Over a real pipe, including a link to a file whose name is not UTF-8: the text
    carries the undecodable byte as an escaped lone surrogate; the structured content,
    which must be sent as UTF-8, carries U+FFFD in its place (a lone surrogate there made
    the reply unsendable)."""
    _, workspace = folders
    # The byte 0xE9 (é in Latin-1) as Python names it in a file name: a lone surrogate.
    (workspace / "caf\udce9.txt").write_bytes(b"one\n")
    (workspace / "odd-link.txt").symlink_to("caf\udce9.txt")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools"],
        env=environment(folders),
    )
    async with Client(params) as client:
        schemas = await schemas_of(client)
        for tool, arguments in [*CALLS[:6], ("search_document", CALLS[-6][1])]:
            schema = schemas[tool]
            assert schema is not None
            assert "truncated" not in check_answer(await client.call_tool(tool, arguments), schema)
        odd = await client.call_tool("get_file_info", {"path": "odd-link.txt"})
    assert not odd.is_error, text_of(odd)
    assert '"symbolic_link_to": "caf\\udce9.txt"' in text_of(odd)
    assert odd.structured_content is not None
    assert odd.structured_content["symbolic_link_to"] == "caf\ufffd.txt"
    assert odd.structured_content["line_count"] == 1


async def test_fastmcp_client_gets_typed_data_over_stdio(folders: tuple[Path, Path]) -> None:
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools"],
        env=environment(folders),
    )
    async with FastMCPClient(transport) as client:
        catalog = await client.call_tool("list_skills", {})
        run = await client.call_tool("execute_skill_script", dict(CALLS[1][1]))
        info = await client.call_tool("get_file_info", {"path": "people.csv"})
        overview = await client.call_tool("get_file_overview", {"path": "book.xlsx"})
        found = await client.call_tool("search_document", {"path": "book.xlsx", "query": "south"})
        text_only = await client.call_tool("read_file", {"path": "plain.txt"})
    # Skills and diagnostics are plain objects in the schema (see SkillsListing).
    assert catalog.data.count == 1 and catalog.data.skills[0]["name"] == "invoice-check"
    assert catalog.data.diagnostics[0]["level"] == "error"
    assert (run.data.stdout, run.data.exit_code) == ("a | b c\n", 0)
    assert (info.data.type, info.data.line_count, info.data.is_text) == ("file", 3, True)
    assert overview.data.sheet_count == 2 and overview.data.format == "xlsx"
    assert [(m.sheet, m.cell) for m in found.data.matches] == [("Sales", "A3"), ("Notes", "B2")]
    assert text_only.data is None and text_only.structured_content is None


async def test_fastmcp_client_reads_a_cut_answer(folders: tuple[Path, Path]) -> None:
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools"],
        env=environment(folders, 60),
    )
    async with FastMCPClient(transport) as client:
        catalog = await client.call_tool("list_skills", {})
    assert catalog.data is not None
    # Only the note fits in 60 characters: every other field is absent (None here).
    assert catalog.data.truncated.startswith("The answer was longer than the output limi")
    assert catalog.data.count is None
