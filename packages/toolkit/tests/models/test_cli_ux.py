"""dpt-agent as a new user meets it, each through a real ``dpt-agent`` process: --json,
--base-url / --api-key-env against the local provider stand-ins, --dry-run, the offline
scripted model from YAML, the waiting line on a terminal (a pseudo-terminal here), and
errors that name the file, the line, the key or the variable."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import AnthropicWire, OpenAIWire, StandIn

SERVERS = Path(__file__).parents[1] / "servers"
STDIO_SERVER = SERVERS / "stdio_server.py"
SKILLS_STANDIN = SERVERS / "skills_standin.py"


def dpt_agent(
    *arguments: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "doc_processing_toolkit.cli", *arguments],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def in_process(capsys: pytest.CaptureFixture[str], *arguments: str) -> Ran:
    """`main` of dpt-agent in this process (for the checks of its messages, where
    starting an interpreter adds nothing but seconds)."""
    from doc_processing_toolkit.cli import main

    code = main(list(arguments))
    captured = capsys.readouterr()
    return Ran(code, captured.out, captured.err)


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def scripted_config(tmp_path: Path, extra: str = "") -> Path:
    """An agent file: the offline test model scripted to call two tools of a real stdio
    server, then answer."""
    config = tmp_path / "agent.yaml"
    config.write_text(
        "model: test\n"
        "model_options:\n"
        "  script:\n"
        "    - call: echo\n"
        "      arguments: {text: ping}\n"
        "      text: Echoing.\n"
        "    - calls:\n"
        "        - {name: env, arguments: {name: DEMO}}\n"
        "        - {name: fail, arguments: {reason: refused}}\n"
        "    - reply: Both tools answered.\n"
        f"{extra}"
        "tools:\n"
        "  - type: mcp_script\n"
        f"    script: {STDIO_SERVER}\n"
        "    name: demo\n"
        "    env: {DEMO: from-the-server}\n"
    )
    return config


def test_a_scripted_test_model_from_yaml_drives_real_tool_calls_without_a_key(
    tmp_path: Path,
) -> None:
    done = dpt_agent("run", "-c", str(scripted_config(tmp_path)), "go")

    assert done.returncode == 0, done.stderr
    assert done.stdout == "Echoing.\nBoth tools answered.\n"
    lines = done.stderr.splitlines()
    assert lines[0] == '-> echo [demo] {"text": "ping"}'
    assert lines[1].startswith("<- echo (") and lines[1].endswith(" s) ping")
    assert any(line.endswith(" s) from-the-server") for line in lines)
    assert any(line.startswith("x fail (") and "refused" in line for line in lines)
    assert lines[-1].startswith("[test:model: 3 requests, ")
    assert lines[-1].endswith(" 3 tool calls]")


def test_json_prints_the_run_result_and_nothing_else_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = dpt_agent("run", "--json", "-c", str(scripted_config(tmp_path)), "go")

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # the whole of stdout is one JSON document
    assert result["output"] == "Both tools answered."
    assert result["model_name"] == "test:model"
    assert [(c["name"], c["content"], c["is_error"]) for c in result["tool_calls"]] == [
        ("echo", "ping", False),
        ("env", "from-the-server", False),
        ("fail", result["tool_calls"][2]["content"], True),
    ]
    assert result["usage"]["requests"] == 3
    assert result["usage"]["total_tokens"] == (
        result["usage"]["input_tokens"] + result["usage"]["output_tokens"]
    )
    assert [message["role"] for message in result["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert result["skills"]["status"] == "no_server"
    assert "[test:model: 3 requests" in done.stderr  # the progress stays on stderr

    quiet = in_process(capsys, "run", "--json", "-q", "-c", str(scripted_config(tmp_path)), "go")
    assert (quiet.returncode, quiet.stderr) == (0, "")
    assert json.loads(quiet.stdout)["output"] == "Both tools answered."


def test_json_leaves_stdout_empty_when_the_run_fails(capsys: pytest.CaptureFixture[str]) -> None:
    done = in_process(capsys, "run", "--json", "-m", "openai:gpt-5", "hi")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("dpt-agent: error: no OpenAI API key")


def test_base_url_and_api_key_env_reach_an_openai_compatible_server(
    tmp_path: Path, stand_in: StandIn
) -> None:
    stand_in.reply_sse(OpenAIWire.stream("Hello from the stand-in."))
    config = tmp_path / "agent.yaml"
    # The file's key and address are replaced by the command line's.
    config.write_text(
        "model: openai:gpt-test-1\n"
        "model_options: {api_key: key-in-the-file, base_url: 'http://127.0.0.1:9/v1', "
        "max_retries: 0}\n"
    )
    done = dpt_agent(
        "run",
        "-c",
        str(config),
        "--base-url",
        f"{stand_in.url}/v1",
        "--api-key-env",
        "TEAM_GATEWAY_KEY",
        "hi",
        env={"TEAM_GATEWAY_KEY": "key-from-the-variable"},
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the stand-in.\n"
    assert stand_in.last.path == "/v1/chat/completions"
    assert stand_in.last.headers["authorization"] == "Bearer key-from-the-variable"
    assert done.stderr.splitlines()[-1].startswith("[openai:gpt-test-1: 1 requests, 20 input")


def test_base_url_and_api_key_env_reach_an_anthropic_stand_in(stand_in: StandIn) -> None:
    stand_in.reply_sse(AnthropicWire.stream([AnthropicWire.text("Hi.")], model="claude-test-1"))
    done = dpt_agent(
        "run",
        "-m",
        "anthropic:claude-test-1",
        "--base-url",
        stand_in.url,
        "--api-key-env",
        "MY_CLAUDE_KEY",
        "hi",
        env={"MY_CLAUDE_KEY": "sk-ant-from-my-variable"},
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hi.\n"
    headers = stand_in.last.headers
    sent = headers.get("x-api-key") or headers["authorization"].removeprefix("Bearer ")
    assert sent == "sk-ant-from-my-variable"
    # The summary names the provider and the model the same way as for test and openai.
    assert done.stderr.splitlines()[-1].startswith("[anthropic:claude-test-1: 1 requests")


def test_an_unset_api_key_env_names_the_variable(
    stand_in: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    done = in_process(
        capsys,
        "run",
        "-m",
        "openai:gpt-test-1",
        "--base-url",
        stand_in.url,
        "--api-key-env",
        "NOT_SET_X",
        "hi",
    )
    assert done.returncode == 1
    assert "the environment variable NOT_SET_X" in done.stderr
    assert stand_in.requests == []


def skills_config(tmp_path: Path, stand_in: StandIn) -> Path:
    catalog = tmp_path / "catalog.json"
    catalog.write_text(
        json.dumps(
            {
                "skills": [
                    {"name": "invoice-check", "description": "Check invoice totals."},
                    {"name": "pdf-notes", "description": "Summarise a PDF."},
                ]
            }
        )
    )
    config = tmp_path / "agent.yaml"
    config.write_text(
        "model: openai:gpt-test-1\n"
        f"model_options: {{base_url: '{stand_in.url}/v1', api_key: k, max_retries: 0}}\n"
        "instructions: You check documents.\n"
        "tools:\n"
        f"  - type: mcp_script\n    script: {SKILLS_STANDIN}\n    name: kit\n"
        f"    env: {{STANDIN_CATALOG: '{catalog}'}}\n"
        f"  - type: mcp_script\n    script: {STDIO_SERVER}\n    name: demo\n    tool_prefix: demo\n"
    )
    return config


def test_dry_run_prints_the_tools_and_the_system_prompt_and_calls_no_model(
    tmp_path: Path, stand_in: StandIn
) -> None:
    done = dpt_agent("run", "--dry-run", "-c", str(skills_config(tmp_path, stand_in)))

    assert done.returncode == 0, done.stderr
    assert stand_in.requests == []  # the model was never contacted
    out = done.stdout
    assert out.startswith("model: openai:gpt-test-1 (not contacted: dry run)\n")
    assert "skills: 2 from 'kit': invoice-check, pdf-notes\n" in out
    assert "  demo_echo(text)\n      Return the text unchanged.\n" in out
    assert "  load_skill(" in out
    prompt = out.split("\nsystem prompt:\n", 1)[1]
    assert prompt.startswith("You check documents.")
    assert "invoice-check" in prompt and "Check invoice totals." in prompt


def test_dry_run_json_holds_the_tool_schemas_and_the_prompt(
    tmp_path: Path, stand_in: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    done = in_process(
        capsys, "run", "--dry-run", "--json", "-c", str(skills_config(tmp_path, stand_in)), "unused"
    )

    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["model"] == "openai:gpt-test-1"
    tools = {tool["name"]: tool for tool in plan["tools"]}
    assert tools["demo_echo"]["input_schema"]["required"] == ["text"]
    assert plan["skills"]["status"] == "injected"
    assert [skill["name"] for skill in plan["skills"]["skills"]] == ["invoice-check", "pdf-notes"]
    assert "invoice-check" in plan["system_prompt"]
    assert plan["warnings"] == []
    assert stand_in.requests == []


def test_dry_run_without_a_key_still_shows_the_setup_and_warns(
    capsys: pytest.CaptureFixture[str],
) -> None:
    done = in_process(capsys, "run", "--dry-run", "-m", "anthropic:claude-x", "unused")
    assert done.returncode == 0, done.stderr
    assert (
        "warning: the model could not be set up: no Anthropic API key: set the environment "
        "variable ANTHROPIC_API_KEY" in done.stdout
    )
    assert "tools (0):" in done.stdout


def run_on_a_terminal(*arguments: str) -> tuple[int, str, str]:
    """Run dpt-agent with stderr on a pseudo-terminal (stdout a pipe); return the exit
    status, stdout and every byte written to the terminal."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "doc_processing_toolkit.cli", *arguments],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        env={**os.environ, "TERM": "xterm"},
    )
    os.close(slave)
    written = bytearray()
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        written.extend(chunk)
    os.close(master)
    assert process.stdout is not None
    out = process.stdout.read().decode()
    return process.wait(timeout=60), out, written.decode("utf-8", "replace")


