"""YAML text -> Python value, hardened against documents built to hurt the reader.

`load_yaml` parses with PyYAML's safe loader (the C one when PyYAML was built with libyaml),
with YAML 1.1 timestamps kept as plain strings. It bounds the nesting depth and the
alias-expanded node count ("billion laughs"), and refuses an alias that stands inside the
very value its anchor names (``&m {k: *m}``): such a value never ends, so no consumer
could print or serialise it. A hostile document therefore costs bounded time and memory,
and whatever comes back is a finite tree.

How, in one parse for the common case: the text is composed into PyYAML's node graph
(bounded by the text itself: frontmatter is at most 64 KiB, and libyaml stops nesting at
1,000 levels), and one walk of that graph, each node measured once however many aliases
name it, checks the bounds before anything is built; the value is then built from the
nodes, plain mappings, lists and scalars directly, anything else by PyYAML's safe
constructor. Whatever is unusual (the text is not one valid document, a bound is passed,
a value cannot be built) is judged again by the reference path, `_load_checked`: a
streaming walk over the parser's events that enforces the same bounds and says where a
recursive alias stands, then PyYAML's own load. So each refusal and its wording come from
that one place.

This module knows nothing about skills; `frontmatter` turns a `Refused` into a diagnostic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

import yaml

__all__ = ["MAX_YAML_DEPTH", "MAX_YAML_NODES", "Loaded", "Refused", "load_yaml"]

MAX_YAML_DEPTH: Final = 32
"""Deepest nesting of lists and mappings accepted, counting what aliases expand to."""
MAX_YAML_NODES: Final = 10_000
"""Most YAML nodes accepted once every alias is expanded (defeats "billion laughs")."""

# The safe loader (in C when PyYAML was built with libyaml), with YAML 1.1 timestamps kept
# as plain strings: a catalog wants "2025-01-01", not a date object.
_SafeBase: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_RESOLVERS: Final[dict[Any, list[tuple[str, Any]]]] = {
    key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in _SafeBase.yaml_implicit_resolvers.items()
}
# What `resolve` tries for a plain scalar, by its first character (``""`` when empty):
# that character's resolvers, then those for any character, as PyYAML's own order is.
_BY_FIRST: Final = {
    key: [*resolvers, *_RESOLVERS.get(None, [])]
    for key, resolvers in _RESOLVERS.items()
    if key is not None
}
_ANY_FIRST: Final = _RESOLVERS.get(None, [])
_STR: Final = "tag:yaml.org,2002:str"
_SEQ: Final = "tag:yaml.org,2002:seq"
_MAP: Final = "tag:yaml.org,2002:map"


def _resolve(self: Any, kind: Any, value: Any, implicit: Any) -> Any:
    """PyYAML's `resolve` with its per-scalar list building done once, at import."""
    if kind is yaml.ScalarNode and not self.yaml_path_resolvers:
        if implicit[0]:
            for tag, regexp in _BY_FIRST.get(value[:1], _ANY_FIRST):
                if regexp.match(value):
                    return tag
        return self.DEFAULT_SCALAR_TAG
    return _SafeBase.resolve(self, kind, value, implicit)


_Loader: Any = type("_Loader", (_SafeBase,), {"resolve": _resolve})
_Loader.yaml_implicit_resolvers = _RESOLVERS
# Scalar tags built directly (see `_build`), with PyYAML's own constructor of each.
_SCALARS: Final = {
    "tag:yaml.org,2002:null": _Loader.construct_yaml_null,
    "tag:yaml.org,2002:bool": _Loader.construct_yaml_bool,
    "tag:yaml.org,2002:int": _Loader.construct_yaml_int,
    "tag:yaml.org,2002:float": _Loader.construct_yaml_float,
}


@dataclass(frozen=True, slots=True)
class Loaded:
    """A document that passed every check, and the value it holds."""

    value: Any
    """The parsed value: a finite tree of dicts, lists and scalars (None when empty)."""


