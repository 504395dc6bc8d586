"""From the servers' offers to the names the model calls, and from a call's result to text.

`build_routes` maps every model-visible name (the server's ``tool_prefix`` added, then
made acceptable to every provider) to its server, session and tool; a call goes to the
session under the tool's own name. `result_text` is the one conversion of an MCP tool
result to text: the run loop and the skills wrappers both use it. `call_route` makes one
call within a time limit and never raises for the tool's sake.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.types import CallToolResult, Tool

from ..errors import ToolNameConflictError
from ..messages import ToolSpec
from .base import TOOL_NAME_PATTERN, ServerTools, ToolServer, ToolSession

__all__ = [
    "CallOutcome",
    "ToolRoute",
    "build_routes",
    "call_route",
    "describe_error",
    "result_text",
    "root_cause",
    "visible_name",
]

logger = logging.getLogger(__name__)

_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def root_cause(exc: BaseException) -> BaseException:
    """The first leaf exception of nested exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe_error(exc: BaseException) -> str:
    """``Type: message`` of the root cause."""
    cause = root_cause(exc)
    text = str(cause)
    return f"{type(cause).__name__}: {text}" if text else type(cause).__name__


def _provider_safe(name: str) -> str:
    if TOOL_NAME_PATTERN.fullmatch(name):
        return name
    return (_INVALID_NAME_CHARS.sub("_", name) or "tool")[:64]


def _prefixed(server: ToolServer, name: str) -> str:
    return f"{server.tool_prefix}_{name}" if server.tool_prefix else name


def visible_name(server: ToolServer, name: str) -> str:
    """The name the model sees for tool `name` of `server`: ``<prefix>_<name>`` when the
    server has a tool_prefix, then rewritten to fit every provider (characters outside
    ``[a-zA-Z0-9_-]`` become ``_``, at most 64 characters)."""
    return _provider_safe(_prefixed(server, name))


@dataclass(frozen=True, slots=True)
class ToolRoute:
    """Where a tool name the model may use goes.

    Attributes:
        name: the name the model sees and calls.
        server: the server the tool belongs to.
        session: the session the call goes through.
        tool: the tool as its server lists it; the call uses `tool.name`.
    """

    name: str
    server: ToolServer
    session: ToolSession
    tool: Tool

    @property
    def server_tool(self) -> str:
        """The tool's own name on its server (without the prefix)."""
        return self.tool.name

    def spec(self) -> ToolSpec:
        """The tool as the model sees it."""
        return ToolSpec(
            name=self.name,
            description=self.tool.description or "",
            input_schema=dict(self.tool.input_schema),
        )


def build_routes(servers: Sequence[ServerTools]) -> dict[str, ToolRoute]:
    """Map every tool name the model may call to its server, in loaded order.

    Raises:
        ToolNameConflictError: two tools end up with the same visible name; the message
            names the servers and the tool.
    """
    routes: dict[str, ToolRoute] = {}
    for offer in servers:
        for tool in offer.tools:
            name = visible_name(offer.server, tool.name)
            previous = routes.get(name)
            if previous is not None:
                if previous.server is offer.server:
                    raise ToolNameConflictError(
                        f"server {offer.server.describe()} lists two tools named {name!r}."
                    )
                raise ToolNameConflictError(
                    f"servers {previous.server.describe()} and {offer.server.describe()} "
                    f"both expose a tool named {name!r}; give one of them a tool_prefix."
                )
            if name != _prefixed(offer.server, tool.name):
                logger.info(
                    "server %s: tool %r is shown to the model as %r",
                    offer.server.describe(),
                    tool.name,
                    name,
                )
            routes[name] = ToolRoute(
                name=name, server=offer.server, session=offer.session, tool=tool
            )
    return routes


def _block_text(block: Any) -> str:
    text = getattr(block, "text", None)
    if isinstance(text, str):
        return text
    resource = getattr(block, "resource", None)
    resource_text = getattr(resource, "text", None)
    if isinstance(resource_text, str):
        return resource_text
    if resource is not None:
        return f"[binary resource {resource.uri}, {resource.mime_type or 'unknown type'}]"
    if block.type in ("image", "audio"):
        return f"[{block.type} content, {getattr(block, 'mime_type', 'unknown type')}]"
    dumped: str = block.model_dump_json(by_alias=True, exclude_none=True)
    return dumped


def result_text(result: CallToolResult) -> str:
    """The text of a tool result: its content blocks, one per line (a binary resource,
    image or audio block as a bracketed note), or its structured content as JSON when it
    has no content."""
    pieces = [_block_text(block) for block in result.content]
    if not pieces and result.structured_content is not None:
        pieces.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(pieces)


def _error_message(tool: str, text: str) -> str:
    """An error result's text without the server's own "this tool failed" lead-in, which
    the MCP SDK (``Error executing tool NAME: ...``) and fastmcp (``Error calling tool
    'NAME': ...``) put in front of the cause: the model is told once that it is an error
    (the error flag, or ``Error:`` in front where a provider has no flag)."""
    for lead in (f"Error executing tool {tool}", f"Error calling tool {tool!r}"):
        if text.startswith(lead):
            rest = text[len(lead) :]
            if not rest:
                return f"the tool {tool} failed without saying why."
            if rest.startswith(": "):
                return rest[2:]
    return text


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """The text to send back to the model for one call, and whether it is an error.

    Attributes:
        content: the text for the model.
        is_error: whether the call failed.
        error_type: how it failed, for traces (``error.type``): ``tool_error`` (the tool
            answered with an error result), ``timeout``, or the exception's class name;
            None when it succeeded.
    """

    content: str
    is_error: bool
    error_type: str | None = None


async def call_route(
    route: ToolRoute, arguments: dict[str, Any], time_limit: float | None
) -> CallOutcome:
    """Call `route`'s tool within `time_limit` seconds (None: no limit). A failure of any
    kind (an error result, an exception, a timeout) is an error outcome, never raised."""
    try:
        with anyio.fail_after(time_limit):
            result = await route.session.call_tool(route.tool.name, arguments)
    except TimeoutError:
        logger.warning("tool %r timed out after %g s", route.name, time_limit)
        text = f"Tool {route.name!r} timed out after {time_limit:g} s."
        return CallOutcome(text, True, "timeout")
    except Exception as exc:
        logger.warning("tool %r failed: %s", route.name, describe_error(exc))
        text = f"Tool {route.name!r} failed: {describe_error(exc)}"
        return CallOutcome(text, True, type(root_cause(exc)).__qualname__)
    text = result_text(result)
    if result.is_error:
        return CallOutcome(_error_message(route.tool.name, text), True, "tool_error")
    return CallOutcome(text, False)
