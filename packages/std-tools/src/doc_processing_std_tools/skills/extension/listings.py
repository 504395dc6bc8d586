"""The listings of ``skills/list``: catalog snapshots, their cursors and the pages answered
from them, free of MCP.

A *listing* is one catalog sorted by URI, taken by a listing's first page; the pages
after it, reached by a cursor, walk the same listing, so a listing holds every skill
exactly once and checks the catalog once, however many pages it has. A cursor names its
listing and the URI of the last skill already listed, signed by `uris.CursorSigner`, so a
cursor this process did not hand out is refused before anything is looked up.

Everything here is bounded whatever a client sends: `MAX_LISTINGS` listings are kept
(least recently used dropped first; a cursor of a dropped listing is still good, and the
caller takes the catalog anew), and each keeps the answered pages of a whole walk (at
most twice its skills in entries, at least `MIN_CACHED_PAGES` pages), so a second walk
is answered from memory however long the catalog.
Not thread-safe: the publisher serialises every call.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Final

from ...config import Settings
from ..catalog.scan import SKILL_FILE, Catalog, SkillDiagnostic, SkillRecord
from ..catalog.uris import CursorSigner, file_uri
from .publishable import unpublishable

__all__ = [
    "MAX_LISTINGS",
    "MIN_CACHED_PAGES",
    "Listing",
    "Listings",
    "Page",
    "listing_key",
]

MAX_LISTINGS: Final = 4
"""How many listings (catalog snapshots) the cursors handed out may refer to."""
MIN_CACHED_PAGES: Final = 16
"""How many answered pages one listing keeps at least, whatever their entries add up to
(`Listing.keep`)."""


@dataclass(frozen=True, slots=True)
class Page:
    """One ``skills/list`` page: entries, the cursor of the next page, what was left out."""

    entries: list[dict[str, Any]]
    """The extension's ``Skill`` objects, sorted by URI."""
    next_cursor: str | None
    """Pass it back for the next page; None on the last page."""
    left_out: list[SkillDiagnostic]
    """Why each skill of this page's range is not published. The first page also carries
    the catalog's errors (folders that are not skills at all)."""


def listing_key(settings: Settings) -> tuple[Any, ...]:
    """What a listing depends on besides the catalog itself."""
    return (settings.skill_roots, settings.skills_dir, settings.max_file_size_bytes)


@dataclass(slots=True)
class Listing:
    """One catalog in URI order, as the pages of a listing walk it."""

    number: int
    """Its number in this process, which its cursors carry."""
    key: tuple[Any, ...]
    """The settings it was taken under (`listing_key`)."""
    catalog: Catalog
    """The catalog it was taken from."""
    uris: list[str]
    """The URI of every skill of the catalog, sorted."""
    records: list[SkillRecord]
    """The skill of each URI in `uris`."""
    blocked: dict[str, SkillDiagnostic]
    """The catalog's reason to leave a skill out, by skill name."""
    _pages: OrderedDict[str, Page] = field(default_factory=OrderedDict)
    _kept_entries: int = 0

    def start(self, after: str) -> int:
        """The index in `records` of the first skill after the URI `after` ("": 0)."""
        return bisect.bisect_right(self.uris, after) if after else 0

    def page(self, after: str) -> Page | None:
        """The page after `after` kept by `keep`, if any."""
        known = self._pages.get(after)
        if known is not None:
            self._pages.move_to_end(after)
        return known

    def keep(self, after: str, page: Page) -> None:
        """Keep `page` as the answer after `after`. The kept pages hold at most twice the
        listing's skills in all (a whole walk, with room for pages whose bounds moved),
        and there are at least `MIN_CACHED_PAGES` of them; the least recently used go
        first."""
        dropped = self._pages.pop(after, None)
        if dropped is not None:
            self._kept_entries -= len(dropped.entries)
        self._pages[after] = page
        self._kept_entries += len(page.entries)
        room = 2 * len(self.records)
        while len(self._pages) > MIN_CACHED_PAGES and self._kept_entries > room:
            _, oldest = self._pages.popitem(last=False)
            self._kept_entries -= len(oldest.entries)

    def forget_pages(self) -> None:
        """Drop every kept page (something they were built from changed)."""
        self._pages.clear()
        self._kept_entries = 0


class Listings:
    """The listings cursors may refer to, and the cursors themselves."""

    __slots__ = ("_cursors", "_listings", "_numbered")

    def __init__(self) -> None:
        """Start with no listing and a fresh signing key."""
        self._cursors = CursorSigner()
        self._listings: OrderedDict[int, Listing] = OrderedDict()
        self._numbered = 0

    def open_cursor(self, cursor: str | None) -> tuple[int, str]:
        """The listing number and the last listed URI that `cursor` carries ((0, "") for
        no cursor).

        Raises:
            InvalidCursorError: `cursor` was not handed out by this object.
        """
        return (0, "") if cursor is None else self._cursors.open(cursor)

    def cursor(self, listing: Listing, after: str) -> str:
        """The cursor of the page of `listing` after the URI `after`."""
        return self._cursors.issue(listing.number, after)

    def get(self, number: int, key: tuple[Any, ...]) -> Listing | None:
        """The listing numbered `number`, when it is kept and was taken under `key`."""
        listing = self._listings.get(number)
        if listing is None or listing.key != key:
            return None
        self._listings.move_to_end(number)
        return listing

    def newest(self, catalog: Catalog, key: tuple[Any, ...]) -> Listing | None:
        """The newest listing, when it was taken of this very `catalog` under `key`."""
        if not self._listings:
            return None
        newest = next(reversed(self._listings.values()))
        return newest if newest.catalog is catalog and newest.key == key else None

    def of(self, catalog: Catalog, key: tuple[Any, ...]) -> tuple[Listing, bool]:
        """The listing of `catalog`, and whether it is new: the newest one when it was
        taken of the same catalog, else a new one (the oldest dropped past the bound)."""
        known = self.newest(catalog, key)
        if known is not None:
            return known, False
        by_uri = sorted((file_uri(r.name, SKILL_FILE), r) for r in catalog.skills)
        blocked = unpublishable(catalog.diagnostics)
        self._numbered += 1
        listing = Listing(
            self._numbered,
            key,
            catalog,
            [uri for uri, _ in by_uri],
            [record for _, record in by_uri],
            blocked,
        )
        self._listings[listing.number] = listing
        while len(self._listings) > MAX_LISTINGS:
            self._listings.popitem(last=False)
        return listing, True

    def forget_pages(self) -> None:
        """Drop the kept pages of every listing."""
        for listing in self._listings.values():
            listing.forget_pages()

    def clear(self) -> None:
        """Forget every listing (their cursors stay good: the catalog is taken anew)."""
        self._listings.clear()
