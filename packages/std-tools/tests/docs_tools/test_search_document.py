"""search_document: matches with their place in each format, bounded and explained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from doc_processing_std_tools.config import get_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.errors import InvalidArgumentError
from doc_processing_std_tools.filesystem.operations import Workspace


def search(ws: Workspace, name: str, query: str, **options: object) -> dict[str, object]:
    result = json.loads(api.search_document(ws, name, query, **options))  # type: ignore[arg-type]
    assert isinstance(result, dict)
    return result


def test_pdf_matches_name_page_and_line(ws: Workspace) -> None:
    result = search(ws, "report.pdf", "total due")
    assert result["matches"] == [
        {"page": 3, "line": 1, "text": "Closing remarks: total due 17.00 EUR"}
    ]
    assert result["count"] == 1


def test_xlsx_matches_name_sheet_and_cell(ws: Workspace) -> None:
    result = search(ws, "book.xlsx", "south")
    assert result["matches"] == [
        {"sheet": "Sales", "cell": "A3", "text": "South"},
        {"sheet": "Notes", "cell": "B2", "text": "South numbers need a second look"},
    ]
    only_notes = search(ws, "book.xlsx", "south", pages="Notes")
    assert only_notes["count"] == 1


def test_csv_matches_name_row_and_column(ws: Workspace) -> None:
    assert search(ws, "people.csv", "oslo")["matches"] == [
        {"row": 2, "column": "city", "text": "Oslo"}
    ]


@pytest.mark.parametrize(
    ("name", "query", "expected"),
    [
        (
            "handbook.docx",
            "30 days",
            {"section": 2, "heading": "Payment terms", "text": "Invoices are paid within 30 days."},
        ),
        ("notes.md", "empty file", {"section": 3, "heading": "Fixes"}),
        ("policy.html", "insured", {"section": 3, "heading": "Rates", "text": "- Insured"}),
        ("plain.txt", "GAMMA", {"line": 2, "text": "beta gamma"}),
    ],
)
def test_flowing_documents_name_the_heading(
    ws: Workspace, name: str, query: str, expected: dict[str, object]
) -> None:
    matches = search(ws, name, query)["matches"]
    assert isinstance(matches, list) and len(matches) == 1
    assert expected.items() <= matches[0].items()


def test_case_and_regular_expressions(ws: Workspace) -> None:
    assert search(ws, "plain.txt", "GAMMA", ignore_case=False)["count"] == 0
    assert search(ws, "plain.txt", r"^(alpha|delta)$", regex=True)["count"] == 2
    with pytest.raises(InvalidArgumentError, match="not a valid regular expression"):
        search(ws, "plain.txt", "(", regex=True)
    with pytest.raises(InvalidArgumentError, match="query is empty"):
        search(ws, "plain.txt", "  ")


def test_results_stop_at_max_results_and_say_so(ws: Workspace) -> None:
    result = search(ws, "report.pdf", "e", max_results=2)
    assert result["count"] == 2
    assert "only the first 2" in str(result["stopped"])
    with pytest.raises(InvalidArgumentError, match="between 1 and 500"):
        search(ws, "report.pdf", "e", max_results=501)


def test_scanned_pages_are_reported_in_a_search(ws: Workspace) -> None:
    result = search(ws, "scanned.pdf", "invoice")
    assert result["count"] == 0
    assert result["pages_without_text"] == [1]
    assert "OCR" in str(result["note"])


def test_matches_over_the_output_limit_are_cut_with_the_shared_truncated_note(
    scratch: Path,
) -> None:
    """The answer is cut by the same JSON fitter as every other JSON answer: valid JSON
    within the limit, the matches cut from the end, and a ``truncated`` note that names
    the cut and how to see the rest (no format-specific ``matches_cut`` field)."""
    (scratch / "log.txt").write_text("".join(f"line {n} has the word needle\n" for n in range(500)))
    ws = Workspace.from_settings(get_settings())
    text = api.search_document(ws, "log.txt", "needle", max_results=500)
    assert len(text) <= ws.output_limit
    result = json.loads(text)
    assert result["count"] == 500 and 0 < len(result["matches"]) < 500
    assert result["matches"][0] == {"line": 1, "text": "line 0 has the word needle"}
    assert "matches keeps" in result["truncated"] and "max_results" in result["truncated"]
    assert not any(key.endswith("_cut") for key in result)
