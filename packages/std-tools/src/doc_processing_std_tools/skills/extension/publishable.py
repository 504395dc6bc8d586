"""Why the MCP Skills extension leaves a skill out: the rules, free of MCP.

A skill the five tools list may still be one the extension cannot carry: its frontmatter
must pass verbatim as JSON and follow the Agent Skills specification's types, and its
files must fit the extension's limits (512 files, 16 MiB per skill) and ours (no file
over DPTTOOLS_MAX_FILE_SIZE_MB). Each rule here returns a `SkillDiagnostic` naming the
reason, or None; `LEFT_OUT_CODES` lists the codes added to the catalog's own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..catalog.scan import SKILL_FILE, SkillDiagnostic, SkillRecord
from ..catalog.skill_files import Tree
from ..core.diagnostics import FIELD_RULE_WARNINGS
from ..core.frontmatter import NAME_RULE, suggest_name

__all__ = [
    "LEFT_OUT_CODES",
    "MAX_SKILL_BYTES",
    "MAX_SKILL_FILES",
    "UNPUBLISHABLE_WARNINGS",
    "check_publishable",
    "frontmatter_of",
    "limits_problem",
    "unpublishable",
    "unreadable",
]

MAX_SKILL_FILES: Final = 512
"""The extension's limit on the files of one skill, SKILL.md included."""
MAX_SKILL_BYTES: Final = 16 * 1024 * 1024
"""The extension's limit on the total size of one skill's files (16 MiB)."""

LEFT_OUT_CODES: Final[Mapping[str, str]] = {
    "too_many_files": "the skill holds more than 512 files, the extension's limit",
    "skill_too_large": "the skill's files add up to more than 16 MiB, the extension's limit",
    "file_too_large": "a file of the skill is over DPTTOOLS_MAX_FILE_SIZE_MB",
    "unreadable_file": "a file of the skill cannot be read",
    "frontmatter_not_json": "the frontmatter holds a value JSON cannot carry verbatim",
    "invalid_description": "'description' is not text",
    "invalid_allowed_tools": "'allowed-tools' is neither text nor a list of text",
    "folder_name_not_uri": "the folder name breaks the naming rule a skill:// URI needs",
}
"""Codes the extension adds when it leaves a skill out, and what each means."""


UNPUBLISHABLE_WARNINGS: Final = FIELD_RULE_WARNINGS
"""The catalog's warnings after which a skill cannot be published: its URI must end in its
frontmatter name, that name must follow the naming rule, and the frontmatter fields must
have the types and lengths the Agent Skills specification gives them."""


def unpublishable(diagnostics: Iterable[SkillDiagnostic]) -> dict[str, SkillDiagnostic]:
    """Skill folder -> why the extension leaves it out, from the catalog's `diagnostics`
    (its warnings in `UNPUBLISHABLE_WARNINGS`; the first one per skill). A folder name
    that breaks the naming rule gets the extension's own ``folder_name_not_uri``: the
    tools list such a skill (with a warning of their own), the extension cannot."""
    found: dict[str, SkillDiagnostic] = {}
    for diagnostic in diagnostics:
        if diagnostic.code not in UNPUBLISHABLE_WARNINGS or diagnostic.skill in found:
            continue
        if diagnostic.code == "invalid_folder_name":
            diagnostic = SkillDiagnostic(
                diagnostic.skill,
                "warning",
                "folder_name_not_uri",
                f"The folder name '{diagnostic.skill[:100]}' breaks the naming rule "
                f"({NAME_RULE}), and a skill's skill:// URI is its name, so the MCP Skills "
                f"extension does not publish it; rename the folder (for example to "
                f"'{suggest_name(diagnostic.skill)}', with 'name:' set to match).",
            )
        found[diagnostic.skill] = diagnostic
    return found


