"""The real skills server under the real toolkit: the wire contract between the packages.

Drives std-tools' skills server (alone, and inside the composed server) through the
toolkit's in-process, mcp_command and pre-built-session routes, with DPTTOOLS_SKILLS_DIR
naming the repository's example skills folder, and checks what the model was given.
Skipped when doc-processing-toolkit is not installed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from doc_processing_std_tools import config

toolkit = pytest.importorskip("doc_processing_toolkit")

from doc_processing_toolkit import Agent, TestModel  # noqa: E402
from doc_processing_toolkit.messages import ModelResponse, TextPart  # noqa: E402
from doc_processing_toolkit.models.base import ModelRequest  # noqa: E402
from doc_processing_toolkit.models.test import tool_call  # noqa: E402
from doc_processing_toolkit.skills import SkillEntry, render_catalog  # noqa: E402

REPO = Path(__file__).resolve().parents[4]
EXAMPLE_SKILLS = REPO / "examples" / "skills"
EXAMPLE_INVOICE = REPO / "examples" / "invoices" / "harbour-freight-7731-wrong-totals.json"
ACTIVATION = {"load_skill", "load_skill_resource", "execute_skill_script"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def expected_catalog(folder: Path) -> str:
    """The block the toolkit should render for `folder`, read independently of both
    packages' parsers (only the simple frontmatter of the example skills is handled)."""
    entries = []
    for skill_md in sorted(folder.glob("*/SKILL.md")):
        fields: dict[str, str] = {}
        lines = skill_md.read_text(encoding="utf-8").split("\n")
        for line in lines[1 : lines.index("---", 1)]:
            key, sep, value = line.partition(":")
            if sep and not line.startswith(" "):
                fields[key.strip()] = value.strip()
        entries.append(SkillEntry(fields["name"], fields["description"], str(skill_md)))
    return render_catalog(sorted(entries, key=lambda e: e.name))


