"""What the Agent Skills specification does not allow, beyond what the catalog needs.

The catalog reads skills leniently: a field outside the specification, an ``allowed-tools``
list or an unfinished template do not stop a skill from working here, so ``list_skills``
says nothing about them. Other clients may be stricter, and an author wants to hear about
them before publishing a skill: ``dpt-skills validate`` adds the warnings of `lint` to the
catalog's diagnostics. This module is pure (text and parsed fields in, diagnostics out).

It also holds the template body that ``create_skill`` and ``dpt-skills new`` write, so that
the check for a template left unchanged and the template itself cannot drift apart.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, Final

from .diagnostics import Diagnostic, diagnostic

__all__ = ["SPEC_FIELDS", "closest_field", "lint", "template_body"]

SPEC_FIELDS: Final = (
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
)
"""The top-level frontmatter keys the Agent Skills specification defines."""

_TODOS: Final = (
    "TODO: write the instructions an agent follows when this skill applies.",
    "TODO: the tasks and inputs this skill is meant for.",
    "1. TODO: the first step.",
    "TODO: name the files under scripts/ and references/ and when to use each.",
)
# How close a key must be to a specification field to be called a misspelling of it
# (difflib's ratio: "descripton" -> 0.95, "licence" -> 0.86, "effort" -> below 0.5).
_CLOSE: Final = 0.75


def template_body(title: str) -> str:
    """The Markdown body of a new skill's template, headed by `title`."""
    return (
        f"# {title}\n\n{_TODOS[0]}\n\n## When to use\n\n{_TODOS[1]}\n\n"
        f"## Steps\n\n{_TODOS[2]}\n\n## Files\n\n{_TODOS[3]}\n"
    )


def _key_diagnostics(fields: Mapping[str, Any]) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    allowed = ", ".join(SPEC_FIELDS)
    for key in fields:
        if key in SPEC_FIELDS:
            continue
        shown = key[:100]
        close = closest_field(key, fields)
        if close is not None:
            found.append(
                diagnostic(
                    "misspelled_field",
                    f"'{shown}' is not an Agent Skills field; did you mean '{close}'? "
                    f"Rename the key to '{close}'.",
                )
            )
            continue
        found.append(
            diagnostic(
                "unknown_field",
                f"'{shown}' is not an Agent Skills field (the specification allows {allowed}); "
                "clients that follow it strictly may refuse the skill. Move it under "
                f"'metadata:' (as an indented '{shown}: ...' line) or remove it.",
            )
        )
    return found


def _allowed_tools_diagnostic(value: Any) -> Diagnostic | None:
    if value is None or isinstance(value, str):
        return None
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return diagnostic(
            "allowed_tools_not_text",
            "'allowed-tools' is a YAML list; the specification wants one string of tool "
            f"names separated by spaces: 'allowed-tools: {' '.join(value)[:200]}'.",
        )
    return diagnostic(
        "allowed_tools_not_text",
        f"'allowed-tools' is a YAML {type(value).__name__}; the specification wants one "
        "string of tool names separated by spaces, such as 'allowed-tools: Read Bash(git:*)'.",
    )


def _template_diagnostic(body: str, frontmatter_lines: int) -> Diagnostic | None:
    lines = body.split("\n")
    for index, line in enumerate(lines):
        if line.strip() in _TODOS:
            return diagnostic(
                "template_body",
                f"The instructions are still the template's (line {frontmatter_lines + index + 1} "
                f"reads {line.strip()!r}); replace every TODO with what an agent should do.",
            )
    return None


def lint(fields: Mapping[str, Any], body: str, *, body_line: int = 1) -> list[Diagnostic]:
    """Warnings for what the Agent Skills specification does not allow in a skill that
    the catalog still lists.

    `fields` is the parsed frontmatter, `body` the Markdown after it, `body_line` the line
    of SKILL.md on which the body starts (for the line named in ``template_body``).
    Codes: ``unknown_field`` (a key the specification does not define),
    ``misspelled_field`` (such a key that is close to a missing specification field),
    ``allowed_tools_not_text`` (``allowed-tools`` that is not a space-separated string),
    ``template_body`` (the body still holds the template's TODO text).
    """
    found = _key_diagnostics(fields)
    allowed_tools = _allowed_tools_diagnostic(fields.get("allowed-tools"))
    if allowed_tools is not None:
        found.append(allowed_tools)
    template = _template_diagnostic(body, body_line - 1)
    if template is not None:
        found.append(template)
    return found


def closest_field(key: str, fields: Mapping[str, Any]) -> str | None:
    """The specification field that `key` looks like a misspelling of, when that field is
    absent from `fields` (``descripton`` -> ``description``); else None."""
    if key in SPEC_FIELDS:
        return None
    close = difflib.get_close_matches(key.lower(), SPEC_FIELDS, n=1, cutoff=_CLOSE)
    return close[0] if close and close[0] not in fields else None
