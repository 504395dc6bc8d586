"""The skills catalog as the MCP Skills extension publishes it, free of MCP.

The extension (``io.modelcontextprotocol/skills``) describes each skill by the URI of its
SKILL.md, its frontmatter verbatim as JSON, and every file it holds with a SHA-256 digest
and a size. This module turns the catalog the five tools use (`actions.scan`) into those
descriptions, and locates the file behind a ``skill://`` URI for a read.

Data flow: catalog records -> per skill, a walk of its folder (what the tools' rules skip is
left out: hidden names, ``__pycache__``, ``node_modules``, symbolic links leading outside
the skills folder, anything that is not a regular file or folder) -> the limits (512
files, 16 MiB per skill, no file over DPTTOOLS_MAX_FILE_SIZE_MB) checked from ``stat``
sizes before anything is hashed -> digests -> a `Page` of ``skills/list``.

Everything is remembered by ``stat`` stamps (modification and change times, size, inode),
as the catalog does for SKILL.md, and any file that was added, edited or removed is seen
by the very next call. On a local Linux file system the kernel reports which skill
folders changed (`watch`), so an unchanged skill costs nothing but a look-up; elsewhere a
listing of an unchanged skill costs one ``stat`` per folder and per file and reads
nothing. A stamp taken within moments of its file's last write is not trusted on the next
call, because coarse file-system clocks could hide a second edit in the same tick.

Skills the extension cannot carry are left out, each with a `SkillDiagnostic` naming the
reason; `LEFT_OUT_CODES` lists the codes this module adds to the catalog's own.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import math
import mimetypes
import os
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, unquote

from .. import _io
from .._text import wire_safe
from ..config import Settings
from ..errors import NotFoundError, StdToolsError
from ..paths import is_inside
from . import actions
from .catalog import SKILL_FILE, Catalog, SkillDiagnostic, SkillRecord, is_hidden_name
from .frontmatter import is_valid_name
from .watch import EVERYTHING, FolderWatch

__all__ = [
    "DIRECTORY_MIME_TYPE",
    "LEFT_OUT_CODES",
    "MAX_PAGE_RESOURCES",
    "MAX_PAGE_SKILLS",
    "MAX_SKILL_BYTES",
    "MAX_SKILL_FILES",
    "SCHEME",
    "DirectoryChild",
    "InvalidCursorError",
    "Page",
    "PublishedFile",
    "PublishedSkill",
    "SkillPublisher",
    "SkillUri",
    "UnknownResourceError",
    "file_uri",
    "mime_type",
    "parse_skill_uri",
    "read_published",
]

logger = logging.getLogger(__name__)

SCHEME: Final = "skill://"
"""The URI scheme every published file is addressed under."""
MAX_SKILL_FILES: Final = 512
"""The extension's limit on the files of one skill, SKILL.md included."""
MAX_SKILL_BYTES: Final = 16 * 1024 * 1024
"""The extension's limit on the total size of one skill's files (16 MiB)."""
MAX_PAGE_SKILLS: Final = 1000
"""At most this many skills on one ``skills/list`` page."""
MAX_PAGE_RESOURCES: Final = 8192
"""A page stops growing once it lists this many files (it always holds one skill)."""
DIRECTORY_MIME_TYPE: Final = "inode/directory"
"""The MIME type the extension gives a folder."""

LEFT_OUT_CODES: Final[Mapping[str, str]] = {
    "too_many_files": "the skill holds more than 512 files, the extension's limit",
    "skill_too_large": "the skill's files add up to more than 16 MiB, the extension's limit",
    "file_too_large": "a file of the skill is over DPTTOOLS_MAX_FILE_SIZE_MB",
    "unreadable_file": "a file of the skill cannot be read",
    "frontmatter_not_json": "the frontmatter holds a value JSON cannot carry verbatim",
    "invalid_description": "'description' is not text",
    "invalid_allowed_tools": "'allowed-tools' is neither text nor a list of text",
}
"""Codes this module adds when it leaves a skill out, and what each means."""

