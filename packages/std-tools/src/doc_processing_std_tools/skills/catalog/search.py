"""Full-text search over the listed skills, for search_skills.

A model facing thousands of skills cannot be shown them all; it asks for the ones that fit
its task instead. Ranking is BM25 exactly as SQLite's FTS5 ``bm25()`` computes it, over
the terms FTS5's tokenizer makes (``porter unicode61 remove_diacritics 2``: a Porter
stemmer over Unicode-aware tokens, so "invoices" finds "invoice" and "redacting" finds
"redact"), with prefix matching (so "slack" finds "slackbot"); no dependency beyond the
standard library's ``sqlite3``.

The index is this module's own, in memory: for each term, the skills holding it and its
weighted count in each. FTS5 itself scores every skill that shares a word with the query,
which grows with the catalog (50 to 150 ms a query at 100,000 skills whose words occur in
thousands of skills); here only the best few are scored in full (`SkillSearch._top`,
MaxScore: a skill that cannot reach the top is never scored). The words of a text are
split with a regular expression and each distinct word is turned into its terms once, by
FTS5's own tokenizer (`_Stemmer`), so a word becomes the same term here as in FTS5.

What is indexed: each listed skill's name (hyphens split it into words), description, the
words of its frontmatter ``metadata`` values and the start of its body (`EXCERPT_LENGTH`
characters), where the words of a request often are ("random forest", "R-peaks") when the
description is short. A word in the name counts twice a word in the description, one in
the body one and a half times (weights chosen on the relevance benchmark, see
``benchmarks/bench_skills_search.py``). The index follows the catalog: it holds
exactly the skills of the last catalog it was given, updated by difference (a catalog in
which one skill changed costs one skill's terms), so a search sees every change
list_skills sees and reaches only listed skills.

A query is plain text, never search syntax: it is split into words, common words that say
nothing about a task ("the", "please", "use") are dropped, and every skill sharing a term
with the query is a candidate; the ranking puts those that share the rarest and most
words first. A word of at least
`MIN_PREFIX` letters is also searched as the start of a term (FTS5's ``"slack"*``), so a word
joined to another in a name ("slackbot", "pdfplumber") is found by its first part; the
word itself still counts more, since it matches both terms.
"""

from __future__ import annotations

import bisect
import heapq
import json
import math
import re
import sqlite3
import threading
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

from ..._text import fit_json, wire_safe
from ...errors import InvalidArgumentError
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


def _columns(record: SkillRecord) -> tuple[str, str, str, str]:
    metadata = " ".join(record.metadata.values()) if record.metadata else ""
    return (
        record.name.replace("-", " "),
        record.description,
        metadata,
        record.excerpt[:EXCERPT_LENGTH],
    )


# The tokenizer of SQLite's full-text search (FTS5) whose words the index holds.
_TOKENIZER: Final = "porter unicode61 remove_diacritics 2"
# The words of a text as the tokenizer splits it (letters and digits; "_" separates).
_TOKEN: Final = re.compile(r"[^\W_]+")
# BM25's constants, as FTS5's bm25() has them.
_K1: Final = 1.2
_B: Final = 0.75
# How many distinct words the stemmer remembers before it starts again.
_MAX_STEMMED: Final = 200_000
# Skills indexed per pass when many are added at once (each pass stems its new words).
_BATCH: Final = 2_000


class _Stemmer:
    """FTS5's own tokenizer applied to single words, each distinct word once: what a word
    becomes in the index is exactly what SQLite's full-text search makes of it (Porter
    stems, case and diacritics folded), without a stemmer of our own."""

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._db.execute(f"CREATE VIRTUAL TABLE words USING fts5(word, tokenize = '{_TOKENIZER}')")
        self._db.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab(words, 'instance')")
        self.known: dict[str, tuple[str, ...]] = {}
        """The terms of each word stemmed so far."""

    def __call__(self, word: str) -> tuple[str, ...]:
        """The index terms of `word` (one, as a rule; none, or several, for odd ones)."""
        known = self.known.get(word)
        if known is None:
            self.learn([word])
            known = self.known[word]
        return known

    def learn(self, words: Iterable[str]) -> None:
        """Stem, in one pass, every word of `words` not stemmed yet."""
        every = list(dict.fromkeys(words))
        known = self.known
        new = [word for word in every if word not in known]
        if not new:
            return
        if len(known) + len(new) > _MAX_STEMMED:
            known.clear()
            new = every
        db = self._db
        found: dict[int, list[str]] = {}
        db.execute("BEGIN")
        try:
            db.executemany("INSERT INTO words (rowid, word) VALUES (?, ?)", enumerate(new, 1))
            for row, term in db.execute("SELECT doc, term FROM tokens ORDER BY doc, offset"):
                found.setdefault(row, []).append(term)
            db.execute("DELETE FROM words")
        finally:
            db.execute("COMMIT")
        for row, word in enumerate(new, 1):
            known[word] = tuple(found.get(row, ()))


