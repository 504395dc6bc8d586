"""AnthropicModel through the real anthropic SDK against a local Messages API stand-in.

What it shares with the other SDK providers (replies, errors, streaming, options, the
environment, clients) is tested for both in test_provider_contract.py; what is its own is
here.
"""

from __future__ import annotations

from typing import Any

import pytest

from doc_processing_toolkit.errors import ModelAPIError
from doc_processing_toolkit.messages import (
    Message,
    ModelResponse,
    ProviderPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from doc_processing_toolkit.models import ModelRequest, TextDelta, ThinkingDelta, resolve_model
from doc_processing_toolkit.models.anthropic import AnthropicModel

pytestmark = pytest.mark.anyio

ANTHROPIC_KEY = "sk-ant-test-key"

WEATHER = ToolSpec(
    name="get_weather",
    description="The weather in a city.",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


def ask(text: str = "Hi", **provider_kwargs: Any) -> ModelRequest:
    return ModelRequest(
        system="Be brief.",
        messages=[Message.user(text)],
        tools=[WEATHER],
        provider_kwargs=provider_kwargs,
    )


def model_for(stand_in: Any, opened: Any, **options: Any) -> AnthropicModel:
    options.setdefault("api_key", ANTHROPIC_KEY)
    options.setdefault("max_retries", 0)
    return opened(AnthropicModel("claude-test-1", base_url=stand_in.url, **options))


async def collect(
    model: AnthropicModel, request: ModelRequest, thoughts: list[str] | None = None
) -> tuple[list[str], ModelResponse]:
    """The text deltas and the final response of a stream; thinking deltas go to
    `thoughts` (a stream that has some fails without it)."""
    deltas: list[str] = []
    final: list[ModelResponse] = []
    async for item in model.stream(request):
        if isinstance(item, TextDelta):
            assert not final, "a text delta came after the final response"
            deltas.append(item.text)
        elif isinstance(item, ThinkingDelta):
            assert thoughts is not None, f"unexpected thinking: {item.text!r}"
            assert not final, "a thinking delta came after the final response"
            thoughts.append(item.text)
        else:
            final.append(item)
    assert len(final) == 1
    return deltas, final[0]


async def test_cached_prompt_tokens_count_as_input(opened, stand_in, anthropic_wire) -> None:
    stand_in.reply_json(
        anthropic_wire.message(
            [anthropic_wire.text("ok")],
            input_tokens=5,
            output_tokens=2,
            cache_creation_input_tokens=100,
            cache_read_input_tokens=50,
        )
    )
    response = await model_for(stand_in, opened).request(ask())
    assert response.usage.input_tokens == 155
    assert response.usage.total_tokens == 157


async def test_no_system_and_no_tools_are_left_out_of_the_body(
    opened, stand_in, anthropic_wire
) -> None:
    stand_in.reply_json(anthropic_wire.message([anthropic_wire.text("ok")]))
    request = ModelRequest(system=None, messages=[Message.user("Hi")], tools=[], provider_kwargs={})
    await model_for(stand_in, opened).request(request)
    assert "system" not in stand_in.last.body
    assert "tools" not in stand_in.last.body


async def test_tool_results_go_back_as_tool_result_blocks_with_is_error(
    opened, stand_in, anthropic_wire
) -> None:
    stand_in.reply_json(anthropic_wire.message([anthropic_wire.text("Paris is sunny.")]))
    history = [
        Message.user("Weather in Paris and Oslo?"),
        Message(
            role="assistant",
            parts=(
                TextPart("Checking both."),
                ToolCallPart(id="toolu_1", name="get_weather", arguments={"city": "Paris"}),
                ToolCallPart(id="toolu_2", name="get_weather", arguments={"city": "Oslo"}),
            ),
        ),
        Message(
            role="user",
            parts=(
                TextPart("Be quick."),
                ToolResultPart(call_id="toolu_1", name="get_weather", content="sunny"),
                ToolResultPart(
                    call_id="toolu_2", name="get_weather", content="city unknown", is_error=True
                ),
            ),
        ),
    ]
    request = ModelRequest(system=None, messages=history, tools=[WEATHER], provider_kwargs={})

    response = await model_for(stand_in, opened).request(request)

    assert response.text == "Paris is sunny."
    assert stand_in.last.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Oslo?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking both."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "city unknown",
                    "is_error": True,
                },
                {"type": "text", "text": "Be quick."},
            ],
        },
    ]


