"""The local engine on real servers: the std-tools server over stdio, the offline test
model scripted to read each document with a real tool call."""

from __future__ import annotations

import io
import json
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.batch import BatchControl, BatchItem, LocalEngine
from doc_processing_toolkit.errors import BatchError, ConfigError, MissingDependencyError
from doc_processing_toolkit.messages import ModelResponse, ToolResultPart
from doc_processing_toolkit.models import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call

pytest.importorskip(
    "doc_processing_std_tools",
    reason="the std-tools package is needed: pip install packages/std-tools",
)

BROKEN = "docs/doc-137.txt"


def std_tools(workspace: Path) -> dict[str, Any]:
    """The real std-tools server, over stdio, confined to `workspace`."""
    skills = workspace / "skills"
    skills.mkdir(exist_ok=True)
    return {
        "type": "mcp_script",
        "module": "doc_processing_std_tools",
        "args": ["--workspace", str(workspace), "--skills-dir", str(skills)],
        "name": "std-tools",
    }


def reader(request: ModelRequest) -> ModelResponse:
    """Reads the document named in the prompt, then answers with its total. For BROKEN
    it asks for a file that does not exist, and keeps asking (so the run hits max_turns)."""
    last = request.messages[-1]
    results = [part for part in last.parts if isinstance(part, ToolResultPart)]
    if not results:
        match = re.search(r"Read (\S+) and", last.text)
        assert match is not None
        path = match.group(1)
        return tool_call("read_document", {"path": "docs/missing.txt" if path == BROKEN else path})
    if results[0].is_error:
        return tool_call("read_document", {"path": "docs/missing.txt"})
    total = re.search(r"Total: (\d+) EUR", results[0].content)
    assert total is not None, results[0].content
    return reply(f"total {total.group(1)}")


@pytest.mark.anyio
async def test_200_documents_with_one_failure_give_199_ok_and_1_failed_each_once(
    documents: Path, read_lines: Callable[[Path], list[dict[str, Any]]]
) -> None:
    model = TestModel(reader)
    agent = Agent(model, tools=[std_tools(documents)], max_turns=3)
    items = [f"docs/doc-{number:03d}.txt" for number in range(200)]
    output = documents / "results.jsonl"
    async with agent:
        results = [
            result
            async for result in agent.run_batch(
                items, "Read {path} and give its total.", concurrency=16, output=output
            )
        ]

    assert sorted(result.id for result in results) == sorted(items)  # nothing missing or twice
    statuses = Counter(result.status for result in results)
    assert statuses == {"ok": 199, "failed": 1}
    failed = next(result for result in results if result.status == "failed")
    assert failed.id == BROKEN
    assert failed.cause == "MaxTurnsExceededError"
    assert "max_turns=3" in (failed.error or "")
    for result in results:
        if result.status == "ok":
            number = int(result.id[9:12])
            assert result.answer == f"total {number * 10}"
            assert [call.name for call in result.tool_calls] == ["read_document"]
            assert result.tool_calls[0].server == "std-tools"
            assert result.usage.requests == 2
    # Two requests per ok item, three for the one that ran out of turns: no item ran twice.
    assert len(model.requests) == 199 * 2 + 3

    lines = read_lines(output)
    assert len(lines) == 200
    assert Counter(line["id"] for line in lines) == Counter(items)
    by_id = {line["id"]: line for line in lines}
    assert by_id[BROKEN]["status"] == "failed"
    assert by_id[BROKEN]["cause"] == "MaxTurnsExceededError"
    assert by_id["docs/doc-005.txt"]["answer"] == "total 50"
    assert by_id["docs/doc-005.txt"]["tool_calls"][0]["arguments"] == {"path": "docs/doc-005.txt"}


