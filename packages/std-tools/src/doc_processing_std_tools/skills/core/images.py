"""Image files of a skill that load_skill_resource answers with as MCP image content.

Models read PNG, JPEG, GIF and WebP images; such a file is told by its first bytes (its
signature, never its name), held to `MAX_IMAGE_BYTES`, and refused when it is cut short or
damaged, since a model provider refuses a whole request for an image it cannot decode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["MAX_IMAGE_BYTES", "SkillImage", "image_type", "is_whole_image"]

MAX_IMAGE_BYTES: Final = 5 * 1024 * 1024
"""The largest image load_skill_resource returns as image content (5 MiB, the most that
model providers accept for one image)."""

_IMAGE_SIGNATURES: Final = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


@dataclass(frozen=True, slots=True)
class SkillImage:
    """An image file of a skill (PNG, JPEG, GIF or WebP, at most `MAX_IMAGE_BYTES`), as
    load_skill_resource answers with it: the tool layer sends it as image content."""

    data: bytes
    """The file's bytes."""
    mime_type: str
    """``image/png``, ``image/jpeg``, ``image/gif`` or ``image/webp``."""


def image_type(head: bytes) -> str | None:
    """The MIME type of an image that models read (PNG, JPEG, GIF, WebP), told by the
    first bytes of the file (its signature, not its name); None for anything else."""
    for signature, mime_type in _IMAGE_SIGNATURES:
        if head.startswith(signature):
            return mime_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def is_whole_image(data: bytes, mime_type: str) -> bool:
    """Whether the image `data` (of `mime_type`, told by `image_type`) has its ends: a
    model provider refuses the whole request for an image it cannot decode, so a cut or
    damaged file is refused here instead of sent."""
    if mime_type == "image/png":
        return data[12:16] == b"IHDR" and data.endswith(b"IEND\xaeB`\x82")
    if mime_type == "image/jpeg":
        return b"\xff\xd9" in data[-1024:]
    if mime_type == "image/gif":
        return len(data) > 13 and data.rstrip(b"\x00").endswith(b";")
    declared = int.from_bytes(data[4:8], "little") + 8
    return declared in (len(data), len(data) - 1)
