"""A results file has one writer at a time, and text UTF-8 cannot hold does not break it.

- Two ``dpt-agent batch --resume`` on one results file at once: the file's lock lets one
  run and refuses the other with a clear error, so no item runs twice and no reported
  result is lost.
- A JSONL item with a lone surrogate (``"\\ud800"``) runs like any other, its line is
  written as valid JSON, and ``--resume`` reads the file back.
"""

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

import pytest
import yaml

from doc_processing_toolkit.batch import ResultsFile
from doc_processing_toolkit.errors import BatchError

ITEMS = 40


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
    prompt = "Check the invoice of {customer}"
    command = [sys.executable, "-m", "doc_processing_toolkit.cli", "batch", "-c", str(config)]
    command.extend(["-p", prompt, "-i", str(items), "-o", str(output), "-n", "4", *extra])
    return command


def wait_for_lines(output: Path, count: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if output.exists() and output.read_bytes().count(b"\n") >= count:
            return
        assert process.poll() is None, "the batch ended before it could be stopped"
        time.sleep(0.02)
    raise AssertionError(f"{output} did not reach {count} lines")


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def test_a_results_file_being_written_is_refused_to_a_second_writer(tmp_path: Path) -> None:
    output = tmp_path / "results.jsonl"
    first = ResultsFile(output)
    first.open()
    try:
        with pytest.raises(BatchError, match="another batch is writing to the output file"):
            ResultsFile(output, resume=True).open()
    finally:
        first.close()
    second = ResultsFile(output, resume=True)
    assert second.open() == set()
    second.close()


def test_two_resumes_at_once_never_run_an_item_twice_nor_lose_a_result(
    tmp_path: Path, chat_stand_in: Any, read_lines: Callable[[Path], list[dict[str, Any]]]
) -> None:
    chat_stand_in.delay = 0.1
    config, items = write_setup(tmp_path, chat_stand_in.config())
    output = tmp_path / "results.jsonl"
    first = subprocess.Popen(
        batch_command(config, items, output), env=child_env(), stderr=subprocess.DEVNULL
    )
    wait_for_lines(output, 10, first)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    finished = {line["id"] for line in read_lines(output) if line["status"] == "ok"}
    asked_before = len(chat_stand_in.prompts())

    resumes = [
        subprocess.Popen(
            batch_command(config, items, output, "--resume"),
            env=child_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    errors = [process.communicate(timeout=120)[1] for process in resumes]
    codes = sorted(process.returncode for process in resumes)
    assert codes == [0, 1], errors
    refused = next(err for process, err in zip(resumes, errors, strict=True) if process.returncode)
    assert "another batch is writing to the output file" in refused

    lines = read_lines(output)
    assert Counter(line["id"] for line in lines) == Counter(f"id:{n}" for n in range(ITEMS))
    assert {line["status"] for line in lines} == {"ok"}
    asked = chat_stand_in.prompts()[asked_before:]
    assert len(asked) == len(set(asked)) == ITEMS - len(finished)


def test_an_item_with_a_lone_surrogate_is_run_written_and_resumed(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text(
        '{"text": "fine"}\n{"text": "bad \\ud800 here"}\n{"text": "also fine"}\n',
        encoding="utf-8",
    )
    output = tmp_path / "results.jsonl"
    command = [
        sys.executable,
        "-m",
        "doc_processing_toolkit.cli",
        "batch",
        "-m",
        "test",
        "-p",
        "Say {text}",
        "-i",
        str(items),
        "-o",
        str(output),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in output.read_bytes().splitlines()]
    assert [line["status"] for line in lines] == ["ok", "ok", "ok"]
    assert {line["item"]["text"] for line in lines} == {"fine", "bad \ud800 here", "also fine"}
    output.read_bytes().decode("utf-8")  # the file is valid UTF-8 throughout

    again = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "3 already done" in again.stderr
    assert len(output.read_bytes().splitlines()) == 3
