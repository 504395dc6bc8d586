"""Find a document inside the workspace, check it, and tell its format.

The formats are not known here: `open_source` is given them (`formats.FORMATS`, each a
`FormatRules`: its names, file name suffixes, how to recognise its content under an
unknown suffix and how to check its content), and tries them in the order given. The
checks the Office packages share (a ZIP, not an encrypted container, not a ZIP bomb) are
here, as `check_office_package`, for the formats that are such packages.

The file is opened once, through `_io` (see `workspace.existing_file`), and
stays open while the call runs: the checks apply to the open file, and every reader (the
PDF, DOCX and XLSX libraries, the ZIP size check, the text decoder) reads that same open
file through `Source.file`, never the name, which a link could be swapped under. The
whole call runs in one process (a document worker, see `worker`), so the file checked
and the file read are one open file description.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .. import _io
from ..errors import (
    DocumentError,
    EncryptedDocumentError,
    MissingExtraError,
    UnsupportedFormatError,
)
from ..workspace import Workspace, existing_file

__all__ = [
    "INSTALL_HINT",
    "MAX_UNPACK_RATIO",
    "Format",
    "FormatRules",
    "Source",
    "SourceFile",
    "check_office_package",
    "decode_text",
    "missing_extra",
    "open_source",
]

Format = str
"""A format's name (``pdf``, ``docx``, ...), as each format declares it (`FormatRules`)."""

#: The command that installs the libraries behind the PDF, DOCX and XLSX readers.
INSTALL_HINT = 'pip install "doc-processing-std-tools[docs]"'

_ZIP_MAGIC = b"PK\x03\x04"
#: An Office package may unpack to at most this many times its size on disk.
MAX_UNPACK_RATIO = 100
_MIN_UNPACKED_CHECK = 16 * 1024 * 1024
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


class SourceFile(io.RawIOBase):
    """A read-only, seekable view of an open document's descriptor, with a position of its
    own (reads are positional, ``pread``), ending where the file ended when it was checked.

    Several views of one descriptor can be open at once (a reader that opens the package
    twice); closing a view leaves the descriptor open.
    """

    def __init__(self, fd: int, size: int) -> None:
        super().__init__()
        self._fd = fd
        self._size = size
        self._position = 0

    def readable(self) -> bool:
        """Always true."""
        return True

    def seekable(self) -> bool:
        """Always true."""
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        """Fill `buffer` from the current position; 0 at the end."""
        count = max(min(len(buffer), self._size - self._position), 0)
        data = os.pread(self._fd, count, self._position) if count else b""
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move the position, as `io.IOBase.seek`."""
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._position = base + offset
        return self._position

    def tell(self) -> int:
        """The current position."""
        return self._position


@dataclass(frozen=True, slots=True)
class Source:
    """A document that passed the checks: inside the workspace, present, not empty, not
    over the size limit, and of a supported format; open while its `open_source` block
    runs."""

    path: Path
    """Absolute, symlink-free path where it was found (for names and suffixes only: the
    file is read through `file`, never by this name)."""
    name: str
    """The path relative to the workspace, as shown to the caller."""
    format: Format
    size: int
    """Size in bytes, when it was checked."""
    modified: float
    """Modification time of the open file (seconds since the epoch)."""
    fd: int
    """The open, checked file; valid inside the `open_source` block only."""

    def file(self) -> io.BufferedReader:
        """A new buffered reader of the checked file, for a library that takes a file
        object; the caller may close it (the descriptor stays open)."""
        return io.BufferedReader(SourceFile(self.fd, self.size), buffer_size=256 * 1024)

    def read_all(self) -> bytes:
        """The whole checked file."""
        with self.file() as stream:
            return stream.read()


class FormatRules(Protocol):
    """What `open_source` needs of a format (`reader.DocumentFormat` is one)."""

    @property
    def name(self) -> Format:
        """The format's name (``Source.format``)."""
        ...

    @property
    def label(self) -> str:
        """The format's name in messages (``PDF``, ``Markdown``, ``plain text``)."""
        ...

    @property
    def suffixes(self) -> tuple[str, ...]:
        """The file name suffixes read as this format (lower case, with the dot)."""
        ...

    @property
    def saved_from(self) -> tuple[str, ...]:
        """Suffixes of formats the tools do not read that can be saved as this one."""
        ...

    def sniff(self, head: bytes) -> bool:
        """Whether a file of an unknown suffix that starts with `head` is of this format."""
        ...

    def check(self, source: Source, head: bytes, max_unpacked_mb: float) -> None:
        """Raise `DocumentError` when the content does not match the format."""
        ...


def missing_extra(what: str) -> MissingExtraError:
    """The error raised when a reader of `what` (e.g. "PDF") is not installed."""
    return MissingExtraError(f"Reading {what} files needs the docs extra: {INSTALL_HINT}")


