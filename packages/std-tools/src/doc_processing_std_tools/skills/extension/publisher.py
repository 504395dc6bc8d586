"""The skills catalog as the MCP Skills extension publishes it, free of MCP.

The extension (``io.modelcontextprotocol/skills``) describes each skill by the URI of its
SKILL.md, its frontmatter verbatim as JSON, and every file it holds with a SHA-256 digest
and a size. `SkillPublisher` turns the catalog the five tools use (its `CatalogSource`) into
those descriptions, a `Page` of ``skills/list`` at a time, and locates the file behind a
``skill://`` URI for a read.

Data flow of a listing: the first page takes the catalog as list_skills does
(`CatalogSource.cached`, else `current`) and sorts it by URI into a listing (`listings`);
each page then publishes its range of that listing: per skill, the walk of its folder and
the digests of its files (`skill_files`), after the extension's rules (`publishable`) ->
`Page`, whose ``nextCursor`` names the listing and the last skill listed. The pages after
the first reuse their listing's catalog, so a listing checks the catalog once, however
many pages it has: a skill added or removed meanwhile shows in the next listing, and the
files of each skill are checked when its page is served. With a persistent index
(DPTTOOLS_CACHE_DIR), file digests outlive the process (`index`): a new process takes a
file's digest from there while the file keeps the stamp it was hashed under.

On a local Linux file system the kernel reports which skill folders changed (`watch`),
so an unchanged skill costs nothing but a look-up, and a page whose skills were all
unchanged is answered as it was (a few pages per listing are kept); elsewhere a listing
of an unchanged skill costs one ``stat`` per folder and per file and reads nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Final, Protocol

from ...config import Settings
from ...errors import StdToolsError
from ..catalog.index import RootIndex, open_index
from ..catalog.scan import SKILL_FILE, Catalog, SkillDiagnostic, SkillRecord
from ..catalog.skill_files import (
    RACY_NS,
    ParentFolders,
    PublishedFile,
    SkillFiles,
    SkillReader,
    Stamp,
    Tree,
    Watching,
    read_published,
    unchanged,
)
from ..catalog.uris import SkillUri, UnknownResourceError, file_uri, mime_type
from ..catalog.watch import EVERYTHING, FolderWatch
from .listings import Listing, Listings, Page, listing_key
from .publishable import frontmatter_of, limits_problem, unpublishable, unreadable

__all__ = [
    "DIRECTORY_MIME_TYPE",
    "MAX_PAGE_RESOURCES",
    "MAX_PAGE_SKILLS",
    "DirectoryChild",
    "Page",
    "PublishedSkill",
    "SkillPublisher",
]

logger = logging.getLogger(__name__)

MAX_PAGE_SKILLS: Final = 1000
"""At most this many skills on one ``skills/list`` page."""
MAX_PAGE_RESOURCES: Final = 8192
"""A page stops growing once it lists this many files (it always holds one skill)."""
DIRECTORY_MIME_TYPE: Final = "inode/directory"
"""The MIME type the extension gives a folder."""


@dataclass(frozen=True, slots=True)
class DirectoryChild:
    """One direct child of a published folder, as ``resources/directory/read`` lists it."""

    uri: str
    """The child's ``skill://`` URI."""
    name: str
    """The child's own name (its last path segment); for the skill's own SKILL.md, the
    skill's name, as the extension asks."""
    mime_type: str
    """``inode/directory`` for a folder, else the file's MIME type."""
    description: str | None = None
    """For the skill's own SKILL.md: the frontmatter ``description``."""


@dataclass(frozen=True)
class PublishedSkill:
    """A skill as the extension serves it: URI, verbatim frontmatter and every file."""

    name: str
    """The skill's name: its folder name, equal to its frontmatter ``name``."""
    frontmatter: Mapping[str, Any]
    """The SKILL.md frontmatter as JSON values, every field the author wrote."""
    files: tuple[PublishedFile, ...]
    """Every file, sorted by path, SKILL.md included."""

    @property
    def uri(self) -> str:
        """The URI of the skill's SKILL.md, which names the skill."""
        return file_uri(self.name, SKILL_FILE)

    @cached_property
    def entry(self) -> dict[str, Any]:
        """The extension's ``Skill`` object for this skill (built once, then reused)."""
        return {
            "uri": self.uri,
            "frontmatter": self.frontmatter,
            "resources": [
                {"uri": file_uri(self.name, f.relative), "digest": f.digest, "size": f.size}
                for f in self.files
            ],
        }


