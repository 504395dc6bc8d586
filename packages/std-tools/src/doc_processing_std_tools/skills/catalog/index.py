"""The persistent catalog index: what earlier processes learned about a skills folder.

A server process that starts on a folder of thousands of skills would otherwise read and
parse every SKILL.md (and, for the MCP Skills extension, hash every file) before its first
answer. The index keeps, per skills folder, what those reads found: each skill's record
(frontmatter fields and the SKILL.md digest), its diagnostics, and the digests of the
skill's files, every one with the ``stat`` stamp (modification and change times, size,
inode) of the file it came from. A later process takes an entry only when the file still
has that stamp, so a change made while no server ran is seen like any other; a stamp taken
within moments of its file's last write is never stored, because coarse clocks could hide a
second edit in the same tick.

The cache folder must belong to the server's user and be writable by no one else, and
neither it nor the database may be a link: otherwise no index is used (a WARNING says
why), since whoever can write there could plant a database of made-up entries or a link
that the database would be created through.

Storage: one SQLite database per skills folder under the cache folder
(``DPTTOOLS_CACHE_DIR``, by default the platform's user cache folder), named after a hash
of the folder's real path and holding that path, so two folders never share entries.
SQLite's own locking lets several processes (HTTP replicas, several hosts) read and write
one index at once. An index that cannot be opened, is damaged, belongs to another folder
or was written by another format version is deleted and built anew, never trusted; a cache
folder that cannot be written means no index (one WARNING per folder and process) and
changes nothing but speed. Nothing here ever raises to the caller.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import stat
import sys
import threading
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from ..audit.skill_audit import FileAudit, Stamps
from ..core.records import SKILL_FILE, SkillDiagnostic, SkillRecord, StoredFields, StoredText
from .discovery import Stamp

__all__ = [
    "FORMAT",
    "IndexedSkill",
    "RootIndex",
    "index_file",
    "open_index",
    "packed",
]

logger = logging.getLogger(__name__)

FORMAT: Final = 8
"""The layout of the index, and of what `reading.read_skill` gives for a file: raise it
whenever either changes (a new diagnostic, a new record field), so that no entry read by
older code is used. An index of any other format is rebuilt."""

_BUSY_MS: Final = 2_000
_DECODER: Final = json.JSONDecoder()
_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS skills ("
    " folder TEXT NOT NULL, max_bytes INTEGER NOT NULL,"
    " mtime INTEGER NOT NULL, ctime INTEGER NOT NULL, size INTEGER NOT NULL,"
    " ino INTEGER NOT NULL, entry TEXT NOT NULL, packed BLOB NOT NULL,"
    " PRIMARY KEY (folder, max_bytes))",
    "CREATE TABLE IF NOT EXISTS files ("
    " path TEXT PRIMARY KEY, mtime INTEGER NOT NULL, ctime INTEGER NOT NULL,"
    " size INTEGER NOT NULL, ino INTEGER NOT NULL, digest TEXT NOT NULL)",
)

# Folders (cache folder, skills folder) already warned about in this process.
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class IndexedSkill:
    """What the index holds about one skill folder, valid while SKILL.md has `stamp`."""

    stamp: Stamp
    """The SKILL.md's stamp when it was read."""
    record: SkillRecord | None
    """The listed record, or None when the skill is left out (see `diagnostics`)."""
    diagnostics: tuple[SkillDiagnostic, ...]
    """Every diagnostic the read gave."""
    files: FileAudit | None = None
    """The audit of the skill's other files, valid while their own stamps hold."""


def index_file(cache_dir: Path, real_root: Path) -> Path:
    """The index database of the skills folder whose real path is `real_root`."""
    key = hashlib.sha256(os.fsencode(real_root)).hexdigest()[:32]
    return cache_dir / f"skills-{key}.sqlite3"


def _check_folder(cache_dir: Path) -> None:
    """Refuse a cache folder this process's user does not own, that others can write,
    or that is a link: whoever can write there could plant a link (which the database
    would be created through) or a database of made-up entries.

    Raises:
        PermissionError: the folder fails one of those checks (the message says which).
    """
    info = cache_dir.lstat()
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise PermissionError(f"{cache_dir} is a link or not a folder")
    if info.st_uid != os.geteuid():
        raise PermissionError(f"{cache_dir} belongs to another user (uid {info.st_uid})")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PermissionError(f"{cache_dir} can be written by other users (mode {info.st_mode:o})")


