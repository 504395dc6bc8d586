"""A PDF page's geometry for table finding: its words, text lines and ruling lines.

Read through PDFium (the reader the PDF tools already use for text), so finding tables
costs a few tens of milliseconds a page, not a second parse of the file. Everything is
turned into one upright frame: x grows to the right, y downward, and the page's dominant
text direction reads left to right, so a page turned by its `/Rotate` entry or a table set
sideways on the page is read like any other. `Layout.to_page` maps a box back onto the
page as a viewer shows it.
"""

from __future__ import annotations

import ctypes
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Affine", "Layout", "Rule", "TextLine", "Word", "apply", "read_layout"]

Affine = tuple[float, float, float, float, float, float]
"""x' = a x + c y + e, y' = b x + d y + f, as PDF writes its matrices."""

#: Ruling lines thinner than this (points) are lines; a filled shape thicker in both
#: directions is a background or a chart's bar, not a rule.
_RULE_THICKNESS = 3.0
#: A segment is horizontal or vertical when its slope is below this.
_SLOPE = 0.02
#: Form XObjects nested deeper than this are not searched for ruling lines.
_FORM_DEPTH = 4


def _compose(first: Affine, then: Affine) -> Affine:
    """The map that applies `first`, then `then`."""
    a1, b1, c1, d1, e1, f1 = first
    a2, b2, c2, d2, e2, f2 = then
    return (
        a1 * a2 + b1 * c2,
        a1 * b2 + b1 * d2,
        c1 * a2 + d1 * c2,
        c1 * b2 + d1 * d2,
        e1 * a2 + f1 * c2 + e2,
        e1 * b2 + f1 * d2 + f2,
    )


def apply(m: Affine, x: float, y: float) -> tuple[float, float]:
    return m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]


def _invert(m: Affine) -> Affine:
    a, b, c, d, e, f = m
    det = a * d - b * c
    ia, ib, ic, id_ = d / det, -b / det, -c / det, a / det
    return (ia, ib, ic, id_, -(ia * e + ic * f), -(ib * e + id_ * f))


def _box(m: Affine, x0: float, y0: float, x1: float, y1: float) -> tuple[float, ...]:
    """The upright box around the rectangle (x0, y0)-(x1, y1) mapped by `m`."""
    corners = [apply(m, x, y) for x in (x0, x1) for y in (y0, y1)]
    xs = [p[0] for p in corners]
    ys = [p[1] for p in corners]
    return min(xs), min(ys), max(xs), max(ys)


@dataclass(frozen=True, slots=True)
class Word:
    """A run of characters without a space, in the upright frame."""

    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    baseline: float
    size: float

    @property
    def center(self) -> float:
        return (self.x0 + self.x1) / 2


@dataclass(slots=True)
class TextLine:
    """Words sharing a baseline, left to right."""

    words: list[Word]
    top: float
    bottom: float
    baseline: float
    size: float

    @property
    def x0(self) -> float:
        return self.words[0].x0

    @property
    def x1(self) -> float:
        return max(w.x1 for w in self.words)


@dataclass(frozen=True, slots=True)
class Rule:
    """A horizontal (y0 == y1) or vertical (x0 == x1) ruling line."""

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def horizontal(self) -> bool:
        return self.y0 == self.y1


@dataclass
class Layout:
    """One page in the upright frame."""

    width: float
    height: float
    lines: list[TextLine]
    rules: list[Rule]
    to_page: Affine
    """Maps the upright frame onto the page as displayed (top-left origin, points)."""
    from_user: Affine
    """Maps PDF user space (where PDFium places characters) into the upright frame."""
    turned: int = 0
    """Degrees the page as displayed was turned to make its text upright."""
    other_text: int = 0
    """Characters in another direction than the dominant one (turned column headers, say);
    those at a right angle to it are also read into `turned_lines`."""
    turned_lines: list[TextLine] = field(default_factory=list)
    """Lines of text set at a right angle to the rest (vertical column heads), each as
    one word whose box is the whole line's, upright in the frame."""
    bands: list[Rule] = field(default_factory=list)
    """The upper and lower edges of filled shapes wider than tall (shaded rows or cells),
    which can separate the rows of a table without rules."""

    def page_box(self, x0: float, top: float, x1: float, bottom: float) -> list[float]:
        """A box of the frame as [left, top, right, bottom] on the displayed page."""
        left, upper, right, lower = _box(self.to_page, x0, top, x1, bottom)
        return [round(left, 1), round(upper, 1), round(right, 1), round(lower, 1)]


