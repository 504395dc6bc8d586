"""How every std-tools server is constructed: with the package version, and without
touching the host application's logging.

The SDK's `MCPServer` calls ``logging.basicConfig`` while it is being built, which puts a
handler (a rich one, at INFO) on the root logger when the root has none. A library must
leave that to the application, so `new_server` builds the server while the root logger
holds a placeholder handler, which makes ``basicConfig`` a no-op, and removes it again.
The command-line entry points configure logging themselves (`configure_cli_logging`).

This module does not import the SDK (its classes come from the caller), so a command line
can read its arguments, and answer ``--version`` and ``--help``, without loading it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final, TypeVar

from ._version import __version__
from .errors import ConfigError

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = [
    "LOG_LEVELS",
    "configure_cli_logging",
    "log_level_option",
    "new_server",
    "serve_stdio",
]

ServerT = TypeVar("ServerT", bound="MCPServer")

LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
"""The values of ``--log-level`` and DPTTOOLS_LOG_LEVEL."""

# One INFO line per request of the stateless HTTP transport; the entry points show it at
# DEBUG only.
_NOISY: Final = (("mcp.server.streamable_http", "Terminating session: "),)

# The SDK's INFO line for each call that fails with a message meant for the client (a file
# that does not exist, an argument out of range, a skill:// URI of no skill): the model's
# to handle, not news for the host's log. The entry points show them at DEBUG, after one
# INFO line that says so.
_SDK_SERVER_LOGGER: Final = "mcp.server.mcpserver.server"
_FAILED_CALLS: Final = frozenset(
    {"Tool %r failed: %r", "Tool %r rejected arguments: %r", "Resource %r failed: %r"}
)

logger = logging.getLogger(__name__)


@contextmanager
def _root_logging_untouched() -> Iterator[None]:
    root = logging.getLogger()
    if root.handlers:
        yield
        return
    placeholder = logging.NullHandler()
    root.addHandler(placeholder)
    try:
        yield
    finally:
        root.removeHandler(placeholder)


def new_server(server_class: type[ServerT], name: str, **options: Any) -> ServerT:
    """`server_class(name, **options)` reporting this package's version as its
    ``serverInfo.version``, built without configuring the root logger."""
    with _root_logging_untouched():
        return server_class(name, version=__version__, **options)


class _Demote(logging.Filter):
    """Shows a known per-request INFO line of the SDK as DEBUG."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self._prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.INFO and record.getMessage().startswith(self._prefix):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger().isEnabledFor(logging.DEBUG)
        return True


class _FailedCalls(logging.Filter):
    """Shows the SDK's line for each failed call (`_FAILED_CALLS`) as DEBUG; the first one
    also gets an INFO line of ours saying where the others went."""

    def __init__(self) -> None:
        super().__init__()
        self._told = False

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or record.msg not in _FAILED_CALLS:
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        shown = logging.getLogger().isEnabledFor(logging.DEBUG)
        if not self._told and not shown:
            self._told = True
            logger.info(
                "%s. Calls that fail with a message for the client (a missing file, a bad "
                "argument) are the model's to handle, so later ones are logged at DEBUG "
                "only (--log-level debug or DPTTOOLS_LOG_LEVEL=DEBUG shows each)",
                record.getMessage(),
            )
        return shown


def configure_cli_logging(level: str | None) -> str:
    """What a server's command line does about logging (never the library): one handler
    on standard error at `level` (``--log-level``), else DPTTOOLS_LOG_LEVEL, else INFO.
    Returns the level used.

    Raises:
        ConfigError: DPTTOOLS_LOG_LEVEL is not a level.
    """
    if level is None:
        raw = os.environ.get("DPTTOOLS_LOG_LEVEL", "")
        level = raw.strip().upper() or "INFO"
        if level not in LOG_LEVELS:
            raise ConfigError(
                f"DPTTOOLS_LOG_LEVEL={raw!r} is not a log level; set it to one of "
                f"{', '.join(LOG_LEVELS)}, or unset it to log at INFO."
            )
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )
    for logger_name, prefix in _NOISY:
        logging.getLogger(logger_name).addFilter(_Demote(prefix))
    sdk_server = logging.getLogger(_SDK_SERVER_LOGGER)
    if not any(isinstance(known, _FailedCalls) for known in sdk_server.filters):
        sdk_server.addFilter(_FailedCalls())
    return level


def log_level_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--log-level`` to a server's command line."""
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        help="what is logged on standard error (default: DPTTOOLS_LOG_LEVEL, else INFO)",
    )


def serve_stdio(server: MCPServer) -> None:
    """Serve `server` on standard input and output, and keep whatever else the process
    writes to standard output out of the MCP stream, up to its very end.

    While it serves, the SDK points descriptor 1 at standard error and writes the stream
    through a copy of its own. When the stream ends, descriptor 1 is the client's pipe
    again, and the client reads it until the process is gone: what is written at exit
    would land in the stream. An OpenTelemetry console exporter (``OTEL_TRACES_EXPORTER=
    console`` under ``opentelemetry-instrument``) writes its last spans exactly then. So
    descriptor 1 is pointed at standard error once more before this returns, and those
    spans reach the server's log with the others.
    """
    try:
        server.run()
    finally:
        _stdout_to_stderr()


def _stdout_to_stderr() -> None:
    """Point descriptor 1 at standard error (no-op where either one is closed)."""
    with suppress(OSError):
        os.dup2(2, 1)
