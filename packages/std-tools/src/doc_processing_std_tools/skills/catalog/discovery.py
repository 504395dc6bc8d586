"""Where skills are: the candidate skill folders under a root, and the stamps that tell
whether anything changed since they were found.

A skill is a folder that holds a ``SKILL.md``, directly under a root or, with a search
depth above 1, up to that many folders down; the search never enters a skill and skips
hidden folders, ``__pycache__`` and ``node_modules``. Links are followed as the kernel
would, and every folder read on the way is remembered (`list_folders`' third result), so
that a link re-pointed anywhere along it is seen by comparing those folders' stamps.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ..._text import wire_safe
from ...errors import NotFoundError
from ..core.records import SKILL_FILE, SkillDiagnostic, is_hidden_name

__all__ = [
    "LINK_LOOP",
    "RACY_NS",
    "Discovered",
    "Stamp",
    "deeper_diagnostic",
    "discover",
    "find_deeper",
    "folder_stamps",
    "is_racy",
    "links_moved",
    "list_folders",
    "misnamed_skill_md",
    "misnamed_skill_md_diagnostic",
    "no_skills_message",
    "probe",
    "stamp_of",
]

logger = logging.getLogger(__name__)

# A stamp newer than this, relative to the moment it was taken, is not trusted on the next
# scan: file-system clocks tick in steps of a few milliseconds.
RACY_NS: Final = 100_000_000

Stamp = tuple[int, int, int, int]


#: The stamp of a skill whose SKILL.md is a loop of symbolic links (it has no real stamp,
#: but it is reported with a diagnostic rather than silently left out).
LINK_LOOP: Final[Stamp] = (-1, -1, -1, -1)


def stamp_of(st: os.stat_result) -> Stamp:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def probe(skill_md: str) -> Stamp | None:
    """The stamp of a SKILL.md (a string path: this call is the whole cost of a warm scan),
    `LINK_LOOP` when it is a loop of symbolic links, None when there is no such file."""
    try:
        return stamp_of(os.stat(skill_md))  # noqa: PTH116
    except OSError as exc:
        return LINK_LOOP if exc.errno == errno.ELOOP else None


def is_racy(st: os.stat_result, taken_ns: int) -> bool:
    return taken_ns - st.st_mtime_ns < RACY_NS


_MAX_LINK_HOPS: Final = 40


def _follow(path: Path, root: Path, consulted: set[Path]) -> Path:
    """The real path of the absolute `path`, link by link, as the kernel would find it.

    Adds to `consulted` every folder whose entries the walk read, except `root` itself
    (whose own stamp is checked anyway) and the folders above it as far as they were read
    to find `root`: while none of those folders changes (a link cannot be re-pointed, nor
    a folder renamed or replaced, without changing the folder that holds it), `path` leads
    to the same place. A part that does not exist ends the walk, kept as written.

    Raises:
        OSError: (errno ``ELOOP``) more than 40 links, as in a loop of links.
    """
    if path.parent == root:
        # `root` is a real path already: only the last part needs following.
        resolved, pending = root, [path.name]
    else:
        resolved, pending = Path(path.anchor), list(reversed(path.parts[1:]))
    hops = 0
    while pending:
        part = pending.pop()
        if part == "..":
            resolved = resolved.parent
            continue
        candidate = resolved / part
        if resolved != root and candidate != root and candidate not in root.parents:
            consulted.add(resolved)
        try:
            st = candidate.lstat()
        except OSError:
            return candidate.joinpath(*reversed(pending))
        if not stat.S_ISLNK(st.st_mode):
            resolved = candidate
            continue
        hops += 1
        if hops > _MAX_LINK_HOPS:
            raise OSError(errno.ELOOP, f"{path} runs into a loop of symbolic links")
        target = candidate.readlink()
        if target.is_absolute():
            resolved = Path(target.anchor)
        pending.extend(reversed(target.parts[1:] if target.is_absolute() else target.parts))
    return resolved


def folder_stamps(folders: set[Path], taken_ns: int) -> tuple[list[tuple[str, Stamp]], bool]:
    """The stamps of `folders` (string paths, for `_links_moved`), and whether any of them
    is too recent to trust."""
    stamps: list[tuple[str, Stamp]] = []
    racy = False
    for folder in sorted(folders):
        try:
            st = folder.stat()
        except OSError:
            continue
        stamps.append((str(folder), stamp_of(st)))
        racy = racy or is_racy(st, taken_ns)
    return stamps, racy


def links_moved(stamps: list[tuple[str, Stamp]]) -> bool:
    """True when a folder that skill links were resolved through has changed since."""
    for folder, stamp in stamps:
        try:
            if stamp_of(os.stat(folder)) != stamp:  # noqa: PTH116
                return True
        except OSError:
            return True
    return False


def list_folders(
    skills_dir: Path, depth: int = 1
) -> tuple[list[str], list[SkillDiagnostic], set[Path]]:
    """Candidate skill folders (relative, ``/``-separated), errors for skill folders that
    cannot be served, and the folders (besides `skills_dir`) whose entries decide the
    list: those that symbolic links were resolved through and, with `depth` above 1, those
    searched on the way down (a skill added there changes their stamp).

    Refused: a symbolic link leading outside `skills_dir`, and a folder whose name is not
    valid UTF-8 (no client could send that name back, and the reply could not be encoded).
    """
    folders: list[str] = []
    refused: list[SkillDiagnostic] = []
    consulted: set[Path] = set()
    _list_level(skills_dir, skills_dir.resolve(), "", depth, folders, refused, consulted)
    return folders, refused, consulted


def _list_level(
    skills_dir: Path,
    real_root: Path,
    prefix: str,
    depth: int,
    folders: list[str],
    refused: list[SkillDiagnostic],
    consulted: set[Path],
) -> None:
    """`_list_folders` for the folder `prefix` (relative to `skills_dir`), `depth` levels
    still to search."""
    here = skills_dir / prefix if prefix else skills_dir
    try:
        entries = list(os.scandir(here))
    except OSError as exc:
        logger.warning("cannot list the skills folder %s: %s", here, exc)
        return
    for entry in entries:
        if is_hidden_name(entry.name):
            continue
        try:
            # Every link is followed here, even a broken one: a change along its way
            # (watched through `consulted`) may make it a skill, or take one away.
            target = _follow(Path(entry.path), real_root, consulted) if entry.is_symlink() else None
            if not entry.is_dir():
                continue
            if target is not None and not target.is_relative_to(real_root):
                if (target / SKILL_FILE).is_file():
                    refused.append(_outside_diagnostic(prefix + entry.name, skills_dir))
                continue
            if entry.name != wire_safe(entry.name):
                if (Path(entry.path) / SKILL_FILE).exists():
                    refused.append(_undecodable_name_diagnostic(prefix + entry.name))
                continue
            if depth > 1 and not os.path.lexists(f"{entry.path}{os.sep}{SKILL_FILE}"):
                # Not a skill: search it, and watch it for a skill added later.
                consulted.add(Path(entry.path) if target is None else target)
                inner = f"{prefix}{entry.name}/"
                _list_level(skills_dir, real_root, inner, depth - 1, folders, refused, consulted)
                continue
        except OSError:
            continue
        folders.append(prefix + entry.name)


def _outside_diagnostic(name: str, skills_dir: Path) -> SkillDiagnostic:
    return SkillDiagnostic(
        name,
        "error",
        "outside_skills_dir",
        f"'{name}' is a symbolic link to a folder outside {skills_dir}; skills must live "
        "inside the skills folder, so copy the skill there instead of linking it.",
    )


def _undecodable_name_diagnostic(name: str) -> SkillDiagnostic:
    shown = wire_safe(name)
    return SkillDiagnostic(
        shown,
        "error",
        "folder_name_not_utf8",
        f"The folder name {shown!r} is not valid UTF-8, so no client can name this skill; "
        "rename the folder with lowercase letters, digits and hyphens.",
    )


def misnamed_skill_md(folder: Path) -> str | None:
    """The name of a file in `folder` spelled like SKILL.md in other letter cases
    (``skill.md``, ``Skill.md``), when `folder` has no SKILL.md itself; None otherwise.

    Such a folder is not a skill on a case-sensitive file system, and only the exact name
    is read on every other one, so the author is told to rename the file.
    """
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for entry in entries]
    except OSError:
        return None
    if SKILL_FILE in names:
        return None
    return next((name for name in sorted(names) if name.lower() == SKILL_FILE.lower()), None)


def misnamed_skill_md_diagnostic(skill: str, actual: str, folder: Path) -> SkillDiagnostic:
    """The ``skill_md_case`` error for the folder `skill` whose file is named `actual`."""
    return SkillDiagnostic(
        skill,
        "error",
        "skill_md_case",
        f"{folder} has '{actual}' but no '{SKILL_FILE}': the file must be named {SKILL_FILE} "
        f"exactly, in capitals, so this folder is not a skill. Rename '{actual}' to "
        f"'{SKILL_FILE}'.",
    )


_DEEPEST_SEARCH: Final = 6
_MOST_FOLDERS_SEARCHED: Final = 5_000


def find_deeper(skills_dir: Path, depth: int, below: Iterable[str] | None = None) -> list[str]:
    """Folders (relative, ``/``-separated) holding a SKILL.md more than `depth` levels
    under `skills_dir`, up to 6 levels and 5,000 folders searched (a hint, not a scan).

    `below` names the folders at the depth searched that hold no SKILL.md (what a scan
    left as candidates without a skill), so the search starts there instead of at
    `skills_dir`: a collection whose every folder is a skill costs nothing.
    """
    found: list[str] = []
    if depth >= _DEEPEST_SEARCH:
        return found
    if below is None:
        level, first = [("", skills_dir)], 1
    else:
        level = [
            (name + "/", skills_dir / name)
            for name in sorted(below)
            if not (skills_dir / name).is_symlink()
        ]
        first = depth + 1
    searched = 0
    for current in range(first, _DEEPEST_SEARCH + 1):
        deeper: list[tuple[str, Path]] = []
        for prefix, folder in level:
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                searched += 1
                if searched > _MOST_FOLDERS_SEARCHED:
                    return found
                try:
                    if is_hidden_name(entry.name) or entry.is_symlink() or not entry.is_dir():
                        continue
                except OSError:
                    continue
                relative = prefix + entry.name
                if os.path.lexists(f"{entry.path}{os.sep}{SKILL_FILE}"):
                    if current > depth:
                        found.append(relative)
                    continue
                deeper.append((relative + "/", Path(entry.path)))
        level = deeper
    return found


def deeper_diagnostic(
    skills_dir: Path,
    depth: int,
    *,
    found: int = 0,
    below: Iterable[str] | None = None,
    listed: Iterable[Path] = (),
) -> SkillDiagnostic | None:
    """The ``skills_deeper`` warning when SKILL.md files lie deeper than `depth` levels
    under `skills_dir` (see `find_deeper`, which `below` is passed to), whether or not
    `found` skills were listed at the depth searched; None when there are none.

    A deeper folder that a listed skill folder (`listed`) is a link to is listed already
    (``skills/pdf -> plugins/docs/skills/pdf``), so it is not named.
    """
    deeper = find_deeper(skills_dir, depth, below)
    if deeper:
        served = {folder.resolve() for folder in listed}
        deeper = [name for name in deeper if (skills_dir / name).resolve() not in served]
    if not deeper:
        return None
    needed = max(part.count("/") + 1 for part in deeper)
    shown = ", ".join(deeper[:3]) + (f" and {len(deeper) - 3} more" if len(deeper) > 3 else "")
    within = f"within {depth} folder level(s) of {skills_dir}"
    summary = (
        f"No skill was found {within}, but SKILL.md files are deeper: {shown}."
        if found == 0
        else f"{found} skill(s) were found {within}, and SKILL.md files deeper down are "
        f"not listed: {shown}."
    )
    return SkillDiagnostic(
        skills_dir.name,
        "warning",
        "skills_deeper",
        f"{summary} Set DPTTOOLS_SKILLS_DEPTH={needed} (the server's --skills-depth "
        f"{needed}) to search that deep, or add the folders that hold the skills to "
        "DPTTOOLS_SKILLS_DIR.",
    )


@dataclass(frozen=True, slots=True)
class Discovered:
    """The skill folders under one path, as every ``dpt-skills`` command finds them."""

    folders: tuple[Path, ...]
    """The skill folders, in path order."""
    deeper: SkillDiagnostic | None
    """The ``skills_deeper`` warning when SKILL.md files lie deeper than the depth."""
    refused: tuple[SkillDiagnostic, ...] = ()
    """Skill folders that cannot be served (a link leading out, a name not UTF-8)."""


def no_skills_message(path: Path, depth: int) -> str:
    """What to say when no skill is found within `depth` levels of `path`, with the
    depth that finds deeper SKILL.md files when there are any."""
    within = "directly under it" if depth == 1 else f"within {depth} folder levels under it"
    message = (
        f"{path} holds no skill: no {SKILL_FILE} in it nor in any folder {within} "
        "(hidden folders, __pycache__ and node_modules are skipped)."
    )
    deeper = find_deeper(path, depth) if path.is_dir() else []
    if deeper:
        needed = max(part.count("/") + 1 for part in deeper)
        shown = ", ".join(deeper[:3]) + (" and more" if len(deeper) > 3 else "")
        message += (
            f" {SKILL_FILE} files are deeper ({shown}): pass --skills-depth {needed} "
            f"(or set DPTTOOLS_SKILLS_DEPTH={needed})."
        )
    else:
        message += " Pass a skill folder, or a folder that holds skill folders."
    return message


def discover(path: Path, depth: int) -> Discovered:
    """The skill folders `path` names, by the one rule every command follows: `path`
    itself when it holds a SKILL.md (or is one), else every skill folder `list_folders`
    finds within `depth` levels under it (the search never enters a skill).

    Raises:
        NotFoundError: `path` does not exist, or no skill is found under it (the message
            names deeper SKILL.md files and the depth that finds them).
    """
    if path.name == SKILL_FILE and path.is_file():
        return Discovered((path.parent,), None)
    if not path.is_dir():
        raise NotFoundError(
            f"{path} does not exist or is not a folder; pass a skill folder, its "
            f"{SKILL_FILE} or a folder of skills."
        )
    if (path / SKILL_FILE).is_file():
        return Discovered((path,), None)
    names, refused, _ = list_folders(path, depth)
    skills = sorted(name for name in names if (path / name / SKILL_FILE).is_file())
    if not skills:
        raise NotFoundError(no_skills_message(path, depth))
    below = [name for name in names if name not in set(skills)]
    folders = tuple(path / name for name in skills)
    deeper = deeper_diagnostic(path, depth, found=len(skills), below=below, listed=folders)
    return Discovered(folders, deeper, tuple(refused))
