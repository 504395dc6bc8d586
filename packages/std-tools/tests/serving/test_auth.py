"""Bearer-token authentication of the composed server over real HTTP.

The server runs as a child process (`python -m doc_processing_std_tools --transport
streamable-http`) on 127.0.0.1; tokens are minted in the test with keys generated in the
test, and every attack is a plain HTTP request or an SDK client session."""

from __future__ import annotations

import base64
import http.server
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from http_child import Started, serving, start_server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent

from doc_processing_std_tools.skills.scripts.sandbox import sandbox_status

from .helpers import (
    AUDIENCE,
    ISSUER,
    Folders,
    Keys,
    b64url,
    forged,
    tool_names,
)

pytestmark = pytest.mark.anyio

READ_TOOLS = {
    "list_skills",
    "search_skills",
    "load_skill",
    "load_skill_resource",
    "read_file",
    "list_directory",
    "find_files",
    "search_text",
    "get_file_info",
    "get_file_overview",
    "read_document",
    "extract_tables",
    "search_document",
}
WRITE_TOOLS = {"write_file", "edit_file", "create_skill"}
EXECUTE_TOOLS = {"execute_skill_script"}
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys()


@pytest.fixture(scope="module")
def module_folders(tmp_path_factory: pytest.TempPathFactory) -> Folders:
    return Folders.make(tmp_path_factory.mktemp("auth"))


@pytest.fixture(scope="module")
def jwt_server(
    keys: Keys, module_folders: Folders, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Started]:
    """One server for the module, checking JWTs against a JWKS file."""
    jwks = tmp_path_factory.mktemp("jwks") / "jwks.json"
    jwks.write_text(json.dumps(keys.jwks()), encoding="utf-8")
    env = {
        "DPTTOOLS_AUTH_JWKS_FILE": str(jwks),
        "DPTTOOLS_AUTH_ISSUER": ISSUER,
        "DPTTOOLS_AUTH_AUDIENCE": AUDIENCE,
    }
    with serving(*module_folders.args(), env=env) as started:
        yield started


