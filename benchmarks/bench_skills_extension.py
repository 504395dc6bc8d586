"""skills/list of the MCP Skills extension, cold and warm, at scale and beside two peers.

Run by hand (not part of make test):

    .venv/bin/python benchmarks/bench_skills_extension.py [--count 1000 10000] \
        [--peers-up-to 1000] [--no-corpora] [--agentskills-python /path/to/python3.12]

Each server answers over an in-process session of its own real client, which sends
``skills/list`` as a raw request and follows ``nextCursor`` to the last page (one
"listing"): ours through the mcp SDK's ``Client``, FastMCP's through FastMCP's ``Client``,
agentskills-mcp-server's through the mcp SDK's ``Client`` inside its own Python 3.12+
interpreter (pass it with ``--agentskills-python``; the measurement runs there and prints
its numbers back). Ours is also measured over stdio, a child process.

Datasets: generated skills, each with a SKILL.md, a script and a reference, once per
``--count`` (default 1,000 and 10,000); and each collection under ../shared/corpora when
that folder exists next to the repository (its top-level skill folders copied side by side
into one skills folder; ``--no-corpora`` skips them). The peers refuse a whole folder when
one skill breaks the Agent Skills specification, so every server reads the skills our
extension publishes (the copy leaves out the others). The peers run on datasets of at most
``--peers-up-to`` skills (FastMCP with ``reload=True`` re-reads everything per request).

Measured, for each dataset (milliseconds; warm values are medians):

- ours: the first listing on a fresh server without a persistent index (cold: every
  SKILL.md read and parsed, every file read and hashed; the catalog's own first scan
  included), the median of repeated listings with nothing changed (warm; every change is
  still seen by the next call), and the median of our ``list_skills`` tool in the same
  session, the reference of the warm target: at the default output limit (which cuts the
  answer of a large catalog) and with the limit raised so that it answers every skill;
- ours over stdio with a persistent index (DPTTOOLS_CACHE_DIR in a scratch folder): a first
  child process fills the index, then a second one is timed: its first listing (from the
  index, every stamp checked) against its own warm listing;
- the floor: reading every SKILL.md and parsing its frontmatter with PyYAML's fastest
  safe loader (``yaml.CSafeLoader`` with libyaml), plus reading and hashing every
  published file once, in this process;
- FastMCP 4.2's ``SkillsDirectoryProvider`` with ``reload=True`` (re-reads and re-hashes
  every folder on each request, its only mode that sees a change) and ``reload=False`` (a
  snapshot taken when the server is built, never refreshed); cold is the build plus the
  first listing;
- agentskills-mcp-server 0.7: it captures an immutable snapshot when the server is built
  and serves it (max_skills raised to the dataset, page size 500 like ours); cold is the
  build plus the first listing.

Printed ratios: ours warm / ours list_skills warm (target <= 2), ours cold / floor
(target <= 3), a new process's first listing from the index / its warm listing (target
<= 3), peer warm / ours warm (target >= 50).

The corpora are public skill collections, used with attribution: anthropics-skills
(github.com/anthropics/skills, Apache-2.0 per skill), openai-skills (github.com/openai/skills,
Apache-2.0 per skill, notion-* skills MIT by Notion Labs), obra-superpowers
(github.com/obra/superpowers, MIT, (c) 2025 Jesse Vincent) and k-dense-scientific-skills
(github.com/K-Dense-AI/claude-scientific-skills, MIT, (c) 2025 K-Dense Inc.).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import yaml
from fastmcp import Client as FastMCPClient
from fastmcp import FastMCP
from fastmcp.skills.provider import SkillsDirectoryProvider
from mcp import Client, StdioServerParameters
from pydantic import ConfigDict

from doc_processing_std_tools.config import get_settings, reset_settings
from doc_processing_std_tools.skills.catalog.scan import scan_once
from doc_processing_std_tools.skills.server import new_skills_server
from doc_processing_std_tools.skills.server import skills_server_state as skills_state

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO.parent / "shared" / "corpora"
SKIPPED = {"__pycache__", "node_modules"}
FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Runs inside agentskills-mcp-server's own interpreter: builds the server on the folder,
# lists through the mcp SDK's in-process Client, prints the timings as JSON.
AGENTSKILLS_MEASURE = """
import asyncio, json, statistics, sys, time
from pathlib import Path
from typing import Any
import mcp_types as types
from mcp import Client
from pydantic import ConfigDict
from agentskills_core import Skill
from agentskills_fs import LocalFileSystemSkillProvider
from agentskills_mcp_server import create_mcp_server

