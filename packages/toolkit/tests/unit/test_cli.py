"""dpt-agent: answer on stdout as it streams, progress on stderr, exit statuses."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp.server.mcpserver import MCPServer

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.cli import main, stream_run
from doc_processing_toolkit.messages import ModelResponse, ToolResultPart
from doc_processing_toolkit.models import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call

SERVER = Path(__file__).parents[1] / "servers" / "stdio_server.py"


def test_run_streams_the_answer_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--model", "test", "hello there"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "echo: hello there\n"
    assert "[test:model: 1 requests" in captured.err


def test_run_with_a_config_file_and_overrides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(
        f"model: test:configured\ninstructions: ignored\ntools:\n"
        f"  - type: mcp_script\n    script: {SERVER}\n"
    )
    code = main(["run", "-c", str(config), "--instructions", "x", "--max-turns", "2", "-q", "hi"])
    assert code == 0
    captured = capsys.readouterr()
    assert captured.out == "echo: hi\n"
    assert captured.err == ""


def test_the_prompt_can_come_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("from stdin"))
    assert main(["run", "-m", "test", "-q", "-"]) == 0
    assert capsys.readouterr().out == "echo: from stdin\n"


def test_errors_exit_with_1_and_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "-c", str(tmp_path / "missing.yaml"), "hi"]) == 1
    assert "dpt-agent: error: agent configuration file" in capsys.readouterr().err
    assert main(["run", "hi"]) == 1
    assert "no model: give one with --model" in capsys.readouterr().err


def test_usage_errors_exit_with_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["run"])
    assert raised.value.code == 2
    assert "prompt" in capsys.readouterr().err


@pytest.mark.anyio
async def test_progress_shows_tool_calls_and_results_as_they_happen(
    make_server: Callable[..., MCPServer],
) -> None:
    def script(request: ModelRequest) -> ModelResponse:
        results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        if not results:
            return tool_call("echo", {"text": "ping"})
        if results[0].name == "echo":
            return tool_call("fail", {"reason": "no"})
        return reply("all done")

    agent = Agent(TestModel(script), tools=[make_server("demo", tools=("echo", "fail"))])
    out, err = io.StringIO(), io.StringIO()
    await stream_run(agent, "go", out=out, err=err)
    lines = err.getvalue().splitlines()
    assert lines[0] == '-> echo [demo] {"text": "ping"}'
    assert lines[1].startswith("<- echo (") and lines[1].endswith(" s) ping")
    assert lines[2] == '-> fail [demo] {"reason": "no"}'
    assert lines[3].startswith("x fail (") and "failed on purpose: no" in lines[3]
    assert lines[4].startswith("[test:model: 3 requests")
    assert out.getvalue() == "all done\n"


def test_the_module_runs_as_a_program() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "doc_processing_toolkit.cli", "run", "-m", "test", "-q", "hey"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (completed.returncode, completed.stdout) == (0, "echo: hey\n")


STANDIN = Path(__file__).parents[1] / "servers" / "skills_standin.py"


def test_progress_names_the_injected_skills_before_the_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = tmp_path / "catalog.json"
    catalog.write_text(
        '{"skills": [{"name": "a-skill", "description": "A."},'
        ' {"name": "b-skill", "description": "B."}]}'
    )
    config = tmp_path / "agent.yaml"
    config.write_text(
        "model: test\ntools:\n"
        f"  - type: mcp_script\n    script: {STANDIN}\n    name: kit\n"
        f"    env:\n      STANDIN_CATALOG: {catalog}\n"
    )
    assert main(["run", "-c", str(config), "hi"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "skills: 2 from 'kit': a-skill, b-skill"
    catalog.write_text('{"skills": []}')
    assert main(["run", "-c", str(config), "hi"]) == 0
    assert capsys.readouterr().err.splitlines()[0] == "skills: none yet in 'kit'"
