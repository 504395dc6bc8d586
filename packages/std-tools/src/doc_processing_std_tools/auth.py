"""Bearer-token checks for the HTTP servers, without the MCP SDK.

Two kinds of token are understood:

- **JWTs** signed by an identity provider, checked with PyJWT against the provider's
  public keys (a JWKS from a URL or a file): the signature with an allowed public-key
  algorithm, the issuer, the audience and the expiry. The scopes come from the ``scope``
  claim (space-separated) or ``scp`` (a list).
- **Static tokens** from a file, for small deployments: one line per client,
  ``NAME TOKEN SCOPE[,SCOPE...]``. Tokens are compared in constant time, by digest.

A checker turns a token into a `Grant` or raises `AuthenticationError` saying why (the
reason goes to the server's log, never to the caller). `make_checker` builds the checker
the settings ask for; the MCP glue in `http_app` calls it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import stat
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import jwt

from .access import SCOPES
from .config import AuthConfig
from .errors import AuthenticationError, ConfigError

__all__ = [
    "MIN_STATIC_TOKEN_LENGTH",
    "Grant",
    "JwksFile",
    "JwksUrl",
    "JwtChecker",
    "KeySource",
    "StaticTokens",
    "TokenChecker",
    "make_checker",
]

logger = logging.getLogger(__name__)

MIN_STATIC_TOKEN_LENGTH = 32
"""Static tokens shorter than this are refused at start-up: they could be guessed."""

_LEEWAY_S = 30.0
"""Clock difference tolerated between the identity provider and this server."""
_JWKS_MAX_AGE_S = 300.0
"""A JWKS fetched from a URL is fetched again after this long."""
_JWKS_MIN_REFETCH_S = 30.0
"""An unknown key id fetches the JWKS again, at most this often."""


@dataclass(frozen=True, slots=True)
class Grant:
    """What a valid token allows: who holds it, its scopes, and until when."""

    client_id: str
    """The client the token was issued to (``client_id``/``azp``/``sub``, or the name in
    the token file)."""
    scopes: frozenset[str]
    """The scopes among ``read``, ``write`` and ``execute`` that the token carries."""
    subject: str | None = None
    """The token's ``sub`` claim, when it has one."""
    issuer: str | None = None
    """The token's ``iss`` claim, when it has one."""
    expires_at: int | None = None
    """The token's expiry as a Unix time, when it has one."""


class TokenChecker(Protocol):
    """Turns a bearer token into a `Grant`."""

    def check(self, token: str) -> Grant:
        """The grant of `token`.

        Raises:
            AuthenticationError: the token is not valid here; the message says why.
        """
        ...


def _known_scopes(granted: Iterable[str]) -> frozenset[str]:
    return frozenset(scope for scope in granted if scope in SCOPES)


# --- JWTs -------------------------------------------------------------------------------


class KeySource(Protocol):
    """Where a `JwtChecker` finds the public key for a token's ``kid``."""

    def key_for(self, kid: str | None) -> Mapping[str, Any]:
        """The JWK (as a mapping) with key id `kid`; with no `kid`, the only key.

        Raises:
            AuthenticationError: no such key (after one refresh of the key set).
        """
        ...


def _signing_keys(document: object, where: str) -> list[Mapping[str, Any]]:
    """The public signing keys of a JWKS document; symmetric keys are left out."""
    keys = document.get("keys") if isinstance(document, Mapping) else None
    if not isinstance(keys, list):
        raise ConfigError(f"{where} is not a JWKS: it needs a top-level 'keys' list.")
    usable = [
        key
        for key in keys
        if isinstance(key, Mapping)
        and key.get("kty") in ("RSA", "EC", "OKP")
        and key.get("use", "sig") == "sig"
    ]
    if not usable:
        raise ConfigError(f"{where} holds no public signing key (RSA, EC or OKP with use 'sig').")
    return usable


def _pick(keys: Sequence[Mapping[str, Any]], kid: str | None) -> Mapping[str, Any] | None:
    if kid is None:
        return keys[0] if len(keys) == 1 else None
    return next((key for key in keys if key.get("kid") == kid), None)


def _no_key(kid: str | None, count: int, where: str) -> AuthenticationError:
    if kid is None:
        return AuthenticationError(
            f"the token names no key (kid) and {where} holds {count} keys to choose from"
        )
    return AuthenticationError(f"no key with kid {kid!r} in {where}")


