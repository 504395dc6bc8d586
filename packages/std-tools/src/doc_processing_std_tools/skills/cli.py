"""``dpt-skills``: list, validate and create Agent Skills from the command line.

``dpt-skills list`` prints the catalog the skills server would serve (``--json`` prints
the exact list_skills payload), ``dpt-skills validate PATH...`` prints every diagnostic,
adding warnings for what the Agent Skills specification does not allow (`lint`), and exits
with status 1 when any is an error (or, with ``--strict``, a warning), and ``dpt-skills new
NAME --description TEXT`` writes a template skill. ``dpt-skills audit [PATH...]`` prints
the security findings of `audit` and exits with status 1 on an error (``--strict``: on
any finding). ``dpt-skills lock`` writes the skills lock (`lock`) and ``--check`` compares
it with the disk; ``dpt-skills install SOURCE`` fetches, audits, installs and locks skills
from elsewhere (`install`). Messages are worded for a person at a
terminal (`audience.PERSON`). The MCP SDK is never imported.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Final, TextIO

from .._version import __version__
from ..config import Settings, get_settings, load_settings
from ..errors import StdToolsError
from . import actions
from .audit.folders import audit_skill
from .catalog.discovery import (
    discover,
    misnamed_skill_md,
    misnamed_skill_md_diagnostic,
    no_skills_message,
)
from .catalog.scan import SKILL_FILE, SkillCatalog, SkillDiagnostic, read_skill, scan_once
from .cli_install import run_install
from .cli_report import finding_lines, summary_lines, terminal_safe
from .core.audience import person
from .core.diagnostics import CODES
from .state import SkillsState
from .supply.install import ALL
from .supply.lock import LOCAL, build_lock, compare, read_lock, write_lock
from .supply.unpack import DEFAULT_MAX_BYTES, DEFAULT_MAX_FILES

__all__ = ["main"]

#: Lines ``dpt-skills validate`` prints for one diagnostic code without --verbose; the
#: others are counted in the summary by code.
SHOWN_PER_CODE: Final = 3


def _settings(skills_dir: str | None, depth: str | None = None) -> Settings:
    overrides: dict[str, str] = {}
    if skills_dir is not None:
        overrides["DPTTOOLS_SKILLS_DIR"] = skills_dir
    if depth is not None:
        overrides["DPTTOOLS_SKILLS_DEPTH"] = depth
    if not overrides:
        return get_settings()
    # Checked like the environment variables they stand for (an empty value is an error).
    return load_settings({**os.environ, **overrides})


def _shorten(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: max(width - 3, 0)] + "..."


def print_line(text: str, file: TextIO | None = None) -> None:
    """Print `text` as one terminal-safe line (see `cli_report.terminal_safe`)."""
    print(terminal_safe(text), file=file if file is not None else sys.stdout)


def _print_diagnostic(where: str, diagnostic: SkillDiagnostic) -> None:
    print_line(f"{where}: {diagnostic.level} [{diagnostic.code}] {diagnostic.message}")


def _cmd_list(args: argparse.Namespace) -> int:
    settings = _settings(args.skills_dir, args.skills_depth)
    catalog = SkillsState().scan(settings)
    if args.json:
        print(catalog.json)
        return 0
    note = catalog.note_for(person(args.skills_dir))
    if note and not catalog.skills_dirs:
        print(note)
        return 0
    if catalog.skills:
        name_width = max(len("NAME"), *(len(s.name) for s in catalog.skills))
        total = shutil.get_terminal_size((100, 24)).columns
        description_width = max(total - name_width - 2, 20)
        print(f"{'NAME'.ljust(name_width)}  DESCRIPTION")
        for skill in catalog.skills:
            print_line(
                f"{skill.name.ljust(name_width)}  {_shorten(skill.description, description_width)}"
            )
    roots = ", ".join(str(root) for root in settings.skill_roots)
    print_line(f"{catalog.count} skill(s) in {roots}")
    if note:
        print(note)
    for diagnostic in catalog.diagnostics:
        _print_diagnostic(diagnostic.skill, diagnostic)
    existing = [root for root in settings.skill_roots if root.is_dir()]
    if catalog.count == 0 and existing:
        for root in existing:
            print_line(f"dpt-skills: {no_skills_message(root, settings.skills_depth)}", sys.stderr)
        return 1
    return 0


def _validate_one(
    path: Path, max_bytes: int, depth: int
) -> tuple[int, list[tuple[str, SkillDiagnostic]]]:
    """(skills checked, diagnostics with where they were found) for one PATH argument."""
    if path.is_file():
        if path.name.lower() == SKILL_FILE.lower() and path.name != SKILL_FILE:
            diagnostic = misnamed_skill_md_diagnostic(path.parent.name, path.name, path.parent)
            return 1, [(str(path), diagnostic)]
        if path.name != SKILL_FILE:
            problem = (
                f"{path} is a file but not a {SKILL_FILE}; pass a skill folder or its SKILL.md."
            )
            return 0, [(str(path), SkillDiagnostic(path.name, "error", "not_a_skill", problem))]
        path = path.parent
    if not path.exists():
        problem = f"{path} does not exist; pass a skill folder, a SKILL.md or a skills folder."
        return 0, [(str(path), SkillDiagnostic(path.name, "error", "not_found", problem))]
    if (path / SKILL_FILE).is_file():
        folder = path.absolute()
        _, diagnostics = read_skill(folder, max_bytes=max_bytes, root=folder.parent, lint=True)
        return 1, [(str(path), d) for d in diagnostics]
    actual = misnamed_skill_md(path)
    if actual is not None:
        return 1, [(str(path), misnamed_skill_md_diagnostic(path.name, actual, path))]
    catalog = scan_once(path.absolute(), max_bytes=max_bytes, depth=depth, lint=True)
    checked = catalog.count + len({d.skill for d in catalog.diagnostics if d.level == "error"})
    if checked == 0:
        problem = no_skills_message(path, depth)
        return 0, [(str(path), SkillDiagnostic(path.name, "error", "no_skills", problem))]
    return checked, [
        (str(path) if d.code == "skills_deeper" else str(path / d.skill), d)
        for d in catalog.diagnostics
    ]


def _cmd_validate(args: argparse.Namespace) -> int:
    settings = _settings(None, args.skills_depth)
    max_bytes = settings.max_file_size_bytes
    checked = 0
    found: list[tuple[str, SkillDiagnostic]] = []
    for raw in args.paths:
        count, diagnostics = _validate_one(Path(raw).expanduser(), max_bytes, settings.skills_depth)
        checked += count
        found.extend(diagnostics)
    by_code = Counter(diagnostic.code for _, diagnostic in found)
    shown: Counter[str] = Counter()
    for where, diagnostic in found:
        if args.verbose or shown[diagnostic.code] < SHOWN_PER_CODE:
            _print_diagnostic(where, diagnostic)
            shown[diagnostic.code] += 1
    errors = sum(diagnostic.level == "error" for _, diagnostic in found)
    warnings = len(found) - errors
    if any(count > SHOWN_PER_CODE for count in by_code.values()):
        _print_summary(by_code, shown, found)
    print(f"Checked {checked} skill(s): {errors} error(s), {warnings} warning(s).")
    if errors:
        return 1
    if warnings and args.strict:
        print("Failed: --strict treats warnings as errors.")
        return 1
    return 0


def _print_summary(
    by_code: Counter[str], shown: Counter[str], found: list[tuple[str, SkillDiagnostic]]
) -> None:
    """The diagnostics by code, errors first then the most frequent, each with what it
    means and how many of its lines were left out (--verbose prints them)."""
    levels = {diagnostic.code: diagnostic.level for _, diagnostic in found}
    print("By code:")
    for code, count in sorted(by_code.items(), key=lambda i: (levels[i[0]] != "error", -i[1])):
        info = CODES.get(code)
        meaning = f": {info.meaning}" if info is not None else ""
        left_out = count - shown[code]
        more = f" ({left_out} not shown; --verbose prints every line)" if left_out else ""
        print(f"  {count:>6}  {code} ({levels[code]}s){meaning}{more}")


def _cmd_audit(args: argparse.Namespace) -> int:
    settings = _settings(args.skills_dir, args.skills_depth)
    paths = [Path(raw).expanduser() for raw in args.paths] or list(settings.skill_roots)
    folders: list[Path] = []
    notes: list[SkillDiagnostic] = []
    for path in paths:
        found = discover(path, settings.skills_depth)
        folders.extend(found.folders)
        notes.extend(found.refused)
        if found.deeper is not None:
            notes.append(found.deeper)
    findings = [
        finding
        for folder in folders
        for finding in audit_skill(folder, max_bytes=settings.max_file_size_bytes)
    ]
    errors = sum(finding.level == "error" for finding in findings)
    if args.json:
        payload = {
            "skills": len(folders),
            "findings": [f.as_dict() for f in findings],
            "notes": [note.to_payload() for note in notes],
        }
        print(json.dumps(payload, ensure_ascii=True, indent=2))
    else:
        for line in finding_lines(findings):
            print(line)
        for note in notes:
            _print_diagnostic(note.skill, note)
        for line in summary_lines([(f.code, f.level) for f in findings]):
            print(line)
        warnings = len(findings) - errors
        print(f"Audited {len(folders)} skill(s): {errors} error(s), {warnings} warning(s).")
        if any(note.code == "skills_deeper" for note in notes):
            print("Not audited: the SKILL.md files deeper down that the note above names.")
    return 1 if errors or (args.strict and (findings or notes)) else 0


def _cmd_lock(args: argparse.Namespace) -> int:
    settings = _settings(args.skills_dir, args.skills_depth)
    output = _lock_path(args.output, settings)
    # Every listed skill, never the pinned listing: locking must see what is on disk.
    catalog = SkillCatalog().scan_roots(
        settings.skill_roots, max_bytes=settings.max_file_size_bytes, depth=settings.skills_depth
    )
    if catalog.count == 0:
        for root in settings.skill_roots:
            print_line(f"dpt-skills: {no_skills_message(root, settings.skills_depth)}", sys.stderr)
        return 1
    old = read_lock(output) if args.check or output.exists() else {}
    sources = {name: entry.get("source", LOCAL) for name, entry in old.items()}
    document, problems = build_lock(catalog, settings.max_file_size_bytes, sources)
    for problem in problems:
        print_line(f"{problem} (not locked)", sys.stderr)
    skills = document["skills"]
    if args.check:
        changes = compare(old, skills)
        for change in changes:
            files = f": {', '.join(change.files)}" if change.files else ""
            print_line(f"{change.skill}: {change.kind}{files}")
        if changes or problems:
            print(f"{len(changes)} skill(s) differ from {output}; run dpt-skills lock to accept.")
            return 1
        print(f"All {len(skills)} skill(s) match {output}.")
        return 0
    write_lock(output, document)
    count = sum(len(entry["files"]) for entry in skills.values())
    print(f"Locked {len(skills)} skill(s), {count} file(s), in {output}.")
    return 1 if problems else 0


def _lock_path(given: str | None, settings: Settings) -> Path:
    """--output / --lock, else DPTTOOLS_SKILLS_LOCK, else ./skills.lock."""
    path = Path(given).expanduser() if given else settings.skills_lock
    return path if path is not None else Path("skills.lock")


def _cmd_install(args: argparse.Namespace) -> int:
    settings = _settings(args.skills_dir, args.skills_depth)
    report = run_install(args, settings, _lock_path(args.lock, settings))
    for line in report.out:
        print(line)
    for line in report.err:
        print(line, file=sys.stderr)
    return report.code


def _cmd_new(args: argparse.Namespace) -> int:
    settings = _settings(args.skills_dir)
    print(
        actions.create_skill(
            SkillsState(), settings, args.name, args.description, person(args.skills_dir)
        )
    )
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number above 0")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpt-skills",
        description="List, validate and create Agent Skills (SKILL.md folders).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    skills_dir_help = "the skills folder (default: DPTTOOLS_SKILLS_DIR, else ./.agent_skills)"
    depth_help = (
        "how many folder levels down skills are searched (default: DPTTOOLS_SKILLS_DEPTH, "
        "else 1: direct subfolders only)"
    )

    listing = commands.add_parser("list", help="list the skills the server would serve")
    listing.add_argument(
        "--skills-dir",
        help=f"the skills folders, separated by '{os.pathsep}' (default: DPTTOOLS_SKILLS_DIR, "
        "else ./.agent_skills)",
    )
    listing.add_argument("--skills-depth", metavar="N", help=depth_help)
    listing.add_argument("--json", action="store_true", help="print the list_skills JSON")
    listing.set_defaults(handler=_cmd_list)

    validate = commands.add_parser(
        "validate", help="check skills and print every diagnostic (exit 1 on any error)"
    )
    validate.add_argument(
        "paths", nargs="+", metavar="PATH", help="a skill folder, its SKILL.md, or a skills folder"
    )
    validate.add_argument("--skills-depth", metavar="N", help=depth_help)
    validate.add_argument(
        "--strict", action="store_true", help="exit with status 1 on warnings too"
    )
    validate.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help=f"print every diagnostic (default: the first {SHOWN_PER_CODE} of each code, "
        "then a summary by code)",
    )
    validate.set_defaults(handler=_cmd_validate)

    audit = commands.add_parser(
        "audit", help="look for hidden text, links out, shell scripts and the like in skills"
    )
    audit.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="a skill folder, its SKILL.md, or a skills folder (default: the skills folders)",
    )
    audit.add_argument("--skills-dir", help=skills_dir_help)
    audit.add_argument("--skills-depth", metavar="N", help=depth_help)
    audit.add_argument("--json", action="store_true", help="print the findings as JSON")
    audit.add_argument("--strict", action="store_true", help="exit with status 1 on warnings too")
    audit.set_defaults(handler=_cmd_audit)

    lock = commands.add_parser(
        "lock", help="record every file of every skill with its SHA-256 (--check: compare)"
    )
    lock.add_argument("--skills-dir", help=skills_dir_help)
    lock.add_argument("--skills-depth", metavar="N", help=depth_help)
    lock.add_argument(
        "--output",
        metavar="FILE",
        help="the lock file (default: DPTTOOLS_SKILLS_LOCK, else ./skills.lock)",
    )
    lock.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 naming every changed, new or missing skill",
    )
    lock.set_defaults(handler=_cmd_lock)

    install = commands.add_parser(
        "install",
        help="fetch skills (folder, .zip/.tar.gz, git), audit the copy, install it and lock it",
    )
    install.add_argument(
        "source",
        metavar="SOURCE",
        help="a skill folder or collection, a .zip or .tar.gz (path or https URL), or a git "
        "repository (https URL, git+file:// or a path with @REF); @REF picks a branch, tag or "
        "commit, #SUBFOLDER a folder inside",
    )
    install.add_argument("--skills-dir", help=skills_dir_help + "; skills go into the first")
    install.add_argument(
        "--skills-depth",
        metavar="N",
        help="how many folder levels below the SOURCE's top skills are searched (default: "
        "DPTTOOLS_SKILLS_DEPTH, else 1)",
    )
    install.add_argument(
        "--lock",
        metavar="FILE",
        help="the lock to record the skills in (default: DPTTOOLS_SKILLS_LOCK, else "
        "./skills.lock); created when missing",
    )
    install.add_argument(
        "--force",
        nargs="?",
        action="append",
        const=ALL,
        metavar="NAME",
        help="install despite error-level audit findings, and replace a skill of the same "
        "name: every skill, or (--force=NAME, repeatable) only the named ones",
    )
    install.add_argument(
        "--max-files",
        type=_positive_int,
        default=DEFAULT_MAX_FILES,
        metavar="N",
        help=f"entries an archive or source may hold (default: {DEFAULT_MAX_FILES})",
    )
    install.add_argument(
        "--max-size-mb",
        type=_positive_float,
        default=DEFAULT_MAX_BYTES / (1024 * 1024),
        metavar="MB",
        help="MiB downloaded, and unpacked or copied, at most (default: "
        f"{DEFAULT_MAX_BYTES // (1024 * 1024)})",
    )
    install.set_defaults(handler=_cmd_install)

    new = commands.add_parser("new", help="create a skill folder with a template SKILL.md")
    new.add_argument("name", metavar="NAME", help="1-64 lowercase letters, digits and hyphens")
    new.add_argument("--description", required=True, help="what the skill does and when to use it")
    new.add_argument("--skills-dir", help=skills_dir_help)
    new.set_defaults(handler=_cmd_new)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dpt-skills`` with `argv` (default: the process arguments); return the exit code."""
    args = _parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except StdToolsError as exc:
        print(f"dpt-skills: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader left early (`dpt-skills list --json | head`): stop quietly, and keep
        # the interpreter's final flush from complaining about the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        print(f"dpt-skills: {exc}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
