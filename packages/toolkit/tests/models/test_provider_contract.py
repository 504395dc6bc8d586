"""What every SDK provider does the same way, each test run for AnthropicModel and for
OpenAIModel: through the provider's real SDK client against a local stand-in of its API.

A `Provider` profile holds what differs between them (the wire format, the SDK, the
environment variable names); the test bodies hold the behaviour they share. What only one
provider does is tested in its own module (test_anthropic.py, test_openai.py).
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from typing import Any, ClassVar

import anthropic
import openai
import pytest

from doc_processing_toolkit.errors import (
    MissingCredentialsError,
    MissingDependencyError,
    ModelAPIError,
)
from doc_processing_toolkit.messages import Message, ModelResponse, TextPart, ToolCallPart, ToolSpec
from doc_processing_toolkit.models import ModelRequest, TextDelta, resolve_model
from doc_processing_toolkit.models.anthropic import DEFAULT_MAX_TOKENS, AnthropicModel
from doc_processing_toolkit.models.openai import OpenAIModel

pytestmark = pytest.mark.anyio

WEATHER = ToolSpec(
    name="get_weather",
    description="The weather in a city.",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)

Call = tuple[str, str, dict[str, Any]]


Call = tuple[str, str, dict[str, Any]]


def ask(text: str = "Hi", **provider_kwargs: Any) -> ModelRequest:
    return ModelRequest(
        system="Be brief.",
        messages=[Message.user(text)],
        tools=[WEATHER],
        provider_kwargs=provider_kwargs,
    )


def sent_key(headers: dict[str, str]) -> str | None:
    """The API key a request carried (Anthropic's ``x-api-key`` or a bearer token)."""
    if "x-api-key" in headers:
        return headers["x-api-key"]
    return headers.get("authorization", "").removeprefix("Bearer ") or None


class Provider:
    """One provider as the contract tests see it: its names, its SDK, and its wire
    format (`wire`, the conftest builders of its payloads)."""

    name: ClassVar[str]
    sdk: ClassVar[Any]
    model_class: ClassVar[type[Any]]
    client_class: ClassVar[type[Any]]
    model_id: ClassVar[str]
    key: ClassVar[str]
    key_env: ClassVar[str]
    base_url_env: ClassVar[str]
    path: ClassVar[str]
    url_suffix: ClassVar[str]
    stop_reason: ClassVar[str]
    calls_stop_reason: ClassVar[str]
    call_ids: ClassVar[tuple[str, str]]
    call_text: ClassVar[str | None]
    required_headers: ClassVar[tuple[str, ...]]
    stream_body: ClassVar[dict[str, Any]]
    request_body: ClassVar[dict[str, Any]]
    error_cases: ClassVar[list[tuple[int, str, str, str | None]]]
    provider_kwargs: ClassVar[dict[str, Any]]

    def __init__(self, wire: Any) -> None:
        self.wire = wire

    def url(self, stand_in: Any) -> str:
        return f"{stand_in.url}{self.url_suffix}"

    def model(self, stand_in: Any, opened: Any, **options: Any) -> Any:
        options.setdefault("api_key", self.key)
        options.setdefault("max_retries", 0)
        return opened(self.model_class(self.model_id, base_url=self.url(stand_in), **options))

    def text_reply(self, text: str, *, input_tokens: int = 20, output_tokens: int = 9) -> Any:
        raise NotImplementedError

    def calls_reply(self, text: str | None, calls: list[Call]) -> Any:
        raise NotImplementedError

    def text_stream(
        self, text: str, *, input_tokens: int = 20, output_tokens: int = 9, chunk: int = 4
    ) -> list[tuple[str | None, Any]]:
        raise NotImplementedError

    def error_reply(self, error_type: str, message: str) -> Any:
        raise NotImplementedError

    def kwargs_on_the_wire(self, sent: Any) -> None:
        """Assert that `provider_kwargs` reached the request `sent`."""
        raise NotImplementedError


class AnthropicProvider(Provider):
    name = "anthropic"
    sdk = anthropic
    model_class = AnthropicModel
    client_class = anthropic.AsyncAnthropic
    model_id = "claude-test-1"
    key = "sk-ant-test-key"
    key_env = "ANTHROPIC_API_KEY"
    base_url_env = "ANTHROPIC_BASE_URL"
    path = "/v1/messages"
    url_suffix = ""
    stop_reason = "end_turn"
    calls_stop_reason = "tool_use"
    call_ids = ("toolu_1", "toolu_2")
    call_text = "Checking both."
    required_headers = ("anthropic-version",)
    stream_body: ClassVar[dict[str, Any]] = {"stream": True}
    request_body: ClassVar[dict[str, Any]] = {
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
    error_cases: ClassVar[list[tuple[int, str, str, str | None]]] = [
        (400, "invalid_request_error", "messages: field required", None),
        (401, "authentication_error", "invalid x-api-key", "ANTHROPIC_API_KEY"),
        (429, "rate_limit_error", "Number of requests has exceeded your rate limit", "retry"),
        (500, "api_error", "Internal server error", "retry later"),
        (529, "overloaded_error", "Overloaded", "retry later"),
    ]
    # Native skills: a beta header, a container, a server tool and plain body fields.
    provider_kwargs: ClassVar[dict[str, Any]] = {
        "container": {"skills": [{"type": "anthropic", "skill_id": "pptx", "version": "latest"}]},
        "betas": ["code-execution-2025-08-25", "skills-2025-10-02"],
        "tools": [{"type": "code_execution_20250825", "name": "code_execution"}],
        "temperature": 0.2,
        "metadata": {"user_id": "u-1"},
    }

    def text_reply(self, text: str, *, input_tokens: int = 12, output_tokens: int = 7) -> Any:
        return self.wire.message(
            [self.wire.text(text)], input_tokens=input_tokens, output_tokens=output_tokens
        )

    def calls_reply(self, text: str | None, calls: list[Call]) -> Any:
        content = [self.wire.text(text)] if text else []
        content += [self.wire.tool_use(*call) for call in calls]
        return self.wire.message(content, stop_reason="tool_use")

    def text_stream(
        self, text: str, *, input_tokens: int = 12, output_tokens: int = 7, chunk: int = 4
    ) -> list[tuple[str | None, Any]]:
        return self.wire.stream(  # type: ignore[no-any-return]
            [self.wire.text(text)],
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            chunk=chunk,
        )

    def error_reply(self, error_type: str, message: str) -> Any:
        return self.wire.error(error_type, message)

    def kwargs_on_the_wire(self, sent: Any) -> None:
        assert sent.headers["anthropic-beta"] == "code-execution-2025-08-25,skills-2025-10-02"
        assert sent.body["container"] == self.provider_kwargs["container"]
        assert sent.body["temperature"] == 0.2
        assert sent.body["metadata"] == {"user_id": "u-1"}
        assert [tool["name"] for tool in sent.body["tools"]] == ["get_weather", "code_execution"]
        assert sent.body["tools"][1] == {
            "type": "code_execution_20250825",
            "name": "code_execution",
        }
        assert "betas" not in sent.body


class OpenAIProvider(Provider):
    name = "openai"
    sdk = openai
    model_class = OpenAIModel
    client_class = openai.AsyncOpenAI
    model_id = "gpt-test-1"
    key = "sk-openai-test-key"
    key_env = "OPENAI_API_KEY"
    base_url_env = "OPENAI_BASE_URL"
    path = "/v1/chat/completions"
    url_suffix = "/v1"
    stop_reason = "stop"
    calls_stop_reason = "tool_calls"
    call_ids = ("call_1", "call_2")
    call_text = None
    required_headers = ()
    stream_body: ClassVar[dict[str, Any]] = {
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    request_body: ClassVar[dict[str, Any]] = {
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
    error_cases: ClassVar[list[tuple[int, str, str, str | None]]] = [
        (400, "invalid_request_error", "Invalid schema for function 'get_weather'", None),
        (401, "invalid_request_error", "Incorrect API key provided", "OPENAI_API_KEY"),
        (404, "invalid_request_error", "The model `gpt-nope` does not exist", "model name"),
        (429, "insufficient_quota", "You exceeded your current quota", "retry"),
        (500, "server_error", "The server had an error", "retry later"),
    ]
    provider_kwargs: ClassVar[dict[str, Any]] = {
        "temperature": 0.1,
        "max_completion_tokens": 300,
        "response_format": {"type": "text"},
        "tools": [{"type": "function", "function": {"name": "extra", "parameters": {}}}],
        "extra_headers": {"x-trace": "t-1"},
    }

    def text_reply(self, text: str, *, input_tokens: int = 20, output_tokens: int = 9) -> Any:
        return self.wire.completion(
            text, prompt_tokens=input_tokens, completion_tokens=output_tokens
        )

    def calls_reply(self, text: str | None, calls: list[Call]) -> Any:
        wired = [self.wire.tool_call(i, name, json.dumps(args)) for i, name, args in calls]
        return self.wire.completion(text, wired)

    def text_stream(
        self, text: str, *, input_tokens: int = 20, output_tokens: int = 9, chunk: int = 4
    ) -> list[tuple[str | None, Any]]:
        return self.wire.stream(  # type: ignore[no-any-return]
            text, prompt_tokens=input_tokens, completion_tokens=output_tokens, chunk=chunk
        )

    def error_reply(self, error_type: str, message: str) -> Any:
        return self.wire.error(message, error_type)

    def kwargs_on_the_wire(self, sent: Any) -> None:
        assert sent.body["temperature"] == 0.1
        assert sent.body["max_completion_tokens"] == 300
        assert sent.body["response_format"] == {"type": "text"}
        assert [tool["function"]["name"] for tool in sent.body["tools"]] == [
            "get_weather",
            "extra",
        ]
        assert sent.headers["x-trace"] == "t-1"
        assert "extra_headers" not in sent.body


PROVIDERS: dict[str, type[Provider]] = {"anthropic": AnthropicProvider, "openai": OpenAIProvider}


@pytest.fixture(params=list(PROVIDERS))
def provider(request: pytest.FixtureRequest, anthropic_wire: Any, openai_wire: Any) -> Provider:
    """Each provider in turn (or the one an indirect parametrization names)."""
    profile = PROVIDERS[request.param]
    return profile(anthropic_wire if profile is AnthropicProvider else openai_wire)


async def collect(model: Any, request: ModelRequest) -> tuple[list[str], ModelResponse]:
    """The text deltas and the final response of a stream."""
    deltas: list[str] = []
    final: list[ModelResponse] = []
    async for item in model.stream(request):
        if isinstance(item, TextDelta):
            assert not final, "a text delta came after the final response"
            deltas.append(item.text)
        else:
            assert isinstance(item, ModelResponse), f"unexpected stream item: {item!r}"
            final.append(item)
    assert len(final) == 1
    return deltas, final[0]


async def test_plain_text_reply_with_usage_and_the_request_on_the_wire(
    provider: Provider, opened, stand_in
) -> None:
    stand_in.reply_json(provider.text_reply("Hello there.", input_tokens=30, output_tokens=4))
    model = provider.model(stand_in, opened)

    response = await model.request(ask("Hi"))

    assert response.parts == (TextPart("Hello there."),)
    assert response.tool_calls == []
    assert response.stop_reason == provider.stop_reason
    assert response.model_name == f"{provider.name}:{provider.model_id}"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (30, 4)
    assert response.usage.requests == 1
    sent = stand_in.last
    assert (sent.method, sent.path) == ("POST", provider.path)
    assert sent_key(sent.headers) == provider.key
    for header in provider.required_headers:
        assert header in sent.headers
    assert sent.body == provider.request_body
    await model.aclose()


async def test_several_tool_calls_in_one_reply(provider: Provider, opened, stand_in) -> None:
    first, second = provider.call_ids
    calls = [(first, "get_weather", {"city": "Paris"}), (second, "get_weather", {"city": "Oslo"})]
    stand_in.reply_json(provider.calls_reply(provider.call_text, calls))

    response = await provider.model(stand_in, opened).request(ask("Weather in Paris and Oslo?"))

    assert response.stop_reason == provider.calls_stop_reason
    expected = tuple(ToolCallPart(id=i, name=name, arguments=args) for i, name, args in calls)
    if provider.call_text:
        expected = (TextPart(provider.call_text), *expected)
    assert response.parts == expected


@pytest.mark.parametrize(
    ("provider", "status", "error_type", "api_message", "hint"),
    [
        pytest.param(name, *case, id=f"{name}-{case[0]}")
        for name, profile in PROVIDERS.items()
        for case in profile.error_cases
    ],
    indirect=["provider"],
)
async def test_api_errors_become_model_api_errors(
    opened,
    stand_in,
    provider: Provider,
    status: int,
    error_type: str,
    api_message: str,
    hint: str | None,
) -> None:
    stand_in.reply_json(provider.error_reply(error_type, api_message), status=status)

    with pytest.raises(ModelAPIError) as caught:
        await provider.model(stand_in, opened).request(ask())

    error = caught.value
    assert (error.provider, error.status_code, error.api_message) == (
        provider.name,
        status,
        api_message,
    )
    text = str(error)
    assert f"HTTP {status}" in text
    assert error_type in text
    assert api_message in text
    if hint:
        assert hint in text
    assert isinstance(error.__cause__, provider.sdk.APIStatusError)
    assert len(stand_in.requests) == 1, "max_retries=0 must not retry"


async def test_an_unreachable_api_is_a_model_api_error_naming_the_address(
    provider: Provider, opened, dead_url
) -> None:
    model = opened(
        provider.model_class(
            provider.model_id, api_key=provider.key, base_url=dead_url, max_retries=0
        )
    )
    with pytest.raises(ModelAPIError) as caught:
        await model.request(ask())
    assert caught.value.status_code is None
    assert dead_url in str(caught.value)


async def test_streaming_yields_text_deltas_then_the_final_response(
    provider: Provider, opened, stand_in
) -> None:
    stand_in.reply_sse(
        provider.text_stream("Hello from the stream.", input_tokens=40, output_tokens=6, chunk=5)
    )

    deltas, final = await collect(provider.model(stand_in, opened), ask())

    assert deltas == ["Hello", " from", " the ", "strea", "m."]
    assert final.parts == (TextPart("Hello from the stream."),)
    assert final.stop_reason == provider.stop_reason
    assert final.model_name == f"{provider.name}:{provider.model_id}"
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.requests) == (40, 6, 1)
    for name, value in provider.stream_body.items():
        assert stand_in.last.body[name] == value


async def test_a_streaming_request_rejected_up_front_is_a_model_api_error(
    provider: Provider, opened, stand_in
) -> None:
    stand_in.reply_json(provider.error_reply("authentication_error", "bad key"), status=401)
    with pytest.raises(ModelAPIError) as caught:
        await collect(provider.model(stand_in, opened), ask())
    assert caught.value.status_code == 401
    assert caught.value.api_message == "bad key"


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
async def test_provider_kwargs_reach_the_wire(
    provider: Provider, streamed: bool, opened, stand_in
) -> None:
    model = provider.model(stand_in, opened)
    request = ask("Make a deck", **provider.provider_kwargs)
    if streamed:
        stand_in.reply_sse(provider.text_stream("Deck ready."))
        _, response = await collect(model, request)
    else:
        stand_in.reply_json(provider.text_reply("Deck ready."))
        response = await model.request(request)
    assert response.text == "Deck ready."
    provider.kwargs_on_the_wire(stand_in.last)


async def test_the_sdk_environment_variables_are_honoured(
    provider: Provider, opened, stand_in, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(provider.key_env, "sk-from-env")
    monkeypatch.setenv(provider.base_url_env, provider.url(stand_in))
    stand_in.reply_json(provider.text_reply("ok"))

    response = await opened(provider.model_class(provider.model_id, max_retries=0)).request(ask())

    assert response.text == "ok"
    assert sent_key(stand_in.last.headers) == "sk-from-env"


async def test_explicit_options_override_the_environment(
    provider: Provider, opened, stand_in, dead_url, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(provider.key_env, "sk-from-env")
    monkeypatch.setenv(provider.base_url_env, dead_url)
    stand_in.reply_json(provider.text_reply("ok"))

    model = opened(
        provider.model_class(
            provider.model_id, api_key="sk-explicit", base_url=provider.url(stand_in)
        )
    )
    response = await model.request(ask())

    assert response.text == "ok"
    assert sent_key(stand_in.last.headers) == "sk-explicit"


def test_a_missing_key_says_what_to_set(provider: Provider) -> None:
    with pytest.raises(MissingCredentialsError, match=provider.key_env):
        provider.model_class(provider.model_id)


async def test_a_given_client_is_used_as_is(provider: Provider, opened, stand_in) -> None:
    client = provider.client_class(api_key="sk-own", base_url=provider.url(stand_in), max_retries=0)
    stand_in.reply_json(provider.text_reply("ok"))

    model = opened(provider.model_class(provider.model_id, client=client))
    await model.request(ask())
    await model.aclose()

    assert model.client is client
    assert sent_key(stand_in.last.headers) == "sk-own"
    assert not client.is_closed(), "a client we were given is the caller's to close"
    await client.close()


def test_without_the_sdk_the_error_says_what_to_install(
    provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, provider.name, None)
    monkeypatch.delitem(sys.modules, f"doc_processing_toolkit.models.{provider.name}", False)
    with pytest.raises(
        MissingDependencyError,
        match=rf'pip install "doc-processing-toolkit\[{provider.name}\]"',
    ):
        resolve_model(f"{provider.name}:{provider.model_id}", api_key=provider.key)


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_one_model_serves_one_event_loop_after_another(provider: Provider, stand_in) -> None:
    model = provider.model_class(
        provider.model_id, api_key=provider.key, base_url=provider.url(stand_in)
    )
    for turn in range(3):
        stand_in.reply_json(provider.text_reply(f"reply {turn}"))
        assert asyncio.run(model.request(ask())).text == f"reply {turn}"
    asyncio.run(model.aclose())
    del model
    gc.collect()  # the clients of the ended loops go now, warnings and all
