"""The base adapter of the providers behind an official SDK client: one client per event
loop (`LoopClients`), the client built from the model's options, and every error the SDK
raises worded as a `ModelError` (`SDKModel`).

A provider module subclasses `SDKModel` and fills in what differs: its SDK's default HTTP
client, how a client is made from its options and checked for credentials, which SDK
errors are answers of the API, and the request itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, NamedTuple, Protocol, TypeVar

from ..errors import ModelError
from ._common import api_error, client_options, connection_error, key_from_environment
from .providers import Provider

__all__ = ["APIFailure", "ClientSettings", "LoopClients", "SDKModel"]

C = TypeVar("C")


class _SDKClient(Protocol):
    @property
    def base_url(self) -> Any: ...

    async def close(self) -> None: ...


SDKClient = TypeVar("SDKClient", bound=_SDKClient)


class LoopClients(Generic[C]):
    """The SDK client to use in the running event loop.

    An SDK client pools its connections, and a pooled connection belongs to the event loop
    that opened it: reused from another loop (a second ``asyncio.run``) it fails with
    "Event loop is closed". So the first client serves the first loop that uses it, and
    each further asyncio loop gets a client of its own from `factory`. A client given by
    the caller (`factory` None) is always used as is.
    """

    def __init__(self, first: C, factory: Callable[[], C] | None) -> None:
        self._first: C | None = first
        self._latest = first
        self._factory = factory
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, C] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def latest(self) -> C:
        """The client handed out last (the first one before any request)."""
        return self._latest

    def get(self) -> C:
        """The client for the running event loop."""
        if self._factory is None:
            return self._latest
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio (trio): one client for the model's life
            return self._latest
        client = self._by_loop.get(loop)
        if client is None:
            if self._first is not None:
                client, self._first = self._first, None
            else:
                client = self._factory()
            self._by_loop[loop] = client
        self._latest = client
        return client

    def release(self) -> C | None:
        """Forget the running loop's client (or the unused first one) and return it, for
        the caller to close; None when the client was given by the caller."""
        if self._factory is None:
            return None
        if self._first is not None:
            client, self._first = self._first, None
            return client
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self._latest
        return self._by_loop.pop(loop, None)


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """The model options a new SDK client is made from (see `SDKModel`)."""

    api_key: str | None
    api_key_env: str | None
    base_url: str | None
    timeout: float | None
    max_retries: int


class APIFailure(NamedTuple):
    """What an SDK error says the API answered: its status (None for an error sent inside
    a stream that had begun well), message, error type and the wait it asked for."""

    status_code: int | None
    api_message: str | None
    error_type: str | None
    retry_after: float | None


class SDKModel(Generic[SDKClient]):
    """A model behind an SDK client: its name, its model id, one client per event loop
    (see `LoopClients`) and the wording of the SDK's errors.

    Args:
        model_name: the API's model id.
        api_key: the API key; without it the SDK reads its own environment variable.
        api_key_env: the environment variable to read the API key from, in place of the
            SDK's own (read when the client is made; unset or empty is an error).
        base_url: the API's address; without it the SDK reads its environment, then uses
            the provider's own.
        timeout: seconds per request; None keeps the SDK's default.
        max_retries: retries of connection errors, 408, 409, 429 and 5xx answers.
        client: an SDK client to use as is; the options above are then not used, and
            `aclose` leaves it open.

    A subclass sets the class attributes `_spec` (its entry of `providers.PROVIDERS`:
    name, label, API key variable), `_sdk_errors` and `_connection_error`, and the hooks
    `_http_client`, `_open_client` and `_api_failure`.
    """

    _spec: ClassVar[Provider]
    """The provider's entry in `providers.PROVIDERS`."""
    _sdk_errors: ClassVar[tuple[type[Exception], ...]]
    """What the SDK raises for a request that failed."""
    _connection_error: ClassVar[type[Exception]]
    """What the SDK raises for a request that got no answer (refused, timed out)."""

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None = None,
        api_key_env: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_retries: int = 2,
        client: SDKClient | None = None,
    ) -> None:
        self._model_name = model_name
        self._key_env = api_key_env or self._spec.key_env
        if client is None:
            settings = ClientSettings(api_key, api_key_env, base_url, timeout, max_retries)
            # Bound to the class, not to the model: the clients do not keep the model alive.
            factory = functools.partial(type(self)._new_client, settings)
            self._clients = LoopClients(factory(), factory)
        else:
            self._clients = LoopClients(client, None)

    @property
    def name(self) -> str:
        """``<provider>:<model>``, for example ``anthropic:<model>`` or ``openai:<model>``."""
        return f"{self._spec.name}:{self._model_name}"

    def answered_by(self, api_model: str | None) -> str:
        """``<provider>:<model>`` for a reply, with the model id the API reported (the
        requested one when it reported none), so every provider names it the same way."""
        return f"{self._spec.name}:{api_model or self._model_name}"

    @property
    def model_name(self) -> str:
        """The model id sent to the API (or the OpenAI-compatible server)."""
        return self._model_name

    @property
    def client(self) -> SDKClient:
        """The SDK client this model sends its requests through (the one of the event loop
        that used it last: each event loop gets its own unless the client was given)."""
        return self._clients.latest

    async def aclose(self) -> None:
        """Close the running event loop's SDK client, unless the client was given to us."""
        client = self._clients.release()
        if client is not None:
            await client.close()

    @classmethod
    def _new_client(cls, settings: ClientSettings) -> SDKClient:
        api_key = key_from_environment(
            cls._spec.label,
            api_key=settings.api_key,
            api_key_env=settings.api_key_env,
            default_env=cls._spec.key_env,
        )
        # The SDK's default HTTP client closes itself from __del__ by scheduling a task on
        # the running loop, which fails for a client whose loop has ended (see LoopClients).
        options = client_options(
            cls._http_client(),
            api_key=api_key,
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
        )
        return cls._open_client(options)

    @classmethod
    def _http_client(cls) -> Any:
        """A new HTTP client of the SDK's default kind."""
        raise NotImplementedError

    @classmethod
    def _open_client(cls, options: dict[str, Any]) -> SDKClient:
        """The SDK client made with `options` (see `client_options`).

        Raises:
            MissingCredentialsError: the client has no credentials to send.
        """
        raise NotImplementedError

    def _api_failure(self, exc: Exception) -> APIFailure | None:
        """What `exc` says the API answered, None for an error that is not an answer."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _worded(self, client: SDKClient) -> Iterator[None]:
        """Raise what the SDK raises within as a `ModelError` (see `_translate_error`)."""
        try:
            yield
        except self._sdk_errors as exc:
            raise self._translate_error(client, exc) from exc

    def _translate_error(self, client: SDKClient, exc: Exception) -> ModelError:
        if isinstance(exc, self._connection_error):
            reason = getattr(exc, "message", str(exc))
            return connection_error(self._spec.name, str(client.base_url), reason)
        failure = self._api_failure(exc)
        if failure is not None:
            return api_error(
                self._spec.name,
                status_code=failure.status_code,
                api_message=failure.api_message,
                error_type=failure.error_type,
                key_env=self._key_env,
                retry_after=failure.retry_after,
            )
        return ModelError(f"{self._spec.name} request failed: {exc}")
