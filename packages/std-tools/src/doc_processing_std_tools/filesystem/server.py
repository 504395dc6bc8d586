"""`file_system_server`: the file system tools as an in-process MCP server named
"file-system-tools"."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from .._building import new_server
from .tools import register_filesystem_tools

__all__ = ["file_system_server", "register_filesystem_tools"]

file_system_server: MCPServer = new_server(
    MCPServer,
    "file-system-tools",
    instructions=(
        "Read, write, edit and search files inside one workspace folder. Paths are relative "
        "to it; nothing outside it can be reached and nothing is ever deleted."
    ),
)
"""In-process MCP server named "file-system-tools" with the file system tools."""
register_filesystem_tools(file_system_server)
