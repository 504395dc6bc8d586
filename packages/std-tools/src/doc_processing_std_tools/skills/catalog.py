"""Skills folders -> skill records and diagnostics, cached by file modification times.

A skill is a folder that holds a ``SKILL.md``, directly under a skills folder (a *root*) or,
with a search depth above 1, up to that many folders down (``plugins/*/skills/*`` is depth
4); the search never enters a skill. Hidden folders (a leading dot), ``__pycache__`` and
``node_modules`` are never skills nor searched. Several roots form one catalog: a name
belongs to the first skill found under it (roots in the order given; within a root the
shallowest, then the first by path), and every later one is left out with a
``duplicate_name`` error, so each listed name reaches exactly one folder. A
`SkillCatalog` remembers what it read: a second scan of an unchanged folder costs one
``stat`` of the folder and one per ``SKILL.md`` (plus one per folder that skill links
were resolved through, so that a link re-pointed anywhere on the way is judged again),
while a skill that was added, edited or removed is read again. A file modified within
the last moments before it was read is read once more on the next scan, because coarse
file-system clocks could otherwise hide a second edit made in the same tick.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Final

from .. import _io
from .._text import TRUNCATED_KEY, fit_json, wire_safe
from ..errors import (
    FileTooLargeError,
    InvalidArgumentError,
    NotFoundError,
    NotRegularFileError,
    PathOutsideRootError,
    StdToolsError,
)
from ..paths import real_path
from .frontmatter import Diagnostic, Level, check_fields, read_skill_md_text
from .lint import lint as lint_skill_md
from .voice import MODEL, Voice

__all__ = [
    "SKILL_FILE",
    "Catalog",
    "SkillCatalog",
    "SkillDiagnostic",
    "SkillRecord",
    "find_deeper",
    "is_hidden_name",
    "read_skill",
    "scan_once",
]

logger = logging.getLogger(__name__)

SKILL_FILE: Final = "SKILL.md"
"""The file whose presence makes a folder a skill."""

_SKIPPED_NAMES: Final = frozenset({"__pycache__", "node_modules"})
# A stamp newer than this, relative to the moment it was taken, is not trusted on the next
# scan: file-system clocks tick in steps of a few milliseconds.
_RACY_NS: Final = 100_000_000
_MAX_CACHED_FOLDERS: Final = 16
_SEE_WHOLE_CATALOG: Final = (
    "To see everything, run 'dpt-skills list --json' (and 'dpt-skills validate' on the skills "
    "folder for every diagnostic) where the server runs, or raise the limit; load_skill "
    "reads any listed skill in full."
)


def is_hidden_name(name: str) -> bool:
    """True for names the skills server never lists: dot-names, __pycache__, node_modules."""
    return name.startswith(".") or name in _SKIPPED_NAMES


@dataclass(frozen=True, slots=True)
class SkillRecord:
    """One listed skill: what `list_skills` reports about it."""

    name: str
    """The skill's folder name, which tool calls use."""
    description: str
    """What the skill does and when to use it."""
    path: Path
    """Absolute path of the skill's SKILL.md."""
    directory: Path
    """Absolute path of the skill's folder."""
    license: str | None = None
    """The frontmatter's ``license``, when present."""
    compatibility: str | None = None
    """The frontmatter's ``compatibility``, when present."""
    metadata: dict[str, str] | None = None
    """The frontmatter's ``metadata`` with string values, when present."""
    root: Path | None = field(default=None, compare=False, repr=False)
    """The skills folder (root) the skill was found in: paths inside the skill are
    confined to it, and links may lead anywhere inside it."""
    folder: str = field(default="", compare=False, repr=False)
    """The skill's folder relative to `root` with ``/`` separators: the name itself for
    a skill directly under its root, ``plugins/p/skills/name`` for a nested one."""
    frontmatter: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    """Every frontmatter field as parsed (the MCP Skills extension publishes them)."""
    digest: str | None = field(default=None, compare=False, repr=False)
    """``sha256:`` digest of the SKILL.md bytes these fields were read from."""
    size: int | None = field(default=None, compare=False, repr=False)
    """Length in bytes of those SKILL.md bytes."""

    def to_payload(self) -> dict[str, Any]:
        """The JSON object `list_skills` shows for this skill."""
        payload: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "path": str(self.path),
            "directory": str(self.directory),
        }
        if self.license is not None:
            payload["license"] = self.license
        if self.compatibility is not None:
            payload["compatibility"] = self.compatibility
        if self.metadata is not None:
            payload["metadata"] = dict(self.metadata)
        return payload


