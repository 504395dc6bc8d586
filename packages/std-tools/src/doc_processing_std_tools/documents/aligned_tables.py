"""Tables without vertical rules, found from the alignment of their text.

A text line is cut into segments where the gap between two words is wider than a space.
Lines of several segments that follow each other closely make a candidate block; its
columns are the vertical bands of white space ("rivers") that run through almost all of
its lines, so a header cell that spans columns interrupts a river without closing it. Each
text line is a row, unless horizontal rules separate the rows: then the lines between two
rules are one row (cells of several lines). A segment that crosses a river is a cell that
spans columns. Blocks that look like running text set in columns (long cells of many
words), or that have fewer than two columns or rows, are not tables.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from .page_layout import Rule, TextLine, Word
from .table_grid import FoundTable, build_table, drop_empty

__all__ = ["aligned_tables", "prose_like", "rivers", "segments"]

#: A gap between two words wider than this many times the line's height separates cells.
_CELL_GAP = 0.55
#: Lines further apart than this many times the line height do not belong to one block.
_BLOCK_GAP = 1.6
#: Lines of one segment that a block may contain in a row (headers, cells of two lines).
_SINGLE_RUN = 2
#: A line of one segment wider than this share of the block ends it (a note, a title).
_WIDE_LINE = 0.5
#: A block whose cells hold more words than this on average is running text.
_PROSE_WORDS = 4.5
#: Cells needed before the way cells start says whether they are cut from running text.
_PROSE_CELLS = 12
#: ... and so is one in which every column's cells hold more words than this.
_WORDY_COLUMN = 3.0
#: A line set closer than this share of the usual distance between rows to the line
#: above can be the next line of a cell.
_CELL_LINES = 0.85
#: Blocks with the same columns this many line heights apart, or less, with at most a few
#: section headings between them, are parts of one table.
_SECTION_GAP = 4.0
#: The marker of a list item: a number, letter or roman numeral with a full stop or a
#: bracket, or a bullet.
_MARKER = re.compile(
    r"(?:\(?(?:\d{1,3}|[a-zA-Z]|[ivxlcIVXLC]{1,6})[.)]|[\u2022\u00b7\u25aa\u25cf\u2013\u2014*-])$"
)
#: A line that opens like this names a table or figure of its own (or notes one).
_CAPTION = re.compile(r"(table|tab\.|figure|fig\.|chart|source|notes?)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Segment:
    x0: float
    x1: float
    words: tuple[Word, ...]


def segments(line: TextLine) -> list[_Segment]:
    """The line's words grouped into cells by wide gaps."""
    found: list[list[Word]] = [[line.words[0]]]
    for word in line.words[1:]:
        last = found[-1][-1]
        if word.x0 - last.x1 > _CELL_GAP * max(line.size, 1.0):
            found.append([word])
        else:
            found[-1].append(word)
    return [_Segment(g[0].x0, max(w.x1 for w in g), tuple(g)) for g in found]


def _blocks(lines: list[TextLine], cut: list[list[_Segment]]) -> list[list[int]]:
    """Runs of line indices: lines of several segments, close to each other, with at most
    `_SINGLE_RUN` lines of one segment in a row between them."""
    blocks: list[list[int]] = []
    current: list[int] = []
    singles: list[int] = []
    for index, line in enumerate(lines):
        if current:
            previous = lines[(singles or current)[-1]]
            gap = line.top - previous.bottom
            if gap > _BLOCK_GAP * max(line.size, previous.size) or line.top < previous.top:
                blocks.append(current)
                current, singles = [], []
        if len(cut[index]) >= 2:
            current.extend(singles)
            current.append(index)
            singles = []
        elif current:
            left = min(lines[i].x0 for i in current)
            right = max(lines[i].x1 for i in current)
            if (
                line.x1 - line.x0 > _WIDE_LINE * (right - left)
                or len(singles) >= _SINGLE_RUN
                or _CAPTION.match(_text(line))
            ):
                # A sentence across the block (a note, a title), a run of such lines, or
                # the caption of the next table.
                blocks.append(current)
                current, singles = [], []
            else:
                singles.append(index)
    if current:
        blocks.append(current)
    return [b for b in blocks if sum(len(cut[i]) >= 2 for i in b) >= 2]


