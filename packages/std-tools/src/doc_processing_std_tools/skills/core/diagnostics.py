"""The one table of skill diagnostic codes, and the `Diagnostic` value that carries one.

A diagnostic is what list_skills (and ``dpt-skills``) say about a skill instead of failing:
an ``error`` leaves the skill out, a ``warning`` lists it. Each code is stable, so clients
may match on it; `CODES` gives every code its level and a one-line meaning (and, for a
rule of the security audit, its level there), and the documentation's table of codes
lists exactly these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

__all__ = [
    "AUDIT_CODES",
    "CODES",
    "FIELD_RULE_WARNINGS",
    "CodeInfo",
    "Diagnostic",
    "Level",
    "diagnostic",
]

Level = Literal["warning", "error"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found in a SKILL.md: an `error` skips the skill, a `warning` does not."""

    level: Level
    """``"error"`` or ``"warning"``."""
    code: str
    """A stable, machine-readable identifier such as ``missing_description``."""
    message: str
    """What is wrong and how to fix it, in one or two sentences."""


@dataclass(frozen=True, slots=True)
class CodeInfo:
    """What one diagnostic code means."""

    level: Level
    """The level every diagnostic with this code has in list_skills and validate."""
    meaning: str
    """When the code is given, in a few words."""
    audit: Level | None = None
    """For a rule of the security audit: its level in ``dpt-skills audit`` (an audit
    finding is only ever a warning in the catalog, since it never hides a skill)."""
    listed: bool = True
    """False for an audit rule that list_skills leaves to audit and validate (everything
    but text spelled in characters no reader sees)."""


def _table(*rows: tuple[str, Level, str]) -> dict[str, CodeInfo]:
    return {code: CodeInfo(level, meaning) for code, level, meaning in rows}


#: An audit rule that list_skills reports too (text no reader sees).
LISTED: Final = True


def _audit_rules(
    *rows: tuple[str, Level, str] | tuple[str, Level, str, bool],
) -> dict[str, CodeInfo]:
    """The audit's rules: (code, level in ``dpt-skills audit``, meaning[, `LISTED`]); a
    warning in the catalog, where a finding never hides a skill."""
    return {
        row[0]: CodeInfo("warning", row[2], audit=row[1], listed=len(row) == 4 and row[3])
        for row in rows
    }


