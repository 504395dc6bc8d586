"""The example skills folder: clean catalog and scripts that do real work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from doc_processing_std_tools.skills.catalog.scan import scan_once

REPO = Path(__file__).resolve().parents[4]
SKILLS = REPO / "examples" / "skills"
INVOICES = REPO / "examples" / "invoices"


def run(script: str, *args: str | Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(SKILLS / script), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_example_skills_list_without_any_diagnostic() -> None:
    catalog = scan_once(SKILLS, max_bytes=50 * 1024 * 1024)
    assert [s.name for s in catalog.skills] == [
        "invoice-extraction",
        "pii-redaction",
        "table-profiling",
    ]
    assert catalog.diagnostics == ()
    invoice = catalog.skills[0].to_payload()
    assert invoice["description"] == (
        "Extracts header fields and line items from supplier invoices into JSON."
    )
    assert invoice["license"] == "MIT"
    assert invoice["compatibility"] == "Needs the docs extra."
    assert invoice["metadata"] == {"owner": "finance-team"}


def test_normalise_totals_confirms_a_correct_invoice() -> None:
    result = run(
        "invoice-extraction/scripts/normalise_totals.py", INVOICES / "nordlicht-2026-0142.json"
    )
    assert result["consistent"] is True and result["discrepancies"] == []
    assert result["invoice"]["total"] == "568.02"
    assert result["tax_breakdown"] == [
        {"rate": "0.07", "net": "49.90", "tax": "3.49"},
        {"rate": "0.19", "net": "432.46", "tax": "82.17"},
    ]


def test_normalise_totals_fixes_and_reports_wrong_totals(tmp_path: Path) -> None:
    output = tmp_path / "fixed.json"
    result = run(
        "invoice-extraction/scripts/normalise_totals.py",
        INVOICES / "harbour-freight-7731-wrong-totals.json",
        "--output",
        output,
    )
    assert result["consistent"] is False
    assert {d["field"]: d["computed"] for d in result["discrepancies"]} == {
        "line_items[1].line_total": "145.50",
        "subtotal": "2665.63",
        "tax_total": "533.13",
        "total": "3198.76",
    }
    fixed = json.loads(output.read_text(encoding="utf-8"))
    assert fixed["line_items"][1]["line_total"] == "145.50"
    assert fixed["total"] == "3198.76"


def test_normalise_totals_refuses_a_file_that_is_not_an_invoice(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"line_items": []}', encoding="utf-8")
    with pytest.raises(subprocess.CalledProcessError) as caught:
        run("invoice-extraction/scripts/normalise_totals.py", bad)
    assert caught.value.returncode == 2
    assert "line_items" in caught.value.stderr


def test_redact_pii_removes_checked_personal_data_only(tmp_path: Path) -> None:
    text = tmp_path / "letter.txt"
    text.write_text(
        "Pay to DE89 3704 0044 0532 0130 00, not DE00 1234 5678 9012 3456 78.\n"
        "Mail jane.doe@example.org or call +44 20 7946 0958.\n"
        "Card 4111 1111 1111 1111; order 4111 1111 1111 1112.\n",
        encoding="utf-8",
    )
    result = run("pii-redaction/scripts/redact_pii.py", text)
    redacted = result["redacted_text"]
    assert "DE89" not in redacted and "DE00 1234" in redacted
    assert "jane.doe" not in redacted and "7946" not in redacted
    assert "4111 1111 1111 1111" not in redacted and "4111 1111 1111 1112" in redacted
    assert result["counts"] == {"email": 1, "iban": 1, "card": 1, "phone": 1}


def test_profile_table_finds_types_and_issues(tmp_path: Path) -> None:
    table = tmp_path / "table.csv"
    table.write_text(
        "Date;Item;Qty;Amount\n2026-10-01;Paper;12;257,40\n2026-10-02;Labels;4;55,96\n"
        "2026-10-03;Boxes;3;109,60\n2026-10-04;Ink;2;80,00\n;Total;;502,96 *\n"
        "2026-10-05;Extra;1;5;x\n",
        encoding="utf-8",
    )
    result = run("table-profiling/scripts/profile_table.py", table)
    assert result["delimiter"] == ";" and result["rows"] == 6
    types = {c["name"]: c["type"] for c in result["columns"]}
    assert types == {"Date": "date", "Item": "text", "Qty": "integer", "Amount": "decimal"}
    assert {issue["code"] for issue in result["issues"]} == {"ragged_rows", "mixed_types"}
