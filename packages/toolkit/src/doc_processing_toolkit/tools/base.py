"""The one interface every tool server is reached through, the descriptor of a server,
and what a server offers for one run.

An MCP `ClientSession` satisfies `ToolSession` as it is; `LocalFunctionSession` implements
it. Each run, every server offers a `ServerTools` (its tools under their own names and,
optionally, instructions for the model); the offers of all servers, with warnings and
notices, make a `RunTools`. Nothing past the loader asks which route a server came by: what
later steps need to know about a server (`ToolServer.in_process`) its transport says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mcp.types import Tool

from .session import ToolSession, list_all_tools
from .transports import Route, Transport

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


@dataclass(frozen=True, eq=False)
class ToolServer:
    """One entry of ``tools=[...]``: a tool server with a name and a transport.

    Servers compare by identity: two servers with the same name are two servers.

    Attributes:
        name: the server's own name (in-process servers), the config's ``name``, or the
            transport's default (``local-functions``, ``mcp-session``, the command or
            script name, the URL's host).
        transport: how the server is reached and opened (see `tools.transports`).
        required: when false, a failure to connect is a warning instead of an error.
        tool_prefix: prepended as ``<prefix>_`` to each of the server's tool names.
        index: the entry's position in ``tools=[...]``.
    """

    name: str
    transport: Transport = field(repr=False)
    required: bool = True
    tool_prefix: str | None = None
    index: int = 0

    @property
    def route(self) -> Route:
        """How the server is reached (see `Route`)."""
        return self.transport.route

    @property
    def target(self) -> Any:
        """What the server was built from (the server object, the session, the validated
        config entry or the `LocalFunctionSession`)."""
        return self.transport.target

    @property
    def in_process(self) -> bool:
        """Whether the server runs in this process (a call costs no round trip, so
        nothing is worth starting early)."""
        return self.transport.in_process

    @property
    def known_at_construction(self) -> bool:
        """Whether the tools are known before connecting (in-process servers, functions)."""
        return self.transport.known_at_construction

    def describe(self) -> str:
        """``'name' (route: detail)`` for messages."""
        return f"{self.name!r} ({self.route}{self.transport.detail()})"


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
