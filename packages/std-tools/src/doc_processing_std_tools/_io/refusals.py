"""The refusals every reader of files shares, worded once: a file over the size limit, a
named pipe or device where a file is expected, binary data where text is expected."""

from __future__ import annotations

from typing import Final

from ..errors import BinaryFileError, FileTooLargeError, NotRegularFileError

__all__ = ["SNIFF_BYTES", "decode_utf8", "human_size", "is_binary", "not_regular", "too_large"]

#: A file whose first this many bytes hold a NUL byte is binary, not text.
SNIFF_BYTES: Final = 8192


def human_size(size: int) -> str:
    """`size` bytes in the largest unit that keeps the number at least 1 (``1.5 MB``)."""
    value = float(size)
    for unit in ("bytes", "KB", "MB"):
        if value < 1024:
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def too_large(
    shown: str, size: int, limit: int, *, unwritten: str | None = None
) -> FileTooLargeError:
    """The one refusal of a file (or content) over DPTTOOLS_MAX_FILE_SIZE_MB.

    `shown` names the file as the caller knows it, for example ``"'notes.md'"``. For a
    write refused before it started, `unwritten` says what was spared (``"nothing was
    written"``).
    """
    verb = "is" if unwritten is None else "would be"
    head = (
        f"{shown} {verb} {human_size(size)} ({size:,} bytes), over the limit of {limit:,} "
        f"bytes (DPTTOOLS_MAX_FILE_SIZE_MB={limit / 1048576:g})"
    )
    if unwritten is None:
        return FileTooLargeError(f"{head}; raise DPTTOOLS_MAX_FILE_SIZE_MB to read it.")
    return FileTooLargeError(
        f"{head}; {unwritten}. Write less, or raise DPTTOOLS_MAX_FILE_SIZE_MB to allow it."
    )


def not_regular(shown: str) -> NotRegularFileError:
    """The one refusal of a named pipe, socket or device where a file is expected."""
    return NotRegularFileError(
        f"{shown} is not a regular file (a named pipe, socket or device); only regular "
        "files can be read or written, so pass the path of one."
    )


def is_binary(data: bytes) -> bool:
    """True when `data` is binary rather than text: a NUL byte in its first `SNIFF_BYTES`."""
    return b"\x00" in data[:SNIFF_BYTES]


def decode_utf8(data: bytes, shown: str, *, hint: str) -> tuple[str, bool]:
    """UTF-8 text of `data` without its byte-order mark, and whether it had one.

    Raises:
        BinaryFileError: `data` is binary (see `is_binary`) or not UTF-8; the message names
            `shown` and ends with `hint` (what to use instead).
    """
    if is_binary(data):
        raise BinaryFileError(f"{shown} is a binary file, not text (it holds NUL bytes); {hint}")
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        return data[3 if bom else 0 :].decode("utf-8"), bom
    except UnicodeDecodeError as exc:
        raise BinaryFileError(
            f"{shown} is not UTF-8 text (invalid byte at offset {exc.start + 3 * bom}); {hint}"
        ) from None