def rivers(rows: list[list[_Segment]], x0: float, x1: float, size: float) -> list[float]:
    """Column boundaries inside (x0, x1): in each band that almost no segment of `rows`
    covers (and that is at least a small gap wide), the middle of its least covered part."""
    n = len(rows)
    allowed = max(1, int(n * 0.2)) if n >= 5 else 0
    events: list[tuple[float, int]] = []
    for row in rows:
        for seg in row:
            events.append((seg.x0, 1))
            events.append((seg.x1, -1))
    events.sort()
    # The depth of cover between consecutive event positions.
    pieces: list[tuple[float, float, int]] = []
    depth = 0
    last = x0
    for x, step in events:
        if x > last:
            pieces.append((last, x, depth))
            last = x
        depth += step
    if x1 > last:
        pieces.append((last, x1, depth))
    found: list[float] = []
    band: list[tuple[float, float, int]] = []
    for piece in [*pieces, (x1, x1, n + 1)]:
        if piece[2] <= allowed:
            band.append(piece)
            continue
        wide = bool(band) and band[-1][1] - band[0][0] >= size * 0.25
        if wide and band[0][0] > x0 + 0.5 and band[-1][1] < x1 - 0.5:
            least = min(p[2] for p in band)
            best = max((p for p in band if p[2] == least), key=lambda p: p[1] - p[0])
            found.append((best[0] + best[1]) / 2)
        band = []
    return found


def _trim(indices: list[int], cut: list[list[_Segment]], xs: list[float]) -> list[int]:
    """Leave out leading and trailing lines that cross most column boundaries (titles,
    notes) and trailing lines of one segment."""

    def crossings(i: int) -> int:
        return sum(1 for x in xs[1:-1] for s in cut[i] if s.x0 < x < s.x1)

    inner = len(xs) - 2
    while indices and (crossings(indices[0]) * 2 >= max(inner, 1) and inner > 1):
        indices = indices[1:]
    while indices and (
        len(cut[indices[-1]]) < 2 or (crossings(indices[-1]) * 2 >= max(inner, 1) and inner > 1)
    ):
        indices = indices[:-1]
    return indices


def _columns_of(seg: _Segment, xs: list[float]) -> tuple[int, int]:
    """The first and last column a segment reaches into."""
    first = max(0, sum(1 for x in xs[1:-1] if x <= seg.x0))
    last = max(0, sum(1 for x in xs[1:-1] if x < seg.x1))
    return first, last


def _centred(seg: _Segment, xs: list[float]) -> tuple[int, int] | None:
    """The columns (not the first) a segment is centred over, if it is centred over some
    that include those it reaches into."""
    first, last = _columns_of(seg, xs)
    if first < 1:
        return None
    centre = (seg.x0 + seg.x1) / 2

    def offset(ab: tuple[int, int]) -> float:
        return abs((xs[ab[0]] + xs[ab[1] + 1]) / 2 - centre)

    def width(ab: tuple[int, int]) -> float:
        return xs[ab[1] + 1] - xs[ab[0]]

    options = [(a, b) for a in range(1, first + 1) for b in range(last, len(xs) - 1)]
    # The widest columns it is centred over, within what column edges inferred from
    # text can tell; else the closest, when near enough.
    close = [ab for ab in options if offset(ab) <= 0.06 * width(ab)]
    if close:
        return max(close, key=width)
    best = min(options, key=lambda ab: (offset(ab), width(ab)))
    return best if offset(best) <= 0.15 * width(best) else None


def _fits(seg: _Segment, xs: list[float]) -> str:
    """How a segment sits on the columns `xs`: "inside" one column, "spanning" several
    (centred over them, not starting in the first), or "across" (a title or a note)."""
    if seg.x0 < xs[0] - 2 or seg.x1 > xs[-1] + 2:
        return "across"
    first, last = _columns_of(seg, xs)
    if first == last:
        return "inside"
    return "spanning" if _centred(seg, xs) is not None else "across"