@dataclass(frozen=True, slots=True)
class SkillDiagnostic:
    """A `Diagnostic` attributed to the skill folder it was found in."""

    skill: str
    """The skill's folder relative to its root (its folder name when directly under it)."""
    level: Level
    """``"error"`` (the skill is skipped) or ``"warning"`` (it is listed)."""
    code: str
    """A stable identifier such as ``missing_description``."""
    message: str
    """What is wrong and how to fix it."""

    @classmethod
    def of(cls, skill: str, diagnostic: Diagnostic) -> SkillDiagnostic:
        """Attribute `diagnostic` to the skill folder named `skill`."""
        return cls(skill, diagnostic.level, diagnostic.code, diagnostic.message)

    def to_payload(self) -> dict[str, str]:
        """The JSON object `list_skills` shows in its ``diagnostics`` array."""
        return {
            "skill": self.skill,
            "level": self.level,
            "code": self.code,
            "message": self.message,
        }


@dataclass(frozen=True)
class Catalog:
    """The skills of one skills folder (or of several, merged) at one moment, with every
    diagnostic found."""

    skills_dir: Path
    """The absolute skills folder that was scanned (the first one, when several were)."""
    skills: tuple[SkillRecord, ...] = ()
    """Listed skills, sorted by name."""
    diagnostics: tuple[SkillDiagnostic, ...] = ()
    """Problems found, sorted by skill folder; errors mean the skill is not in `skills`."""
    note: str | None = None
    """Set when the skills folder does not exist (or is not a folder), in `MODEL` words."""
    skills_dirs: tuple[Path, ...] = ()
    """Every root, in order, when there are several (else empty: `skills_dir` is all)."""
    missing: tuple[tuple[Path, bool], ...] = ()
    """The roots that could not be searched: (root, True when it is a file)."""

    def note_for(self, voice: Voice) -> str | None:
        """`note` worded for `voice` (the command line speaks to a person)."""
        if not self.missing:
            return self.note
        return " ".join(_missing_note(root, is_file, voice) for root, is_file in self.missing)

    @property
    def count(self) -> int:
        """How many skills are listed."""
        return len(self.skills)

    def get(self, name: str) -> SkillRecord | None:
        """The listed skill named `name`, or None."""
        return self._by_name.get(name)

    @cached_property
    def _by_name(self) -> dict[str, SkillRecord]:
        return {record.name: record for record in self.skills}

    def to_payload(self) -> dict[str, Any]:
        """The `list_skills` JSON object."""
        payload: dict[str, Any] = {
            "skills": [record.to_payload() for record in self.skills],
            "skills_dir": str(self.skills_dir),
            "count": self.count,
        }
        if self.skills_dirs:
            payload["skills_dirs"] = [str(root) for root in self.skills_dirs]
        if self.diagnostics:
            payload["diagnostics"] = [d.to_payload() for d in self.diagnostics]
        if self.note is not None:
            payload["note"] = self.note
        return payload

    @cached_property
    def json(self) -> str:
        """`to_payload` serialised once; an unchanged catalog reuses it."""
        return wire_safe(json.dumps(self.to_payload(), ensure_ascii=False, indent=2))

    @cached_property
    def _fitted(self) -> dict[int, str]:
        return {}

    def json_within(self, limit: int) -> str:
        """`json` when it has at most `limit` characters; else the catalog cut to fit, as
        valid JSON with a ``truncated`` note saying what was left out and how to see it
        (see `_fit_catalog`). Computed once per limit for an unchanged catalog."""
        if len(self.json) <= limit:
            return self.json
        fitted = self._fitted.get(limit)
        if fitted is None:
            fitted = self._fitted[limit] = wire_safe(_fit_catalog(self.to_payload(), limit))
        return fitted


