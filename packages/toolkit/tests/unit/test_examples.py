"""The toolkit's examples run offline as documented and print what they promise."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def _demo_module() -> object:
    import importlib.util

    spec = importlib.util.spec_from_file_location("agent_demo", EXAMPLES / "agent_demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_demo_model_answers_a_tool_error_instead_of_crashing() -> None:
    from doc_processing_toolkit import ModelRequest
    from doc_processing_toolkit.messages import Message, TextPart, ToolResultPart

    demo: Any = _demo_module()
    system = '<available_skills><skill name="invoice-extraction" path="x">X</skill>'
    refusal = (
        "The script cannot run: bubblewrap could not start (Permission denied); set "
        "DPTTOOLS_SCRIPT_SANDBOX=none to run it without a sandbox."
    )

    def request(*results: ToolResultPart) -> ModelRequest:
        messages = [Message(role="user", parts=(TextPart("check"),))]
        messages += [Message(role="user", parts=(r,)) for r in results]
        return ModelRequest(system=system, messages=messages, tools=(), provider_kwargs={})

    loaded = ToolResultPart("1", "load_skill", "see scripts/normalise_totals.py")
    failed = ToolResultPart("2", "execute_skill_script", refusal, is_error=True)
    reply = demo.offline_model(request(loaded, failed))
    assert reply.text.startswith("The tool execute_skill_script failed")
    assert refusal in reply.text
    # A result that is not JSON is quoted, not parsed into a traceback.
    odd = ToolResultPart("2", "execute_skill_script", "plain words")
    assert "plain words" in demo.offline_model(request(loaded, odd)).text
    # An error of the first call stops the run too.
    lost = ToolResultPart("1", "load_skill", "no such skill", is_error=True)
    assert "load_skill failed" in demo.offline_model(request(lost)).text


def test_the_demo_says_its_model_is_a_script_and_prints_a_tool_error(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    shutil.copytree(EXAMPLES / "skills" / "invoice-extraction", skills / "invoice-extraction")
    script = skills / "invoice-extraction" / "scripts" / "normalise_totals.py"
    script.unlink()
    script.mkdir()  # the script the skill lists is a folder: execute_skill_script fails
    (script / "readme.txt").write_text("not a script\n", encoding="utf-8")
    code = (
        "import sys\nfrom pathlib import Path\nsys.path.insert(0, sys.argv[1])\n"
        "import agent_demo\nagent_demo.SKILLS_DIR = Path(sys.argv[2])\n"
        "raise SystemExit(agent_demo.main())\n"
    )
    env = offline_env()
    env.pop("DPT_DEMO_MODEL", None)
    done = subprocess.run(
        [sys.executable, "-c", code, str(EXAMPLES), str(skills)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "an offline script standing in for a model" in done.stdout
    assert "<- execute_skill_script failed:" in done.stdout
    assert "is a folder in skill 'invoice-extraction'" in done.stdout