@dataclass(frozen=True, slots=True)
class Refused:
    """A document that was not turned into a value, and why."""

    code: str
    """``invalid_yaml``, ``yaml_too_complex`` or ``yaml_recursive_alias``."""
    reason: str
    """What was found, with the line and column when known (no advice on the fix)."""


class _Refusal(Exception):
    """Raised inside the event walk; carries the `Refused` to return."""

    def __init__(self, refused: Refused) -> None:
        super().__init__(refused.reason)
        self.refused = refused


def _where(mark: Any) -> str:
    return f" (frontmatter line {mark.line + 1}, column {mark.column + 1})" if mark else ""


def _too_complex(what: str) -> _Refusal:
    return _Refusal(Refused("yaml_too_complex", what))


def _check_events(text: str) -> None:
    """Walk the YAML events once, bounding depth and alias-expanded size, refusing cycles.

    Each anchor remembers the size and height of the node it names, so an alias costs what
    its expansion would cost, without expanding anything. An alias whose anchor belongs to
    a collection that is still open would make that collection contain itself.

    Raises:
        _Refusal: a bound is exceeded or an alias is recursive.
        yaml.YAMLError: the text is not valid YAML.
    """
    loader = _Loader(text)
    anchors: dict[str, tuple[int, int]] = {}
    # One frame per open collection: [anchor, expanded node count, height of children].
    stack: list[list[Any]] = []
    total = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, yaml.CollectionStartEvent):
                stack.append([event.anchor, 1, 0])
                if len(stack) > MAX_YAML_DEPTH:
                    raise _too_complex(f"nesting deeper than {MAX_YAML_DEPTH} levels")
                continue
            if isinstance(event, yaml.CollectionEndEvent):
                anchor, size, child_height = stack.pop()
                height = child_height + 1
            elif isinstance(event, yaml.ScalarEvent):
                anchor, size, height = event.anchor, 1, 0
            elif isinstance(event, yaml.AliasEvent):
                if event.anchor is not None and any(f[0] == event.anchor for f in stack):
                    raise _Refusal(
                        Refused(
                            "yaml_recursive_alias",
                            f"the alias '*{event.anchor}'{_where(event.start_mark)} refers to "
                            f"itself: it stands inside the value that '&{event.anchor}' names, "
                            "so that value would never end",
                        )
                    )
                anchor = None
                size, height = anchors.get(event.anchor or "", (1, 0))
            else:
                continue
            if anchor:
                anchors[anchor] = (size, height)
            if len(stack) + height > MAX_YAML_DEPTH:
                raise _too_complex(f"nesting deeper than {MAX_YAML_DEPTH} levels")
            if stack:
                frame = stack[-1]
                frame[1] += size
                frame[2] = max(frame[2], height)
                size = frame[1]
            else:
                total += size
                size = total
            if size > MAX_YAML_NODES:
                raise _too_complex(f"more than {MAX_YAML_NODES} values once aliases are expanded")
    finally:
        loader.dispose()


def _problem(exc: BaseException) -> str:
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{problem}{_where(getattr(exc, 'problem_mark', None))}"


class _Unusual(Exception):
    """Raised by `_extent` and `_build` for what the reference path must judge."""


def _extent(node: Any, room: int, memo: dict[int, Any]) -> tuple[int, int]:
    """(node count with aliases expanded, nesting height) of the collection `node`, at most
    `room` collections deep; each node is measured once, however many aliases name it.

    Raises:
        _Unusual: a bound is passed, or `node` contains itself (a recursive alias).
    """
    known = memo.get(id(node))
    if known is not None:
        if known is memo:  # still being measured: it contains itself
            raise _Unusual
        return known  # type: ignore[no-any-return]
    if room == 0:
        raise _Unusual
    memo[id(node)] = memo
    size, height = 1, 0
    pairs = isinstance(node, yaml.MappingNode)
    for item in node.value:
        for child in item if pairs else (item,):
            if isinstance(child, yaml.ScalarNode):
                size += 1
                continue
            child_size, child_height = _extent(child, room - 1, memo)
            size += child_size
            height = max(height, child_height)
    if size > MAX_YAML_NODES:
        raise _Unusual
    memo[id(node)] = extent = (size, height + 1)
    return extent