class JwksFile:
    """A JWKS kept in a local file; read again when a token names a key it lacks and the
    file has changed (key rotation without a restart).

    Raises:
        ConfigError: the file cannot be read or holds no public signing key.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp, self._keys = self._read()

    def _read(self) -> tuple[tuple[int, int], list[Mapping[str, Any]]]:
        where = f"DPTTOOLS_AUTH_JWKS_FILE {str(self.path)!r}"
        try:
            info = self.path.stat()
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"{where} cannot be read: {exc.strerror or exc}.") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{where} is not JSON: {exc}.") from None
        return (info.st_mtime_ns, info.st_size), _signing_keys(document, where)

    def key_for(self, kid: str | None) -> Mapping[str, Any]:
        """The key `kid` from the file (read again once if it has changed)."""
        with self._lock:
            found = _pick(self._keys, kid)
            if found is None and kid is not None:
                try:
                    info = self.path.stat()
                    if (info.st_mtime_ns, info.st_size) != self._stamp:
                        self._stamp, self._keys = self._read()
                        found = _pick(self._keys, kid)
                except (OSError, ConfigError) as exc:
                    logger.warning("could not read the JWKS file again: %s", exc)
            if found is None:
                raise _no_key(kid, len(self._keys), "the JWKS file")
            return found


class JwksUrl:
    """A JWKS served by the identity provider, fetched with PyJWT's client (no redirects,
    a timeout) and kept for five minutes; a token naming an unknown key fetches it again,
    at most every 30 seconds."""

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        self.url = url
        self._client = jwt.PyJWKClient(url, cache_jwk_set=False, timeout=timeout)
        self._lock = threading.Lock()
        self._keys: list[Mapping[str, Any]] = []
        self._fetched_at = float("-inf")

    def _fetch(self) -> None:
        try:
            document = self._client.fetch_data()
            self._keys = _signing_keys(document, f"the JWKS at {self.url}")
        except (jwt.PyJWKClientError, ConfigError) as exc:
            raise AuthenticationError(f"the JWKS at {self.url} could not be used: {exc}") from exc
        self._fetched_at = time.monotonic()

    def key_for(self, kid: str | None) -> Mapping[str, Any]:
        """The key `kid`, fetching the key set when it is old or lacks the key."""
        with self._lock:
            age = time.monotonic() - self._fetched_at
            if age > _JWKS_MAX_AGE_S:
                self._fetch()
                age = 0.0
            found = _pick(self._keys, kid)
            if found is None and kid is not None and age > _JWKS_MIN_REFETCH_S:
                self._fetch()
                found = _pick(self._keys, kid)
            if found is None:
                raise _no_key(kid, len(self._keys), f"the JWKS at {self.url}")
            return found


class JwtChecker:
    """Checks JWTs: signature (allowed public-key algorithms only), ``iss``, ``aud``,
    ``exp`` (required) and ``nbf``, with 30 seconds of leeway for clock differences."""

    def __init__(
        self, keys: KeySource, *, issuer: str, audience: str, algorithms: Sequence[str]
    ) -> None:
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.algorithms = tuple(algorithms)

    def check(self, token: str) -> Grant:
        """The grant of a valid JWT; `AuthenticationError` for anything else."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise AuthenticationError(f"not a JWT: {exc}") from None
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise AuthenticationError(
                f"algorithm {alg!r} is not allowed (DPTTOOLS_AUTH_ALGORITHMS: "
                f"{', '.join(self.algorithms)})"
            )
        kid = header.get("kid")
        jwk = self.keys.key_for(kid if isinstance(kid, str) else None)
        if jwk.get("alg") not in (None, alg):
            raise AuthenticationError(
                f"key {kid!r} is for {jwk.get('alg')!r}, the token uses {alg!r}"
            )
        try:
            # The key is bound to the token's (allowed) algorithm: a key of another
            # type cannot be built for it, and PyJWT checks the header against it.
            key = jwt.PyJWK(dict(jwk), algorithm=alg)
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=_LEEWAY_S,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            raise AuthenticationError(f"JWT refused: {exc}") from None
        return Grant(
            client_id=str(claims.get("client_id") or claims.get("azp") or claims.get("sub") or "?"),
            scopes=_known_scopes(_jwt_scopes(claims)),
            subject=str(claims["sub"]) if "sub" in claims else None,
            issuer=str(claims["iss"]),
            expires_at=int(claims["exp"]),
        )


def _jwt_scopes(claims: Mapping[str, Any]) -> list[str]:
    scope = claims.get("scope")
    if isinstance(scope, str):
        return scope.split()
    scp = claims.get("scp")
    if isinstance(scp, str):
        return scp.split()
    if isinstance(scp, list):
        return [str(item) for item in scp]
    return []


# --- Static tokens ----------------------------------------------------------------------


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


_BOM = "\ufeff"
#: Fields of a token-file line are separated by ASCII spaces and tabs only: any other
#: space (a no-break space pasted from a web page) is a character of a field, and so an
#: error, rather than a silent separator.
_SEPARATORS = re.compile(r"[ \t]+")
#: What a static token may hold: visible ASCII, as an HTTP header carries it unchanged.
_TOKEN_CHARACTERS = re.compile(r"[\x21-\x7e]+")


def _invisible(text: str) -> str | None:
    """The first character of `text` that cannot be seen or typed plainly (a control or
    format character, such as a byte order mark or a zero-width space), as U+XXXX."""
    for char in text:
        if not char.isprintable():
            return f"U+{ord(char):04X}"
    return None


