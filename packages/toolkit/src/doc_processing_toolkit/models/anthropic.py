"""`AnthropicModel`: Claude through the official ``anthropic`` SDK's Messages API.

Needs the ``[anthropic]`` extra. The SDK reads its own environment variables
(``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN``, ``ANTHROPIC_BASE_URL``, profiles); an
explicit ``api_key`` or ``base_url`` option wins over them.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ..errors import MissingCredentialsError
from ..messages import (
    Message,
    ModelResponse,
    ProviderPart,
    ReplyPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)
from ._common import RequestExtras, add_request_extras, retry_after_seconds, split_provider_kwargs
from ._sdk import APIFailure, SDKModel
from .base import ModelRequest, TextDelta, ThinkingDelta
from .providers import ANTHROPIC

try:
    import anthropic
except ImportError as exc:
    raise ANTHROPIC.missing_sdk() from exc

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicModel"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 8192
"""Reply length cap sent when none is given; the Messages API requires one."""

_PROVIDER = ANTHROPIC.name


class AnthropicModel(SDKModel[anthropic.AsyncAnthropic]):
    """A Claude model behind Anthropic's Messages API.

    Args:
        model_name: the API's model id, for example ``"claude-sonnet-5"``.
        api_key: the API key; without it the SDK reads ``ANTHROPIC_API_KEY`` (or
            ``ANTHROPIC_AUTH_TOKEN``, or an SDK profile).
        api_key_env: the environment variable to read the API key from, in place of
            ``ANTHROPIC_API_KEY`` (read when the client is made; unset or empty is an error).
        base_url: the API's address; without it the SDK reads ``ANTHROPIC_BASE_URL``,
            then uses Anthropic's own.
        max_tokens: the reply length cap sent with every request (``max_tokens`` in
            ``provider_kwargs`` overrides it per request).
        timeout: seconds per request; None keeps the SDK's default.
        max_retries: retries of connection errors, 408, 409, 429 and 5xx answers.
        client: an ``anthropic.AsyncAnthropic`` to use as is; the options above (other
            than `max_tokens`) are then not used, and `aclose` leaves it open.

    ``provider_kwargs`` of a request are merged into the JSON body unchanged, with three
    exceptions: ``betas`` (a list) is sent as the ``anthropic-beta`` header through the
    SDK's beta client, ``tools`` are appended after the agent's tools (server tools such
    as code execution), and ``extra_headers`` / ``extra_query`` go to the HTTP request.

    Raises:
        MissingDependencyError: the anthropic SDK is not installed (on import).
        MissingCredentialsError: no API key, token or profile could be found.
    """

    _spec = ANTHROPIC
    _sdk_errors = (anthropic.AnthropicError, ValueError)
    _connection_error = anthropic.APIConnectionError

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None = None,
        api_key_env: str | None = None,
        base_url: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout: float | None = None,
        max_retries: int = 2,
        client: anthropic.AsyncAnthropic | None = None,
    ) -> None:
        self._max_tokens = max_tokens
        super().__init__(
            model_name,
            api_key=api_key,
            api_key_env=api_key_env,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            client=client,
        )

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send one Messages API request and return the whole reply.

        Raises:
            ModelAPIError: the API answered with an error or could not be reached.
        """
        client = self._clients.get()
        api, params = self._prepare(client, request)
        with self._worded(client):
            message = await api.create(**params)
        return self._to_response(message)

    async def stream(
        self, request: ModelRequest
    ) -> AsyncIterator[TextDelta | ThinkingDelta | ModelResponse]:
        """Stream one Messages API request: text and thinking deltas as they arrive, then
        the reply.

        Raises:
            ModelAPIError: the API answered with an error, sent an error event or could
                not be reached.
        """
        client = self._clients.get()
        api, params = self._prepare(client, request)
        with self._worded(client):
            async with api.stream(**params) as events:
                async for event in events:
                    if event.type != "content_block_delta":
                        continue
                    delta = event.delta
                    if delta.type == "text_delta" and delta.text:
                        yield TextDelta(delta.text)
                    elif delta.type == "thinking_delta" and delta.thinking:
                        yield ThinkingDelta(delta.thinking)
                message = await events.get_final_message()
        yield self._to_response(message)

    def _prepare(
        self, client: anthropic.AsyncAnthropic, request: ModelRequest
    ) -> tuple[Any, dict[str, Any]]:
        """The SDK resource (plain or beta messages) and the keyword arguments of the call."""
        provider_kwargs = dict(request.provider_kwargs)
        betas = provider_kwargs.pop("betas", None)
        extras: RequestExtras = split_provider_kwargs(provider_kwargs)
        params: dict[str, Any] = {
            "model": self._model_name,
            "max_tokens": self._max_tokens,
            "messages": to_anthropic_messages(request.messages),
        }
        if request.system:
            params["system"] = request.system
        add_request_extras(params, [to_anthropic_tool(spec) for spec in request.tools], extras)
        if betas is None:
            return client.messages, params
        params["betas"] = [betas] if isinstance(betas, str) else list(betas)
        return client.beta.messages, params

    def _to_response(self, message: Any) -> ModelResponse:
        parts: list[ReplyPart] = []
        for block in message.content:
            if block.type == "text":
                parts.append(TextPart(block.text))
            elif block.type == "tool_use":
                parts.append(_tool_call(block.id, block.name, block.input))
            else:
                # thinking, redacted_thinking, server tool blocks...: kept as the API sent
                # them, to go back in their place on the next request.
                parts.append(ProviderPart(_PROVIDER, block.to_dict(mode="json")))
        usage = message.usage
        input_tokens = (
            usage.input_tokens
            + (usage.cache_creation_input_tokens or 0)
            + (usage.cache_read_input_tokens or 0)
        )
        return ModelResponse(
            parts=tuple(parts),
            usage=Usage(input_tokens=input_tokens, output_tokens=usage.output_tokens, requests=1),
            model_name=self.answered_by(message.model),
            stop_reason=message.stop_reason,
        )

    def _api_failure(self, exc: Exception) -> APIFailure | None:
        if not isinstance(exc, anthropic.APIStatusError):
            return None
        return APIFailure(
            status_code=exc.status_code if exc.status_code >= 400 else None,
            api_message=exc.api_message or _body_text(exc.body),
            error_type=exc.type,
            retry_after=retry_after_seconds(exc.response.headers),
        )

    @classmethod
    def _http_client(cls) -> Any:
        return anthropic.DefaultAsyncHttpxClient()

    @classmethod
    def _open_client(cls, options: dict[str, Any]) -> anthropic.AsyncAnthropic:
        try:
            client = anthropic.AsyncAnthropic(**options)
        except anthropic.AnthropicError as exc:
            raise MissingCredentialsError(
                f"the anthropic SDK could not load its credentials: {exc}"
            ) from exc
        has_credentials = (
            client.api_key is not None
            or client.auth_token is not None
            or getattr(client, "credentials", None) is not None
        )
        if not has_credentials:
            raise MissingCredentialsError(
                "no Anthropic API key: set the environment variable ANTHROPIC_API_KEY, or "
                "name the variable that holds the key in model_options.api_key_env."
            )
        logger.debug("anthropic: client for %s", client.base_url)
        return client


