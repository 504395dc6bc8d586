"""``dpt-skills install``: fetch skills from elsewhere, audit each copy, install skill by skill.

`prepare` fetches a SOURCE (`sources`), finds its skills by the one discovery rule every
command follows (`discovery.discover`: a SKILL.md at the top, or every skill folder within
the search depth), and copies each into a hidden staging folder next to its target
(`copying.copy_skill`: through folder descriptors, links never followed, read-only files,
compiled Python left out), then checks the copy reads as a skill and audits it
(`audit.audit_skill`): what is audited is exactly what will be installed.

Each skill has its own outcome. A skill the server would list is staged with its warnings;
a skill is refused, with its reason, when it has no name a tool call could use, when an
earlier skill of the source has its name (the shallower one, then the first by path, as
the server picks), when it cannot be copied safely, when the audit finds an error in it,
or when a skill of its name is installed already; ``force`` (every skill, or the named
ones) lets the last two through. The refusals never stop the others. `Installation.commit`
moves each accepted skill into place with a rename; `record_in_lock` writes their entries,
with their ``source``, into the skills lock. Nothing half-written is left in the skills
folder. This module never prints; the command line (`cli`) does.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from ...errors import StdToolsError
from ..audit.checks import finding
from ..audit.folders import Finding, audit_skill
from ..catalog.discovery import discover
from ..catalog.reading import read_skill
from ..core.diagnostics import FIELD_RULE_WARNINGS
from ..core.frontmatter import NAME_RULE, is_valid_name, read_skill_md_text
from ..core.records import SkillDiagnostic
from .copying import copy_skill
from .lock import LOCK_FORMAT, lock_entry, read_lock, write_lock
from .sources import SKILL_FILE, Source, fetch, parse_source
from .unpack import Budget, LimitReached, Limits, remove_tree

__all__ = [
    "ALL",
    "Installation",
    "Refused",
    "Source",
    "StagedSkill",
    "parse_source",
    "prepare",
    "record_in_lock",
]

#: The prefix of the hidden staging folder made inside the skills folder.
STAGING_PREFIX: Final = ".dpt-install-"

#: `prepare`'s ``force`` for every skill of the source.
ALL: Final = "*"


@dataclass(slots=True)
class StagedSkill:
    """One skill copied into the staging folder, audited, not installed yet."""

    name: str
    """The skill's name, which is its folder name once installed."""
    staged: Path
    """The staged copy."""
    target: Path
    """Where it is installed: ``<skills folder>/<name>``."""
    replaces: bool
    """True when a skill of that name is installed already (allowed with force)."""
    source: str = ""
    """The skill's folder inside the source, relative and ``/``-separated."""
    findings: list[Finding] = field(default_factory=list)
    """The audit's findings on the staged copy (and the compiled files left out)."""
    warnings: list[SkillDiagnostic] = field(default_factory=list)
    """The catalog's warnings about the skill, as list_skills would give them."""
    forced: bool = False
    """True when ``force`` let an audit error or a replacement through."""


@dataclass(frozen=True, slots=True)
class Refused:
    """A skill of the source that is not installed, and why."""

    folder: str
    """The skill's folder inside the source, relative and ``/``-separated."""
    name: str
    """The skill's name when it has one, else the folder's last part."""
    reason: str
    """Why, and what to do about it, in a sentence or two."""
    forceable: bool = False
    """True when ``--force`` naming the skill would install it."""


