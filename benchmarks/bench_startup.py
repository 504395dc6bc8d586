"""Start-up of the composed server against a bare one-tool MCPServer, over stdio.

Times, for each server, the span from spawning the process to the first `list_skills`
answer, with the MCP SDK's own stdio client. The two are run alternately, and the medians
are compared. Target: the composed server within 1.2x of the bare one.

Run by hand: .venv/bin/python benchmarks/bench_startup.py [--runs 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

BARE_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("bare")


@server.tool()
def list_skills() -> str:
    """Answer with an empty catalog."""
    return '{"skills": [], "count": 0}'


server.run()
'''

SKILL = "---\nname: demo\ndescription: A skill for the start-up benchmark.\n---\n\n# Demo\n"


async def first_answer(params: StdioServerParameters) -> float:
    """Seconds from spawning the server to its first list_skills answer."""
    start = time.perf_counter()
    async with Client(params) as client:
        result = await client.call_tool("list_skills", {})
        elapsed = time.perf_counter() - start
    if result.is_error:
        raise RuntimeError(f"list_skills failed: {result.content}")
    return elapsed


async def measure(runs: int, folder: Path) -> tuple[list[float], list[float]]:
    script = folder / "bare_server.py"
    script.write_text(BARE_SERVER, encoding="utf-8")
    skills = folder / "skills" / "demo"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text(SKILL, encoding="utf-8")
    bare = StdioServerParameters(command=sys.executable, args=[str(script)], cwd=str(folder))
    composed = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools"],
        env={"DPTTOOLS_SKILLS_DIR": str(folder / "skills")},
        cwd=str(folder),
    )
    # One untimed round each, so both start with warm file caches and compiled bytecode.
    await first_answer(bare)
    await first_answer(composed)
    bare_times: list[float] = []
    composed_times: list[float] = []
    for _ in range(runs):
        bare_times.append(await first_answer(bare))
        composed_times.append(await first_answer(composed))
    return bare_times, composed_times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        bare, composed = anyio.run(measure, args.runs, Path(temp))
    bare_median = statistics.median(bare)
    composed_median = statistics.median(composed)
    print(f"Runs: {args.runs} of each, alternating")
    print("| Server | Median to first list_skills answer | Fastest | Slowest |")
    print("|---|---|---|---|")
    print(
        f"| bare MCPServer, one tool | {bare_median:.3f} s | "
        f"{min(bare):.3f} s | {max(bare):.3f} s |"
    )
    print(
        f"| python -m doc_processing_std_tools | {composed_median:.3f} s | "
        f"{min(composed):.3f} s | {max(composed):.3f} s |"
    )
    print(f"Ratio composed / bare: {composed_median / bare_median:.2f}x (target: at most 1.2x)")


if __name__ == "__main__":
    main()
