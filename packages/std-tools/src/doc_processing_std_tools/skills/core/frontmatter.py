"""SKILL.md text -> frontmatter fields and diagnostics.

This module is pure: it never touches the file system. `parse_skill_md` splits a SKILL.md
into its YAML frontmatter and Markdown body and parses the YAML with `safe_yaml`, which
refuses documents built to hurt the reader (too deep, alias bombs, recursive aliases) in
bounded time and memory; `check_fields` applies the Agent Skills field rules to the parsed
mapping. Both report problems as `Diagnostic` values (codes from `diagnostics.CODES`)
instead of raising, so one broken skill never hides the others.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .diagnostics import Diagnostic, Level, diagnostic
from .lint import SPEC_FIELDS, closest_field
from .safe_yaml import Loaded, Refused, load_yaml

__all__ = [
    "MAX_COMPATIBILITY_LENGTH",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_FRONTMATTER_CHARS",
    "MAX_NAME_LENGTH",
    "NAME_RULE",
    "Diagnostic",
    "Level",
    "ParsedSkillMd",
    "SkillFields",
    "check_fields",
    "decode_skill_md",
    "is_valid_name",
    "parse_skill_md",
    "read_skill_md_text",
    "suggest_name",
]

MAX_FRONTMATTER_CHARS: Final = 64 * 1024
"""Frontmatter longer than this is refused before any YAML is parsed."""
MAX_NAME_LENGTH: Final = 64
"""Longest skill name the Agent Skills specification allows."""
MAX_DESCRIPTION_LENGTH: Final = 1024
"""Longest description the Agent Skills specification allows."""
MAX_COMPATIBILITY_LENGTH: Final = 500
"""Longest compatibility note the Agent Skills specification allows."""
NAME_RULE: Final = (
    "1-64 characters of lowercase letters (a-z), digits and single hyphens, "
    "not starting or ending with a hyphen"
)
"""The skill-name rule in words, for error messages."""

_NAME_PATTERN: Final = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_BOM: Final = "\ufeff"
_CLOSING: Final = re.compile(r"^---[ \t]*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ParsedSkillMd:
    """The outcome of `parse_skill_md`: the frontmatter mapping (None on error) and body."""

    fields: dict[str, Any] | None
    """The parsed frontmatter, or None when it is missing or unusable."""
    body: str
    """The Markdown after the frontmatter (the whole text when there is none)."""
    diagnostics: tuple[Diagnostic, ...] = ()
    """Problems found while parsing; at most one of them is an error."""
    body_line: int = 1
    """The line of SKILL.md on which `body` starts."""


@dataclass(frozen=True, slots=True)
class SkillFields:
    """The catalog fields of one skill after the Agent Skills rules were applied."""

    name: str
    """The name tool calls use: always the skill's folder name."""
    description: str
    """What the skill does and when to use it."""
    license: str | None = None
    """The frontmatter's ``license``, when present."""
    compatibility: str | None = None
    """The frontmatter's ``compatibility``, when present."""
    metadata: dict[str, str] | None = field(default=None)
    """The frontmatter's ``metadata`` with every value turned into a string, when present."""


def is_valid_name(name: str) -> bool:
    """True when `name` follows the skill-name rule (`NAME_RULE`)."""
    return len(name) <= MAX_NAME_LENGTH and _NAME_PATTERN.fullmatch(name) is not None


