"""Paragraph styles of a DOCX are resolved from a map read once per document, and the
map answers what python-docx's own ``Paragraph.style`` answers, case by case."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import docx
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml.ns import qn
from docx.table import Table
from docx.text.paragraph import Paragraph

from doc_processing_std_tools.config import get_settings
from doc_processing_std_tools.documents import api
from doc_processing_std_tools.documents.word import _all_text, _table_rows, paragraph_style_names
from doc_processing_std_tools.workspace import Workspace

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _style_xml(
    style_id: str, name: str | None, kind: str | None = "paragraph", extra: str = ""
) -> str:
    name_xml = f'<w:name w:val="{name}"/>' if name is not None else ""
    kind_xml = f'w:type="{kind}"' if kind is not None else ""
    return (
        f'<w:style xmlns:w="{W[1:-1]}" {kind_xml} w:styleId="{style_id}" {extra}>'
        f"{name_xml}</w:style>"
    )


def _add_raw_style(document: docx.document.Document, xml: str) -> None:
    from docx.oxml import parse_xml

    document.styles.element.append(parse_xml(xml))


def _styled(document: docx.document.Document, text: str, style_id: str | None) -> None:
    """A paragraph whose ``w:pStyle`` is `style_id` as written, even one no style has."""
    paragraph = document.add_paragraph(text)
    if style_id is not None:
        properties = paragraph._p.get_or_add_pPr()
        reference = properties._add_pStyle()
        reference.set(qn("w:val"), style_id)


def write_style_cases(path: Path, default: str = "Normal") -> None:
    """One document with every way a paragraph's style can resolve: built-in headings,
    Title and lists; custom styles (one based on another, one whose name says "List");
    a lowercase built-in name; an id naming a character style, an unknown id, an empty
    id; a duplicate id (the first one counts); a style without a name; paragraphs in a
    table and in a content control; and, with `default` other than "Normal", the
    default paragraph style moved to a custom style (two marked default: the last wins).
    """
    document = docx.Document()
    styles = document.styles
    base = styles.add_style("Memo Base", WD_STYLE_TYPE.PARAGRAPH)
    base.base_style = styles["Normal"]
    derived = styles.add_style("Memo Derived", WD_STYLE_TYPE.PARAGRAPH)
    derived.base_style = base
    listed = styles.add_style("Checklist Entry", WD_STYLE_TYPE.PARAGRAPH)
    listed.base_style = styles["List Bullet"]
    _add_raw_style(document, _style_xml("LowerHeading", "heading 3"))
    _add_raw_style(document, _style_xml("Twice", "Character Twice", kind="character"))
    _add_raw_style(document, _style_xml("Twice", "Paragraph Twice"))
    _add_raw_style(document, _style_xml("Nameless", None))
    _add_raw_style(document, _style_xml("NoType", "Typeless List", kind=None))
    if default != "Normal":
        styles["Normal"].element.set(qn("w:default"), "0")
        _add_raw_style(document, _style_xml("FirstDefault", "Heading 2", extra='w:default="1"'))
        _add_raw_style(document, _style_xml("Chosen", default, extra='w:default="true"'))
    document.add_paragraph("The title", style="Title")
    document.add_heading("A chapter", level=1)
    document.add_paragraph("Plain text without a style of its own.")
    document.add_paragraph("Text in Normal, named.", style="Normal")
    document.add_paragraph("A bullet", style="List Bullet")
    document.add_paragraph("A number", style="List Number")
    document.add_paragraph("Based on a base", style="Memo Derived")
    document.add_paragraph("The base", style="Memo Base")
    document.add_paragraph("A checklist entry", style="Checklist Entry")
    document.add_heading("A section", level=2)
    _styled(document, "Lowercase heading name", "LowerHeading")
    _styled(document, "Character style id", "Strong")
    _styled(document, "Unknown id", "NoSuchStyle")
    _styled(document, "Empty id", "")
    _styled(document, "Duplicate id", "Twice")
    _styled(document, "Style without a name", "Nameless")
    _styled(document, "Style without a type", "NoType")
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).paragraphs[0].text = "In a table"
    table.cell(0, 1).add_paragraph("Table heading", style="Heading 4")
    control = document.element.body.makeelement(qn("w:sdt"), {})
    content = control.makeelement(qn("w:sdtContent"), {})
    control.append(content)
    document.element.body.insert(len(document.element.body) - 1, control)
    inside = document.add_paragraph("In a content control", style="Heading 3")
    content.append(inside._p)
    content.append(document.add_paragraph("Plain in a content control")._p)
    document.save(str(path))


def _python_docx_name(paragraph: Paragraph) -> str:
    style = paragraph.style
    return str(style.name) if style is not None and style.name else ""


def _compare(path: Path) -> list[tuple[str, str]]:
    document = docx.Document(str(path))
    style_name = paragraph_style_names(document)
    names: list[tuple[str, str]] = []
    for element in document.element.body.iter(qn("w:p")):
        paragraph = Paragraph(element, document._body)
        expected = _python_docx_name(paragraph)
        assert style_name(element) == expected, (
            f"{paragraph.text!r}: {style_name(element)!r} != {expected!r}"
        )
        names.append((paragraph.text, expected))
    return names


def test_style_names_match_python_docx(tmp_path: Path) -> None:
    write_style_cases(tmp_path / "cases.docx")
    names = dict(_compare(tmp_path / "cases.docx"))
    # The cases are the ones meant: each resolves as stated.
    assert names["Plain text without a style of its own."] == "Normal"
    assert names["Lowercase heading name"] == "Heading 3"
    assert names["Character style id"] == "Normal"
    assert names["Unknown id"] == "Normal"
    assert names["Empty id"] == "Normal"
    assert names["Duplicate id"] == "Normal"
    assert names["Style without a name"] == ""
    assert names["Style without a type"] == "Normal"
    assert names["Based on a base"] == "Memo Derived"
    assert names["In a table"] == "Normal"
    assert names["In a content control"] == "Heading 3"


def test_style_names_match_python_docx_with_the_default_moved(tmp_path: Path) -> None:
    write_style_cases(tmp_path / "moved.docx", default="Body List Text")
    names = dict(_compare(tmp_path / "moved.docx"))
    assert names["Plain text without a style of its own."] == "Body List Text"
    assert names["Unknown id"] == "Body List Text"
    assert names["Text in Normal, named."] == "Normal"


def test_style_names_without_a_default_paragraph_style(tmp_path: Path) -> None:
    document = docx.Document()
    document.styles["Normal"].element.set(qn("w:default"), "0")
    document.add_paragraph("No default")
    document.add_paragraph("A bullet", style="List Bullet")
    document.save(str(tmp_path / "none.docx"))
    assert _compare(tmp_path / "none.docx") == [("No default", ""), ("A bullet", "List Bullet")]


def test_read_document_follows_the_resolved_styles(scratch: Path) -> None:
    write_style_cases(scratch / "moved.docx", default="Body List Text")
    text = api.read_document(Workspace.from_settings(get_settings()), "moved.docx", pages="")
    # Paragraphs without a style take the moved default, whose name says "List".
    assert "- Plain text without a style of its own." in text
    assert "\nText in Normal, named." in text
    assert "### Lowercase heading name" in text
    assert "#### Table heading" not in text  # a table cell's paragraphs stay in the table
    assert "### In a content control" in text
    assert "\nStyle without a name\n" in text


def test_unstyled_paragraphs_do_not_scan_every_style(scratch: Path) -> None:
    """Many styles and many paragraphs without one: resolving the default per paragraph
    by scanning every style took tens of seconds here; a map read once takes well under
    one."""
    document = docx.Document()
    for number in range(2000):
        _add_raw_style(document, _style_xml(f"Custom{number}", f"Custom {number}"))
    for number in range(1500):
        document.add_paragraph(f"Paragraph {number} in the default style.")
    document.save(str(scratch / "many-styles.docx"))
    start = time.perf_counter()
    text = api.read_document(Workspace.from_settings(get_settings()), "many-styles.docx")
    seconds = time.perf_counter() - start
    assert "Paragraph 0 in the default style." in text
    assert seconds < 3.0, f"reading took {seconds:.1f} s"


def _python_docx_rows(document: docx.document.Document, table: Any) -> list[list[str]]:
    return [
        [_all_text(cell._tc).replace("\n", " ") for cell in row.cells]
        for row in Table(table, document._body).rows
    ]


def test_table_grid_matches_python_docx(tmp_path: Path) -> None:
    """Cells spanning columns, rows, and both, and a row that starts later than the first
    column: the grid read row by row is python-docx's ``_Row.cells``, text for text."""
    document = docx.Document()
    table = document.add_table(rows=5, cols=4)
    for row_number, row in enumerate(table.rows):
        for column, cell in enumerate(row.cells):
            cell.text = f"r{row_number}c{column}"
    table.cell(0, 0).merge(table.cell(0, 1))  # two columns
    table.cell(1, 0).merge(table.cell(3, 0))  # three rows
    table.cell(1, 2).merge(table.cell(4, 3))  # four rows and two columns
    last = table.rows[4]._tr
    first_cell = last.find(qn("w:tc"))
    last.remove(first_cell)  # the last row starts in the second column
    properties = last.get_or_add_trPr()
    grid_before = properties.makeelement(qn("w:gridBefore"), {qn("w:val"): "1"})
    properties.insert(0, grid_before)
    document.save(str(tmp_path / "merged.docx"))
    opened = docx.Document(str(tmp_path / "merged.docx"))
    element = opened.element.body.find(qn("w:tbl"))
    rows = _table_rows(element)
    assert rows == _python_docx_rows(opened, element)
    assert rows[0][:2] == ["r0c0 r0c1", "r0c0 r0c1"]
    assert [row[0] for row in rows[1:4]] == ["r1c0 r2c0 r3c0"] * 3
    block = "r1c2 r1c3 r2c2 r2c3 r3c2 r3c3 r4c2 r4c3"
    assert [row[2:] for row in rows[1:4]] == [[block, block]] * 3
    assert rows[4] == ["r4c1", block, block]


