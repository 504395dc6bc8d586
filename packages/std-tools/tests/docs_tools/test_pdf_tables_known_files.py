"""extract_tables on published PDFs whose tables are known: the test files of the camelot
project (MIT licence), with the tables its tests expect.

They live in ../shared/tables/camelot next to the repository and are absent from a fresh
clone, so these tests skip when the folder is missing. Only facts a reader of each PDF can
check are asserted: how many tables a page holds, and whole rows of them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from doc_processing_std_tools.config import get_settings, load_settings, reset_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.filesystem.operations import Workspace

FILES = Path(__file__).resolve().parents[4] / "../shared/tables/camelot/tests/files"

pytestmark = pytest.mark.skipif(not FILES.is_dir(), reason=f"no folder {FILES}")


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    """A workspace holding copies of the PDFs the tests read."""
    for name in (
        "health.pdf",
        "multiple_tables.pdf",
        "anticlockwise_table_2.pdf",
        "twotables_2.pdf",
        "empty.pdf",
    ):
        shutil.copy(FILES / name, tmp_path / name)
    reset_settings(
        load_settings(
            {"DPTTOOLS_WORKSPACE_DIR": str(tmp_path), "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT": "500000"}
        )
    )
    yield Workspace.from_settings(get_settings())
    reset_settings()


def _tables(ws: Workspace, name: str) -> list[dict[str, object]]:
    answer = json.loads(api.extract_tables(ws, name, format="json"))
    tables = answer["tables"]
    assert isinstance(tables, list)
    return tables


def _row(table: dict[str, object], first: str) -> list[str]:
    rows = table["rows"]
    assert isinstance(rows, list)
    return next(row for row in rows if row[0] == first)


def test_a_table_with_rules_between_rows_keeps_each_figure_in_its_cell(ws: Workspace) -> None:
    (table,) = _tables(ws, "health.pdf")
    assert [
        "Andhra Pradesh",
        "47,824,589",
        "9,967,837",
        "1,275,000",
        "15,000",
        "59,082,426",
        "14,898,243",
        "73,980,669",
    ] in [[c for c in row if c] for row in table["rows"]]


def test_two_tables_on_a_page_are_two_tables(ws: Workspace) -> None:
    assert len(_tables(ws, "multiple_tables.pdf")) == 2
    first, second = _tables(ws, "twotables_2.pdf")
    assert _row(first, "Kerala")[:3] == ["Kerala", "2400", "7.2"]
    assert _row(second, "Kerala")[:3] == ["Kerala", "2400", "8.8"]


def test_a_table_set_sideways_is_read_upright(ws: Workspace) -> None:
    (table,) = _tables(ws, "anticlockwise_table_2.pdf")
    assert table["turned"] == 270
    assert _row(table, "Scheduled caste")[:4] == ["Scheduled caste", "74.8", "55.8", "42.9"]


def test_a_page_without_text_has_no_table(ws: Workspace) -> None:
    assert _tables(ws, "empty.pdf") == []
