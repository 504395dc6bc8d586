"""SKILL.md files deeper than the depth searched are named by the skills_deeper warning
even when skills were found at that depth (issue 20, item 5): in list_skills over a real
session, in ``dpt-skills list`` and in ``dpt-skills validate``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

pytestmark = pytest.mark.anyio


def _skill(folder: Path, name: str) -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: The {name} skill.\n---\n\n# Steps\n", encoding="utf-8"
    )


@pytest.fixture
def collection(tmp_path: Path) -> Path:
    """Three skills at depth 1 and four in plugins/*/skills/* (depth 4)."""
    root = tmp_path / "collection"
    for name in ("alpha", "beta", "gamma"):
        _skill(root / name, name)
    for index in range(4):
        _skill(root / "plugins" / f"p{index}" / "skills" / f"deep-{index}", f"deep-{index}")
    return root.resolve()


def _dpt_skills(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "doc_processing_std_tools.skills.cli", *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_list_skills_names_the_deeper_skills_next_to_those_found(
    collection: Path, tmp_path: Path
) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_processing_std_tools", "--workspace", str(tmp_path)],
        env={"DPTTOOLS_SKILLS_DIR": str(collection)},
    )
    async with Client(params) as client:
        result = await client.call_tool("list_skills", {})
    block = result.content[0]
    assert isinstance(block, TextContent)
    payload = json.loads(block.text)
    assert payload["count"] == 3
    (deeper,) = [d for d in payload["diagnostics"] if d["code"] == "skills_deeper"]
    assert deeper["level"] == "warning"
    assert "3 skill(s) were found" in deeper["message"]
    assert "plugins/p0/skills/deep-0" in deeper["message"]
    assert "DPTTOOLS_SKILLS_DEPTH=4" in deeper["message"]


def test_dpt_skills_list_and_validate_name_them_too(collection: Path) -> None:
    listing = _dpt_skills("list", "--skills-dir", str(collection))
    assert listing.returncode == 0, listing.stderr
    assert "[skills_deeper]" in listing.stdout + listing.stderr
    validation = _dpt_skills("validate", str(collection))
    assert "[skills_deeper]" in validation.stdout + validation.stderr
    assert "plugins/p0/skills/deep-0" in validation.stdout + validation.stderr


def test_no_note_at_the_depth_that_finds_them_all(collection: Path) -> None:
    listing = _dpt_skills("list", "--skills-dir", str(collection), "--skills-depth", "4")
    assert listing.returncode == 0, listing.stderr
    assert "deep-3" in listing.stdout
    assert "skills_deeper" not in listing.stdout + listing.stderr


def test_a_deeper_skill_linked_at_the_top_is_listed_and_not_named(tmp_path: Path) -> None:
    root = tmp_path / "linked"
    _skill(root / "top", "top")
    _skill(root / "vendor" / "pack" / "pdf", "pdf")
    (root / "pdf").symlink_to(root / "vendor" / "pack" / "pdf")
    listing = _dpt_skills("list", "--skills-dir", str(root), "--json")
    payload = json.loads(listing.stdout)
    assert sorted(skill["name"] for skill in payload["skills"]) == ["pdf", "top"]
    assert "diagnostics" not in payload
