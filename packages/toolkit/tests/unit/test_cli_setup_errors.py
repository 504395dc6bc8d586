"""dpt-agent's first hour (issue 20, item 8): a configuration error of the model is reported
before any server starts, and ``command: doc-processing-std-tools`` starts the console
script installed next to the running interpreter when its folder is not on PATH (a
virtual environment that is not activated). Real processes, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLEAN_PATH = os.pathsep.join(["/usr/bin", "/bin"])


def _dpt_agent(config: Path, *arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "doc_processing_toolkit.cli", "run", "-c", str(config), *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PATH": CLEAN_PATH},
        check=False,
    )


def test_a_typo_in_the_test_script_stops_the_run_before_any_server_starts(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "server-started"
    config = tmp_path / "agent.yaml"
    program = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('x')"
    config.write_text(
        json.dumps(
            {
                "model": "test",
                "model_options": {"script": [{"replyy": "hi"}]},
                "tools": [
                    {
                        "type": "mcp_command",
                        "command": sys.executable,
                        "args": ["-c", program],
                        "name": "marker",
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    done = _dpt_agent(config, "hello", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "model_options.script[0].replyy" in done.stderr
    assert not marker.exists(), "the server was started before the configuration was checked"


def test_a_console_script_beside_the_interpreter_starts_without_path(tmp_path: Path) -> None:
    beside = Path(sys.executable).parent / "doc-processing-std-tools"
    if not beside.exists():
        pytest.skip("doc-processing-std-tools is not installed beside this interpreter")
    config = tmp_path / "agent.yaml"
    config.write_text(
        "model: test\n"
        "tools:\n"
        "  - type: mcp_command\n"
        "    command: doc-processing-std-tools\n"
        f"    args: ['--workspace', {str(tmp_path)!r}]\n"
        "    name: std-tools\n",
        encoding="utf-8",
    )
    done = _dpt_agent(config, "--dry-run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "FileNotFoundError" not in done.stderr
    assert "list_skills(" in done.stdout
    assert "read_file(" in done.stdout


def test_a_command_on_no_path_still_fails_with_its_name(tmp_path: Path) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(
        "model: test\n"
        "tools:\n"
        "  - type: mcp_command\n"
        "    command: no-such-mcp-server-anywhere\n"
        "    name: missing\n",
        encoding="utf-8",
    )
    done = _dpt_agent(config, "hello", cwd=tmp_path)
    assert done.returncode == 1
    assert "no-such-mcp-server-anywhere" in done.stderr
