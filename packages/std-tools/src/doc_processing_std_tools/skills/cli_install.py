"""``dpt-skills install``: each skill's outcome, worded for the command line, and the
exit code.

Every skill of the SOURCE is named once: installed (with the catalog's warnings about
it), or not installed with its reason. The exit code says how it went: `EXIT_ALL` when
every skill of the source was installed, `EXIT_SOME` when some were and others were
refused, `EXIT_NONE` when none was (or the SOURCE could not be read at all). The lines
are returned, terminal-safe, for the command line (`cli`) to print.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ..config import Settings
from .catalog.scan import SkillCatalog
from .cli_report import finding_lines, summary_lines, terminal_safe
from .supply.install import ALL, prepare, record_in_lock
from .supply.lock import read_lock
from .supply.sources import redact
from .supply.unpack import Limits

__all__ = ["EXIT_ALL", "EXIT_NONE", "EXIT_SOME", "Report", "run_install"]

#: Every skill of the source was installed.
EXIT_ALL: Final = 0
#: No skill was installed.
EXIT_NONE: Final = 1
#: Some skills were installed, others were not (each is named with its reason).
EXIT_SOME: Final = 3


@dataclass(slots=True)
class Report:
    """What the command prints, and its exit code."""

    out: list[str] = field(default_factory=list)
    """Lines for standard output."""
    err: list[str] = field(default_factory=list)
    """Lines for standard error: the skills not installed, with their reasons."""
    code: int = EXIT_ALL


def run_install(args: argparse.Namespace, settings: Settings, lock_file: Path) -> Report:
    """Run ``dpt-skills install`` with the parsed `args`; return what to print."""
    limits = Limits(max_bytes=int(args.max_size_mb * 1024 * 1024), max_files=args.max_files)
    if lock_file.exists():
        read_lock(lock_file)  # a lock that cannot be updated is said before anything moves
    max_bytes = settings.max_file_size_bytes
    shown = redact(args.source)
    force = frozenset(args.force or ())
    report = Report()
    out, err = report.out, report.err
    with prepare(
        args.source,
        settings.skills_dir,
        force=force,
        depth=settings.skills_depth,
        limits=limits,
        max_file_bytes=max_bytes,
    ) as installation:
        staged = len(installation.skills) + len(installation.refused)
        findings = [f for skill in installation.skills for f in skill.findings]
        findings += installation.refused_findings
        out.extend(finding_lines(findings))
        for skill in installation.skills:
            for warning in skill.warnings:
                out.append(f"{skill.name}: warning [{warning.code}] {warning.message}")
        if installation.deeper is not None:
            deeper = installation.deeper
            out.append(f"{shown}: warning [{deeper.code}] {deeper.message}")
        replaced = [skill.name for skill in installation.skills if skill.replaces]
        installed = installation.commit()
        refused = installation.refused
    out.extend(summary_lines([(f.code, f.level) for f in findings]))
    origin = installation.origin
    commit = f" at commit {origin['commit']}" if "commit" in origin else ""
    for item in refused:
        where = "" if item.folder in (".", item.name) else f" ({item.folder})"
        err.append(f"Not installed: {item.name}{where}: {item.reason}")
    unknown = sorted(name for name in force if name != ALL and name not in installed)
    if unknown:
        err.append(
            f"--force named {', '.join(unknown)}, which the source does not hold or which "
            "was refused for another reason (see above)."
        )
    if installed:
        out.append(
            f"Installed {', '.join(installed)} into {settings.skills_dir} from {shown}{commit} "
            f"({len(installed)} of {staged} skill(s))."
        )
        if replaced:
            out.append(f"Replaced the skill(s) installed before: {', '.join(replaced)}.")
        skills = record_in_lock(lock_file, settings.skills_dir, installed, origin, max_bytes)
        out.append(f"Recorded {len(installed)} skill(s) in the lock {lock_file}.")
        out.extend(_unlocked(settings, skills, max_bytes))
    if not installed:
        err.append(f"Installed none of the {staged} skill(s) of {shown}.")
        report.code = EXIT_NONE
    elif refused:
        err.append(
            f"Installed {len(installed)} of {staged} skill(s); {len(refused)} not installed "
            "(named above with the reason)."
        )
        report.code = EXIT_SOME
    report.out[:] = [terminal_safe(line) for line in out]
    report.err[:] = [terminal_safe(line) for line in err]
    return report


def _unlocked(settings: Settings, skills: dict[str, object], max_bytes: int) -> list[str]:
    catalog = SkillCatalog().scan_roots(
        settings.skill_roots, max_bytes=max_bytes, depth=settings.skills_depth
    )
    unlocked = [record.name for record in catalog.skills if record.name not in skills]
    if not unlocked:
        return []
    return [
        f"{len(unlocked)} other skill(s) are not in the lock ({', '.join(unlocked[:5])}"
        f"{', ...' if len(unlocked) > 5 else ''}); audit them, then run dpt-skills lock "
        "to add them, or a server pinned to the lock leaves them out."
    ]
