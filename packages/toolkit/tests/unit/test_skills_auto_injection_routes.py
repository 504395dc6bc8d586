"""Skills auto-injection on every tool route, against a stand-in with std-tools' contract.

Each test asserts what the model was given (the exact system prompt, the exact tool list)
or the exact log records. The stand-in (skills_standin.py) answers list_skills from a JSON
file the test writes, so a test can change the catalog between two runs.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server.mcpserver import MCPServer

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.messages import ModelResponse, TextPart
from doc_processing_toolkit.models.base import ModelRequest
from doc_processing_toolkit.skills import SkillEntry, render_catalog

STANDIN = Path(__file__).parents[1] / "servers" / "skills_standin.py"
_spec = importlib.util.spec_from_file_location("skills_standin", STANDIN)
assert _spec is not None and _spec.loader is not None
skills_standin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(skills_standin)
SKILLS_LOGGER = "doc_processing_toolkit.skills"
INSTRUCTIONS = "You process documents."
ALL_FIVE = [
    "list_skills",
    "load_skill",
    "load_skill_resource",
    "execute_skill_script",
    "create_skill",
]
BOOTSTRAP_TWO = ["list_skills", "create_skill"]

TWO_SKILLS = {
    "skills": [
        {
            "name": "invoice-extraction",
            "description": "Extracts fields from invoices <PDF & scans>.",
            "path": "/srv/skills/invoice-extraction/SKILL.md",
            "directory": "/srv/skills/invoice-extraction",
        },
        {
            "name": "table-cleanup",
            "description": 'Cleans "messy" tables.',
            "path": "/srv/skills/table-cleanup/SKILL.md",
            "directory": "/srv/skills/table-cleanup",
        },
    ],
    "skills_dir": "/srv/skills",
    "count": 2,
}
EXPECTED_TWO = render_catalog(
    [
        SkillEntry(
            "invoice-extraction",
            "Extracts fields from invoices <PDF & scans>.",
            "/srv/skills/invoice-extraction/SKILL.md",
        ),
        SkillEntry("table-cleanup", 'Cleans "messy" tables.', "/srv/skills/table-cleanup/SKILL.md"),
    ]
)
EMPTY = {"skills": [], "skills_dir": "/srv/skills", "count": 0}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Catalog:
    """The stand-in's catalog file and call log."""

    def __init__(self, folder: Path) -> None:
        self.file = folder / "catalog.json"
        self.calls_file = folder / "calls.log"
        self.calls_file.write_text("", encoding="utf-8")
        self.set(TWO_SKILLS)

    def set(self, payload: Any) -> None:
        self.file.write_text(json.dumps(payload), encoding="utf-8")

    @property
    def env(self) -> dict[str, str]:
        return {"STANDIN_CATALOG": str(self.file), "STANDIN_CALLS": str(self.calls_file)}

    def calls(self) -> list[str]:
        return self.calls_file.read_text(encoding="utf-8").split()


@pytest.fixture
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    cat = Catalog(tmp_path)
    for key, value in cat.env.items():
        monkeypatch.setenv(key, value)
    return cat


def answer(request: ModelRequest) -> ModelResponse:
    return ModelResponse(parts=(TextPart("done"),))


def seen_tools(model: TestModel, index: int = -1) -> list[str]:
    return [spec.name for spec in model.requests[index].tools]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def http_standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Catalog]]:
    """One stand-in served over streamable HTTP by a real subprocess for this module."""
    cat = Catalog(tmp_path_factory.mktemp("http"))
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(STANDIN), "--http", str(port), "--name", "std_tools"],
        env={"PATH": "", **cat.env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.05)
    try:
        yield url, cat
    finally:
        process.terminate()
        process.wait(timeout=10)


RouteFactory = Callable[[Catalog, AsyncExitStack], Any]


def _in_process(cat: Catalog, stack: AsyncExitStack) -> Any:
    return skills_standin.build_server("std_tools")


