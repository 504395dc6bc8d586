"""An event loop in a daemon thread, for `Agent.run_sync`.

Sessions must outlive each `run_sync` call, so they cannot live in a loop that ends with
the call. They live in this thread's loop instead, until `LoopThread.stop`.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import TypeVar

import anyio
from anyio.from_thread import BlockingPortal

from .errors import ToolkitError

__all__ = ["LoopThread"]

T = TypeVar("T")


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