@asynccontextmanager
async def session(url: str, token: str) -> AsyncIterator[Client]:
    """An SDK client session that sends `token` as its bearer token."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def raw_post(url: str, token: str | None, body: dict[str, Any] = LIST_TOOLS) -> httpx2.Response:
    headers = dict(HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.post(url, content=json.dumps(body), headers=headers, timeout=10)


def text_of(result: object) -> str:
    content = getattr(result, "content", [])
    assert len(content) == 1 and isinstance(content[0], TextContent)
    return content[0].text


# --- Resource-server behaviour -----------------------------------------------------------


def test_a_request_without_a_token_gets_401_pointing_at_the_resource_metadata(
    jwt_server: Started,
) -> None:
    reply = raw_post(jwt_server.url, None)
    assert reply.status_code == 401
    challenge = reply.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert 'error="invalid_token"' in challenge
    metadata_url = f"{jwt_server.base}/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{metadata_url}"' in challenge


def test_the_protected_resource_metadata_names_the_issuer(jwt_server: Started) -> None:
    reply = httpx2.get(f"{jwt_server.base}/.well-known/oauth-protected-resource/mcp")
    assert reply.status_code == 200
    metadata = reply.json()
    assert metadata["resource"] == jwt_server.url
    assert metadata["authorization_servers"] == [ISSUER]
    assert metadata["bearer_methods_supported"] == ["header"]


async def test_a_valid_token_opens_a_session_with_every_tool(
    jwt_server: Started, keys: Keys, module_folders: Folders
) -> None:
    async with session(jwt_server.url, keys.token()) as client:
        names = tool_names((await client.list_tools()).tools)
        written = await client.call_tool(
            "write_file", {"path": "by-token.txt", "content": "hello\n"}
        )
    assert names == READ_TOOLS | WRITE_TOOLS | EXECUTE_TOOLS
    assert not written.is_error, text_of(written)
    assert (module_folders.workspace / "by-token.txt").read_text() == "hello\n"


async def test_an_ec_key_and_a_scp_list_are_understood(jwt_server: Started, keys: Keys) -> None:
    token = keys.token(alg="ES256", kid="e1", scope=None, scp=["read"])
    async with session(jwt_server.url, token) as client:
        names = tool_names((await client.list_tools()).tools)
    assert names == READ_TOOLS


# --- Attacks: each token is refused with 401 -----------------------------------------------


def attack_tokens(keys: Keys) -> dict[str, str]:
    now = int(time.time())
    other = Keys()
    claims = keys.claims()
    return {
        "expired": keys.token(exp=now - 300, iat=now - 900),
        "not yet valid": keys.token(nbf=now + 600),
        "without expiry": keys.token(exp=None),
        "wrong issuer": keys.token(iss="https://evil.example.test/"),
        "wrong audience": keys.token(aud="https://other-service.example.test/mcp"),
        "signed by another key under a known kid": other.token(),
        "unknown kid": other.token(kid="k9"),
        "alg none": forged({"alg": "none", "kid": "k1"}, claims, None),
        "HS256 keyed with the public key": forged(
            {"alg": "HS256", "kid": "k1", "typ": "JWT"}, claims, keys.public_pem()
        ),
        "an algorithm outside the allow-list (RS512)": keys.token(alg="RS512"),
        "RS256 header on the EC key": keys.token(kid="e1"),
        "tampered claims": _tampered(keys.token(scope="read")),
        "not a JWT": "not-a-jwt",
    }


def _tampered(token: str) -> str:
    """`token` with its claims rewritten to every scope, and the old signature."""
    head, body, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["scope"] = "read write execute"
    return f"{head}.{b64url(json.dumps(claims).encode())}.{signature}"


def test_every_forged_expired_or_misdirected_token_gets_401(
    jwt_server: Started, keys: Keys
) -> None:
    accepted = raw_post(jwt_server.url, keys.token())
    assert accepted.status_code == 200, accepted.text
    outcomes = {
        name: raw_post(jwt_server.url, token).status_code
        for name, token in attack_tokens(keys).items()
    }
    assert outcomes == dict.fromkeys(outcomes, 401)


async def test_the_sdk_client_with_a_bad_token_cannot_open_a_session(
    jwt_server: Started, keys: Keys
) -> None:
    with pytest.raises(BaseExceptionGroup) as caught:
        async with session(jwt_server.url, keys.token(aud="https://elsewhere.test/")) as client:
            await client.list_tools()
    # The SDK's client reports the 401 as an error response (the toolkit words it).
    assert caught.group_contains(MCPError)


# --- Scopes -------------------------------------------------------------------------------


async def test_a_read_only_token_sees_no_write_or_execute_tool_and_cannot_write(
    jwt_server: Started, keys: Keys, module_folders: Folders
) -> None:
    async with session(jwt_server.url, keys.token(scope="read")) as client:
        names = tool_names((await client.list_tools()).tools)
        refused = await client.call_tool(
            "write_file", {"path": "forbidden.txt", "content": "should not exist\n"}
        )
        ran = await client.call_tool(
            "execute_skill_script",
            {"skill_name": "invoice-check", "script_path": "scripts/hello.py"},
        )
        read = await client.call_tool("read_file", {"path": "notes.txt"})
    assert names == READ_TOOLS
    assert refused.is_error
    assert "'write' scope" in text_of(refused) and "read" in text_of(refused)
    assert not (module_folders.workspace / "forbidden.txt").exists()
    assert ran.is_error and "'execute' scope" in text_of(ran)
    assert "hello from the script" not in text_of(ran)
    assert text_of(read) == "first line\n"


async def test_an_execute_scope_runs_scripts_but_does_not_write(
    jwt_server: Started, keys: Keys
) -> None:
    async with session(jwt_server.url, keys.token(scope="read execute")) as client:
        names = tool_names((await client.list_tools()).tools)
        ran = await client.call_tool(
            "execute_skill_script",
            {"skill_name": "invoice-check", "script_path": "scripts/hello.py"},
        )
        created = await client.call_tool(
            "create_skill", {"skill_name": "sneaky", "description": "Should not appear."}
        )
    assert names == READ_TOOLS | EXECUTE_TOOLS
    if sandbox_status().bwrap is not None:
        assert "hello from the script" in json.loads(text_of(ran))["stdout"]
    else:  # without bubblewrap nothing keeps a script from writing: it does not run
        assert ran.is_error and "'write'" in text_of(ran) and "nothing ran" in text_of(ran)
    assert created.is_error and "'write' scope" in text_of(created)


async def test_a_token_without_read_cannot_list_resources(jwt_server: Started, keys: Keys) -> None:
    async with session(jwt_server.url, keys.token(scope="write")) as client:
        names = tool_names((await client.list_tools()).tools)
        with pytest.raises(MCPError, match="'read' scope"):
            await client.list_resources()
    assert names == WRITE_TOOLS


async def test_a_token_with_no_known_scope_sees_no_tool(jwt_server: Started, keys: Keys) -> None:
    async with session(jwt_server.url, keys.token(scope="admin")) as client:
        assert (await client.list_tools()).tools == []
        refused = await client.call_tool("read_file", {"path": "notes.txt"})
    assert refused.is_error and "'read' scope" in text_of(refused)


# --- JWKS from a URL ----------------------------------------------------------------------


class _JwksHandler(http.server.BaseHTTPRequestHandler):
    document = b""
    fetches = 0

    def do_GET(self) -> None:
        type(self).fetches += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.document)))
        self.end_headers()
        self.wfile.write(self.document)

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def test_keys_are_fetched_from_a_jwks_url(keys: Keys, folders: Folders) -> None:
    class Handler(_JwksHandler):
        document = json.dumps(keys.jwks()).encode()

    handler = Handler
    idp = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=idp.serve_forever, daemon=True)
    thread.start()
    try:
        env = {
            "DPTTOOLS_AUTH_JWKS_URL": f"http://127.0.0.1:{idp.server_address[1]}/jwks.json",
            "DPTTOOLS_AUTH_ISSUER": ISSUER,
            "DPTTOOLS_AUTH_AUDIENCE": AUDIENCE,
        }
        with serving(*folders.args(), env=env) as server:
            async with session(server.url, keys.token(scope="read")) as client:
                names = tool_names((await client.list_tools()).tools)
                await client.list_tools()
            forged_reply = raw_post(server.url, Keys().token())
    finally:
        idp.shutdown()
        idp.server_close()
    assert names == READ_TOOLS
    assert forged_reply.status_code == 401
    # Fetched once and kept: the key set is not asked for on every request.
    assert handler.fetches == 1


def test_the_audience_defaults_to_the_resource_url(
    keys: Keys, folders: Folders, tmp_path: Path
) -> None:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(keys.jwks()), encoding="utf-8")
    env = {"DPTTOOLS_AUTH_JWKS_FILE": str(jwks), "DPTTOOLS_AUTH_ISSUER": ISSUER}
    with serving(*folders.args(), env=env) as server:
        for_us = raw_post(server.url, keys.token(aud=server.url))
        for_the_default = raw_post(server.url, keys.token())
    assert for_us.status_code == 200
    assert for_the_default.status_code == 401


# --- Static tokens ------------------------------------------------------------------------

ALICE = "alice-" + "a" * 40
CI_BOT = "ci-bot-" + "b" * 40


def tokens_file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "tokens.txt"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


async def test_static_tokens_from_a_file(folders: Folders, tmp_path: Path) -> None:
    path = tokens_file(
        tmp_path,
        f"# name  token  scopes\nalice   {ALICE}   read,write,execute\nci-bot  {CI_BOT}  read\n",
    )
    with serving(*folders.args(), env={"DPTTOOLS_AUTH_TOKENS_FILE": str(path)}) as server:
        async with session(server.url, ALICE) as client:
            everything = tool_names((await client.list_tools()).tools)
        async with session(server.url, CI_BOT) as client:
            readable = tool_names((await client.list_tools()).tools)
            refused = await client.call_tool(
                "edit_file", {"path": "notes.txt", "old_text": "first", "new_text": "changed"}
            )
        missing = raw_post(server.url, None)
        wrong = raw_post(server.url, ALICE[:-1] + "x")
        prefix = raw_post(server.url, ALICE[:-1])
        metadata = httpx2.get(f"{server.base}/.well-known/oauth-protected-resource/mcp")
    assert everything == READ_TOOLS | WRITE_TOOLS | EXECUTE_TOOLS
    assert readable == READ_TOOLS
    assert refused.is_error and "'write' scope" in text_of(refused)
    assert (folders.workspace / "notes.txt").read_text() == "first line\n"
    assert (missing.status_code, wrong.status_code, prefix.status_code) == (401, 401, 401)
    assert missing.headers["www-authenticate"].startswith("Bearer ")
    # No authorization server to name, so no metadata is published.
    assert metadata.status_code == 404


def test_a_world_readable_token_file_stops_the_server_before_it_serves(
    folders: Folders, tmp_path: Path
) -> None:
    path = tokens_file(tmp_path, f"alice {ALICE} read\n", 0o644)
    started = start_server(*folders.args(), env={"DPTTOOLS_AUTH_TOKENS_FILE": str(path)})
    code = started.process.wait(timeout=30)
    stderr = started.stop()
    assert code == 2
    assert "DPTTOOLS_AUTH_TOKENS_FILE" in stderr and "chmod 600" in stderr
    assert "Traceback" not in stderr


def test_a_symmetric_algorithm_in_the_settings_stops_the_server(folders: Folders) -> None:
    env = {
        "DPTTOOLS_AUTH_JWKS_URL": "https://idp.example.test/jwks",
        "DPTTOOLS_AUTH_ISSUER": ISSUER,
        "DPTTOOLS_AUTH_ALGORITHMS": "RS256,HS256",
    }
    started = start_server(*folders.args(), env=env)
    code = started.process.wait(timeout=30)
    stderr = started.stop()
    assert code == 2 and "only these are accepted" in stderr, stderr