@pytest.mark.anyio
async def test_an_item_without_a_template_field_fails_alone_with_a_clear_error(
    tmp_path: Path,
) -> None:
    agent = Agent("test")
    items = [
        {"customer": "ACME", "path": "a/invoice-1.pdf"},
        {"path": "a/invoice-2.pdf"},
        {"customer": "Globex", "path": "a/invoice-3.pdf"},
    ]
    results = {
        result.item["path"]: result  # type: ignore[index]
        async for result in agent.run_batch(items, "For {customer}: check {name}")
    }
    assert results["a/invoice-1.pdf"].answer == "echo: For ACME: check invoice-1.pdf"
    assert results["a/invoice-3.pdf"].status == "ok"
    missing = results["a/invoice-2.pdf"]
    assert missing.status == "failed"
    assert missing.cause == "TemplateFieldError"
    assert "{customer}" in (missing.error or "") and "'customer'" in (missing.error or "")
    assert "its fields: name, path, stem" in (missing.error or "")


@pytest.mark.anyio
async def test_a_malformed_template_stops_the_batch_before_any_run() -> None:
    model = TestModel()
    agent = Agent(model)
    with pytest.raises(BatchError, match=r"malformed"):
        async for _ in agent.run_batch(["a.txt"], "Check {path"):
            pass
    with pytest.raises(BatchError, match=r"plain field name"):
        async for _ in agent.run_batch(["a.txt"], "Check {path.__class__}"):
            pass
    assert model.requests == []


def test_item_identity_is_stable_and_duplicates_run_once() -> None:
    assert BatchItem.of("./docs/../docs/a.pdf").id == "docs/a.pdf"
    first = BatchItem.of({"customer": "ACME", "total": 12})
    again = BatchItem.of({"total": 12, "customer": "ACME"})
    assert first.id == again.id and first.id.startswith("sha256:")
    assert BatchItem.of({"id": 7, "x": 1}).id == "id:7"
    bad = BatchItem.of({"when": object()})
    assert bad.error is not None and "not JSON-compatible" in bad.error

    model = TestModel()
    agent = Agent(model)
    results = list(
        agent.run_batch_sync(
            ["a.txt", {"customer": "ACME"}, "a.txt", {"customer": "ACME"}], "{path}{customer}"
        )
    )
    agent.close()
    assert [result.status for result in results].count("skipped") == 2
    assert {result.cause for result in results if result.status == "skipped"} == {"duplicate"}
    # a.txt has no {customer} and the dict no {path}: both fail without a model request.
    assert [result.cause for result in results if result.status == "failed"] == [
        "TemplateFieldError",
        "TemplateFieldError",
    ]
    assert model.requests == []


def test_run_batch_sync_yields_as_items_finish_and_stopping_early_cancels_the_rest() -> None:
    model = TestModel()
    agent = Agent(model)
    items = [f"doc-{number}.txt" for number in range(500)]
    seen = []
    for result in agent.run_batch_sync(items, "Read {name}", concurrency=2):
        seen.append(result)
        if len(seen) == 5:
            break
    try:
        assert all(result.status == "ok" for result in seen)
        assert seen[0].answer == "echo: Read doc-0.txt"
        # The loop thread ran only a little ahead of the consumer before it stopped.
        assert len(model.requests) < 50
        # The agent's loop thread is still usable after the cancelled batch.
        assert agent.run_sync("hello").output == "echo: hello"
    finally:
        agent.close()


@pytest.mark.anyio
async def test_control_stop_finishes_the_running_items_and_takes_no_new_ones(
    tmp_path: Path, read_lines: Callable[[Path], list[dict[str, Any]]]
) -> None:
    import anyio

    control = BatchControl()
    started: list[str] = []

    async def slow(request: ModelRequest) -> ModelResponse:
        started.append(request.messages[-1].text)
        if len(started) == 6:
            control.stop()
        await anyio.sleep(0.05)
        return reply("done")

    agent = Agent(TestModel(slow))
    output = tmp_path / "out.jsonl"
    results = [
        result
        async for result in agent.run_batch(
            (f"d{n}.txt" for n in range(100)),
            "Read {path}",
            engine=LocalEngine(concurrency=3),
            output=output,
            control=control,
        )
    ]
    # Every item that started finished and was written; nothing else started.
    assert len(started) == len(results) < 10
    assert all(result.status == "ok" for result in results)
    assert [line["id"] for line in read_lines(output)] == [result.id for result in results]


