"""Progress on a real pseudo-terminal (a rich bar) and on a pipe-like stream (plain
lines), and the summary's counts."""

from __future__ import annotations

import io
import os
import select

from doc_processing_toolkit.batch import (
    BatchSummary,
    ItemResult,
    PlainProgress,
    RichProgress,
    make_progress,
)
from doc_processing_toolkit.batch.items import BatchItem
from doc_processing_toolkit.errors import ModelAPIError
from doc_processing_toolkit.messages import Usage


def results() -> list[ItemResult]:
    ok = ItemResult(id="a", item="a.pdf", status="ok", answer="x", usage=Usage(100, 10, 2))
    limited = ItemResult.failed(
        BatchItem.of("b.pdf"), ModelAPIError("slow down", provider="openai", status_code=429)
    )
    done = ItemResult(id="c", item="c.pdf", status="skipped", cause="already-done")
    return [ok, ok, limited, done]


def test_plain_lines_when_the_stream_is_not_a_terminal() -> None:
    stream = io.StringIO()
    progress = make_progress(stream, 4, interval=0.0)
    assert isinstance(progress, PlainProgress)
    for result in results():
        progress.advance(result)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("batch: 1/4 done, 0 failed")
    assert lines[-1].startswith("batch: 4/4 done, 1 failed")
    assert "items/s" in lines[-1]


def test_a_live_bar_on_a_terminal() -> None:
    main, secondary = os.openpty()
    with open(secondary, "w", encoding="utf-8") as terminal:
        progress = make_progress(terminal, 4)
        assert isinstance(progress, RichProgress)
        for result in results():
            progress.advance(result)
        progress.close()
        terminal.flush()
    shown = b""
    while select.select([main], [], [], 0.2)[0]:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    text = shown.decode("utf-8", "replace")
    assert "4/4" in text and "1 failed" in text and "items/s" in text


def test_the_summary_counts_statuses_causes_and_usage() -> None:
    summary = BatchSummary()
    for result in results():
        summary.add(result)
    summary.finish()
    text = summary.format()
    assert "4 items: 2 ok, 1 failed, 0 skipped, 1 already done" in text
    assert "usage: 4 requests, 200 input + 20 output tokens" in text
    assert "1  ModelAPIError 429" in text