_OPTIONAL_FIELDS: Final = ("directory", "metadata", "license", "compatibility")
_SHORTEST_DESCRIPTION: Final = 80


def _fit_catalog(payload: dict[str, Any], limit: int) -> str:
    """The list_skills JSON held to `limit` characters, giving up the least useful first.

    Each step is taken only while the answer is still too long, and each is stated in a
    ``truncated`` note: the JSON loses its indentation; every skill loses ``directory``
    (the folder of its ``path``), ``metadata``, ``license`` and ``compatibility``;
    diagnostics are dropped from the end; descriptions are cut to one common length (not
    below 80 characters); and last, `fit_json` drops skills from the end of the
    (name-sorted) list.
    """
    done: list[str] = []

    def fits() -> str | None:
        note = (
            f"The catalog was longer than the output limit ({limit} characters, "
            f"DPTTOOLS_OUTPUT_TRUNCATION_LIMIT), so {'; '.join(done)}. {_SEE_WHOLE_CATALOG}"
        )
        text = json.dumps({**payload, TRUNCATED_KEY: note}, ensure_ascii=False)
        return text if len(text) <= limit else None

    skills: list[dict[str, Any]] = payload["skills"]
    if any(field in skill for skill in skills for field in _OPTIONAL_FIELDS):
        for skill in skills:
            for field in _OPTIONAL_FIELDS:
                skill.pop(field, None)
        done.append(
            "every skill's directory (the folder of its path), metadata, license and "
            "compatibility were left out"
        )
        if (text := fits()) is not None:
            return text
    diagnostics: list[dict[str, str]] = payload.get("diagnostics", [])
    if diagnostics:
        total = len(diagnostics)
        everything = list(diagnostics)
        done.append("")
        # The most diagnostics (kept from the start) that fit, by bisection.
        low, high = 0, total - 1
        while low <= high:
            kept = (low + high) // 2
            diagnostics[:] = everything[:kept]
            done[-1] = f"{total - kept} of {total} diagnostics were left out"
            if fits() is not None:
                low = kept + 1
            else:
                high = kept - 1
        diagnostics[:] = everything[:high] if high > 0 else []
        done[-1] = f"{total - len(diagnostics)} of {total} diagnostics were left out"
        if (text := fits()) is not None:
            return text
    longest = max((len(skill["description"]) for skill in skills), default=0)
    originals = [skill["description"] for skill in skills]
    if longest > _SHORTEST_DESCRIPTION:
        done.append("")
        low, high = _SHORTEST_DESCRIPTION, longest - 1
        best: str | None = None
        # The longest common description length that fits, by bisection.
        while low <= high:
            cap = (low + high) // 2
            cut = _cap_descriptions(skills, originals, cap)
            done[-1] = f"{cut} descriptions were cut to {cap} characters"
            if (text := fits()) is not None:
                best, low = text, cap + 1
            else:
                high = cap - 1
        if best is not None:
            return best
        cut = _cap_descriptions(skills, originals, _SHORTEST_DESCRIPTION)
        done[-1] = f"{cut} descriptions were cut to {_SHORTEST_DESCRIPTION} characters"
    return fit_json(
        payload, limit, hint=f"Before that, {'; '.join(done)}. {_SEE_WHOLE_CATALOG}", indent=None
    )