def _fastmcp(cat: Catalog, stack: AsyncExitStack) -> Any:
    import fastmcp

    server = fastmcp.FastMCP("std_tools")
    for function in skills_standin.SKILL_FUNCTIONS:
        server.tool(function)
    return server


def _local(cat: Catalog, stack: AsyncExitStack) -> Any:
    return list(skills_standin.SKILL_FUNCTIONS)


def _mcp_command(cat: Catalog, stack: AsyncExitStack) -> Any:
    return {
        "type": "mcp_command",
        "command": sys.executable,
        "args": [str(STANDIN), "--name", "std_tools"],
        "name": "std_tools",
        "env": cat.env,
    }


def _mcp_script(cat: Catalog, stack: AsyncExitStack) -> Any:
    return {"type": "mcp_script", "script": str(STANDIN), "name": "std_tools", "env": cat.env}


async def _prebuilt(cat: Catalog, stack: AsyncExitStack) -> Any:
    params = StdioServerParameters(command=sys.executable, args=[str(STANDIN)], env=cat.env)
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return {"session": session, "name": "std_tools"}


ROUTES: dict[str, RouteFactory] = {
    "in_process": _in_process,
    "fastmcp": _fastmcp,
    "local_functions": _local,
    "mcp_command": _mcp_command,
    "mcp_script": _mcp_script,
    "prebuilt_session": _prebuilt,
}


@asynccontextmanager
async def agent_on(
    route: str, cat: Catalog, model: TestModel, **options: Any
) -> AsyncIterator[Agent]:
    async with AsyncExitStack() as stack:
        entry = ROUTES[route](cat, stack)
        if hasattr(entry, "__await__"):
            entry = await entry
        tools = entry if isinstance(entry, list) else [entry]
        agent = Agent(model=model, instructions=INSTRUCTIONS, tools=tools, **options)
        async with agent:
            yield agent


@pytest.mark.anyio
@pytest.mark.parametrize("route", list(ROUTES))
async def test_each_route_injects_the_catalog_and_follows_it_across_runs(
    route: str, catalog: Catalog
) -> None:
    model = TestModel(answer)
    async with agent_on(route, catalog, model) as agent:
        first = await agent.run("Extract invoice.pdf")
        assert model.requests[0].system == f"{INSTRUCTIONS}\n\n{EXPECTED_TWO}"
        assert seen_tools(model) == ALL_FIVE
        assert first.skills.status == "injected"
        assert first.skills.server == agent.servers[0].name

        catalog.set(EMPTY)
        await agent.run("again")
        assert model.requests[-1].system == INSTRUCTIONS
        assert seen_tools(model) == BOOTSTRAP_TWO

        catalog.set(TWO_SKILLS)
        await agent.run("and again")
        assert model.requests[-1].system == f"{INSTRUCTIONS}\n\n{EXPECTED_TWO}"
        assert seen_tools(model) == ALL_FIVE


@pytest.mark.anyio
async def test_the_http_route_injects_the_catalog(http_standin: tuple[str, Catalog]) -> None:
    url, cat = http_standin
    cat.set(TWO_SKILLS)
    model = TestModel(answer)
    agent = Agent(
        model=model,
        instructions=INSTRUCTIONS,
        tools=[{"type": "mcp_http", "url": url, "name": "std_tools"}],
    )
    async with agent:
        await agent.run("Extract invoice.pdf")
        assert model.requests[0].system == f"{INSTRUCTIONS}\n\n{EXPECTED_TWO}"
        assert seen_tools(model) == ALL_FIVE
        cat.set(EMPTY)
        await agent.run("again")
        assert model.requests[-1].system == INSTRUCTIONS
        assert seen_tools(model) == BOOTSTRAP_TWO


