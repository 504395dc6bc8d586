"""Markdown is parsed in time linear in the length of its lines: a document with very long
lines of blanks (which quadratic patterns such as `\\s*\\|?\\s*` choke on) is read at once."""

from __future__ import annotations

import json
import time
from pathlib import Path

from doc_processing_std_tools.docs import api
from doc_processing_std_tools.filesystem.operations import Workspace

BLANKS = " " * 60_000


def test_long_blank_lines_are_parsed_quickly(scratch: Path) -> None:
    text = (
        "---\n"
        f"title{BLANKS}:{BLANKS}x{BLANKS}!\n"
        "---\n"
        f"#{BLANKS}#{BLANKS}x\n"
        "| a | b |\n"
        f"|{BLANKS}x\n"
        f"{BLANKS}x\n"
        f"|--{BLANKS}x\n"
    )
    (scratch / "blanks.md").write_text(text, encoding="utf-8")
    ws = Workspace.from_settings()
    started = time.monotonic()
    overview = json.loads(api.get_file_overview(ws, "blanks.md"))
    api.read_document(ws, "blanks.md")
    api.search_document(ws, "blanks.md", "x")
    # Quadratic line tests take tens of seconds on these lines.
    assert time.monotonic() - started < 2
    assert overview["format"] == "markdown"


def test_markdown_headings_tables_and_front_matter(scratch: Path) -> None:
    (scratch / "doc.md").write_text(
        "---\ntitle: Price list\nAuthor:\t\ndate : 2026-03-01\n---\n"
        "# Prices #\n\nIntro.\n\n"
        "| Item | Price |\n|:---|---:|\n| Widget | 3.50 |\n\n"
        "## #\n\n#Not a heading\n\n####### Not one either\n",
        encoding="utf-8",
    )
    ws = Workspace.from_settings()
    overview = json.loads(api.get_file_overview(ws, "doc.md"))
    assert overview["metadata"] == {"title": "Price list", "date": "2026-03-01"}
    # "## #" is an empty heading (the closing "#" is no text), so it adds no outline entry.
    assert [(o["level"], o["title"]) for o in overview["outline"]] == [(1, "Prices")]
    assert "| Widget | 3.50 |" in api.extract_tables(ws, "doc.md")
    text = api.read_document(ws, "doc.md")
    assert "#Not a heading" in text and "####### Not one either" in text


def test_a_csv_built_to_slow_the_delimiter_guess_is_read_quickly(scratch: Path) -> None:
    # The standard library's delimiter sniffer needs about half a minute on 64 KB of this.
    (scratch / "quotes.csv").write_text(',"' * 40_000 + "\n", encoding="utf-8")
    started = time.monotonic()
    overview = json.loads(api.get_file_overview(Workspace.from_settings(), "quotes.csv"))
    assert time.monotonic() - started < 2
    assert overview["format"] == "csv"


def test_the_delimiter_is_guessed_from_the_first_lines(scratch: Path) -> None:
    rows = "".join(f"{n};name {n};{n * 2}\n" for n in range(2000))
    (scratch / "long.csv").write_text("id;name;double\n" + rows, encoding="utf-8")
    overview = json.loads(api.get_file_overview(Workspace.from_settings(), "long.csv"))
    assert (overview["delimiter"], overview["column_count"], overview["row_count"]) == (
        "semicolon",
        3,
        2000,
    )
