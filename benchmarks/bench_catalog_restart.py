"""A new skills server process on an unchanged folder: its first list_skills against its own
warm list_skills, with and without the persistent catalog index.

    .venv/bin/python benchmarks/bench_catalog_restart.py [--count 1000 10000]

For each size, generated skills (as in bench_list_skills) in a temporary folder, and a
persistent index in a temporary DPTTOOLS_CACHE_DIR. Every measured process is a real
server over stdio (``python -m doc_processing_std_tools.skills``) driven by the MCP SDK's
client; the time of a call is measured in the client, from the request to the answer.

- filling: one process lists the folder once, so that the index holds every skill;
- restart, index: a new process; its first list_skills (after initialize), then the median
  of its warm calls (the kernel vouches for the unchanged folder: no stat per skill);
- restart, no index: the same with DPTTOOLS_CACHE_DIR=off (the first call reads and
  parses every SKILL.md);
- in the library, for scale: the catalog's own warm check when it compares stamps (one
  stat per SKILL.md, what a platform without inotify pays on every call) and when the
  kernel vouches (no stat).

Printed ratios: first call with the index / warm call (the issue's target is at most 3x),
first call with the index / first call without, and the first call with the index against
the stat-compared warm check, which is the least any validation of the stored stamps costs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_list_skills import generate

from doc_processing_std_tools.skills.catalog.scan import SkillCatalog

MAX_BYTES = 50 * 1024 * 1024


async def one_process(skills: Path, cache: str, warm_calls: int) -> tuple[float, float]:
    """(first list_skills, median warm list_skills) in ms, in a new server process."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "DPTTOOLS_SKILLS_DIR": str(skills),
        "DPTTOOLS_CACHE_DIR": cache,
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "doc_processing_std_tools.skills"], env=env
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        started = time.perf_counter()
        first = await session.call_tool("list_skills", {})
        first_ms = (time.perf_counter() - started) * 1000
        assert not first.is_error
        times = []
        for _ in range(warm_calls):
            started = time.perf_counter()
            await session.call_tool("list_skills", {})
            times.append((time.perf_counter() - started) * 1000)
    return first_ms, statistics.median(times)


def library_warm(skills: Path, *, watch: bool, repeat: int) -> float:
    catalog = SkillCatalog(watch=watch)
    catalog.scan(skills, max_bytes=MAX_BYTES)
    for _ in range(3):
        catalog.peek(skills, max_bytes=MAX_BYTES)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        found = catalog.peek(skills, max_bytes=MAX_BYTES)
        times.append((time.perf_counter() - started) * 1000)
        assert found is not None
    return statistics.median(times)


async def measure(count: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as temp:
        skills = generate(Path(temp) / "skills", count)
        cache = str(Path(temp) / "cache")
        await one_process(skills, cache, 1)  # fills the index
        indexed = [await one_process(skills, cache, 20) for _ in range(runs)]
        plain = [await one_process(skills, "off", 20) for _ in range(runs)]
        first_index = statistics.median(first for first, _ in indexed)
        warm_index = statistics.median(warm for _, warm in indexed)
        first_plain = statistics.median(first for first, _ in plain)
        warm_plain = statistics.median(warm for _, warm in plain)
        stat_warm = library_warm(skills, watch=False, repeat=50)
        kernel_warm = library_warm(skills, watch=True, repeat=50)
    print(f"\n{count:,} skills (median of {runs} new processes)")
    print(f"  first list_skills, index:     {first_index:9.1f} ms")
    print(f"  warm list_skills, index:      {warm_index:9.1f} ms")
    print(f"  first list_skills, no index:  {first_plain:9.1f} ms")
    print(f"  warm list_skills, no index:   {warm_plain:9.1f} ms")
    print(f"  library warm check, stat:     {stat_warm:9.2f} ms")
    print(f"  library warm check, kernel:   {kernel_warm:9.3f} ms")
    print(f"  ratio first (index) / warm:            {first_index / warm_index:6.2f}x")
    print(f"  ratio first (index) / first (none):    {first_index / first_plain:6.2f}x")
    print(
        f"  ratio first (index) / warm + stat check: {first_index / (warm_index + stat_warm):6.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for count in args.count:
        anyio.run(measure, count, args.runs)


if __name__ == "__main__":
    main()
