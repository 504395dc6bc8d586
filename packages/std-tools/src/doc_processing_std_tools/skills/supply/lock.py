"""The skills lock: every file of every listed skill with its SHA-256 and size, and pinning.

``dpt-skills lock`` writes it (`build_lock`, `write_lock`) and ``--check`` compares it with
the disk (`compare`). With DPTTOOLS_SKILLS_LOCK set, the servers serve only skills whose
files match it (`Pinning.pin`): a skill that differs is left out with a ``lock_mismatch``
error, one the lock does not name with ``not_locked``, so no tool reaches either.

The lock covers every file of a skill: hidden names, ``__pycache__`` and
``node_modules`` too, since a locked script can import from any of them (links leading
out of the skills folder are never followed). Files are remembered by ``stat`` stamps, so
verifying a skill again costs a walk and hashes only the files that changed. A skill is
verified again whenever the catalog changed (a file edited, added or removed anywhere in
a skill changes it) or the lock file changed. Every file a tool reads is checked against
its locked digest after it is read, and the bytes checked are the bytes served
(`Pinning.check_bytes`); before a script runs, the script's bytes and every other file of
its skill are checked (`Pinning.check_script`).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from ... import _io
from ...errors import ConfigError, StdToolsError
from ..catalog.skill_files import SkillFiles, SkillReader, Stamp, stamp_of
from ..core.records import Catalog, SkillDiagnostic, SkillRecord

__all__ = [
    "LOCAL",
    "LOCK_FORMAT",
    "Change",
    "Pinning",
    "build_lock",
    "compare",
    "lock_entry",
    "read_lock",
    "skill_files",
    "write_lock",
]

LOCK_FORMAT: Final = 1
"""The ``format`` of the lock documents this version writes and reads."""

LOCAL: Final = "local"
"""The ``source`` of a skill whose origin is not known."""

SKILL_MD: Final = "SKILL.md"

Files = dict[str, tuple[str, int]]
"""Relative path (``/``-separated) -> (hexadecimal SHA-256, size in bytes)."""


@dataclass(frozen=True, slots=True)
class Change:
    """One skill whose files differ from the lock."""

    skill: str
    kind: str
    """``changed``, ``new`` (not in the lock) or ``missing`` (locked, not listed)."""
    files: tuple[str, ...] = ()
    """For ``changed``: the files edited, added or removed."""


def _real_root(record: SkillRecord) -> Path:
    root = record.root if record.root is not None else record.directory.parent
    return Path(os.path.realpath(root))


def skill_files(record: SkillRecord, max_bytes: int, hasher: SkillFiles | None = None) -> Files:
    """Every file of the skill with its digest and size, hidden ones, ``__pycache__`` and
    ``node_modules`` included (a locked script can import from any of them); `hasher`
    (made with ``everything=True``) remembers digests between calls.

    Raises:
        StdToolsError: a file is over `max_bytes`, or a link on its way leads outside.
        OSError: a file cannot be read.
    """
    hasher = SkillFiles(everything=True) if hasher is None else hasher
    tree = hasher.tree(record.directory, _real_root(record))
    found: Files = {}
    with SkillReader(record.directory, max_bytes) as reader:
        for relative, (path, st) in sorted(tree.files.items()):
            digest = hasher.digest(path, st, relative, reader)
            found[relative] = (digest.removeprefix("sha256:"), st.st_size)
    return found


def _entry(source: Any, folder: str, files: Files) -> dict[str, Any]:
    return {
        "source": source,
        "folder": folder,
        "files": {path: {"sha256": sha, "size": size} for path, (sha, size) in files.items()},
    }


def lock_entry(record: SkillRecord, max_bytes: int, source: Any = LOCAL) -> dict[str, Any]:
    """The lock entry of one skill: `source` (`LOCAL`, or what ``dpt-skills install``
    recorded), its folder and its files.

    Raises:
        StdToolsError: a file is over `max_bytes`, or a link on its way leads outside.
        OSError: a file cannot be read.
    """
    return _entry(source, record.folder, skill_files(record, max_bytes))


def build_lock(
    catalog: Catalog, max_bytes: int, sources: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """(the lock document of every listed skill, the problems that kept skills out).

    `sources` keeps where each skill came from (a previous lock's ``source``: the string
    `LOCAL` or the object ``dpt-skills install`` wrote); others are `LOCAL`.
    """
    skills: dict[str, Any] = {}
    problems: list[str] = []
    for record in catalog.skills:
        try:
            files = skill_files(record, max_bytes)
        except (OSError, StdToolsError) as exc:
            problems.append(f"{record.name}: {exc}")
            continue
        source = (sources or {}).get(record.name, LOCAL)
        skills[record.name] = _entry(source, record.folder, files)
    return {"format": LOCK_FORMAT, "skills": skills}, problems


def encode(document: dict[str, Any]) -> bytes:
    """The lock document as written: sorted keys, two-space indent, a final newline."""
    return (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def write_lock(path: Path, document: dict[str, Any]) -> None:
    """Write `document` to `path` atomically (readers see the old or the new lock)."""
    path = path.absolute()
    with _io.locate(path.parent, path.name, what="lock file", allow_missing=True) as location:
        _io.write_atomically(location, encode(document), mode=_io.new_file_mode())


def read_lock(path: Path) -> dict[str, dict[str, Any]]:
    """The skills of the lock at `path`: name -> {source, folder, files}.

    Raises:
        ConfigError: the file cannot be read or is not a lock of a known format.
    """
    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"The skills lock {path} cannot be read ({exc}); write it with dpt-skills lock."
        ) from None
    if not isinstance(document, dict) or document.get("format") != LOCK_FORMAT:
        raise ConfigError(
            f"The skills lock {path} is not a lock of format {LOCK_FORMAT}; write it again "
            "with dpt-skills lock."
        )
    skills = document.get("skills")
    if not isinstance(skills, dict) or not all(
        isinstance(entry, dict) and isinstance(entry.get("files"), dict)
        for entry in skills.values()
    ):
        raise ConfigError(f"The skills lock {path} has no valid 'skills' object.")
    return skills


def locked_files(entry: dict[str, Any]) -> Files:
    """The files of one lock entry, in the shape `skill_files` gives."""
    found: Files = {}
    for path, value in entry["files"].items():
        if isinstance(value, dict):
            found[str(path)] = (str(value.get("sha256")), int(value.get("size", -1)))
    return found


def differences(locked: Files, current: Files) -> tuple[str, ...]:
    """The files edited, added or removed between `locked` and `current`, sorted."""
    return tuple(
        sorted(
            path for path in locked.keys() | current.keys() if locked.get(path) != current.get(path)
        )
    )


def compare(locked: dict[str, dict[str, Any]], current: dict[str, Any]) -> list[Change]:
    """Every changed, new and missing skill of `current` (a `build_lock` document's
    ``skills``) against `locked`, by name."""
    changes: list[Change] = []
    for name in sorted(locked.keys() | current.keys()):
        if name not in current:
            changes.append(Change(name, "missing"))
        elif name not in locked:
            changes.append(Change(name, "new"))
        else:
            changed = differences(locked_files(locked[name]), locked_files(current[name]))
            if changed:
                changes.append(Change(name, "changed", changed))
    return changes


def _mismatch(record: SkillRecord, lock: Path, files: tuple[str, ...]) -> SkillDiagnostic:
    named = ", ".join(files[:5]) + (", ..." if len(files) > 5 else "")
    return SkillDiagnostic(
        record.folder,
        "error",
        "lock_mismatch",
        f"The files of the skill '{record.name}' differ from the skills lock {lock} "
        f"({named}), so it is left out. If the change is trusted, write the lock again "
        "(dpt-skills lock).",
    )


def _not_locked(record: SkillRecord, lock: Path) -> SkillDiagnostic:
    return SkillDiagnostic(
        record.folder,
        "error",
        "not_locked",
        f"The skill '{record.name}' is not named in the skills lock {lock}, so it is left "
        "out. If it is trusted, add it with dpt-skills lock.",
    )


class Pinning:
    """Serves only what the lock at one path allows; safe to share between threads."""

    def __init__(self, lock: Path) -> None:
        """Pin to the lock at `lock` (absolute), read on first use and whenever it changes."""
        self._path = lock
        self._mutex = threading.Lock()
        self._hasher = SkillFiles(everything=True)
        self._max_bytes = 0
        self._stamp: Stamp | None = None
        self._skills: dict[str, dict[str, Any]] = {}
        # The last catalog pinned and its pinned version, keyed by the catalog's identity:
        # the catalog object stays the same while nothing it read changed.
        self._last: tuple[Catalog, Catalog] | None = None

    def _load(self) -> None:
        try:
            stamp: Stamp | None = stamp_of(self._path.stat())
        except OSError:
            stamp = None
        if stamp is not None and stamp == self._stamp:
            return
        self._skills = read_lock(self._path)
        self._stamp = stamp
        self._last = None

    def peek(self, catalog: Catalog) -> Catalog | None:
        """The pinned `catalog` when it was pinned last and the lock is unchanged, else
        None (call `pin`): one ``stat`` of the lock, nothing read."""
        if not self._mutex.acquire(blocking=False):
            return None
        try:
            last = self._last
            if last is None or last[0] is not catalog:
                return None
            try:
                if stamp_of(self._path.stat()) != self._stamp:
                    return None
            except OSError:
                return None
            return last[1]
        finally:
            self._mutex.release()

    def pin(self, catalog: Catalog, max_bytes: int) -> Catalog:
        """`catalog` without the skills the lock does not allow, with their diagnostics."""
        with self._mutex:
            self._load()
            self._max_bytes = max_bytes
            last = self._last
            if last is not None and last[0] is catalog:
                return last[1]
            kept: list[SkillRecord] = []
            found: list[SkillDiagnostic] = []
            for record in catalog.skills:
                # A new catalog means something changed, maybe a file deep in a skill
                # whose SKILL.md did not: every skill is judged again (the hasher reads
                # only files whose stamps moved).
                problem = self._judge(record, max_bytes)
                if problem is None:
                    kept.append(record)
                else:
                    found.append(problem)
            if not found:
                pinned = catalog
            else:
                diagnostics = sorted((*catalog.diagnostics, *found), key=lambda d: d.skill)
                pinned = replace(catalog, skills=tuple(kept), diagnostics=tuple(diagnostics))
            self._last = (catalog, pinned)
            return pinned

    def _judge(self, record: SkillRecord, max_bytes: int) -> SkillDiagnostic | None:
        entry = self._skills.get(record.name)
        if entry is None:
            return _not_locked(record, self._path)
        try:
            current = skill_files(record, max_bytes, self._hasher)
        except (OSError, StdToolsError) as exc:
            return _mismatch(record, self._path, (str(exc),))
        locked = locked_files(entry)
        changed = differences(locked, current)
        listed = (record.digest or "").removeprefix("sha256:")
        if not changed and listed != locked.get(SKILL_MD, ("", 0))[0]:
            # What is listed (name, description) must come from the SKILL.md the lock
            # holds, not from a record kept elsewhere (the persistent index).
            changed = (SKILL_MD,)
        return None if not changed else _mismatch(record, self._path, changed)

    def check_bytes(self, record: SkillRecord, relative: str, data: bytes) -> None:
        """Refuse to serve `data`, read from `relative` in the skill, unless the lock
        holds exactly these bytes for it: what is served is what was verified.

        Raises:
            StdToolsError: the lock holds other bytes, or none, for the file.
        """
        with self._mutex:
            self._load()
            entry = self._skills.get(record.name)
        locked = None if entry is None else locked_files(entry).get(relative)
        if locked is None or locked[0] != hashlib.sha256(data).hexdigest():
            raise StdToolsError(
                f"The file {relative!r} of the skill '{record.name}' differs from the skills "
                f"lock {self._path}, so it is not served. The skill's files changed after "
                "it was locked; if the change is trusted, write the lock again (dpt-skills "
                "lock)."
            )

    def check_script(self, record: SkillRecord, relative: str, source: bytes) -> None:
        """Refuse to run `source`, read from `relative` in the skill, unless the lock
        holds exactly these bytes for it and every other file of the skill (what the
        script may import or read) matches the lock too.

        Raises:
            StdToolsError: the lock holds other bytes, or none, for the script, or another
                file of the skill differs from the lock.
        """
        with self._mutex:
            self._load()
            entry = self._skills.get(record.name)
            problem = self._judge(record, self._max_bytes) if self._max_bytes else None
        locked = None if entry is None else locked_files(entry).get(relative)
        if locked is None or locked[0] != hashlib.sha256(source).hexdigest():
            raise StdToolsError(
                f"The script {relative!r} of the skill '{record.name}' differs from the skills "
                f"lock {self._path}, so it was not run. The skill's files changed after it "
                "was locked; if the change is trusted, write the lock again (dpt-skills lock)."
            )
        if problem is not None:
            raise StdToolsError(
                f"The script {relative!r} of the skill '{record.name}' was not run: "
                f"{problem.message}"
            )
