"""Document tools against markitdown on a 500-page PDF and a 50,000-row XLSX.

Generates both files in a temporary folder, then times, in the same run:

- get_file_overview (bounded: first pages, recorded sheet sizes);
- read_document as the tool answers by default (it stops at the output limit);
- read_document of the whole document (output limit lifted), the like-for-like case;
- markitdown's conversion of the same file to Markdown.

Run by hand after `make bench`: .venv/bin/python benchmarks/bench_documents.py
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import openpyxl
from fpdf import FPDF
from markitdown import MarkItDown

from doc_processing_std_tools.config import load_settings, reset_settings
from doc_processing_std_tools.docs import api
from doc_processing_std_tools.filesystem.operations import Workspace


def make_pdf(path: Path, pages: int) -> None:
    pdf = FPDF()
    pdf.set_font("helvetica", size=9)
    for number in range(1, pages + 1):
        pdf.add_page()
        pdf.cell(text=f"Chapter {number}", new_x="LMARGIN", new_y="NEXT")
        for line in range(1, 41):
            pdf.cell(
                text=f"Page {number}, line {line}: the supplier invoiced {line * 7} units "
                f"at {number % 13 + 1}.50 EUR each, payable within 30 days.",
                new_x="LMARGIN",
                new_y="NEXT",
            )
    pdf.output(str(path))


def make_xlsx(path: Path, rows: int) -> None:
    """A workbook as Excel or pandas write it (the used range of each sheet recorded)."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Ledger"
    sheet.append(["id", "region", "customer", "amount", "booked", "note"])
    regions = ["North", "South", "East", "West"]
    for index in range(1, rows + 1):
        sheet.append(
            [
                index,
                regions[index % 4],
                f"Customer {index % 977}",
                round(index * 1.37, 2),
                dt.date(2026, 1 + index % 12, 1 + index % 28),
                "paid" if index % 3 else "open",
            ]
        )
    summary = book.create_sheet("Summary")
    summary.append(["region", "total"])
    for region in regions:
        summary.append([region, 1000])
    book.save(str(path))


def timed(function: Callable[[], object], runs: int) -> tuple[float, object]:
    """Median wall time in seconds over `runs` calls, and the last result."""
    times: list[float] = []
    result: object = None
    for _ in range(runs):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def use_settings(folder: Path, limit: int) -> Workspace:
    reset_settings(
        load_settings(
            {
                "DPTTOOLS_WORKSPACE_DIR": str(folder),
                "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT": str(limit),
                "DPTTOOLS_MAX_FILE_SIZE_MB": "200",
            }
        )
    )
    return Workspace.from_settings()


def bench_file(folder: Path, name: str, runs: int, peer_runs: int) -> list[str]:
    converter = MarkItDown()
    # Warm both sides up (imports) on a small file of the same format, outside the timings.
    small = f"warm-up{Path(name).suffix}"
    converter.convert(str(folder / small))
    api.read_document(use_settings(folder, 50_000), small)
    peer_time, peer_result = timed(
        lambda: converter.convert(str(folder / name)).text_content, peer_runs
    )
    ws = use_settings(folder, 50_000)
    overview_time, _ = timed(lambda: api.get_file_overview(ws, name), runs)
    first_time, first = timed(lambda: api.read_document(ws, name), runs)
    whole_ws = use_settings(folder, 1_000_000_000)
    whole_time, whole = timed(lambda: api.read_document(whole_ws, name), max(1, peer_runs))
    reset_settings()
    rows = [
        f"| {name} | markitdown convert (whole file) | {peer_time:.3f} s | "
        f"{len(str(peer_result)):,} | 1.0x |",
        f"| {name} | get_file_overview | {overview_time:.3f} s | - | "
        f"{peer_time / overview_time:.0f}x faster |",
        f"| {name} | read_document, default output limit | {first_time:.3f} s | "
        f"{len(str(first)):,} | {peer_time / first_time:.0f}x faster |",
        f"| {name} | read_document, whole file | {whole_time:.3f} s | "
        f"{len(str(whole)):,} | {peer_time / whole_time:.1f}x faster |",
    ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5, help="runs of the fast calls")
    parser.add_argument("--peer-runs", type=int, default=1, help="runs of the whole-file calls")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp).resolve()
        start = time.perf_counter()
        make_pdf(folder / "long.pdf", args.pages)
        make_xlsx(folder / "ledger.xlsx", args.rows)
        make_pdf(folder / "warm-up.pdf", 2)
        make_xlsx(folder / "warm-up.xlsx", 20)
        print(
            f"Generated a {args.pages}-page PDF ({(folder / 'long.pdf').stat().st_size:,} bytes)"
            f" and a {args.rows:,}-row XLSX ({(folder / 'ledger.xlsx').stat().st_size:,} bytes)"
            f" in {time.perf_counter() - start:.1f} s\n"
        )
        print("| File | Operation | Median time | Output characters | vs markitdown |")
        print("|---|---|---|---|---|")
        for name in ("long.pdf", "ledger.xlsx"):
            for row in bench_file(folder, name, args.runs, args.peer_runs):
                print(row)


if __name__ == "__main__":
    main()
