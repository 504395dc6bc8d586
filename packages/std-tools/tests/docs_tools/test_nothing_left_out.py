"""Nothing in a document is dropped without a word: each reader either reads a part that
a plain text pass would miss, or says in its answer that it left it out.

Every file is written with the real libraries (openpyxl, python-docx, fpdf2); what those
cannot write is put into the package's XML by hand, as another program would write it.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import docx
import docx.oxml
import openpyxl
import openpyxl.comments
import pytest
from fpdf import FPDF
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools import docs_server
from doc_processing_std_tools.config import get_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.filesystem.operations import Workspace


def _rewrite(path: Path, member: str, change: dict[str, str]) -> None:
    """Replace text inside one XML member of an Office package, in place."""
    with zipfile.ZipFile(path) as original:
        items = [(item, original.read(item.filename)) for item in original.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
        for item, data in items:
            if item.filename == member:
                text = data.decode("utf-8")
                for old, new in change.items():
                    assert old in text, f"{old!r} is not in {member}"
                    text = text.replace(old, new)
                data = text.encode("utf-8")
            package.writestr(item, data)


def _ledger(path: Path) -> None:
    """A workbook as a library writes it: formulas never calculated, a hidden sheet, a
    hidden row and column, a merged title."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Costs"
    sheet.append(["Item", "Amount", "Comment"])
    sheet.append(["Rent", 1200, "monthly"])
    sheet.append(["Power", 300, "estimate"])
    sheet.append(["Total", "=SUM(B2:B3)", ""])
    sheet.append(["Share", "=B4/2", ""])
    sheet.row_dimensions[3].hidden = True
    sheet.column_dimensions["C"].hidden = True
    sheet["E1"] = "Budget 2026"
    sheet.merge_cells("E1:F2")
    archive = book.create_sheet("Archive")
    archive.append(["Old item", "Amount"])
    archive.append(["Lease", "=100*12"])
    archive.sheet_state = "hidden"
    book.save(str(path))


def test_a_formula_without_a_computed_value_is_shown_marked_and_found(scratch: Path) -> None:
    _ledger(scratch / "ledger.xlsx")
    ws = Workspace.from_settings(get_settings())
    text = api.read_document(ws, "ledger.xlsx", "Costs")
    assert "| Total | =SUM(B2:B3) (formula, not computed) |" in text
    assert "| Share | =B4/2 (formula, not computed) |" in text
    found = json.loads(api.search_document(ws, "ledger.xlsx", "SUM("))
    assert found["matches"] == [
        {"sheet": "Costs", "cell": "B4", "text": "=SUM(B2:B3) (formula, not computed)"}
    ]
    overview = json.loads(api.get_file_overview(ws, "ledger.xlsx"))
    costs, archive = overview["outline"]
    assert costs["formulas_not_computed"] == 2 and archive["formulas_not_computed"] == 1
    assert any(n.startswith("3 formulas without a computed value") for n in overview["notes"])


def test_a_formula_with_a_cached_value_shows_the_value(scratch: Path) -> None:
    _ledger(scratch / "ledger.xlsx")
    # As a spreadsheet program saves it after calculating: the formula and its value.
    _rewrite(
        scratch / "ledger.xlsx",
        "xl/worksheets/sheet1.xml",
        {"<f>SUM(B2:B3)</f><v></v>": "<f>SUM(B2:B3)</f><v>1500</v>"},
    )
    ws = Workspace.from_settings(get_settings())
    text = api.read_document(ws, "ledger.xlsx", "Costs")
    assert "| Total | 1500 |" in text
    overview = json.loads(api.get_file_overview(ws, "ledger.xlsx"))
    assert overview["outline"][0]["formulas_not_computed"] == 1


def test_a_shared_formula_is_shown_as_it_reads_in_its_own_cell(scratch: Path) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["a", "b", "sum"])
    sheet.append([1, 2, "=A2+B2"])
    sheet.append([3, 4, "=A3+B3"])
    book.save(str(scratch / "shared.xlsx"))
    # Spreadsheet programs write a column of like formulas once, shared by the others.
    _rewrite(
        scratch / "shared.xlsx",
        "xl/worksheets/sheet1.xml",
        {
            "<f>A2+B2</f>": '<f t="shared" ref="C2:C3" si="0">A2+B2</f>',
            "<f>A3+B3</f>": '<f t="shared" si="0"/>',
        },
    )
    text = api.read_document(Workspace.from_settings(get_settings()), "shared.xlsx")
    assert "| 3 | 4 | =A3+B3 (formula, not computed) |" in text