def _json_problem(value: Any, where: str) -> str | None:
    """Why `value` cannot be carried verbatim as JSON, or None when it can."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value}, which JSON cannot carry"
    if isinstance(value, list):
        for index, item in enumerate(value):
            if (problem := _json_problem(item, f"{where}[{index}]")) is not None:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where} has the key {key!r}, which is not text"
            if (problem := _json_problem(item, f"{where}.{key}")) is not None:
                return problem
        return None
    return f"{where} is a YAML {type(value).__name__}, which JSON cannot carry"


def check_publishable(fields: Mapping[str, Any], name: str) -> SkillDiagnostic | None:
    """The first reason why these frontmatter fields cannot be published, or None."""
    for key, value in fields.items():
        if (problem := _json_problem(value, f"'{key}'")) is not None:
            return SkillDiagnostic(
                name,
                "warning",
                "frontmatter_not_json",
                f"In SKILL.md frontmatter, {problem}; write it as text, a number, true/false, "
                "a list or a mapping so the frontmatter can be published verbatim.",
            )
    if not isinstance(fields.get("description"), str):
        return SkillDiagnostic(
            name,
            "warning",
            "invalid_description",
            "'description' is not text; write it as one line of text (quote it if it looks "
            "like a number) so that the MCP Skills extension can publish the skill.",
        )
    tools = fields.get("allowed-tools", "")
    if not (
        isinstance(tools, str)
        or (isinstance(tools, list) and all(isinstance(t, str) for t in tools))
    ):
        return SkillDiagnostic(
            name,
            "warning",
            "invalid_allowed_tools",
            "'allowed-tools' is neither text nor a list of text; write it as a "
            "space-separated line of tool names.",
        )
    for key, kind in (("license", str), ("compatibility", str), ("metadata", dict)):
        if key in fields and not isinstance(fields[key], kind):
            code = f"invalid_{key}"
            return SkillDiagnostic(
                name,
                "warning",
                code,
                f"'{key}' is a YAML {type(fields[key]).__name__}; the Agent Skills "
                f"specification wants {'a mapping' if kind is dict else 'text'}, so the MCP "
                "Skills extension cannot publish the skill as written.",
            )
    return None


def frontmatter_of(record: SkillRecord) -> tuple[dict[str, Any] | None, SkillDiagnostic | None]:
    """The frontmatter the catalog parsed for `record`, and why it cannot be published."""
    if record.frontmatter is None or record.digest is None:
        return None, unreadable(record.name, SKILL_FILE, "the catalog kept no frontmatter")
    fields = record.frontmatter
    if type(fields) is not dict:
        fields = dict(fields)
    return fields, check_publishable(fields, record.name)


def limits_problem(name: str, tree: Tree, max_bytes: int) -> SkillDiagnostic | None:
    """Why the files of `tree` do not fit the limits (from their ``stat`` sizes), or None."""
    if len(tree.files) > MAX_SKILL_FILES:
        return SkillDiagnostic(
            name,
            "warning",
            "too_many_files",
            f"The skill holds {len(tree.files)} files, more than the {MAX_SKILL_FILES} the MCP "
            "Skills extension allows; move material the skill does not need elsewhere.",
        )
    total = sum(st.st_size for _, st in tree.files.values())
    if total > MAX_SKILL_BYTES:
        return SkillDiagnostic(
            name,
            "warning",
            "skill_too_large",
            f"The skill's files add up to {total} bytes, more than the {MAX_SKILL_BYTES} "
            "(16 MiB) the MCP Skills extension allows; move large files elsewhere.",
        )
    for relative, (_, st) in sorted(tree.files.items()):
        if st.st_size > max_bytes:
            return SkillDiagnostic(
                name,
                "warning",
                "file_too_large",
                f"{relative} is {st.st_size} bytes, more than the {max_bytes} bytes "
                "DPTTOOLS_MAX_FILE_SIZE_MB allows; the tools cannot read it, so the skill is "
                "not published. Shrink the file or raise that limit.",
            )
    return None


def unreadable(name: str, relative: str, reason: str) -> SkillDiagnostic:
    """The diagnostic of a skill left out because its file `relative` cannot be read."""
    return SkillDiagnostic(
        name,
        "warning",
        "unreadable_file",
        f"{relative} of the skill could not be read ({reason}); the skill is not published "
        "until every file of it can be read.",
    )
