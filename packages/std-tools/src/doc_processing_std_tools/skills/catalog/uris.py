"""``skill://`` URIs and ``skills/list`` cursors of the MCP Skills extension, free of MCP.

A published file is addressed as ``skill://<skill>/<path>``, each path segment
percent-encoded (`file_uri`); `parse_skill_uri` takes such a URI apart again and refuses
anything that could name a place outside the skill (``..``, an encoded ``/``, a NUL).

A ``skills/list`` cursor is opaque to the client and means something only to the server
that handed it out: `CursorSigner` writes the number of the listing it belongs to and the
URI of the last skill already listed, then signs both with HMAC-SHA256 under a key drawn
at random when the signer is made. A cursor that was not signed by this very signer (made
up, edited, or handed out by another process) is refused with `InvalidCursorError`, so
nothing a client invents reaches the publisher's caches.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import mimetypes
import secrets
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote, unquote

from ...errors import InvalidArgumentError, NotFoundError
from ..core.frontmatter import is_valid_name
from .scan import SKILL_FILE

__all__ = [
    "SCHEME",
    "CursorSigner",
    "InvalidCursorError",
    "SkillUri",
    "UnknownResourceError",
    "file_uri",
    "mime_type",
    "parse_skill_uri",
]

SCHEME: Final = "skill://"
"""The URI scheme every published file is addressed under."""

_MAC_BYTES: Final = 16
_MAX_CURSOR: Final = 1024


class UnknownResourceError(NotFoundError):
    """A ``skill://`` URI names no skill, folder or file that is published."""


class InvalidCursorError(InvalidArgumentError):
    """A pagination cursor was not one this server handed out."""


def file_uri(skill: str, relative: str) -> str:
    """The ``skill://`` URI of the file at `relative` (``/``-separated) in `skill`."""
    return f"{SCHEME}{skill}/{quote(relative, safe='/')}" if relative else f"{SCHEME}{skill}"


def mime_type(relative: str) -> str:
    """The MIME type announced for a file: text/markdown for Markdown, else a guess."""
    if relative.endswith((".md", ".markdown")):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(relative, strict=False)
    return guessed or "application/octet-stream"


@dataclass(frozen=True, slots=True)
class SkillUri:
    """A parsed ``skill://`` URI: the skill's name and a path inside its folder."""

    skill: str
    """The skill's name (its folder name)."""
    relative: str
    """The ``/``-separated path inside the skill's folder; empty for the folder itself."""

    @property
    def is_skill_md(self) -> bool:
        """True when the URI names the skill's own SKILL.md."""
        return self.relative == SKILL_FILE


def parse_skill_uri(uri: str) -> SkillUri | None:
    """Split a ``skill://<name>/<path>`` URI, or None when it cannot name a published file.

    Segments are percent-decoded one by one; an empty, ``.`` or ``..`` segment, a decoded
    ``/`` or ``\\``, a NUL, a query or a fragment make the URI name nothing.
    """
    if not uri.startswith(SCHEME):
        return None
    parts = uri[len(SCHEME) :].split("/")
    segments: list[str] = []
    for raw in parts:
        if not raw or "?" in raw or "#" in raw:
            return None
        try:
            segment = unquote(raw, errors="strict")
        except UnicodeDecodeError:
            return None
        if segment in {".", ".."} or any(c in segment for c in "/\\\x00"):
            return None
        segments.append(segment)
    if not is_valid_name(segments[0]):
        return None
    return SkillUri(segments[0], "/".join(segments[1:]))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class CursorSigner:
    """Hands out ``skills/list`` cursors and recognises them again (see the module text).

    Each signer draws its own key, so a cursor is good only for the publisher (and the
    process) that handed it out; it never expires while that publisher lives.
    """

    __slots__ = ("_key",)

    def __init__(self) -> None:
        """Draw a fresh random key."""
        self._key = secrets.token_bytes(32)

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()[:_MAC_BYTES]

    def issue(self, listing: int, after: str) -> str:
        """The cursor of the page after the skill `after` (a URI) in listing `listing`."""
        payload = f"{listing}:{after}".encode()
        return f"{_b64(payload)}.{_b64(self._mac(payload))}"

    def open(self, cursor: str) -> tuple[int, str]:
        """The listing number and the last listed URI that `cursor` carries.

        Raises:
            InvalidCursorError: this signer did not hand the cursor out, or it was altered.
        """
        body, dot, mac = cursor.partition(".")
        try:
            if not dot or len(cursor) > _MAX_CURSOR:
                raise ValueError(cursor)
            payload, signature = _unb64(body), _unb64(mac)
            if not hmac.compare_digest(signature, self._mac(payload)):
                raise ValueError(cursor)
            number, _, after = payload.decode("utf-8").partition(":")
            return int(number), after
        except (UnicodeError, binascii.Error, ValueError):
            raise InvalidCursorError(
                f"The cursor {cursor[:80]!r} was not handed out by skills/list of this "
                "server; pass the nextCursor of the previous page unchanged, or no cursor to "
                "start the listing again from the first page."
            ) from None
