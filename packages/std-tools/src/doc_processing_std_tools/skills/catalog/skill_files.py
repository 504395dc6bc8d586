"""The files of one published skill: the walk of its folder, their digests, and a read.

Data flow: a skill folder -> `SkillFiles.tree` (every visible regular file and folder,
each with its ``stat`` stamp; what the tools' rules skip is left out: hidden names,
``__pycache__``, ``node_modules``, symbolic links leading outside the skills folder,
anything that is not a regular file or folder) -> `SkillFiles.digest` for each file (the
SHA-256 of its bytes, read through the one I/O layer, `_io`, by the tools' rules:
`SkillReader`); `read_published` reads one file back for ``resources/read``.

Everything is remembered by ``stat`` stamps (modification and change times, size, inode),
so a file is read again only when its stamp changed. A stamp taken within moments of its
file's last write is not trusted on the next call (`RACY_NS`), because coarse file-system
clocks could hide a second edit in the same tick.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Generic, Self, TypeVar

from ... import _io
from ..._text import wire_safe
from ...errors import InvalidArgumentError, StdToolsError
from ...paths import is_inside
from .scan import is_hidden_name
from .uris import UnknownResourceError
from .watch import FolderWatch

__all__ = [
    "RACY_NS",
    "ParentFolders",
    "PublishedFile",
    "SkillFiles",
    "SkillReader",
    "Stamp",
    "Tree",
    "Watching",
    "read_published",
    "stamp_of",
    "unchanged",
]

RACY_NS: Final = 100_000_000
"""A stamp taken this close (ns) to its file's last modification is not trusted later."""

Stamp = tuple[int, int, int, int]
"""What a file is recognised by: (mtime_ns, ctime_ns, size, inode)."""

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def stamp_of(st: os.stat_result) -> Stamp:
    """The stamp of a ``stat`` result."""
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def unchanged(checks: Iterable[tuple[str, Stamp]]) -> bool:
    """True when every path still has its stamp (one ``stat`` each, nothing read)."""
    for path, stamp in checks:
        try:
            st = os.stat(path)  # noqa: PTH116
        except OSError:
            return False
        if (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino) != stamp:
            return False
    return True


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
class Tree:
    """Every visible file and folder of a skill folder, as one walk found them."""

    files: dict[str, tuple[str, os.stat_result]]
    """Relative path (``/``-separated) -> (absolute path, its ``stat``)."""
    folders: dict[str, tuple[str, ...]]
    """Relative folder ("" for the skill's own) -> its visible children's names."""
    checks: list[tuple[str, Stamp]]
    """Every folder and file walked, with its stamp: what a later call compares."""
    watched: bool = False
    """True when every folder and file was watched (by inotify) before it was read."""


@dataclass(frozen=True, slots=True)
class Watching:
    """The kernel watch to put on every path of one skill folder's walk."""

    watch: FolderWatch
    """The publisher's watch."""
    key: str
    """Whom the watches belong to: the skill folder's path."""
    device: int
    """The skills folder's device; a path on another one cannot be vouched for."""

    def add(self, path: str) -> bool:
        """Watch `path`; False when it cannot be watched."""
        return self.watch.watch(path, self.key)


# The visible children of one folder, remembered under the folder's stamp: (stamp, racy,
# file names, folder names). A plain tuple of plain values, which the garbage collector
# stops tracking: a walk of thousands of skills keeps one per folder.
_Listing = tuple[Stamp, bool, tuple[str, ...], tuple[str, ...]]


@dataclass(slots=True)
class _Digest:
    stamp: Stamp
    racy: bool
    digest: str
    # True once a persistent index holds this very digest and stamp.
    stored: bool = False


