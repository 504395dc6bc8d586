"""extract_tables: every format's tables as Markdown or CSV, labelled with their place."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from fpdf import FPDF

from doc_processing_std_tools.config import get_settings
from doc_processing_std_tools.documents import api, pdf
from doc_processing_std_tools.errors import InvalidArgumentError
from doc_processing_std_tools.filesystem.operations import Workspace

from .samples import INVOICE_ROWS, write_long_pdf

INVOICE_MARKDOWN = (
    "| Item | Qty | Price |\n|---|---|---|\n| Widget | 2 | 3.50 |\n| Gadget | 1 | 10.00 |"
)


#: Where fpdf2 draws the invoice table of report.pdf: page 2, 28.3 pt from the left.
INVOICE_LABEL = "page 2, ruled, confidence 0.95, box 28.4 40.4 566.9 112.4"


def test_pdf_table_as_markdown_with_its_page_box_and_method(ws: Workspace) -> None:
    text = api.extract_tables(ws, "report.pdf")
    assert text == f"### Table 1 ({INVOICE_LABEL})\n\n{INVOICE_MARKDOWN}\n\n"


def test_pdf_table_as_csv(ws: Workspace) -> None:
    text = api.extract_tables(ws, "report.pdf", format="csv")
    label, body = text.split("\n", 1)
    assert label == f"Table 1 ({INVOICE_LABEL}):"
    assert [tuple(r) for r in csv.reader(io.StringIO(body.strip()))] == INVOICE_ROWS


def test_pdf_table_as_json(ws: Workspace) -> None:
    answer = json.loads(api.extract_tables(ws, "report.pdf", format="json"))
    assert answer == {
        "path": "report.pdf",
        "count": 1,
        "tables": [
            {
                "table": 1,
                "where": "page 2",
                "page": 2,
                "box": [28.4, 40.4, 566.9, 112.4],
                "method": "ruled",
                "confidence": 0.95,
                "rows": [list(row) for row in INVOICE_ROWS],
                "spans": [],
            }
        ],
    }


def test_sheets_have_no_json_form_and_say_what_to_use(ws: Workspace) -> None:
    with pytest.raises(InvalidArgumentError, match="use format='csv'"):
        api.extract_tables(ws, "book.xlsx", format="json")
    with pytest.raises(InvalidArgumentError, match="use format='csv'"):
        api.extract_tables(ws, "people.csv", format="json")


def test_tables_of_a_docx_in_json_name_their_section(ws: Workspace) -> None:
    answer = json.loads(api.extract_tables(ws, "handbook.docx", format="json"))
    assert answer["tables"][0]["where"] == "section 3 (Price list)"
    assert answer["tables"][0]["rows"][0] == ["Item", "Qty", "Price"]


def test_pages_without_tables_say_so(ws: Workspace) -> None:
    assert api.extract_tables(ws, "report.pdf", "1") == (
        "No tables were found in report.pdf in the selected part (1)."
    )
    assert api.extract_tables(ws, "plain.txt") == "plain.txt is plain text, which has no tables."


@pytest.mark.parametrize(
    ("name", "where"),
    [("handbook.docx", "section 3 (Price list)"), ("notes.md", "section 3 (Fixes)")],
)
def test_tables_of_flowing_documents_name_their_section(
    ws: Workspace, name: str, where: str
) -> None:
    assert api.extract_tables(ws, name).startswith(f"### Table 1 ({where})\n\n| ")


def test_docx_table_content(ws: Workspace) -> None:
    assert INVOICE_MARKDOWN in api.extract_tables(ws, "handbook.docx")


def test_html_table_keeps_escaped_pipes_in_markdown_and_raw_in_csv(ws: Workspace) -> None:
    assert "| Europe | 9 \\| EUR |" in api.extract_tables(ws, "policy.html")
    text = api.extract_tables(ws, "policy.html", format="csv")
    assert "Europe,9 | EUR\n" in text


def test_each_sheet_is_a_table(ws: Workspace) -> None:
    text = api.extract_tables(ws, "book.xlsx", "Notes", format="csv")
    assert text == "## Sheet 2: Notes\n\nTopic,Note\nAudit,South numbers need a second look\n\n"


def test_a_csv_file_is_one_table(ws: Workspace) -> None:
    text = api.extract_tables(ws, "people.csv", format="csv")
    assert text == "name,city,amount\nAda,Zürich,12.5\nBob,Oslo,7\nCleo,Lima,3\n"


def test_an_unknown_output_format_is_refused(ws: Workspace) -> None:
    with pytest.raises(InvalidArgumentError, match="'markdown', 'csv' or 'json'"):
        api.extract_tables(ws, "report.pdf", format="xml")


def test_a_long_pdf_is_searched_for_tables_a_window_at_a_time(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pdf, "PDF_TABLE_PAGES", 3)
    write_long_pdf(scratch / "long.pdf", pages=5, lines_per_page=2)
    ws = Workspace.from_settings(get_settings())
    assert api.extract_tables(ws, "long.pdf") == (
        "No tables were found in long.pdf.\n\n"
        '[looked for tables on pages 1-3 of 5; call extract_tables with pages="4-" for the rest]'
    )
    assert api.extract_tables(ws, "long.pdf", "4-") == (
        "No tables were found in long.pdf in the selected part (4-)."
    )


def test_a_pdf_only_pdfium_can_repair_gives_text_and_tables(scratch: Path) -> None:
    # Without its cross-reference table and trailer, PDFium rebuilds the file; tables are
    # found through PDFium too.
    document = FPDF()
    document.set_font("helvetica", size=12)
    document.add_page()
    document.cell(text="Hello tables", new_x="LMARGIN", new_y="NEXT")
    with document.table() as table:
        for values in INVOICE_ROWS:
            row = table.row()
            for value in values:
                row.cell(value)
    data = bytes(document.output())
    (scratch / "noxref.pdf").write_bytes(data[: data.rindex(b"xref")])
    ws = Workspace.from_settings(get_settings())
    assert "Hello tables" in api.read_document(ws, "noxref.pdf")
    assert INVOICE_MARKDOWN in api.extract_tables(ws, "noxref.pdf")
