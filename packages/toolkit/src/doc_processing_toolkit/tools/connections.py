"""Opening, keeping and reopening the sessions to tool servers.

Each connected server has one owner task. The owner opens the server's transport
(`tools.transports`) and its session (their cancel scopes and task groups must be entered
and left by one task), hands the session over, and waits until it is told to close. Runs
borrow the session; they never open or close it. A session found dead is reopened by a new
owner.

Inside ``async with agent:`` owner tasks live in the agent's task group; otherwise (a
lazy connect at the first run) they are plain asyncio tasks that live until
`ConnectionPool.aclose`.

Each run the pool offers what it reached (`ConnectionPool.run_tools`): every reachable
server's tools under their own names, a warning per optional server that could not be
reached and, unless turned off, one notice line for the model naming what is missing. A
server is tried at most once per run: an optional server that failed while
``async with agent:`` opened the sessions is not tried again by the run that follows.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, TextIO

import anyio
import anyio.abc
import anyio.to_thread
from mcp import MCPError
from mcp.types import CONNECTION_CLOSED, Tool

from ..errors import ToolServerError
from .base import RunTools, ServerTools, ToolServer, ToolSession, list_all_tools
from .routing import describe_error, root_cause, visible_name

__all__ = ["Connection", "ConnectionPool", "Listing"]

logger = logging.getLogger(__name__)

_STDERR_TAIL_LINES = 20
_STDERR_DRAIN_WAIT = 1.0

Spawner = Callable[[Callable[[], Coroutine[Any, Any, None]]], None]


@dataclass(frozen=True, eq=False)
class Listing:
    """The outcome of listing every server for one run.

    Attributes:
        listed: the reachable servers with their tools, in loaded order.
        failed: each unreachable server with a message naming it and the cause.
        reconnected: servers whose dead session was reopened.
    """

    listed: list[ServerTools]
    failed: list[tuple[ToolServer, str]]
    reconnected: list[ToolServer]


class _StderrPipe:
    """A stdio child's stderr, read through a pipe by a daemon thread.

    The last lines are kept for error messages (memory stays bounded however long the
    child runs) and every line is logged at DEBUG level under the server's name.
    """

    def __init__(self, server: ToolServer) -> None:
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8")
        self._reader: TextIO = os.fdopen(read_fd, encoding="utf-8", errors="replace")
        self._lines: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        self._name = server.name
        self._thread = threading.Thread(
            target=self._drain, name=f"stderr-{server.name}", daemon=True
        )
        self._thread.start()

    def _drain(self) -> None:
        with self._reader:
            for raw in self._reader:
                line = raw.rstrip()
                if line:
                    self._lines.append(line)
                    logger.debug("server %r stderr: %s", self._name, line)

    def release_writer(self) -> None:
        """Close this process's copy of the write end (the child keeps its own)."""
        if not self.writer.closed:
            self.writer.close()

    async def tail(self) -> list[str]:
        """The last lines, once the child's end is closed (or after a short wait)."""
        self.release_writer()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._thread.join, _STDERR_DRAIN_WAIT)
        return list(self._lines)


@dataclass(eq=False)
class _Owner:
    """State shared between one owner task and the connection that spawned it."""

    ready: anyio.Event = field(default_factory=anyio.Event)
    closing: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope | None = None
    session: ToolSession | None = None
    error: BaseException | None = None
    stderr: list[str] = field(default_factory=list)


