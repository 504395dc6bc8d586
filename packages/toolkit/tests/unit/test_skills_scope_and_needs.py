"""Which skills an agent sees: skills_include / skills_exclude, skills that need tools the
agent lacks, and the default catalog budget, against std-tools' real skills server (in
process), a recording server with std-tools' tool names, and an extension server."""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from doc_processing_toolkit import Agent, AgentBuilder, ConfigError, TestModel
from doc_processing_toolkit.config import load_yaml
from doc_processing_toolkit.messages import ModelResponse, ToolResultPart
from doc_processing_toolkit.models.base import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call
from doc_processing_toolkit.skills import render_catalog

SERVERS = Path(__file__).parents[1] / "servers"
SKILLS_LOGGER = "doc_processing_toolkit.skills"
_spec = importlib.util.spec_from_file_location("extension_peer", SERVERS / "extension_peer.py")
assert _spec is not None and _spec.loader is not None
peer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def write_skill(
    root: Path,
    name: str,
    description: str,
    *,
    requires: str | None = None,
    openai_yaml: str | None = None,
) -> None:
    folder = root / name
    (folder / "scripts").mkdir(parents=True)
    metadata = f'metadata:\n  requires-tools: "{requires}"\n' if requires else ""
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{metadata}---\n# {name}\n",
        encoding="utf-8",
    )
    (folder / "scripts" / "run.py").write_text("print('ran')\n", encoding="utf-8")
    if openai_yaml is not None:
        (folder / "agents").mkdir()
        (folder / "agents" / "openai.yaml").write_text(openai_yaml, encoding="utf-8")


@pytest.fixture
def std_tools(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """A factory of std-tools' skills server over tmp_path/skills (all its tools)."""
    from doc_processing_std_tools.config import reset_settings
    from doc_processing_std_tools.skills.server import new_skills_server

    root = tmp_path / "skills"
    root.mkdir()
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(root))
    reset_settings()
    try:
        yield new_skills_server
    finally:
        reset_settings()


def last_results(request: ModelRequest) -> list[ToolResultPart]:
    return [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]


def calls_then_answer(*calls: tuple[str, dict[str, Any]]) -> TestModel:
    """A model that makes `calls` one per turn, then answers."""

    def script(request: ModelRequest) -> ModelResponse:
        turn = (len(request.messages) - 1) // 2
        if turn < len(calls):
            return tool_call(*calls[turn])
        return reply("done")

    return TestModel(script)


def skill_names(block: str | None) -> list[str]:
    return [
        line.split('"', 2)[1] for line in (block or "").splitlines() if line.startswith("  <skill ")
    ]


# -- scope -----------------------------------------------------------------------------


async def test_a_scope_hides_skills_from_the_block_the_listing_and_the_search(
    std_tools: Callable[..., Any], tmp_path: Path
) -> None:
    root = tmp_path / "skills"
    write_skill(root, "pdf-forms", "Fills PDF forms.")
    write_skill(root, "pdf-legacy", "Fills old PDF forms.")
    write_skill(root, "invoice-check", "Checks invoices and PDF totals.")
    model = calls_then_answer(("list_skills", {}), ("search_skills", {"query": "pdf forms"}))
    agent = Agent(
        model=model,
        tools=[std_tools()],
        skills_include=["pdf-*"],
        skills_exclude=["pdf-legacy"],
    )
    async with agent:
        result = await agent.run("fill in the PDF form")
    assert skill_names(result.skills.prompt_block) == ["pdf-forms"]
    assert sorted(result.skills.out_of_scope) == ["invoice-check", "pdf-legacy"]
    assert result.skills.scope is not None
    assert result.skills.scope.include == ("pdf-*",)
    assert result.skills.scope.exclude == ("pdf-legacy",)
    listed, found = (json.loads(call.content) for call in result.tool_calls)
    assert [s["name"] for s in listed["skills"]] == ["pdf-forms"]
    assert listed["count"] == 1
    assert [s["name"] for s in found["skills"]] == ["pdf-forms"]


def recording_server(calls: list[tuple[str, str]]) -> MCPServer:
    """A skills server with std-tools' tool names that records every call it gets."""
    server = MCPServer("recorder")
    skills = [
        {"name": "billing-report", "description": "Writes billing reports.", "path": "/b"},
        {"name": "hr-onboarding", "description": "Onboards new staff.", "path": "/h"},
    ]

    @server.tool()
    def list_skills() -> str:
        calls.append(("list_skills", ""))
        return json.dumps({"skills": skills, "count": 2})

    @server.tool()
    def load_skill(skill_name: str) -> str:
        calls.append(("load_skill", skill_name))
        return f"<skill_content name={skill_name!r}>...</skill_content>"

    @server.tool()
    def load_skill_resource(skill_name: str, resource_path: str) -> str:
        calls.append(("load_skill_resource", skill_name))
        return "text"

    @server.tool()
    def execute_skill_script(skill_name: str, script_path: str, args: str = "") -> str:
        calls.append(("execute_skill_script", skill_name))
        return json.dumps({"stdout": "", "stderr": "", "exit_code": 0})

    return server