def _visible_children(
    directory: str, real_root: Path, everything: bool = False
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Names of the regular files and folders in `directory` that the tools' rules show
    (with `everything`, hidden names, ``__pycache__`` and ``node_modules`` too)."""
    files: list[str] = []
    folders: list[str] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            name = entry.name
            if (not everything and is_hidden_name(name)) or name != wire_safe(name):
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
    # Tuples of text: the garbage collector stops tracking them, and there are many.
    return tuple(sorted(files)), tuple(sorted(folders))


class SkillFiles:
    """Walks one skill folder and hashes its files, remembering both by ``stat`` stamps.

    Not thread-safe: the publisher serialises every call.
    """

    __slots__ = ("_digests", "_everything", "_listings")

    def __init__(self, *, everything: bool = False) -> None:
        """Start with nothing remembered. With `everything`, the walk leaves out nothing
        the tools' rules hide (hidden names, ``__pycache__``, ``node_modules``): what the
        skills lock covers, since a locked script can import from any of them."""
        self._listings: dict[str, _Listing] = {}
        self._digests: dict[str, _Digest] = {}
        self._everything = everything

    def tree(self, folder: Path, real_root: Path, watch: Watching | None = None) -> Tree:
        """The visible files and folders of `folder`; a folder reached twice (through a
        link) is walked once. With `watch`, every path is watched before it is read."""
        watched = watch is not None
        files: dict[str, tuple[str, os.stat_result]] = {}
        folders: dict[str, tuple[str, ...]] = {}
        seen: set[tuple[int, int]] = set()
        pending: list[tuple[str, str]] = [(str(folder), "")]
        listings: dict[str, _Listing] = {}
        checks: list[tuple[str, Stamp]] = []
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
            checks.append((directory, stamp_of(st)))
            listing = self._listing(directory, st, real_root)
            if listing is None:
                continue
            listings[directory] = listing
            _, _, file_names, folder_names = listing
            folders[relative] = folder_names + file_names
            prefix = f"{relative}/" if relative else ""
            for name in file_names:
                path = f"{directory}{os.sep}{name}"
                if watch is not None and not watch.add(path):
                    watched = False
                try:
                    file_st = os.stat(path)  # noqa: PTH116
                except OSError:
                    continue
                files[prefix + name] = (path, file_st)
                checks.append((path, stamp_of(file_st)))
            for name in folder_names:
                pending.append((f"{directory}{os.sep}{name}", prefix + name))
        self._listings = listings
        return Tree(files, folders, checks, watched)

    def _listing(self, directory: str, st: os.stat_result, real_root: Path) -> _Listing | None:
        stamp = stamp_of(st)
        known = self._listings.get(directory)
        if known is not None and known[0] == stamp and not known[1]:
            return known
        taken = time.time_ns()
        try:
            files, folders = _visible_children(directory, real_root, self._everything)
        except OSError:
            return None
        return (stamp, taken - st.st_mtime_ns < RACY_NS, files, folders)

    def known(self, path: str, st: os.stat_result) -> str | None:
        """The digest remembered for the file at `path` when its stamp is still `st`'s."""
        known = self._digests.get(path)
        if known is not None and not known.racy and known.stamp == stamp_of(st):
            return known.digest
        return None

    def digest(
        self,
        path: str,
        st: os.stat_result,
        relative: str,
        reader: SkillReader,
        stored: tuple[Stamp, str] | None = None,
    ) -> str:
        """The ``sha256:`` digest of the file at `path` (`relative` in the skill folder),
        hashed again only when its stamp changed or was too recent to be trusted; `reader`
        reads it when it must be. `stored` is what a persistent index holds for the file:
        taken, unread, only when the file still has exactly that stamp.

        Raises:
            StdToolsError: a link leads outside the skills folder, or over the limit.
            OSError: the file cannot be read.
        """
        known = self.known(path, st)
        if known is not None:
            return known
        stamp = stamp_of(st)
        if stored is not None and stored[0] == stamp:
            # The index keeps only stamps that were old enough to trust when hashed; any
            # write since would have moved the change time.
            self._digests[path] = _Digest(stamp, False, stored[1], stored=True)
            return stored[1]
        taken = time.time_ns()
        digest = "sha256:" + hashlib.sha256(reader.read(relative)).hexdigest()
        self.remember(path, stamp, taken, digest)
        return digest

    def remember(self, path: str, stamp: Stamp, taken: int, digest: str) -> None:
        """Keep the digest of the bytes read at `taken` from a file with `stamp`."""
        self._digests[path] = _Digest(stamp, taken - stamp[0] < RACY_NS, digest)

    def to_store(self) -> dict[str, tuple[Stamp, str]]:
        """The trusted digests no persistent index holds yet, marked as held from now on
        (the caller stores them): path -> (stamp, digest)."""
        found: dict[str, tuple[Stamp, str]] = {}
        for path, known in self._digests.items():
            if not known.stored and not known.racy:
                known.stored = True
                found[path] = (known.stamp, known.digest)
        return found

    def keep_only(self, paths: Iterable[str]) -> list[str]:
        """Forget the digests of files other than `paths` (removed or renamed files);
        the paths forgotten."""
        kept = set(paths)
        gone = [p for p in self._digests if p not in kept]
        for path in gone:
            del self._digests[path]
        return gone


_Key = TypeVar("_Key")


class _Descriptors(Generic[_Key]):
    """Folder descriptors opened on first use and closed together: a context manager."""

    __slots__ = ("_fds",)

    def __init__(self) -> None:
        self._fds: dict[_Key, int | None] = {}

    def __enter__(self) -> Self:
        """Open nothing yet: each folder is opened on its first use."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close every folder opened."""
        for fd in self._fds.values():
            if fd is not None:
                os.close(fd)
        self._fds.clear()


class ParentFolders(_Descriptors[Path]):
    """Descriptors of the folders that hold skills, opened once through `_io` and shared
    by the `SkillReader` of every skill in them; a context manager that closes them."""

    __slots__ = ()

    def fd(self, parent: Path) -> int | None:
        """A descriptor of `parent` (as `_io` opens a root), or None when it cannot be
        opened."""
        if parent not in self._fds:
            fd: int | None = None
            try:
                with _io.locate(parent, ".", what="skills folder", allow_root=True) as location:
                    fd = _io.open_folder(location)
            except (OSError, StdToolsError):
                fd = None
            self._fds[parent] = fd
        return self._fds[parent]


class SkillReader(_Descriptors[str]):
    """Reads the files of one skill folder for hashing, by the tools' rules, cheaply.

    The skill folder is opened once through `_io` (`_io.locate`, `_io.open_folder`), each
    folder below it once, relative to its parent and without following a link
    (``O_NOFOLLOW``); each file is then opened by `_io.read_at` on its folder's
    descriptor, which refuses a link and checks the open file (a regular file, under the
    limit). Where a link stands on the way, the file is read by `_io.read_bytes` instead,
    which walks the whole path and follows a link only while it stays inside the folder
    that holds the skill. Either way no link leads the read outside. Use it as a context
    manager: it closes the folders it opened.
    """

    __slots__ = ("_limit", "_name", "_parents", "_root")

    def __init__(self, folder: Path, limit: int, parents: ParentFolders | None = None) -> None:
        """Read from the skill `folder` (absolute), no file over `limit` bytes; `parents`
        shares the descriptor of the folder that holds it with other readers."""
        super().__init__()
        self._root = folder.parent
        self._name = folder.name
        self._limit = limit
        self._parents = parents

    def _folder_fd(self, relative: str) -> int | None:
        """A descriptor of the folder `relative` ("" for the skill's own) when no link
        stands on the way below the skill folder, else None."""
        if relative in self._fds:
            return self._fds[relative]
        fd: int | None = None
        try:
            if not relative:
                fd = self._skill_fd()
            else:
                parent, _, name = relative.rpartition("/")
                above = self._folder_fd(parent)
                if above is not None:
                    fd = os.open(name, _DIR_FLAGS, dir_fd=above)
        except (OSError, StdToolsError):
            fd = None
        self._fds[relative] = fd
        return fd

    def _skill_fd(self) -> int:
        """A descriptor of the skill folder: opened without following a link in the
        shared parent folder, else by `_io`'s walk (which follows a link inside it)."""
        parent = None if self._parents is None else self._parents.fd(self._root)
        if parent is not None:
            with contextlib.suppress(OSError):
                return os.open(self._name, _DIR_FLAGS, dir_fd=parent)
        with _io.locate(self._root, self._name, what="skill", exact=True) as location:
            return _io.open_folder(location)

    def read(self, relative: str) -> bytes:
        """The bytes of the file at `relative` (``/``-separated) in the skill folder.

        Raises:
            UnknownResourceError: nothing is there, or a folder is.
            StdToolsError: a link leads outside, not a regular file, over the limit.
            OSError: the file cannot be read.
        """
        shown = f"{self._name}/{relative}"
        where, _, name = relative.rpartition("/")
        fd = self._folder_fd(where)
        if fd is not None:
            gone = UnknownResourceError(f"{shown} is not a file of the skill (any more).")
            try:
                data, _ = _io.read_at(
                    _io.Location(self._root, fd, name),
                    shown=shown,
                    limit=self._limit,
                    missing=gone,
                    folder=gone,
                )
            except InvalidArgumentError:
                pass  # a link (or no regular file): the full walk follows or refuses it
            else:
                return data
        return _read_file(self._root, shown, shown, self._limit)


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
