"""The static token file: a byte order mark at its start is not part of the first line, and
a line that is not NAME TOKEN SCOPES stops the server at start-up, naming the file and the
line, instead of becoming a token. The server runs as a child process on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from http_child import serving, start_server

from doc_processing_std_tools.auth import StaticTokens
from doc_processing_std_tools.errors import ConfigError

from .helpers import Folders

HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}
LIST_TOOLS = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
REVOKED = "revoked-" + "r" * 40
LIVE = "live-" + "l" * 40


def tokens_file(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "tokens.txt"
    path.write_bytes(data)
    path.chmod(0o600)
    return path


def status(url: str, token: str) -> int:
    headers = {**HEADERS, "Authorization": f"Bearer {token}"}
    return httpx2.post(url, content=LIST_TOOLS, headers=headers, timeout=10).status_code


def test_a_commented_out_first_line_after_a_byte_order_mark_stays_revoked(
    folders: Folders, tmp_path: Path
) -> None:
    text = f"#alice {REVOKED} read,write,execute\nci-bot {LIVE} read\n"
    path = tokens_file(tmp_path, "\ufeff".encode() + text.encode())
    with serving(*folders.args(), env={"DPTTOOLS_AUTH_TOKENS_FILE": str(path)}) as server:
        revoked = status(server.url, REVOKED)
        live = status(server.url, LIVE)
    assert (revoked, live) == (401, 200)


MALFORMED = [
    pytest.param(f"ci-bot {LIVE} read\n\ufeff#alice {REVOKED} read\n", 2, id="a mark inside"),
    pytest.param(f"ci-bot {LIVE} read\nbob\u200b {REVOKED} read\n", 2, id="an invisible name"),
    pytest.param(f"ci-bot {LIVE}\u00a0 read\n", 1, id="a no-break space in the token"),
    pytest.param(f"ci-bot {LIVE} read\nbob {REVOKED[:-1]}é read\n", 2, id="a non-ASCII token"),
]


@pytest.mark.parametrize(("text", "line"), MALFORMED)
def test_a_malformed_line_stops_the_server_naming_the_file_and_the_line(
    folders: Folders, tmp_path: Path, text: str, line: int
) -> None:
    path = tokens_file(tmp_path, text.encode())
    started = start_server(*folders.args(), env={"DPTTOOLS_AUTH_TOKENS_FILE": str(path)})
    code = started.process.wait(timeout=30)
    stderr = started.stop()
    assert code == 2, stderr
    assert f"DPTTOOLS_AUTH_TOKENS_FILE {str(path)!r}, line {line}" in stderr
    assert "Traceback" not in stderr
    with pytest.raises(ConfigError, match=f"line {line}: "):
        StaticTokens(path)
