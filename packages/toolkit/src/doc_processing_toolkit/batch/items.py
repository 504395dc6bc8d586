"""Batch items, their identity, the prompt template, and reading items from a glob or a
JSONL file.

An item is a document path or a mapping of fields. Its `BatchItem.id` is what a results
file records and what ``--resume`` matches on, so it must not change between runs: a path
item is identified by its path as written (normalised), a mapping by its ``id`` field when
it has one (a string or an integer, compared by value and type: ``id:7`` for the number,
``id:"7"`` for the string), else by a hash of its canonical JSON.

A JSONL file is split into lines at LF only: a CR inside a line is part of it (CRLF line
endings work, the CR being JSON whitespace), so line numbers and counts are the file's.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BatchError, TemplateFieldError

__all__ = ["BatchItem", "ItemSource", "Job", "PromptTemplate", "id_identity", "open_input"]

_FORMATTER = string.Formatter()


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One unit of work of a batch.

    Attributes:
        id: the stable identity of the item (see the module docstring).
        source: the item as given: a path (str) or a JSON-compatible mapping; written to
            the results file as ``item``.
        fields: what the prompt template may use: a mapping's own fields, plus ``path``,
            ``name`` (the file name) and ``stem`` (the name without its suffix) for a path
            item or a mapping with a ``path`` field.
        error: why the item itself is unusable (a JSONL line that is not JSON, a mapping
            that is not JSON-compatible); such an item fails without running.
    """

    id: str
    source: str | dict[str, Any]
    fields: Mapping[str, Any]
    error: str | None = None

    @classmethod
    def of(cls, value: object) -> BatchItem:
        """The item for a path or a mapping.

        An unusable value (a mapping that JSON cannot hold, another type) becomes an item
        whose `error` says why, so that it fails alone instead of stopping the batch.
        """
        if isinstance(value, str | os.PathLike):
            path = os.path.normpath(os.fspath(value))
            return cls(id=path, source=path, fields=_path_fields(path))
        if isinstance(value, Mapping):
            data = dict(value)
            try:
                canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as exc:
                return cls.invalid(
                    f"repr:{value!r}"[:200], f"the item is not JSON-compatible ({exc})"
                )
            if "id" in data and isinstance(data["id"], str | int):
                identity = id_identity(data["id"])
            else:
                # "surrogatepass": a JSON line may hold a lone surrogate ("\ud800"), which
                # strict UTF-8 refuses; every other text hashes as it always did.
                digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
                digest = digest[:20]
                identity = f"sha256:{digest}"
            fields = dict(data)
            if isinstance(data.get("path"), str):
                fields = {**_path_fields(data["path"]), **data}
            return cls(id=identity, source=data, fields=fields)
        return cls.invalid(
            f"repr:{value!r}"[:200],
            f"an item must be a path or a mapping of fields, not {type(value).__name__}",
        )

    @classmethod
    def invalid(cls, identity: str, error: str) -> BatchItem:
        """An item that fails without running, because of `error`."""
        return cls(id=identity, source=identity, fields={}, error=error)


def id_identity(value: str | int) -> str:
    """The identity of a mapping item whose ``id`` field is `value`: ``id:`` and the value
    as JSON, so that the number 7 (``id:7``) and the string "7" (``id:"7"``) differ."""
    return "id:" + json.dumps(value, ensure_ascii=False)


def _path_fields(path: str) -> dict[str, Any]:
    name = Path(path).name
    return {"path": path, "name": name, "stem": Path(name).stem}


@dataclass(frozen=True, slots=True)
class Job:
    """An item with its prompt, as an engine receives it.

    Attributes:
        item: the item.
        prompt: the prompt filled from the item's fields.
        trace: the batch span's W3C trace context (``traceparent`` and ``tracestate``
            pairs; empty when tracing is off), so the item's span joins the batch's trace
            in this process or on a Ray actor.
    """

    item: BatchItem
    prompt: str
    trace: tuple[tuple[str, str], ...] = ()