# The catalog's warnings after which a skill cannot be published: its URI must end in its
# frontmatter name, that name must follow the naming rule, and the frontmatter fields must
# have the types and lengths the Agent Skills specification gives them.
_UNPUBLISHABLE_WARNINGS: Final = frozenset(
    {
        "missing_name",
        "name_mismatch",
        "invalid_name",
        "name_too_long",
        "description_too_long",
        "compatibility_too_long",
        "invalid_license",
        "invalid_compatibility",
        "invalid_metadata",
    }
)
_RACY_NS: Final = 100_000_000
_CURSOR_PREFIX: Final = "after:"

_Stamp = tuple[int, int, int, int]


class UnknownResourceError(NotFoundError):
    """A ``skill://`` URI names no skill, folder or file that is published."""


class InvalidCursorError(StdToolsError):
    """A pagination cursor was not one this server handed out."""


def _stamp(st: os.stat_result) -> _Stamp:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def file_uri(skill: str, relative: str) -> str:
    """The ``skill://`` URI of the file at `relative` (``/``-separated) in `skill`."""
    return f"{SCHEME}{skill}/{quote(relative, safe='/')}" if relative else f"{SCHEME}{skill}"


def mime_type(relative: str) -> str:
    """The MIME type announced for a file: text/markdown for Markdown, else a guess."""
    if relative.endswith((".md", ".markdown")):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(relative, strict=False)
    return guessed or "application/octet-stream"


@dataclass(frozen=True, slots=True)
class SkillUri:
    """A parsed ``skill://`` URI: the skill's name and a path inside its folder."""

    skill: str
    """The skill's name (its folder name)."""
    relative: str
    """The ``/``-separated path inside the skill's folder; empty for the folder itself."""

    @property
    def is_skill_md(self) -> bool:
        """True when the URI names the skill's own SKILL.md."""
        return self.relative == SKILL_FILE


def parse_skill_uri(uri: str) -> SkillUri | None:
    """Split a ``skill://<name>/<path>`` URI, or None when it cannot name a published file.

    Segments are percent-decoded one by one; an empty, ``.`` or ``..`` segment, a decoded
    ``/`` or ``\\``, a NUL, a query or a fragment make the URI name nothing.
    """
    if not uri.startswith(SCHEME):
        return None
    parts = uri[len(SCHEME) :].split("/")
    segments: list[str] = []
    for raw in parts:
        if not raw or "?" in raw or "#" in raw:
            return None
        try:
            segment = unquote(raw, errors="strict")
        except UnicodeDecodeError:
            return None
        if segment in {".", ".."} or any(c in segment for c in "/\\\x00"):
            return None
        segments.append(segment)
    if not is_valid_name(segments[0]):
        return None
    return SkillUri(segments[0], "/".join(segments[1:]))


@dataclass(frozen=True, slots=True)
class PublishedFile:
    """One file of a published skill, as the extension lists it."""

    relative: str
    """Path inside the skill's folder, ``/``-separated."""
    size: int
    """Length in bytes."""
    digest: str
    """``sha256:`` and 64 lowercase hexadecimal digits."""


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


def _encode_cursor(after: str) -> str:
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{after}".encode()).decode()


def _decode_cursor(cursor: str) -> str:
    try:
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("utf-8")
    except (UnicodeError, binascii.Error, ValueError):
        text = ""
    if not text.startswith(_CURSOR_PREFIX):
        raise InvalidCursorError(
            f"The cursor {cursor[:80]!r} was not handed out by skills/list; pass the "
            "nextCursor of the previous page unchanged, or no cursor for the first page."
        )
    return text[len(_CURSOR_PREFIX) :]


# --- The walk of one skill folder -------------------------------------------------------


@dataclass(slots=True)
class _Listing:
    """The visible children of one folder, remembered under the folder's stamp."""

    stamp: _Stamp
    racy: bool
    files: list[str]
    folders: list[str]


@dataclass(slots=True)
class _Digest:
    stamp: _Stamp
    racy: bool
    digest: str


@dataclass(frozen=True, slots=True)
class _Tree:
    """Every visible file of a skill folder: relative path -> (absolute path, stat)."""

    files: dict[str, tuple[str, os.stat_result]]
    folders: dict[str, list[str]]
    """Relative folder ("" for the skill's own) -> its visible children's names."""
    checks: list[tuple[str, _Stamp]]
    """Every folder and file walked, with its stamp: what a later call compares."""
    watched: bool = False
    """True when every folder and file was watched (by inotify) before it was read."""


