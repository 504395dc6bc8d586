"""Item identity: ids compared by value and type, and JSONL lines split at LF only.

Real JSONL files on disk and the offline ``test`` model; ``dpt-agent batch`` in a child
process for what the command line shows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.batch import BatchItem, ItemResult, ResultsFile, open_input


def test_the_number_7_and_the_string_7_are_two_items() -> None:
    number, text = BatchItem.of({"id": 7}), BatchItem.of({"id": "7"})
    assert number.id != text.id
    assert number.id == "id:7"
    assert text.id == 'id:"7"'
    assert BatchItem.of({"id": True}).id != BatchItem.of({"id": 1}).id


def test_both_run_and_a_resume_keeps_them_apart(tmp_path: Path) -> None:
    items = [{"id": 7, "customer": "number"}, {"id": "7", "customer": "text"}]
    output = tmp_path / "out.jsonl"
    model = TestModel()
    agent = Agent(model)
    try:
        first = list(agent.run_batch_sync(items, "Hello {customer}", output=output))
        assert sorted(result.status for result in first) == ["ok", "ok"]
        assert len(model.requests) == 2
        again = list(agent.run_batch_sync(items, "Hello {customer}", output=output, resume=True))
    finally:
        agent.close()
    assert [(result.status, result.cause) for result in again] == [
        ("skipped", "already-done"),
        ("skipped", "already-done"),
    ]
    assert len(model.requests) == 2
    lines = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert sorted(line["id"] for line in lines) == ['id:"7"', "id:7"]


def test_a_results_file_of_an_earlier_version_still_resumes(tmp_path: Path) -> None:
    # Before ids kept their type, {"id": "c-118"} was recorded as id:c-118.
    output = tmp_path / "out.jsonl"
    old = ItemResult(id="id:c-118", item={"id": "c-118", "x": 1}, status="ok", answer="a")
    output.write_text(json.dumps(old.to_json()) + "\n", encoding="utf-8")
    results = ResultsFile(output, resume=True)
    assert results.open() == {BatchItem.of({"id": "c-118", "x": 1}).id}
    results.close()


def write_with_carriage_returns(path: Path) -> None:
    path.write_bytes(
        b'{"id": 1,\r "customer": "a"}\n'  # a bare CR between tokens: one line
        b'{"id": 2, "customer": "b"}\r\n'  # CRLF line ending
        b"not json\n"  # line 3
        b'{"id": 3, "customer": "c\rd"}\n'  # a CR inside a string: data, so not JSON
    )


def test_jsonl_lines_split_at_lf_only(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    write_with_carriage_returns(items)
    source = open_input(str(items))

    read = list(source)

    assert source.count() == len(read) == 4
    assert [item.id for item in read[:2]] == ["id:1", "id:2"]
    assert read[2].id == "line:3" and "line 3 is not valid JSON" in (read[2].error or "")
    assert read[3].id == "line:4" and "line 4 is not valid JSON" in (read[3].error or "")


def test_the_command_counts_and_names_lines_as_the_file_has_them(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    write_with_carriage_returns(items)
    output = tmp_path / "out.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "doc_processing_toolkit.cli",
            "batch",
            "-m",
            "test",
            "-p",
            "Hello {customer}",
            "-i",
            str(items),
            "-o",
            str(output),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    assert "batch: 4 items: 2 ok, 2 failed" in done.stderr
    assert "4/4" in done.stderr and "5/4" not in done.stderr
    lines = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert sorted(line["id"] for line in lines) == ["id:1", "id:2", "line:3", "line:4"]
