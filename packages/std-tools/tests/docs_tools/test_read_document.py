"""read_document: Markdown output, part selection, and cuts that say how to read on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from doc_processing_std_tools.config import get_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.errors import InvalidArgumentError
from doc_processing_std_tools.filesystem.operations import Workspace

from .samples import write_book_xlsx, write_long_pdf


def test_pdf_pages_are_read_under_page_headings(ws: Workspace) -> None:
    text = api.read_document(ws, "report.pdf")
    assert text.startswith("## Page 1\n\nQuarterly report\nRevenue grew in the third quarter.")
    assert "## Page 3\n\nClosing remarks: total due 17.00 EUR" in text


@pytest.mark.parametrize(
    ("pages", "expected"),
    [("2", [2]), ("2-3", [2, 3]), ("3-", [3]), ("3,1", [3, 1]), ("1-2,2", [1, 2])],
)
def test_pdf_page_selection(ws: Workspace, pages: str, expected: list[int]) -> None:
    text = api.read_document(ws, "report.pdf", pages)
    assert [int(n) for n in re.findall(r"^## Page (\d+)$", text, re.MULTILINE)] == expected


@pytest.mark.parametrize(
    ("pages", "message"),
    [
        ("4", "the document has 3 pages"),
        ("0", "start at 1"),
        ("3-2", "ends before it starts"),
        ("first", "not a page number"),
    ],
)
def test_bad_page_selections_are_explained(ws: Workspace, pages: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        api.read_document(ws, "report.pdf", pages)


def test_a_scanned_page_is_never_returned_as_empty_text(ws: Workspace) -> None:
    text = api.read_document(ws, "scanned.pdf")
    assert "page 1 has no text layer" in text and "OCR" in text


def test_a_long_pdf_is_cut_with_the_page_to_read_on_from(scratch: Path) -> None:
    write_long_pdf(scratch / "long.pdf", pages=40, lines_per_page=10)
    ws = Workspace.from_settings(get_settings())
    text = api.read_document(ws, "long.pdf")
    assert len(text) <= ws.output_limit
    restart = re.search(r'pages="(\d+)-"', text)
    assert restart is not None
    page = int(restart.group(1))
    last_complete = max(int(n) for n in re.findall(r"Page (\d+) line 10:", text))
    assert page <= last_complete + 1
    assert api.read_document(ws, "long.pdf", f"{page}-").startswith(f"## Page {page}\n")


def test_docx_reads_as_markdown_with_headings_lists_and_tables(ws: Workspace) -> None:
    text = api.read_document(ws, "handbook.docx")
    assert text.startswith("# Supplier handbook\n\nHow we pay our suppliers.")
    assert "- Send invoices as PDF" in text
    assert "## Price list\n\n| Item | Qty | Price |\n|---|---|---|\n| Widget | 2 | 3.50 |" in text
    assert api.read_document(ws, "handbook.docx", "2").startswith("# Payment terms")


def test_xlsx_sheets_are_chosen_by_name_number_and_rows(ws: Workspace) -> None:
    both = api.read_document(ws, "book.xlsx")
    assert "## Sheet 1: Sales" in both and "## Sheet 2: Notes" in both
    notes = api.read_document(ws, "book.xlsx", "Notes")
    assert notes.startswith("## Sheet 2: Notes\n\n| Topic | Note |")
    assert api.read_document(ws, "book.xlsx", "notes") == notes
    assert api.read_document(ws, "book.xlsx", "2") == notes
    rows = api.read_document(ws, "book.xlsx", "Sales!3-3")
    assert "| Region | Amount | Date |" in rows
    assert "| South | 101 | 2026-01-02 |" in rows
    assert "North" not in rows and "East" not in rows
    with pytest.raises(InvalidArgumentError, match="the sheets are 'Sales', 'Notes'"):
        api.read_document(ws, "book.xlsx", "Budget")


def test_a_long_sheet_is_cut_with_the_row_to_read_on_from(scratch: Path) -> None:
    write_book_xlsx(scratch / "long.xlsx", sales_rows=2000)
    ws = Workspace.from_settings(get_settings())
    text = api.read_document(ws, "long.xlsx")
    restart = re.search(r'pages="(1!\d+-)"', text)
    assert restart is not None
    row = int(restart.group(1)[2:-1])
    shown_amounts = [int(a) for a in re.findall(r"^\| \w+ \| (\d+) \|", text, re.MULTILINE)]
    assert row - 2 <= max(shown_amounts) - 100 + 1
    more = api.read_document(ws, "long.xlsx", restart.group(1))
    assert "| Region | Amount | Date |" in more
    first_amount = int(re.findall(r"^\| \w+ \| (\d+) \|", more, re.MULTILINE)[0])
    assert first_amount == 100 + row - 2


def test_csv_rows_are_selected_after_the_header(ws: Workspace) -> None:
    text = api.read_document(ws, "people.csv", "2")
    assert text == "| name | city | amount |\n|---|---|---|\n| Bob | Oslo | 7 |\n"


def test_html_reads_visible_text_only(ws: Workspace) -> None:
    text = api.read_document(ws, "policy.html")
    assert "# Shipping policy" in text
    assert "We ship worldwide within [five days](https://example.org/days)." in text
    assert "| Europe | 9 \\| EUR |" in text
    assert "```\ncode   keeps   spacing\n```" in text
    assert "do not show" not in text and "color: red" not in text


def test_markdown_sections_are_selected_by_outline_number(ws: Workspace) -> None:
    assert api.read_document(ws, "notes.md", "3") == (
        "## Fixes\n\n| Bug | Status |\n|---|---|\n| Crash on empty file | fixed |\n\n"
    )
    assert "# not a heading" in api.read_document(ws, "notes.md", "2")


def test_text_lines_are_selected(ws: Workspace) -> None:
    assert api.read_document(ws, "plain.txt", "2-3") == "beta gamma\n\n"
