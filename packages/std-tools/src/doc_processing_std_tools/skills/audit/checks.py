"""The checks of the skill audit, one file's text at a time (see `audit` for the folder).

Each check takes a file's name and text and yields `Finding` values: hidden characters in
any text file, HTML comments, ``!`cmd``` templates, shell scripts named and frontmatter
that grants a shell in SKILL.md, npm lifecycle scripts, hooks files, non-Python scripts,
and Python scripts that import network modules or name the home folder, credential files
or /proc (read with `ast`, and only when a word such a finding needs appears in the
source). Pure: text in, findings out; nothing here opens a file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from itertools import product
from typing import Any, Final

from ahocorasick_rs import BytesAhoCorasick, Implementation

from ..core.diagnostics import AUDIT_CODES, Level
from ..core.frontmatter import parse_skill_md
from .hidden import HIDDEN_CODES, hidden_runs, invisible_chars, may_hide
from .python_code import PYTHON_WORDS, python_findings

__all__ = [
    "SKILL_FILE",
    "Finding",
    "file_findings",
    "finding",
    "skill_md_findings",
]

SKILL_FILE: Final = "SKILL.md"


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the audit found in one file of one skill."""

    skill: str
    """The skill folder's name."""
    file: str
    """The file, relative to the skill folder, with ``/`` separators."""
    line: int
    """The 1-based line of the first occurrence; 0 when the finding is about the whole file."""
    level: Level
    """``"error"`` or ``"warning"``, from `AUDIT_CODES`."""
    code: str
    """A stable identifier from `AUDIT_CODES`."""
    message: str
    """What was found and why it matters, in a sentence or two."""

    def as_dict(self) -> dict[str, Any]:
        """The finding as a JSON-ready mapping with the six fields."""
        return asdict(self)


# Hidden characters ----------------------------------------------------------------------


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _hidden_findings(
    skill: str, name: str, text: str, data: bytes | None = None
) -> Iterator[Finding]:
    # `data`, the UTF-8 bytes `text` was decoded from when the caller has them, spares
    # encoding it again. Most text with accents, dashes or arrows holds no hidden
    # character, and is not searched again.
    invisible = invisible_chars(text, data)
    if not invisible:
        return
    for kind, index, count in hidden_runs(text, invisible):
        message = (
            f"{count} {HIDDEN_CODES[kind]}, the first at U+{ord(text[index]):04X}; "
            "a model reads text that a person reviewing the file does not see."
        )
        if kind == "zero_width_in_code":
            message = (
                f"{count} {HIDDEN_CODES[kind]} (U+{ord(text[index]):04X}), the usual way to "
                "show a Markdown fence inside another; check that it hides nothing else."
            )
        yield _finding(skill, name, _line_of(text, index), kind, message)


def _finding(skill: str, name: str, line: int, code: str, message: str) -> Finding:
    return Finding(skill, name, line, AUDIT_CODES[code].level, code, message)


# SKILL.md ---------------------------------------------------------------------------------

_HTML_COMMENT: Final = re.compile(r"<!--")
_COMMAND_TEMPLATE: Final = re.compile(r"!`[^`\n]+`")
_SHELL_SUFFIXES: Final = (".sh", ".bash", ".zsh", ".fish", ".ps1", ".psm1", ".bat", ".cmd")
_SHELL_TOOLS: Final = re.compile(r"\b(?:bash|shell|sh|zsh|powershell|terminal)\b", re.IGNORECASE)


# A cheap first pass: the full reference pattern runs only on text that names such a file.
# Letter classes rather than IGNORECASE keep the literal "." that the search skips to; the
# look at the next letter turns away a sentence's end at once, before the alternatives.
_SHELL_SUFFIX_HINT: Final = re.compile(
    r"\.(?=[sSbBzZfFpPcC])"
    r"(?:[sS][hH]|[bB][aA][sS][hH]|[zZ][sS][hH]|[fF][iI][sS][hH]|[pP][sS][mM]?1"
    r"|[bB][aA][tT]|[cC][mM][dD])\b"
)


