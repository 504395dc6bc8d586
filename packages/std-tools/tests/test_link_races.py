"""Attacks: another process swaps files and folders for symbolic links while tools work.

A swapper child process keeps replacing a file (or a folder) inside the root with a
symbolic link to a secret outside it, and back, as fast as it can. Meanwhile the tools are
called in a loop, bounded in time and count. A tool may fail while the link is in place
(that is the refusal working), but it must never return the secret, and a write must
never create anything outside the root.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from link_swapper import MAX_CALLS, SECONDS, hammer, swapping
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools import file_system_server
from doc_processing_std_tools.config import get_settings, load_settings, reset_settings
from doc_processing_std_tools.filesystem import operations as ops
from doc_processing_std_tools.filesystem.operations import Workspace
from doc_processing_std_tools.skills import actions
from doc_processing_std_tools.skills.catalog.scan import scan_once
from doc_processing_std_tools.skills.server import skills_server_state as skills_state

SECRET = "outside secret: never shown"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(workspace, outside folder holding secret.txt); settings point at the workspace."""
    root = tmp_path / "workspace"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "notes.txt").write_text("inside text\n", encoding="utf-8")
    (root / "victim.txt").write_text("inside text\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    (outside / "notes.txt").write_text(SECRET + "\n", encoding="utf-8")
    reset_settings(
        load_settings(
            {
                "DPTTOOLS_WORKSPACE_DIR": str(root),
                "DPTTOOLS_SKILLS_DIR": str(tmp_path / "skills"),
                "DPTTOOLS_MAX_FILE_SIZE_MB": "1",
            }
        )
    )
    yield root.resolve(), outside.resolve()
    reset_settings()


def test_read_file_never_reads_through_a_swapped_file_link(site: tuple[Path, Path]) -> None:
    root, outside = site
    ws = Workspace.from_settings(get_settings())
    with swapping(root / "victim.txt", outside / "secret.txt"):
        calls, refused, leaks = hammer(lambda: ops.read_file(ws, "victim.txt"))
    assert leaks == [], f"{len(leaks)} of {calls} calls read outside content"
    assert refused < calls, "no call ever succeeded: the attack proved nothing"


def test_read_file_never_reads_through_a_swapped_folder_link(site: tuple[Path, Path]) -> None:
    root, outside = site
    ws = Workspace.from_settings(get_settings())
    with swapping(root / "docs", outside):
        calls, refused, leaks = hammer(lambda: ops.read_file(ws, "docs/notes.txt"))
    assert leaks == [], f"{len(leaks)} of {calls} calls read outside content"
    assert refused < calls


def test_write_file_never_creates_a_file_outside(site: tuple[Path, Path]) -> None:
    root, outside = site
    ws = Workspace.from_settings(get_settings())
    before = sorted(p.name for p in outside.iterdir())
    counter = iter(range(MAX_CALLS))
    with swapping(root / "docs", outside):
        calls, refused, _ = hammer(
            lambda: ops.write_file(ws, f"docs/new-{next(counter)}.txt", "written")
        )
    assert sorted(p.name for p in outside.iterdir()) == before
    assert (outside / "secret.txt").read_text(encoding="utf-8") == SECRET + "\n"
    assert refused < calls


def test_write_file_never_writes_through_a_swapped_file_link(site: tuple[Path, Path]) -> None:
    root, outside = site
    ws = Workspace.from_settings(get_settings())
    with swapping(root / "victim.txt", outside / "secret.txt"):
        hammer(lambda: ops.write_file(ws, "victim.txt", "overwritten"))
    assert (outside / "secret.txt").read_text(encoding="utf-8") == SECRET + "\n"
    assert sorted(p.name for p in outside.iterdir()) == ["notes.txt", "secret.txt"]


def test_load_skill_resource_never_reads_through_a_swapped_link(
    site: tuple[Path, Path], tmp_path: Path
) -> None:
    _, outside = site
    skills = tmp_path / "skills"
    folder = skills / "res"
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: res\ndescription: d\n---\nbody\n", "utf-8")
    (folder / "references" / "guide.md").write_text("inside text\n", encoding="utf-8")
    settings = load_settings({"DPTTOOLS_SKILLS_DIR": str(skills)})
    victim = folder / "references" / "guide.md"
    with swapping(victim, outside / "secret.txt"):
        calls, refused, leaks = hammer(
            lambda: actions.load_skill_resource(
                skills_state, settings, "res", "references/guide.md"
            )
        )
    assert leaks == [], f"{len(leaks)} of {calls} calls read outside content"
    assert refused < calls


@pytest.mark.parametrize("swapped", ["SKILL.md", "folder"])
def test_a_cold_skills_scan_never_lists_a_skill_md_swapped_in_from_outside(
    site: tuple[Path, Path], tmp_path: Path, swapped: str
) -> None:
    _, outside = site
    skills = tmp_path / "skills"
    folder = skills / "res"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: res\ndescription: d\n---\nbody\n", "utf-8")
    elsewhere = outside / "res"
    elsewhere.mkdir()
    (elsewhere / "SKILL.md").write_text(
        f"---\nname: res\ndescription: {SECRET}\n---\nbody\n", "utf-8"
    )
    victim, target = (
        (folder / "SKILL.md", elsewhere / "SKILL.md")
        if swapped == "SKILL.md"
        else (folder, elsewhere)
    )
    listed = 0

    def scan() -> str:
        nonlocal listed
        catalog = scan_once(skills, max_bytes=1 << 20)
        # (The swapper's own name for the other side, res.swaplink, breaks the naming rule
        # and is listed with a warning when it is the real folder: only 'res' counts.)
        listed += catalog.get("res") is not None
        return catalog.json

    with swapping(victim, target):
        calls, _, leaks = hammer(scan)
    assert leaks == [], f"{len(leaks)} of {calls} scans listed outside content"
    assert 0 < listed < calls, "every scan listed the skill, or none did: no race was seen"


@pytest.mark.anyio
async def test_read_file_over_mcp_never_reads_through_a_swapped_link(
    site: tuple[Path, Path],
) -> None:
    root, outside = site
    leaks = calls = 0
    with swapping(root / "victim.txt", outside / "secret.txt"):
        async with Client(file_system_server) as client:
            deadline = time.monotonic() + SECONDS
            while time.monotonic() < deadline:
                calls += 1
                result = await client.call_tool("read_file", {"path": "victim.txt"})
                block = result.content[0]
                assert isinstance(block, TextContent)
                leaks += "never shown" in block.text
    assert calls > 50
    assert leaks == 0, f"{leaks} of {calls} MCP calls read outside content"


def test_list_directory_never_lists_a_folder_swapped_in_from_outside(
    site: tuple[Path, Path],
) -> None:
    root, outside = site
    ws = Workspace.from_settings(get_settings())
    with swapping(root / "docs", outside):
        calls, refused, leaks = hammer(
            lambda: "never shown" if "secret.txt" in ops.list_directory(ws, "docs") else ""
        )
    assert leaks == [], f"{len(leaks)} listings showed the outside folder"
    assert refused < calls


def test_get_file_info_never_describes_a_file_swapped_in_from_outside(
    site: tuple[Path, Path],
) -> None:
    root, outside = site
    ws = Workspace.from_settings(get_settings())
    secret_size = f'"size_bytes": {len(SECRET) + 1}'
    with swapping(root / "victim.txt", outside / "secret.txt"):
        calls, refused, leaks = hammer(
            lambda: "never shown" if secret_size in ops.get_file_info(ws, "victim.txt") else ""
        )
    assert leaks == [], f"{len(leaks)} of {calls} calls described the outside file"
    assert refused < calls