def _body_text(body: object) -> str | None:
    return None if body is None else str(body)


def _tool_call(call_id: str, name: str, arguments: object) -> ToolCallPart:
    if isinstance(arguments, dict):
        return ToolCallPart(id=call_id, name=name, arguments=dict(arguments))
    return ToolCallPart(
        id=call_id,
        name=name,
        arguments={"_raw": repr(arguments)},
        arguments_error=f"tool input is not a JSON object: {arguments!r}",
    )


def to_anthropic_tool(spec: ToolSpec) -> dict[str, Any]:
    """A `ToolSpec` as a Messages API tool definition."""
    return {"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}


def to_anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages as Messages API turns.

    Tool results go first in their user turn (the API asks for that), each one a
    ``tool_result`` block with ``is_error`` when the tool failed. Blocks kept from earlier
    Anthropic replies (`ProviderPart`, such as thinking) go back unchanged and in their
    place; another provider's are left out. Empty text is left out, and so is a turn left
    with nothing (the API joins the turns around it).
    """
    turns: list[dict[str, Any]] = []
    for message in messages:
        results: list[dict[str, Any]] = []
        blocks: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                if part.text:
                    blocks.append({"type": "text", "text": part.text})
            elif isinstance(part, ToolCallPart):
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": part.id,
                        "name": part.name,
                        "input": part.arguments,
                    }
                )
            elif isinstance(part, ToolResultPart):
                result: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": part.call_id,
                    "content": part.content,
                }
                if part.is_error:
                    result["is_error"] = True
                results.append(result)
            elif isinstance(part, ProviderPart) and part.provider == _PROVIDER:
                blocks.append(dict(part.data))
        if results or blocks:
            turns.append({"role": message.role, "content": results + blocks})
    return turns
