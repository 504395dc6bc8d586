"""The audit's judgement of invisible characters in a text file, by context.

Invisible characters have honest uses, and the audit tells them apart from text spelled
in characters no reader sees:

- a zero-width joiner between two emoji (or between letters of a script that joins them)
  is part of how the text is drawn: no finding;
- one variation selector right after a visible character picks how it is drawn (the
  U+FE0F after a heart): no finding;
- one zero-width character or direction mark next to a backtick or inside a code block
  (the usual way to show a Markdown fence inside a fence) is the ``zero_width_in_code``
  warning, and one direction mark between letters of right-to-left prose is no finding;
- everything else is an error: tag characters, two variation selectors or more in a row
  (a run can encode bytes), two zero-width characters or more in a row, a lone
  zero-width character elsewhere, bidirectional controls and other format characters.

Each finding is reported once per kind and file, with the first place and the count.
Pure: text in, findings out.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Final

from ..._hidden import is_hidden, is_selector

__all__ = ["HIDDEN_CODES", "hidden_runs", "invisible_chars", "may_hide"]

_ZERO_WIDTH: Final = frozenset({0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF})
_JOINERS: Final = frozenset({0x200C, 0x200D})
_BIDI: Final = frozenset({*range(0x202A, 0x202F), *range(0x2066, 0x206A)})
# Direction marks: a lone one has the honest uses of a lone zero-width character.
_MARKS: Final = frozenset({0x200E, 0x200F})
_SKIN_TONES: Final = range(0x1F3FB, 0x1F400)

#: The codes this module gives, with the words of their messages.
HIDDEN_CODES: Final = {
    "tag_characters": "Unicode tag character(s), which spell text no reader sees",
    "variation_selectors": "variation selector(s) in a run, which can encode hidden text",
    "zero_width_characters": "zero-width character(s), which can split or hide words",
    "zero_width_in_code": "lone invisible character(s) next to a backtick or in a code block",
    "bidi_controls": "bidirectional control character(s), which reorder what is shown",
    "format_characters": "invisible format character(s)",
}

_ASCII_BYTES: Final = bytes(range(128))
# How the UTF-8 of U+FE00-FE0F and U+E0100-E01EF starts (with some other characters').
_SELECTOR_START_1: Final = "\ufe00".encode()[:2]
_SELECTOR_START_2: Final = "\U000e0100".encode()[:2]
_FENCE: Final = re.compile(r"^[ \t]{0,3}(?:```|~~~)", re.MULTILINE)


def _is_invisible(char: str) -> bool:
    return is_hidden(char) or is_selector(char)


def _is_pictograph(char: str) -> bool:
    point = ord(char)
    return (
        unicodedata.category(char) == "So"
        or point in _SKIN_TONES
        or 0x1F000 <= point <= 0x1FAFF
        or 0x2600 <= point <= 0x27BF
    )


def _visible_before(text: str, index: int) -> str:
    """The visible character before `index`, skipping one selector or skin tone."""
    index -= 1
    if index >= 0 and (is_selector(text[index]) or ord(text[index]) in _SKIN_TONES):
        index -= 1
    return text[index] if index >= 0 else ""


def _joins_honestly(text: str, index: int) -> bool:
    """True when the joiner at `index` sits between two emoji, or two letters of a
    script outside ASCII (Persian, Indic scripts and others use them in words)."""
    before = _visible_before(text, index)
    after = text[index + 1] if index + 1 < len(text) else ""
    if not before or not after:
        return False
    if _is_pictograph(before) and _is_pictograph(after):
        return True
    return not before.isascii() and not after.isascii() and before.isalpha() and after.isalpha()


def _in_code(text: str, index: int) -> bool:
    """True when `index` is next to a backtick, inside inline code on its line, or
    inside a fenced code block."""
    if (index and text[index - 1] == "`") or text[index + 1 : index + 2] == "`":
        return True
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    line_end = len(text) if end < 0 else end
    if text.count("`", start, index) % 2 and "`" in text[index:line_end]:
        return True
    return len(_FENCE.findall(text, 0, start)) % 2 == 1


def _kind_of_run(text: str, start: int, end: int) -> str | None:
    """The finding for the run of invisible characters text[start:end], or None."""
    points = [ord(char) for char in text[start:end]]
    if any(0xE0000 <= point <= 0xE007F for point in points):
        return "tag_characters"
    if any(point in _BIDI for point in points):
        return "bidi_controls"
    selectors = sum(is_selector(chr(point)) for point in points)
    if selectors >= 2:
        return "variation_selectors"
    if selectors == len(points):
        # One selector after a visible character picks its form; alone, it is hidden.
        return None if start and not _is_invisible(text[start - 1]) else "variation_selectors"
    if len(points) == 1 and points[0] in _MARKS:
        before = text[start - 1] if start else ""
        after = text[end] if end < len(text) else ""
        if _in_code(text, start):
            return "zero_width_in_code"
        if before.isalpha() and after.isalpha() and not (before + after).isascii():
            return None  # a mark in right-to-left (or mixed) prose
        return "format_characters"
    zero_width = [point for point in points if point in _ZERO_WIDTH]
    if len(zero_width) >= 2 or (zero_width and len(points) - selectors > len(zero_width)):
        return "zero_width_characters"
    if zero_width:
        index = start + next(i for i, p in enumerate(points) if p in _ZERO_WIDTH)
        if points[index - start] in _JOINERS and _joins_honestly(text, index):
            return None
        return "zero_width_in_code" if _in_code(text, index) else "zero_width_characters"
    return "format_characters"


def may_hide(data: bytes) -> bool | None:
    """Whether the bytes `data` (not ASCII) may hold an invisible character, from their
    bytes outside ASCII alone (one C pass to take them out): None when those are not
    UTF-8 (then neither is `data`); False when the characters they spell are all
    printable and none is a variation selector (then `data` holds no invisible
    character, if it is UTF-8 at all); True otherwise."""
    others = data.translate(None, _ASCII_BYTES)
    try:
        chars = others.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return not _printable(chars, others)


def _printable(chars: str, others: bytes) -> bool:
    """True when `chars` (with the UTF-8 `others`) holds no invisible character: every
    invisible character is unprintable to Python (a format character, or a tag
    character, which is one or unassigned) but the variation selectors, whose UTF-8
    starts so. Three C calls."""
    return (
        chars.isprintable() and _SELECTOR_START_1 not in others and _SELECTOR_START_2 not in others
    )


def invisible_chars(text: str, data: bytes | None = None) -> list[str]:
    """The distinct invisible characters in `text` (none in ASCII). `data`, the UTF-8
    bytes `text` was decoded from when the caller has them, spares encoding it again:
    the characters outside ASCII are taken from its other bytes (one C pass), and each
    distinct one is judged once."""
    if text.isascii():
        return []
    if data is None:
        data = text.encode("utf-8", "surrogatepass")
    others = data.translate(None, _ASCII_BYTES)
    chars = others.decode("utf-8", "surrogatepass")
    if _printable(chars, others):
        return []
    return [char for char in set(chars) if _is_invisible(char)]


def _places(text: str, chars: list[str]) -> Iterator[int]:
    """Where each of `chars` is in `text`, in order."""
    if len(chars) == 1:
        char = chars[0]
        index = text.find(char)
        while index >= 0:
            yield index
            index = text.find(char, index + 1)
        return
    pattern = re.compile(f"[{''.join(map(re.escape, sorted(chars)))}]")  # cached by re
    for match in pattern.finditer(text):
        yield match.start()


def hidden_runs(text: str, invisible: list[str] | None = None) -> Iterator[tuple[str, int, int]]:
    """(code, index of the first, count) for each kind of hidden character found in
    `text`; a byte-order mark at the very start is an encoding mark and not counted.
    `invisible` is `invisible_chars` of `text` when the caller has it."""
    if invisible is None:
        invisible = invisible_chars(text)
    if not invisible:
        return
    first: dict[str, int] = {}
    counts: dict[str, int] = {}
    length = len(text)
    end = 0
    for index in _places(text, invisible):
        if index < end:
            continue
        if index == 0 and text[0] == "\ufeff":
            continue
        end = index + 1
        while end < length and _is_invisible(text[end]):
            end += 1
        kind = _kind_of_run(text, index, end)
        if kind is not None:
            first.setdefault(kind, index)
            counts[kind] = counts.get(kind, 0) + (end - index)
    for kind, at in first.items():
        yield kind, at, counts[kind]
