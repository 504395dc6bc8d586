"""Which skills of a catalog best match a request: a full-text index over names and
descriptions.

`SkillIndex` holds one catalog's entries in an in-memory SQLite FTS5 table (``porter
unicode61`` tokenizer: case, accents and word endings do not matter) and ranks them for a
text with bm25, a match in the name counting `NAME_WEIGHT` times a match in the
description. The index is built on the first `SkillIndex.rank` call and kept: a catalog
object is ranked against many requests, and an unchanged catalog is the same object run
after run (see `entries.parse_catalog`), so it is built once.

Any text can be ranked: it is cut into words (letters and digits) and each word is
searched as a quoted term, the terms joined with OR, so nothing a user writes is read as
FTS syntax.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Sequence
from typing import Final, Protocol

__all__ = ["MAX_CHARS", "MAX_TERMS", "NAME_WEIGHT", "Rankable", "SkillIndex", "match_expression"]

#: How much more a word in a skill's name counts than the same word in its description.
NAME_WEIGHT: Final = 5.0
#: The most distinct words of a request that are searched (the first ones).
MAX_TERMS: Final = 64
#: Only the start of a request is read for its words (a prompt may hold a whole document).
MAX_CHARS: Final = 10_000
_WORD = re.compile(r"[^\W_]+")


class Rankable(Protocol):
    """What the index reads of an entry."""

    @property
    def name(self) -> str:
        """The skill's name."""
        ...

    @property
    def description(self) -> str:
        """What the skill is for."""
        ...


def match_expression(text: str) -> str | None:
    """`text` as an FTS5 query: the first `MAX_TERMS` distinct words that start within
    its first `MAX_CHARS` characters, each quoted, joined with OR; None when it has no word."""
    terms: dict[str, None] = {}
    for match in _WORD.finditer(text):
        if match.start() >= MAX_CHARS:
            break
        terms.setdefault(match.group().lower(), None)
        if len(terms) == MAX_TERMS:
            break
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)


class SkillIndex:
    """A full-text index over the names and descriptions of `entries`, built on first use.

    Args:
        entries: the catalog's entries; `rank` answers positions in this sequence.
    """

    def __init__(self, entries: Sequence[Rankable]) -> None:
        self._entries = entries
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self.builds = 0
        """How many times the table was built (once, unless the index is never used)."""

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            db = sqlite3.connect(":memory:", check_same_thread=False)
            db.execute(
                "CREATE VIRTUAL TABLE skills USING fts5("
                "name, description, tokenize = 'porter unicode61')"
            )
            db.executemany(
                "INSERT INTO skills (rowid, name, description) VALUES (?, ?, ?)",
                ((i, e.name, e.description) for i, e in enumerate(self._entries)),
            )
            self._db = db
            self.builds += 1
        return self._db

    def rank(self, text: str) -> list[int]:
        """The positions of the entries that share a word with `text`, best match first
        (ties in catalog order); empty when `text` has no word."""
        expression = match_expression(text)
        if expression is None or not self._entries:
            return []
        with self._lock:
            rows = (
                self._connection()
                .execute(
                    "SELECT rowid FROM skills WHERE skills MATCH ? "
                    "ORDER BY bm25(skills, ?, 1.0), rowid",
                    (expression, NAME_WEIGHT),
                )
                .fetchall()
            )
        return [row[0] for row in rows]
