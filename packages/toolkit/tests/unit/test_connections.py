"""Sessions: opened once, kept across runs, reopened when dead, closed on aclose."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from doc_processing_toolkit import Agent, ConfigError, TestModel, ToolkitError, ToolServerError
from doc_processing_toolkit.messages import ModelResponse, ToolResultPart
from doc_processing_toolkit.models import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call

pytestmark = pytest.mark.anyio


def calling(name: str, arguments: dict[str, Any] | None = None) -> TestModel:
    """A model that calls one tool, then answers with its result's text."""

    def script(request: ModelRequest) -> ModelResponse:
        results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        if not results:
            return tool_call(name, arguments or {})
        return reply(results[0].content)

    return TestModel(script)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def wait_until_dead(pid: int) -> None:
    for _ in range(500):
        if not alive(pid):
            return
        await anyio.sleep(0.02)
    pytest.fail(f"process {pid} is still alive")


async def read_pid(path: anyio.Path) -> int:
    """The process id a child wrote to `path`, once it is there."""
    for _ in range(500):
        text = await path.read_text() if await path.exists() else ""
        if text:
            return int(text)
        await anyio.sleep(0.02)
    pytest.fail(f"no process id in {path}")


async def test_a_child_is_started_once_across_runs_and_stopped_by_aclose(
    stdio_entry: Callable[..., dict[str, Any]],
) -> None:
    agent = Agent(calling("pid"), tools=[stdio_entry()])
    pids = {(await agent.run(f"run {i}")).output for i in range(3)}
    assert len(pids) == 1
    pid = int(pids.pop())
    assert alive(pid)
    await agent.aclose()
    await wait_until_dead(pid)


