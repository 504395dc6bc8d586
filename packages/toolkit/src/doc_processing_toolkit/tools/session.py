"""`ToolSession`: the one interface every tool server is reached through, and listing all
of a session's tools.

An MCP `ClientSession` satisfies it as it is; `LocalFunctionSession` implements it. This
module imports only the MCP types, so the transports (which open sessions) and the server
descriptor (`tools.base`) can both name it.
"""

from __future__ import annotations

from typing import Any, Protocol

from mcp.types import CallToolResult, ListToolsResult, PaginatedRequestParams, Tool

__all__ = ["ToolSession", "list_all_tools"]

_MAX_PAGES = 1000


class ToolSession(Protocol):
    """What the agent needs from a tool server: list the tools, call one."""

    async def list_tools(self, *, params: PaginatedRequestParams | None = None) -> ListToolsResult:
        """One page of the server's tools."""
        ...

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        """Call one tool; a tool failure is an ``is_error`` result."""
        ...


async def list_all_tools(session: ToolSession) -> list[Tool]:
    """Every tool of `session`, following pagination cursors."""
    result = await session.list_tools()
    tools = list(result.tools)
    cursor = result.next_cursor
    pages = 1
    while cursor is not None and pages < _MAX_PAGES:
        result = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
        tools.extend(result.tools)
        cursor = result.next_cursor
        pages += 1
    return tools