def _build(loader: Any, node: Any, memo: dict[int, Any]) -> Any:
    """The value of `node`, as PyYAML's safe constructor would build it, for plain
    mappings (of scalar keys), lists and str, null, bool, int and float scalars; a node
    named by several aliases is built once, as there.

    Raises:
        _Unusual: any other node (a merge key, an explicit tag, a collection as a key).
    """
    if isinstance(node, yaml.ScalarNode):
        if node.tag == _STR:
            return node.value
        make = _SCALARS.get(node.tag)
        if make is None:
            raise _Unusual
        return make(loader, node)
    built = memo.get(id(node))
    if built is not None:
        return built
    if node.tag == _MAP and isinstance(node, yaml.MappingNode):
        mapping: dict[Any, Any] = {}
        memo[id(node)] = mapping
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise _Unusual
            key = _build(loader, key_node, memo)
            mapping[key] = _build(loader, value_node, memo)
        return mapping
    if node.tag == _SEQ and isinstance(node, yaml.SequenceNode):
        sequence: list[Any] = []
        memo[id(node)] = sequence
        sequence.extend(_build(loader, child, memo) for child in node.value)
        return sequence
    raise _Unusual


# The plain shape most frontmatter has, read without PyYAML (see `_read_plain`): lines of
# `key: value` at column 0, or `key:` and then lines of `key: value` indented alike.
_PAIR: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_-]{0,127}):(?: (.*))?")
_SINGLE_QUOTED: Final = re.compile(r"'((?:[^']|'')*)'")
_DOUBLE_QUOTED: Final = re.compile(r'"([^"\\]*)"')
# What YAML reads as a tab, a line break (CR, NEL, LS, PS), a byte-order mark or a
# character it refuses: text holding any of these is left to PyYAML.
_NOT_PLAIN_TEXT: Final = re.compile(
    "[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
# A plain scalar starting with one of these is an indicator, or may be one.
_INDICATORS: Final = frozenset("-?:,[]{}#&*!|>'\"%@`")
_SCALAR_BUILDER: Final = yaml.constructor.SafeConstructor()


def _plain_scalar(raw: str) -> Any:
    """The value of one scalar written on one line (`raw`, stripped of spaces).

    Raises:
        _Unusual: a quoted scalar that does not close on the line or holds escapes, or a
            plain one that may be something else (an indicator first, ``": "``, ``" #"``
            or a trailing colon in it), or that resolves to a tag not built here.
    """
    first = raw[:1]
    if first in _INDICATORS:
        quoted = (
            _SINGLE_QUOTED.fullmatch(raw)
            if first == "'"
            else _DOUBLE_QUOTED.fullmatch(raw)
            if first == '"'
            else None
        )
        if quoted is None:
            raise _Unusual
        return quoted.group(1).replace("''", "'") if first == "'" else quoted.group(1)
    if ": " in raw or " #" in raw or raw[-1] == ":":
        raise _Unusual
    for tag, regexp in _BY_FIRST.get(first, _ANY_FIRST):
        if regexp.match(raw):
            make = _SCALARS.get(tag)
            if make is None:
                raise _Unusual
            return make(_SCALAR_BUILDER, yaml.ScalarNode(tag, raw))
    return raw


def _plain_key(name: str) -> Any:
    """The key `name` (as `_PAIR` matched it) as YAML resolves it: most keys start with a
    character no resolver looks at, and are the text itself."""
    if name[0] in _BY_FIRST or _ANY_FIRST:
        return _plain_scalar(name)
    return name


def _read_plain(text: str) -> dict[Any, Any] | None:
    """The mapping `text` holds when it has the plain shape (see `_PAIR`), built as PyYAML
    would build it; None for any other text, which PyYAML must read.

    Raises:
        _Unusual: a scalar `_plain_scalar` leaves to PyYAML; and anything a scalar's
            constructor raises (an integer too long to convert).
    """
    if _NOT_PLAIN_TEXT.search(text) is not None:
        return None
    mapping: dict[Any, Any] = {}
    nodes = 1
    open_key: Any = None  # the key of a `key:` line, while indented lines may follow it
    inner: dict[Any, Any] | None = None
    indent = 0
    for line in text.split("\n"):
        if not line.strip(" "):
            continue
        if line[0] != " ":
            match = _PAIR.fullmatch(line)
            if match is None:
                return None
            key = _plain_key(match.group(1))
            raw = (match.group(2) or "").strip(" ")
            if raw:
                mapping[key] = _plain_scalar(raw)
                open_key = None
            else:
                mapping[key] = None
                open_key, inner, indent = key, None, 0
            nodes += 2
            continue
        if open_key is None:
            return None
        width = len(line) - len(line.lstrip(" "))
        if inner is None:
            inner, indent = {}, width
            mapping[open_key] = inner
        elif width != indent:
            return None
        match = _PAIR.fullmatch(line, width)
        if match is None:
            return None
        raw = (match.group(2) or "").strip(" ")
        inner[_plain_key(match.group(1))] = _plain_scalar(raw) if raw else None
        nodes += 2
    if nodes == 1 or nodes > MAX_YAML_NODES:
        return None
    return mapping


def load_yaml(text: str) -> Loaded | Refused:
    """Parse one YAML document within the bounds of this module; never raises on any text.

    Returns `Loaded` with the value, or `Refused` with code ``yaml_too_complex`` (too deep
    or too many values once aliases are expanded), ``yaml_recursive_alias`` (an alias
    inside the collection its anchor names) or ``invalid_yaml`` (not YAML, a tag the safe
    loader refuses, an integer too long to convert, a duplicate anchor, ...).
    """
    try:
        plain = _read_plain(text)
    except Exception:  # whatever it is, PyYAML judges it
        plain = None
    if plain is not None:
        return Loaded(plain)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return Loaded(None)
        if isinstance(node, yaml.ScalarNode):
            return Loaded(loader.construct_document(node))
        _, height = _extent(node, MAX_YAML_DEPTH, {})
        if height <= MAX_YAML_DEPTH:
            try:
                return Loaded(_build(loader, node, {}))
            except _Unusual:
                return Loaded(loader.construct_document(node))
    except Exception:  # whatever it is, the reference path judges it
        pass
    finally:
        loader.dispose()
    return _load_checked(text)


def _load_checked(text: str) -> Loaded | Refused:
    """The reference path: the event walk, then PyYAML's own load (see the docstring)."""
    try:
        _check_events(text)
        loader = _Loader(text)
        try:
            return Loaded(loader.get_single_data())
        finally:
            loader.dispose()
    except _Refusal as exc:
        return exc.refused
    except (KeyError, IndexError, AttributeError, TypeError) as exc:
        # PyYAML's constructors fail this way on a value that an explicit tag names a
        # type it is not (``!!bool maybe``, ``!!int ''``, ``!!timestamp x``).
        return Refused(
            "invalid_yaml",
            f"a value cannot be read as the type its tag names ({type(exc).__name__}: {exc})",
        )
    except (yaml.YAMLError, ValueError, RecursionError, OverflowError) as exc:
        if "nesting depth" in str(exc):
            # libyaml's own depth guard fired before the event walk reached its bound.
            return Refused("yaml_too_complex", f"nesting deeper than {MAX_YAML_DEPTH} levels")
        return Refused("invalid_yaml", _problem(exc))