def _check_file(path: Path) -> None:
    """Remove the index file when it is a link, not a regular file, or not this user's
    own (it is then built anew): a link is never followed."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_nlink != 1:
        _remove(path)


def open_index(cache_dir: Path, real_root: Path) -> RootIndex | None:
    """The index of `real_root` under `cache_dir`, created or rebuilt as needed; None
    (after one WARNING for this pair in this process) when it cannot be had. The index is
    used only from a folder this user owns and no one else can write (`_check_folder`)."""
    path = index_file(cache_dir, real_root)
    try:
        cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        _check_folder(cache_dir)
    except OSError as exc:
        _warn_once(cache_dir, real_root, exc)
        return None
    try:
        _check_file(path)
        return RootIndex(_connect(path, real_root), path, real_root)
    except (OSError, sqlite3.Error) as first:
        logger.debug("skills index %s unusable (%s); building it anew", path, first)
    try:
        _remove(path)
        return RootIndex(_connect(path, real_root), path, real_root)
    except (OSError, sqlite3.Error) as exc:
        _warn_once(cache_dir, real_root, exc)
        return None


def _warn_once(cache_dir: Path, real_root: Path, exc: BaseException) -> None:
    key = (str(cache_dir), str(real_root))
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    logger.warning(
        "skills index: cannot use the cache folder %s (%s); the skills in %s are read "
        "without an index, so a new server process reads every SKILL.md again. Point "
        "DPTTOOLS_CACHE_DIR at a writable folder to keep the index, or set it to 'off'.",
        cache_dir,
        exc,
        real_root,
    )


def _remove(path: Path) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _connect(path: Path, real_root: Path) -> sqlite3.Connection:
    """An open, checked connection to the index at `path`.

    Raises:
        sqlite3.Error: the file is not a database of this layout and folder (damaged,
            foreign or of another format): the caller removes it and tries once more.
        OSError: the folder cannot be written.
    """
    connection = sqlite3.connect(
        path, timeout=_BUSY_MS / 1000, isolation_level=None, check_same_thread=False
    )
    try:
        connection.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            _create(connection, real_root)
            path.chmod(0o600)  # the skills' text is the user's own
        elif version != FORMAT:
            raise sqlite3.DatabaseError(f"index format {version}, this server reads {FORMAT}")
        row = connection.execute("SELECT value FROM meta WHERE key = 'root'").fetchone()
        if row is None or row[0] != str(real_root):
            raise sqlite3.DatabaseError("the index belongs to another skills folder")
    except BaseException:
        connection.close()
        raise
    return connection


def _create(connection: sqlite3.Connection, real_root: Path) -> None:
    """Lay out an empty index; a process that created it meanwhile wins harmlessly."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        if connection.execute("PRAGMA user_version").fetchone()[0] == 0:
            for statement in _SCHEMA:
                connection.execute(statement)
            connection.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('root', ?)", (str(real_root),)
            )
            connection.execute(f"PRAGMA user_version = {FORMAT}")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