@dataclass(slots=True, eq=False)
class _Postings:
    """The skills holding one term: their rows, ascending, and the term's weighted count
    in each (the column weights times the occurrences, summed over the columns)."""

    rows: array[int] = field(default_factory=lambda: array("i"))
    counts: array[float] = field(default_factory=lambda: array("f"))
    live: int = 0
    """How many of `rows` are still indexed (a removed skill's rows stay until compacted)."""
    most: float = 0.0
    """The largest count ever added: a bound on every count."""


@dataclass(slots=True)
class _Phrase:
    """One term of a query (a word, or every term that starts with it) and its weight."""

    postings: list[_Postings]
    idf: float
    bound: float
    """The most this phrase can add to any skill's score."""


class SkillSearch:
    """An in-memory inverted index of one catalog's skills, kept in step with the catalog,
    ranked as SQLite's FTS5 ``bm25()`` ranks, top results only.

    Safe to share between threads; `search` may be called with each new catalog object.
    """

    def __init__(self) -> None:
        """Start with an empty index."""
        self._lock = threading.Lock()
        self._stem = _Stemmer()
        self._catalog: Catalog | None = None
        # Indexed skills by name: the record object indexed and its row.
        self._rows: dict[str, tuple[SkillRecord, int]] = {}
        self._by_row: dict[int, SkillRecord] = {}
        self._next_row = 1
        self._terms: dict[str, _Postings] = {}
        self._sorted_terms: list[str] = []
        # Each indexed row's length in tokens, all columns together.
        self._lengths: dict[int, int] = {}
        self._tokens = 0
        self._shortest = 0
        # How many skills hold a term starting with a prefix, by prefix (this catalog's).
        self._prefix_counts: dict[str, int] = {}

    def search(self, catalog: Catalog, query: str, limit: int) -> list[SearchHit]:
        """The at most `limit` skills of `catalog` best matching `query`, best first (ties
        by name). A query without any word finds nothing."""
        words = query_words(query)
        with self._lock:
            self._follow(catalog)
            if not words or not self._lengths:
                return []
            scored = self._top(self._phrases(words), limit)
            by_row = self._by_row
            hits = [SearchHit(by_row[row], round(score, 4)) for row, score in scored]
        hits.sort(key=lambda hit: (-hit.score, hit.record.name))
        return hits[:limit]

    # ------------------------------------------------------------------ ranking

    def _phrases(self, words: list[str]) -> list[_Phrase]:
        """The query's phrases as FTS5 would match them: each term of each word, and, for a
        word of at least `MIN_PREFIX` characters, every term starting with its last term."""
        count = len(self._lengths)
        phrases = []
        for word in words:
            stems = self._stem(word)
            for stem in stems:
                postings = self._terms.get(stem)
                if postings is not None and postings.live:
                    phrases.append(self._phrase([postings], postings.live, count))
            if not stems or len(word) < MIN_PREFIX:
                continue
            prefix = stems[-1]
            terms = self._starting_with(prefix)
            if len(terms) == 1 and phrases and phrases[-1].postings[0] is terms[0]:
                # The prefix finds only the word itself: the same phrase twice, scored once.
                phrases[-1] = self._phrase(terms, terms[0].live, count, times=2)
            elif terms:
                phrases.append(self._phrase(terms, self._holding(prefix, terms), count))
        return phrases

    def _phrase(
        self, postings: list[_Postings], holding: int, count: int, times: int = 1
    ) -> _Phrase:
        # FTS5's idf, floored as FTS5 floors it (`times` over for a phrase the query holds
        # that many times); the bound is the phrase's share of the score at its largest
        # count in the shortest skill.
        idf = times * max(math.log((count - holding + 0.5) / (holding + 0.5)), 1e-6)
        most = sum(p.most for p in postings)
        norm = _K1 * (1 - _B + _B * self._shortest * count / max(self._tokens, 1))
        return _Phrase(postings, idf, idf * most * (_K1 + 1) / (most + norm))

    def _starting_with(self, prefix: str) -> list[_Postings]:
        terms = self._sorted_terms
        start = bisect.bisect_left(terms, prefix)
        end = bisect.bisect_left(terms, prefix + "\U0010ffff", start)
        found = (self._terms[term] for term in terms[start:end])
        return [postings for postings in found if postings.live]

    def _holding(self, prefix: str, terms: list[_Postings]) -> int:
        """How many indexed skills hold a term starting with `prefix`."""
        if len(terms) == 1:
            return terms[0].live
        known = self._prefix_counts.get(prefix)
        if known is None:
            rows: set[int] = set()
            for postings in terms:
                rows.update(postings.rows)
            if any(postings.live != len(postings.rows) for postings in terms):
                rows.intersection_update(self._lengths)
            known = self._prefix_counts[prefix] = len(rows)
        return known

    def _top(self, phrases: list[_Phrase], wanted: int) -> list[tuple[int, float]]:
        """The best rows by BM25 over `phrases`, with their scores: the `wanted` best and
        any tied with the last of them (to four decimals, as scores are shown).

        Term at a time, the phrases that can add the most first (MaxScore): a skill not
        found yet is taken only while it could still beat the `wanted`-th best score so
        far (what this phrase adds to it plus the most every later phrase could add); once
        no later phrase could lift a skill not found yet into the top, only the skills
        already found are scored, and only those that can still reach it. Scores are
        FTS5's: the sum over the phrases of idf times
        ``f * (k1 + 1) / (f + k1 * (1 - b + b * length / average length))``."""
        if not phrases:
            return []
        phrases.sort(key=lambda phrase: phrase.bound, reverse=True)
        rest = [0.0] * (len(phrases) + 1)
        for index in range(len(phrases) - 1, -1, -1):
            rest[index] = rest[index + 1] + phrases[index].bound
        lengths = self._lengths
        scale = _K1 * _B * len(lengths) / max(self._tokens, 1)
        base = _K1 * (1 - _B)
        scores: dict[int, float] = {}
        threshold = 0.0
        growing = True
        for index, phrase in enumerate(phrases):
            idf = phrase.idf * (_K1 + 1)
            if growing and len(scores) >= wanted and rest[index] < threshold:
                growing = False
            if not growing:
                scores = {row: v for row, v in scores.items() if v + rest[index] >= threshold}
                for row, f in self._counts_of(phrase.postings, scores).items():
                    scores[row] += idf * f / (f + base + scale * lengths[row])
            else:
                floor = threshold - rest[index + 1]
                get = scores.get
                for row, f in self._counts(phrase.postings).items():
                    length = lengths.get(row)
                    if length is None:
                        continue
                    score = idf * f / (f + base + scale * length)
                    known = get(row)
                    if known is not None:
                        scores[row] = known + score
                    elif score >= floor:
                        scores[row] = score
            if len(scores) >= wanted:
                threshold = heapq.nlargest(wanted, scores.values())[-1]
        if len(scores) <= wanted:
            return list(scores.items())
        last = round(threshold, 4)
        return [(row, score) for row, score in scores.items() if round(score, 4) >= last]

    @staticmethod
    def _counts(postings: list[_Postings]) -> dict[int, float]:
        """Every row holding the phrase, with the phrase's weighted count in it."""
        if len(postings) == 1:
            return dict(zip(postings[0].rows, postings[0].counts, strict=True))
        found: dict[int, float] = {}
        for term in postings:
            for row, count in zip(term.rows, term.counts, strict=True):
                found[row] = found.get(row, 0.0) + count
        return found

    @staticmethod
    def _counts_of(postings: list[_Postings], rows: dict[int, float]) -> dict[int, float]:
        """The phrase's weighted count in each of `rows` that holds it."""
        found: dict[int, float] = {}
        for term in postings:
            held = term.rows
            if len(rows) * 16 > len(held):
                for row, count in zip(held, term.counts, strict=True):
                    if row in rows:
                        found[row] = found.get(row, 0.0) + count
                continue
            end = len(held)
            for row in rows:
                at = bisect.bisect_left(held, row)
                if at < end and held[at] == row:
                    found[row] = found.get(row, 0.0) + term.counts[at]
        return found

    # ------------------------------------------------------------------ indexing

    def _follow(self, catalog: Catalog) -> None:
        """Make the index hold exactly `catalog`'s skills (rows of unchanged records stay)."""
        if catalog is self._catalog:
            return
        current = {record.name: record for record in catalog.skills}
        stale = [
            (record, row)
            for name, (record, row) in self._rows.items()
            if current.get(name) is not record
        ]
        added = [record for name, record in current.items() if self._kept(name, record)]
        if stale or added:
            self._prefix_counts.clear()
        for record, row in stale:
            self._remove(record, row)
            del self._rows[record.name]
        for start in range(0, len(added), _BATCH):
            self._add(added[start : start + _BATCH])
        self._catalog = catalog

    def _kept(self, name: str, record: SkillRecord) -> bool:
        """False when `record` is already indexed as it is; True when it must be added."""
        known = self._rows.get(name)
        return known is None or known[0] is not record

    def _words(self, record: SkillRecord) -> list[Counter[str]]:
        return [Counter(_TOKEN.findall(column)) for column in _columns(record)]

    def _counted(self, columns: list[Counter[str]]) -> tuple[dict[str, float], int]:
        """The weighted count of each term of a skill's `columns` (whose words the stemmer
        has learnt), and its length in terms."""
        counts: dict[str, float] = {}
        get = counts.get
        length = 0
        stems = self._stem.known
        for weight, words in zip(_WEIGHTS, columns, strict=True):
            for word, times in words.items():
                for term in stems[word]:
                    counts[term] = get(term, 0.0) + weight * times
                    length += times
        return counts, length

    def _add(self, records: list[SkillRecord]) -> None:
        columns = [self._words(record) for record in records]
        self._stem.learn(word for skill in columns for words in skill for word in words)
        terms = self._terms
        for record, skill in zip(records, columns, strict=True):
            row = self._next_row
            self._next_row += 1
            counts, length = self._counted(skill)
            for term, count in counts.items():
                postings = terms.get(term)
                if postings is None:
                    postings = terms[term] = _Postings()
                    bisect.insort(self._sorted_terms, term)
                postings.rows.append(row)
                postings.counts.append(count)
                postings.live += 1
                if count > postings.most:
                    postings.most = count
            self._shortest = min(self._shortest, length) if self._lengths else length
            self._lengths[row] = length
            self._tokens += length
            self._rows[record.name] = (record, row)
            self._by_row[row] = record

    def _remove(self, record: SkillRecord, row: int) -> None:
        columns = self._words(record)
        self._stem.learn(word for words in columns for word in words)
        counts, length = self._counted(columns)
        del self._lengths[row]
        del self._by_row[row]
        self._tokens -= length
        for term in counts:
            postings = self._terms[term]
            postings.live -= 1
            if postings.live * 2 < len(postings.rows):
                self._compact(postings)

    def _compact(self, postings: _Postings) -> None:
        """Drop the rows of removed skills from `postings`."""
        lengths = self._lengths
        kept = [
            (row, count)
            for row, count in zip(postings.rows, postings.counts, strict=True)
            if row in lengths
        ]
        postings.rows = array("i", (row for row, _ in kept))
        postings.counts = array("f", (count for _, count in kept))


MAX_SEARCH_LIMIT: Final = 50
"""search_skills returns at most this many skills."""


def search_skills(
    search: SkillSearch,
    catalog_now: Callable[[], Catalog],
    query: str,
    limit: int = 10,
    *,
    output_limit: int,
) -> str:
    """The search_skills JSON: the listed skills that best match `query`, best first.

    The answer is ``{"query", "skills": [{"name", "description", "path", "score"}],
    "count"}`` (``score``: higher is better), plus a ``note`` when nothing matched, held
    to `output_limit`. `search` is the server's index; `catalog_now` gives the catalog
    as list_skills reads it (called once the arguments are known to be good), so the
    search sees the same changes and finds only listed skills.

    Raises:
        InvalidArgumentError: `query` has no word, or `limit` is not 1 to 50.
    """
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
    catalog = catalog_now()
    hits = search.search(catalog, query, limit)
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
        fit_json(payload, output_limit, hint="Ask for fewer skills with limit.")
        if len(text) > output_limit
        else text
    )