def _cap_descriptions(skills: list[dict[str, Any]], originals: list[str], cap: int) -> int:
    """Cut every description longer than `cap` to `cap` characters (ending in "…")."""
    cut = 0
    for skill, original in zip(skills, originals, strict=True):
        if len(original) > cap:
            skill["description"] = original[: cap - 1] + "…"
            cut += 1
        else:
            skill["description"] = original
    return cut


def _read_diagnostic(where: str, code: str, message: str) -> list[SkillDiagnostic]:
    return [SkillDiagnostic(where, "error", code, message)]


def _missing_note(skills_dir: Path, is_file: bool, voice: Voice) -> str:
    if is_file:
        return (
            f"The skills path {skills_dir} is a file, not a folder; point "
            f"{voice.skills_dir_setting} at a folder that holds one subfolder per skill."
        )
    return (
        f"The skills folder {skills_dir} does not exist; create it ({voice.create}) to add "
        f"skills, or point {voice.skills_dir_setting} at an existing folder."
    )


def _read_skill_md(folder: Path, max_bytes: int, root: Path | None) -> bytes | SkillDiagnostic:
    """The bytes of the folder's SKILL.md, read through `_io` by the rules load_skill uses
    (so whatever is listed loads), or the error diagnostic that says why it cannot be."""
    base = root if root is not None and folder.is_relative_to(root) else folder.parent
    relative = f"{folder.relative_to(base).as_posix()}/{SKILL_FILE}"
    gone = NotFoundError("SKILL.md disappeared while it was being read.")
    not_file = InvalidArgumentError("SKILL.md is a folder, not a file.")

    def problem(code: str, message: str) -> SkillDiagnostic:
        return SkillDiagnostic(folder.name, "error", code, message)

    try:
        _, data, _ = _io.read_bytes(
            base,
            relative,
            what="SKILL.md",
            shown="SKILL.md",
            limit=max_bytes,
            missing=gone,
            folder=not_file,
            exact=True,
        )
    except FileTooLargeError as exc:
        return problem(
            "skill_md_too_large", f"{exc} Move long material into files under references/."
        )
    except NotRegularFileError as exc:
        return problem("not_a_file", f"{exc} Replace it with a plain UTF-8 text file.")
    except PathOutsideRootError as exc:
        return problem("outside_skills_dir", str(exc))
    except StdToolsError as exc:
        return problem("unreadable", f"{exc} Check that it is a readable file.")
    except OSError as exc:
        return problem(
            "unreadable",
            f"SKILL.md could not be read ({exc.strerror or exc}); check that it is a "
            "readable file.",
        )
    if _io.is_binary(data):
        return problem(
            "binary_skill_md",
            f"SKILL.md holds NUL bytes within its first {_io.SNIFF_BYTES} bytes, so it is a "
            "binary file, not text, and load_skill could not serve it; save it as plain "
            "UTF-8 text.",
        )
    return data


