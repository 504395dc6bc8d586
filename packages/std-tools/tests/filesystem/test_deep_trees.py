"""A folder tree deeper than the walks go: find_files and search_text still answer for the
rest of the workspace, and say which folder they did not enter. The tree is made by
write_file itself, through the composed server over HTTP on 127.0.0.1."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import pytest
from http_child import Started, serving
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from doc_processing_std_tools.filesystem.operations import MAX_WALK_DEPTH

pytestmark = pytest.mark.anyio

LEVELS = 1100


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Started, Path]]:
    root = tmp_path_factory.mktemp("deep")
    workspace, skills = root / "workspace", root / "skills"
    workspace.mkdir()
    skills.mkdir()
    args = ["--workspace", str(workspace), "--skills-dir", str(skills)]
    try:
        with serving(*args) as started:
            yield started, workspace
    finally:
        remove_chain(workspace / "d")


def remove_chain(folder: Path) -> None:
    """Remove the tree of nested ``d`` folders one level at a time: shutil.rmtree (and
    pytest's clean-up of old temporary folders after it) recurses once per level."""
    spare = folder.with_name("d.spare")
    while folder.is_dir():
        inner = folder / "d"
        if inner.is_dir():
            inner.rename(spare)
            shutil.rmtree(folder)
            spare.rename(folder)
        else:
            shutil.rmtree(folder)


@pytest.fixture
async def client(server: tuple[Started, Path]) -> AsyncIterator[Client]:
    started, _ = server
    async with (
        httpx2.AsyncClient(timeout=120) as http,
        Client(streamable_http_client(started.url, http_client=http)) as session,
    ):
        yield session


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return result.content[0].text


async def make_tree(client: Client) -> str:
    """A 1,100-level tree with a file at its bottom, and two files near the top."""
    deep = "d/" * LEVELS + "bottom.txt"
    for path, content in [(deep, "needle at the bottom\n"), ("top.txt", "needle on top\n")]:
        written = await client.call_tool("write_file", {"path": path, "content": content})
        assert not written.is_error, text_of(written)
    shallow = "d/" * 3 + "near.txt"
    written = await client.call_tool("write_file", {"path": shallow, "content": "needle near\n"})
    assert not written.is_error, text_of(written)
    # The first folder the walk leaves out: one level past the limit.
    return "/".join(["d"] * (MAX_WALK_DEPTH + 1))


async def test_find_files_answers_for_the_rest_and_names_the_folder_it_left_out(
    client: Client,
) -> None:
    skipped = await make_tree(client)
    found = await client.call_tool("find_files", {"pattern": "**/*.txt"})
    text = text_of(found)
    assert not found.is_error, text
    assert "top.txt" in text.splitlines()
    assert "d/d/d/near.txt" in text.splitlines()
    assert "bottom.txt" not in text
    assert f"1 folder(s) deeper than {MAX_WALK_DEPTH} folder levels under .: {skipped};" in text


async def test_search_text_answers_for_the_rest_and_names_the_folder_it_left_out(
    client: Client,
) -> None:
    skipped = await make_tree(client)
    found = await client.call_tool("search_text", {"pattern": "needle"})
    text = text_of(found)
    assert not found.is_error, text
    assert "top.txt:1: needle on top" in text
    assert "d/d/d/near.txt:1: needle near" in text
    assert "at the bottom" not in text
    assert f"1 folder(s) deeper than {MAX_WALK_DEPTH} folder levels under .: {skipped};" in text
