"""The file system tools through a real in-memory MCP client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools.config import load_settings, reset_settings
from doc_processing_std_tools.filesystem.server import file_system_server

pytestmark = pytest.mark.anyio

TOOLS = {
    "read_file",
    "write_file",
    "edit_file",
    "list_directory",
    "find_files",
    "search_text",
    "get_file_info",
}


def contents(*files: Path) -> list[bytes]:
    return [f.read_bytes() for f in files]


async def call(client: Client, name: str, **arguments: object) -> tuple[str, bool]:
    result = await client.call_tool(name, arguments)
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text, result.is_error


async def test_the_server_is_named_and_lists_the_seven_tools(root: Path) -> None:
    assert file_system_server.name == "file-system-tools"
    async with Client(file_system_server) as client:
        tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == TOOLS
    assert all(t.description for t in tools)
    read = next(t for t in tools if t.name == "read_file")
    assert set(read.input_schema["properties"]) == {"path", "start_line", "end_line"}


async def test_a_skill_file_is_written_edited_and_read_back(root: Path) -> None:
    async with Client(file_system_server) as client:
        text, error = await call(
            client, "write_file", path="skills/demo/SKILL.md", content="# Demo\n\nTODO\n"
        )
        # A SKILL.md makes a skill: held back unless the operator lets the tools write it.
        assert error and "DPTTOOLS_WRITE_ALLOW=skills" in text
        assert not (root / "skills").exists()
    reset_settings(
        load_settings(
            {
                "DPTTOOLS_WORKSPACE_DIR": str(root),
                "DPTTOOLS_SKILLS_DIR": str(root.parent / "skills"),
                "DPTTOOLS_WRITE_ALLOW": "skills",
            }
        )
    )
    async with Client(file_system_server) as client:
        text, error = await call(
            client, "write_file", path="skills/demo/SKILL.md", content="# Demo\n\nTODO\n"
        )
        assert not error and "created" in text
        text, error = await call(
            client, "edit_file", path="skills/demo/SKILL.md", old_text="TODO", new_text="Steps."
        )
        assert not error
        text, error = await call(client, "read_file", path="skills/demo/SKILL.md", start_line=3)
        assert (text, error) == ("Steps.\n", False)
        text, _ = await call(client, "find_files", pattern="**/SKILL.md")
        assert text == "skills/demo/SKILL.md"
        text, _ = await call(client, "search_text", pattern="Step")
        assert text == "skills/demo/SKILL.md:3: Steps."
        text, _ = await call(client, "list_directory", path="skills")
        assert text.splitlines()[1] == "demo/"
        info = json.loads((await call(client, "get_file_info", path="skills/demo/SKILL.md"))[0])
        assert info["line_count"] == 3


async def test_errors_reach_the_client_with_their_message(root: Path, outside: Path) -> None:
    (root / "dup.txt").write_text("x x\n", encoding="utf-8")
    (root / "escape").symlink_to(outside)
    async with Client(file_system_server) as client:
        text, error = await call(client, "edit_file", path="dup.txt", old_text="x", new_text="y")
        assert error and "found 2 times" in text
        text, error = await call(client, "read_file", path="../secret.txt")
        assert error and "'..'" in text
        text, error = await call(client, "read_file", path="escape")
        assert error and "leads outside" in text
        text, error = await call(client, "write_file", path="escape", content="pwned")
        assert error and "leads outside" in text
    assert contents(outside, root / "dup.txt") == [b"top secret\n", b"x x\n"]


async def test_the_workspace_is_read_at_call_time(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "here.txt").write_text("moved\n", encoding="utf-8")
    async with Client(file_system_server) as client:
        text, error = await call(client, "read_file", path="here.txt")
        assert error
        reset_settings(load_settings({"DPTTOOLS_WORKSPACE_DIR": str(other)}))
        text, error = await call(client, "read_file", path="here.txt")
        assert (text, error) == ("moved\n", False)


def test_the_server_is_exported_from_the_package() -> None:
    import doc_processing_std_tools as package

    assert "file_system_server" in package.__all__
    assert package.file_system_server is file_system_server


async def test_the_default_workspace_is_the_directory_of_the_first_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, later = tmp_path / "first", tmp_path / "later"
    for folder in (first, later):
        folder.mkdir()
        (folder / "where.txt").write_text(f"{folder.name}\n", encoding="utf-8")
    monkeypatch.delenv("DPTTOOLS_WORKSPACE_DIR", raising=False)
    monkeypatch.chdir(first)
    reset_settings()
    try:
        async with Client(file_system_server) as client:
            assert await call(client, "read_file", path="where.txt") == ("first\n", False)
            # Changing directory afterwards does not move the workspace.
            monkeypatch.chdir(later)
            assert await call(client, "read_file", path="where.txt") == ("first\n", False)
            text, error = await call(client, "read_file", path="../later/where.txt")
            assert error and "'..'" in text
    finally:
        reset_settings()