def read_skill(
    folder: Path,
    *,
    max_bytes: int,
    name: str | None = None,
    root: Path | None = None,
    lint: bool = False,
) -> tuple[SkillRecord | None, list[SkillDiagnostic]]:
    """Read one skill folder's SKILL.md into a record (None when skipped) and diagnostics.

    `name` is the folder name used for the record and the name checks (default: the last
    part of `folder`). A SKILL.md larger than `max_bytes` is an error, as is one that
    cannot be read or is not a regular file (a pipe or a device would never end). When
    `root` is given, a SKILL.md that is a symbolic link leading outside it is an error.
    Diagnostics name the folder relative to `root` (or its name). `lint` adds the warnings
    of `lint.lint` (what the specification does not allow but the catalog accepts).
    """
    name = folder.name if name is None else name
    # Plain string work: this runs once per skill on a cold scan.
    inside = f"{root}{os.sep}" if root is not None else None
    if root is not None and inside is not None and str(folder).startswith(inside):
        base, where = root, str(folder)[len(inside) :].replace(os.sep, "/")
    else:
        base, where = folder.parent, folder.name
    skill_md = folder / SKILL_FILE
    if root is not None and skill_md.is_symlink():
        try:
            target = real_path(skill_md)
        except OSError:
            return None, _read_diagnostic(
                where,
                "unreadable",
                "SKILL.md is a symbolic link that leads into a loop of symbolic links; "
                "replace it with the file itself.",
            )
        if not target.is_relative_to(root.resolve()):
            return None, _read_diagnostic(
                where,
                "outside_skills_dir",
                f"SKILL.md is a symbolic link to {target}, outside the skills folder {root}; "
                "skills must live inside the skills folder, so copy the file there instead "
                "of linking it.",
            )
    data_or_problem = _read_skill_md(folder, max_bytes, root)
    if isinstance(data_or_problem, SkillDiagnostic):
        problem = data_or_problem
        return None, [SkillDiagnostic(where, problem.level, problem.code, problem.message)]
    data = data_or_problem
    parsed = read_skill_md_text(data)
    diagnostics = [SkillDiagnostic.of(where, d) for d in parsed.diagnostics]
    if parsed.fields is None:
        return None, diagnostics
    fields, field_diagnostics = check_fields(parsed.fields, name)
    diagnostics.extend(SkillDiagnostic.of(where, d) for d in field_diagnostics)
    if lint:
        found = lint_skill_md(parsed.fields, parsed.body, body_line=parsed.body_line)
        diagnostics.extend(SkillDiagnostic.of(where, d) for d in found)
    if fields is None:
        return None, diagnostics
    directory = folder.absolute()
    record = SkillRecord(
        name=fields.name,
        description=fields.description,
        path=directory / SKILL_FILE,
        directory=directory,
        license=fields.license,
        compatibility=fields.compatibility,
        metadata=fields.metadata,
        root=base,
        folder=where,
        frontmatter=parsed.fields,
        digest="sha256:" + hashlib.sha256(data).hexdigest(),
        size=len(data),
    )
    return record, diagnostics


_Stamp = tuple[int, int, int, int]


#: The stamp of a skill whose SKILL.md is a loop of symbolic links (it has no real stamp,
#: but it is reported with a diagnostic rather than silently left out).
_LINK_LOOP: Final[_Stamp] = (-1, -1, -1, -1)


def _stamp(st: os.stat_result) -> _Stamp:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def _probe(skill_md: str) -> _Stamp | None:
    """The stamp of a SKILL.md (a string path: this call is the whole cost of a warm scan),
    `_LINK_LOOP` when it is a loop of symbolic links, None when there is no such file."""
    try:
        return _stamp(os.stat(skill_md))  # noqa: PTH116
    except OSError as exc:
        return _LINK_LOOP if exc.errno == errno.ELOOP else None


def _is_racy(st: os.stat_result, taken_ns: int) -> bool:
    return taken_ns - st.st_mtime_ns < _RACY_NS


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


def _folder_stamps(folders: set[Path], taken_ns: int) -> tuple[list[tuple[str, _Stamp]], bool]:
    """The stamps of `folders` (string paths, for `_links_moved`), and whether any of them
    is too recent to trust."""
    stamps: list[tuple[str, _Stamp]] = []
    racy = False
    for folder in sorted(folders):
        try:
            st = folder.stat()
        except OSError:
            continue
        stamps.append((str(folder), _stamp(st)))
        racy = racy or _is_racy(st, taken_ns)
    return stamps, racy


def _links_moved(stamps: list[tuple[str, _Stamp]]) -> bool:
    """True when a folder that skill links were resolved through has changed since."""
    for folder, stamp in stamps:
        try:
            if _stamp(os.stat(folder)) != stamp:  # noqa: PTH116
                return True
        except OSError:
            return True
    return False


@dataclass(slots=True)
class _Entry:
    stamp: _Stamp | None
    racy: bool
    record: SkillRecord | None = None
    diagnostics: list[SkillDiagnostic] = field(default_factory=list)


