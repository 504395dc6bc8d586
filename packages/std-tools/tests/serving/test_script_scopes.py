"""A token's scopes reach the scripts it runs: a script run for a token without ``write``
sees the workspace read-only (under bubblewrap), or does not run at all (without it), so
``read,execute`` cannot change a file through a script that writes where its arguments
say. The server runs as a child process on 127.0.0.1 with static tokens."""

from __future__ import annotations

import json
import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from http_child import serving
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent
from script_user_access import without_bwrap_as_root

from doc_processing_std_tools.skills.scripts.sandbox import sandbox_status

from .helpers import Folders

pytestmark = pytest.mark.anyio

AGENT = "agent-" + "a" * 40
"""read,execute: the token the security page suggests for an agent that must not change
files."""
EDITOR = "editor-" + "e" * 40
"""read,write,execute."""
WRITER = """\
import sys
from pathlib import Path

Path(sys.argv[1]).write_text("overwritten by a script\\n", encoding="utf-8")
print("wrote", sys.argv[1])
"""

needs_bwrap = pytest.mark.skipif(
    sandbox_status().bwrap is None,
    reason=f"bubblewrap does not work here ({sandbox_status().problem})",
)


@pytest.fixture
def setup(folders: Folders, tmp_path: Path) -> tuple[Folders, Path]:
    (folders.skills / "invoice-check" / "scripts" / "write_to.py").write_text(
        WRITER, encoding="utf-8"
    )
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"agent {AGENT} read,execute\neditor {EDITOR} read,write,execute\n")
    tokens.chmod(0o600)
    return folders, tokens


@asynccontextmanager
async def session(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def write_through_script(url: str, token: str, target: Path) -> CallToolResult:
    async with session(url, token) as client:
        return await client.call_tool(
            "execute_skill_script",
            {
                "skill_name": "invoice-check",
                "script_path": "scripts/write_to.py",
                "args": shlex.quote(str(target)),
            },
        )


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return result.content[0].text


@needs_bwrap
async def test_under_bubblewrap_a_token_without_write_runs_scripts_on_a_read_only_workspace(
    setup: tuple[Folders, Path],
) -> None:
    folders, tokens = setup
    notes = folders.workspace / "notes.txt"
    env = {"DPTTOOLS_AUTH_TOKENS_FILE": str(tokens), "DPTTOOLS_SCRIPT_SANDBOX": "bwrap"}
    with serving(*folders.args(), env=env) as server:
        refused = await write_through_script(server.url, AGENT, notes)
        assert notes.read_text() == "first line\n"
        allowed = await write_through_script(server.url, EDITOR, folders.workspace / "new.txt")
    run = json.loads(text_of(refused))
    assert run["exit_code"] != 0
    assert "Read-only file system" in run["stderr"]
    assert notes.read_text() == "first line\n"
    assert json.loads(text_of(allowed))["exit_code"] == 0
    assert (folders.workspace / "new.txt").read_text() == "overwritten by a script\n"


@without_bwrap_as_root
async def test_without_bubblewrap_a_token_without_write_may_not_run_scripts(
    setup: tuple[Folders, Path],
) -> None:
    folders, tokens = setup
    notes = folders.workspace / "notes.txt"
    env = {"DPTTOOLS_AUTH_TOKENS_FILE": str(tokens), "DPTTOOLS_SCRIPT_SANDBOX": "none"}
    with serving(*folders.args(), env=env) as server:
        refused = await write_through_script(server.url, AGENT, notes)
        allowed = await write_through_script(server.url, EDITOR, folders.workspace / "new.txt")
    assert refused.is_error
    message = text_of(refused)
    assert "'write'" in message and "bubblewrap" in message
    assert "nothing ran" in message.lower()
    assert notes.read_text() == "first line\n"
    assert json.loads(text_of(allowed))["exit_code"] == 0
    assert (folders.workspace / "new.txt").read_text() == "overwritten by a script\n"