def _spellings(word: str) -> list[str]:
    """`word` in every mix of upper and lower case."""
    return ["".join(letters) for letters in product(*({c.lower(), c.upper()} for c in word))]


# What a SKILL.md finding needs in the text, found in one pass of an Aho-Corasick
# automaton over its bytes: the start of an HTML comment (0), of a command template (1),
# or a shell suffix (2 on). Only the checks of what it finds read the text.
_MARKERS: Final = BytesAhoCorasick(
    [
        b"<!--",
        b"!`",
        *(spelling.encode() for suffix in _SHELL_SUFFIXES for spelling in _spellings(suffix)),
    ],
    implementation=Implementation.DFA,
)


_WORD_BYTES: Final = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _markers(data: bytes) -> list[tuple[int, int, int]]:
    """The markers in SKILL.md's bytes `data`, as (pattern, start, end): a shell suffix
    only where it could end a file's name (no ASCII letter, digit or ``_`` right after
    it, one right before its dot): ".show()" or "... .sh" is none."""
    found = _MARKERS.find_matches_as_indexes(data, True)
    return [
        (which, start, end)
        for which, start, end in found
        if which < 2
        or (
            (end == len(data) or data[end] not in _WORD_BYTES)
            and start
            and (data[start - 1] in _WORD_BYTES or data[start - 1] >= 0x80)
        )
    ]


def skill_md_findings(
    skill: str, text: str, fields: Mapping[str, Any] | None = None
) -> Iterator[Finding]:
    """The findings of a SKILL.md's text besides hidden characters: HTML comments,
    ``!`command``` templates, shell scripts named, and frontmatter that grants a shell.
    `fields` is the parsed frontmatter when the caller has it (else it is parsed here)."""
    yield from _skill_md_findings(skill, text, fields)


def _starts(text: str, first: str, pattern: re.Pattern[str]) -> Iterator[int]:
    """Where `pattern`'s matches start, as `pattern.finditer` finds them (none inside
    another), for a pattern that starts with the character `first`: a character rare in
    Markdown is skipped to by ``str.find``, far faster than the pattern's own search."""
    index = text.find(first)
    while index >= 0:
        match = pattern.match(text, index)
        if match is None:
            index = text.find(first, index + 1)
        else:
            yield index
            index = text.find(first, match.end())


def _skill_md_findings(
    skill: str,
    text: str,
    fields: Mapping[str, Any] | None = None,
    data: bytes | None = None,
    found: list[tuple[int, int, int]] | None = None,
) -> Iterator[Finding]:
    """The findings of `skill_md_findings`; `data` is the UTF-8 of `text` and `found`
    the markers in it (`_MARKERS`) when the caller has them."""
    if found is None:
        if data is None:
            data = text.encode("utf-8", "surrogatepass")
        found = _markers(data)
    if found:
        yield from _marked_findings(skill, text, found)
    yield from _frontmatter_findings(skill, text, fields)


def _marked_findings(skill: str, text: str, found: list[tuple[int, int, int]]) -> Iterator[Finding]:
    """The findings of the markers `found` in the UTF-8 of `text` (pattern, start, end):
    HTML comments (pattern 0), command templates (1) and shell script names (2 on)."""
    marked = {min(which, 2) for which, _, _ in found}
    shell: Iterable[re.Match[str] | None] = ()
    if 2 in marked:
        if text.isascii():  # the markers' places are the text's: look only there
            dots = sorted({start for which, start, _ in found if which >= 2})
            shell = (_SHELL_SUFFIX_HINT.match(text, dot) for dot in dots)
        else:
            shell = _SHELL_SUFFIX_HINT.finditer(text)
    for index in _starts(text, "<", _HTML_COMMENT) if 0 in marked else ():
        yield _finding(
            skill,
            SKILL_FILE,
            _line_of(text, index),
            "html_comment",
            "an HTML comment: rendered Markdown hides it, but a model reads it.",
        )
    for index in _starts(text, "!", _COMMAND_TEMPLATE) if 1 in marked else ():
        yield _finding(
            skill,
            SKILL_FILE,
            _line_of(text, index),
            "command_template",
            "a !`command` template: some agents run the command when the skill loads, "
            "before anyone reads it.",
        )
    seen: set[str] = set()
    for match in shell:
        if match is None:
            continue
        # The name ends at the suffix; it starts where the run of name characters does.
        dot = start = match.start()
        if not dot or not (text[dot - 1].isalnum() or text[dot - 1] == "_"):
            continue
        while start and (text[start - 1].isalnum() or text[start - 1] in "_./-"):
            start -= 1
        name = text[start : match.end()]
        if name in seen:
            continue
        seen.add(name)
        yield _finding(
            skill,
            SKILL_FILE,
            _line_of(text, start),
            "non_python_script_referenced",
            f"names the shell script {name!r}; only Python scripts run in the sandbox, so "
            "the instructions may ask for a shell.",
        )


