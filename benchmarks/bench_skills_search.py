"""Relevance and latency of search_skills, and of the catalog block injected under a budget.

Run by hand (needs ../shared/corpora next to the repository; skips with a message without):

    .venv/bin/python benchmarks/bench_skills_search.py [--rounds N] [--failures]

Catalogs. Two folders of 1,000 and 10,000 skills are written to a temporary directory:

- every real skill of the four collections under ../shared/corpora (every folder holding a
  SKILL.md, at any depth; the openai collection keeps its skills in hidden folders), copied
  whole into one flat folder. A copy's folder is named after its frontmatter name made a
  valid skill name (lowercase letters, digits and single hyphens); when two collections use
  the same name (skill-creator), the later collection's copy gets the collection's first
  word as a prefix (openai-skill-creator), and the copy's frontmatter ``name:`` is changed
  to match;
- generated distractors up to the size, deterministic (seeded random). Each is a
  plausible skill built from a combinatorial vocabulary: a domain (office documents,
  genomics, chemistry, clinical, code review and CI, team notes in Notion or Linear, slides
  and posters, citations, plotting, time series, geospatial, quantum, ...), an object of
  that domain (invoices, single-cell count matrices, pull requests, conference posters,
  ...), a format (scanned PDF, h5ad, SMILES, GitHub, LaTeX, ...), an action (redact,
  extract, convert, summarise, plot, validate, cluster, ...) and the fields acted on. Name
  and description come from those, e.g. ``scanned-pdf-invoice-redaction: Redacts names,
  account numbers and totals in scanned PDF invoices. Use when ...``; the body has a
  title, three steps and a note. The domains were chosen to overlap the real skills'
  topics, so that most real skills have distractors using the same words. The 1,000
  catalog holds the first distractors of the 10,000 one.

Queries. benchmarks/data/skill_queries.json holds one query per real skill (all 165, all
four collections), ``[{"skill": catalog name, "query": text}]``. They were written by hand
after reading each skill's SKILL.md (its description and the body's sections), as the
request a user would type when they need that skill's task done: the task and its
particulars ("make me a small looping animation of a dancing taco I can use as a custom
emoji in Slack"), never the skill's description copied or lightly reworded. The names of
libraries and of the skills themselves are left out where a user would not know them
(no "scanpy", "rdkit", "markitdown", "superpowers"); names a user asking for the task
would say are kept: products and services (Notion, Linear, GitHub, Slack, Zotero, OT-2,
MATLAB), file formats (BAM, DICOM, FCS, SMILES) and domain terms (single-cell, ChIP-seq,
Cox model, NSGA-II). Some skills overlap by design (two skill creators and a skill-writing
guide; several plan skills; rdkit and datamol; three quantum frameworks); their queries
name what distinguishes the one meant, as a user choosing between them would.

Measured at each size:

- recall@1 and recall@5: the std-tools ``search_skills`` tool, called with the query and
  ``limit`` 10 over an in-memory MCP session with the SDK's own client (``mcp.Client``);
  the right skill is the query's skill; its rank is its place in the answer;
- latency: ``search.search_skills(settings, query, limit)`` called in process (no MCP)
  for every query, ``--rounds`` times, after one warm-up call (the first call, which may
  build an index, is reported apart); median and p95, and the median over MCP;
- in block: the toolkit ``Agent`` with its offline ``TestModel``, the std-tools skills
  server in process and ``skills_catalog_budget=8000``, run with the query as the prompt;
  the names in ``RunResult.skills.prompt_block`` (its ``<skill name="...">`` entries) are
  read, and the share of runs whose block names the right skill is reported. Measured
  twice: with the default output limit (DPTTOOLS_OUTPUT_TRUNCATION_LIMIT, 50,000
  characters, which cuts list_skills' answer at these sizes) and with one no answer
  reaches, so that a miss can be told apart from a catalog cut before ranking.

Each size gets a cache folder (DPTTOOLS_CACHE_DIR) of its own in the temporary directory.

The corpora are public skill collections, used with attribution: anthropics-skills
(github.com/anthropics/skills, Apache-2.0 per skill), openai-skills (github.com/openai/skills,
Apache-2.0 per skill, notion-* skills MIT by Notion Labs), obra-superpowers
(github.com/obra/superpowers, MIT, (c) 2025 Jesse Vincent) and k-dense-scientific-skills
(github.com/K-Dense-AI/claude-scientific-skills, MIT, (c) 2025 K-Dense Inc.).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from doc_processing_std_tools.config import Settings, load_settings, reset_settings
from doc_processing_std_tools.skills.server import skills_server
from doc_processing_std_tools.skills.server import skills_server_state as skills_state

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO.parent / "shared" / "corpora"
QUERIES = REPO / "benchmarks" / "data" / "skill_queries.json"
VOCABULARY = REPO / "benchmarks" / "data" / "skill_distractor_vocabulary.json"
SIZES = (1000, 10000)
BUDGET = 8000
SEED = 20261201
TOP = 10
RAISED_LIMIT = "100000000"
"""An output limit no list_skills answer of these catalogs reaches."""

# ---------------------------------------------------------------- the real skills


@dataclass(frozen=True, slots=True)
class RealSkill:
    """One real skill: its collection, its folder in the corpora, its name in the catalog."""

    collection: str
    source: Path
    name: str


_FRONTMATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---", re.S)
_NAME_LINE = re.compile(r"^name:[^\r\n]*", re.M)


def valid_name(text: str) -> str:
    """`text` as a skill name: lowercase letters, digits and single hyphens, 64 at most."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:64].rstrip("-") or "skill"


