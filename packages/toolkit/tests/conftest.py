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
import script_user_access
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

SERVERS = Path(__file__).parent / "servers"
STDIO_SERVER = SERVERS / "stdio_server.py"
"""A real MCP server script: serves over stdio, or streamable HTTP with --http PORT."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# The run keeps to a temporary folder of its own (the skills index of the servers it
# starts included); as root, skill scripts run as an unprivileged user, which must reach
# the tests' temporary folders there (see the std-tools tests' script_user_access).
@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    script_user_access.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    script_user_access.unconfigure()


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    script_user_access.session_start(session)


@pytest.fixture(autouse=True)
def _script_user_reaches_tmp_path(request: pytest.FixtureRequest) -> None:
    script_user_access.reach_tmp_folders(request)


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


class SpanRecords:
    """The spans of a test: this process's (the SDK's in-memory exporter, switched on for
    the test alone) and those traced server children wrote to JSON-lines files."""

    def __init__(self, exporter: Any) -> None:
        self.exporter = exporter
        self.files: list[Path] = []

    def all(self) -> list[dict[str, Any]]:
        """Every finished span as a plain record (name, kind, ids, attributes, events)."""
        import json

        records = [span_record(span) for span in self.exporter.get_finished_spans()]
        for path in self.files:
            if path.exists():
                records.extend(json.loads(line) for line in path.read_text().splitlines())
        return records

    def named(self, name: str) -> list[dict[str, Any]]:
        """The spans called `name`."""
        return [r for r in self.all() if r["name"] == name]

    def ancestors(self, record: dict[str, Any]) -> list[str]:
        """The names of `record`'s ancestors, nearest first."""
        by_id = {r["span_id"]: r for r in self.all()}
        names: list[str] = []
        parent = by_id.get(record["parent_id"])
        while parent is not None:
            names.append(parent["name"])
            parent = by_id.get(parent["parent_id"])
        return names

    def tree(self) -> str:
        """The spans as an indented tree, children in start order."""
        records = sorted(self.all(), key=lambda r: r["start"])
        ids = {r["span_id"] for r in records}
        children: dict[str | None, list[dict[str, Any]]] = {}
        for r in records:
            children.setdefault(r["parent_id"] if r["parent_id"] in ids else None, []).append(r)
        lines: list[str] = []

        def walk(parent: str | None, depth: int) -> None:
            for r in children.get(parent, []):
                lines.append(f"{'  ' * depth}{r['name']} [{r['kind']}]")
                walk(r["span_id"], depth + 1)

        walk(None, 0)
        return "\n".join(lines)


def span_record(span: Any) -> dict[str, Any]:
    """A finished SDK span as a JSON-able record (the traced children write the same)."""

    def plain(value: Any) -> Any:
        return list(value) if isinstance(value, tuple) else value

    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": f"{span.context.trace_id:032x}",
        "span_id": f"{span.context.span_id:016x}",
        "parent_id": f"{span.parent.span_id:016x}" if span.parent is not None else None,
        "start": span.start_time,
        "status": span.status.status_code.name,
        "attributes": {k: plain(v) for k, v in (span.attributes or {}).items()},
        "events": [
            {"name": e.name, "attributes": {k: plain(v) for k, v in (e.attributes or {}).items()}}
            for e in span.events
        ],
    }


_SWITCHED: list[Any] = []


@pytest.fixture
def spans() -> Iterator[SpanRecords]:
    """Record this test's spans: a global SDK tracer provider is set once per process
    (spans go to an in-memory exporter only while a test holds this fixture)."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    class Switched(SimpleSpanProcessor):
        active = False

        def on_end(self, span: ReadableSpan) -> None:
            if self.active:
                super().on_end(span)

    if not _SWITCHED:
        exporter = InMemorySpanExporter()
        processor = Switched(exporter)
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
        provider.add_span_processor(processor)
        _SWITCHED.append((processor, exporter))
    processor, exporter = _SWITCHED[0]
    exporter.clear()
    processor.active = True
    try:
        yield SpanRecords(exporter)
    finally:
        processor.active = False
        exporter.clear()
