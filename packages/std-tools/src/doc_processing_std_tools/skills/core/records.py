"""What the catalog is made of: one skill's record, a diagnostic, and a whole catalog.

A `Catalog` is the answer of list_skills at one moment: the listed `SkillRecord`s sorted
by name, every `SkillDiagnostic` found, and a note when a skills folder is missing. It
serialises itself once (`Catalog.json`) and, when that is longer than the output limit,
cuts itself to fit (`Catalog.json_within`), saying what was left out and how to find it.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Final

from ... import _hidden
from ..._text import TRUNCATED_KEY, fit_json, wire_safe
from .audience import Voice
from .frontmatter import Diagnostic, Level
from .requirements import requirements

__all__ = [
    "EXCERPT_LENGTH",
    "SKILL_FILE",
    "Catalog",
    "SkillDiagnostic",
    "SkillRecord",
    "StoredFields",
    "StoredText",
    "is_hidden_name",
    "missing_note",
    "shown",
]

logger = logging.getLogger(__name__)

SKILL_FILE: Final = "SKILL.md"
"""The file whose presence makes a folder a skill."""

_SKIPPED_NAMES: Final = frozenset({"__pycache__", "node_modules"})

EXCERPT_LENGTH: Final = 3000
"""Characters of a SKILL.md body kept in its record for search_skills."""
_SEE_WHOLE_CATALOG: Final = (
    "To find a skill that is not shown, call search_skills with words from the task: it "
    "searches every listed skill. load_skill reads any listed skill by its exact name. To "
    "see everything, run 'dpt-skills list --json' (and 'dpt-skills validate' on the skills "
    "folder for every diagnostic) where the server runs, or raise the limit."
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
    body: str | StoredText = field(default="", compare=False, repr=False)
    """The start of the SKILL.md body (at most `EXCERPT_LENGTH` characters), or where a
    record read from the persistent index keeps it compressed; read it as `excerpt`."""

    @property
    def excerpt(self) -> str:
        """The start of the SKILL.md body (at most `EXCERPT_LENGTH` characters), which
        search_skills searches besides the name and description."""
        body = self.body
        return body if isinstance(body, str) else body.excerpt()

    def to_payload(self) -> dict[str, Any]:
        """The JSON object `list_skills` shows for this skill: its text fields with hidden
        characters escaped (`_hidden.escape`; the ``hidden_text`` diagnostic says so)."""
        payload: dict[str, Any] = {
            "name": shown(self.name),
            "description": shown(self.description),
            "path": str(self.path),
            "directory": str(self.directory),
        }
        if self.license is not None:
            payload["license"] = shown(self.license)
        if self.compatibility is not None:
            payload["compatibility"] = shown(self.compatibility)
        if self.metadata is not None:
            payload["metadata"] = {shown(k): shown(v) for k, v in self.metadata.items()}
        return payload


class StoredText:
    """A record's frontmatter fields and body start as the persistent index keeps them:
    zlib-compressed JSON (``[fields, excerpt]``), decoded only when asked for. A skill
    listed on restart costs no decoding of either until the MCP Skills extension
    publishes its frontmatter or search_skills indexes its body; held compressed, the
    text of 100,000 skills takes a fraction of the memory it would as strings."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        """Keep `data`, as `pack` wrote it."""
        self.data = data

    @classmethod
    def pack(cls, fields: Mapping[str, Any] | None, excerpt: str) -> bytes:
        """The stored form of `fields` and `excerpt` (fast compression: it is written on
        every cold read)."""
        text = json.dumps([fields, excerpt], ensure_ascii=False, allow_nan=False)
        return zlib.compress(text.encode("utf-8"), 1)

    def _unpack(self) -> tuple[dict[str, Any] | None, str]:
        """The fields and excerpt; a damaged value (which the index folder's checks make
        an accident, never a plant) gives no fields and no text, never made-up ones."""
        try:
            fields, excerpt = json.loads(zlib.decompress(self.data))
            if (fields is None or isinstance(fields, dict)) and isinstance(excerpt, str):
                return fields, excerpt
        except (ValueError, TypeError, zlib.error):
            pass
        logger.warning("skills index: a stored frontmatter could not be decoded; ignored")
        return {}, ""

    def fields(self) -> dict[str, Any] | None:
        """The frontmatter fields as parsed."""
        return self._unpack()[0]

    def excerpt(self) -> str:
        """The start of the body."""
        return self._unpack()[1]


class StoredFields(Mapping[str, Any]):
    """A record's frontmatter read from the index, decoded on first use (then kept)."""

    __slots__ = ("_fields", "_stored")

    def __init__(self, stored: StoredText) -> None:
        """Decode `stored` when a field is first asked for."""
        self._stored = stored
        self._fields: dict[str, Any] | None = None

    def _decoded(self) -> dict[str, Any]:
        if self._fields is None:
            self._fields = self._stored.fields() or {}
        return self._fields

    def __getitem__(self, key: str) -> Any:
        return self._decoded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self._decoded())

    def __repr__(self) -> str:
        return repr(self._decoded())


