"""Real sample documents for the document tool tests, written with the real libraries."""

from __future__ import annotations

import datetime as dt
import zipfile
from pathlib import Path

import docx
import openpyxl
import pypdfium2  # type: ignore[import-untyped]
from fpdf import FPDF
from PIL import Image, ImageDraw

INVOICE_ROWS = [("Item", "Qty", "Price"), ("Widget", "2", "3.50"), ("Gadget", "1", "10.00")]


def _pdf() -> FPDF:
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    return pdf


def write_report_pdf(path: Path) -> None:
    """Three pages: text, a ruled table under a bookmark, a final page of text."""
    pdf = _pdf()
    pdf.set_title("Quarterly report")
    pdf.set_author("Ada Finance")
    pdf.set_creation_date(dt.datetime(2026, 3, 1, 9, 30, tzinfo=dt.UTC))
    pdf.add_page()
    pdf.start_section("Summary")
    pdf.cell(text="Quarterly report", new_x="LMARGIN", new_y="NEXT")
    pdf.multi_cell(0, 8, "Revenue grew in the third quarter.\nCosts stayed flat.")
    pdf.add_page()
    pdf.start_section("Invoice lines")
    pdf.cell(text="Invoice lines", new_x="LMARGIN", new_y="NEXT")
    with pdf.table() as table:
        for values in INVOICE_ROWS:
            row = table.row()
            for value in values:
                row.cell(value)
    pdf.add_page()
    pdf.cell(text="Closing remarks: total due 17.00 EUR")
    pdf.output(str(path))


def write_scanned_pdf(path: Path, work: Path) -> None:
    """One page holding only a picture of text, as a scanner makes it."""
    image = Image.new("RGB", (600, 200), "white")
    ImageDraw.Draw(image).text((20, 80), "INVOICE 2026-001 total 17.00", fill="black")
    picture = work / "scan.png"
    image.save(picture)
    pdf = _pdf()
    pdf.add_page()
    pdf.image(str(picture), x=10, y=10, w=180)
    pdf.output(str(path))


def write_encrypted_pdf(path: Path) -> None:
    """A PDF that needs a password to open."""
    pdf = _pdf()
    pdf.add_page()
    pdf.cell(text="Salary list")
    pdf.set_encryption(owner_password="owner-secret", user_password="user-secret")
    pdf.output(str(path))


def write_long_pdf(path: Path, pages: int, lines_per_page: int = 30) -> None:
    """`pages` pages of numbered lines."""
    pdf = _pdf()
    pdf.set_font("helvetica", size=9)
    for number in range(1, pages + 1):
        pdf.add_page()
        for line in range(1, lines_per_page + 1):
            pdf.cell(
                text=f"Page {number} line {line}: lorem ipsum dolor sit amet",
                new_x="LMARGIN",
                new_y="NEXT",
            )
    pdf.output(str(path))


def write_report_docx(path: Path) -> None:
    """Title, two headings, a list, a table, and core properties."""
    document = docx.Document()
    document.core_properties.title = "Supplier handbook"
    document.core_properties.author = "Procurement"
    document.add_heading("Supplier handbook", level=0)
    document.add_paragraph("How we pay our suppliers.")
    document.add_heading("Payment terms", level=1)
    document.add_paragraph("Invoices are paid within 30 days.")
    document.add_paragraph("Send invoices as PDF", style="List Bullet")
    document.add_heading("Price list", level=2)
    table = document.add_table(rows=0, cols=3)
    for values in INVOICE_ROWS:
        cells = table.add_row().cells
        for cell, value in zip(cells, values, strict=True):
            cell.text = value
    document.add_paragraph("Prices exclude VAT.")
    document.save(str(path))


def write_book_xlsx(path: Path, sales_rows: int = 3) -> None:
    """Two sheets: "Sales" (header, rows with a date) and "Notes"."""
    book = openpyxl.Workbook()
    sales = book.active
    sales.title = "Sales"
    sales.append(["Region", "Amount", "Date"])
    regions = ["North", "South", "East", "West"]
    for index in range(sales_rows):
        sales.append([regions[index % 4], 100 + index, dt.date(2026, 1, 1 + index % 28)])
    notes = book.create_sheet("Notes")
    notes.append(["Topic", "Note"])
    notes.append(["Audit", "South numbers need a second look"])
    book.properties.title = "Sales book"
    book.properties.creator = "Ada Finance"
    book.save(str(path))


CSV_TEXT = "name;city;amount\nAda;Zürich;12.5\nBob;Oslo;7\nCleo;Lima;3\n"

HTML_TEXT = """<!DOCTYPE html>
<html lang="en"><head>
<title>Shipping policy</title>
<meta name="author" content="Logistics team">
<style>body { color: red; }</style>
<script>var hidden = "do not show";</script>
</head><body>
<nav><a href="/">Home</a></nav>
<h1>Shipping policy</h1>
<p>We ship <b>worldwide</b> within <a href="https://example.org/days">five days</a>.</p>
<h2>Rates</h2>
<table>
<tr><th>Zone</th><th>Price</th></tr>
<tr><td>Europe</td><td>9 | EUR</td></tr>
<tr><td>World</td><td>19 EUR</td></tr>
</table>
<ul><li>Tracked</li><li>Insured</li></ul>
<pre>code   keeps   spacing</pre>
</body></html>
"""

MARKDOWN_TEXT = """---
title: Release notes
author: Dev team
---
Intro before any heading.

# Version 2

Faster parsing.

```python
# not a heading
print("x")
```

## Fixes

| Bug | Status |
|-----|--------|
| Crash on empty file | fixed |

# Version 1

First release.
"""


def write_with_cut_member(source: Path, target: Path, member: str) -> None:
    """Copy an Office package, cutting one XML member in half, as a broken download does."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as damaged:
        for item in original.infolist():
            data = original.read(item.filename)
            damaged.writestr(item, data[: len(data) // 2] if item.filename == member else data)


def write_samples(folder: Path, work: Path) -> None:
    """Every sample document, plus the bad inputs, into `folder`."""
    write_report_pdf(folder / "report.pdf")
    write_scanned_pdf(folder / "scanned.pdf", work)
    write_encrypted_pdf(folder / "encrypted.pdf")
    write_report_docx(folder / "handbook.docx")
    write_book_xlsx(folder / "book.xlsx")
    (folder / "people.csv").write_text(CSV_TEXT, encoding="utf-8")
    (folder / "policy.html").write_text(HTML_TEXT, encoding="utf-8")
    (folder / "notes.md").write_text(MARKDOWN_TEXT, encoding="utf-8")
    (folder / "plain.txt").write_text("alpha\nbeta gamma\n\ndelta\n", encoding="utf-8")
    good = (folder / "report.pdf").read_bytes()
    (folder / "corrupt.pdf").write_bytes(good[:300])
    (folder / "renamed.pdf").write_text("just some text, not a PDF", encoding="utf-8")
    write_with_cut_member(folder / "handbook.docx", folder / "cut.docx", "word/document.xml")
    write_with_cut_member(folder / "book.xlsx", folder / "cut.xlsx", "xl/worksheets/sheet1.xml")
    (folder / "broken.docx").write_bytes(b"PK\x03\x04" + b"\x00" * 64)
    (folder / "broken.xlsx").write_text("name,value\n", encoding="utf-8")
    with (folder / "nopages.pdf").open("wb") as handle:
        pypdfium2.PdfDocument.new().save(handle)
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "empty.csv").write_bytes(b"")
    (folder / "legacy.doc").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 64)
    (folder / "big.pdf").write_bytes(good + b"%" + b"x" * (1024 * 1024))