def _visible_children(directory: str, real_root: Path) -> tuple[list[str], list[str]]:
    """Names of the regular files and folders in `directory` that the tools' rules show."""
    files: list[str] = []
    folders: list[str] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            name = entry.name
            if is_hidden_name(name) or name != wire_safe(name):
                continue
            try:
                if entry.is_symlink() and not is_inside(Path(entry.path), real_root):
                    continue
                if entry.is_dir():
                    folders.append(name)
                elif entry.is_file():
                    files.append(name)
            except OSError:
                continue
    files.sort()
    folders.sort()
    return files, folders


@dataclass(frozen=True, slots=True)
class _Watching:
    """The kernel watch to put on every path of one skill folder's walk."""

    watch: FolderWatch
    key: str
    device: int

    def add(self, path: str) -> bool:
        return self.watch.watch(path, self.key)


class _SkillFiles:
    """Walks one skill folder and hashes its files, remembering both by ``stat`` stamps."""

    __slots__ = ("_digests", "_listings")

    def __init__(self) -> None:
        self._listings: dict[str, _Listing] = {}
        self._digests: dict[str, _Digest] = {}

    def tree(self, folder: Path, real_root: Path, watch: _Watching | None = None) -> _Tree:
        """The visible files and folders of `folder`; a folder reached twice (through a
        link) is walked once. With `watch`, every path is watched before it is read."""
        watched = watch is not None
        files: dict[str, tuple[str, os.stat_result]] = {}
        folders: dict[str, list[str]] = {}
        seen: set[tuple[int, int]] = set()
        pending: list[tuple[str, str]] = [(str(folder), "")]
        listings: dict[str, _Listing] = {}
        checks: list[tuple[str, _Stamp]] = []
        while pending:
            directory, relative = pending.pop()
            if watch is not None and not watch.add(directory):
                watched = False
            try:
                st = os.stat(directory)  # noqa: PTH116
            except OSError:
                continue
            if watch is not None and st.st_dev != watch.device:
                watched = False
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            checks.append((directory, _stamp(st)))
            listing = self._listing(directory, st, real_root)
            if listing is None:
                continue
            listings[directory] = listing
            folders[relative] = [*listing.folders, *listing.files]
            prefix = f"{relative}/" if relative else ""
            for name in listing.files:
                path = f"{directory}{os.sep}{name}"
                if watch is not None and not watch.add(path):
                    watched = False
                try:
                    file_st = os.stat(path)  # noqa: PTH116
                except OSError:
                    continue
                files[prefix + name] = (path, file_st)
                checks.append((path, _stamp(file_st)))
            pending.extend(
                (f"{directory}{os.sep}{name}", prefix + name) for name in listing.folders
            )
        self._listings = listings
        return _Tree(files, folders, checks, watched)

    def _listing(self, directory: str, st: os.stat_result, real_root: Path) -> _Listing | None:
        stamp = _stamp(st)
        known = self._listings.get(directory)
        if known is not None and known.stamp == stamp and not known.racy:
            return known
        taken = time.time_ns()
        try:
            files, folders = _visible_children(directory, real_root)
        except OSError:
            return None
        return _Listing(stamp, taken - st.st_mtime_ns < _RACY_NS, files, folders)

    def digest(
        self, path: str, st: os.stat_result, relative: str, skills_dir: Path, max_bytes: int
    ) -> str:
        """The ``sha256:`` digest of the file at `path` (``<skill>/<path>`` is `relative`),
        read and hashed again only when its stamp `st` changed.

        Raises:
            StdToolsError: a link leads outside the skills folder, or over the limit.
            OSError: the file cannot be read.
        """
        known = self._digests.get(path)
        if known is not None and known.stamp == _stamp(st) and not known.racy:
            return known.digest
        taken = time.time_ns()
        data = _read_file(skills_dir, relative, relative, max_bytes)
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self.remember(path, _stamp(st), taken, digest)
        return digest

    def remember(self, path: str, stamp: _Stamp, taken: int, digest: str) -> None:
        """Keep the digest of the bytes read at `taken` from a file with `stamp`."""
        self._digests[path] = _Digest(stamp, taken - stamp[0] < _RACY_NS, digest)

    def keep_only(self, paths: Iterable[str]) -> None:
        """Forget the digests of files other than `paths` (removed or renamed files)."""
        kept = set(paths)
        if len(kept) != len(self._digests):
            self._digests = {p: d for p, d in self._digests.items() if p in kept}


