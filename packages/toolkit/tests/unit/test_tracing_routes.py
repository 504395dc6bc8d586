"""One trace from the agent's request to the skill script's exit, on every route.

A real std-tools server (its skills tools and a skill with a script) is reached in
process, over stdio and over streamable HTTP. The toolkit's spans are recorded by the
OpenTelemetry SDK's in-memory exporter; a server child records its own (the MCP SDK's
SERVER spans, with what std-tools adds) to a file through the same SDK. Every server span
must sit under the toolkit's ``execute_tool`` span of its call, in the run's one trace.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from http_child import free_port, launch, listening
from script_user_access import without_bwrap_as_root

from doc_processing_toolkit import Agent
from doc_processing_toolkit.models.test import TestModel

TRACED = Path(__file__).parents[1] / "servers" / "traced_std_tools.py"
SpanRecords = Any  # the `spans` fixture's records (tests/conftest.py)

SKILL = """---
name: greet
description: Greets someone by name; use it to say hello.
---
Run scripts/hello.py with the name.
"""
SCRIPT = "import sys\nprint('hello', *sys.argv[1:])\nsys.exit(3)\n"

STEPS = [
    {"call": "load_skill", "arguments": {"skill_name": "greet"}},
    {
        "call": "execute_skill_script",
        "arguments": {"skill_name": "greet", "script_path": "scripts/hello.py", "args": "Ada"},
    },
    {"reply": "Said hello."},
]


@pytest.fixture
def settings(tmp_path: Path) -> dict[str, str]:
    """A skills folder with one skill and its script, as std-tools settings."""
    skill = tmp_path / "skills" / "greet"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)
    (skill / "scripts" / "hello.py").write_text(SCRIPT)
    work = tmp_path / "work"
    work.mkdir()
    return {
        "DPTTOOLS_SKILLS_DIR": str(tmp_path / "skills"),
        "DPTTOOLS_WORKSPACE_DIR": str(work),
        "DPTTOOLS_SCRIPT_SANDBOX": "none",
        "DPTTOOLS_CACHE_DIR": str(tmp_path / "cache"),
        "TRACE_FILE": str(tmp_path / "server-spans.jsonl"),
    }


@pytest.fixture
def in_process(
    settings: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, Any]]:
    from doc_processing_std_tools.config import reset_settings
    from doc_processing_std_tools.server import make_composed_server

    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    reset_settings()
    try:
        yield {"tools": [make_composed_server()], "file": None}
    finally:
        reset_settings()


@pytest.fixture
def over_stdio(settings: dict[str, str]) -> dict[str, Any]:
    entry = {
        "type": "mcp_command",
        "command": sys.executable,
        "args": [str(TRACED)],
        "env": settings,
        "name": "std_tools",
    }
    return {"tools": [entry], "file": Path(settings["TRACE_FILE"])}


@pytest.fixture
def over_http(settings: dict[str, str]) -> Iterator[dict[str, Any]]:
    port = free_port()
    arguments = [str(TRACED), "--transport", "streamable-http", "--port", str(port)]
    with listening(launch(arguments, port, env=settings)) as started:
        entry = {"type": "mcp_http", "url": started.url, "name": "std_tools"}
        yield {"tools": [entry], "file": Path(settings["TRACE_FILE"])}


async def _run(route: dict[str, Any]) -> None:
    agent = Agent(model=TestModel(STEPS), tools=route["tools"], name="greeter")
    async with agent:
        result = await agent.run("Say hello to Ada.")
    assert result.output == "Said hello."


def _check(spans: SpanRecords) -> None:
    (run,) = spans.named("invoke_agent greeter")
    assert run["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert run["attributes"]["gen_ai.agent.name"] == "greeter"
    assert run["attributes"]["doc_processing.skills.status"] == "injected"
    assert run["attributes"]["doc_processing.skills.injected"] == ["greet"]
    assert run["attributes"]["doc_processing.skills.count"] == 1
    assert run["attributes"]["doc_processing.skills.left_out"] == []
    trace_id = run["trace_id"]

    (load,) = spans.named("execute_tool load_skill")
    assert load["attributes"]["doc_processing.skill.name"] == "greet"
    server = load["attributes"]["doc_processing.tool.server"]
    assert server in ("std_tools", "doc-processing-std-tools")
    (execute,) = spans.named("execute_tool execute_skill_script")
    assert "error.type" not in execute["attributes"]

    (served_load,) = spans.named("tools/call load_skill")
    (served_script,) = spans.named("tools/call execute_skill_script")
    for served, caller in ((served_load, "execute_tool load_skill"), (served_script, None)):
        assert served["kind"] == "SERVER"
        assert served["trace_id"] == trace_id
        assert served["attributes"]["doc_processing.skill.name"] == "greet"
        ancestors = spans.ancestors(served)
        assert ancestors[-1] == "invoke_agent greeter", ancestors
        if caller is not None:
            assert caller in ancestors
    assert "execute_tool execute_skill_script" in spans.ancestors(served_script)
    assert served_script["attributes"]["doc_processing.script.exit_code"] == 3
    assert served_script["attributes"]["doc_processing.script.sandbox"] == "none"
    # Every span of the run (the setup's requests too) is in its one trace.
    in_run = [r for r in spans.all() if "invoke_agent greeter" in spans.ancestors(r)]
    assert {r["trace_id"] for r in in_run} == {trace_id}


@without_bwrap_as_root
@pytest.mark.anyio
async def test_in_process_server_spans_are_children_of_the_tool_calls(
    spans: SpanRecords, in_process: dict[str, Any]
) -> None:
    await _run(in_process)
    _check(spans)


@without_bwrap_as_root
@pytest.mark.anyio
async def test_stdio_server_spans_join_the_run_through_meta(
    spans: SpanRecords, over_stdio: dict[str, Any]
) -> None:
    spans.files.append(over_stdio["file"])
    await _run(over_stdio)
    _check(spans)
    (sent,) = spans.named("MCP send tools/call execute_skill_script")
    (served,) = spans.named("tools/call execute_skill_script")
    assert served["parent_id"] == sent["span_id"]
    assert isinstance(served.get("process"), int)  # written by the server child


@without_bwrap_as_root
@pytest.mark.anyio
async def test_http_server_spans_join_the_run_through_meta(
    spans: SpanRecords, over_http: dict[str, Any]
) -> None:
    spans.files.append(over_http["file"])
    await _run(over_http)
    # The server writes its span as the answer goes out: give the last one a moment.
    with anyio.fail_after(10):
        while not spans.named("tools/call execute_skill_script"):  # noqa: ASYNC110
            await anyio.sleep(0.05)
    _check(spans)
