"""The local engine: N concurrent runs on one `Agent`, in this process.

The runs share the agent's server sessions (each server is connected once for the whole
batch, not per item). `concurrency` workers each take the next job, run it (see
`run_job`) and hand the result over; the jobs iterator is only read as fast as workers
free up, so a batch of a million items never holds more than `concurrency` of them.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ..errors import ConfigError
from .control import BatchControl, interrupted
from .items import Job
from .results import ItemResult
from .worker import PauseGate, RetryPolicy, run_job

if TYPE_CHECKING:
    from .protocol import BatchAgent

__all__ = ["LocalEngine"]


@dataclass(frozen=True, slots=True)
class LocalEngine:
    """Run a batch in this process.

    Attributes:
        concurrency: how many items run at once (on the one agent).
        retry: how rate-limited and overloaded runs are retried.
    """

    concurrency: int = 4
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {self.concurrency}.")

    async def results(
        self, agent: BatchAgent, jobs: Iterator[Job | ItemResult], control: BatchControl
    ) -> AsyncGenerator[ItemResult, None]:
        """Run `jobs` on `agent`, `concurrency` at a time; yield each result as it ends.

        Raises:
            ToolServerError: a required server cannot be reached (before any item runs).
        """
        await agent.connect()
        gate = PauseGate()
        send, receive = anyio.create_memory_object_stream[ItemResult](self.concurrency)

        async def work(out: MemoryObjectSendStream[ItemResult]) -> None:
            async with out:
                while not control.stopping:
                    job = next(jobs, None)
                    if job is None:
                        return
                    if isinstance(job, ItemResult):
                        await out.send(job)
                        continue
                    result: ItemResult | None = None
                    with control.running():
                        result = await run_job(agent, job, self.retry, gate)
                    await out.send(result if result is not None else interrupted(job))

        async with anyio.create_task_group() as task_group:
            try:
                async with send:
                    for _ in range(self.concurrency):
                        task_group.start_soon(work, send.clone())
                async with receive:
                    async for result in receive:
                        try:
                            yield result
                        except GeneratorExit:
                            # The consumer closed this generator early: end it here, so
                            # the task group ends by cancellation, not by a GeneratorExit
                            # it would wrap in an exception group.
                            break
            finally:
                # The consumer stopped early (or failed): the workers have nobody to
                # report to any more.
                task_group.cancel_scope.cancel()