def shown(text: str) -> str:
    """`text` as a model is shown it: every hidden character escaped (`_hidden.escape`)."""
    return _hidden.escape(text).text


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

    def to_payload(self, first: int | None = None) -> dict[str, Any]:
        """The `list_skills` JSON object (with only the `first` skills when given)."""
        skills = self.skills if first is None else self.skills[:first]
        payload: dict[str, Any] = {
            "skills": [record.to_payload() for record in skills],
            "skills_dir": str(self.skills_dir),
            "count": self.count,
        }
        if self.skills_dirs:
            payload["skills_dirs"] = [str(root) for root in self.skills_dirs]
        if self.diagnostics:
            payload["diagnostics"] = [d.to_payload() for d in self.diagnostics]
        if self.note is not None:
            payload["note"] = self.note
        if self.requires:
            payload["requires"] = self.requires
        return payload

    @cached_property
    def requires(self) -> dict[str, dict[str, list[str]]]:
        """What each skill that declares needs needs (`requirements.requirements`), by
        name: list_skills sends it whole as its top-level ``requires``, which is never cut
        to fit the output limit (unlike each entry's ``metadata``), so a client learns
        the needs of every skill, listed or not."""
        found: dict[str, dict[str, list[str]]] = {}
        for record in self.skills:
            needs = requirements(record.metadata, record.root, record.folder)
            if needs is not None:
                found[shown(record.name)] = needs
        return found

    @cached_property
    def json(self) -> str:
        """`to_payload` serialised once; an unchanged catalog reuses it."""
        return wire_safe(json.dumps(self.to_payload(), ensure_ascii=False, indent=2))

    @cached_property
    def _fitted(self) -> dict[int, str]:
        return {}

    def _surely_over(self, limit: int) -> bool:
        """True when the JSON is longer than `limit` by its names, descriptions and paths
        alone (a lower bound of its length, counted without serialising anything)."""
        if "json" in self.__dict__:
            return len(self.json) > limit
        least = 0
        for record in self.skills:
            least += len(record.name) + len(record.description) + len(str(record.path))
            if least > limit:
                return True
        return False

    def json_within(self, limit: int) -> str:
        """`json` when it has at most `limit` characters; else the catalog cut to fit, as
        valid JSON with a ``truncated`` note saying what was left out and how to see it
        (see `_fit_catalog`). Computed once per limit for an unchanged catalog."""
        fitted = self._fitted.get(limit)
        if fitted is None and self._surely_over(limit):
            # Skip `json`: indented JSON is written by Python's slow pure encoder, and a
            # large catalog would be serialised whole only to be cut. Skills that could
            # not be shown even at their shortest are only counted.
            shown = _reachable(self.skills, limit)
            payload = self.to_payload(first=shown)
            tail = None if shown == len(self.skills) else _Tail.of(self.skills[shown:])
            fitted = self._fitted[limit] = wire_safe(_fit_catalog(payload, limit, tail))
        if fitted is not None:
            return fitted
        if len(self.json) <= limit:
            return self.json
        if fitted is None:
            fitted = self._fitted[limit] = wire_safe(_fit_catalog(self.to_payload(), limit))
        return fitted


_OPTIONAL_FIELDS: Final = ("directory", "metadata", "license", "compatibility")
_SHORTEST_DESCRIPTION: Final = 80


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# Fewer characters than any skill takes in compact JSON besides its name, path and
# description ('{"name": "", "description": "", "path": ""}' and a separator).
_LEAST_OVERHEAD: Final = 40


def _reachable(skills: tuple[SkillRecord, ...], limit: int) -> int:
    """How many leading skills could appear in an answer of `limit` characters even with
    everything else cut: the rest cannot, whatever is cut."""
    least = 0
    for index, record in enumerate(skills):
        least += (
            len(record.name)
            + len(str(record.path))
            + min(len(record.description), _SHORTEST_DESCRIPTION)
            + _LEAST_OVERHEAD
        )
        if least > limit:
            return index + 1
    return len(skills)