def frontmatter_name(skill_md: Path) -> str:
    """The ``name:`` of a SKILL.md's frontmatter (its folder's name when it has none)."""
    text = skill_md.read_text(encoding="utf-8")
    head = _FRONTMATTER.match(text)
    line = _NAME_LINE.search(head.group(1)) if head else None
    if line is None:
        return skill_md.parent.name
    return line.group(0).split(":", 1)[1].strip().strip("'\"")


def real_skills(corpora: Path) -> list[RealSkill]:
    """Every folder holding a SKILL.md in every collection, named uniquely."""
    found: list[RealSkill] = []
    taken: set[str] = set()
    for collection in sorted(p for p in corpora.iterdir() if p.is_dir()):
        for skill_md in sorted(collection.rglob("SKILL.md")):
            name = valid_name(frontmatter_name(skill_md))
            if name in taken:
                name = valid_name(f"{collection.name.split('-')[0]}-{name}")
            suffix = 2
            base = name
            while name in taken:
                name = valid_name(f"{base}-{suffix}")
                suffix += 1
            taken.add(name)
            found.append(RealSkill(collection.name, skill_md.parent, name))
    return found


def copy_real(skill: RealSkill, root: Path) -> None:
    """Copy the skill's folder to ``root/<name>`` with ``name:`` set to that name."""
    target = root / skill.name
    shutil.copytree(skill.source, target)
    skill_md = target / "SKILL.md"
    text = skill_md.read_text(encoding="utf-8")
    head = _FRONTMATTER.match(text)
    if head is None:
        return
    inner = head.group(1)
    if _NAME_LINE.search(inner):
        fixed = _NAME_LINE.sub(f"name: {skill.name}", inner, count=1)
    else:
        fixed = f"name: {skill.name}\n{inner}"
    if fixed != inner:
        skill_md.write_text(text[: head.start(1)] + fixed + text[head.end(1) :], encoding="utf-8")


# ---------------------------------------------------------------- the distractors


@dataclass(frozen=True, slots=True)
class Domain:
    """A vocabulary: objects as (name word, plural phrase), formats as (name word, label),
    the fields acted on, and the situations a skill is for."""

    slug: str
    objects: tuple[tuple[str, str], ...]
    formats: tuple[tuple[str, str], ...]
    fields: tuple[str, ...]
    contexts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Action:
    """A verb: the name's word, the description's verb, the pattern of what it does, and
    the base form for 'Use when ...'."""

    word: str
    verb: str
    pattern: str
    base: str
    domains: frozenset[str] = frozenset()
    """The domains it makes sense in (empty: all)."""


def load_vocabulary() -> tuple[tuple[Domain, ...], tuple[Action, ...], list[str], list[str]]:
    """The domains, actions, 'Use when' sentences and name forms of the distractors."""
    data = json.loads(VOCABULARY.read_text(encoding="utf-8"))
    domains = tuple(
        Domain(
            d["slug"],
            tuple((word, phrase) for word, phrase in d["objects"]),
            tuple((word, label) for word, label in d["formats"]),
            tuple(d["fields"]),
            tuple(d["contexts"]),
        )
        for d in data["domains"]
    )
    actions = tuple(
        Action(a["word"], a["verb"], a["pattern"], a["base"], frozenset(a["domains"]))
        for a in data["actions"]
    )
    return domains, actions, list(data["use_when"]), list(data["name_forms"])


