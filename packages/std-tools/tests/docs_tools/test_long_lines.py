"""Text formats built to slow a parser down are read in linear time: Markdown with very long
lines of blanks (which quadratic patterns such as `\\s*\\|?\\s*` choke on), a CSV that
stalls the delimiter guess, HTML whose constructs never close."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from doc_processing_std_tools.config import get_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.errors import DocumentError
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
    ws = Workspace.from_settings(get_settings())
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
    ws = Workspace.from_settings(get_settings())
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
    overview = json.loads(
        api.get_file_overview(Workspace.from_settings(get_settings()), "quotes.csv")
    )
    assert time.monotonic() - started < 2
    assert overview["format"] == "csv"


def test_the_delimiter_is_guessed_from_the_first_lines(scratch: Path) -> None:
    rows = "".join(f"{n};name {n};{n * 2}\n" for n in range(2000))
    (scratch / "long.csv").write_text("id;name;double\n" + rows, encoding="utf-8")
    overview = json.loads(
        api.get_file_overview(Workspace.from_settings(get_settings()), "long.csv")
    )
    assert (overview["delimiter"], overview["column_count"], overview["row_count"]) == (
        "semicolon",
        3,
        2000,
    )


def test_html_with_constructs_that_never_close_is_read_quickly(scratch: Path) -> None:
    # Python's HTML parser rescans the rest of the page for each of these: seconds for
    # 200 KB, minutes for a few megabytes.
    page = "<html><body><h1>Title</h1><p>Text &amp; more</p>" + "<?" * 60_000 + "</" * 60_000
    (scratch / "crafted.html").write_text(page, encoding="utf-8")
    ws = Workspace.from_settings(get_settings())
    started = time.monotonic()
    overview = json.loads(api.get_file_overview(ws, "crafted.html"))
    assert time.monotonic() - started < 2
    assert overview["outline"][0]["title"] == "Title"
    assert "Text & more" in api.read_document(ws, "crafted.html", "1")


def test_malformed_html_declarations_are_a_clear_error(scratch: Path) -> None:
    (scratch / "broken.html").write_text("<html><body><![" * 20 + ">", encoding="utf-8")
    with pytest.raises(DocumentError, match=r"'broken.html' could not be read as HTML"):
        api.read_document(Workspace.from_settings(get_settings()), "broken.html")