class AnyResult(types.Result):
    model_config = ConfigDict(extra="allow")

async def listing(client):
    cursor, skills = None, 0
    while True:
        params = {} if cursor is None else {"cursor": cursor}
        request = types.Request[dict[str, Any], str](method="skills/list", params=params)
        page = (await client.session.send_request(request, AnyResult)).model_extra or {}
        skills += len(page["skills"])
        cursor = page.get("nextCursor")
        if cursor is None:
            return skills

async def main():
    root, repeat = Path(sys.argv[1]), int(sys.argv[2])
    names = sorted(p.name for p in root.iterdir() if (p / "SKILL.md").is_file())
    started = time.perf_counter()
    server = await create_mcp_server(
        [Skill(n, LocalFileSystemSkillProvider(root)) for n in names],
        max_skills=len(names) + 1, page_size=500, max_total_bytes=1 << 40,
    )
    async with Client(server) as client:
        skills = await listing(client)
        cold = time.perf_counter() - started
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            await listing(client)
            times.append(time.perf_counter() - t)
    print(json.dumps({"cold": cold * 1000, "warm": statistics.median(times) * 1000,
                      "skills": skills}))

asyncio.run(main())
"""


class AnyResult(types.Result):
    """Any result, every field kept."""

    model_config = ConfigDict(extra="allow")


def generate(root: Path, count: int) -> Path:
    """`count` skills under `root`, each with a SKILL.md, a script and a reference."""
    steps = "\n".join(
        f"{n}. Read the input, check field {n} against the glossary, then record it."
        for n in range(1, 25)
    )
    for index in range(count):
        name = f"generated-skill-{index:05d}"
        folder = root / name
        (folder / "scripts").mkdir(parents=True)
        (folder / "references").mkdir()
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Extracts the fields of document type {index} "
            "into JSON and checks them against the glossary.\nlicense: MIT\n"
            f"metadata:\n  owner: benchmark\n---\n\n# Skill {index}\n\n{steps}\n",
            encoding="utf-8",
        )
        (folder / "scripts" / "check.py").write_text(
            f"import sys\n\nprint('checked', {index}, sys.argv[1:])\n", encoding="utf-8"
        )
        (folder / "references" / "glossary.md").write_text(
            "# Glossary\n\n" + "".join(f"- term {t}: meaning {t}\n" for t in range(40)),
            encoding="utf-8",
        )
    time.sleep(0.3)  # let the files age past the guard against same-tick edits
    return root


def flatten(collection: Path, target: Path) -> Path:
    """Copy the top-level skill folders of a collection that our extension publishes side
    by side into `target` (the peers refuse a folder holding any other)."""
    target.mkdir(parents=True)
    for skill_md in sorted(collection.rglob("SKILL.md")):
        folder = skill_md.parent
        ancestors = folder.relative_to(collection).parents
        nested = any((collection / a / "SKILL.md").is_file() for a in ancestors if str(a) != ".")
        if not nested and not (target / folder.name).exists():
            shutil.copytree(folder, target / folder.name)
    catalog = scan_once(target, max_bytes=50 * 1024 * 1024)
    for diagnostic in catalog.diagnostics:
        shutil.rmtree(target / diagnostic.skill, ignore_errors=True)
        print(f"  left out {diagnostic.skill}: {diagnostic.code}")
    time.sleep(0.3)
    return target


def floor_ms(skills_dir: Path) -> tuple[float, int, int]:
    """Reading and parsing every SKILL.md's frontmatter, plus reading and hashing every
    visible file once: (median ms, files, bytes)."""
    paths: list[Path] = []
    for directory, folders, files in os.walk(skills_dir):
        folders[:] = [f for f in folders if not f.startswith(".") and f not in SKIPPED]
        paths.extend(Path(directory) / f for f in files if not f.startswith("."))
    size = 0
    times = []
    for _ in range(5):
        started = time.perf_counter()
        size = 0
        for path in paths:
            with path.open("rb") as handle:
                data = handle.read()
            hashlib.sha256(data).hexdigest()
            size += len(data)
            if path.name == "SKILL.md":
                text = data.decode("utf-8")
                end = text.find("\n---", 4)
                yaml.load(text[4:end], Loader=FAST_LOADER)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000, len(paths), size


async def listing(session: Any) -> int:
    """One full skills/list (every page) through `session`; the number of skills."""
    cursor: str | None = None
    skills = 0
    while True:
        params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
        request = types.Request[dict[str, Any], str](method="skills/list", params=params)
        page = (await session.send_request(request, AnyResult)).model_extra or {}
        skills += len(page["skills"])
        cursor = page.get("nextCursor")
        if cursor is None:
            return skills


async def median_ms(call: Callable[[], Awaitable[object]], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        await call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


@dataclass
class Row:
    server: str
    cold_ms: float
    warm_ms: float
    skills: int


def catalog_cold(skills_dir: Path) -> float:
    """The catalog's own first scan of the folder (what list_skills pays cold), in ms."""
    os.environ["DPTTOOLS_SKILLS_DIR"] = str(skills_dir)
    os.environ["DPTTOOLS_CACHE_DIR"] = "off"
    reset_settings()
    skills_state.clear()
    started = time.perf_counter()
    skills_state.scan(get_settings())
    return (time.perf_counter() - started) * 1000


