"""Each kind of ``tools=[...]`` entry gets its typed transport, which describes itself and
opens its own session (the pool only decides when)."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AsyncExitStack

import pytest
from mcp.server.mcpserver import MCPServer

from doc_processing_toolkit import ToolLoader
from doc_processing_toolkit.tools.base import list_all_tools
from doc_processing_toolkit.tools.transports import (
    HttpTransport,
    LocalTransport,
    McpServerTransport,
    ScriptTransport,
    StdioTransport,
)

pytestmark = pytest.mark.anyio


def test_every_entry_kind_gets_its_transport(make_server: Callable[..., MCPServer]) -> None:
    def helper() -> str:
        """Help."""
        return "h"

    servers = ToolLoader(
        [
            make_server("inproc"),
            helper,
            {"type": "mcp_script", "module": "some_server", "args": ["--fast"]},
            {"type": "mcp_http", "url": "http://127.0.0.1:9/mcp"},
        ]
    ).servers
    kinds = [type(server.transport) for server in servers]
    assert kinds == [McpServerTransport, LocalTransport, ScriptTransport, HttpTransport]
    assert isinstance(servers[2].transport, StdioTransport)
    assert [s.describe() for s in servers] == [
        "'inproc' (mcp_server)",
        "'local-functions' (local)",
        "'some_server' (mcp_script: python -m some_server --fast)",
        "'127.0.0.1' (mcp_http: http://127.0.0.1:9/mcp)",
    ]
    assert [s.in_process for s in servers] == [True, True, False, False]
    assert servers[1].transport.fixed_session() is servers[1].target
    assert servers[0].transport.fixed_session() is None


async def test_a_transport_opens_its_own_session(
    make_server: Callable[..., MCPServer], stdio_entry: Callable[..., dict[str, object]]
) -> None:
    in_process, child = ToolLoader([make_server("inproc"), stdio_entry("child")]).servers
    with open(os.devnull, "w", encoding="utf-8") as errlog:  # noqa: ASYNC230
        for server in (in_process, child):
            async with AsyncExitStack() as stack:
                session = await server.transport.open(stack, errlog, server.describe())
                names = [tool.name for tool in await list_all_tools(session)]
                assert names, server.describe()
