"""One skill folder -> its record and diagnostics: SKILL.md read link-safely, then parsed.

The SKILL.md is read through `_io` by the rules load_skill uses, so whatever is listed
loads: first by `_io.read_plain` (one descriptor walk with ``O_NOFOLLOW``, the common case
of a cold scan), and whenever that steps aside (a link on the way, or any problem) by the
full walk, which follows the links allowed and words the refusal. Its frontmatter is
parsed and checked by `frontmatter` (and, for validate, linted).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ... import _io
from ...errors import (
    FileTooLargeError,
    InvalidArgumentError,
    NotFoundError,
    NotRegularFileError,
    PathOutsideRootError,
    StdToolsError,
)
from ...paths import real_path
from ..audit.hidden import hidden_runs
from ..audit.skill_audit import audit_files, skill_md_diagnostics
from ..core.diagnostics import diagnostic
from ..core.frontmatter import check_fields, read_skill_md_text
from ..core.lint import lint as lint_skill_md
from ..core.records import EXCERPT_LENGTH, SKILL_FILE, SkillDiagnostic, SkillRecord, is_hidden_name

__all__ = ["read_skill", "resource_files"]


def resource_files(folder: Path, root: Path) -> tuple[list[str], list[str]]:
    """The files of a skill folder and its immediate subfolders (relative, sorted), and
    the symbolic links among them that lead outside `root` (sorted), which no tool reads.

    Hidden names, ``__pycache__``, ``node_modules`` and the SKILL.md itself are left out,
    as are links that run into a loop. A link leading outside is in the second list only,
    whether it points to a file or a folder (a folder is not entered). `root` is resolved
    only when a link is met: most skills hold none. (The catalog's ``link_outside_skill``
    warning names the same links, from the walk of `skill_audit.audit_files`.)
    """
    real_roots: list[Path] = []
    found: list[str] = []
    outside: list[str] = []

    def visible_files(directory: Path, prefix: str, depth: int) -> None:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return
        for entry in entries:
            if is_hidden_name(entry.name):
                continue
            try:
                if entry.is_symlink():
                    if not real_roots:
                        real_roots.append(root.resolve())
                    real_root = real_roots[0]
                    real = real_path(Path(entry.path))
                    if real != real_root and not real.is_relative_to(real_root):
                        outside.append(prefix + entry.name)
                        continue
                if entry.is_file():
                    if depth or entry.name != SKILL_FILE:
                        found.append(prefix + entry.name)
                elif entry.is_dir() and depth == 0:
                    visible_files(Path(entry.path), f"{entry.name}/", 1)
            except OSError:
                continue

    visible_files(folder, "", 0)
    found.sort()
    outside.sort()
    return found, outside


def _hidden_text_diagnostic(where: str, data: bytes) -> SkillDiagnostic | None:
    """The ``hidden_text`` warning when the SKILL.md bytes `data` hold text in
    characters no reader sees (the audit's errors among invisible characters: an emoji's
    joiner or a zero-width space that breaks a code fence is not one), else None."""
    if data.isascii():
        return None
    text = data.decode("utf-8", "replace")
    count = sum(n for kind, _, n in hidden_runs(text) if kind != "zero_width_in_code")
    if not count:
        return None
    return SkillDiagnostic.of(
        where,
        diagnostic(
            "hidden_text",
            f"SKILL.md hides text: {count} invisible character(s) (Unicode tag, zero-width, "
            "bidirectional or other format characters, or variation-selector runs) that a "
            "person reading the file does not see. list_skills, load_skill and "
            "load_skill_resource show them escaped as [U+....] or [hidden: ...]; remove "
            "them (dpt-skills audit says where).",
        ),
    )


def _read_diagnostic(where: str, code: str, message: str) -> SkillDiagnostic:
    return SkillDiagnostic(where, "error", code, message)


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


def _read_plain(base: Path, where: str, max_bytes: int) -> bytes | None:
    """The SKILL.md of the skill folder `where` (``/``-separated) under `base`, read by
    `_io.read_plain` when the way there is plain; None when `_read_checked` must read it
    (a link on the way, any problem, a folder name a path check would refuse, or bytes
    that are not text)."""
    if "\\" in where or ":" in where or where[:1].isspace():
        return None
    parts = where.split("/")
    parts.append(SKILL_FILE)
    data = _io.read_plain(base, parts, limit=max_bytes)
    return None if data is None or _io.is_binary(data) else data


def _read_checked(
    folder: Path, where: str, max_bytes: int, root: Path | None
) -> bytes | SkillDiagnostic:
    """The SKILL.md of `folder`, its links judged and followed as load_skill would, or
    the error diagnostic (attributed to `where`) that says why it cannot be read."""
    skill_md = folder / SKILL_FILE
    if root is not None and skill_md.is_symlink():
        try:
            target = real_path(skill_md)
        except OSError:
            return _read_diagnostic(
                where,
                "unreadable",
                "SKILL.md is a symbolic link that leads into a loop of symbolic links; "
                "replace it with the file itself.",
            )
        if not target.is_relative_to(root.resolve()):
            return _read_diagnostic(
                where,
                "outside_skills_dir",
                f"SKILL.md is a symbolic link leading outside the skills folder {root}; "
                "skills must live inside the skills folder, so copy the file there instead "
                "of linking it.",
            )
    problem = _read_skill_md(folder, max_bytes, root)
    if isinstance(problem, SkillDiagnostic):
        return SkillDiagnostic(where, problem.level, problem.code, problem.message)
    return problem


def read_skill(
    folder: Path,
    *,
    max_bytes: int,
    name: str | None = None,
    root: Path | None = None,
    lint: bool = False,
    files: bool = True,
) -> tuple[SkillRecord | None, list[SkillDiagnostic]]:
    """Read one skill folder's SKILL.md into a record (None when skipped) and diagnostics.

    `name` is the folder name used for the record and the name checks (default: the last
    part of `folder`). A SKILL.md larger than `max_bytes` is an error, as is one that
    cannot be read or is not a regular file (a pipe or a device would never end). When
    `root` is given, a SKILL.md that is a symbolic link leading outside it is an error.
    Diagnostics name the folder relative to `root` (or its name). `lint` adds the warnings
    of `lint.lint` (what the specification does not allow but the catalog accepts).
    The audit's findings in SKILL.md are always given; with `files` (the default) those
    of the skill's other files too, links out of the skills folder among them
    (`skill_audit.audit_files`; the catalog, which keeps them apart, passes False).
    """
    name = folder.name if name is None else name
    # Plain string work: this runs once per skill on a cold scan.
    inside = f"{root}{os.sep}" if root is not None else None
    if root is not None and inside is not None and str(folder).startswith(inside):
        base, where = root, str(folder)[len(inside) :].replace(os.sep, "/")
    else:
        base, where = folder.parent, folder.name
    data = _read_plain(base, where, max_bytes)
    if data is None:
        data_or_problem = _read_checked(folder, where, max_bytes, root)
        if isinstance(data_or_problem, SkillDiagnostic):
            return None, [data_or_problem]
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
    hidden = _hidden_text_diagnostic(where, data)
    if hidden is not None:
        diagnostics.append(hidden)
    # The audit's findings in SKILL.md's text (warnings; the files' are the catalog's,
    # cached with their own stamps, or validate's here).
    diagnostics.extend(
        skill_md_diagnostics(where, data.decode("utf-8", "replace"), fields=parsed.fields)
    )
    if files:
        diagnostics.extend(audit_files(folder, where, base, max_bytes).diagnostics)
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
        body=parsed.body[:EXCERPT_LENGTH],
        digest="sha256:" + hashlib.sha256(data).hexdigest(),
        size=len(data),
    )
    return record, diagnostics
