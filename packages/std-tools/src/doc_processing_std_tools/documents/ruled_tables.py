"""Tables drawn with ruling lines on every side of their cells (and frames around tables).

Ruling lines that touch or cross form a grid; the cell boundaries are where a rule runs,
and positions with no rule between them form one spanning cell. When a grid has fewer
rules than its text has rows or columns (a frame, or a header rule, around an unruled
body), the body is cut further by the text's own rivers and baselines, so the frame does
not swallow it into one cell. A grid whose cells are mostly empty (a chart's gridlines,
an empty form) or that has a single row or column of cells (a frame around text) is not a
table.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence

from .aligned_tables import prose_like, rivers, segments
from .page_layout import Rule, TextLine
from .table_grid import FoundTable, Groups, build_table

__all__ = ["merge_rules", "ruled_tables"]

#: Points by which rules may miss each other and still meet, or be one rule.
_TOUCH = 2.0
#: Share of a cell's side a rule must cover to separate it from its neighbour.
_COVER = 0.6
#: A grid with fewer of its cells holding text than this is not a table.
_MIN_FILLED = 0.25


def merge_rules(rules: list[Rule]) -> tuple[list[Rule], list[Rule]]:
    """Horizontal and vertical rules, with pieces of one line (and double strokes of it)
    joined."""

    def join(items: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
        items.sort()
        merged: list[list[float]] = []
        for pos, a, b in items:
            for m in reversed(merged[-8:]):
                if abs(m[0] - pos) <= 1.0 and a <= m[2] + _TOUCH and b >= m[1] - _TOUCH:
                    m[1], m[2] = min(m[1], a), max(m[2], b)
                    break
            else:
                merged.append([pos, a, b])
        return [(m[0], m[1], m[2]) for m in merged]

    flat = join([(r.y0, r.x0, r.x1) for r in rules if r.horizontal])
    upright = join([(r.x0, r.y0, r.y1) for r in rules if not r.horizontal])
    return (
        [Rule(a, y, b, y) for y, a, b in flat],
        [Rule(x, a, x, b) for x, a, b in upright],
    )


def _components(flat: list[Rule], upright: list[Rule]) -> list[tuple[list[Rule], list[Rule]]]:
    sets = Groups(len(flat) + len(upright))
    by_x = sorted(range(len(upright)), key=lambda k: upright[k].x0)
    for i, h in enumerate(flat):
        for k in by_x:
            v = upright[k]
            if v.x0 < h.x0 - _TOUCH:
                continue
            if v.x0 > h.x1 + _TOUCH:
                break
            if v.y0 - _TOUCH <= h.y0 <= v.y1 + _TOUCH:
                sets.join(i, len(flat) + k)
    parts: dict[int, tuple[list[Rule], list[Rule]]] = defaultdict(lambda: ([], []))
    for i, h in enumerate(flat):
        parts[sets.find(i)][0].append(h)
    for k, v in enumerate(upright):
        parts[sets.find(len(flat) + k)][1].append(v)
    return [p for p in parts.values() if len(p[0]) >= 2 and len(p[1]) >= 2]


def _positions(values: list[float]) -> list[float]:
    ordered = sorted(values)
    found: list[float] = []
    for v in ordered:
        if not found or v - found[-1] > _TOUCH:
            found.append(v)
    return found


def _near(rules: list[Rule], positions: list[float], vertical: bool) -> list[list[Rule]]:
    """For each grid position, the rules that run along it."""
    found: list[list[Rule]] = [[] for _ in positions]
    for rule in rules:
        at = rule.x0 if vertical else rule.y0
        for k, pos in enumerate(positions):
            if abs(at - pos) <= _TOUCH:
                found[k].append(rule)
    return found


def _covered(rules: list[Rule], a: float, b: float, vertical: bool) -> bool:
    """Whether `rules` (those along one grid position) cover most of `a`..`b`."""
    total = 0.0
    for r in rules:
        lo, hi = (r.y0, r.y1) if vertical else (r.x0, r.x1)
        total += max(0.0, min(hi, b) - max(lo, a))
    return total >= (b - a) * _COVER


def _inside(lines: list[TextLine], box: tuple[float, float, float, float]) -> list[TextLine]:
    """The parts of `lines` whose words lie in `box`."""
    x0, top, x1, bottom = box
    found: list[TextLine] = []
    for line in lines:
        middle = (line.top + line.bottom) / 2
        if not top < middle < bottom:
            continue
        words = [w for w in line.words if x0 < w.center < x1]
        if words:
            found.append(TextLine(words, line.top, line.bottom, line.baseline, line.size))
    return found


def _column_rivers(lines: list[TextLine], xs: list[float]) -> list[float]:
    """Column boundaries the text shows inside the grid's columns."""
    extra: list[float] = []
    cuts = [segments(line) for line in lines]
    for a, b in itertools.pairwise(xs):
        rows = []
        several = 0
        for pieces in cuts:
            cut = [s for s in pieces if a < (s.x0 + s.x1) / 2 < b]
            if cut:
                rows.append(cut)
                several += len(cut) >= 2
        if several >= 2 and len(rows) >= 3 and several * 2 >= len(rows):
            size = sorted(line.size for line in lines)[len(lines) // 2]
            extra.extend(rivers(rows, a, b, size))
    return extra


def _row_splits(lines: list[TextLine], xs: list[float], ys: list[float]) -> list[float]:
    """Row boundaries between text lines, inside the grid rows that hold an unruled body:
    where two or more lines each start a record (text in the grid row's first column and
    in another), and the grid has few rules for its lines (three lines or more a row on
    average) or the grid row holds three records or more. Elsewhere the lines between two
    rules are one row (cells of several lines)."""
    bands = [
        [line for line in lines if a < (line.top + line.bottom) / 2 < b]
        for a, b in itertools.pairwise(ys)
    ]
    used = [band for band in bands if band]
    sparse = bool(used) and sum(len(b) for b in used) >= 3 * len(used)
    extra: list[float] = []
    for band in bands:
        columns = [{sum(1 for x in xs[1:-1] if x < w.center) for w in line.words} for line in band]
        if not columns:
            continue
        key = min(min(c) for c in columns)
        records = sum(1 for c in columns if key in c and len(c) >= 2)
        if records >= 2 and (sparse or records >= 3):
            for upper, lower in itertools.pairwise(band):
                extra.append((upper.bottom + lower.top) / 2)
    return extra


def _one_grid(
    flat: list[Rule], upright: list[Rule], lines: list[TextLine], turned: list[TextLine]
) -> FoundTable | None:
    xs = _positions([v.x0 for v in upright])
    ys = _positions([h.y0 for h in flat])
    if len(xs) < 2 or len(ys) < 2:
        return None
    box = (xs[0], ys[0], xs[-1], ys[-1])
    text = _inside(lines, box)
    if not text:
        return None
    ruled_x = set(xs)
    ruled_y = set(ys)
    xs = sorted([*xs, *_column_rivers(text, xs)])
    ys = sorted([*ys, *_row_splits(text, xs, ys)])
    crossing: set[tuple[int, int]] = set()
    for line in text:
        middle = (line.top + line.bottom) / 2
        row = sum(1 for y in ys[1:-1] if y <= middle)
        for seg in segments(line):
            for j, x in enumerate(xs[1:-1], start=1):
                if x not in ruled_x and seg.x0 < x < seg.x1:
                    crossing.add((row, j))

    along_x = _near([v for v in upright], xs, vertical=True)
    along_y = _near([h for h in flat], ys, vertical=False)

    def vertical(r: int, j: int) -> bool:
        if xs[j] in ruled_x:
            return _covered(along_x[j], ys[r], ys[r + 1], vertical=True)
        return (r, j) not in crossing

    def horizontal(i: int, c: int) -> bool:
        if ys[i] in ruled_y:
            return _covered(along_y[i], xs[c], xs[c + 1], vertical=False)
        return True

    # Text set at a right angle (a vertical column head) fills the cell it stands in.
    placed = [*text, *_inside(turned, box)]
    rows, spans, _ = build_table(xs, ys, placed, vertical=vertical, horizontal=horizontal)
    cells = len(rows) * len(rows[0]) - sum(s.rows * s.columns - 1 for s in spans)
    filled = sum(1 for row in rows for c in row if c)
    if filled < 2 or cells <= 0 or filled / cells < _MIN_FILLED:
        return None
    if prose_like(rows, ruled=True):
        return None
    used_rows = sum(1 for row in rows if any(row))
    used_cols = sum(1 for c in range(len(rows[0])) if any(row[c] for row in rows))
    if used_rows < 2 or used_cols < 2:
        return None
    confidence = round(min(0.6 + 0.35 * filled / cells, 0.97), 2)
    return FoundTable(rows, spans, box, "ruled", confidence, xs)


def ruled_tables(
    rules: list[Rule], lines: list[TextLine], turned: Sequence[TextLine] = ()
) -> list[FoundTable]:
    """The tables drawn by `rules` (the page's ruling lines) that hold text of `lines`,
    and of `turned` (lines set at a right angle to them) in the cells they stand in."""
    flat, upright = merge_rules(rules)
    found: list[FoundTable] = []
    for part_flat, part_upright in _components(flat, upright):
        table = _one_grid(part_flat, part_upright, lines, list(turned))
        if table is not None:
            found.append(table)
    return found