class PromptTemplate:
    """A prompt with ``{field}`` placeholders filled from each item's fields.

    Placeholders are plain field names with an optional format spec (``{page:03d}``);
    ``{{`` and ``}}`` are literal braces. Attribute and index lookups (``{a.b}``,
    ``{a[0]}``) are refused: an item's values are data, not objects to explore.

    Raises:
        BatchError: the template is malformed or uses a lookup (on construction).
    """

    def __init__(self, text: str) -> None:
        try:
            parsed = list(_FORMATTER.parse(text))
        except ValueError as exc:
            raise BatchError(
                f"the prompt template {text!r} is malformed ({exc}); placeholders look like "
                "{path} or {name}, and literal braces are written {{ and }}."
            ) from None
        for _literal, field_name, spec, _conversion in parsed:
            for name in (field_name, *_nested(spec)):
                if name is not None and not name.isidentifier():
                    raise BatchError(
                        f"the prompt template {text!r} uses {{{name}}}; a placeholder is a "
                        "plain field name such as {path}, {name} or {customer}."
                    )
        self.text = text
        self._parsed = parsed
        self.fields = tuple(dict.fromkeys(name for _, name, _, _ in parsed if name))
        """The field names the template uses, in order."""

    def render(self, fields: Mapping[str, Any]) -> str:
        """The prompt for an item with `fields`.

        Raises:
            TemplateFieldError: the item lacks a field the template uses; the message names
                the field and the fields the item has.
        """
        missing = [name for name in self.fields if name not in fields]
        if missing:
            have = ", ".join(sorted(fields)) or "none"
            raise TemplateFieldError(
                f"the prompt template uses {{{missing[0]}}} but this item has no field "
                f"{missing[0]!r} (its fields: {have}); add it to the item or change --prompt."
            )
        try:
            return _FORMATTER.vformat(self.text, (), dict(fields))
        except (ValueError, TypeError) as exc:
            raise TemplateFieldError(
                f"the prompt template could not format this item's fields: {exc}"
            ) from None


def _nested(spec: str | None) -> list[str | None]:
    """Field names used inside a format spec (``{value:{width}}``)."""
    if not spec:
        return []
    return [name for _, name, _, _ in _FORMATTER.parse(spec)]


class ItemSource:
    """Items read lazily from a glob pattern or a JSONL file, iterable more than once.

    `count` is the number of items without keeping them (a glob's matches are listed
    once and kept as paths; a JSONL file is read line by line).
    """

    def __init__(self, description: str, paths: list[str] | None, jsonl: Path | None) -> None:
        self.description = description
        self._paths = paths
        self._jsonl = jsonl

    def files(self) -> list[Path]:
        """The files the items are read from: the JSONL file, or every file the pattern
        matched (an output file must be none of them)."""
        if self._paths is not None:
            return [Path(path) for path in self._paths]
        assert self._jsonl is not None
        return [self._jsonl]

    def count(self) -> int:
        """How many items the source holds."""
        if self._paths is not None:
            return len(self._paths)
        assert self._jsonl is not None
        with self._jsonl.open("rb") as file:
            return sum(1 for line in file if line.strip())

    def __iter__(self) -> Iterator[BatchItem]:
        if self._paths is not None:
            for path in self._paths:
                yield BatchItem.of(path)
            return
        assert self._jsonl is not None
        # Binary lines split at LF only (text mode would split at a bare CR too).
        with self._jsonl.open("rb") as file:
            for number, raw in enumerate(file, start=1):
                if not raw.strip():
                    continue
                line = raw.decode("utf-8", errors="replace")
                yield _item_from_line(line, number, self._jsonl)


def _item_from_line(line: str, number: int, file: Path) -> BatchItem:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return BatchItem.invalid(
            f"line:{number}", f"{file.name} line {number} is not valid JSON ({exc.msg})"
        )
    if isinstance(value, str | dict):
        return BatchItem.of(value)
    return BatchItem.invalid(
        f"line:{number}",
        f"{file.name} line {number} holds a {type(value).__name__}; each line must be a "
        'JSON object of fields or a JSON string path, e.g. {"path": "a.pdf"} or "a.pdf"',
    )


def open_input(spec: str) -> ItemSource:
    """The items of ``--input``: an existing ``*.jsonl`` file (one item per line: an object
    of fields or a string path), else a glob pattern of files (``**`` crosses folders),
    matched in sorted order.

    Raises:
        BatchError: the JSONL file cannot be read, or the pattern matches no file.
    """
    candidate = Path(spec)
    if candidate.suffix == ".jsonl" and candidate.is_file():
        try:
            with candidate.open("rb"):
                pass
        except OSError as exc:
            raise BatchError(f"cannot read the input file {spec!r}: {exc}") from None
        return ItemSource(spec, None, candidate)
    if candidate.suffix == ".jsonl" and not glob.has_magic(spec):
        raise BatchError(f"the input file {spec!r} does not exist.")
    # glob, not Path.glob: the pattern may be absolute.
    matches = glob.iglob(spec, recursive=True)  # noqa: PTH207
    paths = sorted(p for p in matches if Path(p).is_file())
    if not paths:
        raise BatchError(
            f"the input pattern {spec!r} matches no file; quote it so the shell does not "
            "expand it, and check the folder (a pattern such as 'invoices/**/*.json')."
        )
    return ItemSource(spec, paths, None)
