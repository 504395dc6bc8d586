"""A static security audit of skill folders: what a skill hides, ships or reaches for.

`audit_skill` reads every file of one skill folder (without following links, without
running anything) and returns `Finding` values: hidden characters in any text file, HTML
comments and ``!`cmd``` templates in SKILL.md, links that lead out of the folder, shell and
other non-Python scripts shipped or named, frontmatter that grants a shell (``hooks``,
``allowed-tools: Bash``), conftest.py, npm lifecycle scripts, and Python scripts that import
network modules or name the home folder, credential files or /proc. The Python checks read
imports and string literals with `ast`; they are hints, with false positives and false
negatives that docs/std-tools/cli.md ("Auditing skills") lists.

The checks of one file's text are in `audit_checks`; the codes in `AUDIT_CODES`, with
the levels this audit gives them. list_skills and validate report the same findings as
warnings under the same codes (`skill_audit`). The work is
bounded: files larger than `max_bytes` and files past `max_files` are not read (a
``not_audited`` warning says so), and links are never followed. This module never imports
the MCP SDK and never prints.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from operator import attrgetter
from pathlib import Path
from typing import Final

from ..._io import too_large
from ...errors import NotFoundError
from ..catalog.discovery import Stamp, stamp_of
from .checks import SKILL_FILE, Finding, file_findings, skill_md_findings
from .checks import finding as _finding

__all__ = [
    "DEFAULT_MAX_FILES",
    "Finding",
    "audit_folder",
    "audit_skill",
    "find_skill_folders",
    "skill_md_findings",
]

#: Files read per skill at most; the rest get one ``not_audited`` warning.
DEFAULT_MAX_FILES: Final = 2000

#: Bytes read per file at most by default (a larger file gets a ``not_audited`` warning).
DEFAULT_MAX_BYTES: Final = 10 * 1024 * 1024

#: Folders inside a skill that are not read: version-control data. (Bytecode caches are
#: read: a shipped ``.pyc`` is an error.)
SKIPPED_FOLDERS: Final = frozenset({".git"})


# Reading the folder -----------------------------------------------------------------------


def _inside(target: str, root: str) -> bool:
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


_name: Final = attrgetter("name")
_READ_FLAGS: Final = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def _read(path: str, limit: int) -> tuple[os.stat_result, bytes | None] | None:
    """The file's status and bytes (None when it is larger than `limit`), opened without
    following a link; None if it cannot be opened or is not a regular file. A file that
    grows while it is read is read to `limit` + 1 bytes."""
    try:
        handle = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > limit:
            return info, None
        chunks = [os.read(handle, info.st_size + 1)]
        total = len(chunks[0])
        if total <= info.st_size:
            return info, chunks[0]  # the whole file (the common case: one read)
        while chunks[-1] and total <= limit:  # grown since its status was taken
            chunks.append(os.read(handle, limit + 1 - total))
            total += len(chunks[-1])
        return info, b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(handle)


def audit_skill(
    folder: Path | str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
) -> list[Finding]:
    """Every finding for the skill in `folder`, in file order.

    Reads at most `max_files` files of at most `max_bytes` bytes each, never follows a
    link and never runs anything. Raises `NotFoundError` when `folder` is not a folder.
    """
    root = os.fspath(folder)
    if not os.path.isdir(root):  # noqa: PTH112 (no Path objects per skill)
        raise NotFoundError(f"{root} is not a folder; pass a skill folder.")
    # The folder is walked as given (a link to it is followed once, by the listing; what
    # it holds is read without following links), and resolved only for its name when the
    # path ends in none ("." or "/").
    name = os.path.basename(root)  # noqa: PTH119 (what Path.name gives, for a plain name)
    if name in ("", os.curdir, os.pardir):
        name = Path(root).name or os.path.basename(os.path.realpath(root))  # noqa: PTH119
    return audit_folder(root, name, max_bytes=max_bytes, max_files=max_files)


def audit_folder(
    root: str,
    skill: str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
    stamps: list[tuple[str, Stamp]] | None = None,
    skip_skill_md: bool = False,
) -> list[Finding]:
    """`audit_skill` of the folder `root` (a folder, not checked), its findings named
    after `skill`. When `stamps` is given, the stamp of every entry the findings depend
    on is appended to it: the folder itself as ``""``, each folder under it (``sub/``),
    each file and link. `skip_skill_md` leaves the top SKILL.md out, be it a link or a
    file (its reader judges it).
    """
    findings: list[Finding] = []
    real_roots: list[str] = []  # resolved only when a link is met: most skills hold none
    if stamps is not None:
        try:
            stamps.append(("", stamp_of(os.stat(root))))  # noqa: PTH116
        except OSError:
            return findings
    files_read = 0
    # Every entry under `root`, in name order, depth first: a folder (its name ends in
    # ``/``) comes just before what it holds. Links are never followed: a linked folder
    # is a link like any other. (The walk is written out here: a generator per skill
    # cost more than the checks of its small files.)
    pending = [("", root)]
    while pending:
        prefix, folder = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=_name)
        except OSError:
            continue
        below: list[tuple[str, str]] = []
        for entry in entries:
            base = entry.name
            name = prefix + base
            try:
                if entry.is_dir(follow_symlinks=False):
                    if base in SKIPPED_FOLDERS:
                        continue
                    name += "/"
                    below.append((name, entry.path))
                    if stamps is not None:
                        stamps.append((name, stamp_of(entry.stat(follow_symlinks=False))))
                    continue
                if skip_skill_md and name == SKILL_FILE:
                    continue
                if not entry.is_file(follow_symlinks=False):
                    # A link (never followed), or a special file (never opened).
                    info = entry.stat(follow_symlinks=False)
                    if stamps is not None:
                        stamps.append((name, stamp_of(info)))
                    if stat.S_ISLNK(info.st_mode):
                        findings.extend(_link_findings(skill, name, entry.path, root, real_roots))
                    continue
            except OSError:
                continue
            if files_read >= max_files:
                message = (
                    f"not read: the audit reads at most {max_files} files per skill, "
                    "and this one and those after it are past that."
                )
                findings.append(_finding(skill, name, 0, "not_audited", message))
                return findings
            files_read += 1
            # A file's status comes from the descriptor it is read through.
            read = _read(entry.path, max_bytes)
            if read is None:
                if stamps is not None:
                    try:
                        stamps.append((name, stamp_of(entry.stat(follow_symlinks=False))))
                    except OSError:
                        continue
                found = file_findings(skill, name, base, None)
            else:
                info, data = read
                if stamps is not None:
                    stamps.append((name, stamp_of(info)))
                if data is None or len(data) > max_bytes:
                    # Worded as every reader words a file over the limit.
                    message = f"not read: {too_large(repr(name), info.st_size, max_bytes)}"
                    findings.append(_finding(skill, name, 0, "not_audited", message))
                    continue
                found = file_findings(skill, name, base, data)
            if found:
                findings.extend(found)
        pending.extend(reversed(below))
    return findings


def _link_findings(
    skill: str, name: str, path: str, root: str, real_roots: list[str]
) -> list[Finding]:
    """A ``link_outside`` finding when the link at `path` leads out of `root` (resolved
    once into `real_roots`)."""
    try:
        if not real_roots:
            real_roots.append(os.path.realpath(root))
        if _inside(os.path.realpath(path), real_roots[0]):
            return []
    except OSError:  # the link changed while it was resolved: what it is now is unknown
        message = "a symbolic link that changed while it was read; audit the skill again."
        return [_finding(skill, name, 0, "not_audited", message)]
    message = (
        "a symbolic link that leads outside the skill folder; the skills "
        "server refuses it, and a copy of the skill may follow it."
    )
    return [_finding(skill, name, 0, "link_outside", message)]


def find_skill_folders(path: Path, depth: int = 1) -> list[Path]:
    """The skill folders `path` names: itself when it holds a SKILL.md (or is one), else
    every folder within `depth` levels under it that holds a SKILL.md (links and hidden
    folders skipped), in name order. Raises `NotFoundError` when `path` does not exist."""
    if path.is_file() and path.name == SKILL_FILE:
        return [path.parent]
    if not path.is_dir():
        raise NotFoundError(f"{path} does not exist or is not a folder; pass a skill folder.")
    if (path / SKILL_FILE).is_file():
        return [path]
    found: list[Path] = []
    level: list[Path] = [path]
    for _ in range(depth):
        below: list[Path] = []
        for parent in level:
            below.extend(_subfolders(parent))
        found.extend(folder for folder in below if (folder / SKILL_FILE).is_file())
        level = [folder for folder in below if not (folder / SKILL_FILE).is_file()]
    return sorted(found)


def _subfolders(parent: Path) -> Iterable[Path]:
    try:
        entries = sorted(parent.iterdir())
    except OSError:
        return []
    return [
        entry
        for entry in entries
        if not entry.name.startswith(".") and not entry.is_symlink() and entry.is_dir()
    ]
