"""DPTTOOLS_TOOLS, DPTTOOLS_READ_ONLY and the DPTTOOLS_AUTH_* settings: what they accept,
and a clear error for each contradiction; and a malformed token file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from doc_processing_std_tools.auth import StaticTokens
from doc_processing_std_tools.config import load_serving_settings
from doc_processing_std_tools.errors import ConfigError

from .helpers import ISSUER

TOKEN = "t" * 40


def test_nothing_set_means_every_tool_and_no_authentication() -> None:
    settings = load_serving_settings({})
    assert settings.tools is None and not settings.read_only
    assert not settings.auth.enabled and not settings.allow_unauthenticated


def test_the_values_are_read(tmp_path: Path) -> None:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": []}))
    settings = load_serving_settings(
        {
            "DPTTOOLS_TOOLS": " list_skills , read_file,",
            "DPTTOOLS_READ_ONLY": "yes",
            "DPTTOOLS_ALLOW_UNAUTHENTICATED": "0",
            "DPTTOOLS_AUTH_JWKS_FILE": str(jwks),
            "DPTTOOLS_AUTH_ISSUER": ISSUER,
            "DPTTOOLS_AUTH_ALGORITHMS": "ES256, EdDSA",
            "DPTTOOLS_AUTH_RESOURCE_URL": "https://documents.example.test/mcp",
        }
    )
    assert settings.tools == ("list_skills", "read_file")
    assert settings.read_only and not settings.allow_unauthenticated
    assert settings.auth.uses_jwt and settings.auth.jwks_file == jwks.resolve()
    assert settings.auth.algorithms == ("ES256", "EdDSA")
    assert settings.auth.audience is None


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"DPTTOOLS_READ_ONLY": "maybe"}, "DPTTOOLS_READ_ONLY='maybe' is not a yes/no value"),
        ({"DPTTOOLS_TOOLS": " , "}, "names no tool"),
        ({"DPTTOOLS_AUTH_JWKS_URL": "http://idp.example.test/jwks"}, "use https"),
        ({"DPTTOOLS_AUTH_JWKS_URL": "ftp://idp.example.test/jwks"}, "not an http(s) URL"),
        ({"DPTTOOLS_AUTH_JWKS_URL": "https://idp.example.test/jwks"}, "needs DPTTOOLS_AUTH_ISSUER"),
        ({"DPTTOOLS_AUTH_ISSUER": ISSUER}, "only apply to JWTs"),
        ({"DPTTOOLS_AUTH_TOKENS_FILE": "/nonexistent/tokens"}, "is not a file"),
        (
            {
                "DPTTOOLS_AUTH_JWKS_URL": "https://idp.example.test/jwks",
                "DPTTOOLS_AUTH_ISSUER": ISSUER,
                "DPTTOOLS_AUTH_ALGORITHMS": "RS256,none",
            },
            "names none; a JWKS holds public keys",
        ),
    ],
)
def test_a_bad_or_contradictory_value_is_named(env: dict[str, str], expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_serving_settings(env)
    assert expected in str(caught.value)


def test_jwks_url_and_file_together_and_jwt_with_tokens_are_refused(tmp_path: Path) -> None:
    existing = tmp_path / "file"
    existing.write_text("x")
    both = {
        "DPTTOOLS_AUTH_JWKS_URL": "https://idp.example.test/jwks",
        "DPTTOOLS_AUTH_JWKS_FILE": str(existing),
        "DPTTOOLS_AUTH_ISSUER": ISSUER,
    }
    with pytest.raises(ConfigError, match="both set; keep one"):
        load_serving_settings(both)
    mixed = {
        "DPTTOOLS_AUTH_JWKS_URL": "https://idp.example.test/jwks",
        "DPTTOOLS_AUTH_ISSUER": ISSUER,
        "DPTTOOLS_AUTH_TOKENS_FILE": str(existing),
    }
    with pytest.raises(ConfigError, match="not both"):
        load_serving_settings(mixed)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"alice {TOKEN}\n", "line 1: expected NAME TOKEN SCOPES"),
        (f"alice {TOKEN} read,admin\n", "unknown scope admin"),
        ("alice short-token read\n", "at least 32"),
        (f"alice {TOKEN} read\nbob {TOKEN} read\n", "line 2: the name or the token"),
        (f"alice {TOKEN} read\nalice {'u' * 40} read\n", "line 2: the name or the token"),
        ("# nothing here\n\n", "lists no token"),
    ],
)
def test_a_malformed_token_file_is_refused_with_the_line(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "tokens"
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    with pytest.raises(ConfigError) as caught:
        StaticTokens(path)
    assert "DPTTOOLS_AUTH_TOKENS_FILE" in str(caught.value) and expected in str(caught.value)