@dataclass(slots=True)
class _FolderCache:
    stamp: _Stamp
    racy: bool
    folders: list[str]
    refused: list[SkillDiagnostic]
    # The folders, besides the skills folder, that the skill links were resolved through,
    # with their stamps: a link re-pointed anywhere along the way changes one of them.
    link_folders: list[tuple[str, _Stamp]]
    entries: dict[str, _Entry] = field(default_factory=dict)
    catalog: Catalog | None = None
    # What `peek` compares: each SKILL.md path with the stamp it had when `catalog` was
    # built. None while any entry is racy (it must be read again, not just stat-ed).
    checks: list[tuple[str, _Stamp | None]] | None = None


class SkillCatalog:
    """Scans skills folders and remembers what it read, keyed by modification times.

    One instance can serve several skills folders; it is safe to share between threads.
    """

    def __init__(self, *, lint: bool = False) -> None:
        """Start with an empty cache; `lint` adds `lint.lint`'s warnings to each skill's
        diagnostics (``dpt-skills validate``; the servers never lint)."""
        self._lock = threading.Lock()
        self._lint = lint
        # Keyed by folder, SKILL.md size limit and search depth: a new limit must re-judge
        # every file, a new depth finds other folders.
        self._folders: dict[tuple[Path, int, int], _FolderCache] = {}
        # The last catalog of several roots, with the root catalogs it was built from.
        self._merged: tuple[tuple[Catalog, ...], Catalog] | None = None
        # How many folders are remembered: every root of the largest list seen fits.
        self._room = _MAX_CACHED_FOLDERS

    def clear(self) -> None:
        """Forget everything read so far; the next scan reads every SKILL.md again."""
        with self._lock:
            self._folders.clear()

    def scan(self, skills_dir: Path, *, max_bytes: int, depth: int = 1) -> Catalog:
        """The catalog of `skills_dir` (absolute), re-reading only what changed on disk.

        `max_bytes` is the largest SKILL.md accepted; `depth` how many folders down skills
        are searched (1: only direct subfolders). A missing folder gives an empty catalog
        with a note; no input makes this raise.
        """
        with self._lock:
            return self._scan(skills_dir, max_bytes, depth)

    def scan_roots(self, roots: tuple[Path, ...], *, max_bytes: int, depth: int = 1) -> Catalog:
        """One catalog of several roots (see the module docstring for names found twice).

        The same object comes back while no root changed; with one root this is `scan`.
        """
        with self._lock:
            self._room = max(self._room, len(roots) + _MAX_CACHED_FOLDERS)
            return self._merge(tuple(self._scan(root, max_bytes, depth) for root in roots))

    def peek_roots(
        self, roots: tuple[Path, ...], *, max_bytes: int, depth: int = 1
    ) -> Catalog | None:
        """`scan_roots`' catalog if nothing changed on disk since, else None (see `peek`)."""
        parts: list[Catalog] = []
        for root in roots:
            part = self.peek(root, max_bytes=max_bytes, depth=depth)
            if part is None:
                return None
            parts.append(part)
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return self._merge(tuple(parts))
        finally:
            self._lock.release()

    def _merge(self, parts: tuple[Catalog, ...]) -> Catalog:
        if len(parts) == 1:
            return parts[0]
        known = self._merged
        if (
            known is not None
            and len(known[0]) == len(parts)
            and all(a is b for a, b in zip(known[0], parts, strict=True))
        ):
            return known[1]
        merged = _merge_roots(parts)
        self._merged = (parts, merged)
        return merged

    def peek(self, skills_dir: Path, *, max_bytes: int, depth: int = 1) -> Catalog | None:
        """The remembered catalog if nothing changed on disk since, else None.

        Only ``stat`` calls are made, never a read, so this is cheap enough for an event
        loop. None also means "unknown": a scan is running in another thread, the folder
        was never scanned, or a recent write needs a second look; call `scan` then.
        """
        if not self._lock.acquire(blocking=False):
            return None
        try:
            cache = self._folders.get((skills_dir, max_bytes, depth))
            if cache is None or cache.catalog is None or cache.racy or cache.checks is None:
                return None
            try:
                if _stamp(skills_dir.stat()) != cache.stamp:
                    return None
            except OSError:
                return None
            if _links_moved(cache.link_folders):
                return None
            for skill_md, stamp in cache.checks:
                if _probe(skill_md) != stamp:
                    return None
            return cache.catalog
        finally:
            self._lock.release()

    def _scan(self, skills_dir: Path, max_bytes: int, depth: int) -> Catalog:
        key = (skills_dir, max_bytes, depth)
        try:
            dir_stat = skills_dir.stat()
        except OSError:
            self._folders.pop(key, None)
            return _missing_catalog(skills_dir, is_file=False)
        if not stat.S_ISDIR(dir_stat.st_mode):
            self._folders.pop(key, None)
            return _missing_catalog(skills_dir, is_file=True)
        cache = self._folders.get(key)
        changed = False
        if (
            cache is None
            or cache.racy
            or cache.stamp != _stamp(dir_stat)
            or _links_moved(cache.link_folders)
        ):
            changed = True
            taken = time.time_ns()
            folders, refused, consulted = _list_folders(skills_dir, depth)
            link_folders, links_racy = _folder_stamps(consulted, taken)
            old_entries = cache.entries if cache is not None else {}
            cache = _FolderCache(
                _stamp(dir_stat),
                _is_racy(dir_stat, taken) or links_racy,
                folders,
                refused,
                link_folders,
                {name: old_entries[name] for name in folders if name in old_entries},
            )
            self._remember(key, cache)
        prefix = f"{skills_dir}{os.sep}"
        for name in cache.folders:
            entry = cache.entries.get(name)
            stamp = _probe(f"{prefix}{name}{os.sep}{SKILL_FILE}")
            if entry is not None and not entry.racy and entry.stamp == stamp:
                continue
            changed = True
            if stamp is None:
                cache.entries[name] = _Entry(None, False)
                continue
            taken = time.time_ns()
            record, diagnostics = read_skill(
                skills_dir / name,
                max_bytes=max_bytes,
                name=name.rpartition("/")[2],
                root=skills_dir,
                lint=self._lint,
            )
            racy = stamp != _LINK_LOOP and taken - stamp[0] < _RACY_NS
            cache.entries[name] = _Entry(stamp, racy, record, diagnostics)
        if changed or cache.catalog is None:
            cache.catalog = _assemble(skills_dir, cache, depth)
            entries = [(name, cache.entries.get(name)) for name in cache.folders]
            cache.checks = (
                None
                if any(entry is None or entry.racy for _, entry in entries)
                else [
                    (f"{prefix}{name}{os.sep}{SKILL_FILE}", entry.stamp)
                    for name, entry in entries
                    if entry is not None
                ]
            )
        return cache.catalog

    def _remember(self, key: tuple[Path, int, int], cache: _FolderCache) -> None:
        self._folders.pop(key, None)
        while len(self._folders) >= self._room:
            self._folders.pop(next(iter(self._folders)))
        self._folders[key] = cache