@pytest.mark.anyio
@pytest.mark.parametrize("route", ["in_process", "mcp_command"])
@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"__raw__": "Skills: none today"}, "list_skills did not return JSON"),
        ({"__raw__": json.dumps({"items": []})}, "without a 'skills' array"),
        (
            {"__error__": "disk on fire"},
            "list_skills returned an error: Error executing tool list_skills: disk on fire",
        ),
    ],
)
async def test_a_failed_catalog_warns_once_per_run_and_hides_nothing(
    route: str,
    payload: Any,
    reason: str,
    catalog: Catalog,
    caplog: pytest.LogCaptureFixture,
) -> None:
    catalog.set(payload)
    model = TestModel(answer)
    async with agent_on(route, catalog, model) as agent:
        with caplog.at_level(logging.INFO, logger=SKILLS_LOGGER):
            first = await agent.run("one")
            second = await agent.run("two")
    records = [r for r in caplog.records if r.name == SKILLS_LOGGER]
    assert [r.levelname for r in records] == ["WARNING", "WARNING"]
    for record in records:
        message = record.getMessage()
        assert "'std_tools'" in message
        assert reason in message
    assert model.requests[0].system == INSTRUCTIONS
    assert seen_tools(model, 0) == seen_tools(model, 1) == ALL_FIVE
    for result in (first, second):
        assert result.output == "done"
        assert result.skills.status == "failed"
        assert [w for w in result.warnings if w.startswith("skills:")] == [records[0].getMessage()]


