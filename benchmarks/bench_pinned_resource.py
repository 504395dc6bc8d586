"""Pinned load_skill_resource of a 1 MB file against unpinned, over an MCP session.

    .venv/bin/python benchmarks/bench_pinned_resource.py [--repeat 200] [--size-mb 1]

Generates one skill holding a text reference of the given size (ASCII Markdown, so the
hidden-character escape takes its fast path) beside a SKILL.md and a script, writes its
lock with ``dpt-skills lock``, and measures the median ``load_skill_resource`` of that
file without a lock and with the server pinned to it (every read checked against the
locked SHA-256, and the bytes checked served): made directly on the library, the two
alternating call by call, timed by the wall clock and by CPU time (on a shared machine
the wall clock also counts waiting for a core); and over an in-process MCP session per
setting, in five alternating rounds (the settings are the process's: switching them
between two calls of one session makes the server build its catalog again, which would
be timed too). The target: pinned within 1.2x of unpinned.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import statistics
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

from doc_processing_std_tools.config import get_settings, reset_settings
from doc_processing_std_tools.skills import actions
from doc_processing_std_tools.skills.cli import main
from doc_processing_std_tools.skills.server import skills_server
from doc_processing_std_tools.skills.server import skills_server_state as skills_state


def generate(root: Path, size: int) -> None:
    folder = root / "big-reference"
    (folder / "references").mkdir(parents=True)
    (folder / "scripts").mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: big-reference\ndescription: Answers from a large glossary. Use when "
        "a term needs looking up.\n---\n\n# Steps\n\nRead references/glossary.md.\n",
        encoding="utf-8",
    )
    line = "| term | The meaning of the term, with an example of how it is used. |\n"
    text = "# Glossary\n\n" + line * (size // len(line) + 1)
    (folder / "references" / "glossary.md").write_text(text[:size], encoding="utf-8")
    (folder / "scripts" / "look_up.py").write_text("print('found')\n", encoding="utf-8")


async def session_median(repeat: int) -> float:
    skills_state.clear()
    arguments = {"skill_name": "big-reference", "resource_path": "references/glossary.md"}
    async with Client(skills_server) as client:
        result = await client.call_tool("load_skill_resource", arguments)
        assert not result.is_error, result
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            await client.call_tool("load_skill_resource", arguments)
            times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def library_interleaved(repeat: int, lock: Path) -> tuple[list[float], ...]:
    """(unpinned wall, pinned wall, unpinned CPU, pinned CPU) seconds of `repeat` calls
    each made directly on the library, the two settings alternating call by call (and
    which goes first, round by round), so that a change of load falls on both alike."""
    os.environ.pop("DPTTOOLS_SKILLS_LOCK", None)
    reset_settings()
    free = get_settings()
    os.environ["DPTTOOLS_SKILLS_LOCK"] = str(lock)
    reset_settings()
    pinned = get_settings()
    skills_state.clear()
    arguments = ("big-reference", "references/glossary.md")
    for settings in (free, pinned):
        actions.load_skill_resource(skills_state, settings, *arguments)
    times: tuple[list[float], ...] = ([], [], [], [])
    for index in range(repeat):
        order = [(free, 0), (pinned, 1)]
        for settings, at in order if index % 2 == 0 else reversed(order):
            wall, cpu = time.perf_counter(), time.process_time()
            actions.load_skill_resource(skills_state, settings, *arguments)
            times[at].append(time.perf_counter() - wall)
            times[at + 2].append(time.process_time() - cpu)
    return times


def measure(repeat: int, lock: Path | None) -> float:
    if lock is None:
        os.environ.pop("DPTTOOLS_SKILLS_LOCK", None)
    else:
        os.environ["DPTTOOLS_SKILLS_LOCK"] = str(lock)
    reset_settings()
    return anyio.run(session_median, repeat)


def run(repeat: int, size: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        skills = Path(scratch) / "skills"
        generate(skills, size)
        lock = Path(scratch) / "skills.lock"
        os.environ["DPTTOOLS_SKILLS_DIR"] = str(skills)
        os.environ["DPTTOOLS_CACHE_DIR"] = "off"
        reset_settings()
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["lock", "--output", str(lock)]) == 0
        time.sleep(0.2)  # past the moments within which a stamp is not trusted
        data = (skills / "big-reference" / "references" / "glossary.md").read_bytes()
        started = time.perf_counter()
        for _ in range(20):
            hashlib.sha256(data).hexdigest()
        sha_ms = (time.perf_counter() - started) * 1000 / 20
        # The library calls alternate call by call; the sessions (one server's settings
        # per process) round by round, five rounds.
        library = library_interleaved(4 * repeat, lock)
        rows = [(measure(repeat, None), measure(repeat, lock)) for _ in range(5)]
        load = os.getloadavg()[0]
        print(
            f"file of {len(data):,} bytes; SHA-256 of it {sha_ms:.2f} ms; load average {load:.1f}"
        )
        median = statistics.median
        print(f"\nLibrary, {4 * repeat} calls each, alternating call by call (medians):\n")
        print("| clock | unpinned | pinned | x |")
        print("|---|---|---|---|")
        for label, at in (("wall", 0), ("CPU", 2)):
            free, pinned = median(library[at]) * 1000, median(library[at + 1]) * 1000
            print(f"| {label} | {free:.2f} ms | {pinned:.2f} ms | {pinned / free:.2f} |")
        print(f"\nMCP session, medians of {repeat} calls, 5 alternating rounds:\n")
        print("| round | unpinned | pinned | x |")
        print("|---|---|---|---|")
        for index, (free_ms, pinned_ms) in enumerate(rows, 1):
            print(
                f"| {index} | {free_ms:.2f} ms | {pinned_ms:.2f} ms | {pinned_ms / free_ms:.2f} |"
            )
        ratios = [pinned_ms / free_ms for free_ms, pinned_ms in rows]
        print(f"| median | | | {median(ratios):.2f} |")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=200, help="calls per median")
    parser.add_argument("--size-mb", type=float, default=1.0, help="the file's size in MB")
    args = parser.parse_args()
    run(args.repeat, int(args.size_mb * 1024 * 1024))


if __name__ == "__main__":
    cli()
