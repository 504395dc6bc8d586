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

Each server gets its typed transport (`tools.transports`): in-process servers and the
local functions run in this process (`Transport.in_process`); commands, scripts, HTTP
servers and pre-built sessions (which most often reach a server elsewhere) do not.

Loaded order: servers whose tools are known at construction (in-process MCP SDK servers
and the local functions) first, then those that publish their tools at connect time
(commands, scripts, HTTP, pre-built sessions, fastmcp objects); each group in tools order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..config import parse_tool_entry
from ..errors import ConfigError
from .base import ToolServer
from .local import LocalFunctionSession, LocalTool
from .transports import (
    LOCAL_SERVER_NAME,
    SESSION_SERVER_NAME,
    FastMCPTransport,
    HttpTransport,
    LocalTransport,
    McpCommandEntry,
    McpHttpEntry,
    McpScriptEntry,
    McpServerTransport,
    ServerEntry,
    SessionEntry,
    SessionTransport,
    StdioTransport,
    Transport,
)

__all__ = ["LOCAL_SERVER_NAME", "SESSION_SERVER_NAME", "ToolLoader", "is_fastmcp_server"]


def is_fastmcp_server(obj: object) -> bool:
    """Whether `obj` is a fastmcp server object, decided without importing fastmcp."""
    module = type(obj).__module__
    return (module == "fastmcp" or module.startswith("fastmcp.")) and hasattr(obj, "list_tools")


def _is_mcp_sdk_server(obj: object) -> bool:
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    return isinstance(obj, MCPServer | Server)


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
                LocalTransport(LocalFunctionSession(functions)),
                index=local_index,
            )
            construction.append(local)
        construction.sort(key=lambda s: s.index)
        self.servers: tuple[ToolServer, ...] = (*construction, *connect)

    @staticmethod
    def _in_process(entry: ServerEntry, index: int) -> ToolServer:
        target = entry.server
        transport: Transport
        if _is_mcp_sdk_server(target):
            transport = McpServerTransport(target)
        elif is_fastmcp_server(target):
            transport = FastMCPTransport(target)
        else:
            raise ConfigError(
                f"tools[{index}].server is a {type(target).__name__}; pass an MCPServer or a "
                "fastmcp server object."
            )
        return _server(entry, transport, index)

    @staticmethod
    def _from_config(
        entry: McpCommandEntry | McpScriptEntry | McpHttpEntry | SessionEntry, index: int
    ) -> ToolServer:
        transport: Transport
        if isinstance(entry, SessionEntry):
            if not (hasattr(entry.session, "list_tools") and hasattr(entry.session, "call_tool")):
                raise ConfigError(
                    f"tools[{index}].session is a {type(entry.session).__name__}; pass an "
                    "initialized mcp ClientSession."
                )
            transport = SessionTransport(entry)
        elif isinstance(entry, McpHttpEntry):
            transport = HttpTransport(entry)
        else:
            transport = StdioTransport.of(entry)
        return _server(entry, transport, index)


def _server(
    entry: McpCommandEntry | McpScriptEntry | McpHttpEntry | SessionEntry | ServerEntry,
    transport: Transport,
    index: int,
) -> ToolServer:
    """The server of the entry at ``tools[index]``, reached through `transport`."""
    return ToolServer(
        entry.name or transport.default_name(),
        transport,
        required=entry.required,
        tool_prefix=entry.tool_prefix,
        index=index,
    )