class Connection:
    """The session to one server: opened on demand, reused, reopened when it died.

    Local functions and pre-built sessions need no owner: their session is fixed.
    """

    def __init__(self, server: ToolServer, *, connect_timeout: float) -> None:
        self.server = server
        self._timeout = connect_timeout
        self._fixed = server.transport.fixed_session()
        self._owner: _Owner | None = None
        self._starting: _Owner | None = None
        self._session: ToolSession | None = None
        self._lock: anyio.Lock | None = None
        self.generation = 0
        self.last_tools: tuple[str, ...] | None = None
        """The tool names the server listed last (None: it never listed)."""

    @property
    def owned(self) -> bool:
        """Whether the agent opened this session (and so can reopen it)."""
        return self._fixed is None

    def live_session(self) -> ToolSession | None:
        """The open session, or None when it is not open (or has died)."""
        if self._fixed is not None:
            return self._fixed
        owner = self._owner
        if owner is None or owner.done.is_set():
            return None
        return self._session

    async def session(self, spawn: Spawner) -> ToolSession:
        """The live session, opening it first if needed.

        Raises:
            ToolServerError: the server could not be started or connected.
        """
        live = self.live_session()
        if live is not None:
            return live
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            live = self.live_session()
            if live is not None:
                return live
            if self._owner is not None:
                await self._stop(self._owner)
            owner = await self._open(spawn)
            assert owner.session is not None
            self._owner, self._session = owner, owner.session
            self.generation += 1
            return self._session

    async def reconnect(self, spawn: Spawner, seen_generation: int) -> ToolSession:
        """Drop the session of `seen_generation` (found dead) and open a new one.

        Concurrent callers that saw the same dead session reconnect once.

        Raises:
            ToolServerError: the server cannot be reconnected.
        """
        if self._fixed is not None:
            raise ToolServerError(
                f"the session of server {self.server.describe()} is closed and was not opened "
                "by the agent, so it cannot be reopened; open a new session."
            )
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self.generation == seen_generation and self._owner is not None:
                owner, self._owner, self._session = self._owner, None, None
                await self._stop(owner)
                if owner.stderr:
                    logger.warning(
                        "server %s lost its connection; its last stderr lines:\n%s",
                        self.server.describe(),
                        "\n".join(owner.stderr),
                    )
        return await self.session(spawn)

    async def _open(self, spawn: Spawner) -> _Owner:
        owner = _Owner()
        spawn(lambda: self._own(owner))
        self._starting = owner
        try:
            with anyio.move_on_after(self._timeout) as timer:
                await owner.ready.wait()
        except BaseException:
            # The run was cancelled while the server started: stop it rather than leave
            # an owner nobody will ever close.
            await self._stop(owner)
            raise
        finally:
            if self._starting is owner:
                self._starting = None
        if owner.closing.is_set():
            # `aclose` stopped the server while it started.
            await self._stop(owner)
            raise ToolServerError(
                f"server {self.server.describe()} was closed while it was starting "
                "(the agent was closed during the run)."
            )
        if timer.cancelled_caught:
            await self._stop(owner)
            raise ToolServerError(
                f"server {self.server.describe()} did not connect within {self._timeout:g} s"
                f"{_format_tail(owner.stderr)}"
            )
        if owner.error is not None or owner.session is None:
            await owner.done.wait()
            if isinstance(owner.error, ToolServerError):
                # Already worded for this server (a refused token, a missing variable).
                raise owner.error
            raise ToolServerError(_connect_failure(self.server, owner.error, owner.stderr)) from (
                root_cause(owner.error) if owner.error else None
            )
        logger.debug("connected to server %s", self.server.describe())
        return owner

    async def _own(self, owner: _Owner) -> None:
        stderr = _StderrPipe(self.server) if self.server.transport.captures_stderr else None
        try:
            with anyio.CancelScope() as owner.scope:
                if owner.closing.is_set():
                    return
                try:
                    async with AsyncExitStack() as stack:
                        errlog = stderr.writer if stderr is not None else None
                        owner.session = await self.server.transport.open(
                            stack, errlog, self.server.describe()
                        )
                        if stderr is not None:
                            stderr.release_writer()
                        owner.ready.set()
                        await owner.closing.wait()
                except Exception as exc:
                    owner.error = exc
                    owner.session = None
                finally:
                    if stderr is not None:
                        owner.stderr = await stderr.tail()
        finally:
            if stderr is not None:
                stderr.release_writer()
            owner.ready.set()
            owner.done.set()

    async def _stop(self, owner: _Owner) -> None:
        owner.closing.set()
        if not owner.ready.is_set() and owner.scope is not None:
            owner.scope.cancel()
        with anyio.CancelScope(shield=True):
            await owner.done.wait()

    def forget(self) -> None:
        """Drop the session without closing it (its event loop is gone)."""
        self._owner, self._starting, self._session, self._lock = None, None, None, None

    async def aclose(self) -> None:
        """Close the session if the agent opened it (fixed sessions are left alone), and
        stop a server that a run is starting right now.
        """
        owner, self._owner, self._session = self._owner, None, None
        starting, self._starting = self._starting, None
        for stopping in (starting, owner):
            if stopping is not None:
                await self._stop(stopping)
        self._lock = None


