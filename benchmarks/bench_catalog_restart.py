"""A new skills server process on an unchanged folder: its first, second and third
list_skills against its warm call plus the restart floor, the index's size, and the
server's memory peak.

    .venv/bin/python benchmarks/bench_catalog_restart.py [--count 1000 10000 100000]

For each size, generated skills (as in bench_list_skills: a SKILL.md of about 2 KB, a
script and a reference each) in a temporary folder, and a persistent index in a temporary
DPTTOOLS_CACHE_DIR. Every measured process is a real server over stdio
(``python -m doc_processing_std_tools.skills``) driven by the MCP SDK's client; the time of
a call is measured in the client, from the request to the answer.

- cold: one process on the empty index lists the folder (its first call reads every
  file and fills the index);
- restart, index: new processes; the first, second and third list_skills (after
  initialize), then the median of the warm calls after them;
- restart, no index: the same with DPTTOOLS_CACHE_DIR=off.

The floors, timed in this process on the same files, medians of several runs:

- **restart floor** (the issue's): ``stat`` every SKILL.md and read every row of the
  index once;
- **listing floor**: ``stat`` every file and folder a listing depends on (each SKILL.md
  and every entry of each skill folder, since list_skills reports what the audit of the
  other files finds) and read the index once: what any process must pay to know that
  nothing changed while no server ran.

Printed: the ratio of the first call to (warm call + restart floor), the target being at
most 3x, and to (warm call + listing floor); the second call against the third (the target:
as warm); the index's bytes against the SKILL.md bytes it describes (target: at most 1x);
the server's peak resident memory (VmHWM, Linux), cold and restarted (target at 100,000
skills: at most 400 MB). With ``--search``, the restarted server also answers one
search_skills before its memory is read (the search index is built then).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
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

MAX_BYTES = 50 * 1024 * 1024


def children() -> set[int]:
    """The process ids of this process's children (Linux)."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            found.update(int(pid) for pid in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def peak_mb(pid: int) -> float:
    """The peak resident memory of process `pid` so far, in MB (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def one_process(
    skills: Path, cache: str, warm_calls: int, *, search: bool = False
) -> tuple[list[float], float]:
    """(the list_skills times in ms, in order; the server's peak memory in MB)."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "DPTTOOLS_SKILLS_DIR": str(skills),
        "DPTTOOLS_CACHE_DIR": cache,
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "doc_processing_std_tools.skills"], env=env
    )
    before = children()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        (server,) = children() - before
        times = []
        for _ in range(warm_calls):
            started = time.perf_counter()
            answer = await session.call_tool("list_skills", {})
            times.append((time.perf_counter() - started) * 1000)
            assert not answer.is_error
        if search:
            found = await session.call_tool("search_skills", {"query": "document type 4242"})
            assert not found.is_error
        memory = peak_mb(server)
    return times, memory


def timed(run: object, repeat: int) -> float:
    """Median milliseconds of `repeat` calls of `run`."""
    assert callable(run)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def restart_floor(skills: Path, database: Path) -> None:
    """Stat every SKILL.md and read every row of the index once."""
    for name in os.listdir(skills):  # noqa: PTH208
        os.stat(f"{skills}/{name}/SKILL.md")  # noqa: PTH116
    connection = sqlite3.connect(database)
    for _ in connection.execute("SELECT * FROM skills"):
        pass
    connection.close()


def listing_floor(skills: Path, database: Path) -> None:
    """Stat every file and folder a listing depends on, and read the index once."""
    pending = [f"{skills}/{name}" for name in os.listdir(skills)]  # noqa: PTH208
    while pending:
        folder = pending.pop()
        os.lstat(folder)
        for entry in os.scandir(folder):
            entry.stat(follow_symlinks=False)
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
    connection = sqlite3.connect(database)
    for _ in connection.execute("SELECT * FROM skills"):
        pass
    connection.close()


def skill_md_bytes(skills: Path) -> int:
    return sum(
        os.stat(f"{skills}/{name}/SKILL.md").st_size  # noqa: PTH116
        for name in os.listdir(skills)  # noqa: PTH208
    )


async def measure(count: int, runs: int, warm_calls: int, search: bool, data: Path | None) -> None:
    with tempfile.TemporaryDirectory() as temp:
        if data is None:
            skills = generate(Path(temp) / "skills", count)
        else:
            skills = data / f"skills-{count}"
            if not skills.is_dir():
                generate(skills, count)
        cache = Path(temp) / "cache"
        cold_times, cold_memory = await one_process(skills, str(cache), 2)
        (database,) = cache.glob("skills-*.sqlite3")
        indexed = [await one_process(skills, str(cache), warm_calls) for _ in range(runs)]
        plain = [await one_process(skills, "off", warm_calls) for _ in range(runs)]
        searched = await one_process(skills, str(cache), 3, search=True) if search else None
        floor = timed(lambda: restart_floor(skills, database), 5)
        full = timed(lambda: listing_floor(skills, database), 5)
        index_bytes = database.stat().st_size
        source_bytes = skill_md_bytes(skills)

    def median_of(results: list[tuple[list[float], float]], index: int | None) -> float:
        if index is None:  # the warm calls after the third
            return statistics.median(statistics.median(times[3:]) for times, _ in results)
        return statistics.median(times[index] for times, _ in results)

    first, second, third, warm = (median_of(indexed, i) for i in (0, 1, 2, None))
    first_plain, warm_plain = median_of(plain, 0), median_of(plain, None)
    memory = max(m for _, m in indexed)
    print(f"\n{count:,} skills (median of {runs} new processes; load {os.getloadavg()[0]:.1f})")
    print(f"  cold process, first list_skills (fills the index): {cold_times[0]:9.1f} ms")
    print(f"  restart, index: first list_skills:  {first:9.1f} ms")
    print(f"  restart, index: second list_skills: {second:9.2f} ms")
    print(f"  restart, index: third list_skills:  {third:9.2f} ms")
    print(f"  restart, index: warm list_skills:   {warm:9.2f} ms")
    print(f"  restart, no index: first:           {first_plain:9.1f} ms")
    print(f"  restart, no index: warm:            {warm_plain:9.2f} ms")
    print(f"  restart floor (stat SKILL.md, read index): {floor:9.1f} ms")
    print(f"  listing floor (stat every file, read index): {full:9.1f} ms")
    print(f"  ratio first / (warm + restart floor): {first / (warm + floor):6.2f}x (target <= 3x)")
    print(f"  ratio first / (warm + listing floor): {first / (warm + full):6.2f}x")
    print(f"  ratio second / third:                 {second / third:6.2f}x (target: as warm)")
    print(f"  ratio first (index) / first (no index): {first / first_plain:6.2f}x")
    print(
        f"  index {index_bytes / count:,.0f} B/skill, SKILL.md {source_bytes / count:,.0f} "
        f"B/skill: {index_bytes / source_bytes:.2f}x (target <= 1x)"
    )
    print(f"  server peak memory, cold process:      {cold_memory:7.0f} MB")
    print(f"  server peak memory, restarted process: {memory:7.0f} MB")
    if searched is not None:
        print(f"  server peak memory, restarted + search_skills: {searched[1]:7.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--count", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=13, help="list_skills per process")
    parser.add_argument("--search", action="store_true", help="also one search_skills")
    parser.add_argument(
        "--data", type=Path, help="keep the generated skills here and reuse them on later runs"
    )
    args = parser.parse_args()
    for count in args.count:
        anyio.run(measure, count, args.runs, args.calls, args.search, args.data)


if __name__ == "__main__":
    main()
