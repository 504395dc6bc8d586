"""What a skills server keeps between calls: the stamp-keyed catalog of each index folder
(with its persistent index and file watches), the pinning to each skills lock, and the
search index. One `SkillsState` belongs to one server (its builder makes it and hands it to
the tools and to the MCP Skills extension, which then read the same catalog); nothing of
it is a module global, so two servers in one process keep to their own.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

from ..config import Settings
from .catalog.scan import SkillCatalog
from .catalog.search import SkillSearch, search_skills
from .core.records import Catalog
from .supply.lock import Pinning

__all__ = ["SkillsState"]


class SkillsState:
    """The catalogs, pinnings and search index of one skills server."""

    def __init__(self) -> None:
        self._catalogs: dict[Path | None, SkillCatalog] = {}
        self._pinnings: dict[Path, Pinning] = {}
        self._search: SkillSearch | None = None
        self._lock = threading.Lock()

    def catalog(self, settings: Settings) -> SkillCatalog:
        """The stamp-keyed catalog that starts from the index under ``settings.cache_dir``."""
        found = self._catalogs.get(settings.cache_dir)
        if found is None:
            with self._lock:
                found = self._catalogs.setdefault(
                    settings.cache_dir, SkillCatalog(cache_dir=settings.cache_dir, watch=True)
                )
        return found

    def pinning(self, lock: Path) -> Pinning:
        """The pinning to the skills lock at `lock` (DPTTOOLS_SKILLS_LOCK)."""
        found = self._pinnings.get(lock)
        if found is None:
            with self._lock:
                found = self._pinnings.setdefault(lock, Pinning(lock))
        return found

    def scan(self, settings: Settings) -> Catalog:
        """The catalog of every skills folder (``settings.skill_roots``, searched
        ``settings.skills_depth`` levels down), reading only what changed since the last
        scan. With ``settings.skills_lock``, only the skills the lock allows are listed
        (`lock.Pinning`)."""
        catalog = self.catalog(settings).scan_roots(
            settings.skill_roots,
            max_bytes=settings.max_file_size_bytes,
            depth=settings.skills_depth,
        )
        if settings.skills_lock is None:
            return catalog
        return self.pinning(settings.skills_lock).pin(catalog, settings.max_file_size_bytes)

    def cached(self, settings: Settings) -> Catalog | None:
        """The catalog `scan` gives when it is known to be unchanged, else None.

        Costs only ``stat`` calls; see `SkillCatalog.peek` and `lock.Pinning.peek`.
        """
        catalog = self.catalog(settings).peek_roots(
            settings.skill_roots,
            max_bytes=settings.max_file_size_bytes,
            depth=settings.skills_depth,
        )
        if catalog is None or settings.skills_lock is None:
            return catalog
        return self.pinning(settings.skills_lock).peek(catalog)

    def current(self, settings: Settings) -> Catalog:
        """`cached`, else `scan`: the catalog as it is now."""
        return self.cached(settings) or self.scan(settings)

    @property
    def search(self) -> SkillSearch:
        """The search index over the listed skills, made on first use."""
        if self._search is None:
            with self._lock:
                if self._search is None:
                    self._search = SkillSearch()
        return self._search

    def search_skills(
        self, settings: Settings, query: str, limit: int = 10, *, catalog: Catalog | None = None
    ) -> str:
        """The search_skills answer for `query` over the catalog as it is now, or over
        `catalog` when the caller has just checked it (`catalog.search.search_skills`)."""
        return search_skills(
            self.search,
            (lambda: catalog) if catalog is not None else functools.partial(self.current, settings),
            query,
            limit,
            output_limit=settings.output_truncation_limit,
        )

    def clear(self) -> None:
        """Forget every catalog read so far, and the search index; the next `scan` reads
        every SKILL.md again."""
        for catalog in list(self._catalogs.values()):
            catalog.clear()
        with self._lock:
            self._search = None
