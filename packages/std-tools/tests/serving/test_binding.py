"""Where the HTTP server may listen: a non-loopback address needs authentication (or an
explicit --allow-unauthenticated), and on loopback the SDK's Host/Origin checks stay on."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from http_child import listening, serving, start_server

from doc_processing_std_tools.config import loopback_host
from doc_processing_std_tools.http_app import is_loopback, transport_security

from .helpers import ISSUER, Folders, Keys

HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}
LIST_TOOLS = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})


@pytest.mark.parametrize("host", ["0.0.0.0", "documents.internal"])
def test_a_non_loopback_bind_without_authentication_refuses_to_start(
    folders: Folders, host: str
) -> None:
    started = start_server(*folders.args(), host=host)
    code = started.process.wait(timeout=30)
    stderr = started.stop()
    assert code == 2
    assert f"refusing to serve HTTP on {host} without authentication" in stderr
    assert "--allow-unauthenticated" in stderr
    assert "DPTTOOLS_AUTH_JWKS_URL" in stderr and "DPTTOOLS_AUTH_TOKENS_FILE" in stderr


@pytest.mark.parametrize("host", ["localhost"])
def test_a_loopback_bind_needs_no_authentication(folders: Folders, host: str) -> None:
    started = start_server(*folders.args(), host=host)
    try:
        assert started.process.poll() is None
        reply = httpx2.post(started.url, content=LIST_TOOLS, headers=HEADERS)
        assert reply.status_code == 200
    finally:
        started.stop()


def test_allow_unauthenticated_serves_on_every_address(folders: Folders) -> None:
    started = start_server(*folders.args(), "--allow-unauthenticated", host="0.0.0.0")
    try:
        assert started.process.poll() is None, started.stop()
        reply = httpx2.post(started.url, content=LIST_TOOLS, headers=HEADERS)
        assert reply.status_code == 200
        assert "write_file" in reply.text
    finally:
        stderr = started.stop()
    assert "without authentication (--allow-unauthenticated)" in stderr


def test_authentication_on_every_address_needs_the_resource_url(
    folders: Folders, tmp_path: Path
) -> None:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(Keys().jwks()), encoding="utf-8")
    env = {"DPTTOOLS_AUTH_JWKS_FILE": str(jwks), "DPTTOOLS_AUTH_ISSUER": ISSUER}
    started = start_server(*folders.args(), env=env, host="0.0.0.0")
    code = started.process.wait(timeout=30)
    stderr = started.stop()
    assert code == 2 and "DPTTOOLS_AUTH_RESOURCE_URL" in stderr


def test_a_foreign_host_header_gets_421_and_a_foreign_origin_403(folders: Folders) -> None:
    with serving(*folders.args()) as server:
        local = httpx2.post(server.url, content=LIST_TOOLS, headers=HEADERS)
        rebound = httpx2.post(
            server.url, content=LIST_TOOLS, headers={**HEADERS, "Host": "evil.example:80"}
        )
        foreign_origin = httpx2.post(
            server.url,
            content=LIST_TOOLS,
            headers={**HEADERS, "Origin": "http://evil.example"},
        )
        local_origin = httpx2.post(
            server.url,
            content=LIST_TOOLS,
            headers={**HEADERS, "Origin": f"http://localhost:{server.port}"},
        )
    assert local.status_code == 200
    assert rebound.status_code == 421
    assert foreign_origin.status_code == 403
    assert local_origin.status_code == 200


#: Other spellings of a loopback address, and the address a client reaches each one at.
LOOPBACK_FORMS = [
    pytest.param("127.0.0.2", "127.0.0.2", id="127.0.0.2"),
    pytest.param("LOCALHOST", "127.0.0.1", id="LOCALHOST"),
    pytest.param("0:0:0:0:0:0:0:1", "::1", id="0:0:0:0:0:0:0:1"),
]


def write_call(path: str) -> str:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "write_file", "arguments": {"path": path, "content": "pwned\n"}},
        }
    )


@pytest.mark.parametrize(("host", "address"), LOOPBACK_FORMS)
def test_every_loopback_form_keeps_the_host_and_origin_checks(
    folders: Folders, host: str, address: str
) -> None:
    with listening(start_server(*folders.args(), host=host, address=address)) as server:
        rebound = httpx2.post(
            server.url,
            content=write_call("rebound.txt"),
            headers={**HEADERS, "Host": "evil.example:80"},
        )
        foreign_origin = httpx2.post(
            server.url,
            content=write_call("origin.txt"),
            headers={**HEADERS, "Origin": "http://evil.example"},
        )
        own = httpx2.post(server.url, content=LIST_TOOLS, headers=HEADERS)
        own_origin = httpx2.post(
            server.url,
            content=LIST_TOOLS,
            headers={**HEADERS, "Origin": f"http://{server.authority}"},
        )
    assert (rebound.status_code, foreign_origin.status_code) == (421, 403)
    assert not (folders.workspace / "rebound.txt").exists()
    assert not (folders.workspace / "origin.txt").exists()
    assert (own.status_code, own_origin.status_code) == (200, 200)


@pytest.mark.parametrize(
    ("host", "canonical"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("127.0.0.2", "127.0.0.2"),
        ("127.255.255.254", "127.255.255.254"),
        ("localhost", "localhost"),
        ("LOCALHOST", "localhost"),
        ("LocalHost.", "localhost"),
        ("::1", "::1"),
        ("[::1]", "::1"),
        ("0:0:0:0:0:0:0:1", "::1"),
        ("0000:0000:0000:0000:0000:0000:0000:0001", "::1"),
        (" 127.0.0.1 ", "127.0.0.1"),
        ("0.0.0.0", None),
        ("::", None),
        ("", None),
        ("::ffff:127.0.0.1", None),
        ("128.0.0.1", None),
        ("localhost.example", None),
        ("documents.internal", None),
    ],
)
def test_one_normalisation_decides_both_loopback_rules(host: str, canonical: str | None) -> None:
    assert loopback_host(host) == canonical
    assert is_loopback(host) is (canonical is not None)
    checks = transport_security(host)
    assert checks.enable_dns_rebinding_protection is (canonical is not None)
    if canonical is not None:
        own = f"[{canonical}]:*" if ":" in canonical else f"{canonical}:*"
        assert own in checks.allowed_hosts
        assert f"http://{own}" in checks.allowed_origins
