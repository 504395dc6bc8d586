"""DOCX through python-docx: headings become sections, tables stay tables."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import DocumentError
from .flow import FlowBuilder, FlowDocument, FlowReader
from .reader import DocumentFormat
from .source import Source, check_office_package, missing_extra

__all__ = ["FORMAT", "load", "paragraph_style_names"]

_HEADING = re.compile(r"heading\s*(\d)", re.IGNORECASE)


def _open(source: Source) -> Any:
    try:
        import docx
        from docx.opc.exceptions import PackageNotFoundError
    except ImportError as exc:
        raise missing_extra("DOCX") from exc
    try:
        with source.file() as stream:
            return docx.Document(stream)
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise DocumentError(
            f"{source.name!r} could not be read as DOCX: the package is damaged or "
            f"incomplete ({type(exc).__name__})."
        ) from None


def _metadata(document: Any) -> dict[str, str]:
    props = document.core_properties
    found: dict[str, str] = {}
    for key, value in (
        ("title", props.title),
        ("author", props.author),
        ("subject", props.subject),
        ("keywords", props.keywords),
        ("last_modified_by", props.last_modified_by),
        ("created", props.created),
        ("modified", props.modified),
    ):
        if value:
            found[key] = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return found


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_STYLE, _NAME, _PPR, _PSTYLE = (f"{_W}{n}" for n in ("style", "name", "pPr", "pStyle"))
_VAL, _STYLE_ID, _STYLE_TYPE, _DEFAULT = (f"{_W}{n}" for n in ("val", "styleId", "type", "default"))


def paragraph_style_names(document: Any) -> Callable[[Any], str]:
    """A function giving the name of a ``w:p`` element's paragraph style ("" for none),
    resolved as python-docx's ``Paragraph.style`` resolves it, from a map of the
    document's styles read once.

    ``Paragraph.style`` looks its style up by id with an XPath query, and for a paragraph
    without one (or with an id that names no paragraph style) scans every style of the
    document for the default; per paragraph, that made reading a DOCX cost many times
    parsing it. The rules kept: the first ``w:style`` with an id wins; an id that is
    empty, unknown or names a style of another type means the default paragraph style,
    the last one marked ``w:default`` (none if no style is); built-in names are shown as
    Word shows them ("heading 1" is "Heading 1").
    """
    from docx.styles import BabelFish

    by_id: dict[str, str | None] = {}
    default = ""
    # `document.styles` is what `Paragraph.style` reads (an empty styles part when the
    # package has none).
    for style in document.styles.element:
        if style.tag != _STYLE:
            continue
        paragraph = style.get(_STYLE_TYPE) == "paragraph"
        name_element = style.find(_NAME)
        internal = name_element.get(_VAL) if name_element is not None else None
        name = str(BabelFish.internal2ui(internal)) if internal else ""
        style_id = style.get(_STYLE_ID)
        if style_id and style_id not in by_id:
            by_id[style_id] = name if paragraph else None
        if paragraph and style.get(_DEFAULT) in ("1", "true", "on"):
            default = name

    def style_name(p: Any) -> str:
        # The first w:pPr, and its first w:pStyle (a loop over the children is quicker
        # than ElementPath's `find` for the one or two elements it looks at).
        for properties in p:
            if properties.tag == _PPR:
                for reference in properties:
                    if reference.tag == _PSTYLE:
                        name = by_id.get(reference.get(_VAL) or "")
                        return default if name is None else name
                break
        return default

    return style_name


_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_P, _TBL, _T, _TAB, _BR, _CR = (f"{_W}{n}" for n in ("p", "tbl", "t", "tab", "br", "cr"))
_TXBX = f"{_W}txbxContent"
_FOOTNOTE_REF, _ENDNOTE_REF = f"{_W}footnoteReference", f"{_W}endnoteReference"
_ID, _AUTHOR, _TYPE = f"{_W}id", f"{_W}author", f"{_W}type"
_RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"


_TEXT_TAGS = frozenset((_T, _TAB, _BR, _CR, _FOOTNOTE_REF, _ENDNOTE_REF))
_NESTED = frozenset((_TXBX, _FALLBACK, _P))


def _piece(element: Any) -> str:
    """What one text element (``w:t``, a tab, a break, a note reference) adds to a text."""
    tag = element.tag
    if tag == _T:
        return str(element.text or "")
    if tag == _TAB:
        return "\t"
    if tag == _FOOTNOTE_REF:
        return f"[^{element.get(_ID)}]"
    if tag == _ENDNOTE_REF:
        return f"[^e{element.get(_ID)}]"
    return "\n"


def _plain_text(element: Any) -> str | None:
    """`_own_text` in one pass over the descendants for the common case, a paragraph
    holding no text box, fallback copy or paragraph; None when it holds one."""
    parts: list[str] = []
    for child in element.iterdescendants():
        tag = child.tag
        if tag == _T:
            parts.append(child.text or "")
        elif tag in _TEXT_TAGS:
            parts.append(_piece(child))
        elif tag in _NESTED:
            return None
    return "".join(parts)


def _own_text(element: Any) -> str:
    """The text of a paragraph (or part of one) without the text boxes anchored in it,
    which are read as blocks of their own: runs, tracked insertions, hyperlinks, fields
    and content controls alike; note references as ``[^N]`` (footnotes) and ``[^eN]``
    (endnotes). The fallback copy of a drawing (``mc:Fallback``) is skipped."""
    text = _plain_text(element)
    return text if text is not None else _nested_text(element)


def _nested_text(element: Any) -> str:
    parts: list[str] = []
    for child in element:
        tag = child.tag
        if tag in _TEXT_TAGS:
            parts.append(_piece(child))
        elif tag not in _NESTED and isinstance(tag, str):
            parts.append(_nested_text(child))
    return "".join(parts)


def _paragraphs(element: Any) -> Iterator[Any]:
    """Every paragraph inside `element` (nested tables and text boxes included), in
    document order, outside fallback copies."""
    if next(element.iterdescendants(_FALLBACK), None) is None:
        yield from element.iterdescendants(_P)
        return
    for child in element:
        if child.tag == _FALLBACK:
            continue
        if child.tag == _P:
            yield child
        yield from _paragraphs(child)


def _all_text(element: Any) -> str:
    """The text of every paragraph inside `element`, one per line (empty ones left out)."""
    lines = (_own_text(p).strip() for p in _paragraphs(element))
    return "\n".join(line for line in lines if line)


def _text_boxes(paragraph: Any) -> list[str]:
    """The text of each text box anchored in `paragraph` (not their fallback copies)."""
    found: list[str] = []

    def walk(element: Any) -> None:
        for child in element:
            if child.tag == _FALLBACK:
                continue
            if child.tag == _TXBX:
                paragraphs = (_own_text(p).strip() for p in child if p.tag == _P)
                text = " ".join(t for t in paragraphs if t)
                if text:
                    found.append(text)
            walk(child)

    walk(paragraph)
    return found


def _parts(document: Any, kind: str) -> list[Any]:
    """The XML roots of the document's parts of relationship type `kind` (e.g.
    "footnotes", "header"), in the order the document lists them."""
    from docx.oxml.parser import parse_xml

    roots: list[Any] = []
    seen: set[str] = set()
    for relationship in document.part.rels.values():
        if relationship.is_external or relationship.reltype != _RELATIONSHIPS + kind:
            continue
        part = relationship.target_part
        if str(part.partname) in seen:
            continue
        seen.add(str(part.partname))
        element = getattr(part, "element", None)
        roots.append(element if element is not None else parse_xml(part.blob))
    return roots


def _one_line_texts(document: Any, part: str, tag: str) -> Iterator[tuple[Any, str]]:
    """Each `tag` element of the document's `part` parts that holds text, with its text
    on one line."""
    for root in _parts(document, part):
        for element in root.iter(f"{_W}{tag}"):
            text = " ".join(_all_text(element).split("\n"))
            if text:
                yield element, text


_SEPARATORS = ("separator", "continuationSeparator", "continuationNotice")


def _notes(document: Any, kind: str, prefix: str) -> list[str]:
    """Footnotes or endnotes as Markdown note lines (``[^N]: text``), without the
    separators every such part holds."""
    return [
        f"[^{prefix}{note.get(_ID)}]: {text}"
        for note, text in _one_line_texts(document, f"{kind}s", kind)
        if note.get(_TYPE) not in _SEPARATORS
    ]


def _comments(document: Any) -> list[str]:
    return [
        f"- {comment.get(_AUTHOR) or 'unknown author'}: {text}"
        for comment, text in _one_line_texts(document, "comments", "comment")
    ]


def _margins(document: Any) -> list[str]:
    """The distinct texts of the headers and footers, each once."""
    texts: list[str] = []
    for kind in ("header", "footer"):
        for root in _parts(document, kind):
            text = _all_text(root)
            if text and text not in texts:
                texts.append(text)
    return texts


_TR, _TC, _TRPR, _TCPR = (f"{_W}{n}" for n in ("tr", "tc", "trPr", "tcPr"))
_GRID_BEFORE, _GRID_SPAN, _VMERGE = (f"{_W}{n}" for n in ("gridBefore", "gridSpan", "vMerge"))


def _number(properties: Any, tag: str, default: int) -> int:
    """The whole-number ``w:val`` of child `tag` of `properties` (``w:tcPr``, ``w:trPr``);
    `default` without one (or when it is not a number)."""
    if properties is not None:
        child = properties.find(tag)
        if child is not None:
            try:
                return int(child.get(_VAL))
            except (TypeError, ValueError):
                return default
    return default


def _table_rows(table: Any) -> list[list[str]]:
    """Cell texts; a cell's nested tables and text boxes are part of its text, and a
    merged cell repeats its text in each grid cell it covers.

    The grid as python-docx's ``_Row.cells`` lays it out (a cell spanning columns is
    repeated; a cell that continues a vertical merge is the cell above it, at the same
    grid offset), built row by row: python-docx finds the cell above by XPath queries
    from each merged cell, which made a tall merged column cost more than the square of
    its height.
    """
    rows: list[list[str]] = []
    above: dict[int, list[str]] = {}
    for row in table.iterchildren(_TR):
        offset = _number(row.find(_TRPR), _GRID_BEFORE, 0)
        starts: dict[int, list[str]] = {}
        cells: list[str] = []
        for cell in row.iterchildren(_TC):
            properties = cell.find(_TCPR)
            span = _number(properties, _GRID_SPAN, 1)
            merge = properties.find(_VMERGE) if properties is not None else None
            continued = merge is not None and merge.get(_VAL, "continue") == "continue"
            if continued and offset in above:
                texts = above[offset]
            else:
                # (A merge that continues nothing is read as the cell it is.)
                texts = [_all_text(cell).replace("\n", " ")] * span
            starts.setdefault(offset, texts)
            cells.extend(texts)
            offset += span
        above = starts
        rows.append(cells)
    return rows


def _body(
    builder: FlowBuilder,
    container: Any,
    counts: dict[str, int],
    style_name: Callable[[Any], str],
) -> None:
    """Paragraphs and tables of `container` (the body, or an element in it that holds
    some, such as a content control) in reading order; a paragraph's text boxes follow it."""
    for element in container:
        if element.tag == _TBL:
            builder.table(_table_rows(element))
            continue
        if element.tag != _P:
            # Content controls, custom XML and the like hold paragraphs and tables of
            # their own; a drawing's fallback copy is skipped.
            if element.tag != _FALLBACK and isinstance(element.tag, str):
                _body(builder, element, counts, style_name)
            continue
        plain = _plain_text(element)
        if plain is None:
            text, boxes = _nested_text(element).strip(), _text_boxes(element)
        else:
            text, boxes = plain.strip(), []
        counts["text_boxes"] += len(boxes)
        if text:
            style = style_name(element)
            heading = _HEADING.match(style)
            if heading:
                builder.heading(int(heading.group(1)), text)
            elif style == "Title":
                builder.heading(1, text)
            else:
                counts["paragraphs"] += 1
                counts["words"] += len(text.split())
                builder.block(f"- {text}" if "List" in style else text)
        for box in boxes:
            builder.block(f"[text box] {box}")