async def ours(skills_dir: Path, repeat: int) -> tuple[Row, float, float]:
    """Ours in process: the listing cold and warm; list_skills warm at the default output
    limit (which cuts a large catalog's answer) and with the limit raised so that it
    answers the whole catalog, as skills/list does."""
    os.environ["DPTTOOLS_SKILLS_DIR"] = str(skills_dir)
    os.environ["DPTTOOLS_CACHE_DIR"] = "off"  # cold means no persistent index
    reset_settings()
    skills_state.clear()
    async with Client(new_skills_server()) as client:
        started = time.perf_counter()
        skills = await listing(client.session)
        cold = (time.perf_counter() - started) * 1000
        warm = await median_ms(lambda: listing(client.session), repeat)
        await client.call_tool("list_skills", {})
        tool = await median_ms(lambda: client.call_tool("list_skills", {}), repeat)
        os.environ["DPTTOOLS_OUTPUT_TRUNCATION_LIMIT"] = str(1 << 30)
        reset_settings()
        try:
            await client.call_tool("list_skills", {})
            whole = await median_ms(lambda: client.call_tool("list_skills", {}), repeat)
        finally:
            del os.environ["DPTTOOLS_OUTPUT_TRUNCATION_LIMIT"]
            reset_settings()
    return Row("ours (mcp SDK client, in process)", cold, warm, skills), tool, whole


async def ours_stdio(skills_dir: Path, repeat: int, cache_dir: str = "off") -> Row:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools.skills"],
        env={
            "DPTTOOLS_SKILLS_DIR": str(skills_dir),
            "DPTTOOLS_MAX_FILE_SIZE_MB": "50",
            "DPTTOOLS_CACHE_DIR": cache_dir,
        },
    )
    async with Client(params) as client:
        started = time.perf_counter()
        skills = await listing(client.session)
        cold = (time.perf_counter() - started) * 1000
        warm = await median_ms(lambda: listing(client.session), repeat)
    return Row("ours (mcp SDK client, stdio)", cold, warm, skills)


async def ours_indexed(skills_dir: Path, repeat: int, scratch: Path) -> Row:
    """A second child process on the folder, after a first one filled the index: its first
    listing (cold_ms) and its warm listing."""
    cache_dir = tempfile.mkdtemp(prefix="index-", dir=scratch)
    await ours_stdio(skills_dir, 1, cache_dir)
    await anyio.sleep(0.3)
    row = await ours_stdio(skills_dir, repeat, cache_dir)
    return Row("ours (stdio, 2nd process, index)", row.cold_ms, row.warm_ms, row.skills)


async def fastmcp(skills_dir: Path, reload: bool, repeat: int) -> Row | str:
    started = time.perf_counter()
    try:
        server = FastMCP("fastmcp-skills")
        server.add_provider(SkillsDirectoryProvider(skills_dir, reload=reload))
    except ValueError as exc:
        return f"fastmcp reload={reload}: refuses the folder ({str(exc)[:80]})"
    async with FastMCPClient(server) as client:
        skills = await listing(client.session)
        cold = (time.perf_counter() - started) * 1000
        warm = await median_ms(lambda: listing(client.session), repeat)
    return Row(f"fastmcp 4.2 reload={reload} (FastMCP client)", cold, warm, skills)


