"""What every engine implements (`Engine`) and how a running batch is told to stop
(`BatchControl`: Ctrl-C, a deadline, a caller)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

import anyio

from .items import Job
from .results import ItemResult

if TYPE_CHECKING:
    from .protocol import BatchAgent

__all__ = ["BatchControl", "Engine", "interrupted"]


class BatchControl:
    """Stops a batch from outside, in two steps.

    `stop` ends the intake: no new item starts, the running ones finish and are written.
    `cancel` also cancels the running ones; each is then reported as ``skipped`` (cause
    ``interrupted``) and runs again on ``--resume``. Both are safe to call from the event
    loop the batch runs in (a signal handler task, a timer), any number of times.
    """

    def __init__(self) -> None:
        self._stopping = False
        self._cancelled = False
        self._scopes: set[anyio.CancelScope] = set()

    @property
    def stopping(self) -> bool:
        """Whether the batch takes no new items."""
        return self._stopping

    @property
    def cancelled(self) -> bool:
        """Whether the running items were cancelled."""
        return self._cancelled

    def stop(self) -> None:
        """Take no new items; let the running ones finish."""
        self._stopping = True

    def cancel(self) -> None:
        """Take no new items and cancel the running ones."""
        self._stopping = self._cancelled = True
        for scope in list(self._scopes):
            scope.cancel()

    @contextmanager
    def running(self) -> Iterator[anyio.CancelScope]:
        """A cancel scope around one item's work, cancelled by `cancel` (at once when the
        batch was already cancelled)."""
        scope = anyio.CancelScope()
        if self._cancelled:
            scope.cancel()
        self._scopes.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._scopes.discard(scope)


def interrupted(job: Job) -> ItemResult:
    """The result of an item whose run was cancelled by `BatchControl.cancel`."""
    return ItemResult.failed(
        job.item,
        "cancelled by an interrupt before it finished; run the batch again with --resume",
        cause="interrupted",
        status="skipped",
    )


class Engine(Protocol):
    """Runs a batch's jobs and yields one result per job as each finishes.

    `jobs` is pulled lazily, only as fast as the engine has room for work; a pre-made
    `ItemResult` in it (an item that needs no run) is yielded as is. The engine stops
    pulling once `control.stopping`, and cancels running items on `control.cancel`.
    """

    def results(
        self, agent: BatchAgent, jobs: Iterator[Job | ItemResult], control: BatchControl
    ) -> AsyncGenerator[ItemResult, None]:
        """The results, in the order they finish."""
        ...
