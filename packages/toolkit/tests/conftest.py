"""Shared fixtures of the toolkit tests: the anyio backend and small real MCP servers."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

SERVERS = Path(__file__).parent / "servers"
STDIO_SERVER = SERVERS / "stdio_server.py"
"""A real MCP server script: serves over stdio, or streamable HTTP with --http PORT."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def build_server(name: str = "demo", *, tools: tuple[str, ...] = ("echo", "add")) -> MCPServer:
    """An in-process MCPServer with some of: echo, add, fail, slow, shout."""
    server = MCPServer(name)
    if "echo" in tools:

        @server.tool()
        def echo(text: str) -> str:
            """Return the text unchanged."""
            return text

    if "add" in tools:

        @server.tool()
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

    if "fail" in tools:

        @server.tool()
        def fail(reason: str) -> str:
            """Always fail with the reason."""
            raise ToolError(f"failed on purpose: {reason}")

    if "slow" in tools:

        @server.tool()
        async def slow(seconds: float) -> str:
            """Sleep, then answer."""
            await anyio.sleep(seconds)
            return f"slept {seconds}"

    if "shout" in tools:

        @server.tool()
        def shout(text: str) -> str:
            """Upper-case the text."""
            return text.upper()

    return server


@pytest.fixture
def make_server() -> Callable[..., MCPServer]:
    return build_server


def _stdio_entry(name: str = "stdio-demo", **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "type": "mcp_command",
        "command": sys.executable,
        "args": [str(STDIO_SERVER)],
        "name": name,
    }
    entry.update(extra)
    return entry


@pytest.fixture
def stdio_entry() -> Callable[..., dict[str, Any]]:
    """Build an mcp_command entry that runs the test server script with this interpreter."""
    return _stdio_entry
