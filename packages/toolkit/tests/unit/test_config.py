"""YAML and dict configuration: every key, ${VAR}, and errors naming the key and the file."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from doc_processing_toolkit import Agent, ConfigError, TestModel
from doc_processing_toolkit.config import AgentConfig
from doc_processing_toolkit.tools.transports import McpCommandEntry, McpHttpEntry, McpScriptEntry

pytestmark = pytest.mark.anyio

EVERY_KEY = """\
name: reviewer
model: test:scripted
model_options: {}
instructions: |
  You review invoices for ${DPT_TEST_COMPANY}.
auto_inject_skills: false
provider_kwargs:
  temperature: 0.1
  betas: [skills-2025-10-02]
max_turns: 7
tool_timeout: 12.5
skills_timeout: 2
connect_timeout: 9
tools:
  - type: mcp_command
    name: std-tools
    command: ${DPT_TEST_PYTHON}
    args: [-m, doc_processing_std_tools]
    env:
      DPTTOOLS_SKILLS_DIR: ${DPT_TEST_SKILLS:-/srv/skills}
      LITERAL: $${NOT_A_VARIABLE}
    cwd: work
    required: false
    tool_prefix: std
  - type: mcp_script
    name: helper
    script: servers/helper.py
    args: [--fast]
    env: {MODE: test}
    cwd: /tmp
    required: true
  - type: mcp_http
    name: remote
    url: https://mcp.example.test/mcp
    headers:
      Authorization: Bearer ${DPT_TEST_TOKEN}
    tool_prefix: remote
