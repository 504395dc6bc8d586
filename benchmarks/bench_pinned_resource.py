"""Pinned load_skill_resource of a 1 MB file against unpinned, over an MCP session.

    .venv/bin/python benchmarks/bench_pinned_resource.py [--repeat 200] [--size-mb 1]

Generates one skill holding a text reference of the given size (ASCII Markdown, so the
hidden-character escape takes its fast path) beside a SKILL.md and a script, writes its
lock with ``dpt-skills lock``, and measures the median ``load_skill_resource`` of that
file over one in-process MCP session: without a lock, then with the server pinned to it
(every read checked against the locked SHA-256, and the bytes checked served). Also the
same two calls made directly on the library, without the session. The target: pinned
within 1.2x of unpinned.
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
    actions.clear_cache()
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


def library_median(repeat: int) -> float:
    actions.clear_cache()
    settings = get_settings()
    actions.load_skill_resource(settings, "big-reference", "references/glossary.md")
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        actions.load_skill_resource(settings, "big-reference", "references/glossary.md")
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure(repeat: int, lock: Path | None) -> tuple[float, float]:
    if lock is None:
        os.environ.pop("DPTTOOLS_SKILLS_LOCK", None)
    else:
        os.environ["DPTTOOLS_SKILLS_LOCK"] = str(lock)
    reset_settings()
    return anyio.run(session_median, repeat), library_median(repeat)


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
        # Alternating rounds, so that a change in the machine's load hits both alike.
        rows = []
        for _ in range(3):
            rows.append((measure(repeat, None), measure(repeat, lock)))
        load = os.getloadavg()[0]
        print(
            f"file of {len(data):,} bytes; SHA-256 of it {sha_ms:.2f} ms; load average "
            f"{load:.1f}; medians of {repeat} calls, 3 alternating rounds"
        )
        print(
            "| round | session unpinned | session pinned | x | library unpinned | "
            "library pinned | x |"
        )
        print("|---|---|---|---|---|---|---|")
        for index, ((s_free, l_free), (s_pin, l_pin)) in enumerate(rows, 1):
            print(
                f"| {index} | {s_free:.2f} ms | {s_pin:.2f} ms | {s_pin / s_free:.2f} | "
                f"{l_free:.2f} ms | {l_pin:.2f} ms | {l_pin / l_free:.2f} |"
            )


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=200, help="calls per median")
    parser.add_argument("--size-mb", type=float, default=1.0, help="the file's size in MB")
    args = parser.parse_args()
    run(args.repeat, int(args.size_mb * 1024 * 1024))


if __name__ == "__main__":
    cli()
