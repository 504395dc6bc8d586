"""write_file and edit_file follow the change policy: they never write inside a
version-control folder, never leave a file executable, setuid or setgid, and refuse the
held-back classes (agent settings, build entry points, bytecode, skills) unless the
operator allows them, with a message that says what and how."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools.config import load_settings, reset_settings
from doc_processing_std_tools.errors import ChangeRefusedError
from doc_processing_std_tools.filesystem import operations as ops
from doc_processing_std_tools.filesystem.operations import Workspace
from doc_processing_std_tools.filesystem.server import file_system_server


def _tree(root: Path) -> list[tuple[str, bytes | None, int]]:
    return sorted(
        (
            str(p.relative_to(root)),
            p.read_bytes() if p.is_file() and not p.is_symlink() else None,
            stat.S_IMODE(p.lstat().st_mode),
        )
        for p in root.rglob("*")
    )


@pytest.mark.parametrize(
    ("path", "allow"),
    [
        (".git/config", None),
        (".git/hooks/pre-commit", None),
        ("vendor/lib/.git/config", None),
        (".GIT/HEAD", None),
        (".hg/hgrc", None),
        (".husky/pre-commit", None),
        ("CLAUDE.md", "agent"),
        ("docs/AGENTS.md", "agent"),
        (".claude/settings.json", "agent"),
        (".github/copilot-instructions.md", "agent"),
        (".vscode/tasks.json", "agent"),
        ("Makefile", "build"),
        ("conftest.py", "build"),
        (".github/workflows/ci.yml", "build"),
        ("pkg/__pycache__/m.cpython-311.pyc", "bytecode"),
        ("newskill/SKILL.md", "skills"),
    ],
)
def test_write_file_refuses_held_back_paths_and_changes_nothing(
    ws: Workspace, root: Path, path: str, allow: str | None
) -> None:
    (root / "keep.txt").write_text("keep", encoding="utf-8")
    before = _tree(root)
    with pytest.raises(ChangeRefusedError) as caught:
        ops.write_file(ws, path, "planted\n")
    message = str(caught.value)
    assert repr(path) in message and "Nothing was changed" in message
    if allow is None:
        assert "DPTTOOLS_WRITE_ALLOW" not in message
    else:
        assert f"DPTTOOLS_WRITE_ALLOW={allow}" in message
    assert _tree(root) == before  # not even a folder on the way was made


def test_edit_file_refuses_an_existing_agent_file(ws: Workspace, root: Path) -> None:
    (root / "CLAUDE.md").write_text("Be careful.\n", encoding="utf-8")
    with pytest.raises(ChangeRefusedError, match="agent instructions"):
        ops.edit_file(ws, "CLAUDE.md", "careful", "reckless")
    assert (root / "CLAUDE.md").read_text(encoding="utf-8") == "Be careful.\n"


def test_a_link_to_a_held_back_file_is_judged_by_its_target(ws: Workspace, root: Path) -> None:
    (root / "AGENTS.md").write_text("rules\n", encoding="utf-8")
    (root / "notes.md").symlink_to("AGENTS.md")
    (root / ".git").mkdir()
    (root / "vcs").symlink_to(".git")
    with pytest.raises(ChangeRefusedError, match=r"AGENTS\.md"):
        ops.write_file(ws, "notes.md", "planted")
    with pytest.raises(ChangeRefusedError, match=r"\.git"):
        ops.write_file(ws, "vcs/config", "[core]\n\tfsmonitor = touch /tmp/x\n")
    assert (root / "AGENTS.md").read_text(encoding="utf-8") == "rules\n"
    assert not (root / ".git" / "config").exists()


@pytest.mark.parametrize("mode", [0o755, 0o4755, 0o2755, 0o6711, 0o1777, 0o777])
def test_edits_never_leave_a_file_executable_setuid_or_setgid(
    ws: Workspace, root: Path, mode: int
) -> None:
    target = root / "tool.txt"
    target.write_text("a = 1\n", encoding="utf-8")
    target.chmod(mode)
    message = ops.edit_file(ws, "tool.txt", "1", "2")
    after = stat.S_IMODE(target.stat().st_mode)
    assert after & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | 0o111 | stat.S_IWOTH) == 0
    assert after == mode & 0o664
    assert f"from {mode:04o} to {after:04o}" in message
    message = ops.write_file(ws, "tool.txt", "b = 3\n")
    assert "permissions" not in message  # nothing left to take away
    assert stat.S_IMODE(target.stat().st_mode) == after


def test_new_files_are_never_executable(ws: Workspace, root: Path) -> None:
    ops.write_file(ws, "out/report.md", "# Report\n")
    assert stat.S_IMODE((root / "out/report.md").stat().st_mode) & 0o7111 == 0


def test_the_operator_lets_agent_files_through(root: Path, tmp_path: Path) -> None:
    settings = load_settings(
        {
            "DPTTOOLS_WORKSPACE_DIR": str(root),
            "DPTTOOLS_SKILLS_DIR": str(tmp_path / "skills"),
            "DPTTOOLS_WRITE_ALLOW": "agent",
        }
    )
    ws = Workspace.from_settings(settings)
    assert "created" in ops.write_file(ws, "CLAUDE.md", "Use British spelling.\n")
    assert "Replaced" in ops.edit_file(ws, "CLAUDE.md", "British", "Canadian")
    # Other classes stay held back, and version-control folders always are.
    with pytest.raises(ChangeRefusedError):
        ops.write_file(ws, "Makefile", "all:\n\ttrue\n")
    with pytest.raises(ChangeRefusedError):
        ops.write_file(ws, ".git/CLAUDE.md", "x")


def test_secrets_stay_writable_by_the_file_tools(ws: Workspace, root: Path) -> None:
    ops.write_file(ws, ".env", "TOKEN=abc\n")
    assert (root / ".env").read_text(encoding="utf-8") == "TOKEN=abc\n"


@pytest.mark.anyio
async def test_the_refusal_reaches_the_client(root: Path, tmp_path: Path) -> None:
    async with Client(file_system_server) as client:
        result = await client.call_tool(
            "write_file", {"path": ".claude/settings.json", "content": "{}"}
        )
    block = result.content[0]
    assert result.is_error and isinstance(block, TextContent)
    assert "DPTTOOLS_WRITE_ALLOW=agent" in block.text
    assert not (root / ".claude").exists()
    reset_settings()
