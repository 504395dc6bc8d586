"""Each tool call opens a PDF or XLSX once: the page or sheet count that checks `pages`
comes from the same open document that is then read or searched.

The opens are counted at the readers' entry points (pypdfium2.PdfDocument and the XLSX
reader's Workbook), which still do the real work.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pypdfium2  # type: ignore[import-untyped]
import pytest

from doc_processing_std_tools.config import get_settings
from doc_processing_std_tools.documents import api, sheets
from doc_processing_std_tools.errors import (
    DocumentError,
    EncryptedDocumentError,
    InvalidArgumentError,
)
from doc_processing_std_tools.filesystem.operations import Workspace

from .samples import write_book_xlsx, write_long_pdf


def count_calls(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[object]:
    """Replace `module.name` by a wrapper that records each call and delegates to it."""
    real = getattr(module, name)
    calls: list[object] = []

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(args[0] if args else kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


@pytest.fixture
def pdf_opens(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    return count_calls(monkeypatch, pypdfium2, "PdfDocument")


@pytest.fixture
def xlsx_opens(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    return count_calls(monkeypatch, sheets, "Workbook")


CALLS: dict[str, Callable[[Workspace, str, str], str]] = {
    "read_document": api.read_document,
    "search_document": lambda ws, path, pages: api.search_document(ws, path, "line", pages),
    "search_document regex": lambda ws, path, pages: api.search_document(
        ws, path, r"line \d", pages, regex=True
    ),
    "extract_tables": api.extract_tables,
    "get_file_overview": lambda ws, path, _pages: api.get_file_overview(ws, path),
}


@pytest.mark.parametrize("pages", ["", "3-5"])
@pytest.mark.parametrize("tool", sorted(CALLS))
def test_a_multi_page_pdf_is_opened_once_per_call(
    scratch: Path, pdf_opens: list[object], tool: str, pages: str
) -> None:
    write_long_pdf(scratch / "long.pdf", pages=12, lines_per_page=5)
    text = CALLS[tool](Workspace.from_settings(get_settings()), "long.pdf", pages)
    assert "line" in text or "No tables" in text
    assert len(pdf_opens) == 1


@pytest.mark.parametrize("pages", ["", "Notes", "1!2-3"])
@pytest.mark.parametrize("tool", sorted(CALLS))
def test_an_xlsx_is_opened_once_per_call(
    scratch: Path, xlsx_opens: list[object], tool: str, pages: str
) -> None:
    write_book_xlsx(scratch / "book.xlsx", sales_rows=20)
    CALLS[tool](Workspace.from_settings(get_settings()), "book.xlsx", pages)
    assert len(xlsx_opens) == 1


def test_the_one_open_still_reads_the_selected_pages(
    ws: Workspace, pdf_opens: list[object]
) -> None:
    text = api.read_document(ws, "report.pdf", "3")
    assert text.startswith("## Page 3\n\nClosing remarks: total due 17.00 EUR")
    found = api.search_document(ws, "report.pdf", "quarter", "1-2")
    assert '"page": 1' in found and '"count": 2' in found
    assert len(pdf_opens) == 2


@pytest.mark.parametrize("tool", ["read_document", "search_document"])
def test_a_bad_range_is_refused_after_the_one_open(
    ws: Workspace, pdf_opens: list[object], xlsx_opens: list[object], tool: str
) -> None:
    with pytest.raises(InvalidArgumentError, match="the document has 3 pages"):
        CALLS[tool](ws, "report.pdf", "4")
    with pytest.raises(InvalidArgumentError, match="There is no sheet 'Costs'"):
        CALLS[tool](ws, "book.xlsx", "Costs")
    assert (len(pdf_opens), len(xlsx_opens)) == (1, 1)


@pytest.mark.parametrize("tool", ["read_document", "search_document", "extract_tables"])
@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        ("encrypted.pdf", EncryptedDocumentError, "password-protected"),
        ("corrupt.pdf", DocumentError, "damaged or incomplete"),
        ("nopages.pdf", DocumentError, "without any page"),
    ],
)
def test_an_unreadable_pdf_is_named_before_a_bad_range(
    ws: Workspace, tool: str, name: str, error: type[DocumentError], message: str
) -> None:
    with pytest.raises(error, match=message):
        CALLS[tool](ws, name, "99")
