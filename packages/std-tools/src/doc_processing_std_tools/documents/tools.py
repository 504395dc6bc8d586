"""The four document tools, registered on any MCPServer.

Each tool is a few lines of glue around `api`, run in a worker process by `worker` (so a
hostile document can exhaust neither the server's memory nor its time, and a call the
client cancels is stopped); the settings (the workspace, the limits) are read here, at
call time, and travel with the call to the worker and the readers.

get_file_overview and search_document answer with a JSON object: the client gets it as the
text block and as structured content, described by the tool's output schema
(`DocumentOverview`, `DocumentMatches`). read_document and extract_tables answer with text.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Required

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field, with_config
from typing_extensions import TypedDict

from .._tooling import ToolCalls, answer_config, json_answer, mcp_tool
from ..config import Settings, settings_source
from .worker import run_tool

__all__ = ["DocumentMatch", "DocumentMatches", "DocumentOverview", "register_docs_tools"]


@with_config(answer_config("path", "format", "size_bytes", "file_modified"))
class DocumentOverview(TypedDict, total=False):
    """The answer of get_file_overview. The fields after the first four depend on the
    format; others than those described here may appear (such as a CSV file's
    ``columns`` or a workbook's ``notes``). Only the fields every format shares and the
    common counts are typed here: the readers own the rest."""

    path: str
    """The document's path relative to the workspace."""
    format: str
    """``pdf``, ``docx``, ``xlsx``, ``csv``, ``html``, ``markdown`` or ``text``."""
    size_bytes: int
    """The file's size in bytes."""
    file_modified: str
    """The file's modification time, ISO 8601 in UTC."""
    page_count: int
    """A PDF's number of pages."""
    sheet_count: int
    """A workbook's number of sheets."""
    section_count: int
    """A DOCX, HTML or Markdown document's number of sections (a heading and its text)."""
    line_count: int
    """A text or Markdown file's number of lines."""
    row_count: int
    """A CSV file's number of data rows."""
    column_count: int
    """A CSV file's number of columns."""
    metadata: dict[str, Any]
    """The metadata the document records (title, author, dates, ...)."""
    outline: list[dict[str, Any]]
    """Headings, sheets with their used ranges, or each page's first line."""
    preview: str
    """The beginning of the document's text."""
    truncated: str
    """Present when the answer was cut to the output limit: what was left out."""


@with_config(answer_config())
class DocumentMatch(TypedDict, total=False):
    """One match, with where it is; the place fields depend on the format."""

    text: Required[str]
    """The matching line or cell (long ones end in "…")."""
    page: int
    """PDF: the page number."""
    line: int
    """PDF: the line on the page; text: the line in the file."""
    sheet: str
    """XLSX: the sheet's name."""
    cell: str
    """XLSX: the cell, such as ``B7``."""
    row: int
    """CSV: the data row (1 is the first row after the header)."""
    column: str
    """CSV: the column's name (``#N`` when it has none)."""
    section: int
    """DOCX, HTML, Markdown: the section number, as the overview's outline numbers them."""
    heading: str
    """DOCX, HTML, Markdown: the section's heading (empty before the first heading)."""


@with_config(answer_config("path", "query", "count", "matches"))
class DocumentMatches(TypedDict, total=False):
    """The answer of search_document."""

    path: str
    """The document's path relative to the workspace."""
    query: str
    """The text or regular expression that was looked for."""
    count: int
    """How many matches are listed."""
    matches: list[DocumentMatch]
    """The matches, in document order."""
    stopped: str
    """Present when more matches exist than max_results allowed."""
    pages_without_text: list[int]
    """PDF pages without a text layer (probably scanned), which could not be searched."""
    note: str
    """What pages_without_text means for the search."""
    truncated: str
    """Present when the answer was cut to the output limit: what was left out."""


_PATH = "Document path relative to the workspace folder (or absolute, inside it)."
_PAGES = (
    "Which part to use; empty for all. PDF: pages ('3', '2-5', '4-', '1,7'). XLSX: sheet "
    "numbers or names, optionally with rows ('Sales', '2', 'Sales!100-200'). DOCX, HTML, "
    "Markdown: section numbers from the overview's outline. CSV: data rows. Text: lines."
)


def register_docs_tools(server: MCPServer, settings: Settings | None = None) -> None:
    """Add the four document tools to `server`.

    `settings`: what every call uses; None (the default) for the process-wide settings
    (`config.get_settings`) as they are when each tool is called.
    """
    calls = ToolCalls(settings_source(settings))

    @mcp_tool(server)
    async def get_file_overview(
        path: Annotated[str, Field(description=_PATH)],
    ) -> Annotated[CallToolResult, DocumentOverview]:
        """Size up a document before reading it, as JSON: format, size, page / sheet /
        section count, metadata (title, author, dates), an outline (headings, sheets with
        their used ranges, or each page's first line) and a short preview.

        Works on PDF, DOCX, XLSX, CSV, HTML, Markdown and text, and stays fast on large
        files: it does not read the whole document. A PDF without a text layer (a scan)
        is reported as such.
        """
        with calls.errors():
            return json_answer(
                calls.limited(await run_tool("get_file_overview", {"path": path}, calls.settings()))
            )

    @mcp_tool(server, structured_output=False)
    async def read_document(
        path: Annotated[str, Field(description=_PATH)],
        pages: Annotated[str, Field(description=_PAGES)] = "",
    ) -> str:
        """Read a document, or part of it, as Markdown (headings, lists and tables kept).

        Long output is cut at the output limit; the marker gives the `pages` value that
        reads on.
        """
        with calls.errors():
            return calls.limited(
                await run_tool("read_document", {"path": path, "pages": pages}, calls.settings())
            )

    @mcp_tool(server, structured_output=False)
    async def extract_tables(
        path: Annotated[str, Field(description=_PATH)],
        pages: Annotated[str, Field(description=_PAGES)] = "",
        format: Annotated[
            Literal["markdown", "csv", "json"],
            Field(
                description=(
                    "Output format of the tables; json lists each table's spanning cells "
                    "(PDF, DOCX, HTML, Markdown)."
                )
            ),
        ] = "markdown",
    ) -> str:
        """Extract the tables of a document as Markdown, CSV or JSON, each labelled with
        where it was found (page, section or sheet). A sheet or a CSV file is one table.
        A PDF table also gives its box on the page (points from the top-left corner), the
        method that found it (ruled: drawn grid lines; aligned: lined-up text) and a
        confidence, so a doubtful one can be checked against read_document; a table
        continued over a page break is one table. Table finding on a PDF is bounded in
        time per page and per call; the answer names the pages it had to leave out."""
        arguments = {"path": path, "pages": pages, "format": format}
        with calls.errors():
            return calls.limited(await run_tool("extract_tables", arguments, calls.settings()))

    @mcp_tool(server)
    async def search_document(
        path: Annotated[str, Field(description=_PATH)],
        query: Annotated[str, Field(description="Text (or regular expression) to find.")],
        pages: Annotated[str, Field(description=_PAGES)] = "",
        regex: Annotated[bool, Field(description="Treat query as a regular expression.")] = False,
        ignore_case: bool = True,
        max_results: Annotated[int, Field(description="Most matches to list (1-500).")] = 50,
    ) -> Annotated[CallToolResult, DocumentMatches]:
        """Find text in a document; JSON list of the matches with where they are: page and
        line (PDF), sheet and cell (XLSX), row and column (CSV), section and heading
        (DOCX, HTML, Markdown) or line (text)."""
        arguments = {
            "path": path,
            "query": query,
            "pages": pages,
            "regex": regex,
            "ignore_case": ignore_case,
            "max_results": max_results,
        }
        with calls.errors():
            return json_answer(
                calls.limited(await run_tool("search_document", arguments, calls.settings()))
            )