@pytest.fixture
def skills_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the example skills, named by DPTTOOLS_SKILLS_DIR in this process too."""
    import shutil

    folder = tmp_path / "skills"
    shutil.copytree(EXAMPLE_SKILLS, folder)
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(folder))
    monkeypatch.setenv("DPTTOOLS_WORKSPACE_DIR", str(tmp_path))
    config.reset_settings()
    yield folder
    config.reset_settings()


def answer(request: ModelRequest) -> ModelResponse:
    return ModelResponse(parts=(TextPart("ok"),))


def stdio_entry(module: str, folder: Path) -> dict[str, Any]:
    return {
        "type": "mcp_command",
        "command": sys.executable,
        "args": ["-m", module],
        "name": "std-tools",
        # The same workspace as in this process: the sandboxed script sees a private /tmp,
        # where the test's files are visible only through the workspace.
        "env": {"DPTTOOLS_SKILLS_DIR": str(folder), "DPTTOOLS_WORKSPACE_DIR": str(folder.parent)},
    }


@asynccontextmanager
async def tools_for(route: str, folder: Path) -> AsyncIterator[list[Any]]:
    """The tools=[...] entry of each route, with what it needs kept open."""
    from doc_processing_std_tools import make_composed_server, skills_server

    async with AsyncExitStack() as stack:
        if route == "in_process":
            yield [skills_server]
        elif route == "in_process_composed":
            yield [make_composed_server()]
        elif route == "mcp_command":
            yield [stdio_entry("doc_processing_std_tools.skills", folder)]
        elif route == "mcp_command_composed":
            yield [stdio_entry("doc_processing_std_tools", folder)]
        else:
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "doc_processing_std_tools"],
                env={"DPTTOOLS_SKILLS_DIR": str(folder)},
            )
            read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            yield [{"session": session, "name": "std_tools"}]


ROUTES = [
    "in_process",
    "in_process_composed",
    "mcp_command",
    "mcp_command_composed",
    "prebuilt_session",
]


@pytest.mark.anyio
@pytest.mark.parametrize("route", ROUTES)
async def test_the_catalog_reaches_the_prompt_and_follows_the_folder(
    route: str, skills_dir: Path
) -> None:
    model = TestModel(answer)
    async with tools_for(route, skills_dir) as tools, Agent(model=model, tools=tools) as agent:
        result = await agent.run("Normalise the invoice totals")
        assert result.skills.status == "injected"
        assert model.requests[-1].system == expected_catalog(skills_dir)
        names = {spec.name for spec in model.requests[-1].tools}
        assert ACTIVATION | {"list_skills", "create_skill"} <= names

        # A skill written during the session is in the next run's catalog.
        (skills_dir / "late-arrival").mkdir()
        (skills_dir / "late-arrival" / "SKILL.md").write_text(
            "---\nname: late-arrival\ndescription: Added mid-session.\n---\nBody.\n",
            encoding="utf-8",
        )
        await agent.run("again")
        assert model.requests[-1].system == expected_catalog(skills_dir)
        assert '<skill name="late-arrival"' in (model.requests[-1].system or "")


@pytest.mark.anyio
@pytest.mark.parametrize("route", ["in_process", "mcp_command_composed"])
async def test_an_empty_folder_hides_the_activation_tools(
    route: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-skills-yet"
    empty.mkdir()
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(empty))
    config.reset_settings()
    model = TestModel(answer)
    try:
        async with (
            tools_for(route, empty) as tools,
            Agent(model=model, instructions="Be brief.", tools=tools) as agent,
        ):
            result = await agent.run("hello")
            names = {spec.name for spec in model.requests[-1].tools}
            assert result.skills.status == "empty"
            assert model.requests[-1].system == "Be brief."
            assert not names & ACTIVATION
            assert {"list_skills", "create_skill"} <= names
    finally:
        config.reset_settings()


@pytest.mark.anyio
async def test_diagnostics_of_a_broken_skill_are_logged_not_prompted(
    skills_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (skills_dir / "draft").mkdir()
    (skills_dir / "draft" / "SKILL.md").write_text("---\nname: draft\n---\nNo description.\n")
    model = TestModel(answer)
    async with tools_for("mcp_command", skills_dir) as tools, Agent(model=model, tools=tools) as a:
        with caplog.at_level("WARNING", logger="doc_processing_toolkit.skills"):
            await a.run("go")
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("skills: draft: error [missing_description]") for m in messages)
    assert "draft" not in (model.requests[-1].system or "")


@pytest.mark.anyio
@pytest.mark.parametrize("route", ["in_process", "mcp_command"])
async def test_the_model_loads_a_skill_and_runs_its_script(
    route: str, skills_dir: Path, tmp_path: Path
) -> None:
    invoice = tmp_path / "invoice.json"
    invoice.write_text(EXAMPLE_INVOICE.read_text(encoding="utf-8"), encoding="utf-8")

    def script(request: ModelRequest) -> ModelResponse:
        done = [p for m in request.messages for p in m.parts if p.kind == "tool_result"]
        if not done:
            return tool_call("load_skill", {"skill_name": "invoice-extraction"})
        if len(done) == 1:
            return tool_call(
                "execute_skill_script",
                {
                    "skill_name": "invoice-extraction",
                    "script_path": "scripts/normalise_totals.py",
                    "args": str(invoice),
                },
            )
        return ModelResponse(parts=(TextPart(done[-1].content),))  # type: ignore[union-attr]

    model = TestModel(script)
    async with tools_for(route, skills_dir) as tools, Agent(model=model, tools=tools) as agent:
        result = await agent.run("Fix the totals of invoice.json")
    load, execute = result.tool_calls
    assert not load.is_error and '<skill_content name="invoice-extraction"' in load.content
    assert "scripts/normalise_totals.py" in load.content
    assert not execute.is_error
    outcome = json.loads(execute.content)
    assert outcome["exit_code"] == 0, outcome["stderr"]
    assert json.loads(result.output)["exit_code"] == 0


def test_the_main_example_runs_an_agent_that_uses_the_invoice_skill() -> None:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("DPT_DEMO_MODEL", None)
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "agent_demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "-> load_skill(" in done.stdout
    assert "-> execute_skill_script(" in done.stdout
    assert '<skill name="invoice-extraction"' in done.stdout
    assert "- total: printed 3209.56, should be 3198.76" in done.stdout
