"""Crash and resume: ``dpt-agent batch`` in a real child process, killed with SIGKILL or
interrupted with SIGINT mid-batch, then run again with ``--resume``. The model is the real
openai SDK talking to a stand-in on 127.0.0.1 that records every prompt it answers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from doc_processing_toolkit.batch import ItemResult, ResultsFile

ITEMS = 60


def write_setup(folder: Path, config: dict[str, Any]) -> tuple[Path, Path]:
    """An agent YAML file and a JSONL file of ITEMS items."""
    config_file = folder / "agent.yaml"
    config_file.write_text(yaml.safe_dump(config), encoding="utf-8")
    items = folder / "items.jsonl"
    items.write_text(
        "".join(
            json.dumps({"id": n, "customer": f"customer-{n:02d}"}) + "\n" for n in range(ITEMS)
        ),
        encoding="utf-8",
    )
    return config_file, items


def batch_command(config: Path, items: Path, output: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "doc_processing_toolkit.cli",
        "batch",
        "-c",
        str(config),
        "-p",
        "Check the invoice of {customer}",
        "-i",
        str(items),
        "-o",
        str(output),
        "-n",
        "4",
        *extra,
    ]


def wait_for_lines(output: Path, count: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if output.exists() and output.read_bytes().count(b"\n") >= count:
            return
        assert process.poll() is None, "the batch ended before it could be interrupted"
        time.sleep(0.02)
    raise AssertionError(f"{output} did not reach {count} lines")


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def test_kill_9_mid_batch_then_resume_gives_every_item_once_without_rerunning_finished_ones(
    tmp_path: Path, chat_stand_in: Any, read_lines: Callable[[Path], list[dict[str, Any]]]
) -> None:
    chat_stand_in.delay = 0.1
    config, items = write_setup(tmp_path, chat_stand_in.config())
    output = tmp_path / "results.jsonl"
    first = subprocess.Popen(
        batch_command(config, items, output), env=child_env(), stderr=subprocess.DEVNULL
    )
    wait_for_lines(output, 15, first)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)

    lines = read_lines(output)  # whole lines only, even after SIGKILL
    finished = {line["id"] for line in lines if line["status"] == "ok"}
    assert 15 <= len(finished) < ITEMS
    asked_before = len(chat_stand_in.prompts())

    second = subprocess.run(
        batch_command(config, items, output, "--resume"),
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    assert f"{len(finished)} already done" in second.stderr

    lines = read_lines(output)
    assert Counter(line["id"] for line in lines) == Counter(f"id:{n}" for n in range(ITEMS))
    assert {line["status"] for line in lines} == {"ok"}
    # The second run asked the model only about the items the first had not finished.
    asked_after = chat_stand_in.prompts()[asked_before:]
    finished_customers = {f"Check the invoice of customer-{int(i[3:]):02d}" for i in finished}
    assert len(asked_after) == ITEMS - len(finished)
    assert not finished_customers & set(asked_after)
    for line in lines:
        customer = line["item"]["customer"]
        assert line["answer"] == f"answer to: Check the invoice of {customer}"


def test_ctrl_c_finishes_the_running_items_writes_them_and_resume_does_the_rest(
    tmp_path: Path, chat_stand_in: Any, read_lines: Callable[[Path], list[dict[str, Any]]]
) -> None:
    chat_stand_in.delay = 0.3
    config, items = write_setup(tmp_path, chat_stand_in.config())
    output = tmp_path / "results.jsonl"
    process = subprocess.Popen(
        batch_command(config, items, output, "--grace", "20"),
        env=child_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_lines(output, 4, process)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)

    assert process.returncode == 130, err
    assert "interrupted: no new items" in err
    assert "run the same command with --resume" in err
    lines = read_lines(output)
    # The items running at Ctrl-C were let finish: every model answer reached the file.
    assert {line["status"] for line in lines} == {"ok"}
    assert len(lines) == len(chat_stand_in.prompts()) < ITEMS

    chat_stand_in.delay = 0.01
    again = subprocess.run(
        batch_command(config, items, output, "--resume"),
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    lines = read_lines(output)
    assert Counter(line["id"] for line in lines) == Counter(f"id:{n}" for n in range(ITEMS))
    assert len(chat_stand_in.prompts()) == ITEMS  # no item was asked about twice


def test_resume_repairs_a_partial_last_line_and_reruns_failed_items(tmp_path: Path) -> None:
    output = tmp_path / "results.jsonl"
    ok = ItemResult(id="a", item="a.txt", status="ok", answer="fine")
    failed = ItemResult(id="b", item="b.txt", status="failed", error="boom", cause="X")
    lines = [json.dumps(result.to_json()) for result in (ok, failed, ok)]
    output.write_text("\n".join([*lines, '{"id": "c", "sta']), encoding="utf-8")

    fresh = ResultsFile(output)
    try:
        fresh.open()
    except Exception as exc:
        # A program calling the library is told the argument, not the command-line option.
        assert "already holds results" in str(exc) and "resume=True" in str(exc)
        assert "--resume" not in str(exc)
    else:
        raise AssertionError("an existing results file was opened without resume")
    assert output.read_text(encoding="utf-8").endswith('{"id": "c", "sta')  # untouched

    results = ResultsFile(output, resume=True)
    assert results.open() == {"a"}
    assert results.repaired
    results.write(ItemResult(id="b", item="b.txt", status="ok", answer="now fine"))
    results.close()
    final = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [(line["id"], line["status"]) for line in final] == [("a", "ok"), ("b", "ok")]


def test_resume_drops_lines_that_are_not_results_only_when_forced(tmp_path: Path) -> None:
    output = tmp_path / "results.jsonl"
    ok = json.dumps(ItemResult(id="a", item="a.txt", status="ok", answer="fine").to_json())
    output.write_text(f"{ok}\nnot json\n", encoding="utf-8")

    try:
        ResultsFile(output, resume=True).open()
    except Exception as exc:
        assert "line 2 is not a result line ('not json')" in str(exc) and "force=True" in str(exc)
    else:
        raise AssertionError("a file with a line that is not a result was resumed into")
    assert output.read_text(encoding="utf-8") == f"{ok}\nnot json\n"

    forced = ResultsFile(output, resume=True, force=True)
    assert forced.open() == {"a"}
    forced.close()
    assert forced.repaired
    assert output.read_text(encoding="utf-8") == f"{ok}\n"


def test_the_command_line_names_its_options_in_output_file_errors(tmp_path: Path) -> None:
    """dpt-agent batch on an output that holds results, without --resume: the message
    names the option to pass, not a Python argument (issue 28)."""
    config, items = write_setup(tmp_path, {"model": "test", "name": "names"})
    output = tmp_path / "results.jsonl"
    done = ItemResult(id="id:0", item={"id": 0}, status="ok", answer="fine")
    output.write_text(json.dumps(done.to_json()) + "\n", encoding="utf-8")
    run = subprocess.run(
        batch_command(config, items, output),
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode != 0
    assert "already holds results; pass --resume to continue it" in run.stderr
    assert "resume=True" not in run.stderr and "output=" not in run.stderr
