"""Text helpers shared by every tool: the output limit, and wire safety.

Every tool answer must fit in ``DPTTOOLS_OUTPUT_TRUNCATION_LIMIT`` characters and say what
was cut. Plain text is cut at the end with a marker (`truncate`); a JSON object is made
smaller while staying valid JSON (`fit_json`): long lists lose entries from the end, big
mappings lose keys from the end, long strings are shortened, and a ``"truncated"`` field
says what was left out and how to see it. `limit_output` picks the right one for an
answer that is already text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["TRUNCATED_KEY", "fit_json", "limit_output", "truncate", "wire_safe"]

TRUNCATED_KEY: Final = "truncated"
"""The field `fit_json` adds to a JSON answer it had to cut."""

_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_SHORT_MARKER: Final = "[truncated]"
# A mapping with more keys than this is a collection (metadata, a table) and may lose keys;
# a smaller one is a record (a skill, a match) whose fields are kept and shortened instead.
_RECORD_KEYS: Final = 8
_MAX_ROUNDS: Final = 200
_NOTE_CUTS_SHOWN: Final = 3
_ELLIPSIS: Final = "…"
_MIN_STRING: Final = 64


def wire_safe(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it can be sent as UTF-8.

    Python stands for the bytes of a file name that is not valid UTF-8 with lone
    surrogates; a reply holding one could not be encoded, and the client would get nothing.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text)
    return text


def _marker(dropped: int, hint: str) -> str:
    return f"\n[... truncated: {dropped} more characters" + (f"; {hint}]" if hint else "]")


def truncate(text: str, limit: int, *, hint: str = "") -> str:
    """Return `text` cut to at most `limit` characters, with a visible marker when cut.

    The marker states how many characters were dropped; `hint` (for example "read the
    rest with load_skill_resource") is appended to it. The result never exceeds `limit`:
    when the marker with its hint does not fit, the hint is left out, and below about 40
    characters a bare ``[truncated]`` (itself cut at the very smallest limits) is used.
    """
    if len(text) <= limit:
        return text
    for note in (hint, "") if hint else ("",):
        # The longest marker this cut can need reports every character as dropped.
        keep = limit - len(_marker(len(text), note))
        if keep >= 0:
            return text[:keep] + _marker(len(text) - keep, note)
    if limit >= len(_SHORT_MARKER):
        return text[: limit - len(_SHORT_MARKER)] + _SHORT_MARKER
    return _SHORT_MARKER[:limit]


def _dumps(value: Any, indent: int | None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent)


def _size(value: Any, indent: int | None = None, depth: int = 0) -> int:
    """Characters `value` takes in the answer's JSON, placed `depth` levels down: with an
    `indent`, each of its lines carries that level's indentation too. Measured as the
    answer is written (at most a few characters over), so a cut never frees much more
    than it was meant to: a list is not cut far below what fits."""
    text = _dumps(value, indent)
    return len(text) + ((text.count("\n") + 1) * indent * depth if indent else 0)


def _keep_count(sizes: list[int], excess: int) -> int:
    """How many leading entries to keep so that those dropped free at least `excess`."""
    freed = 0
    keep = len(sizes)
    while keep > 0 and freed < excess:
        keep -= 1
        # The entry and the separator before it.
        freed += sizes[keep] + 2
    return keep


@dataclass(slots=True)
class _Cut:
    unit: str
    original: int
    kept: int


class _Fitter:
    """Cuts one JSON tree, remembering every cut by the path of the value it touched."""

    def __init__(self, indent: int | None = None) -> None:
        self.cuts: dict[str, _Cut] = {}
        self.indent = indent

    def _record(self, path: str, unit: str, original: int, kept: int) -> None:
        earlier = self.cuts.get(path)
        self.cuts[path] = _Cut(unit, earlier.original if earlier else original, kept)

    def note(self, limit: int, hint: str, *, detailed: bool) -> str:
        head = (
            f"The answer was longer than the output limit ({limit} characters, "
            "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT), so parts of it were left out"
        )
        if not detailed:
            return f"{head}. {hint}".rstrip()
        described = [
            f"{path or 'the answer'} keeps {cut.kept} of {cut.original} {cut.unit}"
            for path, cut in list(self.cuts.items())[:_NOTE_CUTS_SHOWN]
        ]
        more = len(self.cuts) - len(described)
        if more > 0:
            described.append(f"{more} more part(s) were cut")
        return f"{head}: {'; '.join(described)}. {hint}".rstrip()

    def cut(self, root: dict[str, Any], excess: int) -> bool:
        """Make `root` smaller (as JSON) with one cut in its biggest part that can be cut,
        by about `excess` characters; False when nothing is left that could be cut."""
        return self._cut_in(root, excess, "", top=True, depth=0)

    def _cut_in(
        self, node: dict[str, Any] | list[Any], excess: int, path: str, *, top: bool, depth: int
    ) -> bool:
        keys: list[Any] = list(node) if isinstance(node, dict) else list(range(len(node)))
        sizes = [self._size(node[k], depth + 1) if _cuttable(node[k]) else 0 for k in keys]
        collection = isinstance(node, list) or (not top and len(keys) > _RECORD_KEYS)
        if collection and len(keys) > 1 and 2 * max(sizes) <= sum(sizes):
            # Entries alike (none holds most of the size): drop them from the end.
            self._drop(node, keys, excess, path, depth=depth)
            return True
        ranked = sorted((i for i, size in enumerate(sizes) if size), key=lambda i: -sizes[i])
        for rank, index in enumerate(ranked):
            # Cut the biggest part toward the size of the next biggest (at most by half in
            # one go), so that one huge part does not take every other part's room.
            second = sizes[ranked[rank + 1]] if rank + 1 < len(ranked) else 0
            target = min(excess, max(sizes[index] - second, sizes[index] // 2 + 1))
            step = _step(path, node, keys[index])
            if self._cut_value(node, keys[index], target, step, depth=depth + 1):
                return True
        if collection and keys:
            self._drop(node, keys, excess, path, depth=depth, at_least_one=True)
            return True
        return False

    def _size(self, value: Any, depth: int) -> int:
        return _size(value, self.indent, depth)

    def _cut_value(self, holder: Any, key: Any, excess: int, path: str, *, depth: int) -> bool:
        value = holder[key]
        if isinstance(value, str):
            kept = max(len(value) - excess - len(_ELLIPSIS), _MIN_STRING // 2)
            holder[key] = value[:kept] + _ELLIPSIS
            self._record(path, "characters", len(value), kept)
            return True
        return self._cut_in(value, excess, path, top=False, depth=depth)

    def _drop(
        self,
        node: dict[str, Any] | list[Any],
        keys: list[Any],
        excess: int,
        path: str,
        *,
        depth: int,
        at_least_one: bool = False,
    ) -> None:
        if isinstance(node, dict):
            sizes = [self._size(node[k], depth + 1) + len(str(k)) + 4 for k in keys]
        else:
            sizes = [self._size(item, depth + 1) for item in node]
        keep = _keep_count(sizes, excess)
        if at_least_one:
            keep = min(keep, len(keys) - 1)
        for k in reversed(keys[keep:]):
            del node[k]
        self._record(path, "keys" if isinstance(node, dict) else "entries", len(keys), keep)


def _step(path: str, node: Any, key: Any) -> str:
    """The path of ``node[key]``: ``skills['name'].metadata``, ``diagnostics[3]``."""
    if isinstance(node, dict):
        return f"{path}.{key}" if path else str(key)
    entry = node[key]
    label = next(
        (entry[k] for k in ("name", "skill", "path") if isinstance(entry, dict) and k in entry),
        None,
    )
    return f"{path}[{label!r}]" if isinstance(label, str) else f"{path}[{key}]"


def _emptied(value: Any) -> Any:
    """An empty value of the same JSON type for lists, mappings and long strings."""
    if isinstance(value, list | dict):
        return type(value)()
    return "" if _cuttable(value) else value


def _cuttable(value: Any) -> bool:
    """Strings of up to `_MIN_STRING` characters (names, codes, short paths) are never
    shortened: a record holding only such values is dropped whole instead."""
    if isinstance(value, str):
        return len(value) > _MIN_STRING
    return isinstance(value, list | dict) and bool(value)


def fit_json(
    payload: Mapping[str, Any], limit: int, *, hint: str = "", indent: int | None = 2
) -> str:
    """`payload` as JSON text of at most `limit` characters, still valid JSON when cut.

    Unchanged when it fits. Otherwise the biggest part is cut, again and again: a list
    whose entries are alike loses entries from the end, a mapping of more than eight keys
    loses keys from the end, a string is shortened (ending in "…"), and a record (a
    mapping of a few fields, such as one skill) keeps its fields and has its biggest one
    cut. The top-level keys always stay; a ``"truncated"`` field is added saying which
    parts kept how much, followed by `hint` (how to see the rest). When not even that
    fits, the top-level keys are kept with empty values, then only the ``"truncated"``
    field (its text cut) remains; below about 30 characters the text cannot be valid JSON
    and is cut like plain text.
    """
    text = _dumps(payload, indent)
    if len(text) <= limit:
        return text
    whole = text
    # First with a note that names each cut; when that note leaves no room, a short one.
    for detailed in (True, False):
        work: dict[str, Any] = json.loads(whole)
        fitter = _Fitter(indent)
        for _ in range(_MAX_ROUNDS):
            note = fitter.note(limit, hint, detailed=detailed)
            text = _dumps({**work, TRUNCATED_KEY: note}, indent)
            if len(text) <= limit:
                return text
            if not fitter.cut(work, len(text) - limit):
                break
    note = (
        f"The answer was longer than the output limit ({limit} characters, "
        f"DPTTOOLS_OUTPUT_TRUNCATION_LIMIT) and none of it fits; raise the limit. {hint}"
    ).rstrip()
    # The shape still tells a client what it got: every top-level key, emptied.
    skeleton = {key: _emptied(value) for key, value in json.loads(whole).items()}
    short = (
        f"The answer was longer than the output limit ({limit} characters) and none of it "
        "fits; raise DPTTOOLS_OUTPUT_TRUNCATION_LIMIT."
    )
    for text in (
        _dumps({**skeleton, TRUNCATED_KEY: note}, indent),
        _dumps({**skeleton, TRUNCATED_KEY: short}, indent),
    ):
        if len(text) <= limit:
            return text
    overhead = len(_dumps({TRUNCATED_KEY: ""}, indent))
    if limit >= overhead + len(note):
        return _dumps({TRUNCATED_KEY: note}, indent)
    if limit > overhead + len(_ELLIPSIS):
        kept = note[: limit - overhead - len(_ELLIPSIS)] + _ELLIPSIS
        return _dumps({TRUNCATED_KEY: kept}, indent)
    return truncate(text, limit)


def limit_output(text: str, limit: int, *, hint: str = "") -> str:
    """`text` cut to at most `limit` characters, saying what was cut: a JSON object with
    `fit_json` (so it stays valid JSON), anything else with `truncate`."""
    if len(text) <= limit:
        return text
    if text.startswith("{"):
        try:
            payload = json.loads(text)
        except ValueError:
            payload = None
        if isinstance(payload, dict):
            indent = 2 if text.startswith("{\n") else None
            return fit_json(payload, limit, hint=hint, indent=indent)
    return truncate(text, limit, hint=hint)
