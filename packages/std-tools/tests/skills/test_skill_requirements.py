"""list_skills' top-level ``requires``: the tools a skill's metadata names under
``requires-tools`` and the MCP servers its ``agents/openai.yaml`` depends on, kept whole
when the answer is cut to the output limit, through a real MCP client."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools import skills_server

if TYPE_CHECKING:
    from conftest import SkillsFolder

pytestmark = pytest.mark.anyio

OPENAI_YAML = """\
interface:
  display_name: Review pull requests
dependencies:
  tools:
    - type: mcp
      value: github
      description: the GitHub server
    - type: env_var
      value: GITHUB_TOKEN
"""


async def listing() -> dict[str, Any]:
    async with Client(skills_server) as client:
        result = await client.call_tool("list_skills", {})
    block = result.content[0]
    assert isinstance(block, TextContent) and not result.is_error
    payload: dict[str, Any] = json.loads(block.text)
    return payload


async def test_needs_come_from_metadata_and_agents_openai_yaml(skills: SkillsFolder) -> None:
    skills.write(
        "release-announcer",
        "name: release-announcer\ndescription: Posts release notes.\nmetadata:\n"
        '  requires-tools: "slack:post_message  read_file"\n',
    )
    folder = skills.write("pr-review", description="Reviews pull requests.")
    (folder / "agents").mkdir()
    (folder / "agents" / "openai.yaml").write_text(OPENAI_YAML, encoding="utf-8")
    skills.write("plain", description="Needs nothing.")
    payload = await listing()
    assert payload["requires"] == {
        "release-announcer": {"tools": ["slack:post_message", "read_file"], "servers": []},
        "pr-review": {"tools": [], "servers": ["github"]},
    }


async def test_a_catalog_without_needs_has_no_requires(skills: SkillsFolder) -> None:
    skills.write("plain", description="Needs nothing.")
    assert "requires" not in await listing()


async def test_requires_is_kept_whole_when_the_list_is_cut(skills: SkillsFolder) -> None:
    for index in range(60):
        skills.write(f"task-{index:02d}", description="Handles one routine kind of paperwork. " * 4)
    skills.write(
        "zz-poster",
        "name: zz-poster\ndescription: Posts.\nmetadata:\n  requires-tools: slack:post\n",
    )
    payload = await listing()  # the output limit is 4,000 characters here
    assert "truncated" in payload
    assert "zz-poster" not in {skill["name"] for skill in payload["skills"]}
    assert all("metadata" not in skill for skill in payload["skills"])
    assert payload["requires"] == {"zz-poster": {"tools": ["slack:post"], "servers": []}}


async def test_an_openai_yaml_behind_a_link_is_not_read(
    skills: SkillsFolder, tmp_path: Any
) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text(OPENAI_YAML, encoding="utf-8")
    folder = skills.write("linked", description="Has a linked file.")
    (folder / "agents").mkdir()
    (folder / "agents" / "openai.yaml").symlink_to(outside)
    assert "requires" not in await listing()