async def test_an_out_of_scope_skill_is_refused_by_the_toolkit_and_no_call_reaches_the_server() -> (
    None
):
    calls: list[tuple[str, str]] = []
    model = calls_then_answer(
        ("load_skill", {"skill_name": "hr-onboarding"}),
        ("load_skill_resource", {"skill_name": "hr-onboarding", "resource_path": "a.md"}),
        ("execute_skill_script", {"skill_name": "hr-onboarding", "script_path": "s.py"}),
        ("load_skill", {"skill_name": "billing-report"}),
    )
    agent = Agent(model=model, tools=[recording_server(calls)], skills_exclude=["hr-*"])
    async with agent:
        result = await agent.run("onboard Ann")
    refused, read, ran, loaded = result.tool_calls
    for call in (refused, read, ran):
        assert call.is_error
        assert "'hr-onboarding' is outside this agent's skill scope" in call.content
        assert "skills_exclude=['hr-*']" in call.content
    assert not loaded.is_error
    assert calls == [("list_skills", ""), ("load_skill", "billing-report")]
    assert skill_names(result.skills.prompt_block) == ["billing-report"]


async def test_scope_applies_to_extension_served_skills_before_any_read() -> None:
    server, extension = peer.build(
        "ext", {"alpha": "The alpha task.", "beta": "The beta task.", "gamma": "Gamma."}
    )
    model = calls_then_answer(
        ("load_skill", {"uri": "skill://beta/SKILL.md"}),
        ("list_skills", {}),
        ("load_skill", {"uri": "skill://alpha/SKILL.md"}),
    )
    agent = Agent(model=model, tools=[server], skills_include=["alpha", "gamma"])
    async with agent:
        result = await agent.run("go")
    assert skill_names(result.skills.prompt_block) == ["alpha", "gamma"]
    assert result.skills.out_of_scope == ("beta",)
    refused, listing, loaded = result.tool_calls
    assert refused.is_error and "'beta' is outside this agent's skill scope" in refused.content
    assert "beta" not in listing.content and "alpha" in listing.content
    assert not loaded.is_error
    assert extension.reads == ["alpha"]


def test_scope_settings_come_from_yaml_the_builder_and_refuse_bad_patterns(
    tmp_path: Path,
) -> None:
    file = tmp_path / "agent.yaml"
    file.write_text("skills_include: ['pdf-*']\nskills_exclude: [pdf-legacy]\n", encoding="utf-8")
    config = load_yaml(file)
    assert (config.skills_include, config.skills_exclude) == (["pdf-*"], ["pdf-legacy"])
    built = AgentBuilder().skills_include(["pdf-*"]).skills_exclude(["pdf-legacy"]).build()
    assert built.settings.values.skills_include == ["pdf-*"]
    assert built.settings.values.skills_exclude == ["pdf-legacy"]
    with pytest.raises(ConfigError, match="skills_include"):
        Agent(skills_include="pdf-*")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not a skill name pattern"):
        Agent(skills_exclude=[" pdf"])


# -- skills that need tools ------------------------------------------------------------


