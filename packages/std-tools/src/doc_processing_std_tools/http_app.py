"""The HTTP side of serving: bearer tokens and the streamable HTTP app.

- `http_auth` turns the authentication settings into the SDK's resource-server pieces: a
  `TokenVerifier` over `auth.make_checker` and `AuthSettings` (protected resource metadata
  for JWTs, ``401`` with ``WWW-Authenticate`` for a missing or bad token).
- `http_app` is the streamable HTTP app (stateless) with a request-body limit derived from
  DPTTOOLS_MAX_FILE_SIZE_MB; a larger body is answered with a JSON-RPC error naming it.
  On a loopback address, in any spelling (`config.loopback_host`), the Host and Origin
  checks against DNS rebinding are on; `is_loopback` (no authentication needed) is decided
  from the same answer, so the two can never disagree.

What a token may do once it is through (scopes, the tool allow-list) is `scoped_server`'s
and `access`'s; the token checks themselves live in `auth`.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Final

import anyio.to_thread
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from .config import AuthConfig, loopback_host
from .errors import AuthenticationError, ConfigError

if TYPE_CHECKING:
    from .auth import TokenChecker

__all__ = [
    "http_app",
    "http_auth",
    "is_loopback",
    "request_body_limit",
    "transport_security",
]

logger = logging.getLogger(__name__)

_MIB: Final = 1024 * 1024
_JSON_ESCAPE_FACTOR: Final = 6
"""A byte of content can take up to six bytes in a JSON body (a control character as
``\\u0001``), so the body limit is six times the file limit, plus room for the rest."""
_ENVELOPE_BYTES: Final = _MIB
_DRAIN_FACTOR: Final = 4
"""A refused body is read and dropped up to this many times the limit, no further."""
_WILDCARD_HOSTS: Final = ("", "0.0.0.0", "::")


class _Verifier(TokenVerifier):
    """The SDK's token-verifier interface over one of our `TokenChecker`s."""

    def __init__(self, checker: TokenChecker) -> None:
        self._checker = checker

    async def verify_token(self, token: str) -> AccessToken | None:
        """An `AccessToken` for a valid token; None (so a 401) for anything else."""
        try:
            # A JWKS may have to be fetched: keep the event loop free meanwhile.
            grant = await anyio.to_thread.run_sync(self._checker.check, token)
        except AuthenticationError as exc:
            logger.info("bearer token refused: %s", exc)
            return None
        return AccessToken(
            token=token,
            client_id=grant.client_id,
            scopes=sorted(grant.scopes),
            expires_at=grant.expires_at,
            subject=grant.subject,
            claims=None if grant.issuer is None else {"iss": grant.issuer},
        )


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only (127.0.0.0/8, ::1, localhost, in
    any spelling; see `config.loopback_host`)."""
    return loopback_host(host) is not None


#: The loopback names every loopback server answers to, as a Host header writes them.
_LOOPBACK_AUTHORITIES: Final = ("127.0.0.1", "localhost", "[::1]")


def transport_security(host: str) -> TransportSecuritySettings:
    """The SDK's Host and Origin checks for a server bound to `host`.

    On a loopback address, however it is spelt (``127.0.0.2``, ``LOCALHOST``,
    ``0:0:0:0:0:0:0:1``), a request must name a loopback host in ``Host`` (else 421) and,
    when it has an ``Origin``, a loopback origin (else 403): a web page whose name was
    rebound to 127.0.0.1 cannot reach the server. Elsewhere the checks are off; such a
    server needs authentication (or a proxy that authenticates) instead.
    """
    canonical = loopback_host(host)
    if canonical is None:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    own = f"[{canonical}]" if ":" in canonical else canonical
    authorities = list(dict.fromkeys((*_LOOPBACK_AUTHORITIES, own)))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{authority}:*" for authority in authorities],
        allowed_origins=[f"http://{authority}:*" for authority in authorities],
    )


def _resource_url(config: AuthConfig, host: str, port: int, path: str) -> str:
    if config.resource_url is not None:
        return config.resource_url
    if host in _WILDCARD_HOSTS:
        raise ConfigError(
            f"the server listens on every address ({host or '*'}), so it cannot tell the URL "
            "clients use; set DPTTOOLS_AUTH_RESOURCE_URL (or --auth-resource-url) to it, "
            "such as https://documents.example.com/mcp."
        )
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


def http_auth(
    config: AuthConfig, *, host: str, port: int, path: str
) -> tuple[TokenVerifier, AuthSettings] | None:
    """The SDK's token verifier and auth settings for `config`, or None when it is off.

    With JWTs the server is an OAuth 2.1 resource server: it publishes protected resource
    metadata naming the issuer as its authorization server, and JWTs must carry the
    audience (DPTTOOLS_AUTH_AUDIENCE, else the resource URL). With a token file there is
    no authorization server to name, so no metadata is published.

    Raises:
        ConfigError: a key or token file is unusable, or the resource URL is unknown.
    """
    if not config.enabled:
        return None
    from .auth import make_checker  # PyJWT is imported only when tokens are checked

    resource = _resource_url(config, host, port, path)
    checker = make_checker(config, audience=config.audience or resource)
    assert checker is not None  # config.enabled
    if config.uses_jwt:
        assert config.issuer is not None
        settings = AuthSettings(
            issuer_url=AnyHttpUrl(config.issuer),
            resource_server_url=AnyHttpUrl(resource),
            # The audience is checked by our verifier, against the configured value.
            validate_token_resource=False,
        )
    else:
        settings = AuthSettings(issuer_url=AnyHttpUrl(resource), resource_server_url=None)
    return _Verifier(checker), settings


# --- The HTTP app ---------------------------------------------------------------------


def request_body_limit(max_file_bytes: int) -> int:
    """The largest HTTP request body accepted, for a file limit of `max_file_bytes`:
    room for the largest content write_file takes, however JSON escapes it."""
    return _JSON_ESCAPE_FACTOR * max_file_bytes + _ENVELOPE_BYTES


def _size(n: int) -> str:
    return f"{n / _MIB:g} MiB"


class _BodyLimit:
    """Answers a POST whose declared body is over the limit with HTTP 413 and a JSON-RPC
    error the client shows, naming the limit and DPTTOOLS_MAX_FILE_SIZE_MB. (A body sent
    without a length is stopped at the same limit by the SDK, with a bare 413.)"""

    def __init__(self, app: ASGIApp, *, limit: int, max_file_bytes: int) -> None:
        self.app = app
        self.limit = limit
        self.max_file_bytes = max_file_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            declared = Headers(scope=scope).get("content-length", "")
            if declared.isdigit() and int(declared) > self.limit:
                await self._drain(receive, int(declared))
                await self._refuse(int(declared), send)
                return
        await self.app(scope, receive, send)

    async def _drain(self, receive: Receive, declared: int) -> None:
        """Read and drop the body (up to a bound), so the client, still sending, can read
        the answer instead of finding the connection reset."""
        bound = min(declared, _DRAIN_FACTOR * self.limit)
        drained = 0
        while drained < bound:
            message = await receive()
            if message["type"] != "http.request":
                return
            drained += len(message.get("body", b""))
            if not message.get("more_body", False):
                return

    async def _refuse(self, declared: int, send: Send) -> None:
        message = (
            f"The request is {_size(declared)}, over this server's HTTP limit of "
            f"{_size(self.limit)} ({_JSON_ESCAPE_FACTOR} x DPTTOOLS_MAX_FILE_SIZE_MB = "
            f"{_size(self.max_file_bytes)}, plus 1 MiB). write_file and edit_file take at most "
            f"DPTTOOLS_MAX_FILE_SIZE_MB of content; send less, or raise that setting on the "
            f"server. Nothing was done."
        )
        body = json.dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def http_app(server: MCPServer, *, host: str, path: str, max_file_bytes: int) -> ASGIApp:
    """`server` as a stateless streamable HTTP app at `path`, with the body limit of
    `request_body_limit(max_file_bytes)`.

    On a loopback `host`, in any spelling, the SDK's DNS-rebinding protection is on
    (`transport_security`): a foreign ``Host`` header gets 421 and a foreign ``Origin``
    403. Authentication is whatever `server` was built with (`http_auth`).
    """
    limit = request_body_limit(max_file_bytes)
    app = server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=True,
        max_request_body_size=limit,
        host=host,
        transport_security=transport_security(host),
    )
    return _BodyLimit(app, limit=limit, max_file_bytes=max_file_bytes)