def _list_folders(
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


def _assemble(skills_dir: Path, cache: _FolderCache, depth: int) -> Catalog:
    records: list[SkillRecord] = []
    diagnostics: list[SkillDiagnostic] = []
    found = 0
    # Shallowest first, then by path: the first skill found under a name keeps it.
    for name in sorted(cache.folders, key=lambda n: (n.count("/"), n)):
        entry = cache.entries.get(name)
        if entry is None or entry.stamp is None:
            continue
        found += 1
        if entry.record is not None:
            records.append(entry.record)
        diagnostics.extend(entry.diagnostics)
    diagnostics.extend(cache.refused)
    kept = _first_of_each_name(records, diagnostics)
    if found == 0 and not cache.refused:
        deeper = _deeper_diagnostic(skills_dir, depth)
        if deeper is not None:
            diagnostics.append(deeper)
    kept.sort(key=lambda r: r.name)
    diagnostics.sort(key=lambda d: d.skill)
    return Catalog(skills_dir, tuple(kept), tuple(diagnostics))


def _first_of_each_name(
    records: list[SkillRecord], diagnostics: list[SkillDiagnostic]
) -> list[SkillRecord]:
    """The first record of each name, in the order given; a ``duplicate_name`` error
    (added to `diagnostics`) for each later one."""
    kept: dict[str, SkillRecord] = {}
    for record in records:
        first = kept.get(record.name)
        if first is None:
            kept[record.name] = record
            continue
        diagnostics.append(
            SkillDiagnostic(
                record.folder or record.name,
                "error",
                "duplicate_name",
                f"The skill in {record.directory} has the name '{record.name}', which the "
                f"skill in {first.directory} already has; tool calls name one folder only, "
                "so this one is left out. Rename one of the two folders (and its 'name:').",
            )
        )
    return list(kept.values())


def _merge_roots(parts: tuple[Catalog, ...]) -> Catalog:
    """One catalog of several roots' catalogs: earlier roots keep a name."""
    records = [record for part in parts for record in part.skills]
    diagnostics = [d for part in parts for d in part.diagnostics]
    kept = _first_of_each_name(records, diagnostics)
    kept.sort(key=lambda r: r.name)
    missing = tuple(m for part in parts for m in part.missing)
    return Catalog(
        parts[0].skills_dir,
        tuple(kept),
        tuple(diagnostics),
        note=" ".join(_missing_note(root, is_file, MODEL) for root, is_file in missing) or None,
        skills_dirs=tuple(part.skills_dir for part in parts),
        missing=missing,
    )


def _missing_catalog(skills_dir: Path, *, is_file: bool) -> Catalog:
    return Catalog(
        skills_dir,
        note=_missing_note(skills_dir, is_file, MODEL),
        missing=((skills_dir, is_file),),
    )


_DEEPEST_SEARCH: Final = 6
_MOST_FOLDERS_SEARCHED: Final = 5_000


def find_deeper(skills_dir: Path, depth: int) -> list[str]:
    """Folders (relative, ``/``-separated) holding a SKILL.md more than `depth` levels
    under `skills_dir`, up to 6 levels and 5,000 folders searched (a hint, not a scan)."""
    found: list[str] = []
    level = [("", skills_dir)]
    searched = 0
    for current in range(1, _DEEPEST_SEARCH + 1):
        below: list[tuple[str, Path]] = []
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
                below.append((relative + "/", Path(entry.path)))
        level = below
    return found


def _deeper_diagnostic(skills_dir: Path, depth: int) -> SkillDiagnostic | None:
    found = find_deeper(skills_dir, depth)
    if not found:
        return None
    needed = max(part.count("/") + 1 for part in found)
    shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    return SkillDiagnostic(
        skills_dir.name,
        "warning",
        "skills_deeper",
        f"No skill was found within {depth} folder level(s) of {skills_dir}, but SKILL.md "
        f"files are deeper: {shown}. Set DPTTOOLS_SKILLS_DEPTH={needed} (the server's "
        f"--skills-depth {needed}) to search that deep, or add the folders that hold the "
        "skills to DPTTOOLS_SKILLS_DIR.",
    )


def scan_once(skills_dir: Path, *, max_bytes: int, depth: int = 1, lint: bool = False) -> Catalog:
    """Scan `skills_dir` without any cache (one-off tools such as the command line); `lint`
    adds the specification warnings of `lint.lint`."""
    return SkillCatalog(lint=lint).scan(skills_dir, max_bytes=max_bytes, depth=depth)