@pytest.mark.anyio
@pytest.mark.parametrize("route", ["in_process", "mcp_command"])
async def test_a_slow_catalog_times_out_as_a_failure(
    route: str, catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    catalog.set({"__sleep__": 3})
    model = TestModel(answer)
    async with agent_on(route, catalog, model, skills_timeout=0.3) as agent:
        with caplog.at_level(logging.WARNING, logger=SKILLS_LOGGER):
            started = time.monotonic()
            result = await agent.run("one")
            elapsed = time.monotonic() - started
        # The session survives the abandoned call: the next run gets the catalog.
        catalog.set(TWO_SKILLS)
        after = await agent.run("two")
        assert after.skills.status == "injected"
        assert model.requests[-1].system == f"{INSTRUCTIONS}\n\n{EXPECTED_TWO}"
    assert result.skills.status == "failed"
    assert [r.getMessage() for r in caplog.records if r.name == SKILLS_LOGGER] == [
        "skills: auto-injection failed for server 'std_tools': list_skills did not answer "
        "within 0.3 s; running without a skill catalog, all of its tools stay available"
    ]
    assert seen_tools(model, 0) == ALL_FIVE
    assert elapsed < 2.5


@pytest.mark.anyio
async def test_diagnostics_are_logged_one_record_each_and_never_prompted(
    catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    catalog.set(
        {
            **TWO_SKILLS,
            "diagnostics": [
                {
                    "skill": "draft",
                    "level": "error",
                    "code": "missing_description",
                    "message": "SKILL.md has no description.",
                },
                {
                    "skill": "table-cleanup",
                    "level": "warning",
                    "code": "name_mismatch",
                    "message": "name differs from folder.",
                },
            ],
        }
    )
    model = TestModel(answer)
    async with agent_on("in_process", catalog, model) as agent:
        with caplog.at_level(logging.DEBUG, logger=SKILLS_LOGGER):
            await agent.run("go")
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name == SKILLS_LOGGER] == [
        ("WARNING", "skills: draft: error [missing_description]: SKILL.md has no description."),
        ("WARNING", "skills: table-cleanup: warning [name_mismatch]: name differs from folder."),
    ]
    system = model.requests[0].system or ""
    assert system == f"{INSTRUCTIONS}\n\n{EXPECTED_TWO}"
    assert "draft" not in system


@pytest.mark.anyio
async def test_an_old_payload_without_path_or_diagnostics_works(catalog: Catalog) -> None:
    catalog.set({"skills": [{"name": "legacy", "description": "Old server."}]})
    model = TestModel(answer)
    async with agent_on("mcp_command", catalog, model) as agent:
        await agent.run("go")
    assert model.requests[0].system == (
        f"{INSTRUCTIONS}\n\n{render_catalog([SkillEntry('legacy', 'Old server.', None)])}"
    )
    assert '<skill name="legacy">Old server.</skill>' in (model.requests[0].system or "")


@pytest.mark.anyio
@pytest.mark.parametrize("route", ["in_process", "mcp_command"])
async def test_an_own_catalog_in_the_instructions_calls_nothing(
    route: str, catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    catalog.set(EMPTY)
    own = "Skills:\n<available_skills>\n  <skill name='mine'>Mine.</skill>\n</available_skills>"
    model = TestModel(answer)
    async with AsyncExitStack() as stack:
        entry = ROUTES[route](catalog, stack)
        agent = Agent(model=model, instructions=own, tools=[entry])
        async with agent:
            with caplog.at_level(logging.DEBUG, logger=SKILLS_LOGGER):
                result = await agent.run("one")
                await agent.run("two")
    assert catalog.calls() == []
    assert model.requests[0].system == own
    assert seen_tools(model) == ALL_FIVE
    assert [r.levelname for r in caplog.records if r.name == SKILLS_LOGGER] == ["INFO", "INFO"]
    assert result.skills.status == "own_catalog"


@pytest.mark.anyio
@pytest.mark.parametrize("route", ["in_process", "mcp_command"])
async def test_disabled_injection_calls_nothing_and_hides_nothing(
    route: str, catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    catalog.set(EMPTY)
    model = TestModel(answer)
    async with agent_on(route, catalog, model, auto_inject_skills=False) as agent:
        with caplog.at_level(logging.DEBUG, logger=SKILLS_LOGGER):
            result = await agent.run("one")
    assert catalog.calls() == []
    assert model.requests[0].system == INSTRUCTIONS
    assert seen_tools(model) == ALL_FIVE
    assert [r for r in caplog.records if r.name == SKILLS_LOGGER] == []
    assert result.skills.status == "disabled"


@pytest.mark.anyio
async def test_two_servers_with_one_tool_each_do_not_combine(
    catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    lister = MCPServer("lister")
    lister.tool()(skills_standin.list_skills)
    loader = MCPServer("loader")
    loader.tool()(skills_standin.load_skill)
    loader.tool()(skills_standin.load_skill_resource)
    catalog.set(EMPTY)
    model = TestModel(answer)
    async with Agent(model=model, instructions=INSTRUCTIONS, tools=[lister, loader]) as agent:
        with caplog.at_level(logging.DEBUG, logger=SKILLS_LOGGER):
            result = await agent.run("one")
    assert catalog.calls() == []
    assert model.requests[0].system == INSTRUCTIONS
    assert seen_tools(model) == ["list_skills", "load_skill", "load_skill_resource"]
    assert result.skills.status == "no_server"
    assert [r for r in caplog.records if r.name == SKILLS_LOGGER] == []


@pytest.mark.anyio
async def test_the_first_in_loaded_order_wins_and_only_it_is_filtered(
    catalog: Catalog, tmp_path: Path
) -> None:
    # The command server comes first in tools=[...], but in-process servers are loaded
    # first, so the in-process one (empty catalog) is the skills server; the command
    # server's tools (behind a prefix) are not touched.
    (tmp_path / "other").mkdir()
    other = Catalog(tmp_path / "other")
    other.set(TWO_SKILLS)
    catalog.set(EMPTY)
    command = {**_mcp_command(other, AsyncExitStack()), "tool_prefix": "remote"}
    model = TestModel(answer)
    async with Agent(
        model=model,
        instructions=INSTRUCTIONS,
        tools=[command, _in_process(catalog, AsyncExitStack())],
    ) as agent:
        result = await agent.run("one")
    assert [s.route for s in agent.servers] == ["mcp_server", "mcp_command"]
    assert result.skills.status == "empty"
    assert model.requests[0].system == INSTRUCTIONS
    assert seen_tools(model) == BOOTSTRAP_TWO + [f"remote_{name}" for name in ALL_FIVE]
    assert other.calls() == []
    assert catalog.calls() == ["list_skills"]


@pytest.mark.anyio
async def test_same_named_servers_stay_apart(catalog: Catalog) -> None:
    # Both in-process servers are called "std_tools"; only the second exposes both
    # detection tools, so it is the skills server and the first is left alone.
    decoy = MCPServer("std_tools")

    @decoy.tool()
    def list_skills_decoy() -> str:
        """Not a skills tool."""
        return "{}"

    catalog.set(EMPTY)
    real = skills_standin.build_server("std_tools")
    model = TestModel(answer)
    async with Agent(model=model, instructions=INSTRUCTIONS, tools=[decoy, real]) as agent:
        result = await agent.run("one")
    assert result.skills.status == "empty"
    assert seen_tools(model) == ["list_skills_decoy", *BOOTSTRAP_TWO]


@pytest.mark.anyio
async def test_a_prefixed_skills_server_is_detected_and_filtered_by_its_own_names(
    catalog: Catalog,
) -> None:
    catalog.set(EMPTY)
    entry = {**_mcp_command(catalog, AsyncExitStack()), "tool_prefix": "std"}
    model = TestModel(answer)
    async with Agent(model=model, instructions=INSTRUCTIONS, tools=[entry]) as agent:
        await agent.run("one")
        catalog.set(TWO_SKILLS)
        await agent.run("two")
    assert seen_tools(model, 0) == ["std_list_skills", "std_create_skill"]
    assert seen_tools(model, 1) == [f"std_{name}" for name in ALL_FIVE]
    assert model.requests[1].system == f"{INSTRUCTIONS}\n\n{EXPECTED_TWO}"


@pytest.mark.anyio
async def test_the_catalog_is_the_whole_system_prompt_without_instructions(
    catalog: Catalog,
) -> None:
    model = TestModel(answer)
    async with Agent(model=model, tools=[_in_process(catalog, AsyncExitStack())]) as agent:
        await agent.run("one")
    assert model.requests[0].system == EXPECTED_TWO


@pytest.mark.anyio
async def test_anthropic_native_skills_in_provider_kwargs_coexist(catalog: Catalog) -> None:
    native = {
        "container": {"skills": [{"type": "anthropic", "skill_id": "xlsx", "version": "latest"}]},
        "betas": ["skills-2025-10-02"],
    }
    model = TestModel(answer)
    async with Agent(
        model=model,
        instructions=INSTRUCTIONS,
        tools=[_in_process(catalog, AsyncExitStack())],
        provider_kwargs=native,
    ) as agent:
        await agent.run("one")
    assert dict(model.requests[0].provider_kwargs) == native
    assert model.requests[0].system == f"{INSTRUCTIONS}\n\n{EXPECTED_TWO}"


@pytest.mark.anyio
async def test_the_toolkit_never_reads_the_skills_dir_variable(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A variable naming a folder that does not exist in the agent's process changes
    # nothing: the catalog comes from the server, and mcp_command passes only its env.
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(tmp_path / "does-not-exist"))
    model = TestModel(answer)
    async with agent_on("mcp_command", catalog, model) as agent:
        result = await agent.run("one")
    assert result.skills.status == "injected"
    package = Path(sys.modules["doc_processing_toolkit"].__file__ or "").parent
    assert not [
        p.name for p in package.rglob("*.py") if "DPTTOOLS_SKILLS_DIR" in p.read_text("utf-8")
    ]


@pytest.mark.anyio
async def test_the_model_can_load_a_skill_after_seeing_the_catalog(catalog: Catalog) -> None:
    def script(request: ModelRequest) -> ModelResponse:
        if len(request.messages) == 1:
            assert "invoice-extraction" in (request.system or "")
            from doc_processing_toolkit.models.test import tool_call

            return tool_call("load_skill", {"skill_name": "invoice-extraction"})
        return ModelResponse(parts=(TextPart("loaded"),))

    model = TestModel(script)
    async with agent_on("mcp_command", catalog, model) as agent:
        result = await agent.run("go")
    assert result.output == "loaded"
    assert [c.name for c in result.tool_calls] == ["load_skill"]
    assert catalog.calls() == ["list_skills", "load_skill"]


@pytest.mark.anyio
async def test_concurrent_runs_each_get_the_catalog(catalog: Catalog) -> None:
    model = TestModel(answer)
    async with (
        agent_on("mcp_command", catalog, model) as agent,
        anyio.create_task_group() as group,
    ):
        for index in range(4):
            group.start_soon(agent.run, f"run {index}")
    assert len(model.requests) == 4
    assert {r.system for r in model.requests} == {f"{INSTRUCTIONS}\n\n{EXPECTED_TWO}"}


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["builder", "yaml", "config_dict"])
async def test_auto_inject_skills_is_set_the_same_way_everywhere(
    where: str, catalog: Catalog, tmp_path: Path
) -> None:
    model = TestModel(answer)
    entry = _mcp_command(catalog, AsyncExitStack())
    agents: list[Agent] = []
    for enabled in (True, False):
        if where == "builder":
            agent = (
                Agent.builder()
                .model(model)
                .instructions(INSTRUCTIONS)
                .tools([entry])
                .auto_inject_skills(enabled)
                .skills_timeout(2.0)
                .build()
            )
        else:
            config = {
                "instructions": INSTRUCTIONS,
                "tools": [entry],
                "auto_inject_skills": enabled,
                "skills_timeout": 2.0,
            }
            if where == "yaml":
                path = tmp_path / f"agent-{enabled}.yaml"
                path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
                agent = Agent.from_yaml(path, model=model)
            else:
                agent = Agent.from_config(config, model=model)
        agents.append(agent)
    on, off = agents
    assert (on.settings.values.skills_timeout, off.settings.values.skills_timeout) == (2.0, 2.0)
    async with on:
        assert (await on.run("one")).skills.status == "injected"
    async with off:
        assert (await off.run("two")).skills.status == "disabled"
    assert [r.system for r in model.requests] == [
        f"{INSTRUCTIONS}\n\n{EXPECTED_TWO}",
        INSTRUCTIONS,
    ]
    assert catalog.calls() == ["list_skills"]


# -- the catalog call started alongside the tool listing -----------------------------------
# For a server out of process (a child, HTTP, a pre-built session), from the second run on
# the agent asks last run's skills server for its catalog while it lists the tools. These
# check that this changes nothing the model sees or the server is asked.


@pytest.mark.anyio
@pytest.mark.parametrize("route", ["mcp_command", "mcp_script", "prebuilt_session"])
async def test_each_run_asks_for_the_catalog_once_and_sees_it_fresh(
    route: str, catalog: Catalog
) -> None:
    model = TestModel(answer)
    one_skill = {**TWO_SKILLS, "skills": TWO_SKILLS["skills"][:1], "count": 1}
    async with agent_on(route, catalog, model) as agent:
        results = [await agent.run("one")]
        catalog.set(one_skill)
        results.append(await agent.run("two"))
        catalog.set(TWO_SKILLS)
        results.append(await agent.run("three"))
    assert [r.skills.status for r in results] == ["injected"] * 3
    assert [len(r.skills.skills) for r in results] == [2, 1, 2]
    assert model.requests[2].system == f"{INSTRUCTIONS}\n\n{EXPECTED_TWO}"
    assert [c for c in catalog.calls() if c == "list_skills"] == ["list_skills"] * 3


def _own_skills_server(name: str, payload: dict[str, Any], failing: list[bool]) -> MCPServer:
    """An in-memory skills server answering `payload`, or failing once `failing[0]`; each
    list_skills call appends True to `failing`."""
    server = MCPServer(name)

    @server.tool(structured_output=False)
    def list_skills() -> str:
        """List the skills."""
        failing.append(True)
        if failing[0]:
            raise RuntimeError("this server is no longer a skills server")
        return json.dumps(payload)

    @server.tool(structured_output=False)
    def load_skill(skill_name: str) -> str:
        """Load one skill."""
        return skill_name

    return server


@pytest.mark.anyio
async def test_a_catalog_asked_ahead_is_dropped_when_another_server_is_detected(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mcp.client import Client

    first_payload = {
        "skills": [{"name": "alpha", "description": "First.", "path": "/a/alpha/SKILL.md"}]
    }
    first_fails = [False]
    first = _own_skills_server("first", first_payload, first_fails)
    second = _own_skills_server("second", TWO_SKILLS, [False])
    model = TestModel(answer)
    async with Client(first) as first_client, Client(second) as second_client:
        tools = [
            {"session": first_client.session, "name": "first"},
            {"session": second_client.session, "name": "second", "tool_prefix": "b"},
        ]
        async with Agent(model=model, instructions=INSTRUCTIONS, tools=tools) as agent:
            before = await agent.run("one")
            # "first" stops being a skills server: its catalog, asked ahead on the next
            # run, must be ignored (its failure included) and "second" asked instead.
            first.remove_tool("load_skill")
            first_fails[0] = True
            # Two skills servers in the first run: one WARNING named both (never silent).
            (both,) = [r.getMessage() for r in caplog.records if r.name == SKILLS_LOGGER]
            assert "'first' and 'second' both serve skills" in both
            caplog.clear()
            with caplog.at_level(logging.INFO, logger=SKILLS_LOGGER):
                after = await agent.run("two")
    assert before.skills.server == "first"
    assert [s.name for s in before.skills.skills] == ["alpha"]
    # "first" was asked on both runs: the second call is the one made ahead and dropped.
    assert len(first_fails) == 3
    assert after.skills.status == "injected"
    assert after.skills.server == "second"
    assert model.requests[1].system == f"{INSTRUCTIONS}\n\n{EXPECTED_TWO}"
    assert after.warnings == []
    assert [r for r in caplog.records if r.name == SKILLS_LOGGER] == []


@pytest.mark.anyio
async def test_a_listing_error_with_a_catalog_asked_ahead_is_raised_as_itself() -> None:
    from mcp.client import Client

    from doc_processing_toolkit import ToolNameConflictError

    skills = _own_skills_server("skills", TWO_SKILLS, [False])
    other = MCPServer("other")

    @other.tool(structured_output=False)
    async def convert(path: str) -> str:
        """Convert a file."""
        return path

    model = TestModel(answer)
    async with Client(skills) as skills_client, Client(other) as other_client:
        tools = [
            {"session": skills_client.session, "name": "skills"},
            {"session": other_client.session, "name": "other"},
        ]
        async with Agent(model=model, instructions=INSTRUCTIONS, tools=tools) as agent:
            assert (await agent.run("one")).skills.status == "injected"
            # "other" now also exposes load_skill: the names clash on the next run.
            other.add_tool(convert, name="load_skill", structured_output=False)
            with pytest.raises(ToolNameConflictError, match="load_skill"):
                await agent.run("two")
            other.remove_tool("load_skill")
            assert (await agent.run("three")).skills.status == "injected"


def test_run_sync_asks_ahead_and_sees_each_change(catalog: Catalog) -> None:
    model = TestModel(answer)
    agent = Agent(
        model=model, instructions=INSTRUCTIONS, tools=[_mcp_command(catalog, AsyncExitStack())]
    )
    try:
        statuses = [agent.run_sync("one").skills.status]
        catalog.set(EMPTY)
        statuses.append(agent.run_sync("two").skills.status)
        catalog.set(TWO_SKILLS)
        statuses.append(agent.run_sync("three").skills.status)
    finally:
        agent.close()
    assert statuses == ["injected", "empty", "injected"]
    assert seen_tools(model, 1) == BOOTSTRAP_TWO
    assert model.requests[2].system == f"{INSTRUCTIONS}\n\n{EXPECTED_TWO}"
    assert [c for c in catalog.calls() if c == "list_skills"] == ["list_skills"] * 3