async def test_empty_text_and_empty_turns_are_left_out(opened, stand_in, anthropic_wire) -> None:
    stand_in.reply_json(anthropic_wire.message([anthropic_wire.text("ok")]))
    history = [
        Message(role="user", parts=(TextPart(""), TextPart("Hi"))),
        Message(role="assistant", parts=()),
        Message.user("Still there?"),
    ]
    request = ModelRequest(system=None, messages=history, tools=[], provider_kwargs={})
    await model_for(stand_in, opened).request(request)
    assert stand_in.last.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        {"role": "user", "content": [{"type": "text", "text": "Still there?"}]},
    ]


async def test_a_single_beta_may_be_a_string(opened, stand_in, anthropic_wire) -> None:
    stand_in.reply_json(anthropic_wire.message([anthropic_wire.text("ok")]))
    await model_for(stand_in, opened).request(ask(betas="skills-2025-10-02"))
    assert stand_in.last.headers["anthropic-beta"] == "skills-2025-10-02"


async def test_streamed_tool_calls_are_assembled_from_partial_json(
    opened, stand_in, anthropic_wire
) -> None:
    stand_in.reply_sse(
        anthropic_wire.stream(
            [
                anthropic_wire.text("Let me look."),
                anthropic_wire.tool_use("toolu_1", "get_weather", {"city": "Paris", "days": 3}),
                anthropic_wire.tool_use("toolu_2", "get_weather", {"city": "Oslo"}),
            ],
            stop_reason="tool_use",
            chunk=3,
        )
    )

    deltas, final = await collect(model_for(stand_in, opened), ask())

    assert "".join(deltas) == "Let me look."
    assert final.stop_reason == "tool_use"
    assert final.tool_calls == [
        ToolCallPart(id="toolu_1", name="get_weather", arguments={"city": "Paris", "days": 3}),
        ToolCallPart(id="toolu_2", name="get_weather", arguments={"city": "Oslo"}),
    ]


async def test_an_error_event_inside_a_stream_is_a_model_api_error(
    opened, stand_in, anthropic_wire
) -> None:
    events = anthropic_wire.stream([anthropic_wire.text("Hello there")])[:4]
    events.append(("error", anthropic_wire.error("overloaded_error", "Overloaded")))
    stand_in.reply_sse(events)

    with pytest.raises(ModelAPIError) as caught:
        await collect(model_for(stand_in, opened), ask())
    assert caught.value.status_code is None
    assert caught.value.api_message == "Overloaded"
    assert "overloaded_error" in str(caught.value)


async def test_provider_kwargs_override_body_fields_and_add_headers(
    opened, stand_in, anthropic_wire
) -> None:
    stand_in.reply_json(anthropic_wire.message([anthropic_wire.text("ok")]))
    await model_for(stand_in, opened, max_tokens=100).request(
        ask(max_tokens=50, extra_headers={"x-trace": "t-1"}, top_k=5)
    )
    assert stand_in.last.body["max_tokens"] == 50
    assert stand_in.last.body["top_k"] == 5
    assert stand_in.last.headers["x-trace"] == "t-1"
    assert "anthropic-beta" not in stand_in.last.headers


async def test_an_auth_token_from_the_environment_is_a_credential(
    opened,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "token-from-env")
    assert opened(AnthropicModel("claude-test-1")).client.auth_token == "token-from-env"


