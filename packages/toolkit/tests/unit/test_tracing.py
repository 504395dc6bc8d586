"""The toolkit's spans of a run, after the OpenTelemetry GenAI conventions, recorded with
the OpenTelemetry SDK's in-memory exporter (the `spans` fixture)."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from collections.abc import Callable
from contextlib import aclosing
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from doc_processing_toolkit import Agent
from doc_processing_toolkit._tracing import CAPTURE_CONTENT_ENV, BatchTrace
from doc_processing_toolkit.approval import ApprovalRequest
from doc_processing_toolkit.batch.items import BatchItem, Job
from doc_processing_toolkit.batch.ray_engine import BatchWorker
from doc_processing_toolkit.batch.worker import RetryPolicy
from doc_processing_toolkit.models.test import TestModel

pytestmark = pytest.mark.anyio

SpanRecords = Any  # the `spans` fixture's records (tests/conftest.py)

ECHO_THEN_ANSWER = [{"call": "echo", "arguments": {"text": "secret words"}}, {"reply": "Done."}]


async def test_a_run_is_one_trace_of_invoke_agent_chat_and_execute_tool_spans(
    spans: SpanRecords, make_server: Callable[..., MCPServer]
) -> None:
    agent = Agent(model=TestModel(ECHO_THEN_ANSWER), tools=[make_server()], name="helper")
    await agent.run("Echo something.")

    (run,) = spans.named("invoke_agent helper")
    assert run["parent_id"] is None
    assert run["kind"] == "INTERNAL"
    assert run["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert run["attributes"]["gen_ai.agent.name"] == "helper"
    assert run["attributes"]["gen_ai.provider.name"] == "test"
    assert run["attributes"]["gen_ai.request.model"] == "model"
    assert run["attributes"]["doc_processing.skills.status"] == "no_server"

    chats = spans.named("chat model")
    assert len(chats) == 2
    for chat in chats:
        assert chat["kind"] == "CLIENT"
        assert chat["parent_id"] == run["span_id"]
        attributes = chat["attributes"]
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "test"
        assert attributes["gen_ai.request.model"] == "model"
        assert attributes["gen_ai.response.model"] == "model"
        assert attributes["gen_ai.usage.input_tokens"] > 0
        assert attributes["gen_ai.usage.output_tokens"] > 0
    assert [c["attributes"]["gen_ai.response.finish_reasons"] for c in chats] == [
        ["tool_use"],
        ["end_turn"],
    ]

    (tool,) = spans.named("execute_tool echo")
    assert tool["parent_id"] == run["span_id"]
    assert tool["attributes"]["gen_ai.operation.name"] == "execute_tool"
    assert tool["attributes"]["gen_ai.tool.name"] == "echo"
    assert tool["attributes"]["gen_ai.tool.call.id"].startswith("call_")
    assert tool["attributes"]["doc_processing.tool.server"] == "demo"
    assert tool["status"] != "ERROR"
    (served,) = spans.named("tools/call echo")
    assert served["kind"] == "SERVER"
    assert served["parent_id"] == tool["span_id"]
    assert {r["trace_id"] for r in spans.all()} == {run["trace_id"]}


async def test_content_is_recorded_only_when_capture_is_turned_on(
    spans: SpanRecords,
    make_server: Callable[..., MCPServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent = Agent(
        model=TestModel(ECHO_THEN_ANSWER), tools=[make_server()], instructions="Be brief."
    )
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
    await agent.run("Echo the secret words.")
    captured = json.dumps([r["attributes"] for r in spans.all()])
    assert "secret words" not in captured
    assert "Be brief." not in captured

    spans.exporter.clear()
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    await agent.run("Echo the secret words.")
    first, second = spans.named("chat model")
    system = json.loads(first["attributes"]["gen_ai.system_instructions"])
    assert system[0]["content"].startswith("Be brief.")
    (user,) = json.loads(first["attributes"]["gen_ai.input.messages"])
    assert user == {
        "role": "user",
        "parts": [{"type": "text", "content": "Echo the secret words."}],
    }
    (output,) = json.loads(first["attributes"]["gen_ai.output.messages"])
    assert output["parts"][0]["type"] == "tool_call"
    assert output["parts"][0]["arguments"] == {"text": "secret words"}
    assert output["finish_reason"] == "tool_use"
    answer = json.loads(second["attributes"]["gen_ai.input.messages"])[-1]
    assert answer["parts"][0]["type"] == "tool_call_response"
    (tool,) = spans.named("execute_tool echo")
    assert json.loads(tool["attributes"]["gen_ai.tool.call.arguments"]) == {"text": "secret words"}
    assert tool["attributes"]["gen_ai.tool.call.result"] == "secret words"


async def test_failed_denied_and_unknown_calls_carry_their_error_type(
    spans: SpanRecords, make_server: Callable[..., MCPServer]
) -> None:
    def policy(request: ApprovalRequest) -> tuple[bool, str]:
        return (request.tool != "add", "no sums today")

    steps = [
        {
            "calls": [
                {"name": "fail", "arguments": {"reason": "why not"}},
                {"name": "add", "arguments": {"a": 1, "b": 2}},
                {"name": "nope"},
            ]
        },
        {"reply": "Done."},
    ]
    agent = Agent(
        model=TestModel(steps),
        tools=[make_server(tools=("fail", "add"))],
        approval={"tools": ["fail", "add"], "policy": policy},
        name="gated",
    )
    await agent.run("Try everything.")

    def error_of(name: str) -> Any:
        (span,) = spans.named(f"execute_tool {name}")
        assert span["status"] == "ERROR"
        return span["attributes"]["error.type"]

    assert error_of("fail") == "tool_error"
    assert error_of("add") == "denied"
    assert error_of("nope") == "unknown_tool"
    (run,) = spans.named("invoke_agent gated")
    decisions = [e for e in run["events"] if e["name"] == "doc_processing.approval"]
    assert [
        (e["attributes"]["gen_ai.tool.name"], e["attributes"]["doc_processing.approval.approved"])
        for e in decisions
    ] == [("fail", True), ("add", False)]
    assert decisions[1]["attributes"]["doc_processing.approval.reason"] == "no sums today"


async def test_without_capture_a_failing_policy_s_exception_text_stays_out_of_the_span(
    spans: SpanRecords,
    make_server: Callable[..., MCPServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def policy(request: ApprovalRequest) -> bool:
        raise PermissionError(f"cannot check {request.arguments['text']!r} under /srv/private")

    steps = [{"call": "echo", "arguments": {"text": "/home/ann/secret-plan.txt"}}, {"reply": "Ok."}]
    agent = Agent(
        model=TestModel(steps),
        tools=[make_server()],
        approval={"tools": ["echo"], "policy": policy},
        name="gated",
    )
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
    result = await agent.run("Echo the path.")
    # The model and the run's record still say why the call was denied.
    assert "secret-plan.txt" in result.approvals[0].reason
    assert result.approvals[0].policy_error == "PermissionError"
    (run,) = spans.named("invoke_agent gated")
    (event,) = [e for e in run["events"] if e["name"] == "doc_processing.approval"]
    assert event["attributes"]["doc_processing.approval.approved"] is False
    assert event["attributes"]["doc_processing.approval.reason"] == (
        "the approval policy failed (PermissionError)"
    )
    recorded = json.dumps([[r["attributes"], r["events"]] for r in spans.all()])
    assert "secret-plan" not in recorded and "/srv/private" not in recorded

    spans.exporter.clear()
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    await agent.run("Echo the path.")
    (run,) = spans.named("invoke_agent gated")
    (event,) = [e for e in run["events"] if e["name"] == "doc_processing.approval"]
    assert "secret-plan.txt" in event["attributes"]["doc_processing.approval.reason"]


async def test_a_streamed_run_is_traced_like_any_run(
    spans: SpanRecords, make_server: Callable[..., MCPServer]
) -> None:
    agent = Agent(model=TestModel(ECHO_THEN_ANSWER), tools=[make_server()], name="streamer")
    async for _ in agent.run_stream("Echo something."):
        pass
    (run,) = spans.named("invoke_agent streamer")
    chats = spans.named("chat model")
    assert len(chats) == 2
    assert all(c["parent_id"] == run["span_id"] for c in chats)
    assert all("gen_ai.usage.output_tokens" in c["attributes"] for c in chats)


async def test_a_run_that_fails_ends_its_span_with_the_error(spans: SpanRecords) -> None:
    def broken(request: Any) -> Any:
        raise RuntimeError("the model fell over")

    agent = Agent(model=TestModel(broken), name="fragile")
    with pytest.raises(RuntimeError):
        await agent.run("Hello.")
    (run,) = spans.named("invoke_agent fragile")
    (chat,) = spans.named("chat model")
    assert run["status"] == chat["status"] == "ERROR"
    assert run["attributes"]["error.type"] == chat["attributes"]["error.type"] == "RuntimeError"


async def test_a_local_batch_is_one_trace_with_a_span_per_item(spans: SpanRecords) -> None:
    agent = Agent(model=TestModel(), name="batcher")
    results = [r async for r in agent.run_batch([{"n": 1}, {"n": 2}, {"n": 3}], "Item {n}")]
    assert [r.status for r in results] == ["ok", "ok", "ok"]

    (batch,) = spans.named("batch")
    assert batch["attributes"]["doc_processing.batch.engine"] == "LocalEngine"
    assert batch["attributes"]["doc_processing.batch.items"] == 3
    items = spans.named("batch_item")
    assert len(items) == 3
    assert {i["parent_id"] for i in items} == {batch["span_id"]}
    assert {i["attributes"]["doc_processing.batch.item.status"] for i in items} == {"ok"}
    runs = spans.named("invoke_agent batcher")
    assert sorted(r["parent_id"] for r in runs) == sorted(i["span_id"] for i in items)
    assert {r["trace_id"] for r in spans.all()} == {batch["trace_id"]}


async def test_a_ray_actor_runs_its_item_under_the_batch_span_it_is_sent(
    spans: SpanRecords,
) -> None:
    # What a Ray actor receives is the pickled job: the batch's context travels as text.
    batch = BatchTrace("RayEngine", None)
    job = Job(BatchItem.of({"n": 1}), "Item 1", batch.carrier)
    received = pickle.loads(pickle.dumps(job))
    worker = BatchWorker(lambda: Agent(model=TestModel(), name="actor"), RetryPolicy())
    try:
        result = await worker.run(received)
    finally:
        await worker.stop()
    batch.end(1)
    assert result["status"] == "ok"
    (root,) = spans.named("batch")
    (item,) = spans.named("batch_item")
    (run,) = spans.named("invoke_agent actor")
    assert item["parent_id"] == root["span_id"]
    assert run["parent_id"] == item["span_id"]
    assert {r["trace_id"] for r in spans.all()} == {root["trace_id"]}


def test_without_a_tracer_provider_a_run_records_nothing_and_starts_no_span() -> None:
    code = (
        "import asyncio\n"
        "from doc_processing_toolkit import Agent\n"
        "from doc_processing_toolkit._tracing import RunTrace, BatchTrace\n"
        "from doc_processing_toolkit.models.test import TestModel\n"
        "run = RunTrace.start('a', 'test:model')\n"
        "assert run.context is None and not run.span.is_recording()\n"
        "assert BatchTrace('LocalEngine', None).carrier == ()\n"
        "print(asyncio.run(Agent(model=TestModel()).run('hi')).output)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "echo: hi"


def test_run_sync_is_a_child_of_the_callers_span(spans: SpanRecords) -> None:
    from opentelemetry import trace

    agent = Agent(model=TestModel(), name="synced")
    try:
        with trace.get_tracer("app").start_as_current_span("request"):
            agent.run_sync("Hello.")
    finally:
        agent.close()
    (request,) = spans.named("request")
    (run,) = spans.named("invoke_agent synced")
    assert run["parent_id"] == request["span_id"]


async def test_a_stream_left_early_ends_its_spans_without_an_error(spans: SpanRecords) -> None:
    agent = Agent(model=TestModel(chunk_size=1), name="quitter")
    async with aclosing(agent.run_stream("A long enough prompt.")) as events:
        async for event in events:
            if type(event).__name__ == "TextDeltaEvent":
                break
    (run,) = spans.named("invoke_agent quitter")
    (chat,) = spans.named("chat model")
    assert run["status"] != "ERROR" and chat["status"] != "ERROR"
    assert chat["parent_id"] == run["span_id"]


async def test_a_fastmcp_server_span_joins_the_run_through_meta(spans: SpanRecords) -> None:
    import fastmcp

    server = fastmcp.FastMCP("fast")

    @server.tool
    def echo(text: str) -> str:
        return text

    agent = Agent(model=TestModel(ECHO_THEN_ANSWER), tools=[server], name="fast-agent")
    async with agent:
        await agent.run("Echo something.")
    (served,) = spans.named("tools/call echo")
    assert spans.ancestors(served)[:3] == [
        "MCP send tools/call echo",
        "execute_tool echo",
        "invoke_agent fast-agent",
    ]


def test_a_skill_is_named_by_its_tools_argument_or_its_extension_uri() -> None:
    from doc_processing_toolkit._tracing import _skill_named
    from doc_processing_toolkit.skills.entries import (
        SkillEntry,
        SkillsOutcome,
    )

    outcome = SkillsOutcome(
        status="injected",
        skills=(SkillEntry("pdf", "PDFs.", uri="skill://acme/pdf/SKILL.md"),),
    )
    assert _skill_named({"skill_name": "greet"}, outcome) == "greet"
    assert _skill_named({"uri": "skill://acme/pdf/SKILL.md"}, outcome) == "pdf"
    assert _skill_named({"uri": "skill://acme/pdf/references/forms.md"}, outcome) == "pdf"
    assert _skill_named({"uri": "skill://other/references/a.md"}, outcome) == "other"
    assert _skill_named({"uri": "https://example.com"}, outcome) is None