"""


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPT_TEST_COMPANY", "ACME")
    monkeypatch.setenv("DPT_TEST_PYTHON", sys.executable)
    monkeypatch.setenv("DPT_TEST_TOKEN", "s3cret")
    monkeypatch.delenv("DPT_TEST_SKILLS", raising=False)


def test_every_key_of_a_yaml_file_reaches_the_agent(tmp_path: Path, env: None) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(EVERY_KEY)
    (tmp_path / "servers").mkdir()
    (tmp_path / "servers" / "helper.py").write_text("")
    agent = Agent.from_yaml(path)
    assert agent.name == "reviewer"
    assert agent.model.name == "test:scripted"
    values = agent.settings.values
    assert values.instructions == "You review invoices for ACME.\n"
    assert values.auto_inject_skills is False
    assert values.provider_kwargs == {"temperature": 0.1, "betas": ["skills-2025-10-02"]}
    assert (values.max_turns, values.tool_timeout) == (7, 12.5)
    assert (values.skills_timeout, values.connect_timeout) == (2, 9)
    command, script, http = (server.target for server in agent.servers)
    assert [(s.name, s.route, s.required, s.tool_prefix) for s in agent.servers] == [
        ("std-tools", "mcp_command", False, "std"),
        ("helper", "mcp_script", True, None),
        ("remote", "mcp_http", True, "remote"),
    ]
    assert isinstance(command, McpCommandEntry)
    assert command.command == sys.executable
    assert command.args == ["-m", "doc_processing_std_tools"]
    assert command.env == {"DPTTOOLS_SKILLS_DIR": "/srv/skills", "LITERAL": "${NOT_A_VARIABLE}"}
    assert command.cwd == str(tmp_path / "work")
    assert isinstance(script, McpScriptEntry)
    assert script.script == str(tmp_path / "servers" / "helper.py")
    assert (script.args, script.env, script.cwd) == (["--fast"], {"MODE": "test"}, "/tmp")
    assert isinstance(http, McpHttpEntry)
    assert http.url == "https://mcp.example.test/mcp"
    assert http.headers == {"Authorization": "Bearer s3cret"}


def test_every_constructor_argument_is_a_config_key() -> None:
    parameters = set(inspect.signature(Agent.__init__).parameters) - {"self"}
    assert parameters == set(AgentConfig.model_fields)


def test_from_config_takes_the_same_keys_and_overrides(
    stdio_entry: Callable[..., dict[str, Any]],
) -> None:
    def extra() -> str:
        """An extra tool."""
        return "x"

    model = TestModel()
    agent = Agent.from_config(
        {"model": "test", "max_turns": 3, "tools": [stdio_entry("from-dict")]},
        model=model,
        tools=[extra],
    )
    assert agent.model is model
    assert agent.settings.values.max_turns == 3
    assert [s.name for s in agent.servers] == ["local-functions", "from-dict"]


def test_dict_entries_in_the_constructor_use_the_same_validation() -> None:
    with pytest.raises(ConfigError, match=r"tools\[0\]\.headers: Input should be a valid dict"):
        Agent("test", tools=[{"type": "mcp_http", "url": "http://x/mcp", "headers": "nope"}])


def test_an_unknown_key_names_the_key_and_the_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("model: test\nmax_turn: 3\n")
    with pytest.raises(ConfigError) as raised:
        Agent.from_yaml(path)
    assert str(path) in str(raised.value)
    assert "max_turn: unknown key" in str(raised.value)


def test_an_unknown_key_in_a_tools_entry_names_its_position(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "tools:\n  - type: mcp_command\n    command: x\n  - type: mcp_script\n    scrpt: y\n"
    )
    with pytest.raises(ConfigError) as raised:
        Agent.from_yaml(path)
    message = str(raised.value)
    assert str(path) in message
    assert "tools[1].scrpt: unknown key" in message


def test_a_wrong_type_names_the_key_and_the_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("model: test\nmax_turns: many\nauto_inject_skills: [1]\n")
    with pytest.raises(ConfigError) as raised:
        Agent.from_yaml(path)
    message = str(raised.value)
    assert str(path) in message
    assert "max_turns: Input should be a valid integer" in message
    assert "auto_inject_skills: Input should be a valid boolean" in message


def test_an_unknown_tool_type_is_named(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("tools:\n  - type: mcp_ftp\n    url: x\n")
    with pytest.raises(ConfigError) as raised:
        Agent.from_yaml(path)
    expected = "tools[0].type: must be one of mcp_command, mcp_script, mcp_http (got 'mcp_ftp')"
    assert expected in str(raised.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match=r"nope\.yaml' does not exist"):
        Agent.from_yaml(missing)


def test_a_variable_gives_a_number_or_a_boolean_where_one_is_expected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DPT_TEST_TURNS", "5")
    monkeypatch.setenv("DPT_TEST_SKILLS_ON", "false")
    agent = Agent.from_config(
        {"max_turns": "${DPT_TEST_TURNS}", "auto_inject_skills": "${DPT_TEST_SKILLS_ON}"}
    )
    assert (agent.settings.values.max_turns, agent.settings.values.auto_inject_skills) == (
        5,
        False,
    )


def test_a_missing_script_or_cwd_names_the_key_and_the_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "tools:\n"
        "  - type: mcp_script\n    script: servers/gone.py\n"
        "  - type: mcp_command\n    command: x\n    cwd: nowhere\n"
        "  - type: mcp_script\n    script: later.py\n    required: false\n"
    )
    with pytest.raises(ConfigError) as raised:
        Agent.from_yaml(path)
    message = str(raised.value)
    assert message.startswith(f"invalid agent configuration in {path}:")
    gone, nowhere = tmp_path / "servers" / "gone.py", tmp_path / "nowhere"
    assert f"tools[0].script: file {str(gone)!r} does not exist" in message
    assert f"tools[1].cwd: directory {str(nowhere)!r} does not exist" in message
    assert "tools[2]" not in message  # optional: its run reports the failed start instead


def test_a_file_that_is_not_yaml_or_not_a_mapping_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("model: [unclosed\n")
    with pytest.raises(ConfigError, match=r"broken\.yaml, line 2, column 1: not valid YAML"):
        Agent.from_yaml(broken)
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match=r"list\.yaml: the configuration must be a mapping"):
        Agent.from_yaml(listed)


def test_a_missing_variable_names_it_the_key_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DPT_TEST_UNSET", raising=False)
    path = tmp_path / "agent.yaml"
    path.write_text(
        "tools:\n  - type: mcp_http\n    url: http://x/mcp\n    headers:\n"
        "      Authorization: Bearer ${DPT_TEST_UNSET}\n"
    )
    with pytest.raises(ConfigError) as raised:
        Agent.from_yaml(path)
    message = str(raised.value)
    assert str(path) in message
    assert "DPT_TEST_UNSET (used by tools[0].headers.Authorization)" in message


def test_an_empty_file_is_an_agent_with_defaults(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("")
    agent = Agent.from_yaml(path, model="test")
    values = agent.settings.values
    assert (values.max_turns, values.auto_inject_skills, agent.servers) == (20, True, ())


async def test_a_yaml_agent_runs_its_stdio_server(tmp_path: Path) -> None:
    server = Path(__file__).parents[1] / "servers" / "stdio_server.py"
    path = tmp_path / "agent.yaml"
    path.write_text(
        f"model: test\ntools:\n  - type: mcp_script\n    script: {server}\n    name: yaml-server\n"
    )
    agent = Agent.from_yaml(path)
    async with agent:
        warnings = await agent.connect()
        result = await agent.run("hello")
    assert warnings == []
    assert result.output == "echo: hello"
    assert agent.servers[0].name == "yaml-server"


def test_the_example_configuration_is_valid() -> None:
    example = Path(__file__).parents[4] / "examples" / "agent.yaml"
    agent = Agent.from_yaml(example)
    assert [(s.name, s.route, s.tool_prefix) for s in agent.servers] == [
        ("std-tools", "mcp_script", None),
        ("words", "mcp_script", "words"),
    ]
    assert agent.servers[1].target.script == str(example.parent / "word_server.py")
    assert agent.servers[0].target.cwd == str(example.parent / ".")
