"""Every way to give an Agent tools, each shown by one real tool call.

The model is the offline TestModel, scripted to call one tool and then answer with the
tool's result, so this runs without network access or API keys:

    python examples/tools_routes.py
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters, stdio_client
from mcp.server.mcpserver import MCPServer

from doc_processing_toolkit import Agent, TestModel, tool
from doc_processing_toolkit.messages import ModelResponse, ToolResultPart
from doc_processing_toolkit.models import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call

WORD_SERVER = Path(__file__).with_name("word_server.py")


def calls(name: str, arguments: dict[str, Any]) -> TestModel:
    """A model that calls `name` once, then answers with the result."""

    def script(request: ModelRequest) -> ModelResponse:
        results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        if not results:
            return tool_call(name, arguments)
        return reply(results[0].content)

    return TestModel(script)


async def show(title: str, agent: Agent) -> None:
    async with agent:
        result = await agent.run("go")
    call = result.tool_calls[0]
    print(f"{title:<26} {call.name}{call.arguments} on {call.server!r} -> {result.output}")


def in_process_server() -> MCPServer:
    server = MCPServer("math", log_level="WARNING")

    @server.tool()
    def multiply(a: float, b: float) -> float:
        """Multiply two numbers."""
        return a * b

    return server


@tool(name="shout", description="Upper-case a text.")
def to_upper(text: str) -> str:
    return text.upper()


async def today() -> str:
    """Today's date, ISO formatted."""
    return time.strftime("%Y-%m-%d")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def wait_for_port(port: int) -> None:
    with anyio.fail_after(20):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
            else:
                await stream.aclose()
                return


async def main() -> None:
    await show(
        "in-process MCPServer",
        Agent(calls("multiply", {"a": 6, "b": 7}), tools=[in_process_server()]),
    )
    await show("functions", Agent(calls("shout", {"text": "hello"}), tools=[to_upper, today]))
    command = {
        "type": "mcp_command",
        "command": sys.executable,
        "args": [str(WORD_SERVER)],
        "name": "words-cmd",
    }
    await show("mcp_command", Agent(calls("count_words", {"text": "a b c"}), tools=[command]))
    script = {"type": "mcp_script", "script": str(WORD_SERVER), "name": "words-script"}
    await show("mcp_script", Agent(calls("reverse_words", {"text": "a b c"}), tools=[script]))
    prefixed = dict(command, name="words-prefixed", tool_prefix="w")
    await show("tool_prefix", Agent(calls("w_count_words", {"text": "x y"}), tools=[prefixed]))

    params = StdioServerParameters(command=sys.executable, args=[str(WORD_SERVER)])
    async with Client(stdio_client(params)) as client:
        entry = {"session": client.session, "name": "my-session"}
        await show("pre-built session", Agent(calls("count_words", {"text": "one"}), tools=[entry]))

    port = free_port()
    http_args = [sys.executable, str(WORD_SERVER), "--http", str(port)]
    async with await anyio.open_process(
        http_args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as http_child:
        try:
            await wait_for_port(port)
            url = f"http://127.0.0.1:{port}/mcp"
            http = {"type": "mcp_http", "url": url, "name": "words-http"}
            await show("mcp_http", Agent(calls("count_words", {"text": "over http"}), tools=[http]))
        finally:
            http_child.terminate()

    try:
        from fastmcp import FastMCP
    except ImportError:
        print(f"{'fastmcp object':<26} skipped: fastmcp>=4 is not installed")
    else:
        fast = FastMCP("fast")

        @fast.tool
        def halve(x: float) -> float:
            """Halve a number."""
            return x / 2

        await show("fastmcp object", Agent(calls("halve", {"x": 9}), tools=[fast]))


if __name__ == "__main__":
    anyio.run(main)
