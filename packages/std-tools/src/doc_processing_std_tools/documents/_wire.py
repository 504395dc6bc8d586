"""The requests the server sends its document workers (`worker`): JSON data, never pickle.

A request names the tool, its arguments (a JSON object) and the settings of the call,
every field of `Settings` as plain data (paths as strings, tuples as lists).
`decode_request` rebuilds exactly that and refuses anything else, so whatever reaches a
worker's request pipe is data, never code.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

from ..config import Settings

__all__ = ["TOOL_NAMES", "decode_request", "encode_request"]

#: The `api` functions a worker runs.
TOOL_NAMES = ("get_file_overview", "read_document", "extract_tables", "search_document")


def _plain(value: object) -> object:
    """A settings value as JSON data: paths as strings, tuples as lists."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


@functools.cache
def _setting_types() -> dict[str, Any]:
    return get_type_hints(Settings)


def _typed(hint: Any, value: object) -> Any:
    """JSON data back as a settings value of type `hint` (paths, tuples, optionals)."""
    if value is None:
        return None
    if hint is Path:
        if not isinstance(value, str):
            raise ValueError(f"expected a path, got {value!r}")
        return Path(value)
    origin = get_origin(hint)
    if origin is tuple:
        if not isinstance(value, list):
            raise ValueError(f"expected a list, got {value!r}")
        item = get_args(hint)[0]
        return tuple(_typed(item, element) for element in value)
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(hint) if arg is not type(None)]
        return _typed(options[0], value) if len(options) == 1 else value
    if isinstance(value, (list, dict)):
        raise ValueError(f"expected a plain value, got {value!r}")
    return value


def encode_request(name: str, arguments: dict[str, Any], settings: Settings) -> bytes:
    """One request as JSON: the tool, its arguments and the settings of the call."""
    data = {
        field.name: _plain(getattr(settings, field.name)) for field in dataclasses.fields(Settings)
    }
    return json.dumps({"tool": name, "arguments": arguments, "settings": data}).encode()


def decode_request(data: bytes) -> tuple[str, dict[str, Any], Settings]:
    """A request `encode_request` made, checked: a known tool, arguments that are a JSON
    object, and exactly the fields of `Settings`.

    Raises:
        ValueError: anything else (not JSON, another shape, an unknown field).
    """
    request = json.loads(data)
    if not isinstance(request, dict) or set(request) != {"tool", "arguments", "settings"}:
        raise ValueError("a request is an object with tool, arguments and settings")
    tool, arguments, fields = request["tool"], request["arguments"], request["settings"]
    if tool not in TOOL_NAMES or not isinstance(arguments, dict):
        raise ValueError(f"no document tool {tool!r}, or arguments that are not an object")
    types_ = _setting_types()
    if not isinstance(fields, dict) or set(fields) != set(types_):
        raise ValueError("the settings do not have the fields of Settings")
    settings = Settings(**{name: _typed(types_[name], value) for name, value in fields.items()})
    return tool, arguments, settings
