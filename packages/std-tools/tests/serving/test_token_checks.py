"""The token checkers of `auth`, without a server: each attack is refused for its own
reason, and a valid token gives the grant its claims say."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from doc_processing_std_tools.auth import JwksFile, JwtChecker, StaticTokens
from doc_processing_std_tools.errors import AuthenticationError, ConfigError

from .helpers import AUDIENCE, ISSUER, Keys, forged


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys()


@pytest.fixture
def checker(keys: Keys, tmp_path: Path) -> JwtChecker:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(keys.jwks()), encoding="utf-8")
    return JwtChecker(
        JwksFile(path), issuer=ISSUER, audience=AUDIENCE, algorithms=("RS256", "ES256")
    )


def test_a_valid_token_gives_its_client_subject_and_known_scopes(
    checker: JwtChecker, keys: Keys
) -> None:
    grant = checker.check(keys.token(scope="read execute admin"))
    assert grant.client_id == "test-client"
    assert grant.subject == "user-1"
    assert grant.issuer == ISSUER
    assert grant.scopes == {"read", "execute"}


def test_clock_skew_within_thirty_seconds_is_tolerated(checker: JwtChecker, keys: Keys) -> None:
    now = int(time.time())
    assert checker.check(keys.token(exp=now - 10)).scopes
    with pytest.raises(AuthenticationError, match="expired"):
        checker.check(keys.token(exp=now - 60))


@pytest.mark.parametrize(
    ("attack", "reason"),
    [
        ("expired", "Signature has expired"),
        ("wrong issuer", "Invalid issuer"),
        ("wrong audience", "Audience doesn.t match"),
        ("no exp", 'missing the "exp" claim'),
        ("other key", "Signature verification failed"),
        ("unknown kid", "no key with kid 'k9'"),
        ("alg none", "algorithm 'none' is not allowed"),
        ("HS256 with the public key", "algorithm 'HS256' is not allowed"),
        ("RS512 outside the allow-list", "algorithm 'RS512' is not allowed"),
        ("RS256 on the EC key", "is for 'ES256'"),
        ("garbage", "not a JWT"),
    ],
)
def test_each_attack_is_refused_for_its_own_reason(
    checker: JwtChecker, keys: Keys, attack: str, reason: str
) -> None:
    now = int(time.time())
    tokens: dict[str, Callable[[], str]] = {
        "expired": lambda: keys.token(exp=now - 300),
        "wrong issuer": lambda: keys.token(iss="https://evil.example.test/"),
        "wrong audience": lambda: keys.token(aud="https://elsewhere.test/"),
        "no exp": lambda: keys.token(exp=None),
        "other key": lambda: Keys().token(),
        "unknown kid": lambda: keys.token(kid="k9"),
        "alg none": lambda: forged({"alg": "none", "kid": "k1"}, keys.claims(), None),
        "HS256 with the public key": lambda: forged(
            {"alg": "HS256", "kid": "k1"}, keys.claims(), keys.public_pem()
        ),
        "RS512 outside the allow-list": lambda: keys.token(alg="RS512"),
        "RS256 on the EC key": lambda: keys.token(kid="e1"),
        "garbage": lambda: "a.b",
    }
    with pytest.raises(AuthenticationError, match=reason):
        checker.check(tokens[attack]())


def test_hs256_cannot_even_be_configured(keys: Keys, tmp_path: Path) -> None:
    # A symmetric key in the JWKS is left out, so it can never verify anything.
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "s"}]}))
    with pytest.raises(ConfigError, match="no public signing key"):
        JwksFile(path)


def test_a_rotated_key_is_read_from_the_changed_file(keys: Keys, tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(keys.jwks()), encoding="utf-8")
    checker = JwtChecker(JwksFile(path), issuer=ISSUER, audience=AUDIENCE, algorithms=("RS256",))
    rotated = Keys()
    document = rotated.jwks()
    document["keys"][0]["kid"] = "k2"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert checker.check(rotated.token(kid="k2")).scopes == {"read", "write", "execute"}
    with pytest.raises(AuthenticationError, match="no key with kid 'k1'"):
        checker.check(keys.token())


def test_static_tokens_match_whole_tokens_only(tmp_path: Path) -> None:
    token = "t" * 40
    path = tmp_path / "tokens"
    path.write_text(f"ci {token} read,execute\n", encoding="utf-8")
    path.chmod(0o640)
    tokens = StaticTokens(path)
    grant = tokens.check(token)
    assert (grant.client_id, grant.scopes) == ("ci", frozenset({"read", "execute"}))
    for wrong in (token[:-1], token + "t", "", token.upper()):
        with pytest.raises(AuthenticationError):
            tokens.check(wrong)
