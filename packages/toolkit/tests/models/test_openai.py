"""OpenAIModel through the real openai SDK against a local Chat Completions stand-in.

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
from doc_processing_toolkit.models import ModelRequest, TextDelta, resolve_model
from doc_processing_toolkit.models.openai import (
    KEYLESS_API_KEY,
    OpenAIModel,
    parse_tool_arguments,
)

pytestmark = pytest.mark.anyio

OPENAI_KEY = "sk-openai-test-key"

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


def model_for(stand_in: Any, opened: Any, **options: Any) -> OpenAIModel:
    options.setdefault("api_key", OPENAI_KEY)
    options.setdefault("max_retries", 0)
    return opened(OpenAIModel("gpt-test-1", base_url=f"{stand_in.url}/v1", **options))


async def collect(model: OpenAIModel, request: ModelRequest) -> tuple[list[str], ModelResponse]:
    deltas: list[str] = []
    final: list[ModelResponse] = []
    async for item in model.stream(request):
        if isinstance(item, TextDelta):
            assert not final, "a text delta came after the final response"
            deltas.append(item.text)
        else:
            final.append(item)
    assert len(final) == 1
    return deltas, final[0]


async def test_no_system_and_no_tools_are_left_out(opened, stand_in, openai_wire) -> None:
    stand_in.reply_json(openai_wire.completion("ok"))
    request = ModelRequest(system=None, messages=[Message.user("Hi")], tools=[], provider_kwargs={})
    await model_for(stand_in, opened).request(request)
    assert stand_in.last.body == {
        "model": "gpt-test-1",
        "messages": [{"role": "user", "content": "Hi"}],
    }


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"city": "Par', "not valid JSON"),
        ('["Paris"]', "must be a JSON object, not list"),
        ("null", "must be a JSON object, not NoneType"),
    ],
)
async def test_unusable_tool_arguments_do_not_raise_and_are_flagged(
    opened, stand_in, openai_wire, raw: str, problem: str
) -> None:
    stand_in.reply_json(
        openai_wire.completion(None, [openai_wire.tool_call("call_1", "get_weather", raw)])
    )

    response = await model_for(stand_in, opened).request(ask())

    [call] = response.tool_calls
    assert call.arguments == {"_raw": raw}
    assert call.arguments_error is not None
    assert problem in call.arguments_error


def test_empty_tool_arguments_are_no_arguments() -> None:
    assert parse_tool_arguments("") == ({}, None)
    assert parse_tool_arguments("  ") == ({}, None)
    assert parse_tool_arguments(None) == ({}, None)
    assert parse_tool_arguments('{"a": 1}') == ({"a": 1}, None)


async def test_tool_results_go_back_as_tool_messages(opened, stand_in, openai_wire) -> None:
    stand_in.reply_json(openai_wire.completion("Paris is sunny."))
    history = [
        Message.user("Weather in Paris and Oslo?"),
        Message(
            role="assistant",
            parts=(
                TextPart("Checking both."),
                ToolCallPart(id="call_1", name="get_weather", arguments={"city": "Paris"}),
                ToolCallPart(id="call_2", name="get_weather", arguments={"city": "Oslo"}),
                ToolCallPart(
                    id="call_3",
                    name="get_weather",
                    arguments={"_raw": '{"city": '},
                    arguments_error="the tool arguments are not valid JSON",
                ),
            ),
        ),
        Message(
            role="user",
            parts=(
                ToolResultPart(call_id="call_1", name="get_weather", content="sunny"),
                ToolResultPart(
                    call_id="call_2", name="get_weather", content="city unknown", is_error=True
                ),
                ToolResultPart(
                    call_id="call_3", name="get_weather", content="bad JSON", is_error=True
                ),
                TextPart("Be quick."),
            ),
        ),
    ]
    request = ModelRequest(system=None, messages=history, tools=[WEATHER], provider_kwargs={})

    response = await model_for(stand_in, opened).request(request)

    assert response.text == "Paris is sunny."
    assert stand_in.last.body["messages"] == [
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {
            "role": "assistant",
            "content": "Checking both.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                },
                {
                    "id": "call_3",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": '},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: city unknown"},
        {"role": "tool", "tool_call_id": "call_3", "content": "Error: bad JSON"},
        {"role": "user", "content": "Be quick."},
    ]


async def test_an_assistant_turn_with_only_tool_calls_has_null_content(
    opened, stand_in, openai_wire
) -> None:
    stand_in.reply_json(openai_wire.completion("done"))
    history = [
        Message.user("Go"),
        Message(role="assistant", parts=(ToolCallPart(id="c1", name="get_weather", arguments={}),)),
        Message(role="user", parts=(ToolResultPart(call_id="c1", name="get_weather", content=""),)),
    ]
    await model_for(stand_in, opened).request(
        ModelRequest(system=None, messages=history, tools=[], provider_kwargs={})
    )
    assistant, tool = stand_in.last.body["messages"][1:]
    assert assistant["content"] is None
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{}"
    assert tool == {"role": "tool", "tool_call_id": "c1", "content": ""}


async def test_a_non_json_error_body_is_reported_as_text(opened, stand_in) -> None:
    stand_in.reply_json("upstream exploded", status=502)
    with pytest.raises(ModelAPIError) as caught:
        await model_for(stand_in, opened).request(ask())
    assert caught.value.status_code == 502
    assert "upstream exploded" in str(caught.value)


async def test_streamed_tool_calls_are_assembled_from_argument_pieces(
    opened, stand_in, openai_wire
) -> None:
    stand_in.reply_sse(
        openai_wire.stream(
            "Let me look.",
            [
                openai_wire.tool_call("call_1", "get_weather", '{"city": "Paris", "days": 3}'),
                openai_wire.tool_call("call_2", "get_weather", '{"city": "Os'),
            ],
            chunk=3,
        )
    )

    deltas, final = await collect(model_for(stand_in, opened), ask())

    assert "".join(deltas) == "Let me look."
    assert final.stop_reason == "tool_calls"
    first, second = final.tool_calls
    assert first == ToolCallPart(
        id="call_1", name="get_weather", arguments={"city": "Paris", "days": 3}
    )
    assert (second.id, second.arguments) == ("call_2", {"_raw": '{"city": "Os'})
    assert second.arguments_error is not None


async def test_a_stream_without_usage_counts_the_request_only(
    opened, stand_in, openai_wire
) -> None:
    stand_in.reply_sse(openai_wire.stream("ok", with_usage=False))
    _, final = await collect(model_for(stand_in, opened), ask())
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.requests) == (0, 0, 1)


async def test_an_error_inside_a_stream_is_a_model_api_error(opened, stand_in, openai_wire) -> None:
    events = openai_wire.stream("Hello there")[:2]
    events.append((None, openai_wire.error("The server had an error", "server_error")))
    stand_in.reply_sse(events)

    with pytest.raises(ModelAPIError) as caught:
        await collect(model_for(stand_in, opened), ask())
    assert caught.value.status_code is None
    assert caught.value.api_message == "The server had an error"
    assert "error event in the stream" in str(caught.value)


async def test_a_local_server_needs_no_key(opened, stand_in, openai_wire) -> None:
    stand_in.reply_json(openai_wire.completion("Hi from llama.", model="llama3.1"))

    model = opened(OpenAIModel("llama3.1", base_url=f"{stand_in.url}/v1", max_retries=0))
    response = await model.request(ask())

    assert response.text == "Hi from llama."
    assert stand_in.last.headers["authorization"] == f"Bearer {KEYLESS_API_KEY}"
    assert stand_in.last.body["model"] == "llama3.1"


async def test_a_base_url_from_the_environment_also_needs_no_key(
    opened, stand_in, openai_wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{stand_in.url}/v1")
    stand_in.reply_json(openai_wire.completion("ok"))
    await opened(OpenAIModel("llama3.1", max_retries=0)).request(ask())
    assert stand_in.last.headers["authorization"] == f"Bearer {KEYLESS_API_KEY}"


@pytest.mark.parametrize("name", ["gpt-5", "o1-mini", "o3", "o4-mini", "openai:llama3.1"])
async def test_resolve_model_builds_an_openai_model(
    opened, stand_in, openai_wire, name: str
) -> None:
    stand_in.reply_json(openai_wire.completion("ok"))
    model = opened(
        resolve_model(name, api_key=OPENAI_KEY, base_url=f"{stand_in.url}/v1", max_retries=0)
    )
    assert isinstance(model, OpenAIModel)
    expected = name.removeprefix("openai:")
    assert model.name == f"openai:{expected}"
    await model.request(ask())
    assert stand_in.last.body["model"] == expected


async def test_parts_kept_for_another_provider_are_left_out(opened, stand_in, openai_wire) -> None:
    # A conversation that began with Claude (thinking kept) goes on with an OpenAI model.
    stand_in.reply_json(openai_wire.completion("Still sunny."))
    claude_turn = Message(
        role="assistant",
        parts=(
            ProviderPart("anthropic", {"type": "thinking", "thinking": "t", "signature": "s"}),
            TextPart("Sunny."),
        ),
    )
    request = ModelRequest(
        system=None,
        messages=[Message.user("Weather?"), claude_turn, Message.user("And now?")],
        tools=[],
        provider_kwargs={},
    )

    await model_for(stand_in, opened).request(request)

    assert stand_in.last.body["messages"] == [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "And now?"},
    ]
