"""Glue shared by the MCP layers: turn our errors into messages the client can read, and
hold every answer (and every error message) to the output limit."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from mcp.server.mcpserver.exceptions import ToolError

from ._text import limit_output, truncate, wire_safe
from .config import get_settings
from .errors import StdToolsError

__all__ = ["describe_os_error", "limited", "tool_errors"]

# The SDK puts "Error executing tool <name>: " before an error message; this much of the
# limit is left for it (the longest tool name is well under 40 characters).
_SDK_ERROR_PREFIX: Final = 64


def limited(text: str, *, hint: str = "") -> str:
    """`text` held to DPTTOOLS_OUTPUT_TRUNCATION_LIMIT (JSON stays valid JSON, other text
    ends with a marker; see `limit_output`), and made safe to send as UTF-8.

    Every tool passes its answer through here, so no answer is ever longer than the limit,
    whatever the logic below it produced.
    """
    return wire_safe(limit_output(text, get_settings().output_truncation_limit, hint=hint))


def _error_text(message: str) -> str:
    try:
        limit = get_settings().output_truncation_limit
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
def tool_errors() -> Iterator[None]:
    """Re-raise our own errors and OS errors as `ToolError`, so the client sees the message
    (cut at the output limit like any answer).

    The SDK hides the message of any other exception from the client; the errors raised
    here are anticipated ones whose text tells the caller what to do.
    """
    try:
        yield
    except StdToolsError as exc:
        raise ToolError(_error_text(str(exc))) from exc
    except OSError as exc:
        raise ToolError(_error_text(describe_os_error(exc))) from exc
