"""The API key from a variable of the user's choosing (``api_key_env``), replies named
``provider:model`` by every provider, and error hints that name configuration keys and
environment variables. Real SDK clients against the local stand-ins."""

from __future__ import annotations

from typing import Any

import pytest

from doc_processing_toolkit import Agent
from doc_processing_toolkit.errors import ConfigError, MissingCredentialsError, ModelAPIError
from doc_processing_toolkit.messages import Message
from doc_processing_toolkit.models import ModelRequest, resolve_model

from .conftest import AnthropicWire, OpenAIWire, StandIn

pytestmark = pytest.mark.anyio


def ask() -> ModelRequest:
    return ModelRequest(system=None, messages=[Message.user("hi")], tools=[], provider_kwargs={})


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_the_key_is_read_from_the_variable_api_key_env_names(
    provider: str,
    stand_in: StandIn,
    opened: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEAM_GATEWAY_KEY", "key-from-the-team-variable")
    monkeypatch.setenv(f"{provider.upper()}_API_KEY", "the-default-variable")
    if provider == "anthropic":
        stand_in.reply_json(AnthropicWire.message([AnthropicWire.text("ok")]))
        base_url = stand_in.url
    else:
        stand_in.reply_json(OpenAIWire.completion("ok"))
        base_url = f"{stand_in.url}/v1"
    model = opened(
        resolve_model(
            f"{provider}:some-model",
            api_key_env="TEAM_GATEWAY_KEY",
            base_url=base_url,
            max_retries=0,
        )
    )

    response = await model.request(ask())

    headers = stand_in.last.headers
    sent = headers.get("x-api-key") or headers["authorization"].removeprefix("Bearer ")
    assert sent == "key-from-the-team-variable"
    assert response.text == "ok"


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_an_unset_api_key_env_is_an_error_naming_the_variable_and_the_key(
    provider: str, stand_in: StandIn
) -> None:
    with pytest.raises(MissingCredentialsError) as raised:
        resolve_model(f"{provider}:m", api_key_env="NOT_SET_ANYWHERE", base_url=stand_in.url)
    message = str(raised.value)
    assert "NOT_SET_ANYWHERE" in message
    assert "model_options.api_key_env" in message
    assert "api_key=" not in message


def test_api_key_and_api_key_env_together_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"api_key or model_options\.api_key_env, not both"):
        resolve_model("openai:m", api_key="k", api_key_env="SOME_VAR")


@pytest.mark.parametrize(
    ("model", "variable"),
    [("anthropic:claude-x", "ANTHROPIC_API_KEY"), ("openai:gpt-x", "OPENAI_API_KEY")],
)
def test_a_missing_key_names_the_variable_and_the_yaml_key_not_a_python_argument(
    model: str, variable: str
) -> None:
    with pytest.raises(MissingCredentialsError) as raised:
        resolve_model(model)
    message = str(raised.value)
    assert variable in message
    assert "model_options.api_key_env" in message
    assert "api_key=" not in message and "base_url=" not in message


async def test_error_hints_name_configuration_keys(
    stand_in: StandIn, opened: Any, dead_url: str
) -> None:
    stand_in.reply_json(OpenAIWire.error("no such model", "invalid_request_error"), status=404)
    model = opened(
        resolve_model("openai:m", api_key="k", base_url=f"{stand_in.url}/v1", max_retries=0)
    )
    with pytest.raises(ModelAPIError) as raised:
        await model.request(ask())
    assert "model_options.base_url" in str(raised.value)

    unreachable = opened(resolve_model("openai:m", api_key="k", base_url=dead_url, max_retries=0))
    with pytest.raises(ModelAPIError) as raised:
        await unreachable.request(ask())
    assert "model_options.base_url and model_options.timeout" in str(raised.value)


@pytest.mark.parametrize("stream", [False, True])
async def test_every_provider_names_the_answering_model_as_provider_colon_model(
    stand_in: StandIn, opened: Any, stream: bool
) -> None:
    """The run result names the model the same way for anthropic, openai and test."""
    if stream:
        stand_in.reply_sse(AnthropicWire.stream([AnthropicWire.text("a")], model="claude-x-1"))
        stand_in.reply_sse(OpenAIWire.stream("b", model="gpt-x-1"))
    else:
        stand_in.reply_json(AnthropicWire.message([AnthropicWire.text("a")], model="claude-x-1"))
        stand_in.reply_json(OpenAIWire.completion("b", model="gpt-x-1"))
    names = []
    for spec, base_url in (
        ("anthropic:claude-x", stand_in.url),
        ("openai:gpt-x", f"{stand_in.url}/v1"),
        ("test:demo", None),
    ):
        options = {} if base_url is None else {"api_key": "k", "base_url": base_url}
        async with Agent(spec, model_options=options) as agent:
            if stream:
                events = [event async for event in agent.run_stream("hi")]
                result = events[-1].result  # type: ignore[union-attr]
            else:
                result = await agent.run("hi")
        names.append(result.model_name)
    assert names == ["anthropic:claude-x-1", "openai:gpt-x-1", "test:demo"]