def _connect_failure(server: ToolServer, error: BaseException | None, stderr: list[str]) -> str:
    """Why `server` did not connect. A stdio server whose connection closed before the
    handshake ended has exited (or shut its standard output): that is said in words,
    with the end of its stderr, or the fact that it wrote none."""
    cause = root_cause(error) if error is not None else None
    closed = cause is None or (
        isinstance(cause, MCPError) and cause.error.code == CONNECTION_CLOSED
    )
    if server.transport.captures_stderr and closed:
        tail = _format_tail(stderr) or "; it wrote nothing to stderr"
        return (
            f"server {server.describe()} exited before it answered (its process ended or "
            f"closed its standard output during the MCP handshake){tail}"
        )
    reason = describe_error(error) if error is not None else "the connection closed"
    return f"server {server.describe()} failed to connect: {reason}{_format_tail(stderr)}"


def _format_tail(lines: Sequence[str]) -> str:
    if not lines:
        return ""
    return "; last lines of its stderr:\n" + "\n".join(f"    {line}" for line in lines)


class ConnectionPool:
    """The connections of one agent, in loaded order.

    Args:
        servers: the agent's servers in loaded order.
        connect_timeout: seconds to wait for a server to start and answer.
    """

    def __init__(self, servers: Sequence[ToolServer], *, connect_timeout: float) -> None:
        self.connections = tuple(Connection(s, connect_timeout=connect_timeout) for s in servers)
        self._timeout = connect_timeout
        self._task_group: anyio.abc.TaskGroup | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._failed_before_run: dict[ToolServer, str] = {}

    def _spawn(self, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        if self._task_group is not None:
            self._task_group.start_soon(run)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise ToolServerError(
                "outside asyncio, open the agent's sessions with `async with agent:` first."
            ) from None

        task = loop.create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def is_live(self, session: ToolSession) -> bool:
        """Whether `session` is the open session of one of the connections."""
        return any(c.live_session() is session for c in self.connections)

    def attach(self, task_group: anyio.abc.TaskGroup | None) -> None:
        """Start future owner tasks in `task_group` (None: as background asyncio tasks)."""
        self._task_group = task_group

    async def run_tools(self, *, notify_unavailable: bool, before_run: bool = False) -> RunTools:
        """Connect, list every server and offer what was reached for one run.

        Args:
            notify_unavailable: add one notice line for the model naming the optional
                servers that could not be reached (and their tools, when known).
            before_run: this is ``async with agent:`` opening the sessions, not a run: the
                optional servers that fail now are not tried again by the next run.

        Raises:
            ToolServerError: a required server could not be reached.
        """
        known, self._failed_before_run = self._failed_before_run, {}
        listing = await self.list_servers(known)
        warnings: list[str] = []
        missing: list[str] = []
        unavailable: list[tuple[ToolServer, tuple[str, ...] | None]] = []
        for server, message in listing.failed:
            if server.required:
                raise ToolServerError(message)
            warnings.append(f"{message} (required: false, so the run goes on without it)")
            connection = next(c for c in self.connections if c.server is server)
            unavailable.append((server, connection.last_tools))
            if server not in known:
                logger.warning("%s; continuing without it", message)
            missing.append(self._describe_missing(server))
        if before_run:
            self._failed_before_run = {s: m for s, m in listing.failed}
        warnings.extend(
            f"server {s.describe()} had lost its connection and was reconnected"
            for s in listing.reconnected
        )
        notices: tuple[str, ...] = ()
        if missing and notify_unavailable:
            notices = (
                "Unavailable in this run (the server could not be reached, so its tools are "
                f"missing): {'; '.join(missing)}.",
            )
        return RunTools(
            servers=tuple(listing.listed),
            warnings=tuple(warnings),
            notices=notices,
            unavailable=tuple(unavailable),
        )

    def _describe_missing(self, server: ToolServer) -> str:
        connection = next(c for c in self.connections if c.server is server)
        names = connection.last_tools
        if names is None:
            return f"server {server.name!r} (its tools are not known yet)"
        visible = ", ".join(visible_name(server, name) for name in names) or "no tools"
        return f"server {server.name!r} ({visible})"

    async def list_servers(self, known_failures: dict[ToolServer, str] | None = None) -> Listing:
        """Connect what is not connected, then list every server's tools concurrently.

        A dead session is reopened once. A server in `known_failures` is not tried: it
        is reported failed with that message.
        """
        results: list[ServerTools | BaseException | str | None] = [None] * len(self.connections)
        reconnected: list[ToolServer] = []
        known = known_failures or {}

        async def list_one(index: int, connection: Connection) -> None:
            if connection.server in known:
                results[index] = known[connection.server]
                return
            try:
                results[index] = await self._list(connection, reconnected)
            except Exception as exc:
                results[index] = exc

        if len(self.connections) == 1:
            await list_one(0, self.connections[0])
        else:
            async with anyio.create_task_group() as tg:
                for index, connection in enumerate(self.connections):
                    tg.start_soon(list_one, index, connection)
        listed: list[ServerTools] = []
        failed: list[tuple[ToolServer, str]] = []
        for connection, result in zip(self.connections, results, strict=True):
            if isinstance(result, ServerTools):
                listed.append(result)
            elif isinstance(result, str):
                failed.append((connection.server, result))
            else:
                assert result is not None
                message = (
                    str(result)
                    if isinstance(result, ToolServerError)
                    else (
                        f"server {connection.server.describe()} could not list its tools: "
                        f"{describe_error(result)}"
                    )
                )
                failed.append((connection.server, message))
        return Listing(listed=listed, failed=failed, reconnected=reconnected)

    async def _list(self, connection: Connection, reconnected: list[ToolServer]) -> ServerTools:
        session = await connection.session(self._spawn)
        generation = connection.generation
        try:
            tools = await self._list_tools(session)
        except Exception as exc:
            if not connection.owned:
                raise
            logger.info(
                "server %s: listing its tools failed (%s); reconnecting",
                connection.server.describe(),
                describe_error(exc),
            )
            session = await connection.reconnect(self._spawn, generation)
            reconnected.append(connection.server)
            tools = await self._list_tools(session)
        connection.last_tools = tuple(t.name for t in tools)
        return ServerTools(server=connection.server, session=session, tools=tuple(tools))

    async def _list_tools(self, session: ToolSession) -> list[Tool]:
        try:
            with anyio.fail_after(self._timeout):
                return await list_all_tools(session)
        except TimeoutError:
            raise TimeoutError(f"no tool list within {self._timeout:g} s") from None

    def forget(self) -> None:
        """Drop every session without closing it (its event loop is gone)."""
        for connection in self.connections:
            connection.forget()
        self._tasks.clear()
        self._task_group = None

    async def aclose(self) -> None:
        """Close every session the agent opened, in reverse loaded order."""
        with anyio.CancelScope(shield=True):
            for connection in reversed(self.connections):
                await connection.aclose()
            pending = [task for task in self._tasks if not task.done()]
            if pending:
                await asyncio.wait(pending)