def test_a_formula_column_without_a_heading_keeps_the_table_rectangular(
    scratch: Path,
) -> None:
    """Issue 28: a column of formulas right of the last heading made its rows longer than
    the header, a ragged Markdown table whose last cells a renderer drops."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["Item", "Qty", "Price"])
    sheet.append(["Pens", 2, 1.5, "=B2*C2"])
    sheet.append(["Ink", 3, 4, '=B3&"|"&C3'])
    book.save(str(scratch / "orders.xlsx"))
    text = api.read_document(Workspace.from_settings(get_settings()), "orders.xlsx")
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[0] == "| Item | Qty | Price |  |"
    widths = {len(re.split(r"(?<!\\)\|", line)) for line in table}
    assert len(widths) == 1, table
    assert "| Pens | 2 | 1.5 | =B2*C2 (formula, not computed) |" in table


def test_hidden_sheets_rows_and_columns_are_read_and_named(scratch: Path) -> None:
    _ledger(scratch / "ledger.xlsx")
    ws = Workspace.from_settings(get_settings())
    whole = api.read_document(ws, "ledger.xlsx")
    assert "## Sheet 2: Archive (hidden)" in whole
    assert "| Lease | =100*12 (formula, not computed) |" in whole
    assert "| Power | 300 | estimate |" in whole  # a hidden row, a hidden column
    overview = json.loads(api.get_file_overview(ws, "ledger.xlsx"))
    costs, archive = overview["outline"]
    assert archive["hidden"] == "hidden" and "hidden" not in costs
    assert (costs["hidden_rows"], costs["hidden_columns"], costs["merged_ranges"]) == (1, 1, 1)
    notes = overview["notes"]
    assert "1 hidden sheet: Archive (read like the others, e.g. pages='Archive')" in notes
    assert "hidden rows and columns are read like visible ones" in notes
    assert "a merged range's value is shown in its first cell only" in notes


def test_a_merged_cells_value_is_read_once(scratch: Path) -> None:
    _ledger(scratch / "ledger.xlsx")
    text = api.read_document(Workspace.from_settings(get_settings()), "ledger.xlsx", "Costs!1-1")
    assert "| Item | Amount | Comment |  | Budget 2026 |" in text
    assert text.count("Budget 2026") == 1


def test_an_overview_without_anything_hidden_has_no_notes(scratch: Path) -> None:
    book = openpyxl.Workbook()
    book.active.append(["plain", 1])
    book.save(str(scratch / "plain.xlsx"))
    overview = json.loads(
        api.get_file_overview(Workspace.from_settings(get_settings()), "plain.xlsx")
    )
    assert "notes" not in overview
    assert not re.search(r"formulas_not_computed|hidden|merged", json.dumps(overview))


@pytest.mark.anyio
async def test_the_formula_reaches_a_client_over_mcp(scratch: Path) -> None:
    _ledger(scratch / "ledger.xlsx")
    async with Client(docs_server) as client:
        result = await client.call_tool("read_document", {"path": "ledger.xlsx"})
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert "=SUM(B2:B3) (formula, not computed)" in block.text


_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_TEXT_BOX = (
    '<w:r><mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006">'
    '<mc:Choice Requires="wps"><w:drawing><wp:anchor xmlns:wp="http://schemas.openxmlformats.org/'
    'drawingml/2006/wordprocessingDrawing"><a:graphic xmlns:a="http://schemas.openxmlformats.org/'
    'drawingml/2006/main"><a:graphicData><wps:wsp xmlns:wps="http://schemas.microsoft.com/office/'
    'word/2010/wordprocessingShape"><wps:txbx><w:txbxContent><w:p><w:r><w:t>Boxed warning: '
    "check the seals</w:t></w:r></w:p></w:txbxContent></wps:txbx></wps:wsp></a:graphicData>"
    "</a:graphic></wp:anchor></w:drawing></mc:Choice><mc:Fallback><w:pict><v:shape "
    'xmlns:v="urn:schemas-microsoft-com:vml"><v:textbox><w:txbxContent><w:p><w:r><w:t>Boxed '
    "warning: check the seals</w:t></w:r></w:p></w:txbxContent></v:textbox></v:shape></w:pict>"
    "</mc:Fallback></mc:AlternateContent></w:r>"
)
_NOTES = (
    "<w:{kind}s " + _W + '><w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/>'
    '</w:r></w:p></w:{kind}><w:{kind} w:id="1"><w:p><w:r><w:t>{text}</w:t></w:r></w:p>'
    "</w:{kind}></w:{kind}s>"
)


def _add_part(path: Path, kind: str, text: str) -> None:
    """Give a DOCX a footnotes or endnotes part, as a word processor writes it."""
    with zipfile.ZipFile(path) as original:
        items = {item.filename: original.read(item.filename) for item in original.infolist()}
    items[f"word/{kind}s.xml"] = _NOTES.format(kind=kind, text=text).encode()
    items["word/_rels/document.xml.rels"] = items["word/_rels/document.xml.rels"].replace(
        b"</Relationships>",
        f'<Relationship Id="rIdX{kind}" Type="http://schemas.openxmlformats.org/officeDocument/'
        f'2006/relationships/{kind}s" Target="{kind}s.xml"/></Relationships>'.encode(),
    )
    items["[Content_Types].xml"] = items["[Content_Types].xml"].replace(
        b"</Types>",
        f'<Override PartName="/word/{kind}s.xml" ContentType="application/vnd.openxmlformats-'
        f'officedocument.wordprocessingml.{kind}s+xml"/></Types>'.encode(),
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
        for name, data in items.items():
            package.writestr(name, data)


def _handbook(path: Path) -> None:
    """A DOCX with everything a plain pass over the body paragraphs misses."""
    document = docx.Document()
    document.add_heading("Safety", level=1)
    body = document.add_paragraph("Close the valve first")
    document.add_comment(body.runs, text="Which valve? Say the red one.", author="Rita")
    anchor = document.add_paragraph("See the box.")
    table = document.add_table(rows=2, cols=3)
    merged = table.cell(0, 0).merge(table.cell(1, 1))
    merged.text = "Merged area"
    table.cell(0, 2).text = "Right"
    inner = table.cell(1, 2).add_table(rows=1, cols=2)
    inner.cell(0, 0).text = "Nested left"
    inner.cell(0, 1).text = "Nested right"
    section = document.sections[0]
    section.header.paragraphs[0].text = "ACME confidential"
    section.footer.paragraphs[0].text = "Page footer text"
    reference = anchor.add_run()
    reference._r.append(
        docx.oxml.parse_xml(f'<w:footnoteReference {_W} w:id="1"/>')  # type: ignore[attr-defined]
    )
    anchor._p.append(docx.oxml.parse_xml(_TEXT_BOX.replace("<w:r>", f"<w:r {_W}>", 1)))  # type: ignore[attr-defined]
    control = docx.oxml.parse_xml(  # type: ignore[attr-defined]
        f"<w:sdt {_W}><w:sdtPr/><w:sdtContent><w:p><w:r><w:t>Inside a content control"
        "</w:t></w:r></w:p></w:sdtContent></w:sdt>"
    )
    document.element.body.insert(len(document.element.body) - 1, control)
    document.save(str(path))
    _add_part(path, "footnote", "Valves are tested yearly.")
    _add_part(path, "endnote", "Source: plant manual.")


def test_docx_parts_outside_the_body_paragraphs_are_read(scratch: Path) -> None:
    _handbook(scratch / "handbook.docx")
    ws = Workspace.from_settings(get_settings())
    text = api.read_document(ws, "handbook.docx")
    assert "See the box.[^1]" in text
    assert text.count("[text box] Boxed warning: check the seals") == 1  # not its fallback
    assert "| Merged area | Merged area | Right |" in text
    assert "Nested left Nested right" in text
    assert "Inside a content control" in text
    for heading, line in (
        ("# Footnotes", "[^1]: Valves are tested yearly."),
        ("# Endnotes", "[^e1]: Source: plant manual."),
        ("# Comments", "- Rita: Which valve? Say the red one."),
        ("# Headers and footers", "ACME confidential"),
    ):
        assert heading in text and line in text
    assert "Page footer text" in text
    found = json.loads(api.search_document(ws, "handbook.docx", "seals"))
    assert found["count"] == 1
    overview = json.loads(api.get_file_overview(ws, "handbook.docx"))
    assert (
        overview["text_box_count"],
        overview["footnote_count"],
        overview["endnote_count"],
        overview["comment_count"],
        overview["header_and_footer_texts"],
    ) == (1, 1, 1, 1, 2)
    assert [e["title"] for e in overview["outline"]][-4:] == [
        "Footnotes",
        "Endnotes",
        "Comments",
        "Headers and footers",
    ]


def _form_pdf(path: Path) -> None:
    """A one-page PDF with a filled-in text field, as a form filler saves it (fpdf2 writes
    no form fields)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields [4 0 R] >> >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Annots [4 0 R] "
        b"/Contents 5 0 R /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 "
        b"/BaseFont /Helvetica >> >> >> >>",
        b"<< /Type /Annot /Subtype /Widget /FT /Tx /T (customer) /V (Ada Lovelace) "
        b"/Rect [20 100 200 120] /P 3 0 R >>",
    ]
    stream = b"BT /F1 12 Tf 20 150 Td (Order form) Tj ET"
    objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    data = b"%PDF-1.7\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(data))
        data += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    table = len(data)
    data += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    data += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    data += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        table,
    )
    path.write_bytes(data)


