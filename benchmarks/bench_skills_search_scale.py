"""search_skills at up to 100,000 skills, beside SQLite FTS5 ranking the same skills.

Run by hand (needs ../shared/corpora next to the repository; skips with a message without):

    .venv/bin/python benchmarks/bench_skills_search_scale.py [--sizes 10000 100000] [--rounds N]

Catalogs: the 165 real skills of the relevance benchmark (``bench_skills_search.py``) and
generated distractors up to each size, built from the same vocabulary; past the tens of
thousands of distinct names the vocabulary makes, a name drawn again gets a number
(``-2``, ``-3``, ...). Every distractor's body repeats the same steps, so the words of a
request occur in thousands of skills, and the words of the steps in nearly all of them.

Measured at each size, in process, on one catalog (scanned once before timing):

- ours: ``search.search_skills(settings, query, 10)`` for each of the 165 queries, `--rounds`
  passes after one warm-up call; "first call" is that warm-up, which builds the index;
- FTS5: the ranking search_skills used before (an in-memory FTS5 table of the same columns
  and tokenizer, queried with ``bm25()`` over the same weights, ``ORDER BY rank LIMIT 28``,
  which scores every matching skill), timed alternately with ours on the same queries;
  "first call" is filling its table;
- for both: recall@1 and recall@5 of the query's skill, and how many queries put the same
  skill first.

Printed: medians and p95 in milliseconds, the ratio FTS5 / ours, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench_skills_search import (
    CORPORA,
    Query,
    build_catalog,
    distractors,
    load_queries,
    p95,
    real_skills,
)

from doc_processing_std_tools.config import Settings, load_settings, reset_settings
from doc_processing_std_tools.skills.catalog import search as searching
from doc_processing_std_tools.skills.core.records import EXCERPT_LENGTH, Catalog
from doc_processing_std_tools.skills.server import skills_server_state as skills_state

SIZES = (10_000, 100_000)
TOP = 10
WEIGHTS = (2.0, 1.0, 0.5, 1.5)


class Fts5:
    """The FTS5 ranking search_skills had before: every match scored, best first."""

    def __init__(self, catalog: Catalog) -> None:
        self.db = sqlite3.connect(":memory:", isolation_level=None)
        self.db.execute(
            "CREATE VIRTUAL TABLE skills USING fts5(name, description, metadata, body, "
            "tokenize = 'porter unicode61 remove_diacritics 2')"
        )
        self.names: dict[int, str] = {}
        rows = []
        for row, record in enumerate(catalog.skills, 1):
            metadata = " ".join(record.metadata.values()) if record.metadata else ""
            rows.append(
                (
                    row,
                    record.name.replace("-", " "),
                    record.description,
                    metadata,
                    record.excerpt[:EXCERPT_LENGTH],
                )
            )
            self.names[row] = record.name
        self.db.execute("BEGIN")
        self.db.executemany(
            "INSERT INTO skills (rowid, name, description, metadata, body) VALUES (?, ?, ?, ?, ?)",
            rows,
        )
        self.db.execute("COMMIT")

    def search(self, query: str) -> list[str]:
        words = searching.query_words(query)
        if not words:
            return []
        terms = []
        for word in words:
            quoted = '"' + word.replace('"', '""') + '"'
            terms.append(quoted)
            if len(word) >= searching.MIN_PREFIX:
                terms.append(quoted + "*")
        found = self.db.execute(
            "SELECT rowid, bm25(skills, ?, ?, ?, ?) AS rank FROM skills "
            "WHERE skills MATCH ? ORDER BY rank LIMIT ?",
            (*WEIGHTS, " OR ".join(terms), TOP * 2 + 8),
        ).fetchall()
        ranked = sorted((round(-rank, 4), self.names[row]) for row, rank in found)
        ranked.sort(key=lambda hit: (-hit[0], hit[1]))
        return [name for _, name in ranked[:TOP]]


def ours(settings: Settings, query: str) -> list[str]:
    answer = json.loads(skills_state.search_skills(settings, query, TOP))
    return [skill["name"] for skill in answer["skills"]]


def recall(queries: Sequence[Query], tops: Sequence[list[str]]) -> tuple[int, int]:
    first = sum(1 for q, top in zip(queries, tops, strict=True) if top[:1] == [q.skill])
    five = sum(1 for q, top in zip(queries, tops, strict=True) if q.skill in top[:5])
    return first, five


def measure(size: int, folder: Path, queries: Sequence[Query], rounds: int) -> None:
    settings = load_settings(
        {"DPTTOOLS_SKILLS_DIR": str(folder), "DPTTOOLS_CACHE_DIR": str(folder.parent / "cache")}
    )
    reset_settings(settings)
    skills_state.clear()
    started = time.perf_counter()
    catalog = skills_state.scan(settings)
    scanned = time.perf_counter() - started
    started = time.perf_counter()
    ours(settings, "warm up")
    ours_first = time.perf_counter() - started
    started = time.perf_counter()
    fts5 = Fts5(catalog)
    fts5.search("warm up")
    fts5_first = time.perf_counter() - started
    mine_top = [ours(settings, q.query) for q in queries]
    fts5_top = [fts5.search(q.query) for q in queries]
    mine_ms: list[float] = []
    fts5_ms: list[float] = []
    for _ in range(rounds):
        for query in queries:
            started = time.perf_counter()
            ours(settings, query.query)
            mine_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            fts5.search(query.query)
            fts5_ms.append((time.perf_counter() - started) * 1000)
    same = sum(1 for a, b in zip(mine_top, fts5_top, strict=True) if a[:1] == b[:1])
    n = len(queries)
    print(f"\n### {size:,} skills (catalog scan {scanned:.1f} s)")
    print("| ranking | median ms | p95 ms | first call s | recall@1 | recall@5 |")
    print("|---|---|---|---|---|---|")
    for name, times, first, tops in (
        ("ours (search_skills, in process)", mine_ms, ours_first, mine_top),
        ("FTS5 bm25, every match scored", fts5_ms, fts5_first, fts5_top),
    ):
        r1, r5 = recall(queries, tops)
        print(
            f"| {name} | {statistics.median(times):.2f} | {p95(times):.2f} | {first:.1f} | "
            f"{r1}/{n} | {r5}/{n} |"
        )
    median_ratio = statistics.median(fts5_ms) / statistics.median(mine_ms)
    p95_ratio = p95(fts5_ms) / p95(mine_ms)
    print(f"ratio FTS5 / ours: median {median_ratio:.1f}x, p95 {p95_ratio:.1f}x")
    print(f"same skill first in both: {same}/{n}")
    print(
        f"targets: median <= 5 ms ({statistics.median(mine_ms):.2f}), p95 <= 10 ms "
        f"({p95(mine_ms):.2f}); load average {os.getloadavg()[0]:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--rounds", type=int, default=3, help="timed passes over the queries")
    args = parser.parse_args()
    if not CORPORA.is_dir():
        print(f"skipped: no skill collections next to the repository ({CORPORA})")
        return
    real = real_skills(CORPORA)
    queries = load_queries(real)
    print(
        f"Python {sys.version.split()[0]}; SQLite {sqlite3.sqlite_version}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    generated = distractors(max(args.sizes) - len(real), {s.name for s in real}, numbered=True)
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as scratch:
            folder = build_catalog(
                Path(scratch) / f"skills-{size}", real, generated[: size - len(real)]
            )
            time.sleep(0.3)  # let the files age past the catalog's guard against same-tick edits
            measure(size, folder, queries, args.rounds)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