def decode_skill_md(data: bytes) -> str | Diagnostic:
    """Decode SKILL.md bytes as UTF-8; `parse_skill_md` drops a byte-order mark and turns
    line endings into LF.

    Returns the text, or an error `Diagnostic` (code ``not_utf8``) when the bytes are not
    UTF-8.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return diagnostic(
            "not_utf8",
            f"SKILL.md is not valid UTF-8 (byte {exc.start} cannot be decoded); "
            "save the file with UTF-8 encoding.",
        )
    return text


def read_skill_md_text(data: bytes) -> ParsedSkillMd:
    """Decode SKILL.md bytes and parse them: `decode_skill_md` then `parse_skill_md`."""
    text = decode_skill_md(data)
    if isinstance(text, Diagnostic):
        return ParsedSkillMd(None, "", (text,))
    return parse_skill_md(text)


def _error(code: str, message: str, body: str, body_line: int = 1) -> ParsedSkillMd:
    return ParsedSkillMd(None, body, (diagnostic(code, message),), body_line)


def _split(text: str) -> tuple[str, int, str, int] | ParsedSkillMd:
    """Return (frontmatter, its first line, body, its first line) with lines counted in
    SKILL.md from 1, or a `ParsedSkillMd` carrying the error."""
    text = text.removeprefix(_BOM)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    start = len(text) - len(text.lstrip("\n"))
    first_end = text.find("\n", start)
    first_line = text[start:] if first_end == -1 else text[start:first_end]
    if first_line.rstrip() != "---":
        return _error(
            "missing_frontmatter",
            "SKILL.md does not start with YAML frontmatter; begin the file with a '---' "
            "line, then 'name:' and 'description:' lines, then a closing '---' line.",
            text,
        )
    # The closing delimiter must appear within the size bound; looking further would let
    # a huge file cost time and memory before being refused anyway.
    window_end = first_end + 1 + MAX_FRONTMATTER_CHARS + 8
    match = _CLOSING.search(text, first_end + 1, window_end)
    if match is None:
        if len(text) > window_end:
            return _error(
                "frontmatter_too_large",
                f"SKILL.md frontmatter has no closing '---' line within the first "
                f"{MAX_FRONTMATTER_CHARS} characters; keep the frontmatter short and move "
                "long text into the Markdown body.",
                "",
            )
        return _error(
            "missing_frontmatter",
            "SKILL.md frontmatter is never closed; add a '---' line after the last field.",
            text,
        )
    frontmatter = text[first_end + 1 : match.start()]
    if len(frontmatter) > MAX_FRONTMATTER_CHARS:
        return _error(
            "frontmatter_too_large",
            f"SKILL.md frontmatter is {len(frontmatter)} characters long, more than the "
            f"{MAX_FRONTMATTER_CHARS} allowed; move long text into the Markdown body.",
            "",
        )
    body = text[match.end() :].removeprefix("\n")
    starts_on = text.count("\n", 0, first_end) + 2
    return frontmatter, starts_on, body, text.count("\n", 0, len(text) - len(body)) + 1


# No lazy quantifier before a trailing optional run: that backtracks quadratically on a
# long line of spaces. Trailing blanks are stripped in code instead.
_TOP_LEVEL_SCALAR: Final = re.compile(r"([A-Za-z0-9_-]+):[ \t]+(\S.*)")
_NOT_PLAIN: Final = frozenset("'\"|>[{&*!%@`#")


def _quote_colon_values(frontmatter: str) -> tuple[str, list[str]]:
    """Single-quote top-level plain values that contain ``": "`` (a YAML error otherwise).

    Indented lines that follow such a value are its continuation and are folded into the
    quoted value with spaces, as YAML would have folded them. Returns the new text and the
    keys whose values were quoted.
    """
    lines = frontmatter.split("\n")
    out: list[str] = []
    repaired: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        match = _TOP_LEVEL_SCALAR.fullmatch(line)
        if match is None or match.group(2)[0] in _NOT_PLAIN:
            out.append(line)
            continue
        value = match.group(2).rstrip(" \t")
        parts = [value]
        while index < len(lines) and lines[index][:1] in (" ", "\t") and lines[index].strip():
            parts.append(lines[index].strip())
            index += 1
        joined = " ".join(parts)
        if ": " not in joined and not joined.endswith(":"):
            out.extend([line, *lines[index - len(parts) + 1 : index]])
            continue
        out.append(f"{match.group(1)}: '" + joined.replace("'", "''") + "'")
        repaired.append(match.group(1))
    return "\n".join(out), repaired


_INDENTED_KEY: Final = re.compile(r"([ \t]+)([A-Za-z0-9_-]+):(?:[ \t]|$)")
# A line that `_indented_key` could report: an indented key of the specification. Text
# without one (most frontmatter) needs no line-by-line look.
_INDENTED_SPEC_KEY: Final = re.compile(
    r"^[ \t]+(?:" + "|".join(re.escape(key) for key in SPEC_FIELDS) + "):", re.MULTILINE
)
_TOP_LEVEL_KEY: Final = re.compile(r"([A-Za-z0-9_-]+):(?:[ \t]+(\S.*))?[ \t]*")


def _indented_key(frontmatter: str, first_line: int) -> Diagnostic | None:
    """The error for a specification key written indented under another key, if any.

    ``name: x`` followed by ``  description: y`` is not a description at all: YAML reads
    the indented line as part of the value above it (or as invalid YAML). Only keys of
    the specification that appear nowhere at column 0 count, and never lines inside
    ``metadata:`` or inside a ``|`` / ``>`` block, where indented ``key:`` text belongs.
    """
    if _INDENTED_SPEC_KEY.search(frontmatter) is None:
        return None
    lines = frontmatter.split("\n")
    top_level: set[str] = set()
    for line in lines:
        match = _TOP_LEVEL_KEY.fullmatch(line)
        if match is not None:
            top_level.add(match.group(1))
    parent: str | None = None
    parent_value = ""
    parent_line = 0
    for index, line in enumerate(lines):
        top = _TOP_LEVEL_KEY.fullmatch(line)
        if top is not None:
            parent, parent_value = top.group(1), (top.group(2) or "").strip()
            parent_line = first_line + index
            continue
        indented = _INDENTED_KEY.match(line)
        if parent is None or parent == "metadata" or indented is None:
            continue
        key = indented.group(2)
        if key not in SPEC_FIELDS or key in top_level or parent_value[:1] in ("|", ">"):
            continue
        # Under a key with no value the line may be a nested mapping on purpose; only a
        # description there is surely misplaced (the skill has none otherwise).
        if not parent_value and key != "description":
            continue
        number = first_line + index
        return diagnostic(
            "indented_key",
            f"Line {number} of SKILL.md is indented, so YAML reads '{key}:' as part of the "
            f"'{parent}' value on line {parent_line} instead of as a field of its own; "
            f"top-level keys start at column 0: remove the spaces before '{key}:'.",
        )
    return None


def _refusal_message(refused: Refused) -> str:
    if refused.code == "invalid_yaml":
        return (
            f"SKILL.md frontmatter is not valid YAML: {refused.reason}. Fix the YAML, "
            "quoting values that contain ': ' or start with a special character."
        )
    if refused.code == "yaml_recursive_alias":
        return (
            f"SKILL.md frontmatter was refused: {refused.reason}. Write the values out "
            "in place of the alias, or remove the alias."
        )
    return (
        f"SKILL.md frontmatter was refused: {refused.reason}. Frontmatter holds a few "
        "short fields; remove the deep nesting or the repeated aliases."
    )


def parse_skill_md(text: str) -> ParsedSkillMd:
    """Split SKILL.md text into frontmatter and body and parse the frontmatter safely.

    A byte-order mark and CRLF line endings are accepted. An unquoted ``": "`` in a
    top-level value, which strict YAML rejects, is repaired by quoting and reported as a
    warning (code ``unquoted_colon``). Errors (skill skipped): ``missing_frontmatter``,
    ``frontmatter_too_large``, ``yaml_too_complex``, ``yaml_recursive_alias``,
    ``invalid_yaml``, ``frontmatter_not_mapping``.
    """
    split = _split(text)
    if isinstance(split, ParsedSkillMd):
        return split
    frontmatter, first_line, body, body_line = split
    indented = _indented_key(frontmatter, first_line)
    if indented is not None:
        return ParsedSkillMd(None, body, (indented,), body_line)
    diagnostics: list[Diagnostic] = []
    result = load_yaml(frontmatter)
    if isinstance(result, Refused) and result.code == "invalid_yaml":
        repaired_text, keys = _quote_colon_values(frontmatter)
        repaired = load_yaml(repaired_text) if keys else result
        # A repair that leaves the text invalid reports the original YAML error.
        if isinstance(repaired, Loaded) or repaired.code != "invalid_yaml":
            result = repaired
        if isinstance(repaired, Loaded):
            diagnostics.extend(
                diagnostic(
                    "unquoted_colon",
                    f"The '{key}' value contains an unquoted ': ', which is invalid "
                    "YAML; it was quoted automatically. Put the value in quotes in "
                    "SKILL.md so that every client reads it.",
                )
                for key in keys
            )
    if isinstance(result, Refused):
        return _error(result.code, _refusal_message(result), body, body_line)
    data = result.value
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return _error(
            "frontmatter_not_mapping",
            f"SKILL.md frontmatter is a YAML {type(data).__name__}, not a mapping; write "
            "it as 'key: value' lines such as 'name:' and 'description:'.",
            body,
            body_line,
        )
    fields = {str(k): v for k, v in data.items()}
    return ParsedSkillMd(fields, body, tuple(diagnostics), body_line)


def _as_string(value: Any) -> str:
    """Turn a YAML value into the string a catalog shows."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, _dt.date):
        return value.isoformat()
    return json.dumps(value, ensure_ascii=False, default=str)