class RootIndex:
    """The index of one skills folder. Safe to share between threads; every method
    swallows storage errors (logged at DEBUG): an index is only ever a shortcut."""

    def __init__(self, connection: sqlite3.Connection, path: Path, real_root: Path) -> None:
        """Wrap an open, checked connection (see `open_index`)."""
        self._connection = connection
        self._lock = threading.Lock()
        self._rebuilt = False
        self.path = path
        """The database file."""
        self.real_root = real_root
        """The real path of the skills folder it describes."""

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._connection.close()

    def skills(self, skills_dir: Path, max_bytes: int) -> dict[str, IndexedSkill]:
        """Every skill folder (relative, ``/``-separated) indexed for the SKILL.md size
        limit `max_bytes`, with records placed under `skills_dir` (the folder as
        configured, which may reach `real_root` through links)."""
        found: dict[str, IndexedSkill] = {}
        try:
            with self._lock:
                # Row by row: the whole table's text is never held at once.
                for folder, mtime, ctime, size, ino, text, packed in self._connection.execute(
                    "SELECT folder, mtime, ctime, size, ino, entry, packed FROM skills "
                    "WHERE max_bytes = ?",
                    (max_bytes,),
                ):
                    try:
                        found[folder] = _decode_skill(
                            skills_dir, folder, (mtime, ctime, size, ino), text, packed
                        )
                    except (ValueError, TypeError, KeyError, IndexError):
                        continue  # not written by this code: read the skill again
        except sqlite3.Error as exc:
            self._failed("read", exc)
            return {}
        return found

    def save_skills(
        self,
        max_bytes: int,
        changed: Mapping[str, IndexedSkill],
        removed: Iterable[str] = (),
    ) -> None:
        """Store `changed` entries and forget the skill folders `removed`."""
        rows = []
        for folder, skill in changed.items():
            encoded = _encode_skill(folder, skill)
            if encoded is not None:
                rows.append((folder, max_bytes, *skill.stamp, *encoded))
        gone = [(folder,) for folder in removed]
        if not rows and not gone:
            return
        self._write(
            [
                ("INSERT OR REPLACE INTO skills VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows),
                ("DELETE FROM skills WHERE folder = ?", gone),
            ]
        )

    def digests(self) -> dict[str, tuple[Stamp, str]]:
        """Every file digest indexed: absolute path -> (stamp, ``sha256:`` digest)."""
        try:
            with self._lock:
                rows = self._connection.execute(
                    "SELECT path, mtime, ctime, size, ino, digest FROM files"
                ).fetchall()
        except sqlite3.Error as exc:
            self._failed("read", exc)
            return {}
        return {
            path: ((mtime, ctime, size, ino), digest)
            for path, mtime, ctime, size, ino, digest in rows
            if isinstance(digest, str) and digest.startswith("sha256:") and len(digest) == 71
        }

    def save_digests(
        self, changed: Mapping[str, tuple[Stamp, str]], removed: Iterable[str] = ()
    ) -> None:
        """Store the digests of `changed` files and forget those of `removed` ones."""
        rows = [(path, *stamp, digest) for path, (stamp, digest) in changed.items()]
        gone = [(path,) for path in removed]
        if not rows and not gone:
            return
        self._write(
            [
                ("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)", rows),
                ("DELETE FROM files WHERE path = ?", gone),
            ]
        )

    def _write(self, statements: list[tuple[str, list[tuple[Any, ...]]]]) -> None:
        try:
            with self._lock:
                connection = self._connection
                connection.execute("BEGIN IMMEDIATE")
                try:
                    for sql, rows in statements:
                        if rows:
                            connection.executemany(sql, rows)
                    connection.execute("COMMIT")
                except BaseException:
                    connection.execute("ROLLBACK")
                    raise
        except sqlite3.Error as exc:
            self._failed("write", exc)

    def _failed(self, what: str, exc: sqlite3.Error) -> None:
        """After a failed read or write: busy past the timeout or a full disk costs this
        one use (the entries are read again next time); a damaged file (SQLite reads
        pages only when a query needs them, so damage shows here, not when opening) is
        removed and laid out anew, once per process."""
        logger.debug("skills index %s: cannot %s (%s)", self.path, what, exc)
        message = str(exc).lower()
        if isinstance(exc, sqlite3.OperationalError) and (
            "locked" in message or "busy" in message or "full" in message
        ):
            return
        with self._lock:
            if self._rebuilt:
                return
            self._rebuilt = True
            self._connection.close()
            try:
                _remove(self.path)
                self._connection = _connect(self.path, self.real_root)
            except (OSError, sqlite3.Error) as again:
                logger.debug("skills index %s: cannot lay it out anew (%s)", self.path, again)
                # A connection to nothing: every later use fails and costs only itself.
                self._connection = sqlite3.connect(":memory:", check_same_thread=False)


def packed(record: SkillRecord) -> SkillRecord:
    """`record` with its frontmatter and body start compressed as the index stores them
    (`records.StoredText`): a catalog that keeps an index holds them so from the first
    read, which both the index and the memory of 100,000 records gain from. A record
    whose frontmatter JSON cannot carry exactly (dates) is given back unchanged."""
    if isinstance(record.body, StoredText):
        return record
    frontmatter = dict(record.frontmatter) if record.frontmatter is not None else None
    try:
        if json.loads(json.dumps(frontmatter, allow_nan=False)) != frontmatter:
            return record
    except (TypeError, ValueError):
        return record
    stored = StoredText(StoredText.pack(frontmatter, record.body))
    return replace(record, frontmatter=StoredFields(stored), body=stored)


def _encode_skill(folder: str, skill: IndexedSkill) -> tuple[str, bytes] | None:
    """The stored form of `skill` (the compact JSON entry, and the frontmatter and body
    start compressed: `records.StoredText`), or None when it cannot be stored exactly
    (frontmatter with values JSON does not carry, such as dates: such a skill is read
    every time).

    The entry is a JSON array: ``[diagnostics, files, record]``. A diagnostic is
    ``[skill, level, code, message]`` with ``skill`` null for the skill's own folder;
    ``files`` is null or ``[names, stamps, diagnostics]`` (the stamps' numbers in one flat
    list, four per name; a diagnostic ``[code, message]``); ``record`` is null or
    ``[name, description, license, compatibility, metadata, digest, size]``.
    """
    record = skill.record
    diagnostics = [
        [None if d.skill == folder else d.skill, d.level, d.code, d.message]
        for d in skill.diagnostics
    ]
    files = None
    if skill.files is not None:
        files = [
            [name for name, _ in skill.files.stamps],
            [number for _, stamp in skill.files.stamps for number in stamp],
            [[d.code, d.message] for d in skill.files.diagnostics],
        ]
    fields = None
    packed = b""
    if record is not None:
        fields = [
            record.name,
            record.description,
            record.license,
            record.compatibility,
            record.metadata,
            record.digest,
            record.size,
        ]
        if isinstance(record.body, StoredText):
            packed = record.body.data  # read from the index: stored as it was
        else:
            frontmatter = dict(record.frontmatter) if record.frontmatter is not None else None
            try:
                if json.loads(json.dumps(frontmatter, allow_nan=False)) != frontmatter:
                    return None
            except (TypeError, ValueError):
                return None
            packed = StoredText.pack(frontmatter, record.body)
    entry = [diagnostics, files, fields]
    return json.dumps(entry, ensure_ascii=False, allow_nan=False, separators=(",", ":")), packed


def _text(value: Any) -> str:
    if type(value) is not str:
        raise TypeError("not text")
    return value


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _decode_skill(
    skills_dir: Path, folder: str, stamp: Stamp, text: str, packed: Any
) -> IndexedSkill:
    """An entry written by `_encode_skill`, its types checked field by field; the
    frontmatter and body start stay compressed until used (`records.StoredFields`).

    Raises:
        ValueError, TypeError, KeyError, IndexError: the entry is not one this code wrote.
    """
    entry = _DECODER.decode(text)
    if type(entry) is not list or len(entry) != 3:
        raise ValueError("not one JSON array of three")
    found, audit, fields = entry
    diagnostics = tuple(
        SkillDiagnostic(folder if where is None else _text(where), level, code, message)
        for where, level, code, message in found
        if level in ("warning", "error") and type(code) is str and type(message) is str
    )
    if len(diagnostics) != len(found):
        raise ValueError("a diagnostic of an unknown level or shape")
    files = None if audit is None else _decode_files(folder, audit)
    record = None
    if fields is not None:
        name, description, license_, compatibility, metadata, digest, size = fields
        if metadata is not None:
            if type(metadata) is not dict:
                raise TypeError("metadata is not a mapping of text")
            "".join(metadata.values())  # raises TypeError unless every value is text
        if type(size) is not int or size < 0:
            raise TypeError("size is not a count")
        if type(packed) is not bytes or not packed:
            raise TypeError("no stored frontmatter")
        stored = StoredText(packed)
        path = skills_dir / f"{folder}/{SKILL_FILE}"  # one parse: its parent is free
        record = SkillRecord(
            name=_text(name),
            description=_text(description),
            path=path,
            directory=path.parent,
            license=_optional_text(license_),
            compatibility=_optional_text(compatibility),
            metadata=metadata,
            root=skills_dir,
            folder=folder,
            frontmatter=StoredFields(stored),
            digest=_text(digest),
            size=size,
            body=stored,
        )
    return IndexedSkill(stamp, record, diagnostics, files)


def _decode_files(folder: str, audit: Any) -> FileAudit:
    """The audit of a skill's files as `_encode_skill` wrote it (see `_decode_skill`)."""
    names, numbers, found = audit
    if type(names) is not list or type(numbers) is not list or len(numbers) != 4 * len(names):
        raise TypeError("the stamps are not four numbers per name")
    # Names become paths: each must be text (join raises TypeError otherwise). A number
    # need not be checked: a stamp only ever counts when it equals one the disk gives.
    "".join(names)
    try:
        # The same few names ("scripts/", ...) recur in every skill: one string each.
        stamps: Stamps | tuple[tuple[str, Stamp], ...] = Stamps(
            tuple(sys.intern(name) for name in names), array("q", numbers)
        )
    except OverflowError:  # a number past 64 bits: kept as Python integers
        each = iter(numbers)
        stamps = tuple(zip(names, zip(each, each, each, each, strict=True), strict=True))
    diagnostics = tuple(
        SkillDiagnostic(folder, "warning", _text(code), _text(message)) for code, message in found
    )
    return FileAudit(stamps, diagnostics)
