"""The audit's findings as catalog diagnostics: what list_skills and validate say of them.

Every finding of `audit` about a listed skill is also a ``warning`` diagnostic under the
audit's own code (one per code and file: the message names the file, the first line and
how many more there are). A finding never hides a skill, whatever level the audit gives
it. Two facts have a diagnostic of their own: hidden characters in SKILL.md are the
``hidden_text`` warning, and links out of the skills folder in the skill folder or a
subfolder are named together by one ``link_outside_skill`` warning (built here, from the
same walk). A link out of the skill that stays inside the skills folder is no warning
here (the server serves it as part of the skill), only in the audit.

The findings come in two parts, cached apart. Those of SKILL.md's text are found where
SKILL.md is read (`reading.read_skill`) and kept with its stamp. Those of the other files
(`FileAudit`) need the skill's whole listing and contents: they are kept with the stamp of
every folder and file they were read from, so a file edited, added or removed (any stamp
that differs) means the files are audited again on the next list, and an unchanged skill
costs one ``lstat`` per entry, never a read.
"""

from __future__ import annotations

import os
import sys
import time
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, overload

from ..catalog.discovery import RACY_NS, Stamp, stamp_of
from ..core.diagnostics import AUDIT_CODES, diagnostic
from ..core.records import SkillDiagnostic, is_hidden_name
from .folders import DEFAULT_MAX_FILES, Finding, audit_folder, skill_md_findings

__all__ = [
    "LISTED_AUDIT_CODES",
    "FileAudit",
    "Stamps",
    "audit_files",
    "listed",
    "outside_links_diagnostic",
    "skill_md_diagnostics",
    "unchanged",
]

_SHOWN_LINKS: Final = 5
_REVIEW: Final = "Review it before using the skill; 'dpt-skills audit' lists every finding."
# Hidden characters of SKILL.md: the ``hidden_text`` diagnostic says so already.
_SAID_BY_HIDDEN_TEXT: Final = frozenset(
    {"tag_characters", "zero_width_characters", "bidi_controls", "format_characters"}
)


class Stamps(Sequence[tuple[str, Stamp]]):
    """(entry name, stamp) pairs held compactly: the names, and every stamp's four
    numbers in one array of 64-bit integers (a skill's five pairs as Python tuples and
    integers take about four times the memory, which 100,000 skills feel)."""

    __slots__ = ("_names", "_numbers")

    def __init__(self, names: tuple[str, ...], numbers: array[int]) -> None:
        """Hold `names` and their stamps' numbers, four per name (see `of`)."""
        self._names = names
        self._numbers = numbers

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, Stamp]]) -> Stamps | tuple[tuple[str, Stamp], ...]:
        """`pairs` held compactly, or as a tuple when a number does not fit 64 bits."""
        pairs = tuple(pairs)
        try:
            numbers = array("q", [number for _, stamp in pairs for number in stamp])
        except OverflowError:
            return pairs
        return cls(tuple(sys.intern(name) for name, _ in pairs), numbers)

    @property
    def names(self) -> tuple[str, ...]:
        """The entry names, in order."""
        return self._names

    def __len__(self) -> int:
        return len(self._names)

    @overload
    def __getitem__(self, index: int) -> tuple[str, Stamp]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[str, Stamp]]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        numbers = self._numbers
        at = range(len(self._names))[index] * 4
        stamp = (numbers[at], numbers[at + 1], numbers[at + 2], numbers[at + 3])
        return self._names[index], stamp

    def __iter__(self) -> Iterator[tuple[str, Stamp]]:
        numbers = iter(self._numbers)
        for name in self._names:
            yield name, (next(numbers), next(numbers), next(numbers), next(numbers))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Stamps):
            return self._names == other._names and self._numbers == other._numbers
        if isinstance(other, Sequence):
            return list(self) == list(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._names, self._numbers.tobytes()))

    def __repr__(self) -> str:
        return repr(tuple(self))


@dataclass(frozen=True, slots=True)
class FileAudit:
    """The findings of a skill's files besides SKILL.md, valid while `stamps` hold."""

    stamps: Sequence[tuple[str, Stamp]]
    """(entry relative to the skill folder, its ``lstat`` stamp): ``""`` is the folder
    itself, a name ending in ``/`` a folder under it."""
    diagnostics: tuple[SkillDiagnostic, ...]
    """The findings as warnings."""
    racy: bool = False
    """True when an entry changed within moments of being read: audit it again next
    time, and never store it (coarse clocks could hide a second change)."""


#: The audit's codes that list_skills reports: text spelled in characters no reader sees.
#: Its other findings (and a lone zero-width character in code) are for audit and validate.
LISTED_AUDIT_CODES: Final = frozenset(code for code, info in AUDIT_CODES.items() if info.listed)
_AUDIT_ONLY: Final = frozenset(AUDIT_CODES) - LISTED_AUDIT_CODES


def listed(diagnostics: Iterable[SkillDiagnostic]) -> list[SkillDiagnostic]:
    """The `diagnostics` that list_skills gives: all but the audit's findings other than
    hidden text (`LISTED_AUDIT_CODES`)."""
    return [d for d in diagnostics if d.code not in _AUDIT_ONLY]


