"""Pieces the real providers share: splitting provider_kwargs, the options of an SDK
client, finding the API key, and wording API errors (the base adapter built on them is
`_sdk.SDKModel`)."""

from __future__ import annotations

import email.utils
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError, MissingCredentialsError, ModelAPIError

__all__ = [
    "RequestExtras",
    "add_request_extras",
    "api_error",
    "client_options",
    "connection_error",
    "key_from_environment",
    "retry_after_seconds",
    "split_provider_kwargs",
]

_STATUS_HINTS = {
    401: "the API key was rejected; check {key_env}",
    403: "the API key is not allowed to do this; check its permissions",
    404: "the model or endpoint was not found; check the model name and model_options.base_url",
    429: "rate limited or out of quota; wait and retry, or raise model_options.max_retries",
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


def add_request_extras(
    params: dict[str, Any], agent_tools: list[Any], extras: RequestExtras
) -> None:
    """Put into an SDK call's `params` the agent's tools followed by ``extras.tools``, and
    the extra body, headers and query, each only when not empty."""
    tools = [*agent_tools, *extras.tools]
    if tools:
        params["tools"] = tools
    if extras.body:
        params["extra_body"] = extras.body
    if extras.headers:
        params["extra_headers"] = extras.headers
    if extras.query:
        params["extra_query"] = extras.query


def client_options(
    http_client: Any,
    *,
    api_key: str | None,
    base_url: str | None,
    timeout: float | None,
    max_retries: int,
) -> dict[str, Any]:
    """The keyword arguments of an SDK client: `max_retries` and `http_client`, and each of
    `api_key`, `base_url` and `timeout` that is set (the SDK's own default otherwise)."""
    options: dict[str, Any] = {"max_retries": max_retries, "http_client": http_client}
    if api_key is not None:
        options["api_key"] = api_key
    if base_url is not None:
        options["base_url"] = base_url
    if timeout is not None:
        options["timeout"] = timeout
    return options


def api_error(
    provider: str,
    *,
    status_code: int | None,
    api_message: str | None,
    error_type: str | None,
    key_env: str,
    retry_after: float | None = None,
) -> ModelAPIError:
    """A `ModelAPIError` for an error status, or (`status_code` None) for an error the
    API sent inside a stream that had begun well; `retry_after` is the wait the API asked
    for (see `retry_after_seconds`)."""
    kind = f", {error_type}" if error_type else ""
    where = "error event in the stream" if status_code is None else f"HTTP {status_code}"
    text = f"{provider} API error ({where}{kind}): {api_message or 'no message'}"
    hint = _STATUS_HINTS.get(status_code) if status_code is not None else None
    if hint is None and (status_code is None or status_code >= 500):
        hint = "the provider failed on its side; retry later, or raise model_options.max_retries"
    if hint:
        text += f" ({hint.format(key_env=key_env)})"
    return ModelAPIError(
        text,
        provider=provider,
        status_code=status_code,
        api_message=api_message,
        retry_after=retry_after,
    )


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The wait an error response asks for: ``retry-after-ms`` (milliseconds, sent by both
    providers), else ``Retry-After`` as seconds or as an HTTP date; None when absent or
    unreadable.

    The SDKs read the same headers for their own retries; this is for what comes after
    them (a batch that retries the item once the SDK has given up).
    """
    if headers is None:
        return None
    wait: float | None = None
    raw_ms = headers.get("retry-after-ms")
    raw = headers.get("retry-after")
    try:
        if raw_ms is not None:
            wait = float(raw_ms) / 1000
        elif raw is not None:
            wait = float(raw)
    except ValueError:
        wait = None
    if wait is None and raw is not None:
        parsed = email.utils.parsedate_tz(raw)
        if parsed is not None:
            wait = email.utils.mktime_tz(parsed) - time.time()
    if wait is None or not math.isfinite(wait):
        return None
    return max(0.0, wait)


def connection_error(provider: str, base_url: str, reason: str) -> ModelAPIError:
    """A `ModelAPIError` for a request that got no answer (refused, timed out)."""
    return ModelAPIError(
        f"could not reach the {provider} API at {base_url}: {reason} "
        "(check the network, model_options.base_url and model_options.timeout)",
        provider=provider,
    )


def key_from_environment(
    provider: str, *, api_key: str | None, api_key_env: str | None, default_env: str
) -> str | None:
    """The API key to give the SDK: `api_key`, else the value of the environment variable
    `api_key_env` names; None when neither is given (the SDK then reads `default_env`).

    Raises:
        ConfigError: both `api_key` and `api_key_env` are given.
        MissingCredentialsError: the variable `api_key_env` names is unset or empty.
    """
    if api_key_env is None:
        return api_key
    if api_key is not None:
        raise ConfigError(
            "give model_options.api_key or model_options.api_key_env, not both "
            f"(api_key_env names {api_key_env})."
        )
    value = os.environ.get(api_key_env, "").strip()
    if not value:
        raise MissingCredentialsError(
            f"no {provider} API key: the environment variable {api_key_env} "
            f"(named by model_options.api_key_env in place of {default_env}) is not set."
        )
    return value