def _covers(seg: _Segment, xs: list[float]) -> tuple[int, int]:
    """The first and last column a segment covers: those it reaches into or, for a header
    centred over several columns, the columns it is centred over."""
    first, last = _columns_of(seg, xs)
    if first == last:
        return first, last
    return _centred(seg, xs) or (first, last)


def _heads(
    lines: list[TextLine], cut: list[list[_Segment]], first: int, xs: list[float]
) -> list[int]:
    """Lines just above a block that belong to it: column heads of one segment and headers
    spanning columns, close above it."""
    added: list[int] = []
    below = lines[first]
    for k in range(first - 1, max(first - 3, -1), -1):
        line = lines[k]
        gap = below.top - line.bottom
        kinds = {_fits(seg, xs) for seg in cut[k]}
        if "across" in kinds or gap < -1:
            break
        limit = _BLOCK_GAP if "spanning" in kinds else 0.8
        if gap > limit * max(line.size, below.size):
            break
        added.append(k)
        below = line
    return sorted(added)


def _tails(
    lines: list[TextLine], cut: list[list[_Segment]], last: int, xs: list[float]
) -> list[int]:
    """Lines just below a block that belong to its last row: the further lines of its
    cells, each inside one column and as close as the lines of one cell."""
    added: list[int] = []
    above = lines[last]
    for k in range(last + 1, min(last + 3, len(lines))):
        line = lines[k]
        gap = line.top - above.bottom
        if gap < -1 or gap > 0.5 * max(line.size, above.size):
            break
        if any(_fits(seg, xs) != "inside" for seg in cut[k]):
            break
        added.append(k)
        above = line
    return added


def _row_bounds(
    block: list[TextLine], hrules: list[Rule], x0: float, x1: float
) -> tuple[list[float], bool]:
    """Row boundaries: between the lines, or, when horizontal rules separate most rows, at
    the rules (so a cell of several lines between two rules is one cell)."""
    top, bottom = block[0].top, block[-1].bottom
    width = x1 - x0
    inside = sorted(
        {
            round(r.y0, 1)
            for r in hrules
            if top < r.y0 < bottom and min(r.x1, x1) - max(r.x0, x0) >= 0.6 * width
        }
    )
    separating: list[float] = []
    for y in inside:
        if not separating or y - separating[-1] > 2.0:
            separating.append(y)
    # Rules must not cut through a line of text; of rules with no text between them (the
    # edges of two bands of colour with a white line between), one is enough.
    separating = [
        y for y in separating if not any(line.top + 1 < y < line.bottom - 1 for line in block)
    ]
    middles = [(line.top + line.bottom) / 2 for line in block]
    separating = [
        y
        for k, y in enumerate(separating)
        if k == 0 or any(separating[k - 1] < m < y for m in middles)
    ]
    bounds = [top - 0.5, *separating, bottom + 0.5]
    per_row = [
        sum(1 for line in block if a < (line.top + line.bottom) / 2 < b)
        for a, b in itertools.pairwise(bounds)
    ]
    if len(separating) >= 2 and max(per_row) <= 3 and len(per_row) < len(block):
        return bounds, True
    ys = [top - 0.5]
    for upper, lower in itertools.pairwise(block):
        ys.append((upper.bottom + lower.top) / 2 if lower.top > upper.bottom else lower.top)
    ys.append(bottom + 0.5)
    return ys, False


