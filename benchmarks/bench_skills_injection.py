"""Per-run cost of skills auto-injection.

For catalogs of 10, 100 and 1,000 generated skills, served by std-tools' skills server in
process and over stdio, time `Agent.run` with the offline test model (connections opened
once, before timing) with auto_inject_skills=True and with False, and print the medians and
their ratio. The True run pays for list_skills, rendering the catalog and filtering tools.

It also times the least any per-run catalog call can cost in process: one call of a tool
that does nothing, through the same SDK client, and prints the ratio a run would have if
the catalog call cost only that.

In process it also times, through an SDK client of the same server, the calls a run with
injection makes to the skills server (list_skills, and search_skills with the run's
request when the catalog does not fit the block's budget, as at 1,000 skills and more),
and prints the toolkit's own share of what injection adds: the added time less those
calls (parsing, choosing and rendering the catalog, filtering tools). The WARNING the
toolkit logs on every run whose block cannot show every skill is made but not printed.

Run by hand: .venv/bin/python benchmarks/bench_skills_injection.py [--runs N] [--sizes ...]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.server.mcpserver import MCPServer

from doc_processing_std_tools import config
from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.config import DEFAULT_SKILLS_CATALOG_BUDGET
from doc_processing_toolkit.messages import ModelResponse, TextPart
from doc_processing_toolkit.models.base import ModelRequest
from doc_processing_toolkit.models.test import tool_call

SIZES = (10, 100, 1000, 10000)


def make_skills(root: Path, count: int) -> Path:
    """`count` skills with realistic frontmatter and a body of a few paragraphs."""
    folder = root / f"skills-{count}"
    for index in range(count):
        skill = folder / f"skill-{index:04d}"
        (skill / "scripts").mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            "---\n"
            f"name: skill-{index:04d}\n"
            f"description: Handles document task number {index}; it extracts, checks and "
            "reports the fields a reviewer needs, with totals and dates normalised.\n"
            "license: MIT\n"
            "metadata:\n  owner: bench\n"
            "---\n\n" + "Step by step instructions.\n" * 40,
            encoding="utf-8",
        )
        (skill / "scripts" / "run.py").write_text("print('ok')\n", encoding="utf-8")
    return folder


def answer(request: ModelRequest) -> ModelResponse:
    """Answer at once: the smallest possible run."""
    return ModelResponse(parts=(TextPart("done"),))


def load_then_answer(request: ModelRequest) -> ModelResponse:
    """Load one skill, then answer: a run with one tool call and two model requests."""
    if len(request.messages) == 1:
        return tool_call("load_skill", {"skill_name": "skill-0001"})
    return ModelResponse(parts=(TextPart("done"),))


SCENARIOS = {"no tool call": answer, "one tool call": load_then_answer}


def noop_server() -> MCPServer:
    """A server whose one tool does nothing: the least a catalog call could cost."""
    server = MCPServer("noop")

    # async, like list_skills: the SDK runs a plain function in a worker thread.
    @server.tool(structured_output=False)
    async def noop() -> str:
        """Do nothing."""
        return "{}"

    return server


async def server_calls(runs: int, searched: bool) -> float:
    """Median seconds of the skills server calls of one run with injection, made through
    an SDK client of the in-process server the runs use."""
    from doc_processing_std_tools import skills_server

    times = []
    async with Client(skills_server) as client:
        await client.session.list_tools()
        for _ in range(max(3, runs // 10)):
            await client.session.call_tool("list_skills", {})
        for _ in range(runs):
            start = time.perf_counter()
            await client.session.call_tool("list_skills", {})
            if searched:
                await client.session.call_tool("search_skills", {"query": "go", "limit": 50})
            times.append(time.perf_counter() - start)
    return statistics.median(times)


async def catalog_work(runs: int) -> float:
    """Median seconds of the toolkit's own catalog work of one run with injection, on the
    answers the in-process server gives: reading the list_skills answer (cached by its
    text) and the search_skills answer, and choosing and rendering the block under the
    default budget, as a run whose catalog does not fit does."""
    from doc_processing_std_tools import skills_server
    from doc_processing_toolkit.skills.block import render_selected
    from doc_processing_toolkit.skills.entries import parse_catalog, parse_search

    async with Client(skills_server) as client:
        listed = await client.session.call_tool("list_skills", {})
        searched = await client.session.call_tool("search_skills", {"query": "go", "limit": 50})
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        catalog = parse_catalog(listed)
        found = parse_search(searched)
        render_selected(
            catalog,
            "tools",
            "skills",
            DEFAULT_SKILLS_CATALOG_BUDGET,
            request="go",
            found=found,
            searchable=True,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def time_pair(
    route: str, folder: Path, runs: int, script: Any
) -> tuple[float, float, float, bool]:
    """Median seconds of one run with injection off and on, connect excluded, and of one
    in-process call of a tool that does nothing.

    The two runs are timed alternately, so that a noisy neighbour slows both alike; the
    no-op call is timed in a loop of its own right after (timed between agent runs, it
    would also pay for their leftover event-loop work).
    """
    off = Agent(model=TestModel(script), tools=route_tools(route, folder), auto_inject_skills=False)
    on = Agent(model=TestModel(script), tools=route_tools(route, folder), auto_inject_skills=True)
    samples: dict[str, list[float]] = {"off": [], "on": [], "noop": []}
    searched = False
    async with off, on, Client(noop_server()) as client:
        for _ in range(max(3, runs // 10)):
            await off.run("warm up")
            await on.run("warm up")
        for _ in range(runs):
            for arm, agent in (("off", off), ("on", on)):
                start = time.perf_counter()
                result = await agent.run("go")
                samples[arm].append(time.perf_counter() - start)
                expected = "injected" if arm == "on" else "disabled"
                assert result.skills.status == expected, result.skills
                searched = searched or result.skills.ranking == "search_skills"
        await client.session.list_tools()  # as the agent does: a listed tool is called at once
        for _ in range(max(3, runs // 10)):
            await client.session.call_tool("noop", {})
        for _ in range(runs):
            start = time.perf_counter()
            await client.session.call_tool("noop", {})
            samples["noop"].append(time.perf_counter() - start)
    off_s, on_s, noop_s = (statistics.median(samples[k]) for k in ("off", "on", "noop"))
    return off_s, on_s, noop_s, searched


def route_tools(route: str, folder: Path) -> list[Any]:
    if route == "in process":
        os.environ["DPTTOOLS_SKILLS_DIR"] = str(folder)
        config.reset_settings()
        from doc_processing_std_tools import skills_server

        return [skills_server]
    return [
        {
            "type": "mcp_command",
            "command": sys.executable,
            "args": ["-m", "doc_processing_std_tools.skills"],
            "name": "std-tools",
            "env": {"DPTTOOLS_SKILLS_DIR": str(folder)},
        }
    ]


async def main(runs: int, sizes: list[int]) -> None:
    # Over the budget the toolkit logs one WARNING per run; it is made, but not printed
    # (printing it would time this terminal's logging handler).
    quiet = logging.getLogger("doc_processing_toolkit.skills")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    print(f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        folders = {size: make_skills(Path(tmp), size) for size in sizes}
        await anyio.sleep(0.2)  # let every SKILL.md age past the catalog's racy window
        print(
            f"{'run':<14} {'route':<10} {'skills':>6} {'inject off':>12} {'inject on':>12} "
            f"{'extra':>10} {'ratio':>7} {'no-op call':>11} {'floor':>6} "
            f"{'server calls':>13} {'toolkit own':>12}"
        )
        for scenario, script in SCENARIOS.items():
            for route in ("in process", "stdio"):
                for size, folder in folders.items():
                    count = runs if route == "in process" else max(20, runs // 4)
                    off, on, noop, searched = await time_pair(route, folder, count, script)
                    floor = f"{(off + noop) / off:>5.2f}x" if route == "in process" else "     -"
                    own = ""
                    if route == "in process":
                        calls = await server_calls(count, searched)
                        own = f"{calls * 1e3:>11.3f}ms {(on - off - calls) * 1e3:>10.3f}ms"
                    print(
                        f"{scenario:<14} {route:<10} {size:>6} {off * 1e3:>10.3f}ms "
                        f"{on * 1e3:>10.3f}ms {(on - off) * 1e3:>8.3f}ms {on / off:>6.2f}x "
                        f"{noop * 1e3:>9.3f}ms {floor} {own}"
                    )
        print(
            "\nfloor: the ratio a run would have if its catalog call cost no more than one "
            "in-process call of a tool that does nothing\n"
            "server calls: list_skills (and search_skills when the block cannot show every "
            "skill) through an SDK client; toolkit own: what injection adds less those calls"
        )
        print("\ntoolkit's own catalog work per run, in process (parse both answers, choose and")
        print("render the block within the default budget of 16,000 characters):")
        for size, folder in folders.items():
            route_tools("in process", folder)
            work = await catalog_work(runs * 3)
            print(f"  {size:>6} skills: {work * 1e3:.3f} ms")
        print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    arguments = parser.parse_args()
    anyio.run(main, arguments.runs, arguments.sizes)