def _tool_names(value: object) -> list[str]:
    if isinstance(value, str):
        return [part for part in re.split(r"[,\s]+", value) if part]
    if isinstance(value, list | tuple):
        return [str(item) for item in value]
    return []


def _frontmatter_findings(
    skill: str, text: str, fields: Mapping[str, Any] | None
) -> Iterator[Finding]:
    if fields is None:
        end = text.find("\n---", 3)
        head = text if end < 0 else text[:end]
        if "hooks" not in head and "allowed" not in head and "\\" not in head:
            return  # neither key can be there (even spelled with YAML escapes)
        fields = parse_skill_md(text).fields
    if not isinstance(fields, Mapping):
        return
    for key in ("allowed-tools", "allowed_tools"):
        shells = [tool for tool in _tool_names(fields.get(key)) if _SHELL_TOOLS.search(tool)]
        if shells:
            yield _finding(
                skill,
                SKILL_FILE,
                _key_line(text, key),
                "shell_tool_allowed",
                f"{key} grants a shell ({', '.join(shells)}): an agent that honours it "
                "runs commands without asking.",
            )
    if "hooks" in fields:
        yield _finding(
            skill,
            SKILL_FILE,
            _key_line(text, "hooks"),
            "hooks",
            "declares hooks: an agent that honours them runs their commands on its events.",
        )


def _key_line(text: str, key: str) -> int:
    match = re.search(rf"^{re.escape(key)}\s*:", text, re.MULTILINE)
    return _line_of(text, match.start()) if match else 1


# Other files ------------------------------------------------------------------------------

_LIFECYCLE: Final = ("preinstall", "install", "postinstall", "prepare", "preuninstall")


def _package_json_findings(skill: str, name: str, text: str) -> Iterator[Finding]:
    try:
        data = json.loads(text)
    except ValueError:
        return
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return
    found = [key for key in _LIFECYCLE if key in scripts]
    if found:
        yield _finding(
            skill,
            name,
            _key_line_json(text, found[0]),
            "lifecycle_script",
            f"declares {', '.join(found)} script(s), which npm runs on install.",
        )


def _key_line_json(text: str, key: str) -> int:
    index = text.find(f'"{key}"')
    return _line_of(text, index) if index >= 0 else 0


def _hooks_file_findings(skill: str, name: str, text: str) -> Iterator[Finding]:
    try:
        data = json.loads(text)
    except ValueError:
        return
    if isinstance(data, dict) and "hooks" in data:
        yield _finding(
            skill,
            name,
            _key_line_json(text, "hooks"),
            "hooks",
            "declares hooks: an agent that honours them runs their commands on its events.",
        )


_HOOKS_FILES: Final = frozenset({"hooks.json", "settings.json", "settings.local.json"})


def _is_non_python_script(base: str, data: bytes) -> str | None:
    """Why the file `base` with the text bytes `data` is a non-Python script, or None."""
    if base.lower().endswith(_SHELL_SUFFIXES):
        return "a shell script"
    if data.startswith(b"#!"):
        end = data.find(b"\n")
        line = data if end < 0 else data[:end]
        if b"python" not in line:
            return f"a script for {line.decode('utf-8')[2:].strip()[:60]!r}"
    return None


