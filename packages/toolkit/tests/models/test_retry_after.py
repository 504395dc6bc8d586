"""The wait a rate-limited provider asks for reaches `ModelAPIError.retry_after`, through
the real SDKs talking to the local stand-ins (with their own retries off)."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import pytest

from doc_processing_toolkit.errors import ModelAPIError
from doc_processing_toolkit.messages import Message
from doc_processing_toolkit.models import ModelRequest
from doc_processing_toolkit.models._common import retry_after_seconds
from doc_processing_toolkit.models.anthropic import AnthropicModel
from doc_processing_toolkit.models.openai import OpenAIModel

pytestmark = pytest.mark.anyio

REQUEST = ModelRequest(system=None, messages=(Message.user("Hi"),), tools=(), provider_kwargs={})


async def test_anthropic_429_carries_retry_after(
    stand_in: Any, opened: Any, anthropic_wire: Any
) -> None:
    stand_in.reply_json(
        anthropic_wire.error("rate_limit_error", "slow down"), status=429, retry_after="7"
    )
    model = opened(
        AnthropicModel("claude-test-1", api_key="k", base_url=stand_in.url, max_retries=0)
    )
    with pytest.raises(ModelAPIError) as caught:
        await model.request(REQUEST)
    assert (caught.value.status_code, caught.value.retry_after) == (429, 7.0)


async def test_openai_529_carries_retry_after_ms(
    stand_in: Any, opened: Any, openai_wire: Any
) -> None:
    stand_in.reply_json(
        openai_wire.error("overloaded", "server_error"), status=529, retry_after_ms="1500"
    )
    model = opened(OpenAIModel("gpt-test-1", api_key="k", base_url=stand_in.url, max_retries=0))
    with pytest.raises(ModelAPIError) as caught:
        await model.request(REQUEST)
    assert (caught.value.status_code, caught.value.retry_after) == (529, 1.5)


async def test_an_error_without_the_header_has_no_retry_after(
    stand_in: Any, opened: Any, openai_wire: Any
) -> None:
    stand_in.reply_json(openai_wire.error("bad", "invalid_request_error"), status=400)
    model = opened(OpenAIModel("gpt-test-1", api_key="k", base_url=stand_in.url, max_retries=0))
    with pytest.raises(ModelAPIError) as caught:
        await model.request(REQUEST)
    assert caught.value.retry_after is None


def test_retry_after_forms() -> None:
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= (retry_after_seconds({"retry-after": later}) or 0) <= 31
    assert retry_after_seconds({"retry-after": "2.5"}) == 2.5
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({"retry-after": "-3"}) == 0.0
    assert retry_after_seconds({}) is None
