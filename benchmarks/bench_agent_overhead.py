"""What a toolkit run costs on top of the tool call it makes.

For an in-process MCPServer and for the same server started over stdio (mcp_command),
compare:

- direct: one ``call_tool`` through an already-open mcp ``ClientSession``;
- agent: one ``Agent.run`` with the offline TestModel that calls that tool once and then
  answers (sessions already open: connecting is excluded).

The ratio agent / direct is the toolkit's overhead per run; the target is at most 2x.

Run: ``.venv/bin/python benchmarks/bench_agent_overhead.py [--runs N]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters, stdio_client
from mcp.server.mcpserver import MCPServer

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.messages import ModelResponse, ToolResultPart
from doc_processing_toolkit.models import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call

ECHO_SERVER = Path(__file__).with_name("echo_server.py")
ARGUMENTS = {"text": "benchmark payload"}


def in_process_server() -> MCPServer:
    server = MCPServer("bench-echo")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    return server


def one_tool_call(request: ModelRequest) -> ModelResponse:
    """Call echo once, then answer with its result."""
    results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
    if not results:
        return tool_call("echo", ARGUMENTS)
    return reply(results[0].content)


async def median_seconds(step: Callable[[], Awaitable[object]], runs: int) -> float:
    for _ in range(max(3, runs // 10)):
        await step()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        await step()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


async def direct(server: MCPServer | StdioServerParameters, runs: int) -> float:
    transport = server if isinstance(server, MCPServer) else stdio_client(server)
    async with Client(transport) as client:
        session = client.session
        await session.list_tools()
        return await median_seconds(lambda: session.call_tool("echo", ARGUMENTS), runs)


async def agent(tools: list[object], runs: int) -> float:
    # Default settings, skills auto-injection included: with no skills server it only
    # looks at the tool lists, which is what every run of such an agent pays.
    agent = Agent(TestModel(one_tool_call), tools=tools)
    async with agent:
        result = await agent.run("go")
        assert result.output == ARGUMENTS["text"], result.output
        return await median_seconds(lambda: agent.run("go"), runs)


async def main(runs: int) -> None:
    stdio = StdioServerParameters(command=sys.executable, args=[str(ECHO_SERVER)])
    command = {"type": "mcp_command", "command": sys.executable, "args": [str(ECHO_SERVER)]}
    rows = [
        (
            "in-process MCPServer",
            await direct(in_process_server(), runs),
            await agent([in_process_server()], runs),
        ),
        ("mcp_command (stdio)", await direct(stdio, runs), await agent([command], runs)),
    ]
    print(f"median of {runs} runs each; the agent run includes one tool call")
    print(f"{'route':<22} {'direct call':>12} {'agent run':>12} {'ratio':>7}")
    for name, direct_s, agent_s in rows:
        ratio = agent_s / direct_s
        print(f"{name:<22} {direct_s * 1e3:>9.3f} ms {agent_s * 1e3:>9.3f} ms {ratio:>6.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    anyio.run(main, parser.parse_args().runs)