@dataclass(frozen=True, slots=True)
class _Tail:
    """What `_fit_catalog` must count of the skills it is not given (they cannot fit)."""

    hidden: int
    longest: int
    cut: int

    @classmethod
    def of(cls, records: tuple[SkillRecord, ...]) -> _Tail:
        return cls(
            hidden=len(records),
            longest=max((len(r.description) for r in records), default=0),
            cut=sum(len(r.description) > _SHORTEST_DESCRIPTION for r in records),
        )


def _fit_catalog(payload: dict[str, Any], limit: int, tail: _Tail | None = None) -> str:
    """The list_skills JSON held to `limit` characters, giving up the least useful first.

    Each step is taken only while the answer is still too long, and each is stated in a
    ``truncated`` note: the JSON loses its indentation; every skill loses ``directory``
    (the folder of its ``path``), ``metadata``, ``license`` and ``compatibility``;
    diagnostics are dropped from the end; descriptions are cut to one common length (not
    below 80 characters); and last, skills are dropped from the end of the (name-sorted)
    list. The note then names search_skills, which finds every listed skill.

    Sizes are added up from each entry's own JSON length (compact JSON is the entries
    joined by ``", "``), so a catalog of thousands of skills is serialised once, not once
    per step tried. `tail` stands for skills after those of `payload` that cannot fit
    whatever is cut (see `_reachable`): every step is then taken, and they are counted.
    """
    done: list[str] = []
    skills: list[dict[str, Any]] = payload["skills"]
    diagnostics: list[dict[str, str]] = payload.get("diagnostics", [])
    # Dropped from the end: lock errors (why a pinned server left skills out) go last,
    # after warnings and then the other errors.
    everything = sorted(diagnostics, key=_keep_first)
    locked_out = sum(_keep_first(d) == 0 for d in everything)

    def note() -> str:
        return (
            f"The catalog was longer than the output limit ({limit} characters, "
            f"DPTTOOLS_OUTPUT_TRUNCATION_LIMIT), so {'; '.join(done)}. {_SEE_WHOLE_CATALOG}"
        )

    def length(skill_sizes: list[int], kept_diagnostics: int, *, noted: bool = True) -> int:
        """Characters of the answer holding these skills and the first diagnostics."""
        shell = {**payload, "skills": [], **({TRUNCATED_KEY: note()} if noted else {})}
        if "diagnostics" in payload:
            shell["diagnostics"] = []
        return (
            len(_dumps(shell)) + _joined(skill_sizes) + _joined(diagnostic_sizes[:kept_diagnostics])
        )

    def answer(kept_skills: int, kept_diagnostics: int) -> str | None:
        shown = {**payload, "skills": skills[:kept_skills], TRUNCATED_KEY: note()}
        if "diagnostics" in payload:
            shown["diagnostics"] = everything[:kept_diagnostics]
        text = _dumps(shown)
        return text if len(text) <= limit else None

    hopeless = tail is not None
    if hopeless or any(field in skill for skill in skills for field in _OPTIONAL_FIELDS):
        for skill in skills:
            for field in _OPTIONAL_FIELDS:
                skill.pop(field, None)
        done.append(
            "every skill's directory (the folder of its path), metadata, license and "
            "compatibility were left out"
        )
    sizes = [len(_dumps(skill)) for skill in skills]
    diagnostic_sizes = [len(_dumps(d)) for d in everything]
    kept_diagnostics = len(everything)
    if not hopeless and not done and length(sizes, kept_diagnostics, noted=False) <= limit:
        return _dumps(payload)  # only the indentation had to go
    if not hopeless and done and length(sizes, kept_diagnostics) <= limit:
        return answer(len(skills), kept_diagnostics) or _fit_generic(payload, limit, done)
    said_diagnostics = len(done)  # where the note says how many diagnostics were left out
    if everything and hopeless:
        kept_diagnostics = 0
        done.append(f"{len(everything)} of {len(everything)} diagnostics were left out")
    elif everything:
        total = len(everything)
        done.append("")
        # The most diagnostics (kept from the start) that fit.
        kept_diagnostics = total
        while kept_diagnostics > 0:
            done[-1] = f"{total - kept_diagnostics} of {total} diagnostics were left out"
            if length(sizes, kept_diagnostics) <= limit:
                break
            room = limit - length(sizes, 0)
            kept_diagnostics = _prefix_within(diagnostic_sizes, room, below=kept_diagnostics)
        done[-1] = f"{total - kept_diagnostics} of {total} diagnostics were left out"
        if length(sizes, kept_diagnostics) <= limit:
            return answer(len(skills), kept_diagnostics) or _fit_generic(payload, limit, done)
    originals = [skill["description"] for skill in skills]
    longest = max((len(text) for text in originals), default=0)
    if tail is not None:
        longest = max(longest, tail.longest)
    if longest > _SHORTEST_DESCRIPTION:
        bare = [size - len(_dumps(text)) for size, text in zip(sizes, originals, strict=True)]

        def capped(cap: int) -> tuple[list[int], int]:
            cut = 0
            result = list(sizes)
            for index, text in enumerate(originals):
                if len(text) > cap:
                    result[index] = bare[index] + len(_dumps(text[: cap - 1] + "…"))
                    cut += 1
            return result, cut

        done.append("")
        shortest, cut = capped(_SHORTEST_DESCRIPTION)
        cut += tail.cut if tail is not None else 0
        done[-1] = f"{cut} descriptions were cut to {_SHORTEST_DESCRIPTION} characters"
        if not hopeless and length(shortest, kept_diagnostics) <= limit:
            # The longest common description length that fits, by bisection.
            low, high, best = _SHORTEST_DESCRIPTION + 1, longest - 1, _SHORTEST_DESCRIPTION
            while low <= high:
                cap = (low + high) // 2
                trial, cut = capped(cap)
                done[-1] = f"{cut} descriptions were cut to {cap} characters"
                if length(trial, kept_diagnostics) <= limit:
                    best, low = cap, cap + 1
                else:
                    high = cap - 1
            cut = _cap_descriptions(skills, originals, best)
            done[-1] = f"{cut} descriptions were cut to {best} characters"
            return answer(len(skills), kept_diagnostics) or _fit_generic(payload, limit, done)
        _cap_descriptions(skills, originals, _SHORTEST_DESCRIPTION)
        sizes = shortest
    # Last, skills from the end of the list: the most that fit with the note saying so.
    # The lock errors keep up to a quarter of the answer: they say why skills are missing.
    reserved = _prefix_within(diagnostic_sizes, limit // 4, below=locked_out + 1)
    if everything and min(reserved, locked_out) > kept_diagnostics:
        kept_diagnostics = min(reserved, locked_out)
        done[said_diagnostics] = (
            f"{len(everything) - kept_diagnostics} of {len(everything)} diagnostics were "
            "left out (the skills lock's errors are kept first)"
        )
    count = len(skills) + (tail.hidden if tail is not None else 0)
    kept = len(skills)
    done.append("")
    while kept > 0:
        last = skills[kept - 1]["name"]
        done[-1] = (
            f"{count - kept} of the {count} skills were left out (the list is sorted by "
            f"name and stops at '{last}')"
        )
        if length(sizes[:kept], kept_diagnostics) <= limit:
            return answer(kept, kept_diagnostics) or _fit_generic(payload, limit, done[:-1])
        kept = _prefix_within(sizes, limit - length([], kept_diagnostics), below=kept)
    del done[-1]
    return _fit_generic(payload, limit, done)


_LOCK_CODES: Final = frozenset({"lock_mismatch", "not_locked"})


def _keep_first(diagnostic: dict[str, str]) -> int:
    """The order in which a cut list keeps diagnostics: lock errors, other errors, warnings."""
    if diagnostic.get("code") in _LOCK_CODES:
        return 0
    return 1 if diagnostic.get("level") == "error" else 2


def _joined(sizes: list[int]) -> int:
    """Characters of JSON values of these sizes in a compact array, less its brackets."""
    return sum(sizes) + 2 * (len(sizes) - 1) if sizes else 0


def _prefix_within(sizes: list[int], room: int, *, below: int) -> int:
    """The most leading entries (fewer than `below`) whose compact array fits `room`."""
    used = -2
    for index, size in enumerate(sizes[:below]):
        used += size + 2
        if used > room:
            return index
    return max(below - 1, 0)


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


def _fit_generic(payload: dict[str, Any], limit: int, done: list[str]) -> str:
    """What no step above could fit (a limit too small for even one skill): the general
    JSON fitter of every tool, with what was already done in its note."""
    hint = f"Before that, {'; '.join(done)}. {_SEE_WHOLE_CATALOG}" if done else _SEE_WHOLE_CATALOG
    return fit_json(payload, limit, hint=hint, indent=None)


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