@dataclass(frozen=True, slots=True)
class Distractor:
    name: str
    description: str
    body: str


def distractors(
    count: int, taken: set[str], seed: int = SEED, numbered: bool = False
) -> list[Distractor]:
    """`count` generated skills, none named as one in `taken`; the same for a seed.

    The vocabulary makes some tens of thousands of distinct names. A name drawn again is
    drawn anew, unless `numbered`: then it gets the first free number as a suffix
    (``-2``, ``-3``, ...), so that any count can be made (the same words again in new
    combinations with the fields, contexts and "Use when" sentences)."""
    domains, actions, use_when, name_forms = load_vocabulary()
    rng = random.Random(seed)
    made: list[Distractor] = []
    names = set(taken)
    while len(made) < count:
        domain = rng.choice(domains)
        obj_word, obj = rng.choice(domain.objects)
        (fmt_word, fmt), (_, fmt2) = rng.sample(domain.formats, 2)
        action = rng.choice([a for a in actions if not a.domains or domain.slug in a.domains])
        fields = rng.choice(domain.fields)
        ctx = rng.choice(domain.contexts)
        name = valid_name(
            rng.choice(name_forms).format(
                fmt=fmt_word,
                obj=obj_word,
                word=action.word,
                domain=domain.slug,
                base=action.base.split()[0],
            )
        )
        if name in names:
            if not numbered:
                continue
            number = 2
            while f"{name}-{number}" in names:
                number += 1
            name = f"{name}-{number}"
        names.add(name)
        what = action.pattern.format(fields=fields, fmt=fmt, fmt2=fmt2, obj=obj)
        use = rng.choice(use_when).format(
            base=action.base, obj=obj, ctx=ctx, fmt=fmt, fields=fields
        )
        description = f"{action.verb} {what}. {use}"
        title = name.replace("-", " ").capitalize()
        body = (
            f"# {title}\n\n"
            f"{action.verb} {what}.\n\n"
            "## Steps\n\n"
            f"1. Open each {fmt} file and check that it is readable and complete.\n"
            f"2. {action.verb} the {fields}; keep a log of every change.\n"
            f"3. Write the result next to the input ({fmt2} when asked) and summarise what "
            "changed.\n\n"
            "## Notes\n\n"
            f"- Ask before touching {obj} that look incomplete.\n"
        )
        made.append(Distractor(name, description, body))
    return made


def write_distractor(skill: Distractor, root: Path) -> None:
    folder = root / skill.name
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        f"---\nname: {skill.name}\ndescription: {json.dumps(skill.description)}\n"
        "license: MIT\n---\n\n" + skill.body,
        encoding="utf-8",
    )


def build_catalog(root: Path, real: Sequence[RealSkill], generated: Sequence[Distractor]) -> Path:
    root.mkdir(parents=True)
    for skill in real:
        copy_real(skill, root)
    for distractor in generated:
        write_distractor(distractor, root)
    return root


# ---------------------------------------------------------------- measuring


@dataclass(frozen=True, slots=True)
class Query:
    skill: str
    query: str


def load_queries(real: Sequence[RealSkill]) -> list[Query]:
    """The hand-written queries; each must name a real skill of the catalog."""
    entries = json.loads(QUERIES.read_text(encoding="utf-8"))
    known = {s.name for s in real}
    queries = [Query(e["skill"], e["query"]) for e in entries]
    unknown = sorted({q.skill for q in queries} - known)
    if unknown:
        sys.exit(f"{QUERIES.name} names skills not in the corpora: {', '.join(unknown)}")
    return queries


def answer_names(result: Any) -> list[str]:
    """The skill names of a search_skills answer, in order."""
    payload = result.structured_content
    if not isinstance(payload, dict) or "skills" not in payload:
        text = "".join(getattr(block, "text", "") for block in result.content)
        payload = json.loads(text)
    return [entry["name"] for entry in payload["skills"]]


@dataclass(slots=True)
class Searched:
    """Per query: the rank of the right skill (None: not in the top), and the top names."""

    ranks: list[int | None]
    tops: list[list[str]]
    mcp_ms: list[float]


