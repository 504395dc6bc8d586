"""`PrefixedSession`: a server's tools under ``<prefix>_<name>``."""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult, ListToolsResult, PaginatedRequestParams, TextContent

from .base import ToolSession

__all__ = ["PrefixedSession"]


class PrefixedSession:
    """Wrap a `ToolSession` so that its tool ``name`` is listed and called as
    ``<prefix>_name``.
    """

    def __init__(self, inner: ToolSession, prefix: str) -> None:
        self.inner = inner
        self._start = f"{prefix}_"

    async def list_tools(self, *, params: PaginatedRequestParams | None = None) -> ListToolsResult:
        """The inner listing with every name prefixed."""
        result = await self.inner.list_tools(params=params)
        tools = [t.model_copy(update={"name": self._start + t.name}) for t in result.tools]
        return result.model_copy(update={"tools": tools})

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        """Strip the prefix and call the inner tool."""
        if not name.startswith(self._start):
            return CallToolResult(
                content=[TextContent(type="text", text=f"Unknown tool: {name}")], is_error=True
            )
        return await self.inner.call_tool(name[len(self._start) :], arguments)
