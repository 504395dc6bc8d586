"""The one interface every tool server is reached through, the descriptor of a server,
and what a server offers for one run.

An MCP `ClientSession` satisfies `ToolSession` as it is; `LocalFunctionSession` implements
it. Each run, every server offers a `ServerTools` (its tools under their own names and,
optionally, instructions for the model); the offers of all servers, with warnings and
notices, make a `RunTools`. Nothing past the loader asks which route a server came by: what
later steps need to know about a server (`ToolServer.in_process`) is decided there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from mcp.types import CallToolResult, ListToolsResult, PaginatedRequestParams, Tool

__all__ = [
    "TOOL_NAME_PATTERN",
    "Route",
    "RunTools",
    "ServerTools",
    "ToolServer",
    "ToolSession",
    "list_all_tools",
]

TOOL_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""Tool names every model provider accepts."""

Route = Literal[
    "mcp_server", "local", "mcp_command", "mcp_script", "mcp_http", "session", "fastmcp"
]
"""How a server is reached: an in-process MCP SDK server, the local functions, a command
or script over stdio, streamable HTTP, a pre-built session, or a fastmcp object."""

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


@dataclass(frozen=True, eq=False)
class ToolServer:
    """One entry of ``tools=[...]``: a tool server with a name and a route.

    Servers compare by identity: two servers with the same name are two servers.

    Attributes:
        name: the server's own name (in-process servers), the config's ``name``, or a
            default (``local-functions``, ``mcp-session``, the command or script name, the
            URL's host).
        route: how the server is reached (see `Route`).
        required: when false, a failure to connect is a warning instead of an error.
        tool_prefix: prepended as ``<prefix>_`` to each of the server's tool names.
        target: what the server was built from (the server object, the session, the
            validated config entry or the `LocalFunctionSession`).
        index: the entry's position in ``tools=[...]``.
        in_process: whether the server runs in this process (decided by the loader from
            the route: a call costs no round trip, so nothing is worth starting early).
    """

    name: str
    route: Route
    target: Any = field(repr=False)
    required: bool = True
    tool_prefix: str | None = None
    index: int = 0
    in_process: bool = False

    @property
    def known_at_construction(self) -> bool:
        """Whether the tools are known before connecting (in-process servers, functions)."""
        return self.route in ("mcp_server", "local")

    def describe(self) -> str:
        """``'name' (route: detail)`` for messages."""
        return f"{self.name!r} ({self.route}{_detail(self)})"


def _detail(server: ToolServer) -> str:
    target = server.target
    if server.route == "mcp_command":
        return ": " + " ".join([target.command, *target.args])
    if server.route == "mcp_script":
        return ": " + " ".join(["python", *target.python_args])
    if server.route == "mcp_http":
        return f": {target.url}"
    return ""


@dataclass(frozen=True, eq=False)
class ServerTools:
    """What one server offers the model for one run.

    Attributes:
        server: the descriptor (name, route, required, tool_prefix).
        session: the session the tools are called through, by their own names.
        tools: the tools as listed now, under the server's own names (the tool prefix is
            added where model-visible names are made, in `tools.routing`).
        instructions: text for the system prompt of this run, or None.
    """

    server: ToolServer
    session: ToolSession
    tools: tuple[Tool, ...]
    instructions: str | None = None


@dataclass(frozen=True)
class RunTools:
    """The offers of every reachable server for one run, in loaded order.

    Attributes:
        servers: one `ServerTools` per reachable server.
        warnings: what went wrong without failing the run (for `RunResult.warnings`).
        notices: lines for the model's system prompt about this run's tools (for
            example, which optional servers are unavailable), after every server's own
            instructions.
        unavailable: the optional servers that could not be reached, each with the names
            of the tools it listed when it last could (None: it never listed any).
    """

    servers: tuple[ServerTools, ...]
    warnings: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    unavailable: tuple[tuple[ToolServer, tuple[str, ...] | None], ...] = ()

    def instructions(self) -> list[str]:
        """Every server's instructions in loaded order, then the notices."""
        blocks = [s.instructions for s in self.servers if s.instructions]
        return [*blocks, *self.notices]
