"""Shared fixtures of the toolkit tests: the anyio backend and small real MCP servers."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
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


class HttpServer:
    """The test server script serving streamable HTTP in a real child process."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port: int = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the child and wait until it accepts connections."""
        self.process = subprocess.Popen(
            [sys.executable, str(STDIO_SERVER), "--http", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        pytest.fail("the HTTP test server did not start")

    def stop(self) -> None:
        """Stop the child."""
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    """A started HTTP test server, stopped after the test."""
    server = HttpServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
