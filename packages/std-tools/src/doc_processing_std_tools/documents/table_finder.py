"""Tables on a page: ruled grids first, then tables found by the alignment of the text
that no accepted grid holds. See `ruled_tables` and `aligned_tables` for how each is found,
`table_grid` for the cells they make."""

from __future__ import annotations

from .aligned_tables import aligned_tables
from .page_layout import Layout, TextLine
from .ruled_tables import merge_rules, ruled_tables
from .table_grid import FoundTable

__all__ = ["find_tables"]


def _outside(
    lines: list[TextLine], boxes: list[tuple[float, float, float, float]]
) -> list[TextLine]:
    """`lines` without the words inside `boxes`."""
    if not boxes:
        return lines
    kept: list[TextLine] = []
    for line in lines:
        middle = (line.top + line.bottom) / 2
        words = [
            w
            for w in line.words
            if not any(
                x0 < w.center < x1 and top < middle < bottom for x0, top, x1, bottom in boxes
            )
        ]
        if len(words) == len(line.words):
            kept.append(line)
        elif words:
            kept.append(TextLine(words, line.top, line.bottom, line.baseline, line.size))
    return kept


def _contains(outer: tuple[float, ...], inner: tuple[float, ...]) -> bool:
    return (
        outer[0] - 1 <= inner[0]
        and outer[1] - 1 <= inner[1]
        and inner[2] <= outer[2] + 1
        and inner[3] <= outer[3] + 1
    )


def find_tables(layout: Layout) -> list[FoundTable]:
    """The page's tables, top to bottom (left to right for tables side by side)."""
    ruled = ruled_tables(layout.rules, layout.lines, layout.turned_lines)
    # A grid drawn inside a cell of another grid is part of that table.
    ruled = [t for t in ruled if not any(o is not t and _contains(o.box, t.box) for o in ruled)]
    rest = _outside(layout.lines, [t.box for t in ruled])
    # Edges of shaded bands separate rows as rules do, but make no grid of their own.
    flat, _ = merge_rules([*layout.rules, *layout.bands])
    found = ruled + aligned_tables(rest, flat)
    found.sort(key=lambda t: (round(t.box[1] / 10), t.box[0]))
    return found
