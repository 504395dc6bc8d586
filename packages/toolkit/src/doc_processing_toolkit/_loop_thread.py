"""The sync bridge: an event loop in a daemon thread, for `Agent.run_sync`.

Sessions must outlive each `run_sync` call, so they cannot live in a loop that ends with
the call. They live in this thread's loop instead, until `LoopThread.stop`. Objects whose
loop thread should be closed at interpreter exit are given to `close_at_exit` (the exit
hook is registered on first use, not at import).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Protocol, TypeVar

import anyio
from anyio.from_thread import BlockingPortal

from .errors import ToolkitError

__all__ = ["LoopThread", "close_at_exit", "require_no_running_loop"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class _Closable(Protocol):
    def close(self) -> None: ...


_TO_CLOSE: weakref.WeakSet[_Closable] = weakref.WeakSet()
_hook_lock = threading.Lock()
_hook_registered = False


def _close_all() -> None:
    for owner in list(_TO_CLOSE):
        try:
            owner.close()
        except Exception:
            logger.debug("closing %r at exit failed", owner, exc_info=True)


def close_at_exit(owner: _Closable) -> None:
    """Call ``owner.close()`` at interpreter exit (unless it was collected before)."""
    global _hook_registered
    with _hook_lock:
        if not _hook_registered:
            atexit.register(_close_all)
            _hook_registered = True
        _TO_CLOSE.add(owner)


def require_no_running_loop(what: str, instead: str) -> None:
    """Raise when called from a running event loop, where a blocking call would hang it.

    Raises:
        ToolkitError: ``<what> cannot be called from a running event loop; use
            <instead>.``
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise ToolkitError(f"{what} cannot be called from a running event loop; use {instead}.")


class LoopThread:
    """Runs coroutine functions, one call at a time per caller, in a private event loop."""

    def __init__(self, name: str) -> None:
        self._ready = threading.Event()
        self._portal: BlockingPortal | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error

    def _main(self) -> None:
        async def serve() -> None:
            async with BlockingPortal() as portal:
                self._portal = portal
                self._ready.set()
                await portal.sleep_until_stopped()

        try:
            anyio.run(serve)
        except BaseException as exc:
            self._error = exc
        finally:
            self._ready.set()

    def call(self, function: Callable[[], Awaitable[T]]) -> T:
        """Run `function()` in the loop and return its result (or raise its exception).

        Raises:
            ToolkitError: the loop was stopped.
        """
        if self._portal is None:
            raise ToolkitError(
                "the agent was closed (agent.close()) while this run_sync call started; "
                "call run_sync again to reopen its sessions."
            )
        return self._portal.call(function)

    def start(self, function: Callable[[], Awaitable[T]]) -> Future[T]:
        """Start `function()` in the loop and return at once; the future holds its outcome,
        and cancelling the future cancels the call.

        Raises:
            ToolkitError: the loop was stopped.
        """
        if self._portal is None:
            raise ToolkitError(
                "the agent was closed (agent.close()); call run_batch_sync again to reopen "
                "its sessions."
            )
        return self._portal.start_task_soon(function)

    def stop(self) -> None:
        """Stop the loop and wait for the thread to end."""
        portal, self._portal = self._portal, None
        if portal is not None:
            portal.call(portal.stop)
        self._thread.join()
