"""``dpt-agent eval`` (exit status, JSON and HTML outputs, the results file and
``--resume``, Ray) and the offline eval (no model: the catalog block at the agent's
budget and the search rank), on std-tools' real skills server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import eval_support as support
import pytest
import yaml

from doc_processing_toolkit import Agent
from doc_processing_toolkit.cli import main
from doc_processing_toolkit.evals import evaluate_triggers

ALL_POSITIVE = [
    {"query": "Redact the phone numbers", "should_trigger": True},
    {"query": "Remove e-mail addresses from the text", "should_trigger": True},
]


def config_file(tmp_path: Path, root: Path, delay: float = 0.0, **extra: Any) -> Path:
    """An agent whose test model loads pii-redaction for every query (after `delay`
    seconds), over std-tools' skills server started as a child process."""
    data: dict[str, Any] = {
        "model": "test",
        "model_options": {
            "script": [{"call": "load_skill", "arguments": {"skill_name": "pii-redaction"}}],
            "delay": delay,
        },
        "tools": [support.stdio_skills(root)],
        **extra,
    }
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.fixture
def cli_root(skills_root: Path) -> Path:
    (skills_root / "pii-redaction" / "evals" / "eval_queries.json").write_text(
        json.dumps(ALL_POSITIVE), encoding="utf-8"
    )
    return skills_root


