"""The tool allow-list (--tools / DPTTOOLS_TOOLS) and the --read-only preset, on the
composed server and on the standalone skills server, in memory and over stdio."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

from doc_processing_std_tools import make_composed_server
from doc_processing_std_tools.access import COMPOSED_TOOLS, SKILLS_TOOLS, TOOL_SCOPES
from doc_processing_std_tools.config import reset_settings
from doc_processing_std_tools.errors import ConfigError
from doc_processing_std_tools.skills.server import new_skills_server

from .helpers import Folders, tool_names

pytestmark = pytest.mark.anyio

CHANGING = {"write_file", "edit_file", "create_skill", "execute_skill_script"}


@pytest.fixture
def configured(folders: Folders, monkeypatch: pytest.MonkeyPatch) -> Iterator[Folders]:
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(folders.skills))
    monkeypatch.setenv("DPTTOOLS_WORKSPACE_DIR", str(folders.workspace))
    reset_settings()
    yield folders
    reset_settings()


def text_of(result: object) -> str:
    content = getattr(result, "content", [])
    assert len(content) == 1 and isinstance(content[0], TextContent)
    return content[0].text


async def test_the_tables_name_exactly_the_tools_the_servers_register() -> None:
    async with Client(make_composed_server()) as client:
        composed = [tool.name for tool in (await client.list_tools()).tools]
    async with Client(new_skills_server()) as client:
        skills = [tool.name for tool in (await client.list_tools()).tools]
    assert composed == list(COMPOSED_TOOLS)
    assert skills == list(SKILLS_TOOLS)
    assert set(TOOL_SCOPES) == set(COMPOSED_TOOLS)


async def test_an_allow_list_offers_only_the_named_tools(configured: Folders) -> None:
    server = make_composed_server(tools=["list_skills", "read_file"])
    async with Client(server) as client:
        names = tool_names((await client.list_tools()).tools)
        read = await client.call_tool("read_file", {"path": "notes.txt"})
        refused = await client.call_tool("write_file", {"path": "x.txt", "content": "no"})
    assert names == {"list_skills", "read_file"}
    assert text_of(read) == "first line\n"
    assert refused.is_error and "write_file" in text_of(refused)
    assert not (configured.workspace / "x.txt").exists()


async def test_read_only_leaves_out_every_tool_that_changes_something(
    configured: Folders,
) -> None:
    async with Client(make_composed_server(read_only=True)) as client:
        names = tool_names((await client.list_tools()).tools)
        refused = await client.call_tool(
            "execute_skill_script",
            {"skill_name": "invoice-check", "script_path": "scripts/hello.py"},
        )
    assert names == set(COMPOSED_TOOLS) - CHANGING
    assert refused.is_error
    assert "hello from the script" not in text_of(refused)


async def test_the_instructions_name_only_the_tools_offered() -> None:
    async with Client(make_composed_server()) as client:
        everything = client.instructions or ""
    assert all(
        name in everything
        for name in COMPOSED_TOOLS
        if name not in ("create_skill", "load_skill_resource", "execute_skill_script")
    )
    async with Client(make_composed_server(read_only=True)) as client:
        read_only = client.instructions or ""
    assert not [name for name in CHANGING if name in read_only]
    assert "read_file" in read_only and "list_skills" in read_only
    async with Client(make_composed_server(tools=["list_skills", "read_document"])) as client:
        assert client.instructions == (
            "Tools for document work. Skills: list_skills for a task's instructions. "
            "Documents: read_document."
        )


def test_an_unknown_name_is_an_error_listing_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        make_composed_server(tools=["list_skills", "delete_everything"])
    message = str(caught.value)
    assert "'delete_everything'" in message
    assert "valid names:" in message and "search_document" in message
    with pytest.raises(ConfigError, match="valid names: list_skills, search_skills, load_skill"):
        new_skills_server(tools=["read_file"])


def test_read_only_and_a_changing_tool_in_the_allow_list_contradict() -> None:
    with pytest.raises(ConfigError, match="write_file"):
        make_composed_server(tools=["read_file", "write_file"], read_only=True)


def clean_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DPTTOOLS_")}
    env.update(extra)
    return env


async def test_read_only_flag_over_stdio(folders: Folders) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "doc_processing_std_tools",
            "--skills-dir",
            str(folders.skills),
            "--workspace",
            str(folders.workspace),
            "--read-only",
        ],
    )
    async with Client(params) as client:
        names = tool_names((await client.list_tools()).tools)
        refused = await client.call_tool(
            "edit_file", {"path": "notes.txt", "old_text": "first", "new_text": "changed"}
        )
    assert names == set(COMPOSED_TOOLS) - CHANGING
    assert refused.is_error
    assert (folders.workspace / "notes.txt").read_text() == "first line\n"


async def test_the_skills_server_alone_takes_the_allow_list_from_the_environment(
    folders: Folders,
) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools.skills"],
        env={
            "DPTTOOLS_SKILLS_DIR": str(folders.skills),
            "DPTTOOLS_TOOLS": "list_skills, load_skill",
        },
    )
    async with Client(params) as client:
        names = tool_names((await client.list_tools()).tools)
        loaded = await client.call_tool("load_skill", {"skill_name": "invoice-check"})
    assert names == {"list_skills", "load_skill"}
    assert "# Steps" in text_of(loaded)


async def test_the_skills_server_alone_takes_read_only(folders: Folders) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools.skills", "--read-only"],
        env={"DPTTOOLS_SKILLS_DIR": str(folders.skills)},
    )
    async with Client(params) as client:
        names = tool_names((await client.list_tools()).tools)
    assert names == {"list_skills", "search_skills", "load_skill", "load_skill_resource"}


@pytest.mark.parametrize(
    "command",
    [
        ["-m", "doc_processing_std_tools", "--tools", "list_skills,rm_rf"],
        ["-m", "doc_processing_std_tools.skills", "--tools", "list_skills,rm_rf"],
    ],
)
def test_an_unknown_tool_stops_either_server_at_start_up(
    folders: Folders, command: list[str]
) -> None:
    done = subprocess.run(
        [sys.executable, *command],
        env=clean_env(DPTTOOLS_SKILLS_DIR=str(folders.skills)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "'rm_rf'" in done.stderr and "valid names: list_skills" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_empty_allow_list_is_an_error(folders: Folders) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "doc_processing_std_tools.skills"],
        env=clean_env(DPTTOOLS_SKILLS_DIR=str(folders.skills), DPTTOOLS_TOOLS=" , "),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "names no tool" in done.stderr
