"""AnthropicModel through the real anthropic SDK against a local Messages API stand-in."""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any

import anthropic
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
from doc_processing_toolkit.models import ModelRequest, TextDelta, ThinkingDelta, resolve_model
from doc_processing_toolkit.models.anthropic import DEFAULT_MAX_TOKENS, AnthropicModel

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


def sent_key(headers: dict[str, str]) -> str | None:
    if "x-api-key" in headers:
        return headers["x-api-key"]
    return headers.get("authorization", "").removeprefix("Bearer ") or None


async def test_plain_text_reply_with_usage_and_the_request_on_the_wire(
    opened, stand_in, anthropic_wire
) -> None:
    stand_in.reply_json(
        anthropic_wire.message(
            [anthropic_wire.text("Hello there.")], input_tokens=30, output_tokens=4
        )
    )
    model = model_for(stand_in, opened)

    response = await model.request(ask("Hi"))

    assert response.text == "Hello there."
    assert response.tool_calls == []
    assert response.stop_reason == "end_turn"
    assert response.model_name == "anthropic:claude-test-1"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (30, 4)
    assert response.usage.requests == 1
    sent = stand_in.last
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    assert sent_key(sent.headers) == ANTHROPIC_KEY
    assert "anthropic-version" in sent.headers
    assert sent.body == {
        "model": "claude-test-1",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "tools": [
            {
                "name": "get_weather",
                "description": "The weather in a city.",
                "input_schema": WEATHER.input_schema,
            }
        ],
    }
    await model.aclose()


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


async def test_several_tool_calls_in_one_reply(opened, stand_in, anthropic_wire) -> None:
    stand_in.reply_json(
        anthropic_wire.message(
            [
                anthropic_wire.text("Checking both."),
                anthropic_wire.tool_use("toolu_1", "get_weather", {"city": "Paris"}),
                anthropic_wire.tool_use("toolu_2", "get_weather", {"city": "Oslo"}),
            ],
            stop_reason="tool_use",
        )
    )

    response = await model_for(stand_in, opened).request(ask("Weather in Paris and Oslo?"))

    assert response.stop_reason == "tool_use"
    assert response.parts == (
        TextPart("Checking both."),
        ToolCallPart(id="toolu_1", name="get_weather", arguments={"city": "Paris"}),
        ToolCallPart(id="toolu_2", name="get_weather", arguments={"city": "Oslo"}),
    )


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


@pytest.mark.parametrize(
    ("status", "error_type", "api_message", "hint"),
    [
        (400, "invalid_request_error", "messages: field required", None),
        (401, "authentication_error", "invalid x-api-key", "ANTHROPIC_API_KEY"),
        (429, "rate_limit_error", "Number of requests has exceeded your rate limit", "retry"),
        (500, "api_error", "Internal server error", "retry later"),
        (529, "overloaded_error", "Overloaded", "retry later"),
    ],
)
async def test_api_errors_become_model_api_errors(
    opened,
    stand_in,
    anthropic_wire,
    status: int,
    error_type: str,
    api_message: str,
    hint: str | None,
) -> None:
    stand_in.reply_json(anthropic_wire.error(error_type, api_message), status=status)

    with pytest.raises(ModelAPIError) as caught:
        await model_for(stand_in, opened).request(ask())

    error = caught.value
    assert (error.provider, error.status_code, error.api_message) == (
        "anthropic",
        status,
        api_message,
    )
    text = str(error)
    assert f"HTTP {status}" in text
    assert error_type in text
    assert api_message in text
    if hint:
        assert hint in text
    assert isinstance(error.__cause__, anthropic.APIStatusError)
    assert len(stand_in.requests) == 1, "max_retries=0 must not retry"


async def test_an_unreachable_api_is_a_model_api_error_naming_the_address(opened, dead_url) -> None:
    model = opened(
        AnthropicModel("claude-test-1", api_key=ANTHROPIC_KEY, base_url=dead_url, max_retries=0)
    )
    with pytest.raises(ModelAPIError) as caught:
        await model.request(ask())
    assert caught.value.status_code is None
    assert dead_url in str(caught.value)


async def test_streaming_yields_text_deltas_then_the_final_response(
    opened, stand_in, anthropic_wire
) -> None:
    stand_in.reply_sse(
        anthropic_wire.stream(
            [anthropic_wire.text("Hello from the stream.")],
            input_tokens=40,
            output_tokens=6,
            chunk=5,
        )
    )

    deltas, final = await collect(model_for(stand_in, opened), ask())

    assert deltas == ["Hello", " from", " the ", "strea", "m."]
    assert final.text == "Hello from the stream."
    assert final.stop_reason == "end_turn"
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.requests) == (40, 6, 1)
    assert stand_in.last.body["stream"] is True


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


