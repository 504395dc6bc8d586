"""Text helpers shared by every tool: the one truncation helper, and wire safety."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["truncate", "wire_safe"]

_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def wire_safe(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it can be sent as UTF-8.

    Python stands for the bytes of a file name that is not valid UTF-8 with lone
    surrogates; a reply holding one could not be encoded, and the client would get nothing.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text)
    return text


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