def load(source: Source) -> FlowDocument:
    """The DOCX as sections: "Heading N" and "Title" styles start sections, list styles
    become bullet items, tables are kept in reading order, and text boxes follow the
    paragraph they are anchored in. Footnotes, endnotes, comments and the texts of the
    headers and footers, which live in parts of their own, become the last sections
    (titled so), and the overview counts them."""
    document = _open(source)
    builder = FlowBuilder()
    counts = {"paragraphs": 0, "words": 0, "text_boxes": 0}
    _body(builder, document.element.body, counts, paragraph_style_names(document))
    extras = {
        "Footnotes": _notes(document, "footnote", ""),
        "Endnotes": _notes(document, "endnote", "e"),
        "Comments": _comments(document),
        "Headers and footers": _margins(document),
    }
    for title, lines in extras.items():
        if lines:
            builder.heading(1, title)
            # Notes and comments are one line each; a header or footer may hold several.
            separate = title == "Headers and footers"
            for block in lines if separate else ["\n".join(lines)]:
                builder.block(block)
    facts: dict[str, object] = {
        "paragraph_count": counts["paragraphs"],
        "word_count": counts["words"],
    }
    for key, value in (
        ("text_box_count", counts["text_boxes"]),
        ("footnote_count", len(extras["Footnotes"])),
        ("endnote_count", len(extras["Endnotes"])),
        ("comment_count", len(extras["Comments"])),
        ("header_and_footer_texts", len(extras["Headers and footers"])),
    ):
        if value:
            facts[key] = value
    return builder.build(_metadata(document), **facts)


def _load_flow(source: Source) -> tuple[FlowDocument, None]:
    return load(source), None


FORMAT = DocumentFormat(
    "docx",
    "DOCX",
    (".docx",),
    FlowReader(_load_flow),
    content_check=check_office_package,
    saved_from=(".doc", ".odt", ".rtf"),
)
"""DOCX, read into sections."""