async def test_a_skill_whose_tools_are_missing_is_not_offered_and_says_what_is_missing(
    std_tools: Callable[..., Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "skills"
    write_skill(root, "slack-poster", "Posts messages to Slack.", requires="slack:post_message")
    write_skill(
        root,
        "pr-review",
        "Reviews pull requests.",
        openai_yaml="dependencies:\n  tools:\n    - type: mcp\n      value: github\n"
        "    - type: env_var\n      value: TOKEN\n",
    )
    write_skill(root, "notes", "Takes notes.", requires="load_skill")
    model = calls_then_answer(
        ("load_skill", {"skill_name": "slack-poster"}),
        ("search_skills", {"query": "slack pull requests notes"}),
    )
    async with Agent(model=model, tools=[std_tools()]) as agent:
        with caplog.at_level(logging.INFO, logger=SKILLS_LOGGER):
            result = await agent.run("post a note to slack")
    assert skill_names(result.skills.prompt_block) == ["notes"]
    assert result.skills.missing_tools == {
        "slack-poster": ("slack:post_message",),
        "pr-review": ("github (MCP server)",),
    }
    refused, found = result.tool_calls
    assert refused.is_error
    assert "needs tools this agent does not have (slack:post_message)" in refused.content
    assert [s["name"] for s in json.loads(found.content)["skills"]] == ["notes"]
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.name == SKILLS_LOGGER and r.levelno == logging.INFO and "lacks tools" in r.getMessage()
    ]
    assert len(lines) == 1
    assert "slack-poster (needs slack:post_message)" in lines[0]
    assert "pr-review (needs github (MCP server))" in lines[0]


async def test_a_skill_is_offered_once_the_server_it_needs_is_attached(
    std_tools: Callable[..., Any], tmp_path: Path
) -> None:
    root = tmp_path / "skills"
    write_skill(root, "slack-poster", "Posts to Slack.", requires="slack:post_message")
    slack = MCPServer("slack")

    @slack.tool()
    def post_message(channel: str, text: str) -> str:
        return "posted"

    model = TestModel(lambda request: reply("done"))
    async with Agent(model=model, tools=[std_tools(), slack]) as agent:
        result = await agent.run("post")
    assert skill_names(result.skills.prompt_block) == ["slack-poster"]
    assert result.skills.missing_tools == {}


async def test_needs_hold_at_a_thousand_skills_where_the_listing_is_cut(
    std_tools: Callable[..., Any], tmp_path: Path
) -> None:
    root = tmp_path / "skills"
    filler = "Handles one routine kind of office paperwork for the team, step by step. " * 3
    for index in range(999):
        (root / f"task-{index:04d}").mkdir(parents=True)
        (root / f"task-{index:04d}" / "SKILL.md").write_text(
            f"---\nname: task-{index:04d}\ndescription: {filler}\n---\nbody\n", encoding="utf-8"
        )
    # Last by name, so the cut listing never shows it; its needs must still be known.
    write_skill(root, "zz-slack-poster", "Posts a message to Slack.", requires="slack:post")
    model = calls_then_answer(("load_skill", {"skill_name": "zz-slack-poster"}))
    async with Agent(model=model, tools=[std_tools()]) as agent:
        result = await agent.run("post a message to the Slack channel")
    outcome = result.skills
    assert outcome.ranking is not None  # not every skill fits: the block was selected
    assert "zz-slack-poster" not in {s.name for s in outcome.skills}
    assert "zz-slack-poster" not in (outcome.prompt_block or "")
    assert outcome.missing_tools == {"zz-slack-poster": ("slack:post",)}
    (refused,) = result.tool_calls
    assert refused.is_error and "(slack:post)" in refused.content


# -- the default budget ----------------------------------------------------------------


async def test_the_default_budget_injects_a_forty_skill_catalog_whole(
    std_tools: Callable[..., Any], tmp_path: Path
) -> None:
    root = tmp_path / "skills"
    for index in range(40):
        write_skill(root, f"skill-{index:02d}", f"Does task number {index} of the set, carefully.")
    model = TestModel(lambda request: reply("done"))
    async with Agent(model=model, tools=[std_tools()]) as agent:
        result = await agent.run("go")
    assert agent.settings.values.skills_catalog_budget == 16_000
    assert len(result.skills.skills) == 40
    assert result.skills.prompt_block == render_catalog(result.skills.skills)


async def test_the_default_budget_holds_a_large_catalog_and_null_lifts_it(
    std_tools: Callable[..., Any], tmp_path: Path
) -> None:
    root = tmp_path / "skills"
    text = "Prepares a detailed quarterly report for one department with charts and notes. " * 3
    for index in range(100):
        write_skill(root, f"report-{index:03d}", text)
    model = TestModel(lambda request: reply("done"))
    async with Agent(model=model, tools=[std_tools()]) as agent:
        held = await agent.run("go")
    async with Agent(model=model, tools=[std_tools()], skills_catalog_budget=None) as agent:
        whole = await agent.run("go")
    assert len(held.skills.prompt_block or "") <= 16_000
    assert held.skills.left_out_count > 0
    assert len(whole.skills.prompt_block or "") > 16_000
    assert whole.skills.left_out_count == 0
    loaded = Agent.from_config({"skills_catalog_budget": None})
    assert loaded.settings.values.skills_catalog_budget is None


async def test_an_extension_skill_whose_tools_are_missing_is_refused_before_any_read() -> None:
    server, extension = peer.build("ext", {"alpha": "The alpha task."})
    uri = "skill://poster/SKILL.md"
    extension.extra = [
        {
            "uri": uri,
            "frontmatter": {
                "name": "poster",
                "description": "Posts to Slack.",
                "metadata": {"requires-tools": "slack:post_message"},
            },
            "resources": [{"uri": uri, "digest": "sha256:" + "0" * 64, "size": 10}],
        }
    ]
    model = calls_then_answer(("load_skill", {"uri": uri}), ("list_skills", {}))
    async with Agent(model=model, tools=[server]) as agent:
        result = await agent.run("post the news")
    assert skill_names(result.skills.prompt_block) == ["alpha"]
    assert result.skills.missing_tools == {"poster": ("slack:post_message",)}
    refused, listing = result.tool_calls
    assert refused.is_error and "(slack:post_message)" in refused.content
    assert "poster" not in listing.content
    assert extension.reads == []
