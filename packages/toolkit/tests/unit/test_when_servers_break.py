"""When things break: the last good catalog, optional servers that are down, and an
optional server that hangs at connect (tried once per run, one warning)."""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.messages import ModelResponse, TextPart
from doc_processing_toolkit.models.base import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call

SERVERS = Path(__file__).parents[1] / "servers"
SKILLS_LOGGER = "doc_processing_toolkit.skills"
CONNECTIONS_LOGGER = "doc_processing_toolkit.tools.connections"


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, SERVERS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


standin = _load("skills_standin")
peer = _load("extension_peer")
pytestmark = pytest.mark.anyio
TWO = {
    "skills": [
        {
            "name": "invoice-extraction",
            "description": "Extracts invoices.",
            "path": "/s/i/SKILL.md",
        },
        {"name": "table-cleanup", "description": "Cleans tables.", "path": "/s/t/SKILL.md"},
    ]
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    file = tmp_path / "catalog.json"
    file.write_text(json.dumps(TWO), encoding="utf-8")
    monkeypatch.setenv("STANDIN_CATALOG", str(file))
    monkeypatch.setenv("STANDIN_CALLS", str(tmp_path / "calls.log"))
    return file


def set_payload(file: Path, payload: Any) -> None:
    file.write_text(json.dumps(payload), encoding="utf-8")


def answer(request: ModelRequest) -> ModelResponse:
    return ModelResponse(parts=(TextPart("done"),))


# -- the last good catalog --------------------------------------------------------------


async def test_a_failed_catalog_call_injects_the_last_good_one_with_a_notice(
    catalog: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = TestModel(answer)
    server = standin.build_server("std_tools")
    async with Agent(model=model, tools=[server], skills_stale_after=60) as agent:
        good = await agent.run("one")
        set_payload(catalog, {"__error__": "disk on fire"})
        with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
            stale = await agent.run("two")
    assert good.skills.status == "injected"
    assert stale.skills.status == "stale"
    assert stale.skills.stale_age is not None and stale.skills.stale_age < 30
    assert [s.name for s in stale.skills.skills] == ["invoice-extraction", "table-cleanup"]
    system = model.requests[1].system or ""
    assert (
        "The skills catalog could not be read from server 'std_tools' in this run; this is "
        in system
    )
    assert "and it may be out of date." in system
    assert system.replace(system.split("\n\n<available_skills>")[0], "") == (
        (good.system_prompt or "").replace(
            (good.system_prompt or "").split("\n\n<available_skills>")[0], ""
        )
    )
    records = [r for r in caplog.records if r.name == SKILLS_LOGGER]
    assert [r.levelname for r in records] == ["WARNING"]
    assert "disk on fire" in records[0].getMessage()
    assert "last good catalog" in records[0].getMessage()
    assert [w for w in stale.warnings if w.startswith("skills:")] == [records[0].getMessage()]


async def test_a_last_good_catalog_older_than_the_setting_is_not_used(catalog: Path) -> None:
    model = TestModel(answer)
    async with Agent(
        model=model, tools=[standin.build_server("std_tools")], skills_stale_after=0.2
    ) as agent:
        await agent.run("one")
        set_payload(catalog, {"__error__": "down"})
        await anyio.sleep(0.3)
        late = await agent.run("two")
    assert late.skills.status == "failed"
    assert "<available_skills>" not in (model.requests[1].system or "")


async def test_without_the_setting_a_failure_injects_nothing(catalog: Path) -> None:
    model = TestModel(answer)
    async with Agent(model=model, tools=[standin.build_server("std_tools")]) as agent:
        await agent.run("one")
        set_payload(catalog, {"__error__": "down"})
        failed = await agent.run("two")
    assert failed.skills.status == "failed"
    assert model.requests[1].system is None


def _skills_server(name: str, payload: dict[str, Any], state: dict[str, bool]) -> MCPServer:
    server = MCPServer(name)

    @server.tool(structured_output=False)
    def list_skills() -> str:
        """List the skills."""
        if state.get("fail"):
            raise RuntimeError("offline")
        return json.dumps(payload)

    @server.tool(structured_output=False)
    def load_skill(skill_name: str) -> str:
        """Load a skill."""
        return skill_name

    return server


async def test_a_last_good_catalog_never_stands_in_for_another_server() -> None:
    first_state: dict[str, bool] = {}
    first = _skills_server("first", TWO, first_state)
    second = _skills_server("second", TWO, {"fail": True})
    model = TestModel(answer)
    tools = [first, {"server": second, "tool_prefix": "b"}]
    async with Agent(model=model, tools=tools, skills_stale_after=60) as agent:
        before = await agent.run("one")
        # "first" is no longer a skills server; "second" is detected and fails: the
        # catalog of "first" must not be injected for it.
        first.remove_tool("load_skill")
        after = await agent.run("two")
    assert (before.skills.server, before.skills.status) == ("first", "injected")
    assert (after.skills.server, after.skills.status) == ("second", "failed")
    assert "<available_skills>" not in (model.requests[1].system or "")


async def test_an_extension_server_stale_catalog_still_loads_verified_files() -> None:
    server, extension = peer.build("peer", {"alpha": "A."})
    calls: list[str] = []

    def script(request: ModelRequest) -> ModelResponse:
        calls.append("request")
        if len(calls) == 2:  # second run, first request
            return tool_call("load_skill", {"uri": "skill://alpha/SKILL.md"})
        return reply("done")

    model = TestModel(script)
    async with Agent(model=model, tools=[server], skills_stale_after=60) as agent:
        await agent.run("one")
        extension.fail = True
        stale = await agent.run("two")
    assert (stale.skills.status, stale.skills.source) == ("stale", "extension")
    (loaded,) = stale.tool_calls
    assert not loaded.is_error and "name: alpha" in loaded.content


# -- optional servers that are down -----------------------------------------------------


def _broken_optional(tmp_path: Path) -> dict[str, Any]:
    return {
        "type": "mcp_command",
        "command": sys.executable,
        "args": [str(tmp_path / "no-such-server.py")],
        "name": "search",
        "required": False,
    }


@pytest.mark.parametrize("notify", [True, False])
async def test_the_model_is_told_in_one_line_which_optional_server_is_down(
    notify: bool, tmp_path: Path
) -> None:
    model = TestModel(answer)
    agent = Agent(
        model=model,
        instructions="Work.",
        tools=[_broken_optional(tmp_path)],
        notify_unavailable_servers=notify,
    )
    result = await agent.run("go")
    await agent.aclose()
    expected = (
        "Unavailable in this run (the server could not be reached, so its tools are "
        "missing): server 'search' (its tools are not known yet)."
    )
    assert model.requests[0].system == (f"Work.\n\n{expected}" if notify else "Work.")
    assert len(result.warnings) == 1 and "'search'" in result.warnings[0]


async def test_a_server_that_was_up_is_named_with_its_tools_when_it_is_down(
    tmp_path: Path,
) -> None:
    script = tmp_path / "echo_server.py"
    script.write_text(
        "from mcp.server.mcpserver import MCPServer\n"
        "server = MCPServer('search')\n"
        "@server.tool()\n"
        "def web_search(query: str) -> str:\n"
        "    '''Search.'''\n"
        "    return query\n"
        "server.run()\n",
        encoding="utf-8",
    )
    entry = {
        "type": "mcp_script",
        "script": str(script),
        "name": "search",
        "required": False,
        "tool_prefix": "s",
    }
    model = TestModel(answer)
    async with Agent(model=model, tools=[entry]) as agent:
        await agent.run("one")
        script.unlink()
        # Stop the child: the next run's listing fails and the restart finds no script.
        await agent._pool.connections[0].aclose()
        await agent.run("two")
    assert model.requests[0].system is None
    assert model.requests[1].system == (
        "Unavailable in this run (the server could not be reached, so its tools are "
        "missing): server 'search' (s_web_search)."
    )


async def test_an_optional_server_that_hangs_at_connect_is_tried_once_per_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    starts = tmp_path / "starts.log"
    entry = {
        "type": "mcp_command",
        "command": sys.executable,
        "args": [str(SERVERS / "hanging_server.py"), str(starts)],
        "name": "hangs",
        "required": False,
    }
    model = TestModel(answer)
    with caplog.at_level(logging.WARNING, logger=CONNECTIONS_LOGGER):
        started = time.monotonic()
        async with Agent(model=model, tools=[entry], connect_timeout=0.5) as agent:
            first = await agent.run("one")
            first_elapsed = time.monotonic() - started
            first_starts = starts.read_text("utf-8").count("start")
            first_warnings = len(caplog.records)
            second = await agent.run("two")
    # Opening the sessions and the first run make one attempt and one warning together.
    assert first_starts == 1
    assert first_warnings == 1
    assert first_elapsed < 0.5 * 2 + 2.5
    assert len(first.warnings) == 1 and "did not connect within 0.5 s" in first.warnings[0]
    # The next run is a run of its own: one more attempt, one more warning.
    assert starts.read_text("utf-8").count("start") == 2
    assert len(caplog.records) == 2
    assert len(second.warnings) == 1