def _join_cell_lines(
    ys: list[float], block: list[TextLine], cut: list[list[_Segment]], xs: list[float]
) -> list[float]:
    """Row boundaries without those inside a cell of several lines. A line carries on the
    row above when it is set closer to it than the rows are to each other, and it holds
    text only in columns where the line above does, leaving some of them empty (the second
    line of a name or of a column head, not a row of its own)."""
    pitches = [b.baseline - a.baseline for a, b in itertools.pairwise(block)]
    if len(pitches) < 2:
        return ys
    filled: list[set[int]] = []
    for segs in cut:
        columns: set[int] = set()
        for seg in segs:
            first, last = _covers(seg, xs)
            columns.update(range(first, last + 1))
        filled.append(columns)
    # The usual distance between rows: between lines of which the lower one cannot be the
    # next line of a cell (it fills a column the upper one leaves empty, or all of them).
    starts = [p for k, p in enumerate(pitches, start=1) if not filled[k] < filled[k - 1]]
    usual = sorted(starts or pitches)[len(starts or pitches) // 2]
    kept = [ys[0]]
    for k, pitch in enumerate(pitches, start=1):
        above, here = filled[k - 1], filled[k]
        tight = pitch < _CELL_LINES * usual and pitch < usual - 0.2 * block[k].size
        if not (tight and here < above):
            kept.append(ys[k])
    kept.append(ys[-1])
    return kept


def _one_table(
    lines: list[TextLine], cut: list[list[_Segment]], indices: list[int], hrules: list[Rule]
) -> FoundTable | None:
    size = sorted(lines[i].size for i in indices)[len(indices) // 2]
    x0 = min(lines[i].x0 for i in indices)
    x1 = max(lines[i].x1 for i in indices)
    inner = rivers([cut[i] for i in indices], x0, x1, size)
    xs = [x0 - 0.5, *inner, x1 + 0.5]
    indices = _trim(indices, cut, xs)
    if len(indices) < 2 or len(xs) < 3:
        return None
    x0 = min(lines[i].x0 for i in indices)
    x1 = max(lines[i].x1 for i in indices)
    inner = rivers([cut[i] for i in indices], x0, x1, size)
    xs = [x0 - 0.5, *inner, x1 + 0.5]
    if len(xs) < 3:
        return None
    indices = [
        *_heads(lines, cut, indices[0], xs),
        *indices,
        *_tails(lines, cut, indices[-1], xs),
    ]
    block = [lines[i] for i in indices]
    ys, by_rules = _row_bounds(block, hrules, x0, x1)
    if not by_rules:
        ys = _join_cell_lines(ys, block, [cut[i] for i in indices], xs)
    crossing: set[tuple[int, int]] = set()
    for i in indices:
        line = lines[i]
        middle = (line.top + line.bottom) / 2
        row = max(0, min(len(ys) - 2, sum(1 for y in ys[1:-1] if y <= middle)))
        for seg in cut[i]:
            first, last = _covers(seg, xs)
            crossing.update((row, j) for j in range(first + 1, last + 1))
    rows, spans, _ = build_table(
        xs,
        ys,
        block,
        vertical=lambda r, j: (r, j) not in crossing,
        horizontal=lambda i, c: True,
    )
    table = drop_empty(
        FoundTable(rows, spans, (x0, block[0].top, x1, block[-1].bottom), "aligned", 0.0, xs)
    )
    return _judged(table, by_rules)


def prose_like(rows: list[list[str]], *, ruled: bool = False) -> bool:
    """Whether cells read like running text cut into columns: every column wordy, many
    words a cell, or most cells starting in the middle of a sentence. In a grid drawn
    with rules (`ruled`), one column of long text (comments, descriptions) beside
    columns of short cells is a table: there it takes most columns being wordy."""
    cells = [c for row in rows for c in row if c]
    if not cells:
        return True
    if not ruled and sum(len(c.split()) for c in cells) / len(cells) > _PROSE_WORDS:
        return True
    wordy = []
    for c in range(len(rows[0])):
        column = [row[c] for row in rows if row[c]]
        if column:
            wordy.append(sum(len(t.split()) for t in column) / len(column) > _WORDY_COLUMN)
    if wordy and (all(wordy) or (ruled and sum(wordy) * 2 > len(wordy))):
        return True
    # Cells of a table are names, figures and codes; text cut into pieces starts most of
    # them in mid-sentence, and holds few figures (told apart on enough cells only).
    if len(cells) < _PROSE_CELLS:
        return False
    lower = sum(1 for c in cells if c[0].islower()) / len(cells)
    figures = sum(1 for c in cells if any(ch.isdigit() for ch in c)) / len(cells)
    return lower > 0.5 or (lower > 0.3 and figures < 0.2)


def _listed(rows: list[list[str]]) -> bool:
    """Whether the rows are a list: a column of markers (1. 2. 3., a) b), bullets) and one
    of the items' text."""
    return len(rows[0]) == 2 and all(_MARKER.match(row[0]) for row in rows if any(row))


def _judged(table: FoundTable, by_rules: bool) -> FoundTable | None:
    """The table with its confidence, or None when it does not look like a table."""
    rows = table.rows
    if len(rows) < 2 or not rows or len(rows[0]) < 2 or prose_like(rows) or _listed(rows):
        return None
    cells = [c for row in rows for c in row if c]
    multi = sum(1 for row in rows if sum(1 for c in row if c) >= 2) / len(rows)
    filled = len(cells) / (len(rows) * len(rows[0]))
    if multi < 0.4 or filled < 0.3:
        return None
    confidence = 0.35 + 0.3 * multi + 0.25 * filled + (0.1 if by_rules else 0.0)
    table.confidence = round(min(confidence, 0.95), 2)
    return table


def aligned_tables(lines: list[TextLine], hrules: list[Rule]) -> list[FoundTable]:
    """The tables found by alignment among `lines` (top to bottom), with `hrules` (the
    page's horizontal rules) marking the rows where they separate them."""
    if not lines:
        return []
    cut = [segments(line) for line in lines]
    found: list[tuple[list[int], FoundTable]] = []
    for block in _blocks(lines, cut):
        table = _one_table(lines, cut, block, hrules)
        if table is None:
            continue
        if found and (joined := _stacked(lines, cut, found[-1], (block, table), hrules)):
            found[-1] = joined
        else:
            found.append((block, table))
    return [table for _, table in found]


def _numeric(text: str) -> bool:
    return any(ch.isdigit() for ch in text)


def _stacked(
    lines: list[TextLine],
    cut: list[list[_Segment]],
    upper: tuple[list[int], FoundTable],
    lower: tuple[list[int], FoundTable],
    hrules: list[Rule],
) -> tuple[list[int], FoundTable] | None:
    """One table made of two blocks found one above the other, when they are parts of one
    table that a wider gap (a space between sections) or section headings of one cell
    split: the lines between them are such headings, set in the first column, and both
    parts, and the two joined, have the same columns. Not when the lower part starts with
    column heads of its own (words over columns of figures): that is another table."""
    (above, first), (below, second) = upper, lower
    width = len(first.rows[0])
    if width != len(second.rows[0]):
        return None
    size = sorted(lines[i].size for i in above)[len(above) // 2]
    if abs(first.box[0] - second.box[0]) > size or abs(first.box[2] - second.box[2]) > 3 * size:
        return None
    opening = second.rows[0]
    own_heads = all(opening) and not any(_numeric(c) for c in opening[1:])
    if own_heads and any(_numeric(row[c]) for row in first.rows[1:] for c in range(1, width)):
        return None
    end = max(above)
    between = [
        k
        for k in range(end + 1, min(below))
        if lines[k].top >= first.box[3] - 1 and lines[k].bottom <= second.box[1] + 1
    ]
    heads = [k for k in range(end + 1, min(below)) if lines[k].top >= second.box[1] - 1]
    if len(between) > _SINGLE_RUN + 1 or len(between) + len(heads) < min(below) - end - 1:
        # More than a few headings, or lines beside the blocks: not one table.
        return None
    below = [*heads, *below]
    inner = first.columns[1] if len(first.columns) > 2 else first.box[2]
    previous = lines[end]
    for k in [*between, below[0]]:
        line = lines[k]
        if line.top - previous.bottom > _SECTION_GAP * max(size, line.size):
            return None
        if k in between and (
            len(cut[k]) != 1
            or abs(line.x0 - first.box[0]) > size
            or line.x1 > inner
            or _CAPTION.match(_text(line))
        ):
            return None
        previous = line
    joined = _one_table(lines, cut, sorted({*above, *between, *below}), hrules)
    if joined is None or len(joined.rows[0]) != width:
        return None
    if len(joined.rows) < len(first.rows) + len(second.rows):
        return None
    return sorted({*above, *between, *below}), joined


def _text(line: TextLine) -> str:
    return " ".join(w.text for w in line.words)
