"""Paths that start with ``~`` are refused, not taken as a folder named ``~``; and no
refusal names where a link leading outside the workspace points."""

from __future__ import annotations

from pathlib import Path

import pytest

from doc_processing_std_tools.documents import api
from doc_processing_std_tools.errors import PathOutsideRootError, StdToolsError
from doc_processing_std_tools.filesystem import operations as ops
from doc_processing_std_tools.filesystem.operations import Workspace

_TILDE_PATHS = ("~", "~/.claude/CLAUDE.md", "~root/notes.md", " ~/x", "~\\x")


@pytest.mark.parametrize("path", _TILDE_PATHS)
def test_write_file_refuses_a_path_that_starts_with_a_tilde(
    ws: Workspace, root: Path, path: str
) -> None:
    with pytest.raises(PathOutsideRootError) as caught:
        ops.write_file(ws, path, "remember this")
    message = str(caught.value)
    assert "relative to the workspace" in message
    assert "'~' is not expanded" in message
    assert list(root.iterdir()) == []


def test_every_file_and_document_tool_refuses_a_tilde_path(ws: Workspace, root: Path) -> None:
    # A folder really named `~` exists, so only the check can refuse it.
    (root / "~").mkdir()
    (root / "~" / "a.txt").write_text("text\n", encoding="utf-8")
    calls = [
        lambda: ops.read_file(ws, "~/a.txt"),
        lambda: ops.write_file(ws, "~/b.txt", "x"),
        lambda: ops.edit_file(ws, "~/a.txt", "text", "other"),
        lambda: ops.list_directory(ws, "~"),
        lambda: ops.find_files(ws, "*.txt", "~"),
        lambda: ops.search_text(ws, "text", "~"),
        lambda: ops.get_file_info(ws, "~/a.txt"),
        lambda: api.read_document(ws, "~/a.txt"),
        lambda: api.get_file_overview(ws, "~/a.txt"),
    ]
    for call in calls:
        with pytest.raises(PathOutsideRootError, match="is not expanded"):
            call()
    assert (root / "~" / "a.txt").read_text(encoding="utf-8") == "text\n"
    assert not (root / "~" / "b.txt").exists()


def test_a_tilde_later_in_a_path_is_an_ordinary_name(ws: Workspace, root: Path) -> None:
    assert "Wrote" in ops.write_file(ws, "notes/~draft.md", "x")
    assert (root / "notes" / "~draft.md").read_text(encoding="utf-8") == "x"


def test_a_refusal_never_names_where_an_outside_link_points(
    ws: Workspace, root: Path, tmp_path: Path
) -> None:
    secrets = tmp_path / "home-of-someone" / ".ssh"
    secrets.mkdir(parents=True)
    (secrets / "id_rsa").write_text("PRIVATE KEY\n", encoding="utf-8")
    (root / "key").symlink_to(secrets / "id_rsa")
    (root / "keys").symlink_to(secrets)
    (root / "relative-key").symlink_to("../home-of-someone/.ssh/id_rsa")
    calls = [
        lambda: ops.read_file(ws, "key"),
        lambda: ops.read_file(ws, "relative-key"),
        lambda: ops.write_file(ws, "keys/new", "x"),
        lambda: ops.edit_file(ws, "key", "PRIVATE", "x"),
        lambda: ops.list_directory(ws, "keys"),
        lambda: ops.find_files(ws, "*", "keys"),
        lambda: ops.search_text(ws, "KEY", "key"),
        lambda: ops.get_file_info(ws, "key"),
        lambda: api.read_document(ws, "key"),
    ]
    for call in calls:
        with pytest.raises(StdToolsError) as caught:
            call()
        message = str(caught.value)
        assert "outside" in message
        assert "home-of-someone" not in message
        assert ".ssh" not in message
        assert "id_rsa" not in message
