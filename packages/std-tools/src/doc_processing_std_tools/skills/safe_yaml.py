"""YAML text -> Python value, hardened against documents built to hurt the reader.

`load_yaml` parses with PyYAML's safe loader (the C one when PyYAML was built with libyaml),
with YAML 1.1 timestamps kept as plain strings. Before anything is built, one streaming
pass over the parser's events bounds the nesting depth and the alias-expanded node count
("billion laughs"), and refuses an alias that stands inside the very value its anchor names
(``&m {k: *m}``): such a value never ends, so no consumer could print or serialise it.
A hostile document therefore costs bounded time and memory, and whatever comes back is a
finite tree.

This module knows nothing about skills; `frontmatter` turns a `Refused` into a diagnostic.
"""

from __future__ import annotations

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
_Loader: Any = type("_Loader", (_SafeBase,), {})
_Loader.yaml_implicit_resolvers = {
    key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in _SafeBase.yaml_implicit_resolvers.items()
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


def load_yaml(text: str) -> Loaded | Refused:
    """Parse one YAML document after the event walk accepted it; never raises on any text.

    Returns `Loaded` with the value, or `Refused` with code ``yaml_too_complex`` (too deep
    or too many values once aliases are expanded), ``yaml_recursive_alias`` (an alias
    inside the collection its anchor names) or ``invalid_yaml`` (not YAML, a tag the safe
    loader refuses, an integer too long to convert, a duplicate anchor, ...).
    """
    try:
        _check_events(text)
        loader = _Loader(text)
        try:
            return Loaded(loader.get_single_data())
        finally:
            loader.dispose()
    except _Refusal as exc:
        return exc.refused
    except (yaml.YAMLError, ValueError, RecursionError, OverflowError) as exc:
        if "nesting depth" in str(exc):
            # libyaml's own depth guard fired before the event walk reached its bound.
            return Refused("yaml_too_complex", f"nesting deeper than {MAX_YAML_DEPTH} levels")
        return Refused("invalid_yaml", _problem(exc))