def as_diagnostics(where: str, findings: Iterable[Finding]) -> list[SkillDiagnostic]:
    """One warning per code and file of `findings`, attributed to the skill `where`."""
    grouped: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        grouped.setdefault((finding.code, finding.file), []).append(finding)
    found: list[SkillDiagnostic] = []
    for (code, file), same in grouped.items():
        first = same[0]
        place = f"{file}, line {first.line}" if first.line else file
        more = f" ({len(same) - 1} more in this file.)" if len(same) > 1 else ""
        found.append(
            SkillDiagnostic(where, "warning", code, f"{place}: {first.message}{more} {_REVIEW}")
        )
    return found


def skill_md_diagnostics(
    where: str, text: str, fields: Mapping[str, Any] | None
) -> list[SkillDiagnostic]:
    """The warnings for what the audit finds in SKILL.md's `text` (hidden characters
    aside: ``hidden_text``); `fields` is its parsed frontmatter."""
    return as_diagnostics(where, skill_md_findings(where, text, fields))


def audit_files(folder: Path | str, where: str, root: Path | None, max_bytes: int) -> FileAudit:
    """Audit every file of the skill in `folder` but its SKILL.md (at most `max_bytes`
    each, links never followed); `where` names the skill in the diagnostics and `root`
    is its skills folder (for the links ``link_outside_skill`` names already)."""
    stamps: list[tuple[str, Stamp]] = []
    taken = time.time_ns()
    outside: list[str] = []  # links out of the skills folder, as link_outside_skill
    try:
        findings = audit_folder(
            os.fspath(folder),
            where,
            max_bytes=max_bytes,
            max_files=DEFAULT_MAX_FILES,
            stamps=stamps,
            skip_skill_md=True,
        )
        if any(f.code == "link_outside" for f in findings):
            path = Path(folder)
            real_root = (path.parent if root is None else root).resolve()
            kept = []
            for finding in findings:
                said = _link_said(finding, path, real_root)
                if said == "outside_skills_folder":
                    outside.append(finding.file)
                elif said is None:
                    kept.append(finding)
            findings = kept
    except OSError as exc:
        # The folder changed under the walk (or cannot be read): say so, and audit it
        # again on the next listing (racy), rather than fail the whole scan.
        message = f"the skill's files could not be audited ({exc.strerror or exc})."
        problem = SkillDiagnostic(where, "warning", "not_audited", f"{message} {_REVIEW}")
        return FileAudit((), (problem,), True)
    # A file written within moments of its read could change again unseen in the same
    # clock tick; folders are not judged so (an entry added then shows once the folder
    # changes again), or every skill created moments ago would be audited twice.
    recent = taken - RACY_NS
    racy = any(stamp[0] > recent and name and name[-1] != "/" for name, stamp in stamps)
    diagnostics = as_diagnostics(where, findings) if findings else []
    if outside:
        diagnostics.insert(0, outside_links_diagnostic(where, sorted(outside)))
    return FileAudit(Stamps.of(stamps), tuple(diagnostics), racy)


def _link_said(finding: Finding, folder: Path, real_root: Path) -> str | None:
    """How list_skills words a ``link_outside`` finding: ``"outside_skills_folder"``
    for a link out of the skills folder in the skill folder or a subfolder, under names
    that are not hidden (the ``link_outside_skill`` warning, which load_skill's list of
    files matches); ``"inside"`` for one that stays in the skills folder (the server
    reads it as part of the skill, as it does a link to another skill's file: no
    warning); None for any other finding, which stays as it is."""
    if finding.code != "link_outside":
        return None
    try:
        real = (folder / finding.file).resolve()
    except (OSError, RuntimeError):
        return None
    if real == real_root or real.is_relative_to(real_root):
        return "inside"
    parts = finding.file.split("/")
    if len(parts) <= 2 and not any(map(is_hidden_name, parts)):
        return "outside_skills_folder"
    return None


def outside_links_diagnostic(where: str, links: list[str]) -> SkillDiagnostic:
    """The ``link_outside_skill`` warning naming `links` (never where they lead)."""
    shown = ", ".join(links[:_SHOWN_LINKS])
    if len(links) > _SHOWN_LINKS:
        shown += f" and {len(links) - _SHOWN_LINKS} more"
    return SkillDiagnostic.of(
        where,
        diagnostic(
            "link_outside_skill",
            f"{len(links)} name(s) in this skill are symbolic links leading outside the "
            f"skills folder, which no tool reads and load_skill marks as not readable: "
            f"{shown}. Copy the files into the skill instead of linking them.",
        ),
    )


def unchanged(folder: str, audit: FileAudit) -> bool:
    """True when every entry `audit` was read from still has its stamp. New entries
    change the stamp of the folder that holds them, so they are seen too."""
    for name, stamp in audit.stamps:
        path = f"{folder}{os.sep}{name.rstrip('/')}" if name else folder
        try:
            info = os.stat(path) if not name else os.lstat(path)  # noqa: PTH116
        except OSError:
            return False
        if stamp_of(info) != stamp:
            return False
    return True


def check_paths(folder: str, audit: FileAudit) -> list[tuple[str, Stamp]]:
    """(absolute path, stamp) of every entry `audit` depends on besides the folder."""
    return [(f"{folder}{os.sep}{name.rstrip('/')}", stamp) for name, stamp in audit.stamps if name]