def test_pdf_annotations_and_form_fields_are_read_with_their_page(scratch: Path) -> None:
    document = FPDF()
    document.set_font("helvetica", size=12)
    document.add_page()
    document.cell(text="Contract draft")
    document.text_annotation(20, 40, "Reviewer: clause 4 is missing")
    document.free_text_annotation("Approved by legal", 20, 60, 60, 20)
    document.output(str(scratch / "draft.pdf"))
    _form_pdf(scratch / "form.pdf")
    ws = Workspace.from_settings(get_settings())
    draft = api.read_document(ws, "draft.pdf")
    assert "Contract draft" in draft
    assert "[note: Reviewer: clause 4 is missing]" in draft
    assert "[text box: Approved by legal]" in draft
    found = json.loads(api.search_document(ws, "draft.pdf", "clause 4"))
    assert [m["page"] for m in found["matches"]] == [1]
    assert json.loads(api.get_file_overview(ws, "draft.pdf"))["annotations"] == 2
    form = api.read_document(ws, "form.pdf")
    assert "Order form" in form and "[form field customer: Ada Lovelace]" in form


def test_xlsx_cell_comments_are_read_found_and_counted(scratch: Path) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Costs"
    sheet.append(["Item", "Amount"])
    sheet.append(["Rent", 1200])
    sheet.append(["Power", 300])
    sheet["B2"].comment = openpyxl.comments.Comment("Includes the garage", "Rita")
    sheet["A3"].comment = openpyxl.comments.Comment("Winter estimate", "Sam")
    book.save(str(scratch / "noted.xlsx"))
    ws = Workspace.from_settings(get_settings())
    text = api.read_document(ws, "noted.xlsx")
    assert "Comments:\n- B2 (Rita): Includes the garage\n- A3 (Sam): Winter estimate\n" in text
    only_row_2 = api.read_document(ws, "noted.xlsx", "Costs!2-2")
    assert "garage" in only_row_2 and "Winter" not in only_row_2
    found = json.loads(api.search_document(ws, "noted.xlsx", "garage"))
    assert found["matches"] == [
        {"sheet": "Costs", "cell": "B2", "text": "[comment by Rita] Includes the garage"}
    ]
    tables = api.extract_tables(ws, "noted.xlsx", format="csv")
    assert "garage" not in tables  # a table holds cells only
    overview = json.loads(api.get_file_overview(ws, "noted.xlsx"))
    assert overview["outline"][0]["comments"] == 2
    assert "cell comments are read after each sheet's table" in overview["notes"]