def test_a_waiting_line_is_shown_on_a_terminal_and_erased(tmp_path: Path) -> None:
    config = tmp_path / "slow.yaml"
    config.write_text("model: test\nmodel_options: {delay: 1.0}\n")
    code, out, terminal = run_on_a_terminal("run", "-c", str(config), "go")

    assert code == 0, terminal
    assert out == "echo: go\n"
    waits = re.findall(r"\r\x1b\[K[|/\\-] waiting for test:model \((\d+\.\d) s\)", terminal)
    assert len(waits) >= 5, terminal  # redrawn every 0.1 s for a second
    assert max(float(seconds) for seconds in waits) >= 0.8
    # The last waiting line is erased before the summary, so once the terminal has
    # carried out the erasures only the summary line is left.
    last_wait = terminal.rindex("waiting for")
    assert terminal.index("\r\x1b[K", last_wait) < terminal.index("[test:model:")
    cleaned = re.sub(r"\r\x1b\[K([|/\\-] waiting for [^\r]*)?", "", terminal)
    assert re.fullmatch(
        r"\[test:model: 1 requests, \d+ input \+ \d+ output tokens, 0 tool calls\]\r\n",
        cleaned,
    ), terminal


def test_no_waiting_line_without_a_terminal_or_with_quiet(tmp_path: Path) -> None:
    config = tmp_path / "slow.yaml"
    config.write_text("model: test\nmodel_options: {delay: 0.5}\n")
    plain = dpt_agent("run", "-c", str(config), "go")
    assert (plain.returncode, plain.stdout) == (0, "echo: go\n")
    assert re.fullmatch(
        r"\[test:model: 1 requests, \d+ input \+ \d+ output tokens, 0 tool calls\]\n",
        plain.stderr,
    )

    code, out, terminal = run_on_a_terminal("run", "-q", "-c", str(config), "go")
    assert (code, out, terminal) == (0, "echo: go\n", "")