class Installation:
    """The staged skills of one SOURCE, until `commit` installs them or `close` drops them."""

    def __init__(self, source: Source, origin: dict[str, Any], staging: Path) -> None:
        self.source = source
        self.origin = origin
        """The lock's ``source`` of every skill of this install."""
        self.staging = staging
        self.skills: list[StagedSkill] = []
        """The skills that `commit` installs."""
        self.refused: list[Refused] = []
        """The skills of the source that are not installed, with their reasons."""
        self.refused_findings: list[Finding] = []
        """The audit's findings on the skills refused after their audit."""
        self.deeper: SkillDiagnostic | None = None
        """The ``skills_deeper`` warning when SKILL.md files lie deeper than the search."""

    @property
    def findings(self) -> list[Finding]:
        """The audit's findings on every staged skill, in order."""
        return [f for skill in self.skills for f in skill.findings]

    def commit(self) -> list[str]:
        """Move each staged skill into place; return their names.

        A skill replaces the one of the same name only when it was forced: the old
        folder is renamed away, the new one renamed in, then the old one removed, so the
        name always holds a whole skill, old or new (for an instant, none). A skill
        whose name was taken since it was staged is moved to `refused` instead.
        """
        installed: list[str] = []
        for skill in self.skills:
            old = self.staging / f".replaced-{skill.name}"
            replacing = os.path.lexists(skill.target)
            if replacing and not skill.forced:
                self.refused.append(_exists(skill.source, skill.name, skill.target.parent))
                continue
            if replacing:
                skill.target.rename(old)
            try:
                skill.staged.rename(skill.target)
            except OSError:
                if replacing:
                    old.rename(skill.target)
                raise
            installed.append(skill.name)
        self.skills = [skill for skill in self.skills if skill.name in installed]
        self.close()
        return installed

    def close(self) -> None:
        """Remove the staging folder and whatever is left in it."""
        remove_tree(self.staging)

    def __enter__(self) -> Installation:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _exists(folder: str, name: str, skills_dir: Path) -> Refused:
    return Refused(
        folder,
        name,
        f"a skill named '{name}' is already installed in {skills_dir}; name it with "
        f"--force={name} to replace it (in one step), or remove it first.",
        forceable=True,
    )


def _name_of(copy: Path, folder_name: str) -> tuple[str | None, str]:
    """(the name the skill installs under, or None; why not) for the staged `copy`: its
    frontmatter name when it follows the rule, else the source folder's name when that
    does (the catalog lists such a skill under its folder name)."""
    try:
        fields = read_skill_md_text((copy / SKILL_FILE).read_bytes()).fields or {}
    except OSError as exc:
        return None, f"its {SKILL_FILE} cannot be read ({exc.strerror})."
    name = fields.get("name")
    if isinstance(name, str) and is_valid_name(name):
        return name, ""
    if is_valid_name(folder_name):
        return folder_name, ""
    shown = repr(name) if isinstance(name, str) else "missing"
    return None, (
        f"neither its name ({shown}) nor its folder's name follows the naming rule "
        f"({NAME_RULE}), so no tool call could name it. Fix the name, then install it."
    )


def _relative(folder: Path, root: Path) -> str:
    return folder.relative_to(root).as_posix() if folder != root else "."


def _stage_one(
    folder: Path,
    root: Path,
    installation: Installation,
    index: int,
    budget: Budget,
    max_file_bytes: int,
) -> StagedSkill | Refused:
    """Copy one skill folder into the staging folder and read it back as a skill."""
    where = _relative(folder, root)
    copy = installation.staging / f".skill-{index}"
    try:
        left_out = copy_skill(folder, copy, budget, max_file_bytes)
    except LimitReached:
        raise
    except (StdToolsError, OSError) as exc:
        reason = str(exc) if isinstance(exc, StdToolsError) else f"cannot be copied ({exc})."
        remove_tree(copy)
        return Refused(where, folder.name, reason)
    name, why = _name_of(copy, folder.name)
    if name is None:
        remove_tree(copy)
        return Refused(where, folder.name, why)
    staged = installation.staging / name
    taken = next((s for s in installation.skills if s.name == name), None)
    if taken is not None or os.path.lexists(staged):
        remove_tree(copy)
        first = taken.source if taken is not None else "another folder"
        return Refused(
            where,
            name,
            f"the source holds two skills named '{name}': the one in {first} is installed "
            "(the shallower, then the first by path, as the server picks). Install this "
            "one with #subfolder into another skills folder, or rename it.",
        )
    copy.rename(staged)
    record, diagnostics = read_skill(staged, max_bytes=max_file_bytes, root=installation.staging)
    if record is None:
        remove_tree(staged)
        said = " ".join(d.message for d in diagnostics if d.level == "error")
        return Refused(where, name, f"it does not read as a skill: {said}")
    skill = StagedSkill(name, staged, Path(), False, where)
    skill.warnings = [d for d in diagnostics if d.level == "warning" and d.code in _LISTED]
    message = (
        "compiled Python, left out of the install: Python may run it instead of the "
        "reviewed source, and no one can review it. Remove it from the skill."
    )
    skill.findings = [finding(name, path, 0, "bytecode", message) for path in left_out]
    return skill