def _text_field(
    fields: Mapping[str, Any], key: str, limit: int | None, diagnostics: list[Diagnostic]
) -> str | None:
    if key not in fields or fields[key] is None:
        return None
    value = fields[key]
    if isinstance(value, dict | list):
        diagnostics.append(
            diagnostic(
                f"invalid_{key}",
                f"'{key}' is a YAML {type(value).__name__}, not text; it was ignored. "
                f"Write '{key}' as a single line of text.",
            )
        )
        return None
    text = _as_string(value).strip()
    if limit is not None and len(text) > limit:
        diagnostics.append(
            diagnostic(
                f"{key}_too_long",
                f"'{key}' is {len(text)} characters long; the Agent Skills limit is "
                f"{limit}. It was loaded in full, but shorten it so other clients accept it.",
            )
        )
    return text


def check_fields(
    fields: Mapping[str, Any], folder_name: str
) -> tuple[SkillFields | None, list[Diagnostic]]:
    """Apply the Agent Skills field rules to parsed frontmatter.

    Returns the catalog fields (None when the skill must be skipped) and the diagnostics.
    The listed name is always `folder_name`, the name that tool calls accept (when it
    follows the naming rule; else ``invalid_folder_name`` says it must be renamed).

    Errors (skill skipped): ``missing_description``. Warnings (skill loaded):
    ``invalid_folder_name``, ``missing_name``, ``name_mismatch``, ``invalid_name``,
    ``name_too_long``,
    ``description_too_long``, ``compatibility_too_long``, ``invalid_metadata``,
    ``invalid_license``, ``invalid_compatibility``.
    """
    diagnostics: list[Diagnostic] = []
    raw_description = fields.get("description")
    description = (
        _as_string(raw_description).strip()
        if isinstance(raw_description, str | int | float) and not isinstance(raw_description, bool)
        else ""
    )
    if not description:
        shown = "" if raw_description is None else f" (found {type(raw_description).__name__})"
        if raw_description is None:
            shown = next(
                (
                    f" ('{key[:100]}' is there: did you mean 'description'?)"
                    for key in fields
                    if closest_field(key, fields) == "description"
                ),
                "",
            )
        diagnostics.append(
            diagnostic(
                "missing_description",
                "SKILL.md frontmatter is missing a non-empty 'description' field"
                f"{shown}; add 'description:' with one line saying what the skill does and "
                "when to use it.",
            )
        )
        return None, diagnostics
    if len(description) > MAX_DESCRIPTION_LENGTH:
        diagnostics.append(
            diagnostic(
                "description_too_long",
                f"'description' is {len(description)} characters long; the Agent Skills "
                f"limit is {MAX_DESCRIPTION_LENGTH}. It was loaded in full, but shorten it "
                "so other clients accept it.",
            )
        )
    if not is_valid_name(folder_name):
        # Listed, as the naming rule of the frontmatter table asks; tool calls keep their
        # strict rule, so the warning says the skill must be renamed to be reached.
        diagnostics.append(_folder_name_diagnostic(folder_name))
    raw_name = fields.get("name")
    if is_valid_name(folder_name) or not (
        isinstance(raw_name, str) and raw_name.strip() == folder_name
    ):
        # (A name equal to a folder name that breaks the rule is that same problem.)
        diagnostics.extend(_name_diagnostics(raw_name, folder_name))
    license_text = _text_field(fields, "license", None, diagnostics)
    compatibility = _text_field(fields, "compatibility", MAX_COMPATIBILITY_LENGTH, diagnostics)
    metadata: dict[str, str] | None = None
    if "metadata" in fields and fields["metadata"] is not None:
        raw_metadata = fields["metadata"]
        if isinstance(raw_metadata, dict):
            metadata = {_as_string(k): _as_string(v) for k, v in raw_metadata.items()}
        else:
            diagnostics.append(
                diagnostic(
                    "invalid_metadata",
                    f"'metadata' is a YAML {type(raw_metadata).__name__}, not a mapping, so "
                    "it was dropped; write it as indented 'key: value' lines.",
                )
            )
    return (
        SkillFields(
            folder_name, description, license_text or None, compatibility or None, metadata
        ),
        diagnostics,
    )