async def search_over_mcp(queries: Sequence[Query], rounds: int) -> Searched:
    ranks: list[int | None] = []
    tops: list[list[str]] = []
    times: list[float] = []
    async with Client(skills_server) as client:
        await client.call_tool("search_skills", {"query": "warm up", "limit": TOP})
        for query in queries:
            result = await client.call_tool("search_skills", {"query": query.query, "limit": TOP})
            if result.is_error:
                sys.exit(f"search_skills failed: {result.content}")
            names = answer_names(result)
            tops.append(names)
            ranks.append(names.index(query.skill) + 1 if query.skill in names else None)
        for _ in range(rounds):
            for query in queries:
                started = time.perf_counter()
                await client.call_tool("search_skills", {"query": query.query, "limit": TOP})
                times.append((time.perf_counter() - started) * 1000)
    return Searched(ranks, tops, times)


def search_in_process(
    settings: Settings, queries: Sequence[Query], rounds: int
) -> tuple[float, list[float]]:
    """The first call's time (it may build an index) and every later call's, in ms."""
    search = skills_state.search_skills
    skills_state.clear()
    started = time.perf_counter()
    search(settings, "warm up", TOP)
    first = (time.perf_counter() - started) * 1000
    times: list[float] = []
    for _ in range(rounds):
        for query in queries:
            started = time.perf_counter()
            search(settings, query.query, TOP)
            times.append((time.perf_counter() - started) * 1000)
    return first, times


_BLOCK_NAME = re.compile(r'<skill name="([^"]+)"')


@dataclass(slots=True)
class Injected:
    hits: list[bool]
    shown: list[int]
    statuses: Counter[str]
    lengths: list[int]
    warnings: Counter[str]