@contextmanager
def open_source(
    ws: Workspace, path: str, *, formats: Sequence[FormatRules], max_unpacked_mb: float
) -> Iterator[Source]:
    """Check the document at `path`, tell which of `formats` it is, and keep it open for
    the block.

    The format is the one whose suffixes hold the file's suffix, else the first whose
    `FormatRules.sniff` recognises its first bytes; then that format checks the content.
    `max_unpacked_mb` is DPTTOOLS_DOC_MAX_UNPACKED_MB: an Office package that would unpack
    to more is refused before any part of it is parsed.

    Raises:
        PathOutsideRootError, NotFoundError, InvalidArgumentError, FileTooLargeError: the
            checks shared with the file tools (see `existing_file`): a bad path, nothing
            there, a folder or pipe, a file over DPTTOOLS_MAX_FILE_SIZE_MB.
        DocumentError: the file is empty or its content does not match its name.
        UnsupportedFormatError: a format the tools do not read.
    """
    with existing_file(ws, path) as (target, fd, status):
        yield _checked(ws, target, fd, status, formats, max_unpacked_mb)


def _checked(
    ws: Workspace,
    target: Path,
    fd: int,
    status: os.stat_result,
    formats: Sequence[FormatRules],
    max_unpacked_mb: float,
) -> Source:
    """The `Source` of the open file `fd`, once its content matches its name."""
    name = ws.relative(target)
    size = status.st_size
    head = os.pread(fd, 4096, 0)
    if size == 0:
        raise DocumentError(f"{name!r} is empty (0 bytes); there is nothing to read.")
    suffix = target.suffix.lower()
    for rules in formats:
        if suffix in rules.saved_from:
            raise UnsupportedFormatError(
                f"{name!r} is a {suffix} file, which the document tools do not read; "
                f"save it as {rules.name.upper()} and try again."
            )
    found = next((rules for rules in formats if suffix in rules.suffixes), None)
    if found is None:
        found = next((rules for rules in formats if rules.sniff(head)), None)
    if found is None:
        labels = [rules.label for rules in formats]
        raise UnsupportedFormatError(
            f"{name!r} is a binary file of a format the document tools do not read; they read "
            f"{', '.join(labels[:-1])} and {labels[-1]}."
        )
    source = Source(target, name, found.name, size, status.st_mtime, fd)
    found.check(source, head, max_unpacked_mb)
    return source


def check_office_package(source: Source, head: bytes, max_unpacked_mb: float) -> None:
    """The content check of an Office package (DOCX, XLSX): a ZIP package, not the
    container Office keeps password-protected files in, and not one that would unpack to
    far more than its size or than `max_unpacked_mb`."""
    name, kind = source.name, source.format.upper()
    if head.startswith(_OLE_MAGIC):
        raise EncryptedDocumentError(
            f"{name!r} is not a plain {kind} package: Office stores password-protected "
            "files (and some legacy ones) in this container. Save an unprotected "
            f"{kind} copy and read that."
        )
    if not head.startswith(_ZIP_MAGIC):
        raise DocumentError(
            f"{name!r} is not a valid {kind} file (it is not a ZIP package); it is "
            f"damaged or another format renamed to {source.path.suffix.lower()}."
        )
    _check_unpacked_size(source, max_unpacked_mb)


def _check_unpacked_size(source: Source, bound: float) -> None:
    """Refuse an Office package that would unpack to far more than its own size, or to
    more than DPTTOOLS_DOC_MAX_UNPACKED_MB.

    The readers hold whole parts in memory, so a small ZIP bomb would exhaust it. The
    sizes the package declares are binding: Python's ZIP reader stops at them, so their
    sum bounds what one pass over the package decompresses.
    """
    name, size, fmt = source.name, source.size, source.format
    try:
        with source.file() as stream, zipfile.ZipFile(stream) as package:
            unpacked = sum(item.file_size for item in package.infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return  # the format reader reports the damage with its own message
    if unpacked > _MIN_UNPACKED_CHECK and unpacked > size * MAX_UNPACK_RATIO:
        raise DocumentError(
            f"{name!r} would unpack to {unpacked:,} bytes, {unpacked // size:,} times its size "
            f"of {size:,} bytes; Office files expand a few dozen times at most, so this is "
            f"refused as a likely ZIP bomb. Re-save it as {fmt.upper()} and try again."
        )
    if unpacked > bound * 1024 * 1024:
        raise DocumentError(
            f"{name!r} would unpack to {unpacked:,} bytes, over the limit of {bound:g} MB "
            f"(DPTTOOLS_DOC_MAX_UNPACKED_MB={bound:g}); raise DPTTOOLS_DOC_MAX_UNPACKED_MB "
            "to read it."
        )


def decode_text(source: Source) -> tuple[str, str]:
    """The text of a text-based document and the encoding it was read with.

    UTF-8 (with or without a byte-order mark) first, then Windows-1252, then Latin-1.

    Raises:
        DocumentError: the file holds NUL bytes, so it is binary.
    """
    data = source.read_all()
    if _io.is_binary(data):
        raise DocumentError(
            f"{source.name!r} holds binary data, not {source.format} text; it is damaged "
            "or another format under a text file's name."
        )
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        return text, "utf-8" if encoding == "utf-8-sig" else encoding
    return data.decode("latin-1"), "latin-1"