def test_every_query_passing_exits_0_and_writes_the_json_and_html_reports(
    cli_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = config_file(tmp_path, cli_root)
    out_json, out_html = tmp_path / "report.json", tmp_path / "report.html"
    code = main(
        [
            "eval", "--config", str(config), "--skill", "pii-redaction", "--runs", "2",
            "--json", str(out_json), "--report", str(out_html),
            "--results", str(tmp_path / "runs.jsonl"),
        ]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "pii-redaction: 100% of 2 queries pass" in captured.out
    assert "2 queries x 2 runs = 4 runs, engine local" in captured.err
    report = json.loads(out_json.read_text())
    assert report["passed"] is True and report["runs"] == 2
    skill = report["skills"]["pii-redaction"]
    assert [q["triggers"] for q in skill["queries"]] == [2, 2]
    assert skill["requests"] == 4 and skill["tokens"] > 0
    page = out_html.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count('<svg class="chart') == 2
    assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == 4


def test_a_failing_query_exits_1_and_says_what_was_loaded_instead(
    skills_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = config_file(tmp_path, skills_root)
    results = tmp_path / "runs.jsonl"
    code = main(["eval", "-c", str(config), "--runs", "1", "--results", str(results)])
    captured = capsys.readouterr()
    assert code == 1
    assert (
        "FAIL [should trigger] 0/1: Extract the fields of this invoice (loaded instead: "
        "pii-redaction x1)"
    ) in captured.out
    assert "table-profiling: not evaluated (no evals/eval_queries.json)" in captured.out


def test_resume_runs_only_what_the_results_file_lacks_and_a_new_eval_starts_over(
    cli_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = config_file(tmp_path, cli_root)
    results, out_json = tmp_path / "runs.jsonl", tmp_path / "report.json"
    argv = ["eval", "-c", str(config), "--skill", "pii-redaction", "--runs", "3"]
    argv += ["--results", str(results), "--json", str(out_json)]
    assert main(argv) == 0
    lines = results.read_text().splitlines()
    assert len(lines) == 6
    first = json.loads(out_json.read_text())
    # An interrupted eval: only the first two runs were written.
    results.write_text("\n".join(lines[:2]) + "\n")
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 0
    captured = capsys.readouterr()
    assert "resuming" in captured.err
    resumed = results.read_text().splitlines()
    assert len(resumed) == 6 and resumed[:2] == lines[:2]
    assert json.loads(out_json.read_text())["skills"] == first["skills"]
    # Without --resume the runs of the earlier eval are replaced, not added to.
    assert main(argv) == 0
    assert "starting over" in capsys.readouterr().err
    assert len(results.read_text().splitlines()) == 6


def test_ctrl_c_lets_the_running_runs_finish_and_resume_does_the_rest(
    cli_root: Path, tmp_path: Path
) -> None:
    config = config_file(tmp_path, cli_root, delay=0.3)
    results, out_json = tmp_path / "runs.jsonl", tmp_path / "report.json"
    command = [
        sys.executable, "-m", "doc_processing_toolkit.cli", "eval", "-c", str(config),
        "--skill", "pii-redaction", "--runs", "10", "-n", "2", "--results", str(results),
        "--json", str(out_json),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (results.exists() and results.read_bytes().count(b"\n") >= 2):
        assert process.poll() is None and time.monotonic() < deadline, "ended too early"
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "interrupted: no new runs" in err and "with --resume to do the rest" in err
    finished = results.read_text().splitlines()
    assert 2 <= len(finished) < 20
    assert all(json.loads(line)["status"] == "ok" for line in finished)
    assert not out_json.exists()  # no report from a partial eval

    again = subprocess.run(
        [*command, "--resume"], env=env, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(line["id"] for line in lines) == sorted({line["id"] for line in lines})
    assert len(lines) == 20
    report = json.loads(out_json.read_text())
    assert [q["runs"] for q in report["skills"]["pii-redaction"]["queries"]] == [10, 10]


def test_a_results_file_that_is_not_an_eval_s_is_refused_and_left_alone(
    cli_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = config_file(tmp_path, cli_root)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    code = main(["eval", "-c", str(config), "--skill", "pii-redaction", "--results", str(notes)])
    assert code == 1
    assert "dpt-agent: error:" in capsys.readouterr().err
    assert notes.read_text() == "my notes\n"


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["eval"],
        ["eval", "-c", "x.yaml", "--threshold", "2"],
        ["eval", "-c", "x", "--runs", "0"],
    ):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
    assert "--runs: must be 1 or more" in capsys.readouterr().err


@pytest.mark.anyio
async def test_offline_asks_no_model_and_checks_the_block_at_the_budget_and_the_rank(
    std_tools: Callable[..., Any],
) -> None:
    # The budget at which the block shows exactly one skill for a redaction request.
    async with Agent(tools=[std_tools()]) as agent:
        full = len((await agent.preview()).skills.prompt_block or "")
    budget = None
    for candidate in range(full, full - 600, -10):
        async with Agent(tools=[std_tools()], skills_catalog_budget=candidate) as agent:
            if len((await agent.preview("Redact the phone numbers")).shown_skills()) == 1:
                budget = candidate
                break
    assert budget is not None
    # No model at all: an offline eval never needs one.
    async with Agent(tools=[std_tools()], skills_catalog_budget=budget) as agent:
        report = await evaluate_triggers(agent, ["pii-redaction"], offline=True)
    assert (report.mode, report.model, report.runs) == ("offline", None, 1)
    queries = {q.query: q for q in report.skills["pii-redaction"].queries}
    hit = queries["Redact the phone numbers from this text"]
    assert hit.offline is not None
    assert (hit.offline.in_block, hit.offline.rank, hit.offline.rank_source) == (
        True,
        1,
        "search_skills",
    )
    assert (hit.triggers, hit.passed) == (1, True)
    other = queries["Profile the csv table"]
    assert other.offline is not None and not other.offline.in_block
    assert other.offline.top == "table-profiling" and other.passed
    data = report.to_json()["skills"]["pii-redaction"]["queries"][0]
    assert data["offline"] == {
        "in_block": True,
        "rank": 1,
        "rank_source": "search_skills",
        "top": "pii-redaction",
    }
    assert report.to_json()["requests"] == 0


@pytest.mark.anyio
async def test_offline_on_an_extension_server_ranks_with_the_toolkit_index(
    std_tools: Callable[..., Any],
) -> None:
    async with Agent(tools=[std_tools(tools=[])]) as agent:
        report = await evaluate_triggers(agent, ["invoice-extraction"], offline=True)
    first = report.skills["invoice-extraction"].queries[0]
    assert first.offline is not None
    assert (first.offline.in_block, first.offline.rank_source) == (True, "index")
    assert first.offline.rank == 1 and first.passed


def test_the_offline_cli_needs_no_model(
    skills_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = {"tools": [support.stdio_skills(skills_root)]}
    config = tmp_path / "agent.yaml"
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    out_json = tmp_path / "offline.json"
    code = main(
        [
            "eval", "-c", str(config), "--offline", "--json", str(out_json),
            "--skill", "pii-redaction", "invoice-extraction",
        ]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err
    report = json.loads(out_json.read_text())
    assert report["mode"] == "offline" and report["model"] is None
    assert list(report["skills"]) == ["pii-redaction", "invoice-extraction"]
    assert code == (0 if report["passed"] else 1)
    assert "offline (no model)" in captured.err


def test_the_ray_engine_runs_the_eval_on_actors(
    cli_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ray = pytest.importorskip(
        "ray", reason='Ray is needed: pip install "doc-processing-toolkit[ray]"'
    )
    config = config_file(tmp_path, cli_root)
    out_json = tmp_path / "report.json"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        code = main(
            [
                "eval", "-c", str(config), "--skill", "pii-redaction", "--runs", "2",
                "--engine", "ray", "--concurrency", "2", "--json", str(out_json),
                "--results", str(tmp_path / "runs.jsonl"),
            ]
        )  # fmt: skip
    finally:
        ray.shutdown()
    assert code == 0, capsys.readouterr().err
    report = json.loads(out_json.read_text())
    assert [q["triggers"] for q in report["skills"]["pii-redaction"]["queries"]] == [2, 2]
