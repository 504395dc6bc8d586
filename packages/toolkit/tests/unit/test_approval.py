"""The approval gate: gated calls are decided before they run, a denied call never reaches
its tool and the model reads why, every decision is recorded, and the gate fails closed.

Real tools throughout: local functions that record their calls, in-process MCP servers,
and std-tools' own server over stdio writing into a temporary workspace.
"""

from __future__ import annotations

import io
import logging
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from mcp.server.mcpserver import MCPServer
from script_user_access import give_to_script_user

from doc_processing_toolkit import (
    Agent,
    AgentEvent,
    ApprovalDecision,
    ApprovalEvent,
    ApprovalGate,
    ApprovalRequest,
    ConfigError,
    FinalResultEvent,
    TerminalApproval,
    TestModel,
    ToolCallEvent,
    ToolResultEvent,
)
from doc_processing_toolkit.messages import ModelResponse, ToolCallPart, ToolResultPart
from doc_processing_toolkit.models import ModelRequest
from doc_processing_toolkit.models.test import reply

pytestmark = pytest.mark.anyio


class Notebook:
    """A real tool (a local function) that records every call it receives."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def tools(self) -> list[Callable[..., str]]:
        def write_note(path: str, text: str) -> str:
            """Write a note."""
            self.calls.append({"tool": "write_note", "path": path, "text": text})
            return f"wrote {path}"

        def read_note(path: str) -> str:
            """Read a note."""
            self.calls.append({"tool": "read_note", "path": path})
            return f"contents of {path}"

        return [write_note, read_note]


def results_of(request: ModelRequest) -> list[ToolResultPart]:
    return [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]


def calls_then_answer(*calls: tuple[str, dict[str, Any]]) -> TestModel:
    """A model that makes `calls` in one reply, then answers with the results it read."""

    def script(request: ModelRequest) -> ModelResponse:
        results = results_of(request)
        if not results:
            parts = tuple(
                ToolCallPart(id=f"call_{i}", name=name, arguments=arguments)
                for i, (name, arguments) in enumerate(calls)
            )
            return ModelResponse(parts=parts)
        return reply(" | ".join(r.content for r in results))

    return TestModel(script)


# -- deny and approve --------------------------------------------------------------------


async def test_a_denied_call_does_not_run_and_the_model_reads_why() -> None:
    notebook = Notebook()
    seen: list[ApprovalRequest] = []

    def policy(request: ApprovalRequest) -> tuple[bool, str]:
        seen.append(request)
        return False, "notes are read-only today"

    model = calls_then_answer(("write_note", {"path": "a.txt", "text": "hi"}))
    agent = Agent(
        model,
        tools=notebook.tools(),
        approval={"tools": ["write_*"], "policy": policy},
    )
    result = await agent.run("write a note")

    assert notebook.calls == []
    denial = "The call to write_note was denied and did not run: notes are read-only today"
    (record,) = result.tool_calls
    assert (record.content, record.is_error, record.server) == (
        denial,
        True,
        "local-functions",
    )
    sent_back = results_of(model.requests[1])
    assert [(r.content, r.is_error) for r in sent_back] == [(denial, True)]
    assert result.output == denial
    (approval,) = result.approvals
    assert approval.call_id == record.call_id
    assert (approval.tool, approval.server, approval.arguments) == (
        "write_note",
        "local-functions",
        {"path": "a.txt", "text": "hi"},
    )
    assert (approval.approved, approval.reason) == (False, "notes are read-only today")
    assert approval.decided_by.endswith(
        ":test_a_denied_call_does_not_run_and_the_model_reads_why.<locals>.policy"
    )
    assert [(r.tool, r.server, r.server_tool) for r in seen] == [
        ("write_note", "local-functions", "write_note")
    ]


async def test_an_approved_call_runs_and_its_decision_is_recorded() -> None:
    notebook = Notebook()

    async def policy(request: ApprovalRequest) -> ApprovalDecision:
        await anyio.lowlevel.checkpoint()
        return ApprovalDecision.approve("looks fine", decided_by="reviewer")

    agent = Agent(
        calls_then_answer(("write_note", {"path": "a.txt", "text": "hi"})),
        tools=notebook.tools(),
        approval=ApprovalGate(["write_note"], policy),
    )
    result = await agent.run("write a note")

    assert notebook.calls == [{"tool": "write_note", "path": "a.txt", "text": "hi"}]
    assert result.output == "wrote a.txt"
    assert [(a.approved, a.reason, a.decided_by) for a in result.approvals] == [
        (True, "looks fine", "reviewer")
    ]


async def test_calls_to_tools_outside_the_patterns_run_without_asking() -> None:
    notebook = Notebook()
    asked: list[str] = []

    def policy(request: ApprovalRequest) -> bool:
        asked.append(request.tool)
        return False

    agent = Agent(
        calls_then_answer(("read_note", {"path": "a.txt"})),
        tools=notebook.tools(),
        approval={"tools": ["write_note"], "policy": policy},
    )
    result = await agent.run("read")

    assert asked == []
    assert result.approvals == []
    assert notebook.calls == [{"tool": "read_note", "path": "a.txt"}]


async def test_without_a_gate_every_call_runs_as_before() -> None:
    notebook = Notebook()
    agent = Agent(
        calls_then_answer(("write_note", {"path": "a", "text": "b"})), tools=notebook.tools()
    )
    result = await agent.run("go")

    assert agent.approval is None
    assert result.approvals == []
    assert notebook.calls == [{"tool": "write_note", "path": "a", "text": "b"}]


async def test_the_named_policies_deny_and_approve() -> None:
    for policy, ran in (("deny", False), ("approve", True)):
        notebook = Notebook()
        agent = Agent(
            calls_then_answer(("write_note", {"path": "a", "text": "b"})),
            tools=notebook.tools(),
            approval={"tools": ["write_note"], "policy": policy},
        )
        result = await agent.run("go")
        assert bool(notebook.calls) is ran
        (approval,) = result.approvals
        assert (approval.approved, approval.decided_by) == (ran, policy)
        expected = (
            "approved by the 'approve' policy"
            if ran
            else "the agent's approval policy denies every call to 'write_note'"
        )
        assert approval.reason == expected


# -- failing closed ----------------------------------------------------------------------


async def test_a_policy_that_raises_denies_with_the_error_as_the_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken_sync(request: ApprovalRequest) -> bool:
        raise ValueError("the rules file is missing")

    async def broken_async(request: ApprovalRequest) -> bool:
        await anyio.lowlevel.checkpoint()
        raise RuntimeError("approval service unreachable")

    for policy, reason in (
        (broken_sync, "the approval policy failed (ValueError: the rules file is missing)"),
        (broken_async, "the approval policy failed (RuntimeError: approval service unreachable)"),
    ):
        notebook = Notebook()
        agent = Agent(
            calls_then_answer(("write_note", {"path": "a", "text": "b"})),
            tools=notebook.tools(),
            approval={"tools": ["write_note"], "policy": policy},
        )
        with caplog.at_level(logging.WARNING, logger="doc_processing_toolkit.approval"):
            result = await agent.run("go")
        assert notebook.calls == []
        (approval,) = result.approvals
        assert (approval.approved, approval.reason) == (False, reason)
        assert result.tool_calls[0].content.endswith(reason)
    assert "the call is denied" in caplog.text


@pytest.mark.parametrize("answer", ["yes", None, 1, (True,), ("yes", "ok"), [True, "ok"]])
async def test_a_policy_answer_that_is_not_a_decision_denies(answer: object) -> None:
    notebook = Notebook()
    agent = Agent(
        calls_then_answer(("write_note", {"path": "a", "text": "b"})),
        tools=notebook.tools(),
        approval={"tools": ["write_note"], "policy": lambda request: answer},
    )
    result = await agent.run("go")

    assert notebook.calls == []
    (approval,) = result.approvals
    assert approval.approved is False
    assert "it must return an ApprovalDecision, a bool or a (bool, reason) pair" in approval.reason


async def test_the_policy_sees_a_copy_so_the_call_runs_with_what_was_approved() -> None:
    notebook = Notebook()

    def sneaky(request: ApprovalRequest) -> bool:
        approved = request.arguments["path"] == "notes/ok.txt"
        request.arguments["path"] = "/etc/passwd"
        return approved

    agent = Agent(
        calls_then_answer(("write_note", {"path": "notes/ok.txt", "text": "b"})),
        tools=notebook.tools(),
        approval={"tools": ["write_note"], "policy": sneaky},
    )
    result = await agent.run("go")

    assert notebook.calls == [{"tool": "write_note", "path": "notes/ok.txt", "text": "b"}]
    assert result.tool_calls[0].arguments == {"path": "notes/ok.txt", "text": "b"}


async def test_a_sync_policy_runs_off_the_event_loop() -> None:
    """A blocking policy (a person answering, a slow lookup) does not stop the loop."""
    notebook = Notebook()
    ticks: list[int] = []
    main_thread: list[bool] = []

    def slow(request: ApprovalRequest) -> bool:
        main_thread.append(threading.current_thread() is threading.main_thread())
        time.sleep(0.3)
        return True

    async def ticker() -> None:
        for i in range(100):
            ticks.append(i)
            await anyio.sleep(0.01)

    agent = Agent(
        calls_then_answer(("write_note", {"path": "a", "text": "b"})),
        tools=notebook.tools(),
        approval={"tools": ["write_note"], "policy": slow},
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        result = await agent.run("go")
        tg.cancel_scope.cancel()

    assert result.approvals[0].approved
    assert main_thread == [False]
    assert len(ticks) >= 10


# -- patterns ----------------------------------------------------------------------------


def test_patterns_are_case_sensitive_globs_on_the_visible_or_the_server_name() -> None:
    gate = ApprovalGate(["write_*", "execute_skill_script", "?dit_file"], "deny")
    assert gate.matches("write_file", "write_file")
    assert gate.matches("fs_write_file", "write_file")  # prefixed: the server's name matches
    assert gate.matches("execute_skill_script", "execute_skill_script")
    assert gate.matches("edit_file", "edit_file")
    assert not gate.matches("read_file", "read_file")
    assert not gate.matches("Write_file", "Write_file")
    assert not gate.matches("fs_read_file", "read_file")
    only_fs = ApprovalGate(["fs_write_file"], "deny")
    assert only_fs.matches("fs_write_file", "write_file")
    assert not only_fs.matches("other_write_file", "write_file")
    assert not only_fs.matches("write_file", "write_file")


async def test_a_prefix_does_not_take_a_tool_out_of_the_gate(
    make_server: Callable[..., MCPServer],
) -> None:
    model = calls_then_answer(("fs_echo", {"text": "a"}), ("other_echo", {"text": "b"}))
    agent = Agent(
        model,
        tools=[
            {"server": make_server("fs-server", tools=("echo",)), "tool_prefix": "fs"},
            {"server": make_server("other-server", tools=("echo",)), "tool_prefix": "other"},
        ],
        approval={"tools": ["echo"], "policy": lambda r: (r.server == "fs-server", "not there")},
    )
    result = await agent.run("go")

    assert [(a.tool, a.server, a.approved) for a in result.approvals] == [
        ("fs_echo", "fs-server", True),
        ("other_echo", "other-server", False),
    ]
    assert [(r.content, r.is_error) for r in result.tool_calls] == [
        ("a", False),
        ("The call to other_echo was denied and did not run: not there", True),
    ]


async def test_a_pattern_that_matches_no_tool_fails_the_run_before_the_model_is_asked() -> None:
    notebook = Notebook()
    model = calls_then_answer(("write_note", {"path": "a", "text": "b"}))
    agent = Agent(
        model,
        tools=notebook.tools(),
        approval={"tools": ["write_note", "writ_file"], "policy": "approve"},
    )
    with pytest.raises(ConfigError) as raised:
        await agent.run("one")
    message = str(raised.value)
    assert "approval.tools: the pattern 'writ_file' matches no tool" in message
    assert "The tools are: read_note, write_note." in message
    assert model.requests == []
    assert notebook.calls == []


async def test_opening_the_sessions_checks_the_patterns_too() -> None:
    agent = Agent(
        TestModel(), tools=Notebook().tools(), approval={"tools": ["delete_*"], "policy": "deny"}
    )
    with pytest.raises(ConfigError, match="the pattern 'delete_\\*' matches no tool"):
        async with agent:
            pass


async def test_a_pattern_for_a_server_that_is_down_is_not_judged_while_it_is(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    down = {
        "type": "mcp_command",
        "command": sys.executable,
        "args": [str(tmp_path / "no-such-server.py")],
        "name": "search",
        "required": False,
    }
    notebook = Notebook()
    agent = Agent(
        TestModel(),
        tools=[*notebook.tools(), down],
        approval={"tools": ["write_note", "search_*"], "policy": "deny"},
    )
    with caplog.at_level(logging.WARNING, logger="doc_processing_toolkit.agent"):
        result = await agent.run("one")
        await agent.run("two")
    await agent.aclose()
    assert result.output == "echo: one"
    warnings = [r.getMessage() for r in caplog.records if "approval" in r.getMessage()]
    assert warnings == [
        "agent 'agent': approval pattern 'search_*' matches no tool of the connected servers; "
        "it is checked again once server 'search', which could not be reached, lists its tools"
    ]


@pytest.mark.parametrize("pattern", [" write_note", "write_note ", "\twrite_*", "   ", ""])
def test_patterns_with_whitespace_around_them_or_empty_are_refused(pattern: str) -> None:
    with pytest.raises(ConfigError) as raised:
        ApprovalGate(["read_note", pattern], "deny")
    message = str(raised.value)
    assert f"approval.tools[1]: {pattern!r} is not a valid tool name pattern" in message
    assert "a valid pattern is a tool name or a glob of one" in message


def test_yaml_patterns_are_checked_the_same_way(tmp_path: Path) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text(
        "model: test\napproval:\n  tools: [' write_file']\n  policy: deny\n", encoding="utf-8"
    )
    with pytest.raises(
        ConfigError, match=r"approval.tools\[0\]: ' write_file' is not a valid tool name pattern"
    ):
        Agent.from_yaml(config)


# -- several calls in one reply ----------------------------------------------------------


async def test_each_call_of_one_reply_is_gated_and_only_the_approved_run() -> None:
    notebook = Notebook()
    asked: list[str] = []

    async def policy(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request.arguments["path"])
        if request.arguments["path"].startswith("public/"):
            return ApprovalDecision.approve()
        return ApprovalDecision.deny("only public/ may be written")

    model = calls_then_answer(
        ("write_note", {"path": "secret/a", "text": "1"}),
        ("read_note", {"path": "x"}),
        ("write_note", {"path": "public/b", "text": "2"}),
        ("write_note", {"path": "secret/c", "text": "3"}),
    )
    agent = Agent(
        model, tools=notebook.tools(), approval={"tools": ["write_note"], "policy": policy}
    )
    events: list[AgentEvent] = []
    async with agent:
        async for event in agent.run_stream("go"):
            events.append(event)

    assert asked == ["secret/a", "public/b", "secret/c"]
    assert sorted(notebook.calls, key=str) == sorted(
        [
            {"tool": "read_note", "path": "x"},
            {"tool": "write_note", "path": "public/b", "text": "2"},
        ],
        key=str,
    )
    kinds = [
        type(e).__name__
        for e in events
        if isinstance(e, ToolCallEvent | ApprovalEvent | ToolResultEvent)
    ]
    assert kinds == ["ToolCallEvent"] * 4 + ["ApprovalEvent"] * 3 + ["ToolResultEvent"] * 4
    decisions = [e.record for e in events if isinstance(e, ApprovalEvent)]
    assert [(d.arguments["path"], d.approved) for d in decisions] == [
        ("secret/a", False),
        ("public/b", True),
        ("secret/c", False),
    ]
    final = events[-1]
    assert isinstance(final, FinalResultEvent)
    assert final.result.approvals == decisions
    assert [r.is_error for r in final.result.tool_calls] == [True, False, False, True]


async def test_unknown_tools_and_broken_arguments_are_not_sent_for_approval() -> None:
    notebook = Notebook()
    asked: list[str] = []

    def policy(request: ApprovalRequest) -> bool:
        asked.append(request.tool)
        return True

    def script(request: ModelRequest) -> ModelResponse:
        if results_of(request):
            return reply("done")
        return ModelResponse(
            parts=(
                ToolCallPart(id="1", name="write_nothing", arguments={}),
                ToolCallPart(
                    id="2",
                    name="write_note",
                    arguments={"_raw": "{"},
                    arguments_error="not JSON",
                ),
            )
        )

    agent = Agent(
        TestModel(script), tools=notebook.tools(), approval={"tools": ["write_*"], "policy": policy}
    )
    result = await agent.run("go")

    assert asked == []
    assert result.approvals == []
    assert [r.is_error for r in result.tool_calls] == [True, True]
    assert "Unknown tool 'write_nothing'" in result.tool_calls[0].content


# -- construction ------------------------------------------------------------------------


def test_patterns_without_a_policy_are_refused_when_the_agent_is_built() -> None:
    with pytest.raises(ConfigError, match="approval: tools are listed but no policy decides"):
        Agent("test", approval={"tools": ["write_file"]})
    with pytest.raises(ConfigError, match="no policy decides"):
        ApprovalGate(["write_file"])


@pytest.mark.parametrize(
    ("approval", "message"),
    [
        ({"tools": [], "policy": "deny"}, "approval.tools lists no pattern"),
        (
            {"tools": "write_file", "policy": "deny"},
            r"got the string 'write_file'; write \['write_file'\]",
        ),
        ({"tools": ["ok", ""], "policy": "deny"}, r"approval.tools\[1\]: '' is not a valid"),
        (
            {"tools": ["x"], "policy": "sometimes"},
            "must be 'approve', 'deny', 'ask' or 'module:function'",
        ),
        ({"tools": ["x"], "policy": 42}, "must be a callable or a name, got int"),
        (
            {"tools": ["x"], "policy": "no_such_module_xyz:check"},
            "cannot import module 'no_such_module_xyz'",
        ),
        (
            {"tools": ["x"], "policy": "json:no_such_function"},
            "module 'json' has no 'no_such_function'",
        ),
        ({"tools": ["x"], "policy": "json:__doc__"}, "'json:__doc__' is not callable"),
        ({"tools": ["x"], "policy": "deny", "when": "always"}, "unknown key"),
        ({"policy": "deny"}, "'tools' is missing"),
        ("deny", "must be an ApprovalGate or a mapping"),
    ],
)
def test_invalid_approval_settings_say_what_is_wrong(approval: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Agent("test", approval=approval)


def test_a_policy_can_be_named_by_module_and_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "house_rules.py").write_text(
        "from doc_processing_toolkit import ApprovalDecision\n"
        "class Rules:\n"
        "    @staticmethod\n"
        "    def check(request):\n"
        "        return ApprovalDecision.deny('house rules: ' + request.tool)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = tmp_path / "agent.yaml"
    config.write_text(
        "model: test\napproval:\n  tools: [write_note]\n  policy: house_rules:Rules.check\n"
    )
    notebook = Notebook()
    agent = Agent.from_yaml(
        config,
        model=calls_then_answer(("write_note", {"path": "a", "text": "b"})),
        tools=notebook.tools(),
    )
    assert agent.approval is not None
    assert agent.approval.policy_name == "house_rules:Rules.check"
    result = agent.run_sync("go")
    agent.close()

    assert notebook.calls == []
    assert [(a.reason, a.decided_by) for a in result.approvals] == [
        ("house rules: write_note", "house_rules:Rules.check")
    ]


def test_yaml_approval_errors_name_the_file_and_key(tmp_path: Path) -> None:
    config = tmp_path / "agent.yaml"
    config.write_text("model: test\napproval:\n  tools: [write_file]\n")
    with pytest.raises(ConfigError) as raised:
        Agent.from_yaml(config)
    assert (
        f"invalid agent configuration in {config}:\n  approval.policy: required key is missing"
        == str(raised.value)
    )
    config.write_text("model: test\napproval:\n  tools: []\n  policy: maybe\n")
    with pytest.raises(ConfigError) as raised:
        Agent.from_yaml(config)
    text = str(raised.value)
    assert "approval.tools: List should have at least 1 item" in text
    assert "approval.policy: must be approve, deny, ask or 'module:function' (got 'maybe')" in text


def test_the_builder_sets_the_gate() -> None:
    gate = ApprovalGate(["execute_skill_script"], "ask")
    agent = Agent.builder().model("test").approval(gate).build()
    assert agent.approval is gate
    assert isinstance(gate.policy, TerminalApproval)
    assert gate.policy_name == "ask"


# -- the terminal policy -----------------------------------------------------------------


async def test_the_terminal_policy_denies_when_nobody_is_at_a_terminal() -> None:
    output = io.StringIO()
    policy = TerminalApproval(input=io.StringIO("y\n"), output=output)
    decision = await policy(ApprovalRequest("write_file", "std-tools", "write_file", {}, "1"))

    assert decision == ApprovalDecision(
        False,
        "no one could approve it: the agent is not running at a terminal",
        "terminal (not interactive)",
    )
    assert output.getvalue() == ""


# -- the real std-tools server -----------------------------------------------------------


def std_tools_entry(workspace: Path, skills: Path) -> dict[str, Any]:
    return {
        "type": "mcp_command",
        "command": sys.executable,
        "args": ["-m", "doc_processing_std_tools"],
        "name": "std-tools",
        "env": {"DPTTOOLS_WORKSPACE_DIR": str(workspace), "DPTTOOLS_SKILLS_DIR": str(skills)},
    }


async def test_std_tools_write_file_is_denied_and_the_file_is_not_written(tmp_path: Path) -> None:
    pytest.importorskip("doc_processing_std_tools", reason="install packages/std-tools")
    workspace, skills = tmp_path / "workspace", tmp_path / "skills"
    workspace.mkdir()
    skills.mkdir()

    def policy(request: ApprovalRequest) -> ApprovalDecision:
        if request.arguments.get("path") == "allowed.txt":
            return ApprovalDecision.approve("allowed.txt may be written")
        return ApprovalDecision.deny(f"{request.arguments.get('path')} is not on the list")

    model = calls_then_answer(
        ("write_file", {"path": "evil.txt", "content": "pwned"}),
        ("write_file", {"path": "allowed.txt", "content": "fine"}),
        ("list_directory", {"path": "."}),
    )
    agent = Agent(
        model,
        tools=[std_tools_entry(workspace, skills)],
        approval={"tools": ["write_file", "edit_file", "execute_skill_script"], "policy": policy},
    )
    async with agent:
        result = await agent.run("write")

    assert not (workspace / "evil.txt").exists()
    assert (workspace / "allowed.txt").read_text() == "fine"
    denied, allowed, listing = result.tool_calls
    assert denied.content == (
        "The call to write_file was denied and did not run: evil.txt is not on the list"
    )
    assert denied.is_error and not allowed.is_error and not listing.is_error
    assert [(a.tool, a.server, a.approved) for a in result.approvals] == [
        ("write_file", "std-tools", False),
        ("write_file", "std-tools", True),
    ]


class PseudoTerminal:
    """A pseudo-terminal whose terminal end (a real TTY) is `input`; a person at it
    answers each question once it is on `output`."""

    def __init__(self, output: io.StringIO) -> None:
        import os
        import pty

        self._os = os
        self._output = output
        self._master, slave = pty.openpty()
        self.input = os.fdopen(slave, "r", encoding="utf-8")
        self._person: threading.Thread | None = None

    def type(self, text: str) -> None:
        self._os.write(self._master, text.encode())

    def answer(self, *answers: str) -> None:
        """Type each answer once the question has been asked that many times."""

        def person() -> None:
            deadline = time.monotonic() + 30
            for asked, answer in enumerate(answers, start=1):
                while self._output.getvalue().count(QUESTION) < asked:
                    if time.monotonic() > deadline:
                        return
                    time.sleep(0.01)
                self.type(answer + "\n")

        self._person = threading.Thread(target=person, daemon=True)
        self._person.start()

    def close(self) -> None:
        if self._person is not None:
            self._person.join(timeout=30)
        self.input.close()
        self._os.close(self._master)


QUESTION = "Allow this call? [y/n] "


async def test_the_terminal_question_cannot_be_disguised_by_the_arguments() -> None:
    output = io.StringIO()
    terminal = PseudoTerminal(output)
    policy = TerminalApproval(input=terminal.input, output=output)
    arguments = {
        "path": "invoice\u202etxt.exe",
        "content": "ok\x1b[2K\rAllow this call? [y/n] y\u2028" + "x" * 2100,
    }
    terminal.answer("n")
    try:
        decision = await policy(
            ApprovalRequest("write_file", "std-tools", "write_file", arguments, "1")
        )
    finally:
        terminal.close()

    assert decision == ApprovalDecision(False, "the person at the terminal refused it", "terminal")
    shown = output.getvalue()
    assert "\u202e" not in shown and "\x1b" not in shown and "\r" not in shown
    assert "\u2028" not in shown
    assert '"path": "invoice\\u202etxt.exe"' in shown
    assert '"content": "ok\\u001b[2K\\rAllow this call? [y/n] y\\u2028' in shown
    assert "(132 characters not shown)" in shown
    assert shown.endswith(QUESTION)


async def test_keys_typed_before_the_question_do_not_answer_it() -> None:
    output = io.StringIO()
    terminal = PseudoTerminal(output)
    policy = TerminalApproval(input=terminal.input, output=output)
    terminal.type("y\n")  # typed while the model was still working
    terminal.answer("n")
    try:
        decision = await policy(ApprovalRequest("execute_skill_script", "s", "x", {}, "1"))
    finally:
        terminal.close()

    assert decision == ApprovalDecision(False, "the person at the terminal refused it", "terminal")


async def test_the_terminal_asks_three_times_then_counts_it_as_no() -> None:
    output = io.StringIO()
    terminal = PseudoTerminal(output)
    policy = TerminalApproval(input=terminal.input, output=output)
    terminal.answer("maybe", "later", "ok")
    try:
        decision = await policy(ApprovalRequest("edit_file", "fs", "edit_file", {}, "1"))
    finally:
        terminal.close()

    assert decision == ApprovalDecision(False, "no y/n answer after 3 questions", "terminal")
    assert output.getvalue().count("Please answer y or n.\n") == 3


async def test_a_denied_skill_script_never_starts(tmp_path: Path) -> None:
    pytest.importorskip("doc_processing_std_tools", reason="install packages/std-tools")
    workspace, skills = tmp_path / "workspace", tmp_path / "skills"
    workspace.mkdir()
    give_to_script_user(workspace)  # as root, scripts run as another user
    scripts = skills / "marker" / "scripts"
    scripts.mkdir(parents=True)
    (skills / "marker" / "SKILL.md").write_text(
        "---\nname: marker\ndescription: Leaves a mark where it is told to.\n---\n\nRun it.\n"
    )
    (scripts / "mark.py").write_text(
        "import pathlib, sys\npathlib.Path(sys.argv[1]).write_text('ran')\nprint('marked')\n"
    )
    entry = std_tools_entry(workspace, skills)
    # The gate is under test, not the sandbox: bubblewrap where it works (the mark is then
    # applied after the call), without it elsewhere.
    entry["env"]["DPTTOOLS_SCRIPT_SANDBOX"] = "auto"

    def policy(request: ApprovalRequest) -> tuple[bool, str]:
        return request.arguments["args"].endswith("approved.mark"), "this script was not reviewed"

    model = calls_then_answer(
        (
            "execute_skill_script",
            {
                "skill_name": "marker",
                "script_path": "scripts/mark.py",
                "args": str(workspace / "denied.mark"),
            },
        ),
        (
            "execute_skill_script",
            {
                "skill_name": "marker",
                "script_path": "scripts/mark.py",
                "args": str(workspace / "approved.mark"),
            },
        ),
    )
    agent = Agent(
        model, tools=[entry], approval={"tools": ["execute_skill_script"], "policy": policy}
    )
    async with agent:
        result = await agent.run("mark")

    assert not (workspace / "denied.mark").exists()
    assert (workspace / "approved.mark").read_text() == "ran"
    denied, approved = result.tool_calls
    assert denied.content == (
        "The call to execute_skill_script was denied and did not run: this script was not reviewed"
    )
    assert '"exit_code": 0' in approved.content
    assert [a.approved for a in result.approvals] == [False, True]
