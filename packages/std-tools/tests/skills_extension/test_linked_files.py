"""Links that stay inside the skills folder, over the MCP SDK's own client: a linked file,
a linked subfolder and a linked skill folder are listed with the digests of what they
lead to, and read back as those bytes."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import pytest
from mcp import Client
from mcp.types import TextResourceContents

from doc_processing_std_tools.skills.server import new_skills_server

from .support import list_all

if TYPE_CHECKING:
    from conftest import SkillsFolder

pytestmark = pytest.mark.anyio


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


async def test_links_inside_the_skills_folder_are_hashed_as_what_they_lead_to(
    skills: SkillsFolder,
) -> None:
    shared = skills.path / "shared-notes"  # not a skill: no SKILL.md
    (shared / "deep").mkdir(parents=True)
    (shared / "deep" / "table.md").write_text("| a | b |\n", "utf-8")
    (shared / "glossary.md").write_text("term: meaning\n", "utf-8")
    folder = skills.write("linked-kit")
    (folder / "glossary.md").symlink_to(shared / "glossary.md")
    (folder / "refs").symlink_to(shared / "deep", target_is_directory=True)
    (folder / "own.md").write_text("own\n", "utf-8")
    real = skills.path / "real-folder"
    real.mkdir()
    (real / "SKILL.md").write_text("---\nname: via-link\ndescription: D.\n---\n", "utf-8")
    (real / "tool.py").write_text("print(1)\n", "utf-8")
    (skills.path / "via-link").symlink_to(real, target_is_directory=True)
    async with Client(new_skills_server()) as client:
        entries, _ = await list_all(client)
        digests = {r["uri"]: r["digest"] for e in entries for r in e["resources"]}
        read = await client.read_resource("skill://linked-kit/refs/table.md")
    assert digests["skill://linked-kit/glossary.md"] == sha(b"term: meaning\n")
    assert digests["skill://linked-kit/refs/table.md"] == sha(b"| a | b |\n")
    assert digests["skill://linked-kit/own.md"] == sha(b"own\n")
    assert digests["skill://via-link/tool.py"] == sha(b"print(1)\n")
    (content,) = read.contents
    assert isinstance(content, TextResourceContents) and content.text == "| a | b |\n"
