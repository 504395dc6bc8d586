"""Rate limits: a provider stand-in on 127.0.0.1 answers HTTP 429 with Retry-After to the
first requests; the batch completes, and the waits it asked for are kept."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest

from doc_processing_toolkit import Agent
from doc_processing_toolkit.batch import RetryPolicy


@pytest.mark.anyio
async def test_a_limit_that_outlasts_the_sdk_retries_is_waited_out_by_the_batch(
    chat_stand_in: Any,
) -> None:
    chat_stand_in.rate_limited = 4
    chat_stand_in.retry_after = "0.5"
    # The SDK retries once by itself (after the Retry-After wait), then gives up; the
    # batch runs the item again after the wait the last 429 asked for.
    agent = Agent.from_config(chat_stand_in.config(max_retries=1))
    started = time.monotonic()
    results = [
        result
        async for result in agent.run_batch(
            ["a.txt"], "Read {path}", retry=RetryPolicy(max_attempts=3)
        )
    ]
    elapsed = time.monotonic() - started
    await agent.aclose()

    [result] = results
    assert result.status == "ok", result.error
    assert result.answer == "answer to: Read a.txt"
    assert result.attempts == 3
    assert len(result.warnings) == 2 and "ModelAPIError 429" in result.warnings[0]
    times = [seen.at for seen in chat_stand_in.seen]
    assert [seen.status for seen in chat_stand_in.seen] == [429, 429, 429, 429, 200]
    # Every wait honoured Retry-After: 0.5 s (two by the SDK, two by the batch).
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert min(gaps) >= 0.45, gaps
    assert elapsed >= 2.0


@pytest.mark.anyio
async def test_a_rate_limit_pauses_every_worker_and_the_batch_completes(
    chat_stand_in: Any,
) -> None:
    chat_stand_in.rate_limited = 6
    chat_stand_in.retry_after = "0.5"
    agent = Agent.from_config(chat_stand_in.config(max_retries=0))
    items = [f"doc-{n}.txt" for n in range(12)]
    results = [result async for result in agent.run_batch(items, "Read {path}", concurrency=4)]
    await agent.aclose()

    assert sorted(result.id for result in results) == sorted(items)
    assert {result.status for result in results} == {"ok"}
    assert sum(result.attempts for result in results) == 12 + 6
    # While a pause is in force no worker starts a run: after each 429, nothing new
    # reaches the provider until its Retry-After has passed (requests already under
    # way when it came arrive within a few milliseconds).
    for limited in (seen for seen in chat_stand_in.seen if seen.status == 429):
        too_early = [
            seen for seen in chat_stand_in.seen if limited.at + 0.1 <= seen.at < limited.at + 0.45
        ]
        assert not too_early


@pytest.mark.anyio
async def test_a_wait_longer_than_max_delay_fails_the_item_at_once(chat_stand_in: Any) -> None:
    chat_stand_in.rate_limited = 1
    chat_stand_in.retry_after = "3600"
    agent = Agent.from_config(chat_stand_in.config(max_retries=0))
    started = time.monotonic()
    [result] = [result async for result in agent.run_batch(["a.txt"], "Read {path}")]
    await agent.aclose()
    assert time.monotonic() - started < 5
    assert result.status == "failed"
    assert result.cause == "ModelAPIError 429"
    assert result.attempts == 1
    assert any("asked to wait 3600 s" in warning for warning in result.warnings)
