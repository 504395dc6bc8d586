"""Scopes on an MCP server: `ScopedServer` and the tool allow-list (`restrict_tools`).

- `ScopedServer` is an `MCPServer` that, when a request carries an access token (HTTP
  with authentication), lists only the tools the token's scopes cover and refuses a call
  outside them with a tool error naming the scope. A call it lets through runs within
  `access.call_scopes` of the token's scopes, so the logic below can narrow what the call
  may do (a script for a token without ``write`` sees the workspace read-only). Without a
  token it is a plain server.
- `restrict_tools` applies DPTTOOLS_TOOLS / DPTTOOLS_READ_ONLY by removing tools.

The rules themselves (scopes, selection) live in `access`; the HTTP side (token checks,
the app) in `http_app`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_REQUEST, CallToolResult, InputRequiredResult, Tool

from .access import READ, call_scopes, refusal, select_tools

__all__ = ["READ_METHOD_PREFIXES", "ScopedServer", "restrict_tools"]

logger = logging.getLogger(__name__)


READ_METHOD_PREFIXES: Final = ("resources/", "prompts/", "skills/", "completion/")
"""Methods besides the tools that read skills, resources or prompts: they need ``read``."""


def _granted() -> frozenset[str] | None:
    """The scopes of this request's access token, or None without authentication."""
    token = get_access_token()
    return None if token is None else frozenset(token.scopes)


class ScopedServer(MCPServer):
    """An `MCPServer` whose tools follow the scopes of the request's access token.

    Without authentication (stdio, in process, HTTP without tokens) every tool is listed
    and callable. With it, tools/list leaves out the tools the token may not call, and a
    call to one of them is a tool error that names the scope needed; the tool never runs.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.middleware.append(_read_gate)

    async def list_tools(self) -> list[Tool]:
        """The tools, less those outside the request's scopes."""
        tools = await super().list_tools()
        granted = _granted()
        if granted is None:
            return tools
        return [tool for tool in tools if refusal(tool.name, granted) is None]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Call `name`, unless the request's token lacks its scope; the call runs within
        `call_scopes` of the token's scopes (None without a token)."""
        granted = _granted()
        if granted is not None:
            reason = refusal(name, granted)
            if reason is not None:
                logger.warning("refused %s to client %r: %s", name, _client(), reason)
                raise ToolError(reason)
        with call_scopes(granted):
            return await super().call_tool(name, arguments, context)


async def _read_gate(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Refuse the reading methods of `READ_METHOD_PREFIXES` to a token without ``read``."""
    granted = _granted()
    if granted is not None and READ not in granted and ctx.method.startswith(READ_METHOD_PREFIXES):
        raise MCPError(
            code=INVALID_REQUEST,
            message=f"{ctx.method} needs the '{READ}' scope, which this token lacks; "
            f"ask for a token that carries '{READ}'.",
        )
    return await call_next(ctx)


def _client() -> str:
    token = get_access_token()
    return "?" if token is None else token.client_id


def restrict_tools(
    server: MCPServer,
    available: Sequence[str],
    tools: Sequence[str] | None,
    *,
    read_only: bool,
) -> list[str]:
    """Remove from `server` the tools the allow-list leaves out; return those kept.

    Args:
        server: a server holding every tool of `available`.
        available: the server's tools.
        tools: the allow-list (DPTTOOLS_TOOLS), or None for all of `available`.
        read_only: leave out the tools that change files, create skills or run scripts.

    Raises:
        ConfigError: the allow-list names a tool `available` lacks, or a changing tool
            together with the read-only preset.
    """
    kept = select_tools(available, tools, read_only=read_only)
    for name in available:
        if name not in kept:
            server.remove_tool(name)
    return kept