CODES: Final[Mapping[str, CodeInfo]] = MappingProxyType(
    _table(
        # Reading the file (catalog).
        ("not_utf8", "error", "SKILL.md is not UTF-8"),
        ("binary_skill_md", "error", "SKILL.md holds NUL bytes, so load_skill refuses it"),
        ("skill_md_too_large", "error", "SKILL.md is over DPTTOOLS_MAX_FILE_SIZE_MB"),
        ("unreadable", "error", "SKILL.md cannot be opened, or is a loop of links"),
        ("not_a_file", "error", "SKILL.md is a pipe, a device or a socket"),
        ("outside_skills_dir", "error", "the skill folder or its SKILL.md links outside"),
        (
            "link_outside_skill",
            "warning",
            "a file or folder of the skill links outside, unreadable",
        ),
        ("hidden_text", "warning", "SKILL.md holds invisible characters, shown escaped"),
        ("folder_name_not_utf8", "error", "the folder name is not UTF-8"),
        # Splitting and parsing the frontmatter (frontmatter, safe_yaml).
        ("missing_frontmatter", "error", "no frontmatter, or it is never closed"),
        ("frontmatter_too_large", "error", "the frontmatter is over 64 KiB"),
        ("invalid_yaml", "error", "the frontmatter is not valid YAML"),
        ("yaml_too_complex", "error", "too deep, or too many values once aliases expand"),
        ("yaml_recursive_alias", "error", "an alias stands inside the value it names"),
        ("frontmatter_not_mapping", "error", "the frontmatter is not key: value lines"),
        ("unquoted_colon", "warning", "a value holds an unquoted ': ' (quoted for you)"),
        ("indented_key", "error", "a field is indented under another key, so it is not a field"),
        # The Agent Skills field rules (frontmatter).
        ("missing_description", "error", "description is missing, empty or not text"),
        ("missing_name", "warning", "name is missing"),
        ("name_mismatch", "warning", "name differs from the folder name"),
        ("invalid_name", "warning", "name breaks the naming rule"),
        (
            "invalid_folder_name",
            "warning",
            "the folder name breaks the naming rule (tools cannot name it)",
        ),
        ("name_too_long", "warning", "name is over 64 characters"),
        ("description_too_long", "warning", "description is over 1,024 characters"),
        ("compatibility_too_long", "warning", "compatibility is over 500 characters"),
        ("invalid_metadata", "warning", "metadata is not a mapping"),
        ("invalid_license", "warning", "license is a list or a mapping"),
        ("invalid_compatibility", "warning", "compatibility is a list or a mapping"),
        # Where skills are found (catalog): several roots, nested collections.
        ("duplicate_name", "error", "an earlier root or folder already has a skill of that name"),
        ("skills_deeper", "warning", "SKILL.md files deeper than the search depth, not listed"),
        ("skill_md_case", "error", "a skill.md (or Skill.md ...) where SKILL.md is expected"),
        # The specification's rules that the catalog does not need (lint; validate only).
        ("unknown_field", "warning", "a top-level key the specification does not define"),
        ("misspelled_field", "warning", "such a key, close to a missing specification field"),
        ("allowed_tools_not_text", "warning", "allowed-tools is not a space-separated string"),
        ("template_body", "warning", "the body still holds the template's TODO text"),
        # Paths given to ``dpt-skills validate``.
        ("not_a_skill", "error", "a file that is not a SKILL.md was given"),
        ("not_found", "error", "the path does not exist"),
        ("no_skills", "error", "the folder holds no skill"),
    )
    | _audit_rules(
        # The security audit's rules (``dpt-skills audit`` gives them at the `audit` level;
        # list_skills and validate as warnings, since a finding never hides a skill).
        ("tag_characters", "error", "a file holds Unicode tag characters (invisible text)", LISTED),
        ("variation_selectors", "error", "a file holds a run of variation selectors", LISTED),
        ("zero_width_characters", "error", "a file holds zero-width characters", LISTED),
        ("zero_width_in_code", "warning", "a lone invisible character by a backtick or in code"),
        ("bidi_controls", "error", "a file holds bidirectional control characters", LISTED),
        ("format_characters", "error", "a file holds other invisible format characters", LISTED),
        ("link_outside", "error", "a symbolic link leads out of the skill folder"),
        ("bytecode", "error", "the skill ships compiled Python (.pyc), which no one can review"),
        ("command_template", "error", "SKILL.md holds a !`command` template"),
        ("html_comment", "warning", "SKILL.md holds an HTML comment, invisible when rendered"),
        ("non_python_script", "warning", "the skill ships a shell or other non-Python script"),
        ("non_python_script_referenced", "warning", "SKILL.md names a shell script"),
        ("shell_tool_allowed", "warning", "allowed-tools grants a shell"),
        ("hooks", "warning", "the skill declares hooks, which run commands"),
        ("conftest", "warning", "the skill ships a conftest.py, which pytest runs"),
        ("lifecycle_script", "warning", "a package.json declares install-time scripts"),
        ("python_network", "warning", "a Python script imports a network module"),
        ("python_home", "warning", "a Python script names the home folder"),
        ("python_credentials", "warning", "a Python script names a credential file"),
        ("python_proc", "warning", "a Python script names /proc"),
        ("not_audited", "warning", "a file was too large, or past the file limit, to audit"),
    )
    | _table(
        # Pinned serving (DPTTOOLS_SKILLS_LOCK, skills/lock.py).
        ("lock_mismatch", "error", "the skill's files differ from the skills lock"),
        ("not_locked", "error", "the skills lock does not name the skill"),
    )
)
"""Every diagnostic code, with its level and meaning: the one table of the catalog, of
``dpt-skills validate`` and of the security audit."""

FIELD_RULE_WARNINGS: Final = frozenset(
    {
        "missing_name",
        "name_mismatch",
        "invalid_name",
        "invalid_folder_name",
        "name_too_long",
        "description_too_long",
        "compatibility_too_long",
        "invalid_license",
        "invalid_compatibility",
        "invalid_metadata",
    }
)
"""The warnings of the Agent Skills field rules: the skill is listed, but its frontmatter
breaks a rule of the specification (the MCP Skills extension leaves such a skill out)."""

AUDIT_CODES: Final[Mapping[str, CodeInfo]] = MappingProxyType(
    {
        code: CodeInfo(info.audit, info.meaning, info.audit, info.listed)
        for code, info in CODES.items()
        if info.audit is not None
    }
)
"""The audit's rules, a view of `CODES` with each at the level ``dpt-skills audit``
gives it."""


def diagnostic(code: str, message: str) -> Diagnostic:
    """A `Diagnostic` with `code`, at the level `CODES` gives it.

    Raises:
        KeyError: `code` is not in `CODES` (a programming error, caught by the tests).
    """
    return Diagnostic(CODES[code].level, code, message)
