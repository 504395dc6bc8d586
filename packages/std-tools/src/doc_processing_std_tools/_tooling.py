"""Glue shared by the MCP layers: turn our errors into messages the client can read."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager

from mcp.server.mcpserver.exceptions import ToolError

from ._text import wire_safe
from .errors import StdToolsError

__all__ = ["describe_os_error", "tool_errors"]


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
    """Re-raise our own errors and OS errors as `ToolError`, so the client sees the message.

    The SDK hides the message of any other exception from the client; the errors raised
    here are anticipated ones whose text tells the caller what to do.
    """
    try:
        yield
    except StdToolsError as exc:
        raise ToolError(wire_safe(str(exc))) from exc
    except OSError as exc:
        raise ToolError(wire_safe(describe_os_error(exc))) from exc