def _check_fields(at: str, name: str, token: str) -> None:
    """Refuse a name or a token that is not what the line looks like it says."""
    hidden = _invisible(name)
    if hidden is not None:
        raise ConfigError(
            f"{at}: the name {name!r} holds the invisible character {hidden} (a byte order "
            "mark or a zero-width space, perhaps from another file pasted in); retype the "
            "line, or remove the character, and start the server again."
        )
    if not _TOKEN_CHARACTERS.fullmatch(token):
        bad = next(char for char in token if not _TOKEN_CHARACTERS.fullmatch(char))
        raise ConfigError(
            f"{at}: the token of {name!r} holds U+{ord(bad):04X}, which is not a visible "
            "ASCII character; a token is letters, digits and punctuation only (fields are "
            "separated by spaces or tabs). Write the token again, such as the output of: "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )


class StaticTokens:
    """Tokens listed in a file, each with a client name and scopes.

    The file holds one client per line, ``NAME TOKEN SCOPE[,SCOPE...]`` separated by
    spaces or tabs; blank lines and lines starting with ``#`` are ignored. A byte order
    mark at the start of the file is not part of its first line (so a commented-out first
    line stays a comment). Only digests of the tokens are kept, and a presented token is
    compared with every one of them in constant time.

    Raises:
        ConfigError: the file is readable or writable by every user of the machine, or a
            line is malformed (not three fields, a name with an invisible character, a
            token that is not visible ASCII), repeats a name or a token, names an unknown
            scope, or holds a token shorter than `MIN_STATIC_TOKEN_LENGTH`. The message
            names the file and the line.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        where = f"DPTTOOLS_AUTH_TOKENS_FILE {str(path)!r}"
        try:
            mode = path.stat().st_mode
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{where} cannot be read: {exc.strerror or exc}.") from None
        except UnicodeDecodeError:
            raise ConfigError(f"{where} is not UTF-8 text.") from None
        if mode & (stat.S_IROTH | stat.S_IWOTH):
            raise ConfigError(
                f"{where} can be read or changed by every user of this machine; "
                f"restrict it with: chmod 600 {path}"
            )
        self._entries: list[tuple[bytes, Grant]] = []
        names: set[str] = set()
        text = text.removeprefix(_BOM)
        for number, line in enumerate(text.splitlines(), start=1):
            fields = [field for field in _SEPARATORS.split(line) if field]
            if not fields or fields[0].startswith("#"):
                continue
            at = f"{where}, line {number}"
            if len(fields) != 3:
                raise ConfigError(
                    f"{at}: expected NAME TOKEN SCOPES (three fields separated by spaces, "
                    f"such as 'ci-bot <token> read,execute'), found {len(fields)} fields."
                )
            name, token, scope_text = fields
            _check_fields(at, name, token)
            scopes = [scope for scope in scope_text.split(",") if scope]
            unknown = [scope for scope in scopes if scope not in SCOPES]
            if unknown or not scopes:
                raise ConfigError(
                    f"{at}: unknown scope {', '.join(unknown) or '(none)'}; "
                    f"use {', '.join(SCOPES)}, separated by commas."
                )
            if len(token) < MIN_STATIC_TOKEN_LENGTH:
                raise ConfigError(
                    f"{at}: the token of {name!r} is {len(token)} characters; use at least "
                    f"{MIN_STATIC_TOKEN_LENGTH} random ones, such as the output of: "
                    "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
                )
            digest = _digest(token)
            if name in names or any(hmac.compare_digest(digest, d) for d, _ in self._entries):
                raise ConfigError(f"{at}: the name or the token of {name!r} is used twice.")
            names.add(name)
            self._entries.append((digest, Grant(client_id=name, scopes=frozenset(scopes))))
        if not self._entries:
            raise ConfigError(f"{where} lists no token; add lines of NAME TOKEN SCOPES.")

    def check(self, token: str) -> Grant:
        """The grant of a listed token; `AuthenticationError` for any other."""
        digest = _digest(token)
        found: Grant | None = None
        for known, grant in self._entries:
            # Every entry is compared, so the time taken says nothing about the match.
            if hmac.compare_digest(digest, known):
                found = grant
        if found is None:
            raise AuthenticationError("the token is not in the token file")
        return found


def make_checker(config: AuthConfig, *, audience: str) -> TokenChecker | None:
    """The checker `config` asks for, or None when authentication is off.

    Args:
        config: the authentication settings.
        audience: the ``aud`` JWTs must carry (`AuthConfig.audience` or the resource URL).

    Raises:
        ConfigError: a key or token file is unusable.
    """
    if config.tokens_file is not None:
        return StaticTokens(config.tokens_file)
    if not config.uses_jwt:
        return None
    assert config.issuer is not None  # checked by load_serving_settings
    keys: KeySource = (
        JwksFile(config.jwks_file)
        if config.jwks_file is not None
        else JwksUrl(str(config.jwks_url))
    )
    return JwtChecker(keys, issuer=config.issuer, audience=audience, algorithms=config.algorithms)
