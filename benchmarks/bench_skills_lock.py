"""Pinned serving (DPTTOOLS_SKILLS_LOCK): warm list_skills pinned against unpinned.

    .venv/bin/python benchmarks/bench_skills_lock.py [--skills 1000] [--repeat 200]

Generates the skills of ``bench_list_skills`` (SKILL.md, a script, a reference each),
writes their lock with ``dpt-skills lock``, and measures over an in-process MCP session:
the first (cold) list_skills and the median warm one, without and with the lock; also how
long writing the lock and ``--check`` take. The issue's target: warm pinned within 1.2x
of warm unpinned.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
import time
from pathlib import Path

import anyio
from bench_list_skills import amedian_ms, generate
from mcp import Client

from doc_processing_std_tools.config import reset_settings
from doc_processing_std_tools.skills.cli import main
from doc_processing_std_tools.skills.server import skills_server
from doc_processing_std_tools.skills.server import skills_server_state as skills_state


async def list_skills(repeat: int) -> tuple[float, float]:
    """(cold ms, warm median ms) of list_skills over one MCP session."""
    skills_state.clear()
    async with Client(skills_server) as client:

        async def call() -> object:
            return await client.call_tool("list_skills", {})

        started = time.perf_counter()
        await call()
        cold = (time.perf_counter() - started) * 1000
        await call()
        return cold, await amedian_ms(call, repeat)


def timed_cli(argv: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return (time.perf_counter() - started) * 1000, code


async def run(count: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        skills = generate(Path(scratch) / "skills", count)
        lock_file = Path(scratch) / "skills.lock"
        os.environ["DPTTOOLS_SKILLS_DIR"] = str(skills)
        os.environ["DPTTOOLS_CACHE_DIR"] = "off"
        os.environ.pop("DPTTOOLS_SKILLS_LOCK", None)
        reset_settings()
        lock_ms, code = timed_cli(["lock", "--output", str(lock_file)])
        assert code == 0
        check_ms, code = timed_cli(["lock", "--output", str(lock_file), "--check"])
        assert code == 0
        unpinned = await list_skills(repeat)
        os.environ["DPTTOOLS_SKILLS_LOCK"] = str(lock_file)
        reset_settings()
        pinned = await list_skills(repeat)
        os.environ.pop("DPTTOOLS_SKILLS_LOCK")
        reset_settings()
    print(f"{count} skills, 3 files each")
    print(f"dpt-skills lock:          {lock_ms:8.1f} ms")
    print(f"dpt-skills lock --check:  {check_ms:8.1f} ms")
    print("list_skills               cold ms   warm ms (median)")
    print(f"  unpinned             {unpinned[0]:10.1f} {unpinned[1]:9.3f}")
    print(f"  pinned               {pinned[0]:10.1f} {pinned[1]:9.3f}")
    print(f"warm pinned / unpinned: {pinned[1] / unpinned[1]:.2f}x (target: at most 1.2x)")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    anyio.run(run, args.skills, args.repeat)


if __name__ == "__main__":
    cli()