def _may_grant(data: bytes) -> bool:
    """False when SKILL.md's bytes `data` surely hold neither ``allowed-tools`` nor
    ``hooks`` in their frontmatter (what `_frontmatter_findings` looks at first, in a
    head at least as long: its search starts at the fourth character, at most 12 bytes
    in)."""
    end = data.find(b"\n---", 12)
    head = data if end < 0 else data[:end]
    return b"hooks" in head or b"allowed" in head or b"\\" in head


def file_findings(skill: str, name: str, base: str, data: bytes | None) -> list[Finding]:
    """The findings of the file `name` (relative to the skill folder, ``/``-separated,
    its last part `base`) whose bytes are `data` (None: not read). Bytes that are not
    UTF-8 text are checked by name only.

    Most files have no finding, and cost a few C calls: ASCII holds no hidden character;
    other bytes hold none when the characters their bytes outside ASCII spell are all
    printable and no variation selector (`audit_hidden.may_hide`). A file is decoded only
    when some check needs its text, or needs to know that it is UTF-8 (SKILL.md with a
    marker or a frontmatter key, scripts, the JSON files npm or an agent reads, a ``#!``
    line, a shell script's name)."""
    found: list[Finding] = []
    if base == "conftest.py":
        found.append(
            _finding(
                skill,
                name,
                0,
                "conftest",
                "a conftest.py: pytest runs it when tests are collected.",
            )
        )
    if base.endswith((".pyc", ".pyo")):
        found.append(
            _finding(
                skill,
                name,
                0,
                "bytecode",
                "compiled Python: Python may run it instead of the reviewed source beside "
                "it, and no one can review it. Install leaves it out and the lock records "
                "it; remove it from the skill.",
            )
        )
        return found
    if data is not None and data.find(b"\0", 0, 8192) >= 0:
        data = None  # not text
    hidden: bool | None = False
    if data is not None and not data.isascii():
        hidden = may_hide(data)
        if hidden is None:
            data = None  # not UTF-8
    if data is None:
        if base.lower().endswith(_SHELL_SUFFIXES):
            found.append(_finding(skill, name, 0, "non_python_script", "ships a shell script."))
        return found
    skill_md = name == SKILL_FILE
    markers = _markers(data) if skill_md else []
    python = base.endswith(".py")
    text: str | None = None
    if (
        hidden
        or python
        or (skill_md and (markers or _may_grant(data)))
        or base == "package.json"
        or base in _HOOKS_FILES
        or (not data.isascii() and (base.lower().endswith(_SHELL_SUFFIXES) or data[:2] == b"#!"))
    ):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            if base.lower().endswith(_SHELL_SUFFIXES):
                found.append(_finding(skill, name, 0, "non_python_script", "ships a shell script."))
            return found
        if hidden:
            found.extend(_hidden_findings(skill, name, text, data))
        if skill_md:
            found.extend(_skill_md_findings(skill, text, None, data, markers))
        if base == "package.json":
            found.extend(_package_json_findings(skill, name, text))
        if base in _HOOKS_FILES:
            found.extend(_hooks_file_findings(skill, name, text))
    why = _is_non_python_script(base, data)
    if why is not None:
        found.append(
            _finding(
                skill,
                name,
                1,
                "non_python_script",
                f"ships {why}; the skills server runs only Python, so the instructions may "
                "ask an agent with a shell to run it.",
            )
        )
    if python and text is not None:
        for code, line, what in python_findings(text):
            found.append(_finding(skill, name, line, code, PYTHON_WORDS[code].format(what=what)))
    return found


def finding(skill: str, name: str, line: int, code: str, message: str) -> Finding:
    """A `Finding` at the level `AUDIT_CODES` gives `code`."""
    return _finding(skill, name, line, code, message)
