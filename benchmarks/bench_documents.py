"""Document tools against markitdown on a 500-page PDF and a 50,000-row XLSX.

Generates both files in a temporary folder, then times, in the same run:

- get_file_overview (bounded: first pages, recorded sheet sizes);
- read_document as the tool answers by default (it stops at the output limit);
- read_document of the whole document (output limit lifted), the like-for-like case;
- markitdown's conversion of the same file to Markdown;
- the same calls as plain function calls, through the document worker process alone
  (`worker.run_tool`), and as MCP tool calls (in-memory client): what the worker and the
  server add around the readers (with --tools-only, only this part).

Run by hand after `make bench`: .venv/bin/python benchmarks/bench_documents.py
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import openpyxl
from fpdf import FPDF
from mcp import Client

from doc_processing_std_tools.config import get_settings, load_settings, reset_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.documents.server import docs_server
from doc_processing_std_tools.documents.worker import run_tool
from doc_processing_std_tools.workspace import Workspace

# The tests' helper that measures the CPU time of this process and its document workers.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages/std-tools/tests/support"))
from process_tree import tree_cpu_seconds


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
    return Workspace.from_settings(get_settings())


def bench_file(folder: Path, name: str, runs: int, peer_runs: int) -> list[str]:
    from markitdown import MarkItDown  # only here: --tools-only runs without it

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


async def _three_ways(
    calls: list[tuple[str, dict[str, Any], Callable[[Workspace], object]]],
    ws: Workspace,
    runs: int,
) -> list[list[tuple[float, float]]]:
    """For each call: (median wall seconds, CPU seconds per call of the whole process
    tree) as a function call, through `run_tool`, and as an MCP tool call.

    The three ways take turns within each run, so a change in the machine's load while
    the benchmark runs falls on all three alike. One untimed round first starts the
    worker and warms every path.
    """
    results: list[list[tuple[float, float]]] = []
    async with Client(docs_server) as client:
        for name, arguments, function in calls:
            ways: list[Callable[[], Awaitable[object]]] = [
                lambda function=function: _sync(function, ws),
                lambda name=name, arguments=arguments: run_tool(name, arguments, get_settings()),
                lambda name=name, arguments=arguments: client.call_tool(name, arguments),
            ]
            for way in ways:
                await way()
            walls: list[list[float]] = [[], [], []]
            cpus = [0.0, 0.0, 0.0]
            for run in range(runs):
                for offset in range(3):
                    index = (run + offset) % 3
                    cpu = tree_cpu_seconds()
                    start = time.perf_counter()
                    await ways[index]()
                    walls[index].append(time.perf_counter() - start)
                    cpus[index] += tree_cpu_seconds() - cpu
            results.append([(statistics.median(walls[i]), cpus[i] / runs) for i in range(3)])
    return results


async def _sync(function: Callable[[Workspace], object], ws: Workspace) -> object:
    return function(ws)


def bench_tool_calls(folder: Path, runs: int) -> list[str]:
    """Each call as a plain function call, through the worker, and as an MCP tool call."""
    calls: list[tuple[str, dict[str, Any], Callable[[Workspace], object]]] = [
        (
            "get_file_overview",
            {"path": "warm-up.pdf"},
            lambda ws: api.get_file_overview(ws, "warm-up.pdf"),
        ),
        ("read_document", {"path": "warm-up.pdf"}, lambda ws: api.read_document(ws, "warm-up.pdf")),
        (
            "get_file_overview",
            {"path": "long.pdf"},
            lambda ws: api.get_file_overview(ws, "long.pdf"),
        ),
        ("read_document", {"path": "long.pdf"}, lambda ws: api.read_document(ws, "long.pdf")),
        (
            "search_document",
            {"path": "long.pdf", "query": "line 40", "max_results": 500},
            lambda ws: api.search_document(ws, "long.pdf", "line 40", max_results=500),
        ),
        (
            "extract_tables",
            {"path": "long.pdf", "pages": "1-10"},
            lambda ws: api.extract_tables(ws, "long.pdf", "1-10"),
        ),
        (
            "read_document",
            {"path": "ledger.xlsx"},
            lambda ws: api.read_document(ws, "ledger.xlsx"),
        ),
        (
            "extract_tables",
            {"path": "warm-up.xlsx"},
            lambda ws: api.extract_tables(ws, "warm-up.xlsx"),
        ),
    ]
    ws = use_settings(folder, 50_000)
    measured = asyncio.run(_three_ways(calls, ws, runs))
    reset_settings()
    rows = []
    for (name, arguments, _), ((plain, plain_cpu), (worker, worker_cpu), (tool, tool_cpu)) in zip(
        calls, measured, strict=True
    ):
        rows.append(
            f"| {name} {arguments['path']} | {plain * 1000:.1f} ms | "
            f"{worker * 1000:.1f} ms ({(worker - plain) * 1000:+.1f}) | "
            f"{tool * 1000:.1f} ms ({(tool - plain) * 1000:+.1f}) | "
            f"{plain_cpu * 1000:.0f} / {worker_cpu * 1000:.0f} / {tool_cpu * 1000:.0f} ms |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5, help="runs of the fast calls")
    parser.add_argument("--peer-runs", type=int, default=1, help="runs of the whole-file calls")
    parser.add_argument(
        "--tools-only", action="store_true", help="only function calls against tool calls"
    )
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
        if not args.tools_only:
            print("| File | Operation | Median time | Output characters | vs markitdown |")
            print("|---|---|---|---|---|")
            for name in ("long.pdf", "ledger.xlsx"):
                for row in bench_file(folder, name, args.runs, args.peer_runs):
                    print(row)
            print()
        print(
            "| Call | Function call | Worker (added) | MCP tool call (added) "
            "| CPU per call: function / worker / tool |"
        )
        print("|---|---|---|---|---|")
        for row in bench_tool_calls(folder, args.runs):
            print(row)


if __name__ == "__main__":
    main()
