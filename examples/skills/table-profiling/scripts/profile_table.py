"""Profile a CSV table: column types, empty cells, distinct values, ranges and issues.

Usage: profile_table.py TABLE.csv [--no-header] [--examples N]

The delimiter is detected among , ; tab and |. Numbers may use a decimal comma or
thousands separators. Prints one JSON object with "rows", "delimiter", "columns" and
"issues". Exit status 2 when the file cannot be read as a table.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from datetime import date
from pathlib import Path

INTEGER = re.compile(r"[-+]?\d{1,3}(?:[,. ]\d{3})*|[-+]?\d+")
DECIMAL = re.compile(r"[-+]?(?:\d{1,3}(?:[,. ]\d{3})*|\d+)[.,]\d+")
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
BOOLEANS = {"true", "false", "yes", "no", "y", "n"}
MAX_DISTINCT = 10_000
MIXED_SHARE = 0.8


def number(cell: str) -> float:
    """Read "1.234,5", "1,234.5", "1 234" and "-12" as numbers."""
    text = cell.replace(" ", "")
    if "," in text and "." in text:
        text = (
            text.replace(".", "").replace(",", ".")
            if text.rfind(",") > text.rfind(".")
            else text.replace(",", "")
        )
    elif "," in text:
        head, _, tail = text.rpartition(",")
        text = f"{head}.{tail}" if len(tail) != 3 else text.replace(",", "")
    elif text.count(".") > 1:
        text = text.replace(".", "")
    return float(text)


def kind(cell: str) -> str:
    """The type one non-empty cell looks like."""
    if INTEGER.fullmatch(cell) and not (len(cell) > 1 and cell.startswith("0")):
        return "integer"
    if DECIMAL.fullmatch(cell):
        return "decimal"
    if ISO_DATE.fullmatch(cell):
        try:
            date.fromisoformat(cell)
        except ValueError:
            return "text"
        return "date"
    if cell.lower() in BOOLEANS:
        return "boolean"
    return "text"


def profile_column(
    name: str, cells: list[str], examples: int
) -> tuple[dict[str, object], list[dict[str, str]]]:
    """Profile one column; also return the issues found in it."""
    values = [c.strip() for c in cells if c.strip()]
    kinds: dict[str, int] = {}
    for value in values:
        k = kind(value)
        kinds[k] = kinds.get(k, 0) + 1
    issues: list[dict[str, str]] = []
    if not values:
        column_type = "empty"
        issues.append({"code": "empty_column", "column": name, "detail": "no values"})
    else:
        numeric = kinds.get("integer", 0) + kinds.get("decimal", 0)
        if numeric == len(values):
            column_type = "decimal" if kinds.get("decimal") else "integer"
        elif len(kinds) == 1:
            column_type = next(iter(kinds))
        elif numeric / len(values) >= MIXED_SHARE:
            column_type = "decimal" if kinds.get("decimal") else "integer"
            odd = [v for v in values if kind(v) not in ("integer", "decimal")][:examples]
            issues.append(
                {"code": "mixed_types", "column": name, "detail": f"non-numeric cells: {odd}"}
            )
        else:
            column_type = "text"
    distinct = set(values[:MAX_DISTINCT])
    column: dict[str, object] = {
        "name": name,
        "type": column_type,
        "empty": len(cells) - len(values),
        "distinct": len(distinct) if len(values) <= MAX_DISTINCT else f">{MAX_DISTINCT}",
        "examples": list(dict.fromkeys(values))[:examples],
    }
    if column_type in ("integer", "decimal"):
        numbers = [number(v) for v in values if kind(v) in ("integer", "decimal")]
        column["min"], column["max"] = min(numbers), max(numbers)
        column["sum"] = round(sum(numbers), 6)
    elif column_type == "date":
        column["min"], column["max"] = min(values), max(values)
    return column, issues


def detect_delimiter(lines: list[str]) -> str:
    """The candidate that splits the most lines into the same number (above one) of cells."""
    best, best_score = ",", (0, 0)
    for candidate in ",;\t|":
        widths = [len(row) for row in csv.reader(lines, delimiter=candidate) if any(row)]
        if not widths:
            continue
        common = max(set(widths), key=widths.count)
        score = (widths.count(common) if common > 1 else 0, common)
        if score > best_score:
            best, best_score = candidate, score
    return best


def profile(path: Path, header: bool, examples: int) -> dict[str, object]:
    """Read the CSV file and profile every column."""
    text = path.read_text(encoding="utf-8-sig")
    if not text.strip():
        raise ValueError("the file is empty")
    delimiter = detect_delimiter(text.splitlines()[:50])
    rows = [row for row in csv.reader(text.splitlines(), delimiter=delimiter) if any(row)]
    width = max(len(row) for row in rows)
    names = rows[0] if header else [f"column_{i + 1}" for i in range(width)]
    data = rows[1:] if header else rows
    issues: list[dict[str, str]] = []
    seen: set[str] = set()
    for name in names:
        if name in seen:
            issues.append({"code": "duplicate_header", "column": name, "detail": "name used twice"})
        seen.add(name)
    ragged = [i + (2 if header else 1) for i, row in enumerate(data) if len(row) != len(names)]
    if ragged:
        issues.append(
            {
                "code": "ragged_rows",
                "column": "",
                "detail": f"{len(ragged)} row(s) with other than {len(names)} cells, "
                f"first at line(s) {ragged[:10]}",
            }
        )
    columns = []
    for index, name in enumerate(names):
        cells = [row[index] if index < len(row) else "" for row in data]
        column, found = profile_column(name, cells, examples)
        columns.append(column)
        issues.extend(found)
    return {"rows": len(data), "delimiter": delimiter, "columns": columns, "issues": issues}


def main(argv: list[str] | None = None) -> int:
    """Profile the CSV named on the command line and print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", type=Path)
    parser.add_argument("--no-header", action="store_true", help="the first row is data")
    parser.add_argument("--examples", type=int, default=3, help="example values per column")
    args = parser.parse_args(argv)
    try:
        result = profile(args.table, not args.no_header, max(args.examples, 0))
    except (OSError, UnicodeDecodeError, ValueError, csv.Error) as exc:
        print(f"cannot profile {args.table}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
