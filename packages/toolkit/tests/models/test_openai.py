"""OpenAIModel through the real openai SDK against a local Chat Completions stand-in."""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any

import openai
import pytest

from doc_processing_toolkit.errors import (
    MissingCredentialsError,
    MissingDependencyError,
    ModelAPIError,
)
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


async def test_plain_text_reply_with_usage_and_the_request_on_the_wire(
    opened, stand_in, openai_wire
) -> None:
    stand_in.reply_json(
        openai_wire.completion("Hello there.", prompt_tokens=31, completion_tokens=3)
    )
    model = model_for(stand_in, opened)

    response = await model.request(ask("Hi"))

    assert response.parts == (TextPart("Hello there."),)
    assert response.stop_reason == "stop"
    assert response.model_name == "openai:gpt-test-1"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (31, 3)
    assert response.usage.requests == 1
    sent = stand_in.last
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert sent.body == {
        "model": "gpt-test-1",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "The weather in a city.",
                    "parameters": WEATHER.input_schema,
                },
            }
        ],
    }
    await model.aclose()


async def test_no_system_and_no_tools_are_left_out(opened, stand_in, openai_wire) -> None:
    stand_in.reply_json(openai_wire.completion("ok"))
    request = ModelRequest(system=None, messages=[Message.user("Hi")], tools=[], provider_kwargs={})
    await model_for(stand_in, opened).request(request)
    assert stand_in.last.body == {
        "model": "gpt-test-1",
        "messages": [{"role": "user", "content": "Hi"}],
    }


async def test_several_tool_calls_in_one_reply(opened, stand_in, openai_wire) -> None:
    stand_in.reply_json(
        openai_wire.completion(
            None,
            [
                openai_wire.tool_call("call_1", "get_weather", '{"city": "Paris"}'),
                openai_wire.tool_call("call_2", "get_weather", '{"city": "Oslo"}'),
            ],
        )
    )

    response = await model_for(stand_in, opened).request(ask("Weather in Paris and Oslo?"))

    assert response.stop_reason == "tool_calls"
    assert response.parts == (
        ToolCallPart(id="call_1", name="get_weather", arguments={"city": "Paris"}),
        ToolCallPart(id="call_2", name="get_weather", arguments={"city": "Oslo"}),
    )


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


@pytest.mark.parametrize(
    ("status", "error_type", "api_message", "hint"),
    [
        (400, "invalid_request_error", "Invalid schema for function 'get_weather'", None),
        (401, "invalid_request_error", "Incorrect API key provided", "OPENAI_API_KEY"),
        (404, "invalid_request_error", "The model `gpt-nope` does not exist", "model name"),
        (429, "insufficient_quota", "You exceeded your current quota", "retry"),
        (500, "server_error", "The server had an error", "retry later"),
    ],
)
async def test_api_errors_become_model_api_errors(
    opened, stand_in, openai_wire, status: int, error_type: str, api_message: str, hint: str | None
) -> None:
    stand_in.reply_json(openai_wire.error(api_message, error_type), status=status)

    with pytest.raises(ModelAPIError) as caught:
        await model_for(stand_in, opened).request(ask())

    error = caught.value
    assert (error.provider, error.status_code, error.api_message) == ("openai", status, api_message)
    text = str(error)
    assert f"HTTP {status}" in text
    assert error_type in text
    assert api_message in text
    if hint:
        assert hint in text
    assert isinstance(error.__cause__, openai.APIStatusError)
    assert len(stand_in.requests) == 1, "max_retries=0 must not retry"


async def test_a_non_json_error_body_is_reported_as_text(opened, stand_in) -> None:
    stand_in.reply_json("upstream exploded", status=502)
    with pytest.raises(ModelAPIError) as caught:
        await model_for(stand_in, opened).request(ask())
    assert caught.value.status_code == 502
    assert "upstream exploded" in str(caught.value)


async def test_an_unreachable_server_is_a_model_api_error_naming_the_address(
    opened, dead_url
) -> None:
    model = opened(OpenAIModel("gpt-test-1", api_key=OPENAI_KEY, base_url=dead_url, max_retries=0))
    with pytest.raises(ModelAPIError) as caught:
        await model.request(ask())
    assert caught.value.status_code is None
    assert dead_url in str(caught.value)


