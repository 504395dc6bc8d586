"""dpt-agent and the approval gate, end to end: a real dpt-agent process, a model served
by the local OpenAI-compatible stand-in that asks for ``write_file``, and std-tools' own
server writing into a temporary workspace. Without a terminal the call is denied (and the
file never written) unless ``--approve-all``; at a terminal (a pseudo-terminal here) the
person's y or n decides.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import OpenAIWire, StandIn

pytest.importorskip("doc_processing_std_tools", reason="install packages/std-tools")

PROMPT_END = "Allow this call? [y/n] "


def configure(tmp_path: Path, stand_in: StandIn, openai_wire: type[OpenAIWire]) -> Path:
    """An agent file gating write_file with the 'ask' policy; the model will ask to write
    report.txt, then answer."""
    workspace, skills = tmp_path / "workspace", tmp_path / "skills"
    workspace.mkdir()
    skills.mkdir()
    arguments = json.dumps({"path": "report.txt", "content": "quarterly numbers"})
    stand_in.reply_sse(
        openai_wire.stream("", [openai_wire.tool_call("c1", "write_file", arguments)])
    )
    stand_in.reply_sse(openai_wire.stream("Finished."))
    config = tmp_path / "agent.yaml"
    config.write_text(
        "model: openai:gpt-test-1\n"
        "model_options:\n"
        f"  base_url: {stand_in.url}/v1\n"
        "  api_key: test-key\n"
        "  max_retries: 0\n"
        "tools:\n"
        "  - type: mcp_command\n"
        f"    command: {sys.executable}\n"
        "    args: [-m, doc_processing_std_tools]\n"
        "    name: std-tools\n"
        "    env:\n"
        f"      DPTTOOLS_WORKSPACE_DIR: {workspace}\n"
        f"      DPTTOOLS_SKILLS_DIR: {skills}\n"
        "approval:\n"
        "  tools: [write_file, edit_file, execute_skill_script]\n"
        "  policy: ask\n"
    )
    return config


def dpt_agent(config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "doc_processing_toolkit.cli", "run", "-c", str(config), *extra]


def tool_message(stand_in: StandIn) -> dict[str, Any]:
    """What the model was sent back for its call."""
    message: dict[str, Any] = stand_in.requests[1].body["messages"][-1]
    assert message["role"] == "tool"
    return message


def test_without_a_terminal_gated_calls_are_denied_and_nothing_is_written(
    tmp_path: Path, stand_in: StandIn, openai_wire: type[OpenAIWire]
) -> None:
    config = configure(tmp_path, stand_in, openai_wire)
    done = subprocess.run(
        dpt_agent(config, "write the report"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "Finished.\n"
    assert not (tmp_path / "workspace" / "report.txt").exists()
    lines = done.stderr.splitlines()
    assert lines[0] == (
        "note: standard input is not a terminal, so calls that need approval "
        "(write_file, edit_file, execute_skill_script) will be denied; pass --approve-all "
        "to approve them"
    )
    reason = "no one could approve it: the agent is not running at a terminal"
    assert f"denied: write_file [std-tools] by terminal (not interactive): {reason}" in lines
    assert any(line.startswith("x write_file (") for line in lines)
    assert lines[-1].endswith("1 tool calls, 1 denied]")
    assert tool_message(stand_in)["content"] == (
        f"Error: The call to write_file was denied and did not run: {reason}"
    )


def test_approve_all_runs_gated_calls_without_asking(
    tmp_path: Path, stand_in: StandIn, openai_wire: type[OpenAIWire]
) -> None:
    config = configure(tmp_path, stand_in, openai_wire)
    done = subprocess.run(
        dpt_agent(config, "--approve-all", "write the report"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert (tmp_path / "workspace" / "report.txt").read_text() == "quarterly numbers"
    lines = done.stderr.splitlines()
    assert "approved: write_file [std-tools] by dpt-agent --approve-all" in lines
    assert not any(line.startswith("note:") for line in lines)
    assert PROMPT_END not in done.stderr
    assert not tool_message(stand_in)["content"].startswith("Error")


class Terminal:
    """dpt-agent with a pseudo-terminal as its standard input; stderr is collected as it
    arrives so a test can wait for the question before answering."""

    def __init__(self, command: list[str]) -> None:
        self._master, slave = pty.openpty()
        self.process = subprocess.Popen(
            command, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        os.close(slave)
        self._err = bytearray()
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := self.process.stderr.read1(4096):
            self._err.extend(chunk)

    @property
    def stderr(self) -> str:
        return self._err.decode("utf-8", "replace")

    def wait_for(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.stderr:
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                pytest.fail(f"dpt-agent never wrote {text!r}; stderr:\n{self.stderr}")
            time.sleep(0.02)

    def answer(self, line: str) -> None:
        os.write(self._master, line.encode() + b"\n")

    def finish(self) -> tuple[int, str]:
        assert self.process.stdout is not None
        out = self.process.stdout.read().decode()
        code = self.process.wait(timeout=60)
        self._reader.join(timeout=10)
        self.close()
        return code, out

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self._master)


@pytest.mark.parametrize(
    ("answers", "written", "verdict"),
    [
        (["y"], True, "approved: write_file [std-tools] by terminal"),
        (
            ["maybe", "n"],
            False,
            "denied: write_file [std-tools] by terminal: the person at the terminal refused it",
        ),
    ],
)
def test_at_a_terminal_the_person_decides(
    tmp_path: Path,
    stand_in: StandIn,
    openai_wire: type[OpenAIWire],
    answers: list[str],
    written: bool,
    verdict: str,
) -> None:
    config = configure(tmp_path, stand_in, openai_wire)
    terminal = Terminal(dpt_agent(config, "write the report"))
    terminal.wait_for(PROMPT_END)
    for number, answer in enumerate(answers):
        if number:
            terminal.wait_for("Please answer y or n.\n" + PROMPT_END)
        terminal.answer(answer)
    code, out = terminal.finish()

    assert (code, out) == (0, "Finished.\n"), terminal.stderr
    assert (tmp_path / "workspace" / "report.txt").exists() is written
    err = terminal.stderr
    question = (
        "The model wants to call 'write_file' on server 'std-tools' with these arguments:\n"
        "  {\n"
        '    "path": "report.txt",\n'
        '    "content": "quarterly numbers"\n'
        "  }\n"
    )
    assert question in err
    # The answer's newline is echoed by the terminal, not written to stderr.
    assert PROMPT_END + verdict + "\n" in err
    assert "note:" not in err


def test_approve_all_does_not_overrule_a_policy_that_decides_by_itself(
    tmp_path: Path,
    stand_in: StandIn,
    openai_wire: type[OpenAIWire],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from doc_processing_toolkit.cli import main

    server = Path(__file__).parents[1] / "servers" / "stdio_server.py"
    stand_in.reply_sse(
        openai_wire.stream("", [openai_wire.tool_call("c1", "echo", '{"text": "hi"}')])
    )
    stand_in.reply_sse(openai_wire.stream("Done."))
    config = tmp_path / "agent.yaml"
    config.write_text(
        "model: openai:gpt-test-1\n"
        f"model_options: {{base_url: '{stand_in.url}/v1', api_key: k, max_retries: 0}}\n"
        f"tools:\n  - type: mcp_script\n    script: {server}\n    name: echoes\n"
        "approval: {tools: [echo], policy: deny}\n"
    )

    assert main(["run", "-c", str(config), "--approve-all", "say hi"]) == 0

    lines = capsys.readouterr().err.splitlines()
    assert (
        "denied: echo [echoes] by deny: the agent's approval policy denies every call to 'echo'"
        in lines
    )
    assert tool_message(stand_in)["content"].endswith(
        "was denied and did not run: the agent's approval policy denies every call to 'echo'"
    )