def agentskills(python: str | None, skills_dir: Path, repeat: int) -> Row | str:
    if python is None:
        return "agentskills-mcp-server: not run (pass --agentskills-python)"
    done = subprocess.run(
        [python, "-c", AGENTSKILLS_MEASURE, str(skills_dir), str(repeat)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return f"agentskills-mcp-server: failed ({done.stderr.strip().splitlines()[-1][:100]})"
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return Row(
        "agentskills-mcp-server 0.7 (mcp SDK client)",
        found["cold"],
        found["warm"],
        found["skills"],
    )


async def bench(
    name: str, skills_dir: Path, repeat: int, python: str | None, peers: bool, scratch: Path
) -> None:
    floor, file_count, size = floor_ms(skills_dir)
    print(f"\n### {name}: {file_count} files, {size / 1048576:.1f} MiB")
    catalog_first = catalog_cold(skills_dir)
    mine, tool, whole = await ours(skills_dir, repeat * 4)
    indexed = await ours_indexed(skills_dir, repeat * 4, scratch)
    rows: list[Row | str] = [mine, await ours_stdio(skills_dir, repeat * 4), indexed]
    if peers:
        rows.append(await fastmcp(skills_dir, False, repeat))
        rows.append(await fastmcp(skills_dir, True, max(repeat // 2, 1)))
        rows.append(agentskills(python, skills_dir, repeat))
    print("| server | skills | cold ms | warm ms |")
    print("|---|---|---|---|")
    for row in rows:
        if isinstance(row, str):
            print(f"| {row} | | | |")
        else:
            print(f"| {row.server} | {row.skills} | {row.cold_ms:.1f} | {row.warm_ms:.2f} |")
    print(f"floor (read and parse every SKILL.md, read and hash every file): {floor:.1f} ms")
    print(f"ours list_skills warm (same session, default output limit): {tool:.2f} ms")
    print(f"ours list_skills warm (same session, the whole catalog): {whole:.2f} ms")
    print(f"the catalog's first scan (shared with list_skills): {catalog_first:.1f} ms")
    print(f"ratio ours warm / list_skills warm: {mine.warm_ms / tool:.2f}x (target <= 2)")
    print(f"ratio ours warm / list_skills warm, whole: {mine.warm_ms / whole:.2f}x (target <= 2)")
    print(f"ratio ours cold / floor: {mine.cold_ms / floor:.2f}x (target <= 3)")
    own = mine.cold_ms - catalog_first
    print(f"ratio ours cold less the catalog's first scan / floor: {own / floor:.2f}x")
    ratio = indexed.cold_ms / indexed.warm_ms
    print(f"ratio 2nd process first listing / its warm: {ratio:.1f}x (target <= 3)")
    stdio = rows[1]
    for row in rows[3:]:
        if isinstance(row, Row):
            ratio = row.warm_ms / mine.warm_ms
            print(f"ratio {row.server} warm / ours warm, both in memory: {ratio:.1f}x")
            if isinstance(stdio, Row):
                # The peers run in process only: against ours over stdio this is a lower
                # bound of the stdio-to-stdio ratio (a peer over stdio pays the pipe too).
                ratio = row.warm_ms / stdio.warm_ms
                print(f"ratio {row.server} warm (in memory) / ours warm over stdio: {ratio:.1f}x")


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="warm runs (x4 for ours)")
    parser.add_argument(
        "--count", type=int, nargs="+", default=[1000, 10000], help="generated skills"
    )
    parser.add_argument(
        "--peers-up-to", type=int, default=1000, help="run the peers up to this many skills"
    )
    parser.add_argument("--no-corpora", action="store_true", help="skip ../shared/corpora")
    parser.add_argument(
        "--agentskills-python",
        default=os.environ.get("AGENTSKILLS_PYTHON"),
        help="a Python 3.12+ interpreter with agentskills-mcp-server[fs] 0.7 installed",
    )
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        for count in args.count:
            generated = generate(scratch / f"generated-{count}", count)
            await bench(
                f"{count} generated skills",
                generated,
                args.repeat,
                args.agentskills_python,
                count <= args.peers_up_to,
                scratch,
            )
            shutil.rmtree(generated)
        if args.no_corpora:
            pass
        elif CORPORA.is_dir():
            for collection in sorted(p for p in CORPORA.iterdir() if p.is_dir()):
                folder = flatten(collection, scratch / collection.name)
                await bench(
                    collection.name, folder, args.repeat, args.agentskills_python, True, scratch
                )
        else:
            print(f"\n(no corpora next to the repository: {CORPORA})")
        print(f"\nload average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    anyio.run(main)