async def test_streaming_yields_text_deltas_then_the_final_response_with_usage(
    opened, stand_in, openai_wire
) -> None:
    stand_in.reply_sse(
        openai_wire.stream("Hello from the stream.", prompt_tokens=44, completion_tokens=6, chunk=5)
    )

    deltas, final = await collect(model_for(stand_in, opened), ask())

    assert deltas == ["Hello", " from", " the ", "strea", "m."]
    assert final.parts == (TextPart("Hello from the stream."),)
    assert final.stop_reason == "stop"
    assert final.model_name == "openai:gpt-test-1"
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.requests) == (44, 6, 1)
    assert stand_in.last.body["stream"] is True
    assert stand_in.last.body["stream_options"] == {"include_usage": True}


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


async def test_a_streaming_request_rejected_up_front_is_a_model_api_error(
    opened, stand_in, openai_wire
) -> None:
    stand_in.reply_json(
        openai_wire.error("Incorrect API key provided", "invalid_request_error"), status=401
    )
    with pytest.raises(ModelAPIError) as caught:
        await collect(model_for(stand_in, opened), ask())
    assert caught.value.status_code == 401


EXTRAS = {
    "temperature": 0.1,
    "max_completion_tokens": 300,
    "response_format": {"type": "text"},
    "tools": [{"type": "function", "function": {"name": "extra", "parameters": {}}}],
    "extra_headers": {"x-trace": "t-1"},
}


def assert_extras_on_the_wire(sent: Any) -> None:
    assert sent.body["temperature"] == 0.1
    assert sent.body["max_completion_tokens"] == 300
    assert sent.body["response_format"] == {"type": "text"}
    assert [tool["function"]["name"] for tool in sent.body["tools"]] == ["get_weather", "extra"]
    assert sent.headers["x-trace"] == "t-1"
    assert "extra_headers" not in sent.body


async def test_provider_kwargs_reach_the_wire(opened, stand_in, openai_wire) -> None:
    stand_in.reply_json(openai_wire.completion("ok"))
    await model_for(stand_in, opened).request(ask(**EXTRAS))
    assert_extras_on_the_wire(stand_in.last)


async def test_provider_kwargs_reach_the_wire_when_streaming(opened, stand_in, openai_wire) -> None:
    stand_in.reply_sse(openai_wire.stream("ok"))
    await collect(model_for(stand_in, opened), ask(**EXTRAS))
    assert_extras_on_the_wire(stand_in.last)


async def test_the_sdk_environment_variables_are_honoured(
    opened, stand_in, openai_wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{stand_in.url}/v1")
    stand_in.reply_json(openai_wire.completion("ok"))

    response = await opened(OpenAIModel("gpt-test-1", max_retries=0)).request(ask())

    assert response.text == "ok"
    assert stand_in.last.headers["authorization"] == "Bearer sk-from-env"


async def test_explicit_options_override_the_environment(
    opened, stand_in, openai_wire, dead_url, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", dead_url)
    stand_in.reply_json(openai_wire.completion("ok"))

    model = opened(OpenAIModel("gpt-test-1", api_key="sk-explicit", base_url=f"{stand_in.url}/v1"))
    response = await model.request(ask())

    assert response.text == "ok"
    assert stand_in.last.headers["authorization"] == "Bearer sk-explicit"


def test_a_missing_key_says_what_to_set() -> None:
    with pytest.raises(MissingCredentialsError, match="OPENAI_API_KEY"):
        OpenAIModel("gpt-test-1")


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


async def test_a_given_client_is_used_as_is(opened, stand_in, openai_wire) -> None:
    client = openai.AsyncOpenAI(api_key="sk-own", base_url=f"{stand_in.url}/v1", max_retries=0)
    stand_in.reply_json(openai_wire.completion("ok"))

    model = opened(OpenAIModel("gpt-test-1", client=client))
    await model.request(ask())
    await model.aclose()

    assert model.client is client
    assert stand_in.last.headers["authorization"] == "Bearer sk-own"
    assert not client.is_closed(), "a client we were given is the caller's to close"
    await client.close()


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


def test_without_the_sdk_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    monkeypatch.delitem(sys.modules, "doc_processing_toolkit.models.openai", raising=False)
    with pytest.raises(
        MissingDependencyError, match=r'pip install "doc-processing-toolkit\[openai\]"'
    ):
        resolve_model("gpt-5", api_key=OPENAI_KEY)


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_one_model_serves_one_event_loop_after_another(stand_in, openai_wire) -> None:
    model = OpenAIModel("gpt-test-1", api_key=OPENAI_KEY, base_url=f"{stand_in.url}/v1")
    for turn in range(3):
        stand_in.reply_json(openai_wire.completion(f"reply {turn}"))
        assert asyncio.run(model.request(ask())).text == f"reply {turn}"
    asyncio.run(model.aclose())
    del model
    gc.collect()  # the clients of the ended loops go now, warnings and all


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
