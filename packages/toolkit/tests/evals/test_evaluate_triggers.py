"""evaluate_triggers on real std-tools skills servers (in process and over stdio) with a
scripted test model: what counts as a trigger, runs stopped at the loading call, the
report's numbers, the split, and clear errors for bad eval files."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import eval_support as support
import pytest

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.errors import EvalError
from doc_processing_toolkit.evals import (
    TriggerReport,
    assign_sets,
    evaluate_triggers,
    parse_eval_queries,
)
from doc_processing_toolkit.messages import ModelResponse
from doc_processing_toolkit.models.base import ModelRequest
from doc_processing_toolkit.models.test import reply, tool_call
from doc_processing_toolkit.tools.local import tool

pytestmark = pytest.mark.anyio


INVOICE_QUERIES, Picker = support.INVOICE_QUERIES, support.Picker
stdio_skills, write_skill = support.stdio_skills, support.write_skill


def by_query(report: TriggerReport, skill: str) -> dict[str, Any]:
    return {q.query: q for q in report.skills[skill].queries}


async def test_each_query_runs_n_times_and_the_report_counts_triggers_and_confusions(
    std_tools: Callable[..., Any],
) -> None:
    picker = Picker()
    model = TestModel(picker)
    async with Agent(model=model, tools=[std_tools()]) as agent:
        report = await evaluate_triggers(agent, runs=3)
    assert isinstance(report, TriggerReport)
    assert list(report.skills) == ["invoice-extraction", "pii-redaction"]
    assert report.skipped == {"table-profiling": "no evals/eval_queries.json"}

    invoice = report.skills["invoice-extraction"]
    queries = by_query(report, "invoice-extraction")
    first = queries["Extract the fields of this invoice"]
    assert (first.runs, first.triggers, first.trigger_rate, first.passed) == (3, 3, 1.0, True)
    confused = queries["Redact the invoice before booking it"]
    assert (confused.triggers, confused.passed) == (0, False)
    assert confused.loaded_instead == {"pii-redaction": 3}
    wrong = queries["Create an invoice template for my shop"]
    assert (wrong.should_trigger, wrong.trigger_rate, wrong.passed) == (False, 1.0, False)
    assert queries["Translate this letter to German"].passed
    assert invoice.pass_rate == 0.6
    assert invoice.precision == round(6 / 9, 4)  # 6 right loads of 9 loads
    assert invoice.recall == round(6 / 9, 4)  # 6 of the 9 should-trigger runs
    assert invoice.confusion == {"pii-redaction": 3}
    assert (invoice.train_pass_rate, invoice.validation_pass_rate) == (None, None)

    pii = report.skills["pii-redaction"]
    assert (pii.pass_rate, pii.precision, pii.recall, pii.confusion) == (1.0, 1.0, 1.0, {})
    # A should-not query that loaded another skill passes and says what was loaded.
    assert by_query(report, "pii-redaction")["Profile the csv table"].loaded_instead == {
        "table-profiling": 3
    }
    assert not report.passed and report.pass_rate == round(7 / 9, 4)

    # Every run stopped at its first reply: a loading call never ran (no second request
    # carried its result back), and each run cost exactly one request.
    assert len(model.requests) == 3 * 9
    assert all(len(request.messages) == 1 for request in model.requests)
    assert (invoice.requests, pii.requests) == (15, 12)
    assert invoice.tokens == invoice.input_tokens + invoice.output_tokens > 0

    data = json.loads(json.dumps(report.to_json()))
    skill = data["skills"]["invoice-extraction"]
    assert {
        "queries",
        "pass_rate",
        "precision",
        "recall",
        "confusion",
        "requests",
        "tokens",
    } <= set(skill)
    assert {"train_pass_rate", "validation_pass_rate"} <= set(skill)
    entry = skill["queries"][0]
    assert set(entry) >= {"query", "should_trigger", "runs", "triggers", "trigger_rate", "passed"}
    assert "set" not in entry  # only when split
    assert data["passed"] is False and data["requests"] == 27


async def test_a_query_that_triggers_two_runs_in_three_passes_at_half_not_at_seventy(
    std_tools: Callable[..., Any],
) -> None:
    flaky = "Read the supplier invoice line items"
    async with Agent(model=TestModel(Picker(flaky=(flaky,))), tools=[std_tools()]) as agent:
        at_half = await evaluate_triggers(agent, ["invoice-extraction"], runs=3, threshold=0.5)
        at_seventy = await evaluate_triggers(agent, ["invoice-extraction"], runs=3, threshold=0.7)
    for report, passed in ((at_half, True), (at_seventy, False)):
        query = by_query(report, "invoice-extraction")[flaky]
        assert (query.triggers, query.trigger_rate, query.passed) == (2, 0.6667, passed)
    assert list(at_half.skills) == ["invoice-extraction"]


async def test_the_split_is_stratified_fixed_by_seed_and_has_its_own_pass_rates(
    std_tools: Callable[..., Any],
) -> None:
    async with Agent(model=TestModel(Picker()), tools=[std_tools()]) as agent:
        report = await evaluate_triggers(agent, runs=1, split=0.4, seed=7)
        again = await evaluate_triggers(agent, runs=1, split=0.4, seed=7)
    sets = {q.query: q.set for q in report.skills["invoice-extraction"].queries}
    assert sets == {q.query: q.set for q in again.skills["invoice-extraction"].queries}
    labels = {q["query"]: q["should_trigger"] for q in INVOICE_QUERIES}
    held_out = Counter(labels[q] for q, s in sets.items() if s == "validation")
    assert held_out == {True: 1, False: 1}  # round(3 * 0.4) and round(2 * 0.4), per label
    skill = report.skills["invoice-extraction"]
    train = [q for q in skill.queries if q.set == "train"]
    assert skill.train_pass_rate == round(sum(q.passed for q in train) / len(train), 4)
    assert skill.validation_pass_rate is not None
    assert all("set" in q for q in report.to_json()["skills"]["pii-redaction"]["queries"])


def test_the_split_depends_on_the_seed_and_the_queries_not_on_their_order() -> None:
    queries = [{"query": f"query number {n}", "should_trigger": n % 2 == 0} for n in range(20)]
    forward = parse_eval_queries("s", json.dumps(queries))
    backward = parse_eval_queries("s", json.dumps(queries[::-1]))
    one = {q.query: q.set for q in assign_sets(forward, 0.3, seed=1)}
    assert one == {q.query: q.set for q in assign_sets(backward, 0.3, seed=1)}
    assert Counter(one.values()) == {"train": 14, "validation": 6}
    other = {q.query: q.set for q in assign_sets(forward, 0.3, seed=2)}
    assert other != one
    with pytest.raises(EvalError, match="split must be between 0 and 1"):
        assign_sets(forward, 1.0, seed=1)


async def test_skills_of_an_extension_server_are_read_and_loaded_by_uri(
    std_tools: Callable[..., Any],
) -> None:
    model = TestModel(Picker(by_uri=True))
    async with Agent(model=model, tools=[std_tools(tools=[])]) as agent:
        report = await evaluate_triggers(agent, runs=2)
    assert report.skills["pii-redaction"].pass_rate == 1.0
    assert by_query(report, "invoice-extraction")[
        "Redact the invoice before booking it"
    ].loaded_instead == {"pii-redaction": 2}


def read_skill_md(path_of: str) -> Callable[[ModelRequest], ModelResponse]:
    """A model that reads the SKILL.md of skill `path_of` with a file tool, at the path
    the catalog gives, for any query mentioning csv; else answers."""

    def script(request: ModelRequest) -> ModelResponse:
        if any(m.role == "assistant" for m in request.messages):
            return reply("done")
        text = next(m.text for m in reversed(request.messages) if m.role == "user")
        found = re.search(rf'<skill name="{path_of}" path="([^"]+)"', request.system or "")
        if "csv" in text.lower() and found:
            return tool_call("read_text", {"path": found.group(1)})
        return reply("No skill needed.")

    return script


async def test_a_stdio_server_and_a_skill_md_read_by_a_file_tool_count_as_a_trigger(
    skills_root: Path,
) -> None:
    write_skill(
        skills_root.parent / "more",
        "table-profiling",
        [
            {"query": "Profile this csv file", "should_trigger": True},
            {"query": "Write a poem", "should_trigger": False},
        ],
    )
    reads: list[str] = []

    @tool
    def read_text(path: str) -> str:
        """Read a text file."""
        reads.append(path)
        return Path(path).read_text(encoding="utf-8")

    model = TestModel(read_skill_md("table-profiling"))
    agent = Agent(model=model, tools=[stdio_skills(skills_root.parent / "more"), read_text])
    async with agent:
        report = await evaluate_triggers(agent, runs=2)
    skill = report.skills["table-profiling"]
    assert [(q.triggers, q.passed) for q in skill.queries] == [(2, True), (0, True)]
    assert reads == []  # the run stopped at the call: the file was never read


async def test_a_run_that_keeps_calling_other_tools_ends_untriggered_at_max_turns(
    std_tools: Callable[..., Any],
) -> None:
    model = TestModel(lambda request: tool_call("list_skills"))
    async with Agent(model=model, tools=[std_tools()], max_turns=2) as agent:
        report = await evaluate_triggers(agent, ["pii-redaction"], runs=1)
    queries = report.skills["pii-redaction"].queries
    assert [q.triggers for q in queries] == [0, 0, 0, 0]
    assert [q.passed for q in queries] == [False, False, True, True]
    assert report.skills["pii-redaction"].requests == 2 * 4 - 4  # the last request unseen
    assert report.errors == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not JSON"),
        ('{"query": "x"}', "must be a JSON list"),
        ('[{"query": "x"}]', 'needs "should_trigger": true or false'),
        ('[{"query": "", "should_trigger": true}]', 'needs a non-empty string "query"'),
        ('[{"query": "x", "should_trigger": true, "why": 1}]', "unknown keys why"),
        ("[]", "holds no query"),
    ],
)
async def test_a_malformed_eval_file_is_refused_naming_the_skill_and_the_entry(
    std_tools: Callable[..., Any], skills_root: Path, content: str, message: str
) -> None:
    (skills_root / "pii-redaction" / "evals" / "eval_queries.json").write_text(content)
    async with Agent(model=TestModel(Picker()), tools=[std_tools()]) as agent:
        with pytest.raises(EvalError, match=re.escape(message)) as caught:
            await evaluate_triggers(agent)
    assert "skill 'pii-redaction': evals/eval_queries.json" in str(caught.value)


async def test_a_named_skill_without_an_eval_file_and_no_eval_files_at_all_are_errors(
    std_tools: Callable[..., Any], skills_root: Path
) -> None:
    async with Agent(model=TestModel(Picker()), tools=[std_tools()]) as agent:
        with pytest.raises(
            EvalError, match=re.escape("'table-profiling' has no evals/eval_queries.json")
        ):
            await evaluate_triggers(agent, ["table-profiling"])
        with pytest.raises(EvalError, match="runs must be at least 1"):
            await evaluate_triggers(agent, runs=0)
    for name in ("invoice-extraction", "pii-redaction"):
        (skills_root / name / "evals" / "eval_queries.json").unlink()
    async with Agent(model=TestModel(Picker()), tools=[std_tools()]) as agent:
        with pytest.raises(EvalError, match="no skill of server 'skills-tools' has an evals"):
            await evaluate_triggers(agent)
    async with Agent(model=TestModel(Picker())) as agent:
        with pytest.raises(EvalError, match="the agent has no skills server"):
            await evaluate_triggers(agent)


def test_without_an_event_loop_it_runs_to_the_end_and_returns_the_report(
    std_tools: Callable[..., Any],
) -> None:
    agent = Agent(model=TestModel(Picker()), tools=[std_tools()])
    try:
        report = evaluate_triggers(agent, ["pii-redaction"], runs=1)
        assert isinstance(report, TriggerReport)
        assert report.skills["pii-redaction"].pass_rate == 1.0
    finally:
        agent.close()


async def test_a_skills_server_without_load_skill_resource_is_refused_with_the_fix(
    std_tools: Callable[..., Any],
) -> None:
    server = std_tools(tools=["list_skills", "load_skill"])
    async with Agent(model=TestModel(Picker()), tools=[server]) as agent:
        with pytest.raises(EvalError, match="offers no load_skill_resource tool"):
            await evaluate_triggers(agent)
