"""Pieces the real providers share: splitting provider_kwargs and wording API errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ModelAPIError

__all__ = ["RequestExtras", "api_error", "connection_error", "split_provider_kwargs"]

_STATUS_HINTS = {
    401: "the API key was rejected; check {key_env} or the api_key option",
    403: "the API key is not allowed to do this; check its permissions",
    404: "the model or endpoint was not found; check the model name and base_url",
    429: "rate limited or out of quota; wait and retry, or raise max_retries",
}


@dataclass(slots=True)
class RequestExtras:
    """`provider_kwargs` sorted by where they go in the SDK call.

    `body` is merged into the JSON body as is (the SDK's ``extra_body``); `tools` are added
    after the agent's own tools; `headers` and `query` are the SDK's ``extra_headers`` and
    ``extra_query``.
    """

    body: dict[str, Any] = field(default_factory=dict)
    tools: list[Any] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)


def split_provider_kwargs(provider_kwargs: Mapping[str, Any]) -> RequestExtras:
    """Sort `provider_kwargs`: ``tools``, ``extra_headers`` and ``extra_query`` apart, the
    rest into the body unchanged."""
    extras = RequestExtras()
    for key, value in provider_kwargs.items():
        if key == "tools":
            extras.tools = list(value)
        elif key == "extra_headers":
            extras.headers.update(value)
        elif key == "extra_query":
            extras.query.update(value)
        elif key == "extra_body":
            extras.body.update(value)
        else:
            extras.body[key] = value
    return extras


def api_error(
    provider: str,
    *,
    status_code: int | None,
    api_message: str | None,
    error_type: str | None,
    key_env: str,
) -> ModelAPIError:
    """A `ModelAPIError` for an error status, or (`status_code` None) for an error the
    API sent inside a stream that had begun well."""
    kind = f", {error_type}" if error_type else ""
    where = "error event in the stream" if status_code is None else f"HTTP {status_code}"
    text = f"{provider} API error ({where}{kind}): {api_message or 'no message'}"
    hint = _STATUS_HINTS.get(status_code) if status_code is not None else None
    if hint is None and (status_code is None or status_code >= 500):
        hint = "the provider failed on its side; retry later, or raise max_retries"
    if hint:
        text += f" ({hint.format(key_env=key_env)})"
    return ModelAPIError(text, provider=provider, status_code=status_code, api_message=api_message)


def connection_error(provider: str, base_url: str, reason: str) -> ModelAPIError:
    """A `ModelAPIError` for a request that got no answer (refused, timed out)."""
    return ModelAPIError(
        f"could not reach the {provider} API at {base_url}: {reason} "
        "(check the network, base_url and timeout)",
        provider=provider,
    )