# The warnings of the catalog's own rules that install passes on (the audit's findings are
# reported by the audit itself).
_LISTED: Final = FIELD_RULE_WARNINGS | {"unquoted_colon"}


def prepare(
    text: str,
    skills_dir: Path,
    *,
    force: Collection[str] = (),
    depth: int = 1,
    limits: Limits | None = None,
    max_file_bytes: int,
    cwd: Path | None = None,
) -> Installation:
    """Fetch the SOURCE `text`, stage its skills next to `skills_dir` and audit them.

    `force` holds `ALL` or the names of the skills whose audit errors (and installed
    namesakes) are let through; `depth` is the search depth below the source's top. The
    caller commits or closes the returned `Installation` (a context manager that closes
    it); every skill is staged or refused (`Installation.refused`).

    Raises:
        StdToolsError: the SOURCE cannot be read or fetched, an archive entry is refused,
            a limit of the whole install is reached, or the source holds no skill.
    """
    limits = limits if limits is not None else Limits()
    source = parse_source(text, cwd)
    skills_dir = skills_dir.absolute()
    work = Path(tempfile.mkdtemp(prefix="dpt-install-"))
    try:
        root, origin = fetch(source, work, limits)
        found = discover(root, depth)
        # The shallower skill of a name wins, then the first by path: the server's rule.
        folders = sorted(found.folders, key=lambda f: (len(f.relative_to(root).parts), f))
        skills_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=skills_dir))
        installation = Installation(source, origin, staging)
        installation.deeper = found.deeper
        try:
            budget = Budget(limits, f"The source {source.location}")
            for index, folder in enumerate(folders):
                outcome = _stage_one(folder, root, installation, index, budget, max_file_bytes)
                if isinstance(outcome, Refused):
                    installation.refused.append(outcome)
                    continue
                outcome.target = skills_dir / outcome.name
                outcome.replaces = os.path.lexists(outcome.target)
                installation.skills.append(outcome)
            _judge(installation, force, max_file_bytes)
        except BaseException:
            installation.close()
            raise
    finally:
        remove_tree(work)
    return installation


def _judge(installation: Installation, force: Collection[str], max_file_bytes: int) -> None:
    """Audit each staged skill; refuse those with an audit error or an installed
    namesake unless `force` names them."""
    kept: list[StagedSkill] = []
    for skill in installation.skills:
        skill.findings.extend(audit_skill(skill.staged, max_bytes=max_file_bytes))
        forced = ALL in force or skill.name in force
        errors = sum(f.level == "error" for f in skill.findings)
        if errors and not forced:
            installation.refused_findings.extend(skill.findings)
            installation.refused.append(
                Refused(
                    skill.source,
                    skill.name,
                    f"the audit found {errors} error(s) in it (printed above). Read them; "
                    f"if you trust the skill anyway, name it with --force={skill.name}.",
                    forceable=True,
                )
            )
            remove_tree(skill.staged)
            continue
        if skill.replaces and not forced:
            installation.refused.append(_exists(skill.source, skill.name, skill.target.parent))
            remove_tree(skill.staged)
            continue
        skill.forced = forced
        kept.append(skill)
    installation.skills = kept


def record_in_lock(
    lock: Path, skills_dir: Path, names: list[str], origin: dict[str, Any], max_bytes: int
) -> dict[str, Any]:
    """Write the lock entries of the installed `names` (with `origin` as their source)
    into the lock at `lock`, created when missing, other entries kept; return the lock's
    skills.

    Raises:
        ConfigError: the lock exists but is not a lock.
        StdToolsError: an installed skill cannot be read for its digests.
    """
    skills: dict[str, Any] = dict(read_lock(lock)) if lock.exists() else {}
    root = skills_dir.absolute()
    for name in names:
        record, diagnostics = read_skill(root / name, max_bytes=max_bytes, root=root)
        if record is None:
            said = " ".join(d.message for d in diagnostics)
            raise StdToolsError(f"The installed skill {name} cannot be read for the lock: {said}")
        skills[name] = lock_entry(record, max_bytes, origin)
    write_lock(lock, {"format": LOCK_FORMAT, "skills": skills})
    return skills
