"""`OpenAIModel`: the official ``openai`` SDK's Chat Completions API.

Works with OpenAI and with any server that speaks Chat Completions (Ollama, vLLM, LM Studio,
gateways) through ``base_url``. Needs the ``[openai]`` extra. The SDK reads its own
environment variables (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``OPENAI_ORG_ID``, ...); an
explicit ``api_key`` or ``base_url`` option wins over them.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import MissingCredentialsError, ModelError
from ..messages import (
    Message,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)
from ._common import add_request_extras, retry_after_seconds, split_provider_kwargs
from ._sdk import APIFailure, SDKModel
from .base import ModelRequest, TextDelta
from .providers import OPENAI

try:
    import openai
except ImportError as exc:
    raise OPENAI.missing_sdk() from exc

__all__ = ["KEYLESS_API_KEY", "OpenAIModel", "parse_tool_arguments"]

logger = logging.getLogger(__name__)

KEYLESS_API_KEY = "no-key"
"""Sent as the API key to a server given by base_url when no key is set anywhere."""

_PROVIDER = OPENAI.name
_ERROR_PREFIX = "Error: "


class OpenAIModel(SDKModel[openai.AsyncOpenAI]):
    """A chat model behind the Chat Completions API (OpenAI or a compatible server).

    Args:
        model_name: the server's model id, for example ``"gpt-5"`` or ``"llama3.1"``.
        api_key: the API key; without it the SDK reads ``OPENAI_API_KEY``.
        api_key_env: the environment variable to read the API key from, in place of
            ``OPENAI_API_KEY`` (read when the client is made; unset or empty is an error).
        base_url: the API's address, for example ``"http://localhost:11434/v1"`` for
            Ollama; without it the SDK reads ``OPENAI_BASE_URL``, then uses OpenAI's own.
        timeout: seconds per request; None keeps the SDK's default.
        max_retries: retries of connection errors, 408, 409, 429 and 5xx answers.
        client: an ``openai.AsyncOpenAI`` to use as is; the options above are then not
            used, and `aclose` leaves it open.

    A local server usually needs no key: when a base URL is set (option or
    ``OPENAI_BASE_URL``) and no key is (option or ``OPENAI_API_KEY``), the placeholder
    `KEYLESS_API_KEY` is sent. Without a base URL a key is required.

    ``provider_kwargs`` of a request are merged into the JSON body unchanged (for example
    ``temperature``, ``max_completion_tokens``, ``reasoning_effort``), except ``tools``,
    appended after the agent's tools, and ``extra_headers`` / ``extra_query``, which go to
    the HTTP request.

    Tool arguments that are not a JSON object (models do produce broken JSON) do not raise:
    the call comes back as a `ToolCallPart` whose `arguments` are ``{"_raw": <text>}`` and
    whose `arguments_error` says what is wrong, for the agent loop to answer with an error
    result. Tool results marked ``is_error`` are sent as ``role: "tool"`` messages whose
    content starts with ``"Error: "``, since Chat Completions has no error flag.

    Raises:
        MissingDependencyError: the openai SDK is not installed (on import).
        MissingCredentialsError: no API key and no base URL.
    """

    _spec = OPENAI
    _sdk_errors = (openai.OpenAIError,)
    _connection_error = openai.APIConnectionError

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send one Chat Completions request and return the whole reply.

        Raises:
            ModelAPIError: the server answered with an error or could not be reached.
        """
        client = self._clients.get()
        params = self._params(request)
        with self._worded(client):
            completion = await client.chat.completions.create(**params)
        if not completion.choices:
            raise ModelError(f"{self.name}: the server's reply holds no choices")
        choice = completion.choices[0]
        message = choice.message
        parts: list[TextPart | ToolCallPart] = []
        text = message.content or message.refusal
        if text:
            parts.append(TextPart(text))
        for call in message.tool_calls or []:
            if call.type == "function":
                parts.append(_tool_call(call.id, call.function.name, call.function.arguments))
            else:
                parts.append(_unsupported_call(call.id, call.custom.name, call.custom.input))
        usage = completion.usage
        return ModelResponse(
            parts=tuple(parts),
            usage=Usage(
                input_tokens=usage.prompt_tokens if usage else 0,
                output_tokens=usage.completion_tokens if usage else 0,
                requests=1,
            ),
            model_name=self.answered_by(completion.model),
            stop_reason=choice.finish_reason,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[TextDelta | ModelResponse]:
        """Stream one Chat Completions request: text deltas as they arrive, then the reply.

        Usage is asked for with ``stream_options: {"include_usage": true}``.

        Raises:
            ModelAPIError: the server answered with an error, sent one inside the stream,
                or could not be reached.
        """
        client = self._clients.get()
        params = self._params(request)
        params["stream"] = True
        params["stream_options"] = {"include_usage": True}
        reply = _StreamedReply()
        with self._worded(client):
            chunks = await client.chat.completions.create(**params)
            async with chunks:
                async for chunk in chunks:
                    text = reply.add(chunk)
                    if text:
                        yield TextDelta(text)
        yield reply.response(self.answered_by(reply.model))

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        extras = split_provider_kwargs(request.provider_kwargs)
        params: dict[str, Any] = {
            "model": self._model_name,
            "messages": to_openai_messages(request.system, request.messages),
        }
        add_request_extras(params, [to_openai_tool(spec) for spec in request.tools], extras)
        return params

    def _api_failure(self, exc: Exception) -> APIFailure | None:
        if not isinstance(exc, openai.APIError):
            return None
        status, retry_after = None, None
        if isinstance(exc, openai.APIStatusError):
            status, retry_after = exc.status_code, retry_after_seconds(exc.response.headers)
        return APIFailure(status, _api_message(exc), exc.type or exc.code, retry_after)

    @classmethod
    def _http_client(cls) -> Any:
        return openai.DefaultAsyncHttpxClient()

    @classmethod
    def _open_client(cls, options: dict[str, Any]) -> openai.AsyncOpenAI:
        has_key = bool(options.get("api_key") or os.environ.get(OPENAI.key_env))
        base_url = options.get("base_url")
        if not has_key:
            if not (base_url or os.environ.get(OPENAI.base_url_env)):
                raise MissingCredentialsError(
                    "no OpenAI API key: set the environment variable OPENAI_API_KEY, or name "
                    "the variable that holds the key in model_options.api_key_env; a local "
                    "OpenAI-compatible server that needs no key needs only its address, in "
                    "model_options.base_url or OPENAI_BASE_URL."
                )
            logger.debug("openai: no API key set; sending a placeholder to %s", base_url)
            options["api_key"] = KEYLESS_API_KEY
        try:
            return openai.AsyncOpenAI(**options)
        except openai.OpenAIError as exc:
            raise MissingCredentialsError(f"the openai SDK refused its settings: {exc}") from exc


@dataclass
class _CallSlot:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _StreamedReply:
    """Chat Completions chunks put back together."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _CallSlot] = field(default_factory=dict)
    finish_reason: str | None = None
    model: str = ""
    usage: Usage = field(default_factory=lambda: Usage(requests=1))

    def add(self, chunk: Any) -> str:
        """Take in one chunk; return its text."""
        self.model = chunk.model or self.model
        if chunk.usage is not None:
            self.usage.input_tokens = chunk.usage.prompt_tokens
            self.usage.output_tokens = chunk.usage.completion_tokens
        if not chunk.choices:
            return ""
        choice = chunk.choices[0]
        self.finish_reason = choice.finish_reason or self.finish_reason
        delta = choice.delta
        for piece in delta.tool_calls or []:
            slot = self.calls.setdefault(piece.index, _CallSlot())
            slot.id = piece.id or slot.id
            if piece.function is not None:
                slot.name = slot.name or piece.function.name or ""
                slot.arguments.append(piece.function.arguments or "")
        text: str = delta.content or ""
        if text:
            self.text.append(text)
        return text

    def response(self, model_name: str) -> ModelResponse:
        """The whole reply, answered by `model_name` (``provider:model``)."""
        parts: list[TextPart | ToolCallPart] = []
        text = "".join(self.text)
        if text:
            parts.append(TextPart(text))
        for index in sorted(self.calls):
            slot = self.calls[index]
            parts.append(_tool_call(slot.id, slot.name, "".join(slot.arguments)))
        return ModelResponse(
            parts=tuple(parts),
            usage=self.usage,
            model_name=model_name,
            stop_reason=self.finish_reason,
        )


def _api_message(exc: openai.APIError) -> str | None:
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str):
            return message
    if isinstance(body, str) and body:
        return body
    return exc.message


def parse_tool_arguments(raw: str | None) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments as the model sent them -> (arguments, problem).

    Empty text is no arguments. Text that is not a JSON object gives
    ``({"_raw": raw}, <what is wrong>)``; it never raises.
    """
    if raw is None or not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {"_raw": raw}, f"the tool arguments are not valid JSON ({exc}): {raw[:200]}"
    if not isinstance(value, dict):
        kind = type(value).__name__
        return {"_raw": raw}, f"the tool arguments must be a JSON object, not {kind}: {raw[:200]}"
    return value, None


def _tool_call(call_id: str, name: str, raw_arguments: str | None) -> ToolCallPart:
    arguments, problem = parse_tool_arguments(raw_arguments)
    if problem:
        logger.info("openai: tool call %s to %s has unusable arguments", call_id, name)
    return ToolCallPart(id=call_id, name=name, arguments=arguments, arguments_error=problem)


def _unsupported_call(call_id: str, name: str, text: str) -> ToolCallPart:
    return ToolCallPart(
        id=call_id,
        name=name,
        arguments={"_raw": text},
        arguments_error="custom (free-text) tool calls are not supported; use function tools",
    )


def to_openai_tool(spec: ToolSpec) -> dict[str, Any]:
    """A `ToolSpec` as a Chat Completions function tool."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.input_schema,
        },
    }


def _arguments_text(part: ToolCallPart) -> str:
    raw = part.arguments.get("_raw")
    if part.arguments_error is not None and isinstance(raw, str):
        return raw
    return json.dumps(part.arguments)


def to_openai_messages(system: str | None, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The system prompt and messages as Chat Completions messages.

    A user message's tool results become ``role: "tool"`` messages, placed before its
    text (they must follow the assistant message that asked for them). A tool call whose
    arguments were unusable is sent back with the text the model wrote.
    """
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        texts = [p.text for p in message.parts if isinstance(p, TextPart)]
        if message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
            calls = [
                {
                    "id": part.id,
                    "type": "function",
                    "function": {"name": part.name, "arguments": _arguments_text(part)},
                }
                for part in message.tool_calls
            ]
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
            continue
        results = [p for p in message.parts if isinstance(p, ToolResultPart)]
        for result in results:
            content = _ERROR_PREFIX + result.content if result.is_error else result.content
            out.append({"role": "tool", "tool_call_id": result.call_id, "content": content})
        if texts or not results:
            out.append({"role": "user", "content": "\n\n".join(texts)})
    return out