def _read_file(skills_dir: Path, relative: str, shown: str, max_bytes: int) -> bytes:
    """The bytes of `relative` (``<skill>/<path>``, as a listing names it), read through the
    one I/O layer of std-tools (`_io`): a link on the way is followed only while it stays
    inside the skills folder, the file is checked on its open descriptor (a regular file,
    at most `max_bytes`), exactly as the five tools read.

    Raises:
        UnknownResourceError: nothing is there, or a folder is.
        StdToolsError: a link leads outside, not a regular file, over the limit.
        OSError: the file cannot be read.
    """
    gone = UnknownResourceError(f"{shown} is not a file of the skill (any more).")
    _, data, _ = _io.read_bytes(
        skills_dir,
        relative,
        what=shown,
        shown=shown,
        limit=max_bytes,
        missing=gone,
        folder=gone,
        exact=True,
    )
    return data


# --- Frontmatter ------------------------------------------------------------------------


def _json_problem(value: Any, where: str) -> str | None:
    """Why `value` cannot be carried verbatim as JSON, or None when it can."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value}, which JSON cannot carry"
    if isinstance(value, list):
        for index, item in enumerate(value):
            if (problem := _json_problem(item, f"{where}[{index}]")) is not None:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where} has the key {key!r}, which is not text"
            if (problem := _json_problem(item, f"{where}.{key}")) is not None:
                return problem
        return None
    return f"{where} is a YAML {type(value).__name__}, which JSON cannot carry"


def _check_publishable(fields: Mapping[str, Any], name: str) -> SkillDiagnostic | None:
    """The first reason why these frontmatter fields cannot be published, or None."""
    for key, value in fields.items():
        if (problem := _json_problem(value, f"'{key}'")) is not None:
            return SkillDiagnostic(
                name,
                "warning",
                "frontmatter_not_json",
                f"In SKILL.md frontmatter, {problem}; write it as text, a number, true/false, "
                "a list or a mapping so the frontmatter can be published verbatim.",
            )
    if not isinstance(fields.get("description"), str):
        return SkillDiagnostic(
            name,
            "warning",
            "invalid_description",
            "'description' is not text; write it as one line of text (quote it if it looks "
            "like a number) so that the MCP Skills extension can publish the skill.",
        )
    tools = fields.get("allowed-tools", "")
    if not (
        isinstance(tools, str)
        or (isinstance(tools, list) and all(isinstance(t, str) for t in tools))
    ):
        return SkillDiagnostic(
            name,
            "warning",
            "invalid_allowed_tools",
            "'allowed-tools' is neither text nor a list of text; write it as a "
            "space-separated line of tool names.",
        )
    for key, kind in (("license", str), ("compatibility", str), ("metadata", dict)):
        if key in fields and not isinstance(fields[key], kind):
            code = f"invalid_{key}"
            return SkillDiagnostic(
                name,
                "warning",
                code,
                f"'{key}' is a YAML {type(fields[key]).__name__}; the Agent Skills "
                f"specification wants {'a mapping' if kind is dict else 'text'}, so the MCP "
                "Skills extension cannot publish the skill as written.",
            )
    return None


# --- The publisher ----------------------------------------------------------------------


@dataclass(slots=True)
class _Shape:
    """What is known about one skill folder before any file is hashed."""

    folder: Path
    tree: _Tree
    frontmatter: dict[str, Any] | None
    problem: SkillDiagnostic | None


@dataclass(slots=True)
class _Remembered:
    """Everything remembered about one skill folder."""

    files: _SkillFiles = field(default_factory=_SkillFiles)
    # The catalog record last checked, with its frontmatter as JSON and why it cannot be
    # published (None when it can).
    frontmatter: tuple[SkillRecord, dict[str, Any] | None, SkillDiagnostic | None] | None = None
    published: tuple[tuple[Any, ...], PublishedSkill] | None = None
    # The outcome of the last publication under one size limit, with the stamps it was
    # built from and whether any of them was too recent to be trusted.
    last: _Last | None = None
    checks: list[tuple[str, _Stamp]] = field(default_factory=list)
    # True while the kernel watches every path of the last walk and no event came since.
    watched: bool = False


@dataclass(frozen=True, slots=True)
class _Last:
    record: SkillRecord
    max_bytes: int
    checks: list[tuple[str, _Stamp]]
    outcome: PublishedSkill | SkillDiagnostic
    recent: bool


def _unchanged(checks: list[tuple[str, _Stamp]]) -> bool:
    """True when every path still has its stamp (one ``stat`` each, nothing read)."""
    for path, stamp in checks:
        try:
            st = os.stat(path)  # noqa: PTH116
        except OSError:
            return False
        if (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino) != stamp:
            return False
    return True


class SkillPublisher:
    """Publishes the catalog of the five tools for the MCP Skills extension.

    One instance serves every skills folder of the process and is safe to share between
    threads; the calls that may read files are meant for a worker thread.
    """

    def __init__(
        self,
        *,
        watch: bool = True,
        page_skills: int = MAX_PAGE_SKILLS,
        page_resources: int = MAX_PAGE_RESOURCES,
    ) -> None:
        """Start with nothing remembered. With `watch` (the default), the kernel reports
        changes where it can (see `watch`); without, every call compares ``stat`` stamps.
        A page holds at most `page_skills` skills and stops growing at `page_resources`
        files (it always holds one skill)."""
        self._page_skills = page_skills
        self._page_resources = page_resources
        self._lock = threading.Lock()
        self._folders: dict[str, _Remembered] = {}
        self._reported: set[SkillDiagnostic] = set()
        self._watching = watch
        # Opened on first use, so that building a server opens no inotify instance.
        self._watch: FolderWatch | None = None
        # Pages built while every skill on them was watched, by cursor: valid as long as
        # the kernel reports nothing and the catalog is the same object.
        self._pages: dict[str | None, tuple[Catalog, int, Page]] = {}
        self._order: tuple[Catalog, list[tuple[str, SkillRecord]]] | None = None

    def clear(self) -> None:
        """Forget everything; the next call walks and hashes every skill again."""
        with self._lock:
            self._folders.clear()
            self._pages.clear()

    def page(self, settings: Settings, cursor: str | None = None) -> Page:
        """The ``skills/list`` page that starts after `cursor` (None: the first page).

        Only the skills of this page are checked and, where they changed, hashed again.

        Raises:
            InvalidCursorError: `cursor` was not handed out by this method.
        """
        after = None if cursor is None else _decode_cursor(cursor)
        with self._lock:
            quiet = self._take_events()
            catalog = actions.scan(settings)
            max_bytes = settings.max_file_size_bytes
            known = self._pages.get(cursor) if quiet else None
            if known is not None and known[0] is catalog and known[1] == max_bytes:
                return known[2]  # the kernel reported no change in any skill of this page
            real_root = settings.skills_dir.resolve()
            blocked = {d.skill: d for d in catalog.diagnostics if d.code in _UNPUBLISHABLE_WARNINGS}
            left_out = (
                [] if after is not None else [d for d in catalog.diagnostics if d.level == "error"]
            )
            entries: list[dict[str, Any]] = []
            listed = 0
            following: str | None = None
            last_uri = ""
            if self._order is None or self._order[0] is not catalog:
                by_uri = sorted((file_uri(r.name, SKILL_FILE), r) for r in catalog.skills)
                self._order = (catalog, by_uri)
            all_watched = self._watch is not None and self._watch.active
            for uri, record in self._order[1]:
                if after is not None and uri <= after:
                    continue
                if len(entries) >= self._page_skills:
                    following = _encode_cursor(last_uri)
                    break
                outcome = (
                    blocked.get(record.name)
                    or self._unchanged_outcome(record, max_bytes)
                    or self._publish_one(record, settings, real_root)
                )
                if all_watched and record.name not in blocked:
                    folder = self._folders.get(str(record.directory))
                    all_watched = folder is not None and folder.watched
                if isinstance(outcome, SkillDiagnostic):
                    left_out.append(outcome)
                elif entries and listed + len(outcome.files) > self._page_resources:
                    following = _encode_cursor(last_uri)
                    break
                else:
                    entries.append(outcome.entry)
                    listed += len(outcome.files)
                last_uri = uri
            if after is None and len(self._folders) > len(catalog.skills):
                present = {str(r.directory) for r in catalog.skills}
                self._folders = {k: v for k, v in self._folders.items() if k in present}
            self._report(left_out)
            page = Page(entries, following, left_out)
            if all_watched:
                self._pages[cursor] = (catalog, max_bytes, page)
            return page

    def _take_events(self) -> bool:
        """Mark the skill folders the kernel reported a change in as to be walked again;
        True when the kernel watches and reported nothing at all."""
        if self._watch is None:
            self._watch = FolderWatch(enabled=self._watching)
        if not self._watch.active:
            self._pages.clear()
            return False
        changed = self._watch.changed()
        if not changed:
            return True
        self._pages.clear()
        if EVERYTHING in changed:
            for remembered in self._folders.values():
                remembered.watched = False
            return False
        for key in changed:
            if (folder := self._folders.get(key)) is not None:
                folder.watched = False
        return False

    def _report(self, left_out: list[SkillDiagnostic]) -> None:
        for diagnostic in left_out:
            if diagnostic not in self._reported:
                self._reported.add(diagnostic)
                logger.info(
                    "skill %r is not published by the MCP Skills extension: %s (%s)",
                    diagnostic.skill,
                    diagnostic.code,
                    diagnostic.message,
                )

    def skill(self, settings: Settings, name: str) -> PublishedSkill | SkillDiagnostic | None:
        """One skill as published now (hashing only its files); a diagnostic when it is
        left out; None when the catalog has no such skill."""
        with self._lock:
            self._take_events()
            record, diagnostic = self._record(settings, name)
            if record is None:
                return diagnostic
            return self._publish_one(record, settings, settings.skills_dir.resolve())

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
        `read_published`).

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
        catalog = actions.scan(settings)
        record = catalog.get(name)
        if record is None:
            return None, None
        for diagnostic in catalog.diagnostics:
            if diagnostic.skill == name and diagnostic.code in _UNPUBLISHABLE_WARNINGS:
                return None, diagnostic
        return record, None

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
        watching: _Watching | None = None,
    ) -> _Shape:
        tree = remembered.files.tree(record.directory, real_root, watching)
        found = tree.files.get(SKILL_FILE)
        if found is None:
            gone = _unreadable(record.name, SKILL_FILE, "it is gone or leads elsewhere")
            return _Shape(record.directory, tree, None, gone)
        checked = remembered.frontmatter
        if checked is None or checked[0] is not record:
            checked = remembered.frontmatter = (record, *_frontmatter_of(record))
        _, fields, problem = checked
        if problem is None:
            problem = _limits_problem(record.name, tree, settings.max_file_size_bytes)
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
        if not last.recent and _unchanged(last.checks):
            return last.outcome
        return None

    def _publish_one(
        self, record: SkillRecord, settings: Settings, real_root: Path
    ) -> PublishedSkill | SkillDiagnostic:
        known = self._unchanged_outcome(record, settings.max_file_size_bytes)
        if known is not None:
            return known
        remembered = self._remembered(record)
        taken = time.time_ns()
        outcome = self._publish_walked(remembered, record, settings, real_root)
        checks = remembered.checks
        recent = any(taken - stamp[0] < _RACY_NS for _, stamp in checks)
        remembered.last = _Last(record, settings.max_file_size_bytes, checks, outcome, recent)
        return outcome

    def _publish_walked(
        self, remembered: _Remembered, record: SkillRecord, settings: Settings, real_root: Path
    ) -> PublishedSkill | SkillDiagnostic:
        watch = self._watch
        device = None if watch is None else watch.covers(real_root)
        watching = (
            None
            if watch is None or device is None
            else _Watching(watch, str(record.directory), device)
        )
        shape = self._shape(remembered, record, settings, real_root, watching)
        remembered.checks = shape.tree.checks
        remembered.watched = shape.tree.watched
        if shape.problem is not None:
            return shape.problem
        files: list[PublishedFile] = []
        hasher = remembered.files
        max_bytes = settings.max_file_size_bytes
        for relative, (path, st) in sorted(shape.tree.files.items()):
            if relative == SKILL_FILE and record.digest is not None and record.size is not None:
                # The bytes the catalog parsed the frontmatter from: the two always agree.
                files.append(PublishedFile(SKILL_FILE, record.size, record.digest))
                continue
            try:
                digest = hasher.digest(
                    path,
                    st,
                    f"{record.directory.name}/{relative}",
                    record.directory.parent,
                    max_bytes,
                )
            except (OSError, StdToolsError) as exc:
                return _unreadable(record.name, relative, str(exc))
            files.append(PublishedFile(relative, st.st_size, digest))
        hasher.keep_only(path for path, _ in shape.tree.files.values())
        key = (id(shape.frontmatter), *files)
        known = remembered.published
        if known is not None and known[0] == key:
            return known[1]
        assert shape.frontmatter is not None
        published = PublishedSkill(record.name, shape.frontmatter, tuple(files))
        remembered.published = (key, published)
        return published


def _frontmatter_of(record: SkillRecord) -> tuple[dict[str, Any] | None, SkillDiagnostic | None]:
    """The frontmatter the catalog parsed for `record`, and why it cannot be published."""
    if record.frontmatter is None or record.digest is None:
        return None, _unreadable(record.name, SKILL_FILE, "the catalog kept no frontmatter")
    fields = dict(record.frontmatter)
    return fields, _check_publishable(fields, record.name)


def _limits_problem(name: str, tree: _Tree, max_bytes: int) -> SkillDiagnostic | None:
    if len(tree.files) > MAX_SKILL_FILES:
        return SkillDiagnostic(
            name,
            "warning",
            "too_many_files",
            f"The skill holds {len(tree.files)} files, more than the {MAX_SKILL_FILES} the MCP "
            "Skills extension allows; move material the skill does not need elsewhere.",
        )
    total = sum(st.st_size for _, st in tree.files.values())
    if total > MAX_SKILL_BYTES:
        return SkillDiagnostic(
            name,
            "warning",
            "skill_too_large",
            f"The skill's files add up to {total} bytes, more than the {MAX_SKILL_BYTES} "
            "(16 MiB) the MCP Skills extension allows; move large files elsewhere.",
        )
    for relative, (_, st) in sorted(tree.files.items()):
        if st.st_size > max_bytes:
            return SkillDiagnostic(
                name,
                "warning",
                "file_too_large",
                f"{relative} is {st.st_size} bytes, more than the {max_bytes} bytes "
                "DPTTOOLS_MAX_FILE_SIZE_MB allows; the tools cannot read it, so the skill is "
                "not published. Shrink the file or raise that limit.",
            )
    return None


def _unreadable(name: str, relative: str, reason: str) -> SkillDiagnostic:
    return SkillDiagnostic(
        name,
        "warning",
        "unreadable_file",
        f"{relative} of the skill could not be read ({reason}); the skill is not published "
        "until every file of it can be read.",
    )


def _not_served(uri: SkillUri, reason: str) -> UnknownResourceError:
    shown = file_uri(uri.skill, uri.relative)
    return UnknownResourceError(
        f"No resource is served at {shown}: {reason}. Call skills/list for the published "
        "skills and the URIs of their files."
    )


def read_published(folder: Path, relative: str, shown: str, max_bytes: int) -> str | bytes:
    """The exact content of the file at `relative` in the skill `folder`, read now: text
    when it is UTF-8 without NUL in its first 8 KiB (what load_skill_resource shows as
    text), else bytes. Links are followed inside the folder that holds the skill.

    Raises:
        UnknownResourceError: the file is gone or is no longer a regular file.
        StdToolsError: it grew over DPTTOOLS_MAX_FILE_SIZE_MB, or a link on its path now
            leads outside the skills folder.
    """
    data = _read_file(folder.parent, f"{folder.name}/{relative}", shown, max_bytes)
    if _io.is_binary(data):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data
