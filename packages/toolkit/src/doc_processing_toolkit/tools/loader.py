"""`ToolLoader`: ``tools=[...]`` to tool servers in loaded order.

Accepted entries:

- an in-process MCP SDK server (`mcp.server.mcpserver.MCPServer` or a low-level
  `mcp.server.Server`);
- a standalone fastmcp ``FastMCP`` object (fastmcp is imported only when one is given);
- ``{"server": server, "name": ..., "tool_prefix": ..., "required": ...}``: either of the
  two above with a name, prefix or ``required`` of your choosing;
- Python functions, plain or `@tool`-decorated, sync or async: all of one list share one
  `LocalFunctionSession`;
- ``mcp_command``, ``mcp_script`` and ``mcp_http`` dicts (or their validated entries);
- ``{"session": client_session, "name": ...}``: a session the caller opened.

In-process servers and the local functions are marked `ToolServer.in_process`; commands,
scripts, HTTP servers and pre-built sessions (which most often reach a server elsewhere)
are not.

Loaded order: servers whose tools are known at construction (in-process MCP SDK servers
and the local functions) first, then those that publish their tools at connect time
(commands, scripts, HTTP, pre-built sessions, fastmcp objects); each group in tools order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..config import (
    McpCommandEntry,
    McpHttpEntry,
    McpScriptEntry,
    ServerEntry,
    SessionEntry,
    parse_tool_entry,
)
from ..errors import ConfigError
from .base import Route, ToolServer
from .local import LocalFunctionSession, LocalTool

__all__ = ["LOCAL_SERVER_NAME", "SESSION_SERVER_NAME", "ToolLoader", "is_fastmcp_server"]

LOCAL_SERVER_NAME = "local-functions"
"""The name of the server holding a tools list's Python functions."""

SESSION_SERVER_NAME = "mcp-session"
"""The name of a pre-built session given without one."""


def is_fastmcp_server(obj: object) -> bool:
    """Whether `obj` is a fastmcp server object, decided without importing fastmcp."""
    module = type(obj).__module__
    return (module == "fastmcp" or module.startswith("fastmcp.")) and hasattr(obj, "list_tools")


def _is_mcp_sdk_server(obj: object) -> bool:
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    return isinstance(obj, MCPServer | Server)


def _default_name(entry: McpCommandEntry | McpScriptEntry | McpHttpEntry) -> str:
    if isinstance(entry, McpCommandEntry):
        return Path(entry.command).name or entry.command
    if isinstance(entry, McpScriptEntry):
        return Path(entry.script).stem if entry.script else str(entry.module)
    return urlsplit(entry.url).hostname or entry.url


class ToolLoader:
    """Turn a tools list into `ToolServer`s, in loaded order.

    Args:
        tools: the entries of ``Agent(tools=...)``.

    Raises:
        ConfigError: an entry is of no accepted kind or is invalid; the message names
            its position.
    """

    def __init__(self, tools: Iterable[Any]) -> None:
        construction: list[ToolServer] = []
        connect: list[ToolServer] = []
        functions: list[Callable[..., Any] | LocalTool] = []
        local_index: int | None = None
        for index, entry in enumerate(tools):
            if _is_mcp_sdk_server(entry) or is_fastmcp_server(entry):
                entry = ServerEntry(server=entry)
            elif isinstance(entry, Mapping):
                entry = parse_tool_entry(entry, index=index)
            if isinstance(entry, ServerEntry):
                server = self._in_process(entry, index)
                (construction if server.known_at_construction else connect).append(server)
            elif isinstance(entry, McpCommandEntry | McpScriptEntry | McpHttpEntry | SessionEntry):
                connect.append(self._from_config(entry, index))
            elif isinstance(entry, LocalTool) or (callable(entry) and not isinstance(entry, type)):
                functions.append(entry)
                local_index = index if local_index is None else local_index
            else:
                raise ConfigError(
                    f"tools[{index}] is a {type(entry).__name__}, which is not a tool: pass an "
                    "MCPServer, a fastmcp server, a function, an mcp_command / mcp_script / "
                    "mcp_http dict, {'server': server, ...} or {'session': ClientSession, ...}."
                )
        if functions:
            assert local_index is not None
            local = ToolServer(
                LOCAL_SERVER_NAME,
                "local",
                LocalFunctionSession(functions),
                index=local_index,
                in_process=True,
            )
            construction.append(local)
        construction.sort(key=lambda s: s.index)
        self.servers: tuple[ToolServer, ...] = (*construction, *connect)

    @staticmethod
    def _in_process(entry: ServerEntry, index: int) -> ToolServer:
        target = entry.server
        if _is_mcp_sdk_server(target):
            route: Route = "mcp_server"
        elif is_fastmcp_server(target):
            route = "fastmcp"
        else:
            raise ConfigError(
                f"tools[{index}].server is a {type(target).__name__}; pass an MCPServer or a "
                "fastmcp server object."
            )
        return ToolServer(
            entry.name or str(target.name),
            route,
            target,
            required=entry.required,
            tool_prefix=entry.tool_prefix,
            index=index,
            in_process=True,
        )

    @staticmethod
    def _from_config(
        entry: McpCommandEntry | McpScriptEntry | McpHttpEntry | SessionEntry, index: int
    ) -> ToolServer:
        if isinstance(entry, SessionEntry):
            if not (hasattr(entry.session, "list_tools") and hasattr(entry.session, "call_tool")):
                raise ConfigError(
                    f"tools[{index}].session is a {type(entry.session).__name__}; pass an "
                    "initialized mcp ClientSession."
                )
            return ToolServer(
                entry.name or SESSION_SERVER_NAME,
                "session",
                entry,
                required=entry.required,
                tool_prefix=entry.tool_prefix,
                index=index,
            )
        route = entry.type
        return ToolServer(
            entry.name or _default_name(entry),
            route,
            entry,
            required=entry.required,
            tool_prefix=entry.tool_prefix,
            index=index,
        )
