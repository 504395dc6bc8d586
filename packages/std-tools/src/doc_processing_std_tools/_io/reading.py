"""Reading a file at a `Location` under a size limit, checked on the open file: `open_at`
hands over the checked descriptor, `read_at` and `read_bytes` its bytes, `read_plain` is
the quick path for a way without links."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

from ..errors import InvalidArgumentError, StdToolsError
from ..paths import names_nothing
from .locating import CLOEXEC, DIR_FLAGS, ROOT_FLAGS, Location, locate
from .refusals import not_regular, too_large

__all__ = ["open_at", "read_at", "read_bytes", "read_plain"]

# Non-blocking, so that opening a named pipe returns at once instead of waiting for a
# writer (the pipe is then refused by the type check); reads of regular files are unaffected.
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | CLOEXEC


def _read_upto(fd: int, count: int) -> bytes:
    """At most `count` bytes from `fd`: fewer only when the file ends sooner."""
    chunks: list[bytes] = []
    while count > 0 and (chunk := os.read(fd, min(count, 1 << 20))):
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def open_at(
    location: Location,
    *,
    shown: str,
    limit: int,
    missing: StdToolsError,
    folder: StdToolsError,
) -> tuple[int, os.stat_result]:
    """Open the regular file at `location` for reading: (descriptor, its status), checked
    on the open file. The caller closes the descriptor; what it reads from it is the file
    the checks passed, whatever happens to the name meanwhile.

    Raises:
        `missing`: nothing is there. `folder`: it is a folder.
        NotRegularFileError: a named pipe, socket or device.
        FileTooLargeError: over `limit` bytes (one wording, see `too_large`).
        InvalidArgumentError: the name became a symbolic link during the call.
    """
    try:
        fd = os.open(location.name, _READ_FLAGS, dir_fd=location.dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InvalidArgumentError(
                f"{shown} was replaced by a symbolic link while it was being opened; "
                "nothing was read. Try again."
            ) from None
        if names_nothing(exc):
            raise missing from None
        if isinstance(exc, IsADirectoryError | PermissionError) and stat.S_ISDIR(
            os.stat(location.name, dir_fd=location.dir_fd, follow_symlinks=False).st_mode
        ):
            raise folder from None
        raise
    try:
        status = os.fstat(fd)
        if stat.S_ISDIR(status.st_mode):
            raise folder
        if not stat.S_ISREG(status.st_mode):
            raise not_regular(shown)
        if status.st_size > limit:
            raise too_large(shown, status.st_size, limit)
    except BaseException:
        os.close(fd)
        raise
    return fd, status


def read_at(
    location: Location,
    *,
    shown: str,
    limit: int,
    missing: StdToolsError,
    folder: StdToolsError,
    head: int | None = None,
) -> tuple[bytes, int]:
    """The bytes of the regular file at `location` and its size, checked on the open file.

    `head` reads only the first that many bytes (the size check still applies). Raises
    what `open_at` raises, and `FileTooLargeError` when the file grew over `limit`.
    """
    fd, status = open_at(location, shown=shown, limit=limit, missing=missing, folder=folder)
    try:
        data = _read_upto(fd, limit + 1 if head is None else min(head, limit + 1))
        if len(data) > limit:  # it grew after the check
            raise too_large(shown, len(data), limit)
        return data, max(status.st_size, len(data))
    finally:
        os.close(fd)


def read_bytes(
    root: Path,
    relative: str,
    *,
    what: str,
    shown: str,
    limit: int,
    missing: StdToolsError,
    folder: StdToolsError,
    head: int | None = None,
    exact: bool = False,
) -> tuple[Path, bytes, int]:
    """Walk to `relative` inside `root` and read it: (real path, bytes, size).

    `what` names the argument in path errors, `shown` the file in the others; see
    `locate` and `read_at` for what is refused.
    """
    try:
        with locate(root, relative, what=what, exact=exact) as location:
            data, size = read_at(
                location, shown=shown, limit=limit, missing=missing, folder=folder, head=head
            )
            return location.path, data, size
    except OSError as exc:
        if names_nothing(exc):
            raise missing from None
        raise


def read_plain(root: Path, parts: list[str], *, limit: int) -> bytes | None:
    """The bytes of the file at `parts` (folder names, then the file's name) inside `root`
    when the way there is plain; else None, and nothing was read.

    Plain means: each folder opens relative to the one before it with ``O_NOFOLLOW``
    (no symbolic link, nothing missing), and the file is a regular file, not a link, that
    opens and holds at most `limit` bytes, checked on the open file as `read_at` does.
    A None says nothing about why; `read_bytes` on the same path follows the links
    allowed and raises the refusal that applies. The names are used as given: they come
    from a listing, not from a caller (see `paths.check_relative` for what a caller's
    path must pass first).
    """
    try:
        folder = os.open(root, ROOT_FLAGS)
    except OSError:
        return None
    try:
        for name in parts[:-1]:
            inner = os.open(name, DIR_FLAGS, dir_fd=folder)
            os.close(folder)
            folder = inner
        fd = os.open(parts[-1], _READ_FLAGS, dir_fd=folder)
    except OSError:
        return None
    finally:
        os.close(folder)
    try:
        status = os.fstat(fd)
        size = status.st_size
        if not stat.S_ISREG(status.st_mode) or size > limit:
            return None
        # One read of the size the file has, plus one byte that tells whether it grew.
        data = os.read(fd, size + 1)
        if (len(data) > size and size < limit) or len(data) < size:
            data += _read_upto(fd, limit + 1 - len(data))
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)
