"""get_file_overview on every format: counts, metadata, outline, preview, bounded work."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import openpyxl
import pytest
from fpdf import FPDF

from doc_processing_std_tools.config import get_settings
from doc_processing_std_tools.documents import api, pdf
from doc_processing_std_tools.errors import DocumentError
from doc_processing_std_tools.filesystem.operations import Workspace

from .samples import write_book_xlsx, write_long_pdf, write_with_cut_member


def overview(ws: Workspace, name: str) -> dict[str, object]:
    result = json.loads(api.get_file_overview(ws, name))
    assert isinstance(result, dict)
    return result


def test_pdf_overview_has_pages_metadata_bookmarks_and_preview(ws: Workspace) -> None:
    result = overview(ws, "report.pdf")
    assert result["format"] == "pdf"
    assert result["page_count"] == 3
    assert result["metadata"] == {
        "title": "Quarterly report",
        "author": "Ada Finance",
        "created": "2026-03-01T09:30:00",
    }
    assert result["outline"] == [
        {"level": 1, "title": "Summary", "page": 1},
        {"level": 1, "title": "Invoice lines", "page": 2},
    ]
    assert result["text_layer"] == "present"
    assert str(result["preview"]).startswith("Quarterly report\nRevenue grew")


def test_scanned_pdf_is_reported_as_having_no_text_layer(ws: Workspace) -> None:
    result = overview(ws, "scanned.pdf")
    assert result["page_count"] == 1
    assert "scanned" in str(result["text_layer"]) and "OCR" in str(result["text_layer"])
    assert result["preview"] == ""


def test_pdf_overview_looks_only_at_the_first_pages(scratch: Path) -> None:
    write_long_pdf(scratch / "long.pdf", pages=45, lines_per_page=3)
    result = overview(Workspace.from_settings(get_settings()), "long.pdf")
    assert result["page_count"] == 45
    assert result["pages_examined"] == pdf.OVERVIEW_PAGES
    assert result["outline_kind"] == "first line of each page"
    outline = result["outline"]
    assert isinstance(outline, list) and len(outline) == pdf.OVERVIEW_PAGES
    assert outline[-1] == {
        "page": pdf.OVERVIEW_PAGES,
        "first_line": f"Page {pdf.OVERVIEW_PAGES} line 1: lorem ipsum dolor sit amet",
    }


def test_docx_overview_lists_headings_tables_and_properties(ws: Workspace) -> None:
    result = overview(ws, "handbook.docx")
    assert result["format"] == "docx"
    assert result["section_count"] == 3
    assert result["table_count"] == 1
    metadata = result["metadata"]
    assert isinstance(metadata, dict)
    assert (metadata["title"], metadata["author"]) == ("Supplier handbook", "Procurement")
    assert [(o["level"], o["title"]) for o in result["outline"]] == [  # type: ignore[attr-defined]
        (1, "Supplier handbook"),
        (1, "Payment terms"),
        (2, "Price list"),
    ]
    assert "How we pay our suppliers." in str(result["preview"])


def test_xlsx_overview_names_sheets_with_used_ranges(ws: Workspace) -> None:
    result = overview(ws, "book.xlsx")
    assert result["sheet_count"] == 2
    assert result["outline"] == [
        {"sheet": 1, "name": "Sales", "used_range": "A1:C4", "rows": 4, "columns": 3},
        {"sheet": 2, "name": "Notes", "used_range": "A1:B2", "rows": 2, "columns": 2},
    ]
    assert result["metadata"]["title"] == "Sales book"  # type: ignore[index]
    assert str(result["preview"]).splitlines()[2] == "| North | 100 | 2026-01-01 |"


def test_xlsx_overview_of_a_long_sheet_shows_only_its_first_rows(scratch: Path) -> None:
    write_book_xlsx(scratch / "long.xlsx", sales_rows=3000)
    result = overview(Workspace.from_settings(get_settings()), "long.xlsx")
    assert result["outline"][0]["used_range"] == "A1:C3001"  # type: ignore[index]
    assert len(str(result["preview"]).splitlines()) == 2 + 4


def test_csv_overview_detects_the_delimiter(ws: Workspace) -> None:
    result = overview(ws, "people.csv")
    assert (result["row_count"], result["column_count"]) == (3, 3)
    assert result["columns"] == ["name", "city", "amount"]
    assert result["delimiter"] == "semicolon"
    assert "| Ada | Zürich | 12.5 |" in str(result["preview"])


def test_html_overview_has_title_author_and_headings(ws: Workspace) -> None:
    result = overview(ws, "policy.html")
    assert result["metadata"] == {
        "language": "en",
        "title": "Shipping policy",
        "author": "Logistics team",
    }
    titles = [o["title"] for o in result["outline"]]  # type: ignore[attr-defined]
    assert titles == ["(text before the first heading)", "Shipping policy", "Rates"]
    assert "do not show" not in json.dumps(result)


def test_markdown_overview_skips_code_and_reads_front_matter(ws: Workspace) -> None:
    result = overview(ws, "notes.md")
    assert result["metadata"] == {"title": "Release notes", "author": "Dev team"}
    titles = [o["title"] for o in result["outline"]]  # type: ignore[attr-defined]
    assert titles == ["(text before the first heading)", "Version 2", "Fixes", "Version 1"]
    assert result["table_count"] == 1


def test_text_overview_counts_lines_and_words(ws: Workspace) -> None:
    result = overview(ws, "plain.txt")
    assert (result["line_count"], result["word_count"]) == (4, 4)
    assert result["encoding"] == "utf-8"


def test_windows_1252_text_is_decoded(scratch: Path) -> None:
    (scratch / "legacy.txt").write_bytes("Prix: 12 € à payer".encode("cp1252"))
    result = overview(Workspace.from_settings(get_settings()), "legacy.txt")
    assert result["encoding"] == "cp1252"
    assert result["preview"] == "Prix: 12 € à payer"


def test_xlsx_overview_previews_a_sheet_that_does_not_record_its_size(scratch: Path) -> None:
    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("Stream")
    for index in range(2000):
        sheet.append([index, f"row {index}"])
    book.save(str(scratch / "stream.xlsx"))
    result = overview(Workspace.from_settings(get_settings()), "stream.xlsx")
    assert result["outline"] == [
        {"sheet": 1, "name": "Stream", "used_range": "not recorded in the file"}
    ]
    assert str(result["preview"]).splitlines()[2:] == [
        "| 1 | row 1 |",
        "| 2 | row 2 |",
        "| 3 | row 3 |",
        "| 4 | row 4 |",
    ]
    first_rows = api.read_document(Workspace.from_settings(get_settings()), "stream.xlsx", "1!1-3")
    assert "| 1 | row 1 |" in first_rows and "row 3" not in first_rows


def test_pdf_overview_never_looks_past_its_first_pages(scratch: Path) -> None:
    # Text on the first OVERVIEW_PAGES pages, then blank pages: an overview that read
    # every page would report the blank ones as pages without a text layer.
    document = FPDF()
    document.set_font("helvetica", size=12)
    for number in range(1, pdf.OVERVIEW_PAGES + 1):
        document.add_page()
        document.cell(text=f"Text page {number}")
    for _ in range(30):
        document.add_page()
    document.output(str(scratch / "mostly-blank.pdf"))
    result = overview(Workspace.from_settings(get_settings()), "mostly-blank.pdf")
    assert result["page_count"] == pdf.OVERVIEW_PAGES + 30
    assert result["text_layer"] == "present"
    assert "pages_without_text" not in result
    # Reading the whole document does find the blank pages.
    whole = api.read_document(Workspace.from_settings(get_settings()), "mostly-blank.pdf", "21-22")
    assert "[page 21 has no text]" in whole


def test_xlsx_overview_does_not_read_the_sheet_to_its_end(scratch: Path) -> None:
    # The sheet's XML is cut in half: only a reader that goes past its first rows fails.
    write_book_xlsx(scratch / "long.xlsx", sales_rows=3000)
    write_with_cut_member(scratch / "long.xlsx", scratch / "half.xlsx", "xl/worksheets/sheet1.xml")
    ws = Workspace.from_settings(get_settings())
    result = overview(ws, "half.xlsx")
    assert result["outline"][0]["used_range"] == "A1:C3001"  # type: ignore[index]
    assert "| North | 100 | 2026-01-01 |" in str(result["preview"])
    with pytest.raises(DocumentError, match="damaged"):
        api.search_document(ws, "half.xlsx", "no such value", pages="Sales")


@pytest.mark.parametrize(
    "name",
    [
        "report.pdf",
        "handbook.docx",
        "book.xlsx",
        "people.csv",
        "policy.html",
        "notes.md",
        "plain.txt",
    ],
)
def test_every_overview_dates_the_file(ws: Workspace, library: Path, name: str) -> None:
    result = overview(ws, name)
    modified = dt.datetime.fromisoformat(str(result["file_modified"]))
    expected = dt.datetime.fromtimestamp(int((library / name).stat().st_mtime), dt.UTC)
    assert modified == expected


def test_an_overview_over_the_output_limit_stays_json_and_says_what_was_cut(
    scratch: Path,
) -> None:
    """A Markdown file with thousands of headings: the outline is cut from the end by the
    shared JSON fitter, and the ``truncated`` note says so."""
    (scratch / "many.md").write_text(
        "".join(f"# Heading {n}\n\nText {n}.\n\n" for n in range(3000))
    )
    ws = Workspace.from_settings(get_settings())
    text = api.get_file_overview(ws, "many.md")
    assert len(text) <= ws.output_limit
    result = json.loads(text)
    assert result["format"] == "markdown" and result["section_count"] == 3000
    assert 0 < len(result["outline"]) < 3000
    assert "outline keeps" in result["truncated"] and "read_document" in result["truncated"]
    assert not any(key.endswith("_cut") for key in result)