async def test_a_streaming_request_rejected_up_front_is_a_model_api_error(
    opened, stand_in, anthropic_wire
) -> None:
    stand_in.reply_json(anthropic_wire.error("authentication_error", "bad key"), status=401)
    with pytest.raises(ModelAPIError) as caught:
        await collect(model_for(stand_in, opened), ask())
    assert caught.value.status_code == 401


NATIVE_SKILLS = {
    "container": {"skills": [{"type": "anthropic", "skill_id": "pptx", "version": "latest"}]},
    "betas": ["code-execution-2025-08-25", "skills-2025-10-02"],
    "tools": [{"type": "code_execution_20250825", "name": "code_execution"}],
    "temperature": 0.2,
    "metadata": {"user_id": "u-1"},
}


def assert_native_skills_on_the_wire(sent: Any) -> None:
    assert sent.headers["anthropic-beta"] == "code-execution-2025-08-25,skills-2025-10-02"
    assert sent.body["container"] == NATIVE_SKILLS["container"]
    assert sent.body["temperature"] == 0.2
    assert sent.body["metadata"] == {"user_id": "u-1"}
    assert [tool["name"] for tool in sent.body["tools"]] == ["get_weather", "code_execution"]
    assert sent.body["tools"][1] == {"type": "code_execution_20250825", "name": "code_execution"}
    assert "betas" not in sent.body


async def test_provider_kwargs_reach_the_wire_native_skills(
    opened, stand_in, anthropic_wire
) -> None:
    stand_in.reply_json(anthropic_wire.message([anthropic_wire.text("Deck ready.")]))
    response = await model_for(stand_in, opened).request(ask("Make a deck", **NATIVE_SKILLS))
    assert response.text == "Deck ready."
    assert_native_skills_on_the_wire(stand_in.last)


async def test_provider_kwargs_reach_the_wire_when_streaming(
    opened, stand_in, anthropic_wire
) -> None:
    stand_in.reply_sse(anthropic_wire.stream([anthropic_wire.text("Deck ready.")]))
    _, final = await collect(model_for(stand_in, opened), ask("Make a deck", **NATIVE_SKILLS))
    assert final.text == "Deck ready."
    assert_native_skills_on_the_wire(stand_in.last)


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


async def test_the_sdk_environment_variables_are_honoured(
    opened, stand_in, anthropic_wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stand_in.url)
    stand_in.reply_json(anthropic_wire.message([anthropic_wire.text("ok")]))

    response = await opened(AnthropicModel("claude-test-1", max_retries=0)).request(ask())

    assert response.text == "ok"
    assert sent_key(stand_in.last.headers) == "sk-from-env"


async def test_explicit_options_override_the_environment(
    opened, stand_in, anthropic_wire, dead_url, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", dead_url)
    stand_in.reply_json(anthropic_wire.message([anthropic_wire.text("ok")]))

    model = opened(AnthropicModel("claude-test-1", api_key="sk-explicit", base_url=stand_in.url))
    response = await model.request(ask())

    assert response.text == "ok"
    assert sent_key(stand_in.last.headers) == "sk-explicit"


def test_a_missing_key_says_what_to_set() -> None:
    with pytest.raises(MissingCredentialsError, match="ANTHROPIC_API_KEY"):
        AnthropicModel("claude-test-1")


async def test_an_auth_token_from_the_environment_is_a_credential(
    opened,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "token-from-env")
    assert opened(AnthropicModel("claude-test-1")).client.auth_token == "token-from-env"


async def test_a_given_client_is_used_as_is(opened, stand_in, anthropic_wire) -> None:
    client = anthropic.AsyncAnthropic(api_key="sk-own", base_url=stand_in.url, max_retries=0)
    stand_in.reply_json(anthropic_wire.message([anthropic_wire.text("ok")]))

    model = opened(AnthropicModel("claude-test-1", client=client))
    await model.request(ask())
    await model.aclose()

    assert model.client is client
    assert sent_key(stand_in.last.headers) == "sk-own"
    assert not client.is_closed(), "a client we were given is the caller's to close"
    await client.close()


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


def test_without_the_sdk_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    monkeypatch.delitem(sys.modules, "doc_processing_toolkit.models.anthropic", raising=False)
    with pytest.raises(
        MissingDependencyError, match=r'pip install "doc-processing-toolkit\[anthropic\]"'
    ):
        resolve_model("claude-sonnet-5", api_key=ANTHROPIC_KEY)


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_one_model_serves_one_event_loop_after_another(stand_in, anthropic_wire) -> None:
    model = AnthropicModel("claude-test-1", api_key=ANTHROPIC_KEY, base_url=stand_in.url)
    for turn in range(3):
        stand_in.reply_json(anthropic_wire.message([anthropic_wire.text(f"reply {turn}")]))
        assert asyncio.run(model.request(ask())).text == f"reply {turn}"
    asyncio.run(model.aclose())
    del model
    gc.collect()  # the clients of the ended loops go now, warnings and all


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
