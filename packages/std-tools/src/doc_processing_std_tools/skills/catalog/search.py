"""Full-text search over the listed skills, for search_skills.

A model facing thousands of skills cannot be shown them all; it asks for the ones that fit
its task instead. The index is SQLite's FTS5 (in the standard library's ``sqlite3``, so
no dependency): BM25 ranking, a Porter stemmer over Unicode-aware tokens (so "invoices"
finds "invoice" and "redacting" finds "redact"), prefix queries (so "slack" finds
"slackbot"), and incremental updates, all in C. A
hand-written scorer would need each of those re-invented and would be slower at 10,000
skills; a separate search library would add a dependency for what SQLite already does.

What is indexed: each listed skill's name (hyphens split it into words), description, the
words of its frontmatter ``metadata`` values and the start of its body (`EXCERPT_LENGTH`
characters), where the words of a request often are ("random forest", "R-peaks") when the
description is short. A word in the name counts twice a word in the description, one in
the body one and a half times (weights chosen on the relevance benchmark, see
``benchmarks/bench_skills_search.py``). The index follows the catalog: it holds
exactly the skills of the last catalog it was given, updated by difference (a catalog in
which one skill changed costs one row), so a search sees every change list_skills sees
and reaches only listed skills.

A query is plain text, never FTS syntax: it is split into words, common words that say
nothing about a task ("the", "please", "use") are dropped, each other word is quoted, and
the words are joined with OR, so every skill sharing a word with the query is a candidate
and the ranking puts those that share the rarest and most words first. A word of at least
`MIN_PREFIX` letters is also searched as the start of a word (``"slack"*``), so a word
joined to another in a name ("slackbot", "pdfplumber") is found by its first part; the
word itself still counts more, since it matches both terms.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from dataclasses import dataclass
from typing import Final

from ..._text import fit_json, wire_safe
from ...config import Settings
from ...errors import InvalidArgumentError
from .. import actions
from ..core.records import EXCERPT_LENGTH, Catalog, SkillRecord, shown

__all__ = [
    "MAX_QUERY_WORDS",
    "MAX_SEARCH_LIMIT",
    "SearchHit",
    "SkillSearch",
    "query_words",
    "search_skills",
]

MAX_QUERY_WORDS: Final = 64
"""A query uses at most this many distinct words (the first ones)."""

_WORD: Final = re.compile(r"\w+", re.UNICODE)
# Weights of the indexed columns for BM25: name, description, metadata, body.
_WEIGHTS: Final = (2.0, 1.0, 0.5, 1.5)
# Words of a request that say nothing about which skill fits it: English function words
# and the words every skill description uses ("Use when ..."). Dropped from queries; a
# query of nothing else keeps them.
_COMMON: Final = frozenset(
    """
    a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each few for from
    further get got had has have having he her here hers him his how i if in into is it its
    itself just let like make me more most my myself need needs no nor not now of off on
    once only or other our ours out over own please same she should so some such than that
    the their theirs them then there these they this those through to too under until up us
    use used uses using very want wants was we were what when where which while who whom why
    will with would you your yours skill skills help helps
    """.split()  # noqa: SIM905
)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One skill found by a search, with its relevance."""

    record: SkillRecord
    """The listed skill."""
    score: float
    """How well it matches: higher is better (BM25, positive, comparable within a search)."""


def query_words(query: str) -> list[str]:
    """The distinct words of `query`, lowercased, in order, common words left out (unless
    there is nothing else), at most `MAX_QUERY_WORDS`."""
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(query)))
    telling = [word for word in words if word not in _COMMON]
    return (telling or words)[:MAX_QUERY_WORDS]


#: Words at least this long also match as the start of a longer word ("slack" finds
#: "slackbot"); shorter ones would match too many unrelated words.
MIN_PREFIX: Final = 4


def _match_expression(words: list[str]) -> str:
    # Quoted, a word is a plain string to FTS5 (a quote inside is doubled); OR keeps every
    # skill that has any of them. A long enough word is also searched as a prefix (its
    # stem, then anything): a skill with the word itself matches both and ranks above one
    # whose word only starts with it.
    terms = []
    for word in words:
        quoted = '"' + word.replace('"', '""') + '"'
        terms.append(quoted)
        if len(word) >= MIN_PREFIX:
            terms.append(quoted + "*")
    return " OR ".join(terms)


