"""The composed server as a real subprocess, driven by the MCP SDK's own client over
stdio and over streamable HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from http_child import serving
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

from doc_processing_std_tools import make_composed_server
from doc_processing_std_tools.config import reset_settings

pytestmark = pytest.mark.anyio

SKILLS_TOOLS = {
    "list_skills",
    "search_skills",
    "load_skill",
    "load_skill_resource",
    "execute_skill_script",
    "create_skill",
}
FILE_TOOLS = {
    "read_file",
    "write_file",
    "edit_file",
    "list_directory",
    "find_files",
    "search_text",
    "get_file_info",
}
DOC_TOOLS = {"get_file_overview", "read_document", "extract_tables", "search_document"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """A skills folder with one skill and a workspace with a CSV file."""
    skills = tmp_path / "skills"
    (skills / "invoice-check").mkdir(parents=True)
    (skills / "invoice-check" / "SKILL.md").write_text(
        "---\nname: invoice-check\ndescription: Checks invoice totals.\n---\n\n# Steps\n",
        encoding="utf-8",
    )
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "totals.csv").write_text("item,total\nWidget,7.00\nGadget,10.00\n", "utf-8")
    return skills.resolve(), workspace.resolve()


def text_of(result: object) -> str:
    content = getattr(result, "content", [])
    assert len(content) == 1 and isinstance(content[0], TextContent)
    return content[0].text


async def exercise(client: Client, skills: Path, workspace: Path) -> None:
    """The checks every transport must pass."""
    assert client.server_info is not None
    assert client.server_info.name == "doc-processing-std-tools"
    names = {t.name for t in (await client.list_tools()).tools}
    assert names == SKILLS_TOOLS | FILE_TOOLS | DOC_TOOLS
    catalog = json.loads(text_of(await client.call_tool("list_skills", {})))
    assert catalog["skills_dir"] == str(skills)
    assert [s["name"] for s in catalog["skills"]] == ["invoice-check"]
    table = text_of(await client.call_tool("read_document", {"path": "totals.csv"}))
    assert "| Gadget | 10.00 |" in table
    written = await client.call_tool(
        "write_file", {"path": "out/summary.md", "content": "total 17.00\n"}
    )
    assert not written.is_error
    assert text_of(await client.call_tool("read_file", {"path": "out/summary.md"})) == (
        "total 17.00\n"
    )
    # The regular expression runs in a child process of the server: its pipes must not
    # touch the server's own stdio.
    found = await client.call_tool("search_text", {"pattern": r"Gadget,\d+"})
    assert text_of(found) == "totals.csv:3: Gadget,10.00"
    searched = json.loads(
        text_of(
            await client.call_tool(
                "search_document", {"path": "totals.csv", "query": "^W", "regex": True}
            )
        )
    )
    assert searched["matches"] == [{"row": 1, "column": "item", "text": "Widget"}]
    refused = await client.call_tool("read_file", {"path": "../skills/invoice-check/SKILL.md"})
    assert refused.is_error and "'..'" in text_of(refused)


async def test_in_process_composed_server_holds_the_seventeen_tools(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    skills, workspace = folders
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(skills))
    monkeypatch.setenv("DPTTOOLS_WORKSPACE_DIR", str(workspace))
    reset_settings()
    try:
        server = make_composed_server()
        assert server.name == "doc-processing-std-tools"
        async with Client(server) as client:
            await exercise(client, skills, workspace)
    finally:
        reset_settings()


def folder_options(skills: Path, workspace: Path) -> list[str]:
    return ["--skills-dir", str(skills), "--workspace", str(workspace)]


def server_args(skills: Path, workspace: Path, *extra: str) -> list[str]:
    return ["-m", "doc_processing_std_tools", *folder_options(skills, workspace), *extra]


async def test_stdio_serves_all_three_tool_sets(folders: tuple[Path, Path]) -> None:
    skills, workspace = folders
    params = StdioServerParameters(command=sys.executable, args=server_args(skills, workspace))
    async with Client(params) as client:
        await exercise(client, skills, workspace)
    assert (workspace / "out" / "summary.md").read_bytes() == b"total 17.00\n"


async def test_command_line_folders_override_the_environment(
    folders: tuple[Path, Path], tmp_path: Path
) -> None:
    skills, workspace = folders
    params = StdioServerParameters(
        command=sys.executable,
        args=server_args(skills, workspace),
        env={
            "DPTTOOLS_SKILLS_DIR": str(tmp_path / "elsewhere"),
            "DPTTOOLS_WORKSPACE_DIR": str(tmp_path),
        },
    )
    async with Client(params) as client:
        catalog = json.loads(text_of(await client.call_tool("list_skills", {})))
        listing = text_of(await client.call_tool("list_directory", {}))
    assert catalog["count"] == 1
    assert listing.splitlines()[0].startswith(".: 0 folders, 1 files")


async def test_environment_alone_configures_the_server(folders: tuple[Path, Path]) -> None:
    skills, workspace = folders
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools"],
        env={"DPTTOOLS_SKILLS_DIR": str(skills), "DPTTOOLS_WORKSPACE_DIR": str(workspace)},
    )
    async with Client(params) as client:
        catalog = json.loads(text_of(await client.call_tool("list_skills", {})))
        overview = json.loads(
            text_of(await client.call_tool("get_file_overview", {"path": "totals.csv"}))
        )
    assert catalog["count"] == 1
    assert overview["row_count"] == 2


@pytest.fixture
def http_server(folders: tuple[Path, Path]) -> Iterator[str]:
    """One copy of the composed server over streamable HTTP; yields its URL."""
    with serving(*folder_options(*folders)) as server:
        yield server.url


def post(url: str, method: str, params: dict[str, object], request_id: int) -> dict[str, Any]:
    """One JSON-RPC request as a bare HTTP POST, without any session header; the reply,
    which the server may send as JSON or as one server-sent event."""
    request = urllib.request.Request(
        url,
        data=json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        ).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
        assert response.headers.get("mcp-session-id") is None
        body = response.read().decode()
    if body.lstrip().startswith("{"):
        reply: dict[str, Any] = json.loads(body)
        return reply
    data = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
    assert len(data) == 1, body
    event: dict[str, Any] = json.loads(data[0])
    return event


async def test_streamable_http_serves_all_three_tool_sets(
    http_server: str, folders: tuple[Path, Path]
) -> None:
    skills, workspace = folders
    async with Client(http_server) as client:
        await exercise(client, skills, workspace)
    # Stateless: a second, independent client is served just the same.
    async with Client(http_server) as again:
        assert json.loads(text_of(await again.call_tool("list_skills", {})))["count"] == 1


def test_streamable_http_hands_out_no_session(http_server: str) -> None:
    reply = post(
        http_server,
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
        1,
    )
    assert reply["result"]["serverInfo"]["name"] == "doc-processing-std-tools"


def test_replicas_answer_requests_without_session_affinity(
    folders: tuple[Path, Path],
) -> None:
    """Behind a load balancer, a client's requests land on any copy: each copy answers
    a request it has never seen the session of."""
    with serving(*folder_options(*folders)) as one, serving(*folder_options(*folders)) as two:
        first, second = one.url, two.url
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "balancer-test", "version": "1"},
        }
        assert "result" in post(first, "initialize", hello, 1)
        # The next requests go to the other copy, and then back, with no session.
        listed = post(second, "tools/list", {}, 2)
        assert {t["name"] for t in listed["result"]["tools"]} == (
            SKILLS_TOOLS | FILE_TOOLS | DOC_TOOLS
        )
        written = post(
            second,
            "tools/call",
            {"name": "write_file", "arguments": {"path": "from-b.txt", "content": "b\n"}},
            3,
        )
        assert written["result"]["isError"] is False
        read = post(
            first, "tools/call", {"name": "read_file", "arguments": {"path": "from-b.txt"}}, 4
        )
        assert read["result"]["content"][0]["text"] == "b\n"


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--workspace", "/no/such/folder"], {}, "is not a folder"),
        ([], {"DPTTOOLS_MAX_FILE_SIZE_MB": "lots"}, "DPTTOOLS_MAX_FILE_SIZE_MB='lots'"),
    ],
)
def test_bad_configuration_stops_the_server_with_a_message(
    args: list[str], env: dict[str, str], message: str, tmp_path: Path
) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "doc_processing_std_tools", *args],
        env={"PATH": "/usr/bin:/bin", **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 2
    assert message in completed.stderr