@dataclass(slots=True)
class _Shape:
    """What is known about one skill folder before any file is hashed."""

    folder: Path
    tree: Tree
    frontmatter: dict[str, Any] | None
    problem: SkillDiagnostic | None


@dataclass(frozen=True, slots=True)
class _Last:
    """The outcome of the last publication of a skill under one size limit, the stamps it
    was built from, and whether any of them was too recent to be trusted."""

    record: SkillRecord
    max_bytes: int
    checks: list[tuple[str, Stamp]]
    outcome: PublishedSkill | SkillDiagnostic
    recent: bool


@dataclass(slots=True)
class _Remembered:
    """Everything remembered about one skill folder."""

    files: SkillFiles = field(default_factory=SkillFiles)
    # The catalog record last checked, with its frontmatter as JSON and why it cannot be
    # published (None when it can).
    frontmatter: tuple[SkillRecord, dict[str, Any] | None, SkillDiagnostic | None] | None = None
    published: tuple[tuple[Any, ...], PublishedSkill] | None = None
    last: _Last | None = None
    checks: list[tuple[str, Stamp]] = field(default_factory=list)
    # True while the kernel watches every path of the last walk and no event came since.
    watched: bool = False


@dataclass(slots=True)
class _Stored:
    """The persistent index of one skills folder (`index.open_index`), as far as the file
    digests go."""

    index: RootIndex
    # Digests read from the index that no walk has looked at yet: path -> (stamp, digest).
    unseen: dict[str, tuple[Stamp, str]]
    # What to write at the end of the page: new digests, and files no longer there.
    pending: dict[str, tuple[Stamp, str]] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)

    def flush(self, *, listed_all: bool) -> None:
        """Write what is pending; after a whole listing, also forget the digests of files
        no walk met (removed while no server ran, or of skills left out)."""
        if listed_all and self.unseen:
            self.removed.extend(self.unseen)
            self.unseen.clear()
        if self.pending or self.removed:
            self.index.save_digests(self.pending, self.removed)
            self.pending = {}
            self.removed = []


class CatalogSource(Protocol):
    """Where the publisher gets the catalog the five tools list (a `skills.state.
    SkillsState`): the remembered one while nothing changed (`cached`), else a scan that
    reads what changed (`current`)."""

    def cached(self, settings: Settings) -> Catalog | None:
        """The catalog when it is known to be unchanged, else None (``stat`` calls only)."""
        ...

    def current(self, settings: Settings) -> Catalog:
        """The catalog as it is now."""
        ...