def test_every_unset_variable_is_reported_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(
        "model: ${DPT_UX_MODEL}\n"
        "instructions: ${DPT_UX_GREETING} and ${DPT_UX_MODEL}\n"
        "tools:\n"
        "  - type: mcp_http\n"
        "    url: ${DPT_UX_URL:-http://127.0.0.1:9/mcp}\n"
        "    headers: {X-Team: '${DPT_UX_TEAM}'}\n"
    )
    done = in_process(capsys, "run", "-c", str(config), "hi")
    assert done.returncode == 1
    assert done.stderr == (
        f"dpt-agent: error: {config}: the configuration uses environment variables that are "
        "not set:\n"
        "  DPT_UX_MODEL (used by model, instructions)\n"
        "  DPT_UX_GREETING (used by instructions)\n"
        "  DPT_UX_TEAM (used by tools[0].headers.X-Team)\n"
        "set them, or give a fallback as ${VAR:-default}.\n"
    )


def test_a_yaml_syntax_error_names_the_file_the_line_and_the_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text("model: test\ntools:\n  - type: mcp_http\n   url: http://x/mcp\n")
    done = in_process(capsys, "run", "-c", str(config), "hi")
    assert done.returncode == 1
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"dpt-agent: error: {config}, line 4, column 4: not valid YAML: ")
    assert "<unicode string>" not in done.stderr
    assert "   url: http://x/mcp" in done.stderr  # the line is shown