def test_a_tall_merged_column_is_read_in_linear_time(scratch: Path) -> None:
    """python-docx finds the cell above a merged one by XPath from each cell, which took
    13 s for a 400-row table with its first column merged from top to bottom (written
    here as XML: python-docx's own merge takes as long to write it)."""

    def row(number: int) -> str:
        merge = '<w:vMerge w:val="restart"/>' if number == 0 else "<w:vMerge/>"
        first = "<w:r><w:t>merged</w:t></w:r>" if number == 0 else ""
        return (
            f"<w:tr><w:tc><w:tcPr>{merge}</w:tcPr><w:p>{first}</w:p></w:tc>"
            f"<w:tc><w:p><w:r><w:t>row {number}</w:t></w:r></w:p></w:tc>"
            "<w:tc><w:p/></w:tc></w:tr>"
        )

    from docx.oxml import parse_xml

    document = docx.Document()
    rows = "".join(row(number) for number in range(400))
    table = parse_xml(f'<w:tbl xmlns:w="{W[1:-1]}"><w:tblGrid/>{rows}</w:tbl>')
    body = document.element.body
    body.insert(len(body) - 1, table)
    document.save(str(scratch / "tall.docx"))
    start = time.perf_counter()
    text = api.extract_tables(Workspace.from_settings(get_settings()), "tall.docx", format="csv")
    seconds = time.perf_counter() - start
    assert "merged,row 100," in text
    assert seconds < 3.0, f"reading took {seconds:.1f} s"
