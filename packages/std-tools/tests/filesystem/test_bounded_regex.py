"""A caller's regular expression cannot freeze the server: it is matched in a child
process, and a pattern that backtracks catastrophically is stopped and refused."""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path

import pytest
from mcp import Client

from doc_processing_std_tools.documents import api
from doc_processing_std_tools.errors import InvalidArgumentError
from doc_processing_std_tools.filesystem import bounded_regex
from doc_processing_std_tools.filesystem import operations as ops
from doc_processing_std_tools.filesystem.bounded_regex import BoundedRegex
from doc_processing_std_tools.filesystem.operations import Workspace
from doc_processing_std_tools.filesystem.server import file_system_server

# Matched in this process, '(a+)+$' against this line takes about 15 s (2**27 ways to
# split the a's); under the bound it is stopped after a fraction of a second.
EVIL_PATTERN = r"(a+)+$"
EVIL_LINE = "a" * 27 + "!"


@pytest.fixture
def short_bound(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setattr(bounded_regex, "MATCH_SECONDS", 0.5)
    return 0.5


def test_matching_keeps_the_order_and_finds_what_re_finds() -> None:
    texts = ["alpha", "beta", "gamma", "ALPHA beta", ""]
    with BoundedRegex(r"^a|beta", ignore_case=False, what="pattern") as regex:
        assert list(regex.filter(texts, str)) == ["alpha", "beta", "ALPHA beta"]
    with BoundedRegex("alpha", ignore_case=True, what="pattern") as regex:
        assert list(regex.filter(iter(texts), str)) == ["alpha", "ALPHA beta"]


def test_many_texts_go_in_several_batches_without_loss() -> None:
    texts = [f"line {n}" for n in range(bounded_regex.BATCH_ITEMS * 2 + 7)]
    with BoundedRegex(r"7$", ignore_case=False, what="pattern") as regex:
        found = list(regex.filter(texts, str))
    assert found == [t for t in texts if t.endswith("7")]


def test_a_catastrophic_pattern_is_stopped_quickly(short_bound: float) -> None:
    started = time.monotonic()
    with (
        pytest.raises(InvalidArgumentError, match="backtracks catastrophically"),
        BoundedRegex(EVIL_PATTERN, ignore_case=False, what="pattern") as regex,
    ):
        list(regex.filter([EVIL_LINE], str))
    assert time.monotonic() - started < 5


def test_search_text_refuses_a_catastrophic_pattern_and_goes_on_serving(
    ws: Workspace, root: Path, short_bound: float
) -> None:
    (root / "notes.txt").write_text(f"fine line\n{EVIL_LINE}\n", encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match=r"took more than 0\.5 s"):
        ops.search_text(ws, EVIL_PATTERN)
    assert ops.search_text(ws, "fine") == "notes.txt:1: fine line"


def test_search_document_refuses_a_catastrophic_regex(
    ws: Workspace, root: Path, short_bound: float
) -> None:
    (root / "notes.md").write_text(f"# Notes\n\n{EVIL_LINE}\n", encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match="backtracks catastrophically"):
        api.search_document(ws, "notes.md", EVIL_PATTERN, regex=True)
    assert '"count": 1' in api.search_document(ws, "notes.md", "a{27}!", regex=True)


@pytest.mark.anyio
async def test_the_server_answers_other_calls_while_a_bad_pattern_runs(
    root: Path, short_bound: float
) -> None:
    (root / "notes.txt").write_text(f"{EVIL_LINE}\n", encoding="utf-8")
    ticks: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        async with Client(file_system_server) as client:
            refused = await client.call_tool("search_text", {"pattern": EVIL_PATTERN})
            read = await client.call_tool("read_file", {"path": "notes.txt"})
    finally:
        stop.set()
        ticker.join()
    assert refused.is_error
    assert "backtracks catastrophically" in str(refused.content[0])
    assert not read.is_error
    # The interpreter lock was never held for long: the ticker kept ticking.
    assert max(b - a for a, b in itertools.pairwise(ticks)) < 0.3


def test_find_files_refuses_a_glob_that_backtracks(
    ws: Workspace, root: Path, short_bound: float
) -> None:
    # Matched in this process, this glob takes over ten seconds on a 60-character name.
    (root / ("a" * 60)).write_text("x", encoding="utf-8")
    (root / "notes.md").write_text("x", encoding="utf-8")
    with pytest.raises(
        InvalidArgumentError, match=r"The glob pattern '\*a\*a.*took more than 0\.5 s on 2 paths"
    ):
        ops.find_files(ws, "*a*a*a*a*a*a*a*b")
    assert ops.find_files(ws, "*.md") == "notes.md"
    assert ops.find_files(ws, "*a*a*") == "a" * 60