def test_a_server_that_exits_at_once_says_so_with_its_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(
        "model: test\ntools:\n"
        f"  - type: mcp_script\n    script: {STDIO_SERVER}\n    name: db\n"
        "    env: {TEST_SERVER_CRASH: 'fatal: cannot open the database'}\n"
        "  - type: mcp_command\n    command: sh\n    args: [-c, 'exit 3']\n    name: silent\n"
        "    required: false\n"
    )
    done = in_process(capsys, "run", "-c", str(config), "hi")
    assert done.returncode == 1
    assert "server 'db' (mcp_script: python " in done.stderr
    assert "exited before it answered" in done.stderr
    assert "last lines of its stderr:\n    test server: about to fail\n" in done.stderr
    assert "    fatal: cannot open the database" in done.stderr
    assert "Connection closed" not in done.stderr

    optional_only = tmp_path / "optional.yaml"
    optional_only.write_text(
        "model: test\ntools:\n"
        "  - type: mcp_command\n    command: sh\n    args: [-c, 'exit 3']\n    name: silent\n"
        "    required: false\n"
    )
    done = in_process(capsys, "run", "-c", str(optional_only), "hi")
    assert done.returncode == 0, done.stderr
    warning = next(line for line in done.stderr.splitlines() if line.startswith("warning:"))
    assert "server 'silent' (mcp_command: sh -c exit 3) exited before it answered" in warning
    assert "it wrote nothing to stderr" in warning


def test_error_hints_name_the_option_the_yaml_key_or_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    no_model = in_process(capsys, "run", "hi")
    assert no_model.returncode == 1
    assert "--model" in no_model.stderr and "model: key" in no_model.stderr
    assert "model=" not in no_model.stderr

    no_key = in_process(capsys, "run", "-m", "claude-sonnet-5", "hi")
    assert no_key.returncode == 1
    assert "ANTHROPIC_API_KEY" in no_key.stderr
    assert "model_options.api_key_env" in no_key.stderr
    assert "api_key=" not in no_key.stderr

    config = tmp_path / "agent.yaml"
    config.write_text("model: test\nmodel_options: {base_url: 'http://x', chunk: 3}\n")
    done = in_process(capsys, "run", "-c", str(config), "hi")
    assert done.returncode == 1
    assert done.stderr.startswith(
        "dpt-agent: error: model_options.base_url: not an option of the test provider "
        "(its options: script, chunk_size, delay). Also unknown: chunk."
    )
    assert "Traceback" not in done.stderr


def test_usage_errors_name_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    from doc_processing_toolkit.cli import main

    with pytest.raises(SystemExit) as raised:
        main(["run", "-m", "test", "--max-turns", "0", "hi"])
    assert raised.value.code == 2
    assert "argument --max-turns: must be 1 or more (got 0)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as raised:
        main(["run", "-m", "test"])
    assert raised.value.code == 2
    assert "run needs a prompt" in capsys.readouterr().err
