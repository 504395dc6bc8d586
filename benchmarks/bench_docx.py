"""Reading a DOCX against its floor (expat over its XML) and against markitdown.

Generates a 400-section DOCX with python-docx in a temporary folder (headings of two
levels, body paragraphs with and without a style of their own, a custom style based on
another, list items, and a small table every tenth section), then times, in the same run:

- the floor: the standard library's expat parser over word/document.xml and
  word/styles.xml read from the zip, with no work per element;
- read_document of the whole document (output limit lifted), get_file_overview,
  search_document and extract_tables, as plain function calls (the path the tools take);
- markitdown's conversion of the same file to Markdown (markitdown reads DOCX only with
  its "docx" extra, mammoth; without it the peer column is left out).

Run by hand after `make bench`: .venv/bin/python benchmarks/bench_docx.py
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from xml.parsers import expat

import docx
from bench_documents import timed, use_settings
from docx.enum.style import WD_STYLE_TYPE

from doc_processing_std_tools.config import reset_settings
from doc_processing_std_tools.documents import api


def make_docx(path: Path, sections: int) -> None:
    """A report of `sections` sections, as python-docx writes one."""
    document = docx.Document()
    document.core_properties.title = "Quarterly supplier report"
    note = document.styles.add_style("Supplier Note", WD_STYLE_TYPE.PARAGRAPH)
    note.base_style = document.styles["Normal"]
    document.add_paragraph("Quarterly supplier report", style="Title")
    for number in range(1, sections + 1):
        level = 1 if number % 5 == 1 else 2
        document.add_heading(f"Section {number}: supplier {number % 97}", level=level)
        document.add_paragraph(
            f"In section {number} the supplier invoiced {number * 7} units at "
            f"{number % 13 + 1}.50 EUR each, payable within 30 days."
        )
        for line in range(1, 4):
            document.add_paragraph(
                f"Line {line}: {number * line} pallets were checked at the gate; "
                f"{number % (line + 3)} of them were returned for a missing label."
            )
        document.add_paragraph(
            f"Deliveries arrived on time in {number % 4 + 1} of the last four weeks; "
            "the remaining ones were late by two days on average.",
            style="Supplier Note",
        )
        document.add_paragraph(f"Order {number}-A confirmed", style="List Bullet")
        document.add_paragraph(f"Order {number}-B pending", style="List Bullet")
        if number % 10 == 0:
            table = document.add_table(rows=4, cols=3)
            for row, cells in enumerate(table.rows):
                for column, cell in enumerate(cells.cells):
                    cell.text = f"r{row}c{column} {number}" if row else f"column {column}"
    document.save(str(path))


def floor(path: Path) -> int:
    """Parse the body and the styles with expat, doing nothing per element; the number of
    elements seen (so the work cannot be skipped)."""
    seen = 0

    def start(name: str, attributes: object) -> None:
        nonlocal seen
        seen += 1

    with zipfile.ZipFile(path) as package:
        for member in ("word/document.xml", "word/styles.xml"):
            parser = expat.ParserCreate(namespace_separator="}")
            parser.StartElementHandler = start
            parser.Parse(package.read(member), True)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", type=int, default=400)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--peer-runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp).resolve()
        name = "report.docx"
        make_docx(folder / name, args.sections)
        make_docx(folder / "warm-up.docx", 2)
        with zipfile.ZipFile(folder / name) as package:
            xml_bytes = sum(package.getinfo(m).file_size for m in package.namelist())
        print(
            f"Generated a {args.sections}-section DOCX ({(folder / name).stat().st_size:,} "
            f"bytes, {xml_bytes:,} bytes unzipped)\n"
        )
        from markitdown import MarkItDown

        converter: MarkItDown | None = MarkItDown()
        # Warm both sides up (imports) on a small file, outside the timings.
        try:
            MarkItDown().convert(str(folder / "warm-up.docx"))
        except Exception as exc:  # markitdown reads DOCX only with its "docx" extra
            reason = next((line for line in str(exc).splitlines() if "Docx" in line), "")
            print(f"markitdown left out: {reason.strip(' -') or type(exc).__name__}\n")
            converter = None
        whole = use_settings(folder, 1_000_000_000)
        api.read_document(whole, "warm-up.docx")

        calls: list[tuple[str, Callable[[], object]]] = [
            ("expat over document.xml + styles.xml (floor)", lambda: floor(folder / name)),
            ("read_document, whole file", lambda: api.read_document(whole, name)),
            ("get_file_overview", lambda: api.get_file_overview(whole, name)),
            (
                "search_document (every list item)",
                lambda: api.search_document(whole, name, "Order", max_results=500),
            ),
            ("extract_tables", lambda: api.extract_tables(whole, name)),
        ]
        # The calls take turns within each run, so a change in the machine's load falls
        # on the floor and the reader alike; each ratio is the median of the per-run ones.
        times: list[list[float]] = [[] for _ in calls]
        sizes = [0] * len(calls)
        for _ in range(args.runs):
            for index, (_, call) in enumerate(calls):
                seconds, result = timed(call, 1)
                times[index].append(seconds)
                sizes[index] = len(str(result)) if index else 0
        peer_time, peer = (
            timed(lambda: converter.convert(str(folder / name)).text_content, args.peer_runs)
            if converter is not None
            else (float("nan"), "")
        )
        reset_settings()
        floor_times = times[0]
        print("| Operation | Median time | Output characters | / floor | markitdown / ours |")
        print("|---|---|---|---|---|")
        for index, (label, _) in enumerate(calls):
            ratios = [t / f for t, f in zip(times[index], floor_times, strict=True)]
            median = statistics.median(times[index])
            size = f"{sizes[index]:,}" if index else "-"
            versus = f"{peer_time / median:.1f}x" if index and converter else "-"
            print(
                f"| {label} | {median:.4f} s | {size} | {statistics.median(ratios):.1f}x | "
                f"{versus} |"
            )
        if converter is not None:
            print(
                f"| markitdown convert (whole file) | {peer_time:.4f} s | {len(str(peer)):,} | "
                f"{peer_time / statistics.median(floor_times):.1f}x | 1.0x |"
            )


if __name__ == "__main__":
    main()