async def test_async_with_connects_eagerly_and_closes_on_exit(
    stdio_entry: Callable[..., dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="doc_processing_toolkit.tools.connections")
    agent = Agent(calling("pid"), tools=[stdio_entry("eager")])
    async with agent as entered:
        assert entered is agent
        first = int((await agent.run("a")).output)
        assert int((await agent.run("b")).output) == first
    await wait_until_dead(first)
    # The child's stderr is drained all along and logged at DEBUG under its name.
    expected = f"server 'eager' stderr: test server stdio-test-server starting (pid {first})"
    assert expected in [r.getMessage() for r in caplog.records]


async def test_concurrent_runs_share_one_child(
    stdio_entry: Callable[..., dict[str, Any]],
) -> None:
    agent = Agent(calling("pid"), tools=[stdio_entry()])
    outputs: list[str] = []

    async def one(i: int) -> None:
        outputs.append((await agent.run(f"run {i}")).output)

    async with anyio.create_task_group() as tg:
        for i in range(6):
            tg.start_soon(one, i)
    await agent.aclose()
    assert len(outputs) == 6
    assert len(set(outputs)) == 1


async def test_a_child_killed_between_runs_is_restarted_on_the_next_run(
    stdio_entry: Callable[..., dict[str, Any]],
) -> None:
    agent = Agent(calling("pid"), tools=[stdio_entry("victim")])
    async with agent:
        first = await agent.run("a")
        old = int(first.output)
        os.kill(old, signal.SIGKILL)
        await wait_until_dead(old)
        second = await agent.run("b")
        new = int(second.output)
        assert new != old
        assert first.warnings == []
        assert second.warnings == [
            f"server 'victim' (mcp_command: {sys.executable} "
            f"{stdio_entry()['args'][0]}) had lost its connection and was reconnected"
        ]
        third = await agent.run("c")
        assert int(third.output) == new
        assert third.warnings == []


async def test_a_failed_start_reports_the_server_and_its_stderr(
    stdio_entry: Callable[..., dict[str, Any]],
) -> None:
    entry = stdio_entry("crasher", env={"TEST_SERVER_CRASH": "ImportError: no module named x"})
    agent = Agent("test", tools=[entry])
    with pytest.raises(ToolServerError) as raised:
        await agent.run("go")
    message = str(raised.value)
    assert message.startswith("server 'crasher' (mcp_command: ")
    assert "exited before it answered" in message
    assert "test server: about to fail" in message
    assert "ImportError: no module named x" in message


async def test_a_missing_command_is_reported_with_the_server_name() -> None:
    entry = {"type": "mcp_command", "command": "no-such-command-dpt", "name": "ghost"}
    with pytest.raises(ToolServerError, match=r"server 'ghost' .*failed to connect: .*no-such"):
        await Agent("test", tools=[entry]).run("go")


async def test_an_optional_server_that_fails_is_a_warning(
    make_server: Callable[..., MCPServer],
) -> None:
    entry = {
        "type": "mcp_command",
        "command": "no-such-command-dpt",
        "name": "optional",
        "required": False,
    }
    agent = Agent(calling("add", {"a": 1, "b": 2}), tools=[make_server(), entry])
    result = await agent.run("go")
    await agent.aclose()
    assert result.output == "3"
    [warning] = result.warnings
    assert warning.startswith("server 'optional' (mcp_command: no-such-command-dpt) failed")
    assert warning.endswith("(required: false, so the run goes on without it)")


async def test_a_server_that_never_answers_times_out(tmp_path: Path) -> None:
    entry = {
        "type": "mcp_command",
        "command": sys.executable,
        "args": [
            "-c",
            "import sys; sys.stderr.write('stuck\\n'); sys.stderr.flush(); sys.stdin.read()",
        ],
        "name": "mute",
    }
    started = time.perf_counter()
    with pytest.raises(ToolServerError, match=r"'mute'.*did not connect within 0.5 s") as raised:
        await Agent("test", tools=[entry], connect_timeout=0.5).run("go")
    assert time.perf_counter() - started < 8
    assert "stuck" in str(raised.value)


async def test_a_child_gets_only_its_config_env_on_top_of_safe_defaults(
    stdio_entry: Callable[..., dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("DPT_PARENT_SECRET", "do-not-leak")

    def script(request: ModelRequest) -> ModelResponse:
        results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        if not results:
            return ModelResponse(
                parts=(
                    *tool_call("env", {"name": "DPT_PARENT_SECRET"}).parts,
                    *tool_call("env", {"name": "GIVEN"}).parts,
                    *tool_call("env", {"name": "PATH"}).parts,
                    *tool_call("cwd").parts,
                )
            )
        return reply("|".join(r.content for r in results))

    entry = stdio_entry(env={"GIVEN": "from-config"}, cwd=str(tmp_path))
    agent = Agent(TestModel(script), tools=[entry])
    async with agent:
        secret, given, path, cwd = (await agent.run("go")).output.split("|")
    assert secret == "<unset>"
    assert given == "from-config"
    assert path == os.environ["PATH"]
    assert await anyio.Path(cwd).resolve() == await anyio.Path(tmp_path).resolve()


def test_run_sync_keeps_one_child_across_calls_and_close_stops_it(
    stdio_entry: Callable[..., dict[str, Any]],
) -> None:
    agent = Agent(calling("pid"), tools=[stdio_entry()])
    try:
        first = int(agent.run_sync("a").output)
        assert int(agent.run_sync("b").output) == first
    finally:
        agent.close()
    deadline = time.monotonic() + 10
    while alive(first) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(first)


async def test_a_tool_call_on_a_child_that_died_mid_run_is_an_error_result(
    stdio_entry: Callable[..., dict[str, Any]],
) -> None:
    def script(request: ModelRequest) -> ModelResponse:
        results = [p for p in request.messages[-1].parts if isinstance(p, ToolResultPart)]
        if not results:
            return tool_call("pid")
        if results[0].name == "pid":
            os.kill(int(results[0].content), signal.SIGKILL)
            time.sleep(0.3)
            return tool_call("echo", {"text": "anyone there?"})
        return reply(f"{results[0].is_error}:{results[0].content}")

    agent = Agent(TestModel(script), tools=[stdio_entry()])
    async with agent:
        result = await agent.run("go")
        assert result.output.startswith("True:Tool 'echo' failed: ")
        assert (await agent.run("again")).warnings[0].endswith("was reconnected")


async def test_sessions_opened_in_one_loop_are_refused_in_another(
    make_server: Callable[..., MCPServer],
) -> None:
    agent = Agent(calling("echo", {"text": "x"}), tools=[make_server()])
    await agent.run("here")
    with pytest.raises(ToolkitError, match="another event loop"):
        await anyio.to_thread.run_sync(lambda: anyio.run(agent.run, "elsewhere"))
    await agent.aclose()


async def test_an_http_server_restarted_between_runs_keeps_serving_the_agent(
    http_server: Any,
) -> None:
    entry = {"type": "mcp_http", "url": http_server.url, "name": "web"}
    agent = Agent(calling("pid"), tools=[entry])
    async with agent:
        first = int((await agent.run("a")).output)
        await anyio.to_thread.run_sync(http_server.stop)
        await anyio.to_thread.run_sync(http_server.start)
        second = await agent.run("b")
    assert int(second.output) != first


def test_model_options_need_a_model_name() -> None:
    with pytest.raises(ConfigError, match="model_options apply when model is a name"):
        Agent(TestModel(), model_options={"api_key": "x"})


def test_an_agent_outlives_an_event_loop_that_ended_without_aclose(
    stdio_entry: Callable[..., dict[str, Any]],
) -> None:
    agent = Agent(calling("pid"), tools=[stdio_entry()])
    first = int(asyncio.run(agent.run("in a first loop")).output)
    # Ending that loop cancelled the session's owner task, which stopped the child.
    deadline = time.monotonic() + 10
    while alive(first) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(first)
    second = int(asyncio.run(agent.run("in a second loop")).output)
    assert second != first
    # Closing from yet another loop, after the second one ended too, is harmless.
    asyncio.run(agent.aclose())
    deadline = time.monotonic() + 10
    while alive(second) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(second)


async def test_a_run_cancelled_while_a_server_starts_leaves_no_child(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = (
        "import os, sys, pathlib; "
        f"pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid())); sys.stdin.read()"
    )
    entry = {"type": "mcp_command", "command": sys.executable, "args": ["-c", code]}
    agent = Agent("test", tools=[entry], connect_timeout=60)
    with anyio.move_on_after(0.5):
        await agent.run("never connects")
    pid_path = anyio.Path(pid_file)
    for _ in range(250):
        if await pid_path.exists():
            break
        await anyio.sleep(0.02)
    pid = int(await pid_path.read_text())
    with anyio.fail_after(5):
        await agent.aclose()
    await wait_until_dead(pid)


def test_run_sync_from_several_threads_at_once_shares_one_child(
    stdio_entry: Callable[..., dict[str, Any]],
) -> None:
    agent = Agent(calling("pid"), tools=[stdio_entry()])
    start = threading.Barrier(4)
    outputs: list[str] = []

    def one() -> None:
        start.wait()
        outputs.append(agent.run_sync("go").output)

    threads = [threading.Thread(target=one, daemon=True) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads), "run_sync calls are stuck"
    agent.close()
    assert len(outputs) == 4
    assert len(set(outputs)) == 1
    pid = int(outputs[0])
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(pid)


async def test_aclose_while_a_run_is_starting_a_server_stops_it_and_fails_that_run(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pid"
    code = (
        "import os, sys, pathlib; "
        f"pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid())); sys.stdin.read()"
    )
    entry = {"type": "mcp_command", "command": sys.executable, "args": ["-c", code], "name": "slow"}
    agent = Agent("test", tools=[entry], connect_timeout=60)
    failures: list[BaseException] = []

    async def run() -> None:
        try:
            await agent.run("never connects")
        except ToolServerError as exc:
            failures.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        pid = await read_pid(anyio.Path(pid_file))
        with anyio.fail_after(5):
            await agent.aclose()
    await wait_until_dead(pid)
    [failure] = failures
    assert "'slow'" in str(failure)
    assert "closed while it was starting" in str(failure)
