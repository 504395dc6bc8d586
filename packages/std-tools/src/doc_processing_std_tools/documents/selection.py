"""Parse the `pages` argument: which pages, sheets, sections, rows or lines to read; and
write page numbers back as such ranges (`spans`)."""

from __future__ import annotations

from ..errors import InvalidArgumentError

__all__ = ["parse_ranges", "parse_span", "spans"]


def parse_span(item: str, count: int, unit: str) -> tuple[int, int]:
    """One `N`, `N-M` or `N-` (1-based, inclusive) checked against `count` units.

    Returns the first and last number; an end past `count` is clamped to it.
    """
    text = item.strip()
    first_text, dash, last_text = text.partition("-")
    try:
        first = int(first_text)
        last = (int(last_text) if last_text.strip() else count) if dash else first
    except ValueError:
        raise InvalidArgumentError(
            f"{text!r} is not a {unit} number or range; write it as '3', '2-5' or '4-'."
        ) from None
    if first < 1:
        raise InvalidArgumentError(f"{unit.capitalize()} numbers start at 1, not {first}.")
    if last < first:
        raise InvalidArgumentError(f"The range {text!r} ends before it starts.")
    if first > count:
        raise InvalidArgumentError(f"There is no {unit} {first}: the document has {count} {unit}s.")
    return first, min(last, count)


def parse_ranges(spec: str, count: int, unit: str) -> list[int]:
    """The 1-based numbers that `spec` selects, in order, without repeats.

    `spec` is a comma-separated list of `N`, `N-M` and `N-`; empty means all `count`.
    """
    if not spec.strip():
        return list(range(1, count + 1))
    chosen: list[int] = []
    seen: set[int] = set()
    for item in spec.split(","):
        if not item.strip():
            continue
        first, last = parse_span(item, count, unit)
        for number in range(first, last + 1):
            if number not in seen:
                seen.add(number)
                chosen.append(number)
    return chosen


def spans(numbers: list[int]) -> str:
    """Page numbers as short ranges: [1, 2, 3, 7] -> "1-3,7"."""
    parts: list[str] = []
    first = last = numbers[0]
    for number in [*numbers[1:], 0]:
        if number == last + 1:
            last = number
            continue
        parts.append(f"{first}-{last}" if last > first else f"{first}")
        first = last = number
    return ",".join(parts)