class SkillSearch:
    """An in-memory FTS5 index of one catalog's skills, kept in step with the catalog.

    Safe to share between threads; `search` may be called with each new catalog object.
    """

    def __init__(self) -> None:
        """Start with an empty index."""
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._db.execute(
            "CREATE VIRTUAL TABLE skills USING fts5(name, description, metadata, body, "
            "tokenize = 'porter unicode61 remove_diacritics 2')"
        )
        self._catalog: Catalog | None = None
        # Indexed skills by name: the record object indexed and its row.
        self._rows: dict[str, tuple[SkillRecord, int]] = {}
        self._by_row: dict[int, SkillRecord] = {}
        self._next_row = 1

    def search(self, catalog: Catalog, query: str, limit: int) -> list[SearchHit]:
        """The at most `limit` skills of `catalog` best matching `query`, best first (ties
        by name). A query without any word finds nothing."""
        words = query_words(query)
        with self._lock:
            self._follow(catalog)
            if not words:
                return []
            rows = self._db.execute(
                "SELECT rowid, bm25(skills, ?, ?, ?, ?) AS rank FROM skills "
                "WHERE skills MATCH ? ORDER BY rank LIMIT ?",
                (*_WEIGHTS, _match_expression(words), limit * 2 + 8),
            ).fetchall()
            by_row = self._by_row
            hits = [SearchHit(by_row[row], round(-rank, 4)) for row, rank in rows if row in by_row]
        hits.sort(key=lambda hit: (-hit.score, hit.record.name))
        return hits[:limit]

    def _follow(self, catalog: Catalog) -> None:
        """Make the index hold exactly `catalog`'s skills (rows of unchanged records stay)."""
        if catalog is self._catalog:
            return
        current = {record.name: record for record in catalog.skills}
        stale = [
            row for name, (record, row) in self._rows.items() if current.get(name) is not record
        ]
        added = [record for name, record in current.items() if self._kept(name, record)]
        db = self._db
        db.execute("BEGIN")
        try:
            db.executemany("DELETE FROM skills WHERE rowid = ?", [(row,) for row in stale])
            rows = []
            for record in added:
                rows.append((self._next_row, *_columns(record)))
                self._rows[record.name] = (record, self._next_row)
                self._next_row += 1
            db.executemany(
                "INSERT INTO skills (rowid, name, description, metadata, body) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            self._rows.clear()
            self._by_row.clear()
            db.execute("DELETE FROM skills")
            self._catalog = None
            raise
        for name in [name for name in self._rows if name not in current]:
            del self._rows[name]
        for row in stale:
            self._by_row.pop(row, None)
        for record, row in (self._rows[record.name] for record in added):
            self._by_row[row] = record
        self._catalog = catalog

    def _kept(self, name: str, record: SkillRecord) -> bool:
        """False when `record` is already indexed as it is; True when it must be added."""
        known = self._rows.get(name)
        return known is None or known[0] is not record


def _columns(record: SkillRecord) -> tuple[str, str, str, str]:
    metadata = " ".join(record.metadata.values()) if record.metadata else ""
    return (
        record.name.replace("-", " "),
        record.description,
        metadata,
        record.excerpt[:EXCERPT_LENGTH],
    )


MAX_SEARCH_LIMIT: Final = 50
"""search_skills returns at most this many skills."""

_search: SkillSearch | None = None


def search_skills(settings: Settings, query: str, limit: int = 10) -> str:
    """The search_skills JSON: the listed skills that best match `query`, best first.

    The answer is ``{"query", "skills": [{"name", "description", "path", "score"}],
    "count"}`` (``score``: higher is better), plus a ``note`` when nothing matched, held
    to the output limit. Reads the catalog as list_skills does, so it sees the same
    changes and finds only listed skills.

    Raises:
        InvalidArgumentError: `query` has no word, or `limit` is not 1 to 50.
    """
    global _search
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgumentError(
            "query is empty; pass a few words that describe the task, such as "
            "'extract tables from a PDF invoice'."
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidArgumentError(
            f"limit {limit!r} is out of range; pass a whole number from 1 to "
            f"{MAX_SEARCH_LIMIT} (default 10)."
        )
    catalog = actions.cached(settings) or actions.scan(settings)
    if _search is None:
        _search = SkillSearch()
    hits = _search.search(catalog, query, limit)
    payload: dict[str, object] = {
        "query": query,
        "skills": [
            {
                "name": shown(hit.record.name),
                "description": shown(hit.record.description),
                "path": str(hit.record.path),
                "score": hit.score,
            }
            for hit in hits
        ],
        "count": len(hits),
    }
    if not hits:
        payload["note"] = (
            f"No listed skill matches the words of this query (the catalog lists "
            f"{catalog.count} skill(s)); try other words, such as the kind of document or "
            "the task, or call list_skills."
        )
    text = wire_safe(json.dumps(payload, ensure_ascii=False, indent=2))
    return (
        fit_json(payload, settings.output_truncation_limit, hint="Ask for fewer skills with limit.")
        if len(text) > settings.output_truncation_limit
        else text
    )
