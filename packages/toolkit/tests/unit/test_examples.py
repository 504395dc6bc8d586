"""The toolkit's examples run offline as documented and print what they promise."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
EXAMPLES = REPO / "examples"


def offline_env() -> dict[str, str]:
    """This environment without provider keys or a model choice: the examples then use the
    offline test model."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("DPT_AGENT_MODEL", None)
    return env


def test_every_tool_route_example_makes_its_call() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "tools_routes.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=offline_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    expected = {
        "in-process MCPServer": "-> 42.0",
        "functions": "-> HELLO",
        "mcp_command": "-> 3",
        "mcp_script": "-> c b a",
        "tool_prefix": "w_count_words",
        "pre-built session": "-> 1",
        "mcp_http": "-> 2",
        "fastmcp object": "-> 4.5",
    }
    for route, shows in expected.items():
        line = next((line for line in lines if line.startswith(route + " ")), None)
        assert line is not None, f"no line for {route!r} in:\n{done.stdout}"
        assert shows in line, line


def test_the_example_yaml_runs_with_the_cli_and_injects_the_example_skills() -> None:
    cli = shutil.which("dpt-agent", path=str(Path(sys.executable).parent))
    if cli is None:
        pytest.skip("the dpt-agent script is not installed next to this Python")
    done = subprocess.run(
        [cli, "run", "--config", str(EXAMPLES / "agent.yaml"), "Which skills do you have?"],
        capture_output=True,
        text=True,
        timeout=120,
        env=offline_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "skills: 3 from 'std-tools': invoice-extraction, pii-redaction, table-profiling"
        in done.stdout + done.stderr
    )


def test_the_tracing_example_draws_one_trace_from_the_agent_to_the_script() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "tracing_tree.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=offline_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    names = [line.split(" (")[0] for line in lines if "|" in line]
    assert names[0] == "invoke_agent invoices"
    at = names.index("  execute_tool execute_skill_script")
    assert names[at + 1 : at + 3] == [
        "    MCP send tools/call execute_skill_script",
        "      tools/call execute_skill_script",
    ]
    assert "          doc_processing.script.exit_code = 0" in lines


def test_the_skill_evals_example_runs_an_offline_eval_and_writes_its_report(
    tmp_path: Path,
) -> None:
    report = tmp_path / "evals.html"
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "skill_evals.py"), "--report", str(report)],
        capture_output=True,
        text=True,
        timeout=300,
        env=offline_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "mode: offline, 60 queries" in done.stdout
    for skill in ("invoice-extraction", "pii-redaction", "table-profiling"):
        assert f"{skill}: " in done.stdout and "of 20 queries pass" in done.stdout
    assert report.read_text(encoding="utf-8").count('<svg class="chart') == 4