class SkillPublisher:
    """Publishes the catalog of the five tools for the MCP Skills extension.

    One instance serves every skills folder of the process and is safe to share between
    threads; the calls that may read files are meant for a worker thread.
    """

    def __init__(
        self,
        catalogs: CatalogSource,
        *,
        watch: bool = True,
        page_skills: int = MAX_PAGE_SKILLS,
        page_resources: int = MAX_PAGE_RESOURCES,
    ) -> None:
        """Publish what `catalogs` lists, starting with nothing remembered. With `watch`
        (the default), the kernel reports changes where it can (see `watch`); without,
        every call compares ``stat`` stamps.
        A page holds at most `page_skills` skills and stops growing at `page_resources`
        files (it always holds one skill)."""
        self._catalogs = catalogs
        self._page_skills = page_skills
        self._page_resources = page_resources
        self._lock = threading.Lock()
        self._folders: dict[str, _Remembered] = {}
        self._reported: set[SkillDiagnostic] = set()
        self._watching = watch
        # Opened on first use, so that building a server opens no inotify instance.
        self._watch: FolderWatch | None = None
        self._listings = Listings()
        # The persistent indexes, by (cache folder, skills folder); None: none to be had.
        self._stored: dict[tuple[Path, Path], _Stored | None] = {}

    def clear(self) -> None:
        """Forget everything; the next call walks and hashes every skill again."""
        with self._lock:
            self._folders.clear()
            self._listings.clear()

    def page(self, settings: Settings, cursor: str | None = None) -> Page:
        """The ``skills/list`` page that starts after `cursor` (None: the first page).

        The first page takes the catalog; the pages after it reuse that listing's (see
        `listings`). Only the skills of this page are checked and, where they changed,
        hashed again.

        Raises:
            InvalidCursorError: `cursor` was not handed out by this publisher.
        """
        number, after = self._listings.open_cursor(cursor)
        with self._lock:
            quiet = self._take_events()
            key = listing_key(settings)
            listing = None if cursor is None else self._listings.get(number, key)
            if listing is None:
                listing, new = self._listings.of(self._catalogs.current(settings), key)
                if new:
                    self._forget_folders_not_in(listing.catalog)
            known = listing.page(after) if quiet else None
            if known is not None:
                return known  # the kernel reported no change in any skill of this page
            page, all_watched = self._build(listing, after, settings)
            self._flush(settings.skill_roots if page.next_cursor is None else ())
            if all_watched:
                listing.keep(after, page)
            return page

    def cached_page(self, settings: Settings, cursor: str | None = None) -> Page | None:
        """The page `page` would answer, when it is known unchanged without reading or
        waiting: the kernel reported nothing, the catalog is unchanged (`CatalogSource.cached`)
        and the page was answered before. None otherwise (call `page`, in a worker
        thread). Cheap enough for an event loop, as list_skills' own check.

        Raises:
            InvalidCursorError: `cursor` was not handed out by this publisher.
        """
        number, after = self._listings.open_cursor(cursor)
        if not self._lock.acquire(blocking=False):
            return None
        try:
            if self._watch is None or not self._take_events():
                return None
            key = listing_key(settings)
            if cursor is not None:
                listing = self._listings.get(number, key)
            else:
                catalog = self._catalogs.cached(settings)
                listing = None if catalog is None else self._listings.newest(catalog, key)
            return None if listing is None else listing.page(after)
        finally:
            self._lock.release()

    def _forget_folders_not_in(self, catalog: Catalog) -> None:
        if len(self._folders) > len(catalog.skills):
            present = {str(r.directory) for r in catalog.skills}
            self._folders = {k: v for k, v in self._folders.items() if k in present}

    def _build(self, listing: Listing, after: str, settings: Settings) -> tuple[Page, bool]:
        """The page of `listing` after the URI `after` ("" for the first), and whether
        every skill on it is watched by the kernel."""
        catalog = listing.catalog
        max_bytes = settings.max_file_size_bytes
        real_root = settings.skills_dir.resolve()
        left_out = [] if after else [d for d in catalog.diagnostics if d.level == "error"]
        entries: list[dict[str, Any]] = []
        listed = 0
        following: str | None = None
        last_uri = ""
        all_watched = self._watch is not None and self._watch.active
        start = listing.start(after)
        with ParentFolders() as parents:
            for index in range(start, len(listing.records)):
                uri, record = listing.uris[index], listing.records[index]
                if len(entries) >= self._page_skills:
                    following = self._listings.cursor(listing, last_uri)
                    break
                blocked = listing.blocked.get(record.name)
                outcome = (
                    blocked
                    or self._unchanged_outcome(record, max_bytes)
                    or self._publish_one(record, settings, real_root, parents)
                )
                if all_watched and blocked is None:
                    folder = self._folders.get(str(record.directory))
                    all_watched = folder is not None and folder.watched
                if isinstance(outcome, SkillDiagnostic):
                    left_out.append(outcome)
                elif entries and listed + len(outcome.files) > self._page_resources:
                    following = self._listings.cursor(listing, last_uri)
                    break
                else:
                    entries.append(outcome.entry)
                    listed += len(outcome.files)
                last_uri = uri
        self._report(left_out)
        return Page(entries, following, left_out), all_watched

    def _take_events(self) -> bool:
        """Mark the skill folders the kernel reported a change in as to be walked again;
        True when the kernel watches and reported nothing at all."""
        if self._watch is None:
            self._watch = FolderWatch(enabled=self._watching)
        if not self._watch.active:
            self._listings.forget_pages()
            return False
        changed = self._watch.changed()
        if not changed:
            return True
        self._listings.forget_pages()
        if EVERYTHING in changed:
            for remembered in self._folders.values():
                remembered.watched = False
            return False
        for key in changed:
            if (folder := self._folders.get(key)) is not None:
                folder.watched = False
        return False

    def _stored_for(self, settings: Settings, record: SkillRecord) -> _Stored | None:
        """The persistent index of `record`'s skills folder, opened (and its digests read)
        once per process; None without DPTTOOLS_CACHE_DIR or when it cannot be had."""
        if settings.cache_dir is None or record.root is None:
            return None
        key = (settings.cache_dir, record.root)
        if key not in self._stored:
            index = open_index(settings.cache_dir, record.root.resolve())
            self._stored[key] = None if index is None else _Stored(index, index.digests())
        return self._stored[key]

    def _flush(self, listed: tuple[Path, ...] = ()) -> None:
        """Write what the walks left pending; `listed`: the skills folders a whole
        listing just went through."""
        for (_, root), stored in self._stored.items():
            if stored is not None:
                stored.flush(listed_all=root in listed)

    def _report(self, left_out: list[SkillDiagnostic]) -> None:
        """Log the skills left out that were not reported yet: each at DEBUG, and one INFO
        line that counts them by code (a host's log gets no line per skill)."""
        fresh = [d for d in dict.fromkeys(left_out) if d not in self._reported]
        if not fresh:
            return
        self._reported.update(fresh)
        for diagnostic in fresh:
            logger.debug(
                "skill %r is not published by the MCP Skills extension: %s (%s)",
                diagnostic.skill,
                diagnostic.code,
                diagnostic.message,
            )
        codes = Counter(diagnostic.code for diagnostic in fresh)
        logger.info(
            "%d skill(s) not published by the MCP Skills extension (%s); list_skills' "
            "diagnostics say why, and DEBUG logs each",
            len(fresh),
            ", ".join(f"{code}: {count}" for code, count in codes.most_common()),
        )

    def skill(self, settings: Settings, name: str) -> PublishedSkill | SkillDiagnostic | None:
        """One skill as published now (hashing only its files); a diagnostic when it is
        left out; None when the catalog has no such skill."""
        with self._lock:
            self._take_events()
            record, diagnostic = self._record(settings, name)
            if record is None:
                return diagnostic
            published = self._publish_one(record, settings, settings.skills_dir.resolve())
            self._flush()
            return published

    def locate(self, settings: Settings, uri: SkillUri) -> Path:
        """The folder of the published skill that holds the file `uri` names.

        Nothing is hashed: the skill's frontmatter and limits are checked from what is
        remembered and from ``stat`` sizes.

        Raises:
            UnknownResourceError: no published skill holds such a file.
        """
        with self._lock:
            self._take_events()
            shape = self._published_shape(settings, uri)
            if uri.relative not in shape.tree.files:
                raise _not_served(uri, "there is no such file in the skill")
            return shape.folder

    def read(self, settings: Settings, uri: SkillUri) -> str | bytes:
        """The exact content of the published file `uri` names, read now (see
        `skill_files.read_published`).

        Raises:
            UnknownResourceError: no published skill holds such a file (any more).
            StdToolsError: the file grew over the limit, or a link now leads outside.
        """
        folder = self.locate(settings, uri)
        shown = file_uri(uri.skill, uri.relative)
        return read_published(folder, uri.relative, shown, settings.max_file_size_bytes)

    def directory(self, settings: Settings, uri: SkillUri) -> list[DirectoryChild]:
        """The direct children of the published folder `uri` names, sorted by name.

        Raises:
            UnknownResourceError: `uri` names no folder of a published skill.
        """
        with self._lock:
            self._take_events()
            shape = self._published_shape(settings, uri)
            names = shape.tree.folders.get(uri.relative)
            if names is None:
                what = "a file" if uri.relative in shape.tree.files else "not there"
                raise _not_served(uri, f"it is {what}, not a folder")
            prefix = f"{uri.relative}/" if uri.relative else ""
            children = []
            for name in sorted(names):
                relative = prefix + name
                kind = DIRECTORY_MIME_TYPE if relative in shape.tree.folders else mime_type(name)
                child = file_uri(uri.skill, relative)
                if relative == SKILL_FILE and shape.frontmatter is not None:
                    about = shape.frontmatter.get("description")
                    text = about if isinstance(about, str) else None
                    children.append(DirectoryChild(child, uri.skill, kind, text))
                else:
                    children.append(DirectoryChild(child, name, kind))
            return children

    def _record(
        self, settings: Settings, name: str
    ) -> tuple[SkillRecord | None, SkillDiagnostic | None]:
        catalog = self._catalogs.current(settings)
        record = catalog.get(name)
        if record is None:
            return None, None
        blocked = unpublishable(d for d in catalog.diagnostics if d.skill == name).get(name)
        return (None, blocked) if blocked is not None else (record, None)

    def _published_shape(self, settings: Settings, uri: SkillUri) -> _Shape:
        record, diagnostic = self._record(settings, uri.skill)
        if record is None:
            reason = "the skill is not published" if diagnostic else "there is no such skill"
            raise _not_served(uri, reason)
        real_root = settings.skills_dir.resolve()
        shape = self._shape(self._remembered(record), record, settings, real_root)
        if shape.problem is not None:
            raise _not_served(uri, f"the skill is not published ({shape.problem.code})")
        return shape

    def _remembered(self, record: SkillRecord) -> _Remembered:
        key = str(record.directory)
        remembered = self._folders.get(key)
        if remembered is None:
            remembered = self._folders[key] = _Remembered()
        return remembered

    def _shape(
        self,
        remembered: _Remembered,
        record: SkillRecord,
        settings: Settings,
        real_root: Path,
        watching: Watching | None = None,
    ) -> _Shape:
        tree = remembered.files.tree(record.directory, real_root, watching)
        found = tree.files.get(SKILL_FILE)
        if found is None:
            gone = unreadable(record.name, SKILL_FILE, "it is gone or leads elsewhere")
            return _Shape(record.directory, tree, None, gone)
        checked = remembered.frontmatter
        if checked is None or checked[0] is not record:
            checked = remembered.frontmatter = (record, *frontmatter_of(record))
        _, fields, problem = checked
        if problem is None:
            problem = limits_problem(record.name, tree, settings.max_file_size_bytes)
        return _Shape(record.directory, tree, fields, problem)

    def _unchanged_outcome(
        self, record: SkillRecord, max_bytes: int
    ) -> PublishedSkill | SkillDiagnostic | None:
        """The last outcome for `record` when nothing changed since, else None."""
        remembered = self._folders.get(str(record.directory))
        last = None if remembered is None else remembered.last
        if remembered is None or last is None or last.max_bytes != max_bytes:
            return None
        if last.record is not record:
            return None  # the catalog read SKILL.md again: walk the folder again too
        if remembered.watched and self._watch is not None and self._watch.active:
            return last.outcome  # no event since the walk: nothing changed
        if not last.recent and unchanged(last.checks):
            return last.outcome
        return None

    def _publish_one(
        self,
        record: SkillRecord,
        settings: Settings,
        real_root: Path,
        parents: ParentFolders | None = None,
    ) -> PublishedSkill | SkillDiagnostic:
        known = self._unchanged_outcome(record, settings.max_file_size_bytes)
        if known is not None:
            return known
        remembered = self._remembered(record)
        taken = time.time_ns()
        outcome = self._publish_walked(remembered, record, settings, real_root, parents)
        checks = remembered.checks
        recent = any(taken - stamp[0] < RACY_NS for _, stamp in checks)
        remembered.last = _Last(record, settings.max_file_size_bytes, checks, outcome, recent)
        return outcome

    def _publish_walked(
        self,
        remembered: _Remembered,
        record: SkillRecord,
        settings: Settings,
        real_root: Path,
        parents: ParentFolders | None,
    ) -> PublishedSkill | SkillDiagnostic:
        watch = self._watch
        device = None if watch is None else watch.covers(real_root)
        watching = (
            None
            if watch is None or device is None
            else Watching(watch, str(record.directory), device)
        )
        shape = self._shape(remembered, record, settings, real_root, watching)
        remembered.checks = shape.tree.checks
        remembered.watched = shape.tree.watched
        if shape.problem is not None:
            return shape.problem
        files: list[PublishedFile] = []
        hasher = remembered.files
        stored = self._stored_for(settings, record)
        unseen = {} if stored is None else stored.unseen
        with SkillReader(record.directory, settings.max_file_size_bytes, parents) as reader:
            for relative, (path, st) in sorted(shape.tree.files.items()):
                if relative == SKILL_FILE and record.digest is not None and record.size is not None:
                    # The bytes the catalog parsed the frontmatter from: the two agree.
                    files.append(PublishedFile(SKILL_FILE, record.size, record.digest))
                    continue
                try:
                    digest = hasher.digest(path, st, relative, reader, unseen.pop(path, None))
                except (OSError, StdToolsError) as exc:
                    return unreadable(record.name, relative, str(exc))
                files.append(PublishedFile(relative, st.st_size, digest))
        gone = hasher.keep_only(path for path, _ in shape.tree.files.values())
        if stored is not None:
            stored.pending.update(hasher.to_store())
            stored.removed.extend(gone)
        key = (id(shape.frontmatter), *files)
        known = remembered.published
        if known is not None and known[0] == key:
            return known[1]
        assert shape.frontmatter is not None
        published = PublishedSkill(record.name, shape.frontmatter, tuple(files))
        remembered.published = (key, published)
        return published


def _not_served(uri: SkillUri, reason: str) -> UnknownResourceError:
    shown = file_uri(uri.skill, uri.relative)
    return UnknownResourceError(
        f"No resource is served at {shown}: {reason}. Call skills/list for the published "
        "skills and the URIs of their files."
    )
