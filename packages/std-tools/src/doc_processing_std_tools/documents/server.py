"""The MCP face of the document tools: `docs_server` ("doc-tools").

The server always exists and always lists its four tools. CSV, HTML, Markdown and plain
text are read with the standard library; PDF, DOCX and XLSX need the ``docs`` extra, and
without it a call on such a file fails with a message naming the command that installs it.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from .._building import new_server
from .tools import register_docs_tools

__all__ = ["docs_server", "register_docs_tools"]

docs_server: MCPServer = new_server(
    MCPServer,
    "doc-tools",
    instructions=(
        "Read documents inside the workspace folder: start with get_file_overview, then "
        "read_document, extract_tables or search_document on the part you need."
    ),
)
"""In-process MCP server named "doc-tools" with the four document tools."""
register_docs_tools(docs_server)
