"""Tool descriptions reach the model without the indentation of the docstrings they come
from (issue 20, item 3): tools/list over real sessions, the composed server as a stdio
process and each single server in process."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import Tool

pytestmark = pytest.mark.anyio


def _indented_lines(tools: list[Tool]) -> list[str]:
    return [
        f"{tool.name}: {line!r}"
        for tool in tools
        for line in (tool.description or "").splitlines()
        if line[:1].isspace()
    ]


def _check(tools: list[Tool]) -> None:
    assert tools
    assert _indented_lines(tools) == []
    for tool in tools:
        description = tool.description or ""
        assert description, f"{tool.name} has no description"
        assert description == inspect.cleandoc(description), tool.name


async def test_the_composed_server_lists_descriptions_without_indentation(
    tmp_path: Path,
) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools", "--workspace", str(tmp_path)],
        env={"DPTTOOLS_SKILLS_DIR": str(tmp_path)},
    )
    async with Client(params) as client:
        tools = (await client.list_tools()).tools
    assert len(tools) >= 17
    _check(tools)


@pytest.mark.parametrize("name", ["skills_server", "file_system_server", "docs_server"])
async def test_each_server_lists_descriptions_without_indentation(name: str) -> None:
    import doc_processing_std_tools

    async with Client(getattr(doc_processing_std_tools, name)) as client:
        _check((await client.list_tools()).tools)
