"""The one output-truncation helper shared by every tool."""

from __future__ import annotations

__all__ = ["truncate"]


def truncate(text: str, limit: int, *, hint: str = "") -> str:
    """Return `text` cut to at most `limit` characters, with a visible marker when cut.

    The marker states how many characters were dropped; `hint` (for example "read the
    rest with load_skill_resource") is appended to it. The result never exceeds `limit`
    unless the marker itself is longer than `limit`.
    """
    if len(text) <= limit:
        return text
    dropped = len(text)
    marker = ""
    # The marker's length depends on the number it reports, so settle it in two passes.
    for _ in range(2):
        keep = max(limit - len(marker), 0)
        dropped = len(text) - keep
        marker = f"\n[... truncated: {dropped} more characters"
        marker += f"; {hint}]" if hint else "]"
    keep = max(limit - len(marker), 0)
    return text[:keep] + marker
