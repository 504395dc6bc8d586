"""The real skill collections the tests read: a folder `shared/corpora` next to the
repository checkout (docs/testing.md says how to get it). Tests that need it skip, saying
so, when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

CORPORA = Path(__file__).resolve().parents[4].parent / "shared" / "corpora"
"""Where the collections are looked for."""

COLLECTIONS = [
    "anthropics-skills",
    "openai-skills",
    "obra-superpowers",
    "k-dense-scientific-skills",
]
"""The collections, by folder name."""

HOW_TO_GET = (
    f"the real skill collections are not in {CORPORA} (a folder shared/corpora next to the "
    "repository checkout); docs/testing.md, section 'Real skill collections', says how to "
    "get them"
)


def corpora() -> Path:
    """The collections' folder; skips the test when it is absent."""
    if not CORPORA.is_dir():
        pytest.skip(HOW_TO_GET)
    return CORPORA


def skills_folders(collection: Path) -> list[Path]:
    """Every folder that directly holds skill folders (hidden ones included)."""
    return sorted({p.parent.parent for p in collection.rglob("SKILL.md")})
