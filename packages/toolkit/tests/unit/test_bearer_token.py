"""mcp_http with ``bearer_token_env``: an agent built from YAML sends the token from an
environment variable to the real std-tools server, which checks it (a static token file
with scopes); a wrong or missing token is an error that says so."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from doc_processing_toolkit import Agent
from doc_processing_toolkit.errors import ConfigError, ToolServerError
from doc_processing_toolkit.messages import ModelResponse
from doc_processing_toolkit.models import TestModel
from doc_processing_toolkit.models.base import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call

pytest.importorskip("doc_processing_std_tools", reason="install packages/std-tools")

pytestmark = pytest.mark.anyio

READER = "reader-" + "r" * 40
WRITER = "writer-" + "w" * 40


@pytest.fixture(scope="module")
def std_tools_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The composed std-tools server over HTTP with a token file; yields (url, workspace).
    One server for the module: each test that writes names a file of its own."""
    tmp_path = tmp_path_factory.mktemp("bearer-server")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("first line\n", encoding="utf-8")
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"reader {READER} read\nwriter {WRITER} read,write\n", encoding="utf-8")
    tokens.chmod(0o600)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DPTTOOLS_")}
    env["DPTTOOLS_AUTH_TOKENS_FILE"] = str(tokens)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "doc_processing_std_tools",
            "--transport",
            "streamable-http",
            "--port",
            str(port),
            "--workspace",
            str(workspace),
            "--skills-dir",
            str(tmp_path / "skills"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, "the std-tools server exited early"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the std-tools server did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", workspace
    finally:
        process.terminate()
        process.wait(timeout=10)


def write_yaml(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "model: test\n"
        "tools:\n"
        "  - type: mcp_http\n"
        f"    url: {url}\n"
        "    name: documents\n"
        "    bearer_token_env: DPT_TOKEN\n",
        encoding="utf-8",
    )
    return path


def scripted(calls: list[ModelRequest], name: str = "agent.txt") -> TestModel:
    """Calls write_file once (on `name`), then answers with the tool names it was offered."""

    def script(request: ModelRequest) -> ModelResponse:
        calls.append(request)
        if len(calls) == 1:
            return tool_call("write_file", {"path": name, "content": "hi\n"})
        return reply("done")

    return TestModel(script)


async def test_a_read_only_token_from_the_environment_reaches_the_server(
    std_tools_server: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, workspace = std_tools_server
    monkeypatch.setenv("DPT_TOKEN", READER)
    requests: list[ModelRequest] = []
    model = scripted(requests, "reader.txt")
    async with Agent.from_yaml(write_yaml(tmp_path, url), model=model) as agent:
        result = await agent.run("write a note")
    offered = {spec.name for spec in requests[0].tools}
    assert "read_file" in offered and "list_skills" in offered
    assert not offered & {"write_file", "edit_file", "create_skill", "execute_skill_script"}
    # The model asked for a tool the token does not cover: it never ran.
    assert not (workspace / "reader.txt").exists()
    assert result.output == "done"


async def test_a_token_with_write_scope_writes(
    std_tools_server: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, workspace = std_tools_server
    monkeypatch.setenv("DPT_TOKEN", WRITER)
    requests: list[ModelRequest] = []
    model = scripted(requests, "writer.txt")
    async with Agent.from_yaml(write_yaml(tmp_path, url), model=model) as agent:
        await agent.run("write a note")
    assert "write_file" in {spec.name for spec in requests[0].tools}
    assert (workspace / "writer.txt").read_text() == "hi\n"


async def test_a_wrong_token_is_a_clear_error(
    std_tools_server: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = std_tools_server
    monkeypatch.setenv("DPT_TOKEN", "not-the-token-" + "x" * 40)
    agent = Agent.from_yaml(write_yaml(tmp_path, url), model=TestModel())
    with pytest.raises(ToolServerError) as caught:
        async with agent:
            await agent.run("hello")
    message = str(caught.value)
    assert "'documents'" in message and "rejected the credentials: HTTP 401" in message
    assert 'error="invalid_token"' in message
    assert "DPT_TOKEN" in message


async def test_an_unset_variable_is_a_clear_error(
    std_tools_server: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = std_tools_server
    monkeypatch.delenv("DPT_TOKEN", raising=False)
    agent = Agent.from_yaml(write_yaml(tmp_path, url), model=TestModel())
    with pytest.raises(ToolServerError, match="bearer_token_env names DPT_TOKEN, which is not set"):
        async with agent:
            await agent.run("hello")


async def test_a_header_built_with_variable_expansion_works_too(
    std_tools_server: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = std_tools_server
    monkeypatch.setenv("DPT_TOKEN", READER)
    config = {
        "model": "test",
        "tools": [
            {
                "type": "mcp_http",
                "url": url,
                "headers": {"Authorization": "Bearer ${DPT_TOKEN}"},
            }
        ],
    }
    requests: list[ModelRequest] = []
    async with Agent.from_config(config, model=scripted(requests)) as agent:
        await agent.run("hello")
    assert "read_file" in {spec.name for spec in requests[0].tools}


def test_bearer_token_env_and_an_authorization_header_exclude_each_other() -> None:
    with pytest.raises(ConfigError, match="either bearer_token_env or an Authorization header"):
        Agent.from_config(
            {
                "model": "test",
                "tools": [
                    {
                        "type": "mcp_http",
                        "url": "http://127.0.0.1:9/mcp",
                        "bearer_token_env": "DPT_TOKEN",
                        "headers": {"authorization": "Bearer x"},
                    }
                ],
            }
        )
