"""The results file never destroys what is not ours: the input given as the output, a file
of other lines, a linked output, a dangling link, the mode of a rewritten file.

`dpt-agent batch` runs in a real child process (the offline ``test`` model answers, so
nothing leaves the machine); `ResultsFile` and `Agent.run_batch` are used directly on real
files for the rest.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from doc_processing_toolkit import Agent, TestModel
from doc_processing_toolkit.batch import ItemResult, ResultsFile, open_input
from doc_processing_toolkit.errors import BatchError


def dpt_batch(
    items: str | Path, output: str | Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    """``dpt-agent batch -m test`` in a child process."""
    command = [
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
        *extra,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def write_items(path: Path, count: int = 3) -> bytes:
    content = "".join(
        json.dumps({"id": n, "customer": f"customer-{n}"}) + "\n" for n in range(count)
    ).encode()
    path.write_bytes(content)
    return content


def result_line(item_id: str, status: str = "ok") -> str:
    result = ItemResult(id=item_id, item=f"{item_id}.txt", status=status, answer="fine")
    return json.dumps(result.to_json()) + "\n"


# -- the input as the output --------------------------------------------------------------


@pytest.mark.parametrize("resume", [False, True])
def test_the_input_file_given_as_output_is_refused_and_left_untouched(
    tmp_path: Path, resume: bool
) -> None:
    items = tmp_path / "items.jsonl"
    before = write_items(items)

    done = dpt_batch(items, items, *(["--resume"] if resume else []))

    assert done.returncode == 1, done.stderr
    assert "is also the input" in done.stderr
    assert items.read_bytes() == before


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "dotted path"])
def test_the_input_reached_another_way_is_refused_too(tmp_path: Path, kind: str) -> None:
    items = tmp_path / "items.jsonl"
    before = write_items(items)
    (tmp_path / "sub").mkdir()
    if kind == "symlink":
        output = tmp_path / "sub" / "out.jsonl"
        output.symlink_to(items)
    elif kind == "hardlink":
        output = tmp_path / "out.jsonl"
        os.link(items, output)
    else:
        output = tmp_path / "sub" / ".." / "items.jsonl"

    done = dpt_batch(items, output, "--resume")

    assert done.returncode == 1, done.stderr
    assert "is also the input" in done.stderr
    assert items.read_bytes() == before


def test_an_output_matched_by_the_input_pattern_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a", encoding="utf-8")
    output = tmp_path / "results.txt"
    output.write_text(result_line("x"), encoding="utf-8")
    with pytest.raises(BatchError, match="is also the input"):
        ResultsFile(output, resume=True).open(inputs=open_input(str(tmp_path / "*.txt")).files())


# -- a file that holds other lines ---------------------------------------------------------


def test_resuming_into_a_file_of_other_lines_is_refused_naming_the_first_one(
    tmp_path: Path,
) -> None:
    items = tmp_path / "items.jsonl"
    write_items(items)
    notes = tmp_path / "notes.jsonl"
    text = result_line("id:0") + "my shopping list\n" + '{"milk": 2}\n'
    notes.write_text(text, encoding="utf-8")

    done = dpt_batch(items, notes, "--resume")

    assert done.returncode == 1, done.stderr
    assert "line 2 is not a result line" in done.stderr
    assert "'my shopping list'" in done.stderr
    assert "--force" in done.stderr
    assert notes.read_text(encoding="utf-8") == text


def test_force_resumes_into_such_a_file(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    write_items(items)
    notes = tmp_path / "out.jsonl"
    notes.write_text(result_line("id:0") + "stray line\n", encoding="utf-8")

    done = dpt_batch(items, notes, "--resume", "--force")

    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in notes.read_text(encoding="utf-8").splitlines()]
    assert sorted(line["id"] for line in lines) == ["id:0", "id:1", "id:2"]


def test_a_last_line_without_newline_that_is_not_a_cut_result_is_not_dropped(
    tmp_path: Path,
) -> None:
    output = tmp_path / "out.jsonl"
    output.write_text(result_line("a") + "hello", encoding="utf-8")
    with pytest.raises(BatchError, match=r"line 2 is not a result line \('hello'\)"):
        ResultsFile(output, resume=True).open()
    assert output.read_text(encoding="utf-8") == result_line("a") + "hello"


def test_a_fresh_run_into_a_file_of_other_lines_says_what_it_holds(tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    output.write_text("keep me\n", encoding="utf-8")
    with pytest.raises(BatchError, match=r"line 1 is not a result line \('keep me'\)"):
        ResultsFile(output).open()
    assert output.read_text(encoding="utf-8") == "keep me\n"


# -- links and modes ----------------------------------------------------------------------


def test_a_resumed_output_behind_a_link_stays_a_link_and_keeps_its_mode(tmp_path: Path) -> None:
    real = tmp_path / "store" / "results.jsonl"
    real.parent.mkdir()
    real.write_text(result_line("a") + result_line("b", "failed"), encoding="utf-8")
    real.chmod(0o640)
    link = tmp_path / "results.jsonl"
    link.symlink_to(real)

    results = ResultsFile(link, resume=True)
    assert results.open() == {"a"}
    results.write(ItemResult(id="b", item="b.txt", status="ok", answer="now"))
    results.close()

    assert link.is_symlink() and link.resolve() == real.resolve()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    lines = [json.loads(line) for line in real.read_text(encoding="utf-8").splitlines()]
    assert [(line["id"], line["status"]) for line in lines] == [("a", "ok"), ("b", "ok")]
    assert sorted(p.name for p in real.parent.iterdir()) == ["results.jsonl"]  # no leftovers


def test_a_rewritten_output_keeps_its_mode(tmp_path: Path) -> None:
    output = tmp_path / "results.jsonl"
    output.write_text(result_line("a") + result_line("b", "failed"), encoding="utf-8")
    output.chmod(0o664)
    results = ResultsFile(output, resume=True)
    results.open()
    results.close()
    assert stat.S_IMODE(output.stat().st_mode) == 0o664
    assert output.read_text(encoding="utf-8") == result_line("a")


def test_a_dangling_link_as_output_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "target.jsonl"
    elsewhere.parent.mkdir()
    link = tmp_path / "results.jsonl"
    link.symlink_to(elsewhere)
    items = tmp_path / "items.jsonl"
    write_items(items)

    done = dpt_batch(items, link)

    assert done.returncode == 1, done.stderr
    assert "is a symbolic link to" in done.stderr and "which does not exist" in done.stderr
    assert not elsewhere.exists()
    assert link.is_symlink()


def test_run_batch_applies_the_same_rules_to_its_output(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    before = write_items(items)
    agent = Agent(TestModel())
    try:
        with pytest.raises(BatchError, match="is also the input"):
            list(
                agent.run_batch_sync(
                    open_input(str(items)), "Hello {customer}", output=items, resume=True
                )
            )
        assert items.read_bytes() == before
        listed = tmp_path / "a.txt"
        listed.write_text("a", encoding="utf-8")
        with pytest.raises(BatchError, match="is also the input"):
            list(agent.run_batch_sync([str(listed)], "{path}", output=listed))
        assert listed.read_text(encoding="utf-8") == "a"
    finally:
        agent.close()
