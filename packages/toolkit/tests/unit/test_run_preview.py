"""Agent.preview (a run set up without a model, its tools callable as the model would
call them) and what a ToolCallEvent tells a consumer that stops a run there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from doc_processing_toolkit import Agent, TestModel, ToolCallEvent
from doc_processing_toolkit.approval import ApprovalGate
from doc_processing_toolkit.models.test import reply, tool_call

pytestmark = pytest.mark.anyio


async def test_a_preview_needs_no_model_and_calls_tools_by_their_visible_names(
    make_server: Callable[..., MCPServer],
) -> None:
    server = {"server": make_server("demo"), "tool_prefix": "d"}
    async with Agent(tools=[server], instructions="Be brief.") as agent:
        preview = await agent.preview("anything")
        assert preview.tools == ("d_echo", "d_add")
        assert preview.system_prompt == "Be brief."
        assert preview.skills.status == "no_server" and preview.shown_skills() == ()
        assert preview.visible_name("demo", "add") == "d_add"
        assert preview.visible_name("demo", "nothing") is None
        added = await preview.call_tool("d_add", {"a": 2, "b": 3})
        assert (added.is_error, added.content, added.server) == (False, "5", "demo")
        unknown = await preview.call_tool("add", {"a": 1, "b": 1})
        assert unknown.is_error and "Unknown tool 'add'" in unknown.content


async def test_a_preview_s_calls_go_through_the_approval_gate(
    make_server: Callable[..., MCPServer],
) -> None:
    gate = ApprovalGate(["echo"], "deny")
    async with Agent(tools=[make_server("demo")], approval=gate) as agent:
        preview = await agent.preview()
        denied = await preview.call_tool("echo", {"text": "hi"})
        assert denied.is_error and "was denied and did not run" in denied.content
        assert not (await preview.call_tool("add", {"a": 1, "b": 2})).is_error


async def test_a_tool_call_event_carries_the_server_s_tool_name_and_the_usage_so_far(
    make_server: Callable[..., MCPServer], spans: Any
) -> None:
    model = TestModel(
        lambda request: (
            tool_call("d_echo", {"text": "x"}) if len(request.messages) == 1 else reply("done")
        )
    )
    server = {"server": make_server("demo"), "tool_prefix": "d"}
    calls = []
    async with Agent(model=model, tools=[server], name="stopper") as agent:
        async for event in agent.run_stream("go"):
            if isinstance(event, ToolCallEvent):
                calls.append(event)
                break  # stop the run at the call: it never runs
    (event,) = calls
    assert (event.call.name, event.server, event.server_tool) == ("d_echo", "demo", "echo")
    assert event.usage.requests == 1 and event.usage.input_tokens > 0
    assert len(model.requests) == 1
    # Stopping a run is not a failure of the run.
    (run,) = spans.named("invoke_agent stopper")
    assert run["status"] != "ERROR"
    assert spans.named("execute_tool d_echo") == []
