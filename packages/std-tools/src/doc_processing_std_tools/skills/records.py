"""What the catalog is made of: one skill's record, a diagnostic, and a whole catalog.

A `Catalog` is the answer of list_skills at one moment: the listed `SkillRecord`s sorted
by name, every `SkillDiagnostic` found, and a note when a skills folder is missing. It
serialises itself once (`Catalog.json`) and, when that is longer than the output limit,
cuts itself to fit (`Catalog.json_within`), saying what was left out and how to find it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Final

from .._text import TRUNCATED_KEY, fit_json, wire_safe
from .frontmatter import Diagnostic, Level
from .voice import Voice

__all__ = [
    "SKILL_FILE",
    "Catalog",
    "SkillDiagnostic",
    "SkillRecord",
    "is_hidden_name",
    "missing_note",
]

SKILL_FILE: Final = "SKILL.md"
"""The file whose presence makes a folder a skill."""

_SKIPPED_NAMES: Final = frozenset({"__pycache__", "node_modules"})
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
        return " ".join(missing_note(root, is_file, voice) for root, is_file in self.missing)

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


def missing_note(skills_dir: Path, is_file: bool, voice: Voice) -> str:
    if is_file:
        return (
            f"The skills path {skills_dir} is a file, not a folder; point "
            f"{voice.skills_dir_setting} at a folder that holds one subfolder per skill."
        )
    return (
        f"The skills folder {skills_dir} does not exist; create it ({voice.create}) to add "
        f"skills, or point {voice.skills_dir_setting} at an existing folder."
    )