@pytest.mark.anyio
async def test_control_cancel_records_the_running_items_as_skipped(tmp_path: Path) -> None:
    import anyio

    control = BatchControl()

    async def hang(request: ModelRequest) -> ModelResponse:
        control.cancel()
        await anyio.sleep(60)
        return reply("never")

    agent = Agent(TestModel(hang))
    with anyio.fail_after(10):
        results = [
            result
            async for result in agent.run_batch(
                [f"d{n}.txt" for n in range(10)], "{path}", concurrency=2, control=control
            )
        ]
    assert 1 <= len(results) <= 2
    assert {result.status for result in results} == {"skipped"}
    assert {result.cause for result in results} == {"interrupted"}
    assert "--resume" in (results[0].error or "")


def test_the_cli_batch_subcommand_keeps_run_working(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from doc_processing_toolkit.cli import main

    assert main(["run", "--model", "test", "-q", "still here"]) == 0
    assert capsys.readouterr().out == "echo: still here\n"
    items = tmp_path / "items.jsonl"
    items.write_text('{"customer": "ACME"}\n"docs/a.txt"\nnot json\n\n', encoding="utf-8")
    output = tmp_path / "out.jsonl"
    code = main(
        ["batch", "-m", "test", "-p", "Hello {customer}", "-i", str(items), "-o", str(output)]
    )
    captured = capsys.readouterr()
    assert code == 3  # the batch ran; some items failed
    assert "batch: 3 items: 1 ok, 2 failed" in captured.err
    assert "TemplateFieldError" in captured.err and "invalid item" in captured.err
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["status"] for line in lines].count("ok") == 1
    assert {line["id"] for line in lines} >= {"docs/a.txt", "line:3"}


@pytest.mark.anyio
async def test_the_ray_engine_without_ray_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what an install without the extra sees
    agent = Agent.from_config({"model": "test"})
    with pytest.raises(MissingDependencyError, match=r"doc-processing-toolkit\[ray\]"):
        async for _ in agent.run_batch(["a.txt"], "{path}", engine="ray"):
            pass


@pytest.mark.anyio
async def test_the_ray_engine_needs_an_agent_it_can_rebuild_on_each_actor() -> None:
    agent = Agent(TestModel())
    with pytest.raises(ConfigError, match=r"Agent.from_yaml"):
        async for _ in agent.run_batch(["a.txt"], "{path}", engine="ray"):
            pass


def test_a_batch_decides_the_approvals_a_person_would_be_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    from doc_processing_toolkit.cli_batch import _build_agent

    config = tmp_path / "agent.yaml"
    config.write_text(
        "model: test\napproval:\n  tools: [write_file]\n  policy: ask\n", encoding="utf-8"
    )
    err = io.StringIO()
    denied = _build_agent(
        argparse.Namespace(config=str(config), model=None, approve_all=False), err
    )
    assert denied.approval is not None and denied.approval.policy_name == "deny"
    assert "calls to write_file will be denied; pass --approve-all" in err.getvalue()
    approved = _build_agent(
        argparse.Namespace(config=str(config), model=None, approve_all=True), io.StringIO()
    )
    assert approved.approval is not None and approved.approval.policy_name == "approve"
    assert approved.approval.tools == ("write_file",)


def test_an_agent_from_a_configuration_hands_the_batch_a_picklable_replica_factory() -> None:
    import pickle

    agent = Agent.from_config({"model": "test", "max_turns": 3, "name": "origin"}, max_turns=5)
    factory = pickle.loads(pickle.dumps(agent.replica_factory()))
    replica = factory()
    assert isinstance(replica, Agent) and replica is not agent
    assert replica.settings.values == agent.settings.values
    assert replica.settings.values.max_turns == 5
    with pytest.raises(ConfigError, match=r"Agent.from_yaml"):
        Agent(TestModel()).replica_factory()
