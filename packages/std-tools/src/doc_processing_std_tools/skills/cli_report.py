"""What ``dpt-skills`` prints about skills, made safe for a terminal.

Names come from other people's files and archives: a file name can hold an escape
sequence, a carriage return or a line feed that moves the cursor and rewrites what was
printed (erasing warnings, or printing a fake summary). `terminal_safe` escapes every
control, format and separator character, and every variation selector, so each printed
line shows exactly what is there. `finding_lines` words the audit's findings with it, and
`summary_lines` counts them by code, errors first. The command line (`cli`) prints them.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from .._hidden import is_selector
from .audit.checks import Finding
from .core.diagnostics import AUDIT_CODES, CodeInfo

__all__ = ["finding_lines", "summary_lines", "terminal_safe"]

_UNSAFE: Final = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"})


def _escaped(char: str) -> str:
    point = ord(char)
    if point < 0x100:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


def terminal_safe(text: str) -> str:
    """`text` with every character that a terminal would act on, or not draw, escaped
    (``\\x1b``, ``\\r``, ``\\n``, ``\\u202e``, ...); a tab stays a tab."""
    if text.isprintable() or all(c == "\t" or c.isprintable() for c in text):
        return text
    return "".join(
        _escaped(c) if c != "\t" and (unicodedata.category(c) in _UNSAFE or is_selector(c)) else c
        for c in text
    )


def finding_lines(findings: Iterable[Finding]) -> list[str]:
    """One terminal-safe line per finding: ``skill/file:line: level [code] message``."""
    lines = []
    for f in findings:
        where = f"{f.skill}/{f.file}" + (f":{f.line}" if f.line else "")
        lines.append(terminal_safe(f"{where}: {f.level} [{f.code}] {f.message}"))
    return lines


def summary_lines(
    found: Sequence[tuple[str, str]], codes: Mapping[str, CodeInfo] = AUDIT_CODES
) -> list[str]:
    """The (code, level) pairs of `found` counted by code, errors first, then the most
    frequent, each with what it means; no line when `found` is empty."""
    if not found:
        return []
    by_code = Counter(code for code, _ in found)
    levels = dict(found)
    lines = ["By code:"]
    for code, count in sorted(by_code.items(), key=lambda i: (levels[i[0]] != "error", -i[1])):
        info = codes.get(code)
        meaning = f": {info.meaning}" if info is not None else ""
        lines.append(terminal_safe(f"  {count:>6}  {code} ({levels[code]}s){meaning}"))
    return lines
