"""list_skills, cold and warm, side by side with two peers that read the same folders.

Run ``make bench`` once (it installs the peers), then:

    .venv/bin/python benchmarks/bench_list_skills.py

Datasets: 1,000 generated skills, and each collection under ../shared/corpora when that
folder exists next to the repository. Measured, each as the median of several runs:

- ours, library: a fresh SkillCatalog scanning the folder and serialising the list_skills
  JSON (cold), and the same catalog asked again with nothing changed on disk (warm);
- skills-ref 0.1.1: read_properties on every skill folder (it keeps no cache);
- the same 1,000 skills laid out three ways, warm list_skills over MCP only: directly in
  one folder (depth 1), nested as plugins/<plugin>/skills/<skill> in 50 plugins
  (DPTTOOLS_SKILLS_DEPTH=4), and as 50 skills folders in DPTTOOLS_SKILLS_DIR;
- over an in-process MCP session: our list_skills tool, cold (cache cleared) and warm,
  and fastmcp 4's SkillsDirectoryProvider answering skills/list with reload=True (it
  reads the folders on every request, the only mode that sees a new skill) and with the
  default reload=False (a snapshot taken at start-up, never refreshed).

The corpora are public skill collections, used with attribution: anthropics-skills
(github.com/anthropics/skills, Apache-2.0 per skill), openai-skills (github.com/openai/skills,
Apache-2.0 per skill, notion-* skills MIT by Notion Labs), obra-superpowers
(github.com/obra/superpowers, MIT, (c) 2025 Jesse Vincent) and k-dense-scientific-skills
(github.com/K-Dense-AI/claude-scientific-skills, MIT, (c) 2025 K-Dense Inc.).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from mcp import Client

from doc_processing_std_tools.config import load_settings, reset_settings
from doc_processing_std_tools.skills.catalog.scan import SkillCatalog
from doc_processing_std_tools.skills.server import skills_server
from doc_processing_std_tools.skills.server import skills_server_state as skills_state

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO.parent / "shared" / "corpora"
MAX_BYTES = 50 * 1024 * 1024


def generate(root: Path, count: int) -> Path:
    """Write `count` realistic skills (SKILL.md, a script, a reference) under `root`."""
    body = "\n".join(
        f"{step}. Read the input, check field {step} against the glossary, then record it."
        for step in range(1, 25)
    )
    for index in range(count):
        folder = root / f"generated-skill-{index:04d}"
        (folder / "scripts").mkdir(parents=True)
        (folder / "references").mkdir()
        (folder / "SKILL.md").write_text(
            f"---\nname: generated-skill-{index:04d}\n"
            f"description: Extracts the fields of document type {index} into JSON and checks "
            "them against the glossary. Use when a user hands over such a document.\n"
            "license: MIT\nmetadata:\n  owner: benchmark\n  version: '1.0'\n---\n\n"
            f"# Generated skill {index}\n\n{body}\n",
            encoding="utf-8",
        )
        (folder / "scripts" / "check.py").write_text("print('ok')\n", encoding="utf-8")
        (folder / "references" / "glossary.md").write_text("# Glossary\n", encoding="utf-8")
    # Let the files age past the catalog's guard against same-tick edits, as real skills do.
    time.sleep(0.3)
    return root


def skills_folders(collection: Path) -> list[Path]:
    """The folders that directly hold skill folders (the openai collection has three)."""
    return sorted({p.parent.parent for p in collection.rglob("SKILL.md")})


def median_ms(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def amedian_ms(run: Callable[[], Awaitable[object]], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        await run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def ours_library(folders: list[Path], repeat: int) -> tuple[float, float, int]:
    def cold() -> int:
        return sum(len(SkillCatalog().scan(f, max_bytes=MAX_BYTES).json) for f in folders)

    warm_catalog = SkillCatalog()

    def warm() -> int:
        return sum(len(warm_catalog.scan(f, max_bytes=MAX_BYTES).json) for f in folders)

    warm()
    count = sum(SkillCatalog().scan(f, max_bytes=MAX_BYTES).count for f in folders)
    return median_ms(cold, repeat), median_ms(warm, repeat * 5), count


def skills_ref(folders: list[Path], repeat: int) -> tuple[float, int] | None:
    try:
        from skills_ref import SkillError, read_properties
    except ImportError:
        return None
    skill_dirs = [
        d
        for f in folders
        for d in sorted(f.iterdir())
        if not d.name.startswith(".") and (d / "SKILL.md").is_file()
    ]
    failures = 0

    def run() -> None:
        nonlocal failures
        failures = 0
        for directory in skill_dirs:
            try:
                read_properties(directory)
            except SkillError:
                failures += 1

    return median_ms(run, repeat), failures


async def ours_mcp(folders: list[Path], repeat: int) -> tuple[float, float]:
    cold_total = warm_total = 0.0
    for folder in folders:
        reset_settings(load_settings({"DPTTOOLS_SKILLS_DIR": str(folder)}))
        async with Client(skills_server) as client:

            async def call() -> object:
                return await client.call_tool("list_skills", {})

            async def cold() -> object:
                skills_state.clear()
                return await call()

            await call()
            cold_total += await amedian_ms(cold, repeat)
            warm_total += await amedian_ms(call, repeat * 5)
    reset_settings()
    return cold_total, warm_total


async def fastmcp_list(folders: list[Path], repeat: int, reload: bool) -> float | str | None:
    try:
        from fastmcp import Client as FastMCPClient
        from fastmcp import FastMCP
        from fastmcp.skills.client import SkillsClientExtension
        from fastmcp.skills.provider import SkillsDirectoryProvider
    except ImportError:
        return None
    total = 0.0
    for folder in folders:
        server = FastMCP("peer")
        try:
            server.add_provider(SkillsDirectoryProvider(folder, reload=reload))
        except ValueError as exc:
            invalid = str(exc).split(" ", 1)[0]
            return f"refuses to start ({invalid} invalid folder)"
        async with FastMCPClient(server, extensions=[SkillsClientExtension()]) as client:

            async def call() -> object:
                return await client.list_skills(cache_mode="refresh")

            await call()
            total += await amedian_ms(call, repeat)
    return total


def nest(flat: Path, root: Path, plugins: int) -> Path:
    """A copy of the skills of `flat` as ``plugins/pNN/skills/<skill>`` under `root`."""
    for index, folder in enumerate(sorted(flat.iterdir())):
        shutil.copytree(
            folder, root / "plugins" / f"p{index % plugins:02d}" / "skills" / folder.name
        )
    time.sleep(0.3)
    return root


async def warm_layouts(flat: Path, scratch: Path, repeat: int) -> list[str]:
    """Warm list_skills over MCP for the same skills in one folder, nested, and spread
    over 50 folders."""
    nested = nest(flat, scratch / "nested", 50)
    plugins = sorted((nested / "plugins").iterdir())
    layouts = [
        ("one folder, depth 1", {"DPTTOOLS_SKILLS_DIR": str(flat)}),
        (
            "plugins/*/skills/*, depth 4",
            {"DPTTOOLS_SKILLS_DIR": str(nested), "DPTTOOLS_SKILLS_DEPTH": "4"},
        ),
        (
            "50 folders in DPTTOOLS_SKILLS_DIR, depth 2",
            {
                "DPTTOOLS_SKILLS_DIR": os.pathsep.join(str(p) for p in plugins),
                "DPTTOOLS_SKILLS_DEPTH": "2",
            },
        ),
    ]
    rows = []
    for name, environ in layouts:
        reset_settings(load_settings(environ))
        async with Client(skills_server) as client:

            async def call() -> object:
                return await client.call_tool("list_skills", {})

            await call()
            rows.append(f"| {name} | {await amedian_ms(call, repeat * 5):.3f} |")
    reset_settings()
    return rows


def cell(value: float | str | None) -> str:
    if value is None:
        return "not installed"
    if isinstance(value, str):
        return value
    return f"{value:.2f}"


async def bench(name: str, folders: list[Path], repeat: int) -> list[str]:
    cold, warm, count = ours_library(folders, repeat)
    peer = skills_ref(folders, repeat)
    mcp_cold, mcp_warm = await ours_mcp(folders, repeat)
    fresh = await fastmcp_list(folders, repeat, reload=True)
    static = await fastmcp_list(folders, repeat, reload=False)
    ref_ms = None if peer is None else peer[0]
    ref_note = "" if peer is None or not peer[1] else f" ({peer[1]} failed)"
    rows = [
        f"| {name} | {count} | ours, library | {cold:.2f} | {warm:.3f} | {cold / warm:.0f}x |",
        f"| {name} | {count} | skills-ref read_properties, every skill{ref_note} | "
        f"{cell(ref_ms)} | - | "
        + (f"ours cold is {ref_ms / cold:.1f}x faster |" if ref_ms else "- |"),
        f"| {name} | {count} | ours, list_skills over MCP | {mcp_cold:.2f} | {mcp_warm:.3f} | "
        f"{mcp_cold / mcp_warm:.0f}x |",
        f"| {name} | {count} | fastmcp skills/list, reload=True | {cell(fresh)} | - | "
        + (f"ours warm is {fresh / mcp_warm:.0f}x faster |" if isinstance(fresh, float) else "- |"),
        f"| {name} | {count} | fastmcp skills/list, static snapshot | - | {cell(static)} | "
        + (
            f"ours warm is {static / mcp_warm:.1f}x faster |"
            if isinstance(static, float)
            else "- |"
        ),
    ]
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per cold measurement")
    parser.add_argument(
        "--generated-only", action="store_true", help="only the 1,000 generated skills"
    )
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}; medians in milliseconds")
    print("| dataset | skills | reader | cold ms | warm ms | ratio |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        generated = generate(Path(scratch) / "skills", 1000)
        for row in await bench("generated", [generated], args.repeat):
            print(row, flush=True)
        print("\n| 1,000 generated skills laid out as | warm list_skills over MCP, ms |")
        print("|---|---|")
        for row in await warm_layouts(generated, Path(scratch), args.repeat):
            print(row, flush=True)
    if args.generated_only:
        return
    if CORPORA.is_dir():
        for collection in sorted(p for p in CORPORA.iterdir() if p.is_dir()):
            for row in await bench(collection.name, skills_folders(collection), args.repeat):
                print(row, flush=True)
    else:
        print(f"(no corpora next to the repository: {CORPORA})")


if __name__ == "__main__":
    anyio.run(main)
