"""An absolute path that names a place inside the workspace is taken by every file and
document tool (so the `absolute_path` of get_file_info can be passed back as it is); any
other absolute path is refused in one wording, and a link never leads out (issue 28)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools.documents import api
from doc_processing_std_tools.errors import PathOutsideRootError
from doc_processing_std_tools.filesystem import operations as ops
from doc_processing_std_tools.filesystem.operations import Workspace
from doc_processing_std_tools.filesystem.server import file_system_server

Call = Callable[[Workspace, str], object]

READERS: dict[str, Call] = {
    "read_file": lambda ws, path: ops.read_file(ws, path),
    "get_file_info": lambda ws, path: ops.get_file_info(ws, path),
    "edit_file": lambda ws, path: ops.edit_file(ws, path, "alpha", "alpha"),
    "read_document": lambda ws, path: api.read_document(ws, path),
    "get_file_overview": lambda ws, path: api.get_file_overview(ws, path),
}
FOLDER_TOOLS: dict[str, Call] = {
    "list_directory": lambda ws, path: ops.list_directory(ws, path),
    "find_files": lambda ws, path: ops.find_files(ws, "*.txt", path),
    "search_text": lambda ws, path: ops.search_text(ws, "alpha", path),
}


@pytest.fixture
def notes(root: Path) -> Path:
    (root / "sub").mkdir()
    note = root / "sub" / "notes.txt"
    note.write_text("alpha\nbeta\n", encoding="utf-8")
    return note


@pytest.mark.parametrize("tool", sorted(READERS))
def test_an_absolute_path_inside_the_workspace_reaches_the_file(
    ws: Workspace, notes: Path, tool: str
) -> None:
    answer = str(READERS[tool](ws, str(notes)))
    assert answer == str(READERS[tool](ws, "sub/notes.txt"))


@pytest.mark.parametrize("tool", sorted(FOLDER_TOOLS))
def test_an_absolute_folder_inside_the_workspace_is_listed(
    ws: Workspace, root: Path, notes: Path, tool: str
) -> None:
    assert str(FOLDER_TOOLS[tool](ws, str(root / "sub"))) == str(FOLDER_TOOLS[tool](ws, "sub"))
    assert str(FOLDER_TOOLS[tool](ws, str(root))) == str(FOLDER_TOOLS[tool](ws, "."))


def test_write_file_takes_an_absolute_path_inside_the_workspace(ws: Workspace, root: Path) -> None:
    ops.write_file(ws, str(root / "out" / "new.txt"), "written\n")
    assert (root / "out" / "new.txt").read_text(encoding="utf-8") == "written\n"


@pytest.mark.parametrize("tool", sorted(READERS | FOLDER_TOOLS))
def test_an_absolute_path_outside_the_workspace_is_refused_in_one_wording(
    ws: Workspace, root: Path, outside: Path, tool: str
) -> None:
    calls = READERS | FOLDER_TOOLS
    with pytest.raises(PathOutsideRootError) as caught:
        calls[tool](ws, str(outside))
    assert str(caught.value) == (
        f"path {str(outside)!r} is outside the workspace {root}; pass a path inside it, "
        f"either relative to it (such as 'notes.md') or absolute (starting with '{root}/')."
    )
    assert "top secret" not in str(caught.value)


def test_an_absolute_path_through_an_outside_link_is_refused(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "leak.txt").symlink_to(outside)
    with pytest.raises(PathOutsideRootError, match="leads outside"):
        ops.read_file(ws, str(root / "leak.txt"))
    with pytest.raises(PathOutsideRootError, match=r"'\.\.'"):
        ops.read_file(ws, f"{root}/../{outside.name}")


@pytest.mark.anyio
async def test_get_file_info_gives_a_path_read_file_takes(root: Path, notes: Path) -> None:
    async with Client(file_system_server) as client:
        info = await client.call_tool("get_file_info", {"path": "sub/notes.txt"})
        block = info.content[0]
        assert isinstance(block, TextContent)
        absolute = json.loads(block.text)["absolute_path"]
        read = await client.call_tool("read_file", {"path": absolute})
    assert not read.is_error
    block = read.content[0]
    assert isinstance(block, TextContent)
    assert "alpha" in block.text
