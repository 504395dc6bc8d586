"""Glue shared by the MCP layers: turn our errors into messages the client can read, hold
every answer (and every error message) to the output limit, and hand a JSON answer to the
client twice: as the text block and as structured content described by an output schema."""

from __future__ import annotations

import contextlib
import errno
import functools
import inspect
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import ConfigDict
from pydantic.config import JsonDict

from ._text import TRUNCATED_KEY, limit_output, truncate, wire_safe
from ._tracing import note_limit
from .config import SettingsSource
from .errors import StdToolsError

__all__ = [
    "answer_config",
    "describe_os_error",
    "json_answer",
    "limited",
    "mcp_tool",
    "tool_errors",
]

ToolFunction = TypeVar("ToolFunction", bound=Callable[..., Any])

# A JSON escape of a UTF-16 surrogate: only a text holding one can parse to a string that
# cannot be sent as UTF-8 (a lone surrogate); any other text is sendable as it is.
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")
# The SDK puts "Error executing tool <name>: " before an error message; this much of the
# limit is left for it (the longest tool name is well under 40 characters).
_SDK_ERROR_PREFIX: Final = 64


def mcp_tool(
    server: MCPServer, *, structured_output: bool | None = None
) -> Callable[[ToolFunction], ToolFunction]:
    """Register the decorated function on `server` as a tool (``server.tool()``), described
    by its docstring without the source's indentation (`inspect.cleandoc`).

    The SDK sends ``__doc__`` as it is, so every line after the first would reach the
    model with the eight spaces of a nested function's body in front of it. Every
    std-tools tool is registered through here.
    """

    def register(function: ToolFunction) -> ToolFunction:
        description = inspect.cleandoc(function.__doc__ or "")
        decorate = server.tool(description=description, structured_output=structured_output)
        return decorate(function)

    return register


def limited(text: str, limit: int, *, hint: str = "") -> str:
    """`text` held to `limit` characters (DPTTOOLS_OUTPUT_TRUNCATION_LIMIT; JSON stays
    valid JSON, other text ends with a marker; see `limit_output`), and made safe to send
    as UTF-8.

    Every tool passes its answer through here, so no answer is ever longer than the limit,
    whatever the logic below it produced.
    """
    if len(text) > limit:
        note_limit("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT")
    return wire_safe(limit_output(text, limit, hint=hint))


class ToolCalls:
    """What the tools of one server share: the source of their settings, read once per
    call, and through it their errors and output limit."""

    __slots__ = ("settings",)

    def __init__(self, settings: SettingsSource) -> None:
        self.settings = settings

    def errors(self) -> contextlib.AbstractContextManager[None]:
        """`tool_errors` under these settings."""
        return tool_errors(self.settings)

    def limited(self, text: str, *, hint: str = "") -> str:
        """`limited` to these settings' output limit."""
        return limited(text, self.settings().output_truncation_limit, hint=hint)


def answer_config(*complete: str) -> ConfigDict:
    """The pydantic settings of a JSON tool's answer type (a ``TypedDict``), from which
    the SDK derives the tool's output schema; field docstrings become its descriptions.

    Any top-level field may be missing from an answer cut to the output limit: when not
    even the emptied fields fit, only ``truncated`` is left. So the answer type itself
    requires nothing (``total=False``), and the schema states the rule a client can rely
    on: an answer without ``truncated`` has every field named in `complete`. Without
    `complete` (for the records inside an answer, which keep their fields when cut), no
    rule is added.
    """
    if not complete:
        return ConfigDict(use_attribute_docstrings=True)
    required = list(complete)

    def add_rule(schema: JsonDict) -> None:
        schema["if"] = {"not": {"required": [TRUNCATED_KEY]}}
        schema["then"] = {"required": list(required)}

    return ConfigDict(use_attribute_docstrings=True, json_schema_extra=add_rule)


def _wire_safe_tree(value: Any) -> Any:
    """`value` (parsed JSON) with every string, keys included, made safe to send."""
    if isinstance(value, str):
        return wire_safe(value)
    if isinstance(value, list):
        return [_wire_safe_tree(item) for item in value]
    if isinstance(value, dict):
        return {wire_safe(key): _wire_safe_tree(item) for key, item in value.items()}
    return value


@functools.lru_cache(maxsize=16)
def _parsed(text: str) -> object:
    """`text` parsed as JSON (None when it is not JSON). An unchanged catalog answers with
    the same text every time, so the warm list_skills parses it once; nothing changes the
    object afterwards (the SDK validates and serialises copies)."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def json_answer(text: str) -> CallToolResult:
    """A JSON tool's answer: `text` (already held to the output limit by `limited` or the
    tool's own fitting) as the one text block, and the object it spells as structured
    content, so both always say the same.

    Below about 30 characters of limit not even a JSON object with a note fits and the text
    is cut like plain text; the structured content is then ``{"truncated": text}``. A lone
    surrogate that the text carries as a ``\\udcxx`` escape (a file name that is not
    UTF-8) becomes U+FFFD in the structured content, which must be sendable as UTF-8.
    """
    payload = _parsed(text)
    if not isinstance(payload, dict):
        payload = {TRUNCATED_KEY: text}
    elif _SURROGATE_ESCAPE.search(text):
        payload = _wire_safe_tree(payload)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=payload)


def _error_text(message: str, settings: SettingsSource) -> str:
    try:
        limit = settings().output_truncation_limit
    except StdToolsError:
        # The settings themselves are invalid, and the message says so: keep it whole.
        return wire_safe(message)
    return wire_safe(truncate(message, max(limit - _SDK_ERROR_PREFIX, 0)))


def describe_os_error(exc: OSError) -> str:
    """A one-line, user-facing description of an operating-system error."""
    where = f" ({exc.filename})" if exc.filename else ""
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"Permission denied{where}; the server's user may not access it."
    if exc.errno == errno.ENOSPC:
        return f"No space left on the device{where}; nothing was written."
    reason = exc.strerror or type(exc).__name__
    return f"{reason}{where}."


@contextmanager
def tool_errors(settings: SettingsSource) -> Iterator[None]:
    """Re-raise our own errors and OS errors as `ToolError`, so the client sees the message
    (cut at the output limit of the tool's `settings`, like any answer).

    The SDK hides the message of any other exception from the client; the errors raised
    here are anticipated ones whose text tells the caller what to do.
    """
    try:
        yield
    except StdToolsError as exc:
        raise ToolError(_error_text(str(exc), settings)) from exc
    except OSError as exc:
        raise ToolError(_error_text(describe_os_error(exc), settings)) from exc