def _name_diagnostics(raw_name: Any, folder_name: str) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []
    if raw_name is None or (isinstance(raw_name, str) and not raw_name.strip()):
        diagnostics.append(
            diagnostic(
                "missing_name",
                f"SKILL.md frontmatter has no 'name'; the folder name '{folder_name}' is "
                f"used. Add 'name: {folder_name}'.",
            )
        )
    else:
        name = _as_string(raw_name).strip()
        # One warning per name: a name that breaks a rule is not also a mismatch (the
        # rule's warning says what the skill is listed as).
        listed_as = (
            f" The skill is listed as '{folder_name}', its folder's name; set "
            f"'name: {folder_name}'."
            if name != folder_name and is_valid_name(folder_name)
            else ""
        )
        if len(name) > MAX_NAME_LENGTH:
            diagnostics.append(
                diagnostic(
                    "name_too_long",
                    f"'name' is {len(name)} characters long, more than {MAX_NAME_LENGTH}; "
                    f"shorten it and rename the folder to match.{listed_as}",
                )
            )
        elif not is_valid_name(name):
            diagnostics.append(
                diagnostic(
                    "invalid_name",
                    f"'name' {name!r} breaks the naming rule ({NAME_RULE}); rename the "
                    f"skill and its folder to follow it.{listed_as}",
                )
            )
        elif name != folder_name:
            diagnostics.append(
                diagnostic(
                    "name_mismatch",
                    f"'name' {name[:100]!r} differs from the folder name '{folder_name}'; "
                    f"the skill is listed as '{folder_name}', the name tool calls accept. "
                    "Make the two the same.",
                )
            )
    return diagnostics


def suggest_name(folder_name: str) -> str:
    """A name close to `folder_name` that follows the naming rule (for messages)."""
    words = re.findall(r"[a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", folder_name).lower())
    return "-".join(words)[:MAX_NAME_LENGTH].strip("-") or "my-skill"


def _folder_name_diagnostic(folder_name: str) -> Diagnostic:
    return diagnostic(
        "invalid_folder_name",
        f"The folder name '{folder_name[:100]}' breaks the naming rule ({NAME_RULE}). The "
        "skill is listed, but tool calls (load_skill and the others) accept only names that "
        "follow the rule, so they cannot reach it by this name; rename the folder (for "
        f"example to '{suggest_name(folder_name)}', with 'name:' set to match).",
    )
