"""The four document tools, registered on any MCPServer.

Each tool is a few lines of glue around `api`, run in a worker process by `worker` (so a
hostile document can exhaust neither the server's memory nor its time, and a call the
client cancels is stopped); the workspace and the limits are read from the settings at
call time and travel with the call.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from .._tooling import limited, tool_errors
from .worker import run_tool

__all__ = ["register_docs_tools"]

_PATH = "Document path relative to the workspace folder."
_PAGES = (
    "Which part to use; empty for all. PDF: pages ('3', '2-5', '4-', '1,7'). XLSX: sheet "
    "numbers or names, optionally with rows ('Sales', '2', 'Sales!100-200'). DOCX, HTML, "
    "Markdown: section numbers from the overview's outline. CSV: data rows. Text: lines."
)


def register_docs_tools(server: MCPServer) -> None:
    """Add the four document tools to `server`."""

    @server.tool(structured_output=False)
    async def get_file_overview(path: Annotated[str, Field(description=_PATH)]) -> str:
        """Size up a document before reading it, as JSON: format, size, page / sheet /
        section count, metadata (title, author, dates), an outline (headings, sheets with
        their used ranges, or each page's first line) and a short preview.

        Works on PDF, DOCX, XLSX, CSV, HTML, Markdown and text, and stays fast on large
        files: it does not read the whole document. A PDF without a text layer (a scan)
        is reported as such.
        """
        with tool_errors():
            return limited(await run_tool("get_file_overview", {"path": path}))

    @server.tool(structured_output=False)
    async def read_document(
        path: Annotated[str, Field(description=_PATH)],
        pages: Annotated[str, Field(description=_PAGES)] = "",
    ) -> str:
        """Read a document, or part of it, as Markdown (headings, lists and tables kept).

        Long output is cut at the output limit; the marker gives the `pages` value that
        reads on.
        """
        with tool_errors():
            return limited(await run_tool("read_document", {"path": path, "pages": pages}))

    @server.tool(structured_output=False)
    async def extract_tables(
        path: Annotated[str, Field(description=_PATH)],
        pages: Annotated[str, Field(description=_PAGES)] = "",
        format: Annotated[
            Literal["markdown", "csv"], Field(description="Output format of the tables.")
        ] = "markdown",
    ) -> str:
        """Extract the tables of a document as Markdown or CSV, each labelled with where
        it was found (page, section or sheet). A sheet or a CSV file is one table. Table
        detection on a PDF is bounded in time per page and per call; the answer names the
        pages it had to leave out."""
        arguments = {"path": path, "pages": pages, "format": format}
        with tool_errors():
            return limited(await run_tool("extract_tables", arguments))

    @server.tool(structured_output=False)
    async def search_document(
        path: Annotated[str, Field(description=_PATH)],
        query: Annotated[str, Field(description="Text (or regular expression) to find.")],
        pages: Annotated[str, Field(description=_PAGES)] = "",
        regex: Annotated[bool, Field(description="Treat query as a regular expression.")] = False,
        ignore_case: bool = True,
        max_results: Annotated[int, Field(description="Most matches to list (1-500).")] = 50,
    ) -> str:
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
        with tool_errors():
            return limited(await run_tool("search_document", arguments))
