"""What skills auto-injection adds to a run when the catalog comes from an MCP Skills
extension server whose answer is still within its ``ttlMs``.

An in-process MCPServer serves the extension with 100 skills and ``ttlMs`` of one minute.
The same agent setup runs with ``auto_inject_skills`` off and on; the offline TestModel
answers at once, so a run is: list the tools, (catalog step), one model request. Within
the ttl the catalog step asks the server nothing and reuses the rendered block.

Run: ``.venv/bin/python benchmarks/bench_skills_catalog_ttl.py [--runs N]``
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
from collections.abc import Sequence
from typing import Any

import anyio
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp_types import PaginatedRequestParams

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.models.test import reply

SKILLS = 100


class Catalog(Extension):
    """``skills/list`` of SKILLS skills in one page, valid for a minute."""

    identifier = "io.modelcontextprotocol/skills"

    def __init__(self) -> None:
        self.calls = 0
        self.entries = []
        for index in range(SKILLS):
            name = f"skill-{index:03d}"
            text = f"---\nname: {name}\ndescription: Does task {index}.\n---\nBody.\n".encode()
            uri = f"skill://{name}/SKILL.md"
            digest = "sha256:" + hashlib.sha256(text).hexdigest()
            self.entries.append(
                {
                    "uri": uri,
                    "frontmatter": {"name": name, "description": f"Does task {index} well."},
                    "resources": [{"uri": uri, "digest": digest, "size": len(text)}],
                }
            )

    def methods(self) -> Sequence[MethodBinding]:
        return (MethodBinding("skills/list", PaginatedRequestParams, self._list),)

    async def _list(self, ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        self.calls += 1
        return {
            "resultType": "complete",
            "skills": self.entries,
            "ttlMs": 60_000,
            "cacheScope": "private",
        }


async def median_run(enabled: bool, runs: int) -> tuple[float, int]:
    catalog = Catalog()
    server = MCPServer("skills-peer", extensions=[catalog])

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    agent = Agent(
        TestModel(lambda request: reply("ok")), tools=[server], auto_inject_skills=enabled
    )
    async with agent:
        for _ in range(max(3, runs // 10)):
            await agent.run("go")
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            await agent.run("go")
            samples.append(time.perf_counter() - started)
    return statistics.median(samples), catalog.calls


async def main(runs: int) -> None:
    rounds = []
    for _ in range(3):
        off, _ = await median_run(False, runs)
        on, calls = await median_run(True, runs)
        rounds.append((off, on, calls))
    print(f"{SKILLS} skills, ttlMs 60000, median of {runs} runs, 3 rounds (off / on / added)")
    for off, on, calls in rounds:
        print(
            f"  off {off * 1e3:.3f} ms   on {on * 1e3:.3f} ms   added {(on - off) * 1e3:+.3f} ms"
            f"   skills/list calls: {calls}"
        )
    added = statistics.median(on - off for off, on, _ in rounds)
    print(f"added per run (median of rounds): {added * 1e3:.3f} ms (target <= 0.1 ms)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    anyio.run(main, parser.parse_args().runs)