def _displayed(page: Any, raw: Any) -> tuple[Affine, float, float]:
    """The map from PDF user space to the displayed page (y down), and its size."""
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    if not raw.FPDFPage_GetCropBox(page, left, bottom, right, top) and not (
        raw.FPDFPage_GetMediaBox(page, left, bottom, right, top)
    ):
        left.value, bottom.value = 0.0, 0.0
        right.value = raw.FPDF_GetPageWidthF(page)
        top.value = raw.FPDF_GetPageHeightF(page)
    lo, bo = min(left.value, right.value), min(bottom.value, top.value)
    ro, to = max(left.value, right.value), max(bottom.value, top.value)
    width, height = ro - lo, to - bo
    turns = raw.FPDFPage_GetRotation(page) % 4
    if turns == 1:
        return (0.0, 1.0, 1.0, 0.0, -bo, -lo), height, width
    if turns == 2:
        return (-1.0, 0.0, 0.0, 1.0, ro, -bo), width, height
    if turns == 3:
        return (0.0, -1.0, -1.0, 0.0, to, ro), height, width
    return (1.0, 0.0, 0.0, -1.0, -lo, to), width, height


def _upright(direction: int, width: float, height: float) -> Affine:
    """The map from the displayed page to the frame in which text of `direction`
    (degrees, clockwise from reading left to right on the displayed page) is upright."""
    if direction == 90:
        return (0.0, -1.0, 1.0, 0.0, 0.0, width)
    if direction == 180:
        return (-1.0, 0.0, 0.0, -1.0, width, height)
    if direction == 270:
        return (0.0, 1.0, -1.0, 0.0, height, 0.0)
    return (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


@dataclass(slots=True)
class _Char:
    text: str
    box: tuple[float, float, float, float]  # user space: left, bottom, right, top
    direction: int


def _chars(textpage: Any, raw: Any, to_display: Affine) -> list[_Char]:
    """The page's visible characters with their loose boxes (the font's full height, so
    characters of one line share top and bottom) and reading direction."""
    count = raw.FPDFText_CountChars(textpage)
    rect = raw.FS_RECTF()
    matrix = raw.FS_MATRIX()
    get_unicode = raw.FPDFText_GetUnicode
    get_box = raw.FPDFText_GetLooseCharBox
    get_matrix = raw.FPDFText_GetMatrix
    la, lb, lc, ld = to_display[:4]
    found: list[_Char] = []
    for index in range(max(count, 0)):
        code = get_unicode(textpage, index)
        if code <= 32 or code == 0xA0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
            continue
        if not get_box(textpage, index, rect):
            continue
        get_matrix(textpage, index, matrix)
        # The direction of the text's baseline on the displayed page (y down).
        dx = la * matrix.a + lc * matrix.b
        dy = lb * matrix.a + ld * matrix.b
        flat = abs(dx) >= abs(dy)
        direction = (0 if dx >= 0 else 180) if flat else (90 if dy > 0 else 270)
        bottom, top = rect.bottom, rect.top
        if bottom > top:
            bottom, top = top, bottom
        found.append(_Char(chr(code), (rect.left, bottom, rect.right, top), direction))
    return found


def _words(chars: list[tuple[str, float, float, float, float, float]]) -> list[TextLine]:
    """Text lines of words from characters (text, x0, top, x1, bottom, baseline) of one
    direction, in the upright frame."""
    ordered = sorted(chars, key=lambda c: (c[5], c[1]))
    rows: list[list[tuple[str, float, float, float, float, float]]] = []
    extents: list[list[float]] = []  # top and bottom of each row so far
    for char in ordered:
        top, bottom = char[2], char[4]
        height = bottom - top
        for k in range(len(rows) - 1, max(len(rows) - 4, -1), -1):
            row_top, row_bottom = extents[k]
            overlap = min(bottom, row_bottom) - max(top, row_top)
            # A raised or lowered smaller character (a footnote mark) lies within its
            # line; lines set close together overlap only a little.
            if overlap >= 0.6 * max(min(height, row_bottom - row_top), 0.5):
                rows[k].append(char)
                extents[k] = [min(row_top, top), max(row_bottom, bottom)]
                break
        else:
            rows.append([char])
            extents.append([top, bottom])
    lines: list[TextLine] = []
    for row in rows:
        row.sort(key=lambda c: c[1])
        words: list[Word] = []
        current: list[tuple[str, float, float, float, float, float]] = []
        for char in row:
            if current:
                last = current[-1]
                size = max(last[4] - last[2], char[4] - char[2])
                gap = char[1] - last[3]
                if gap > size * 0.18 or gap < -size * 0.5:
                    words.append(_word(current))
                    current = []
            current.append(char)
        if current:
            words.append(_word(current))
        lines.append(
            TextLine(
                words,
                top=min(w.top for w in words),
                bottom=max(w.bottom for w in words),
                baseline=sorted(w.baseline for w in words)[len(words) // 2],  # the median
                size=max(w.size for w in words),
            )
        )
    lines.sort(key=lambda line: line.baseline)
    return lines


def _turned(lines: list[TextLine], turn: int) -> list[TextLine]:
    """Lines read in a frame turned by `turn` degrees (90 or 270), back in the frame: each
    line one word with the line's box."""
    found: list[TextLine] = []
    for line in lines:
        start, end = min(w.x0 for w in line.words), max(w.x1 for w in line.words)
        if turn == 270:
            x0, top, x1, bottom = line.top, -end, line.bottom, -start
        else:
            x0, top, x1, bottom = -line.bottom, start, -line.top, end
        text = " ".join(w.text for w in line.words)
        word = Word(text, x0, top, x1, bottom, bottom, line.size)
        found.append(TextLine([word], top, bottom, bottom, line.size))
    return found


def _word(chars: list[tuple[str, float, float, float, float, float]]) -> Word:
    top = min(c[2] for c in chars)
    bottom = max(c[4] for c in chars)
    return Word(
        "".join(c[0] for c in chars),
        chars[0][1],
        top,
        max(c[3] for c in chars),
        bottom,
        chars[0][5],
        bottom - top,
    )


def _path_segments(obj: Any, raw: Any, matrix: Affine) -> Iterator[tuple[float, ...]]:
    """Straight segments of a path object, as (x0, y0, x1, y1, thickness, filled)."""
    fill = ctypes.c_int()
    stroke = ctypes.c_int()
    raw.FPDFPath_GetDrawMode(obj, fill, stroke)
    filled = fill.value != raw.FPDF_FILLMODE_NONE
    if not (filled or stroke.value):
        return
    width = ctypes.c_float()
    thickness = float(width.value) if raw.FPDFPageObj_GetStrokeWidth(obj, width) else 1.0
    px, py = ctypes.c_float(), ctypes.c_float()
    start: tuple[float, float] | None = None
    last: tuple[float, float] | None = None
    points: list[tuple[float, float]] = []
    for index in range(raw.FPDFPath_CountSegments(obj)):
        segment = raw.FPDFPath_GetPathSegment(obj, index)
        if not segment or not raw.FPDFPathSegment_GetPoint(segment, px, py):
            continue
        point = apply(matrix, px.value, py.value)
        kind = raw.FPDFPathSegment_GetType(segment)
        if kind == raw.FPDF_SEGMENT_MOVETO:
            start = last = point
        elif kind == raw.FPDF_SEGMENT_LINETO and last is not None:
            points.append(last)
            points.append(point)
            last = point
        else:
            last = point
        if raw.FPDFPathSegment_GetClose(segment) and start is not None and last is not None:
            points.append(last)
            points.append(start)
            last = start
    if filled and not stroke.value:
        # A filled shape is a rule only when it is thin: its box is the rule.
        if not points:
            return
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        w, h = max(xs) - min(xs), max(ys) - min(ys)
        if w <= _RULE_THICKNESS and h > w:
            x = (max(xs) + min(xs)) / 2
            yield (x, min(ys), x, max(ys), w, 1.0)
        elif h <= _RULE_THICKNESS and w > h:
            y = (max(ys) + min(ys)) / 2
            yield (min(xs), y, max(xs), y, h, 1.0)
        elif w > h:
            # A band of colour (a shaded row or cell): its upper and lower edges.
            for y in (min(ys), max(ys)):
                yield (min(xs), y, max(xs), y, h, 2.0)
        return
    for index in range(0, len(points) - 1, 2):
        (x0, y0), (x1, y1) = points[index], points[index + 1]
        yield (x0, y0, x1, y1, thickness, 0.0)


def _rules(page: Any, raw: Any, to_frame: Affine) -> tuple[list[Rule], list[Rule]]:
    """The page's ruling lines, and the horizontal edges of its bands of colour."""
    found: list[Rule] = []
    bands: list[Rule] = []
    matrix = raw.FS_MATRIX()

    def walk(get: Any, count: int, parent: Affine, depth: int) -> None:
        for index in range(count):
            obj = get(index)
            if not obj:
                continue
            kind = raw.FPDFPageObj_GetType(obj)
            if kind == raw.FPDF_PAGEOBJ_PATH:
                for x0, y0, x1, y1, _thick, filled in _path_segments(obj, raw, parent):
                    fx0, fy0 = apply(to_frame, x0, y0)
                    fx1, fy1 = apply(to_frame, x1, y1)
                    dx, dy = abs(fx1 - fx0), abs(fy1 - fy0)
                    if filled == 2.0:
                        if dx >= 1.0 and dy <= dx * _SLOPE:
                            y = (fy0 + fy1) / 2
                            bands.append(Rule(min(fx0, fx1), y, max(fx0, fx1), y))
                    elif dx >= 1.0 and dy <= dx * _SLOPE:
                        y = (fy0 + fy1) / 2
                        found.append(Rule(min(fx0, fx1), y, max(fx0, fx1), y))
                    elif dy >= 1.0 and dx <= dy * _SLOPE:
                        x = (fx0 + fx1) / 2
                        found.append(Rule(x, min(fy0, fy1), x, max(fy0, fy1)))
            elif (
                kind == raw.FPDF_PAGEOBJ_FORM
                and depth < _FORM_DEPTH
                and raw.FPDFPageObj_GetMatrix(obj, matrix)
            ):
                own: Affine = (matrix.a, matrix.b, matrix.c, matrix.d, matrix.e, matrix.f)
                inner = _compose(own, parent)

                def child(i: int, form: Any = obj) -> Any:
                    return raw.FPDFFormObj_GetObject(form, i)

                walk(child, raw.FPDFFormObj_CountObjects(obj), inner, depth + 1)

    identity: Affine = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)

    def top(i: int) -> Any:
        return raw.FPDFPage_GetObject(page, i)

    walk(top, raw.FPDFPage_CountObjects(page), identity, 0)
    return found, bands


def read_layout(page: Any, textpage: Any) -> Layout:
    """The words, text lines and ruling lines of a PDFium page (`PdfPage`, with its
    `PdfTextPage`), turned so that most of its text reads left to right."""
    import pypdfium2.raw as raw  # type: ignore[import-untyped]

    to_display, width, height = _displayed(page.raw, raw)
    chars = _chars(textpage.raw, raw, to_display)
    votes = Counter(c.direction for c in chars)
    direction = votes.most_common(1)[0][0] if votes else 0
    upright = _upright(direction, width, height)
    to_frame = _compose(to_display, upright)
    frame_w, frame_h = (height, width) if direction in (90, 270) else (width, height)
    main: list[tuple[str, float, float, float, float, float]] = []
    across: dict[int, list[tuple[str, float, float, float, float, float]]] = {90: [], 270: []}
    other = 0
    a, b, c, d, e, f = to_frame
    seen: set[tuple[str, int, int]] = set()
    for char in chars:
        left, lower, right, upper = char.box
        # A character drawn again in the same place (text made bold by printing it twice)
        # is read once.
        key = (char.text, round(left * 2), round(lower * 2))
        if key in seen:
            continue
        seen.add(key)
        # The frame is the user space turned by quarter turns: two corners make the box.
        xa, ya = a * left + c * lower + e, b * left + d * lower + f
        xb, yb = a * right + c * upper + e, b * right + d * upper + f
        x0, x1 = (xa, xb) if xa <= xb else (xb, xa)
        top, bottom = (ya, yb) if ya <= yb else (yb, ya)
        if char.direction != direction:
            other += 1
            turn = (char.direction - direction) % 360
            if turn == 270:  # reading upwards: its own frame is this one turned back
                across[turn].append((char.text, -bottom, x0, -top, x1, x1))
            elif turn == 90:  # reading downwards
                across[turn].append((char.text, top, -x1, bottom, -x0, -x0))
            continue
        # The loose box's bottom stands in for the baseline: it lies the font's descent
        # below it, the same for every character of a line.
        main.append((char.text, x0, top, x1, bottom, bottom))
    lines = _words(main)
    rules, bands = _rules(page.raw, raw, to_frame)
    return Layout(
        width=frame_w,
        height=frame_h,
        lines=lines,
        rules=rules,
        turned_lines=[*_turned(_words(across[270]), 270), *_turned(_words(across[90]), 90)],
        bands=bands,
        to_page=_invert(upright),
        from_user=to_frame,
        turned=direction,
        other_text=other,
    )
