"""One item's run, with the batch's retry of provider rate limits and overloads.

Two layers retry a provider that says "not now":

1. The provider SDK (anthropic, openai) retries each request itself (``max_retries``,
   2 by default; set it in ``model_options``), honouring ``Retry-After``. The run goes on
   as if nothing happened.
2. When the SDK gives up (the limit outlasted its retries), the run fails with a
   `ModelAPIError`. `run_job` then runs the item again after a wait: the ``Retry-After``
   the provider sent, else an exponential backoff, at most `RetryPolicy.max_delay`, for at
   most `RetryPolicy.max_attempts` runs. The wait pauses the whole engine (`PauseGate`):
   no worker starts a run before it ends, so a rate-limited batch does not keep knocking.

Only errors worth waiting for are retried: HTTP 408, 409, 429, 5xx and 529, and no answer
at all (connection refused, reset, timeout). A 400 or 401 fails the item at once.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from .._tracing import item_span
from ..errors import ModelAPIError
from .items import Job
from .results import ItemResult, describe_cause

if TYPE_CHECKING:
    from .protocol import BatchAgent

__all__ = ["PauseGate", "RetryPolicy", "run_job"]

logger = logging.getLogger(__name__)

_RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a batch retries an item whose run failed on a rate limit or an overload.

    Attributes:
        max_attempts: the most runs of one item, the first included (1: never retry).
        base_delay: the first backoff wait in seconds when the provider gave no
            ``Retry-After``; it doubles with each attempt (with up to 25% jitter).
        max_delay: the longest wait in seconds. A provider asking for more (a quota that
            resets in an hour) fails the item at once: resume the batch later.
    """

    max_attempts: int = 4
    base_delay: float = 2.0
    max_delay: float = 120.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("base_delay and max_delay must not be negative")

    def delay(self, error: BaseException, attempt: int) -> float | None:
        """The seconds to wait before running the item again after `error` ended attempt
        number `attempt`, or None when it must not be retried."""
        if not isinstance(error, ModelAPIError) or attempt >= self.max_attempts:
            return None
        if error.status_code is not None and error.status_code not in _RETRYABLE_STATUS:
            return None
        if error.retry_after is not None:
            return error.retry_after if error.retry_after <= self.max_delay else None
        backoff = self.base_delay * 2.0 ** (attempt - 1) * (1 - 0.25 * random.random())
        return min(backoff, self.max_delay)


class PauseGate:
    """A pause shared by the workers of one engine: after `pause`, `wait` returns only
    once the latest requested pause is over."""

    def __init__(self) -> None:
        self._until = 0.0

    def pause(self, seconds: float) -> None:
        """Hold every worker for at least `seconds` from now."""
        self._until = max(self._until, time.monotonic() + seconds)

    async def wait(self) -> None:
        """Return when no pause is in force (at once, usually)."""
        # A loop, not an event: a pause may be extended while a worker sleeps.
        while (remaining := self._until - time.monotonic()) > 0:  # noqa: ASYNC110
            await anyio.sleep(remaining)


async def run_job(agent: BatchAgent, job: Job, policy: RetryPolicy, gate: PauseGate) -> ItemResult:
    """Run one item on `agent`, retrying as `policy` says; never raises for the item's
    own failure (cancellation still propagates). The item's span (a child of the batch's,
    see `Job.trace`) holds each attempt's run."""
    with item_span(job.item.id, job.trace) as span:
        result = await _run_attempts(agent, job, policy, gate)
        span.done(result.status, result.attempts, result.cause)
        return result


async def _run_attempts(
    agent: BatchAgent, job: Job, policy: RetryPolicy, gate: PauseGate
) -> ItemResult:
    item = job.item
    started = time.perf_counter()
    warnings: list[str] = []
    attempt = 0
    while True:
        attempt += 1
        await gate.wait()
        try:
            run = await agent.run(job.prompt)
        except Exception as exc:
            wait = policy.delay(exc, attempt)
            if wait is None:
                if isinstance(exc, ModelAPIError) and (exc.retry_after or 0) > policy.max_delay:
                    warnings.append(
                        f"the provider asked to wait {exc.retry_after:.0f} s, more than "
                        f"max_delay={policy.max_delay:g} s; resume the batch later"
                    )
                return ItemResult.failed(
                    item,
                    exc,
                    duration=time.perf_counter() - started,
                    warnings=warnings,
                    attempts=attempt,
                )
            message = (
                f"attempt {attempt} failed ({describe_cause(exc)}); ran again after {wait:.1f} s"
            )
            logger.info("item %s: %s", item.id, message)
            warnings.append(message)
            gate.pause(wait)
            continue
        return ItemResult.succeeded(
            item,
            run,
            usage=run.usage,
            duration=time.perf_counter() - started,
            warnings=warnings,
            attempts=attempt,
        )