class _Kept(logging.Handler):
    """Keeps the toolkit's skills log lines instead of printing one per run."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines[re.sub(r"\d+", "N", record.getMessage())] += 1


async def injected_blocks(queries: Sequence[Query]) -> Injected:
    """Run the agent once per query and read which skills its catalog block names."""
    from doc_processing_toolkit import Agent, TestModel

    agent = Agent(model=TestModel(), tools=[skills_server], skills_catalog_budget=BUDGET)
    hits: list[bool] = []
    shown: list[int] = []
    lengths: list[int] = []
    statuses: Counter[str] = Counter()
    logger = logging.getLogger("doc_processing_toolkit.skills")
    kept = _Kept()
    logger.addHandler(kept)
    logger.propagate = False
    try:
        async with agent:
            for query in queries:
                result = await agent.run(query.query)
                outcome = result.skills
                statuses[outcome.status] += 1
                block = outcome.prompt_block or ""
                names = _BLOCK_NAME.findall(block)
                lengths.append(len(block))
                shown.append(len(names))
                hits.append(query.skill in names)
    finally:
        logger.removeHandler(kept)
        logger.propagate = True
    return Injected(hits, shown, statuses, lengths, kept.lines)


def percent(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "-"


def p95(values: Sequence[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def has_search() -> bool:
    try:
        from doc_processing_std_tools.skills.catalog import search
    except ImportError:
        return False
    return hasattr(search, "search_skills")


async def measure(
    size: int, folder: Path, queries: Sequence[Query], rounds: int, collection_of: dict[str, str]
) -> dict[str, Any]:
    # A cache folder of its own: nothing this run learns about its folders outlives it.
    environ = {
        "DPTTOOLS_SKILLS_DIR": str(folder),
        "DPTTOOLS_CACHE_DIR": str(folder.parent / f"cache-{size}"),
    }
    settings = load_settings(environ)
    reset_settings(settings)
    row: dict[str, Any] = {"size": size, "queries": len(queries)}
    first, local = search_in_process(settings, queries, rounds)
    searched = await search_over_mcp(queries, rounds)
    row["first_ms"] = first
    row["median_ms"] = statistics.median(local)
    row["p95_ms"] = p95(local)
    row["mcp_median_ms"] = statistics.median(searched.mcp_ms)
    row["r1"] = sum(1 for r in searched.ranks if r == 1)
    row["r5"] = sum(1 for r in searched.ranks if r is not None and r <= 5)
    row["per_collection"] = {
        c: (
            sum(
                1
                for q, r in zip(queries, searched.ranks, strict=True)
                if collection_of[q.skill] == c and r == 1
            ),
            sum(
                1
                for q, r in zip(queries, searched.ranks, strict=True)
                if collection_of[q.skill] == c and r is not None and r <= 5
            ),
            sum(1 for q in queries if collection_of[q.skill] == c),
        )
        for c in sorted(set(collection_of.values()))
    }
    row["failures"] = [
        (q, r, top)
        for q, r, top in zip(queries, searched.ranks, searched.tops, strict=True)
        if r != 1
    ]
    for key, limit in (("default", None), ("raised", RAISED_LIMIT)):
        if limit is not None:
            reset_settings(load_settings({**environ, "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT": limit}))
        injected = await injected_blocks(queries)
        row[f"block_{key}"] = injected
        row[f"block_{key}_misses"] = [
            q for q, hit in zip(queries, injected.hits, strict=True) if not hit
        ]
    reset_settings()
    return row


def print_results(rows: Sequence[dict[str, Any]], show_failures: bool) -> None:
    print(
        "\n| skills | queries | recall@1 | recall@5 | in block @8,000 | in block, output limit "
        "raised | search median ms | p95 ms | first call ms | over MCP median ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        n = row["queries"]
        default, raised = row["block_default"], row["block_raised"]
        print(
            f"| {row['size']:,} | {n} | {percent(row['r1'], n)} | {percent(row['r5'], n)} | "
            f"{percent(sum(default.hits), n)} | {percent(sum(raised.hits), n)} | "
            f"{row['median_ms']:.3f} | {row['p95_ms']:.3f} | {row['first_ms']:.1f} | "
            f"{row['mcp_median_ms']:.3f} |"
        )
    print("\n| skills | collection | queries | recall@1 | recall@5 |")
    print("|---|---|---|---|---|")
    for row in rows:
        for collection, (r1, r5, n) in row["per_collection"].items():
            print(f"| {row['size']:,} | {collection} | {n} | {percent(r1, n)} | {percent(r5, n)} |")
    for row in rows:
        for key in ("default", "raised"):
            injected: Injected = row[f"block_{key}"]
            print(
                f"\n{row['size']:,} skills, output limit {key}: statuses "
                f"{dict(injected.statuses)}, median {statistics.median(injected.shown)} skills "
                f"in the block, longest block {max(injected.lengths)} characters"
            )
            for line, count in injected.warnings.most_common(3):
                print(f"  logged {count}x: {line[:300]}")
    if not show_failures:
        return
    for row in rows:
        print(f"\n{row['size']:,} skills: right skill not first ({len(row['failures'])}):")
        for query, rank, top in row["failures"]:
            where = f"rank {rank}" if rank else f"not in the top {TOP}"
            print(f"- {query.skill} ({where}): {query.query!r}")
            print(f"    top 5: {', '.join(top[:5])}")
        for key in ("default", "raised"):
            misses = row[f"block_{key}_misses"]
            print(f"{row['size']:,} skills, not in the block, output limit {key} ({len(misses)}):")
            print("  " + ", ".join(q.skill for q in misses))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="latency passes over the queries")
    parser.add_argument("--failures", action="store_true", help="print every miss")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    args = parser.parse_args()
    if not CORPORA.is_dir():
        print(f"skipped: no skill collections next to the repository ({CORPORA})")
        return
    if not has_search():
        print("skipped: doc_processing_std_tools.skills.actions has no search_skills yet")
        return
    real = real_skills(CORPORA)
    queries = load_queries(real)
    collection_of = {s.name: s.collection for s in real}
    covered = Counter(collection_of[q.skill] for q in queries)
    print(f"Python {sys.version.split()[0]}; {len(real)} real skills")
    print(f"queries per collection: {dict(covered)}")
    generated = distractors(max(args.sizes) - len(real), {s.name for s in real})
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for size in args.sizes:
            folder = build_catalog(
                Path(scratch) / f"skills-{size}", real, generated[: size - len(real)]
            )
            await anyio.sleep(
                0.3
            )  # let the files age past the catalog's guard against same-tick edits
            rows.append(await measure(size, folder, queries, args.rounds, collection_of))
            print(f"measured {size:,} skills", flush=True)
    print(f"load average after the run: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print_results(rows, args.failures)


if __name__ == "__main__":
    anyio.run(main)
