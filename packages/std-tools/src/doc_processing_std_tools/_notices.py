"""The MCP logging utility: the server's own notices sent to the client as
``notifications/message``, besides the log on standard error.

What a request makes this package log (a skill left out of the listing, scripts running
without the sandbox, a script stopped at its time limit, ...) is collected while the
request is served and sent to the client just before its response, on the same stream,
as ``notifications/message`` with the logger's name. `enable_client_logging` sets it up
on a server:

- it registers ``logging/setLevel`` through the SDK's lowlevel ``add_request_handler``,
  which also makes the server declare the ``logging`` capability;
- the level a client sets holds for its connection (a stdio session, a stateful HTTP
  session); until it sets one, WARNING and above are sent. A stateless HTTP request
  is a connection of its own, so there the default applies, and clients of the
  2026-07-28 revision choose the level per request (``_meta``), which the SDK applies;
- a middleware collects the records of this package's loggers while a request runs
  (worker threads included: they run in a copy of the request's context) and sends
  those at or above the level.

A record reaches the client only when it is logged at all: the server's own log level
(``--log-level``, DPTTOOLS_LOG_LEVEL) comes first. `notice` is for what the client should
hear whatever that level is (a script run without the sandbox, a limit that stopped a
script): it goes to the client at its level and to standard error at DEBUG. Nothing is
sent outside a request.

The MCP-free modules call `notice` and log as usual; this module imports the SDK only
in `enable_client_logging`.
"""

from __future__ import annotations

import logging
import warnings
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from mcp import types
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import MCPServer

__all__ = ["DEFAULT_CLIENT_LEVEL", "enable_client_logging", "mcp_level", "notice"]

_PACKAGE: Final = __name__.rpartition(".")[0]
_LEVELS: Final[tuple[types.LoggingLevel, ...]] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
DEFAULT_CLIENT_LEVEL: Final[types.LoggingLevel] = "warning"
"""What a client that never called ``logging/setLevel`` is sent: WARNING and above."""
_STATE_KEY: Final = "doc_processing.log_level"

_SENT: Final = "doc_processing_notice"
"""Marks the DEBUG line of a `notice` (its record for the client is collected apart)."""

_collected: ContextVar[list[logging.LogRecord] | None] = ContextVar(
    "doc_processing_notices", default=None
)


def notice(logger: logging.Logger, level: int, message: str) -> None:
    """Tell the client of the request being served `message` at `level` (when its
    level admits it), whatever the server's own log level; standard error gets it at
    DEBUG. Outside a request only the DEBUG line is logged."""
    records = _collected.get()
    if records is not None:
        records.append(logger.makeRecord(logger.name, level, __file__, 0, message, (), None))
    logger.debug("%s", message, extra={_SENT: True})


def mcp_level(levelno: int) -> types.LoggingLevel:
    """The MCP (syslog) level of a Python logging level."""
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    if levelno >= logging.INFO:
        return "info"
    return "debug"


class _Collector(logging.Handler):
    """Keeps the records logged while a request is being served (none otherwise).

    Being a handler, it would stop Python from writing an unconfigured application's
    warnings to standard error (``logging.lastResort`` serves only records that find no
    handler at all); so when it is the only handler a record meets, it hands the record
    to ``lastResort`` as Python would have.
    """

    def emit(self, record: logging.LogRecord) -> None:
        records = _collected.get()
        if records is not None and not getattr(record, _SENT, False):
            records.append(record)
        last_resort = logging.lastResort
        if (
            last_resort is not None
            and record.levelno >= last_resort.level
            and not self._others_handle(record)
        ):
            last_resort.handle(record)

    def _others_handle(self, record: logging.LogRecord) -> bool:
        current: logging.Logger | None = logging.getLogger(record.name)
        while current is not None:
            if any(handler is not self for handler in current.handlers):
                return True
            current = current.parent if current.propagate else None
        return False


_COLLECTOR: Final = _Collector()


def _connection_state(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any] | None:
    # The SDK keeps per-connection scratch state on its Connection (`state`, which
    # persists across the requests of one connection); the lowlevel request context
    # reaches it only through its session.
    connection = getattr(ctx.session, "_connection", None)
    state = getattr(connection, "state", None)
    return state if isinstance(state, dict) else None


def _client_level(ctx: ServerRequestContext[Any, Any]) -> types.LoggingLevel:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return "debug"  # the request's own _meta chose the level; the SDK applies it
    state = _connection_state(ctx)
    level = state.get(_STATE_KEY) if state is not None else None
    return level if level in _LEVELS else DEFAULT_CLIENT_LEVEL


async def _set_level(
    ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
) -> types.EmptyResult:
    from mcp.types import EmptyResult

    state = _connection_state(ctx)
    if state is not None:
        state[_STATE_KEY] = params.level
    return EmptyResult()


async def _send(ctx: ServerRequestContext[Any, Any], records: list[logging.LogRecord]) -> None:
    floor = _LEVELS.index(_client_level(ctx))
    for record in records:
        level = mcp_level(record.levelno)
        if _LEVELS.index(level) < floor:
            continue
        # The SDK marks the logging utility deprecated as of 2026-07-28 (it stays part
        # of the revisions this server speaks); the warning is raised when the call is
        # made, so only the call is inside the filter.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sending = ctx.session.send_log_message(
                level, record.getMessage(), logger=record.name, related_request_id=ctx.request_id
            )
        try:
            await sending
        except Exception:  # the client went away: its notices go with it
            return


async def _forward_notices(
    ctx: ServerRequestContext[Any, Any], call_next: CallNext
) -> HandlerResult:
    if ctx.request_id is None:  # a notification has no stream to answer on
        return await call_next(ctx)
    records: list[logging.LogRecord] = []
    token = _collected.set(records)
    try:
        result = await call_next(ctx)
    except BaseException:
        _collected.reset(token)
        if records:
            await _send(ctx, records)
        raise
    _collected.reset(token)
    if records:
        await _send(ctx, records)
    return result


def enable_client_logging(server: MCPServer) -> None:
    """Declare the ``logging`` capability on `server`, answer ``logging/setLevel``, and
    send this package's log records of each request to its client (see the module
    docstring). Call it once per server, when it is built."""
    from mcp import types

    # MCPServer has no public hook for a spec method it does not wrap itself; the SDK
    # points to the lowlevel server's add_request_handler for logging/setLevel.
    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, _set_level)
    # Outermost, so that what every other middleware logs is collected too.
    server.middleware.insert(0, _forward_notices)
    package_logger = logging.getLogger(_PACKAGE)
    if _COLLECTOR not in package_logger.handlers:
        package_logger.addHandler(_COLLECTOR)