async def test_resolve_model_builds_an_anthropic_model_with_options(
    opened, stand_in, anthropic_wire
) -> None:
    stand_in.reply_json(anthropic_wire.message([anthropic_wire.text("ok")]))
    model = opened(
        resolve_model(
            "claude-sonnet-5", api_key=ANTHROPIC_KEY, base_url=stand_in.url, max_retries=0
        )
    )
    assert isinstance(model, AnthropicModel)
    assert model.name == "anthropic:claude-sonnet-5"
    await model.request(ask())
    assert stand_in.last.body["model"] == "claude-sonnet-5"


THOUGHT = "The user wants Paris weather; call the tool."
SIGNATURE = "EqQBCkYIARgCKkD0c2lnbmF0dXJl"


def thinking_reply(wire: Any) -> list[dict[str, Any]]:
    return [
        wire.thinking(THOUGHT, SIGNATURE),
        wire.redacted_thinking("ZW5jcnlwdGVk"),
        wire.text("Checking."),
        wire.tool_use("toolu_1", "get_weather", {"city": "Paris"}),
    ]


def continued(first: ModelResponse) -> ModelRequest:
    """The request after `first`: its reply, then the tool's result."""
    return ModelRequest(
        system="Be brief.",
        messages=[
            Message.user("Weather in Paris?"),
            first.to_message(),
            Message(
                role="user",
                parts=(ToolResultPart(call_id="toolu_1", name="get_weather", content="sunny"),),
            ),
        ],
        tools=[WEATHER],
        provider_kwargs={"thinking": {"type": "enabled", "budget_tokens": 2048}},
    )


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
async def test_thinking_blocks_are_kept_and_sent_back_in_their_place(
    streamed: bool, opened, stand_in, anthropic_wire
) -> None:
    blocks = thinking_reply(anthropic_wire)
    if streamed:
        stand_in.reply_sse(anthropic_wire.stream(blocks, stop_reason="tool_use", chunk=7))
    else:
        stand_in.reply_json(anthropic_wire.message(blocks, stop_reason="tool_use"))
    stand_in.reply_json(anthropic_wire.message([anthropic_wire.text("Sunny.")]))
    model = model_for(stand_in, opened)

    request = ask("Weather in Paris?", thinking={"type": "enabled", "budget_tokens": 2048})
    thoughts: list[str] = []
    if streamed:
        deltas, first = await collect(model, request, thoughts)
        # The thinking streams in pieces of its own, apart from the answer's text.
        assert "".join(thoughts) == THOUGHT
        assert len(thoughts) > 1
        assert "".join(deltas) == "Checking."
    else:
        first = await model.request(request)
    assert first.parts == (
        ProviderPart("anthropic", blocks[0]),
        ProviderPart("anthropic", blocks[1]),
        TextPart("Checking."),
        ToolCallPart(id="toolu_1", name="get_weather", arguments={"city": "Paris"}),
    )
    assert [p.type for p in first.parts if isinstance(p, ProviderPart)] == [
        "thinking",
        "redacted_thinking",
    ]
    assert first.text == "Checking."

    second = await model.request(continued(first))

    assert second.text == "Sunny."
    assert stand_in.last.body["messages"][1:] == [
        {"role": "assistant", "content": blocks},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}],
        },
    ]


async def test_another_providers_parts_are_not_sent(opened, stand_in, anthropic_wire) -> None:
    stand_in.reply_json(anthropic_wire.message([anthropic_wire.text("Hi.")]))
    history = Message(
        role="assistant",
        parts=(ProviderPart("other", {"type": "reasoning", "text": "x"}), TextPart("Hello.")),
    )
    request = ModelRequest(
        system=None,
        messages=[Message.user("Hi"), history, Message.user("Again")],
        tools=[],
        provider_kwargs={},
    )

    await model_for(stand_in, opened).request(request)

    assert stand_in.last.body["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello."}],
    }
