"""Anthropic native skills (through provider_kwargs) and the injected skill catalog reach
the Messages API request together, each unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from doc_processing_toolkit import Agent
from doc_processing_toolkit.models import AnthropicModel
from doc_processing_toolkit.skills import SkillEntry, render_catalog

pytestmark = pytest.mark.anyio

NATIVE: dict[str, Any] = {
    "container": {"skills": [{"type": "anthropic", "skill_id": "xlsx", "version": "latest"}]},
    "betas": ["code-execution-2025-08-25", "skills-2025-10-02"],
    "tools": [{"type": "code_execution_20250825", "name": "code_execution"}],
}


def catalog_server(folder: Path) -> MCPServer:
    """A minimal server with the skills contract answering one skill."""
    server = MCPServer("skills-anywhere")

    @server.tool()
    def list_skills() -> str:
        """List the skills."""
        skill = {"name": "memo", "description": "Writes memos.", "path": str(folder / "SKILL.md")}
        return json.dumps({"skills": [skill], "count": 1})

    @server.tool()
    def load_skill(skill_name: str) -> str:
        """Load a skill."""
        return "body"

    return server


async def test_native_skills_and_the_catalog_reach_the_wire(
    opened: Any, stand_in: Any, anthropic_wire: Any, tmp_path: Path
) -> None:
    stand_in.reply_json(anthropic_wire.message([anthropic_wire.text("ok")]))
    model = opened(
        AnthropicModel("claude-test-1", api_key="k", base_url=stand_in.url, max_retries=0)
    )
    agent = Agent(
        model=model,
        instructions="Be brief.",
        tools=[catalog_server(tmp_path)],
        provider_kwargs=NATIVE,
    )
    async with agent:
        result = await agent.run("Make a spreadsheet")
    assert result.skills.status == "injected"
    body = stand_in.last.body
    expected = render_catalog([SkillEntry("memo", "Writes memos.", str(tmp_path / "SKILL.md"))])
    system = body["system"]
    text = system if isinstance(system, str) else "".join(block["text"] for block in system)
    assert text == f"Be brief.\n\n{expected}"
    assert body["container"] == NATIVE["container"]
    assert [t["name"] for t in body["tools"]] == ["list_skills", "load_skill", "code_execution"]
    assert body["tools"][-1] == NATIVE["tools"][0]
    assert "skills-2025-10-02" in stand_in.last.headers["anthropic-beta"]
