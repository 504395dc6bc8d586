"""Fetching and unpacking what ``dpt-skills install`` installs, within limits.

`download` fetches an ``https://`` URL with the standard library (a timeout, a size cap,
no redirect to anything but https) and returns the file's SHA-256. `extract` unpacks a
.zip or .tar.gz into an empty folder and refuses, before anything of it is used, every
entry that could write or point outside that folder: absolute names, ``..``, names that
pass through a link, symbolic links leading out, hard links to anything but an earlier
file of the archive, devices, FIFOs and other special files. Sizes are counted on the
bytes actually read, never taken from a header, so a zip bomb stops at `Limits.max_bytes`.
The caller removes the folder when anything is refused. This module never prints.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import shutil
import socket
import ssl
import stat
import struct
import tarfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from ...errors import FileTooLargeError, InvalidArgumentError, StdToolsError

__all__ = [
    "ARCHIVE_SUFFIXES",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_FILES",
    "DEFAULT_TIMEOUT",
    "Budget",
    "LimitReached",
    "Limits",
    "archive_kind",
    "download",
    "extract",
    "remove_tree",
    "walk_entries",
]

#: The names of the archives `extract` unpacks (lower case).
ARCHIVE_SUFFIXES: Final = (".zip", ".tar.gz", ".tgz")

#: Bytes downloaded at most, and bytes unpacked or copied at most, by default (200 MiB).
DEFAULT_MAX_BYTES: Final = 200 * 1024 * 1024

#: Entries (files, folders and links) of an archive or a source at most, by default.
DEFAULT_MAX_FILES: Final = 5000

#: Seconds a download or a git clone may take at most, by default.
DEFAULT_TIMEOUT: Final = 120.0

_CHUNK: Final = 64 * 1024


class LimitReached(FileTooLargeError):
    """A limit of the whole install (entries or bytes) is reached: nothing is installed."""


@dataclass(frozen=True, slots=True)
class Limits:
    """How much one install may fetch, unpack and copy."""

    max_bytes: int = DEFAULT_MAX_BYTES
    """Bytes downloaded at most, and bytes unpacked (or copied) at most in all."""
    max_files: int = DEFAULT_MAX_FILES
    """Entries (files, folders and links) at most."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds a download or a git clone may take at most."""

    def too_many(self, where: str) -> LimitReached:
        """The error for a source with more than `max_files` entries."""
        return LimitReached(
            f"{where} holds more than {self.max_files} entries (files, folders and links), "
            f"the install limit; nothing was installed. If the source is trusted and that "
            "large, raise the limit with --max-files."
        )

    def too_big(self, where: str, what: str = "unpacks to") -> LimitReached:
        """The error for a source larger than `max_bytes`."""
        mib = self.max_bytes / (1024 * 1024)
        return LimitReached(
            f"{where} {what} more than {mib:g} MiB, the install size limit; nothing was "
            "installed. If the source is trusted and that large, raise the limit with "
            "--max-size-mb."
        )


class Budget:
    """The entries and bytes one install has left, counted as they are read."""

    def __init__(self, limits: Limits, where: str) -> None:
        self.limits = limits
        self.where = where
        self.files = 0
        self.bytes = 0

    def entry(self) -> None:
        """Count one entry; raise when there are too many."""
        self.files += 1
        if self.files > self.limits.max_files:
            raise self.limits.too_many(self.where)

    def add(self, count: int) -> None:
        """Count `count` bytes read; raise when the total is over the limit."""
        self.bytes += count
        if self.bytes > self.limits.max_bytes:
            raise self.limits.too_big(self.where)


# Downloading ------------------------------------------------------------------------------


class _HttpsOnly(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to another https URL."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: object,
        newurl: str,
    ) -> urllib.request.Request | None:
        if not newurl.lower().startswith("https://"):
            raise InvalidArgumentError(
                f"{req.full_url} redirects to {newurl}, which is not https; a download over "
                "plain http can be changed on its way, so install follows only https."
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)  # type: ignore[arg-type]


def download(url: str, target: Path, limits: Limits, *, shown: str | None = None) -> str:
    """Download `url` (https only) to the new file `target`; return its hexadecimal SHA-256.
    Messages name the URL as `shown` (default: `url`), so a query string that carries
    credentials can be kept out of them.

    Certificates are checked with the default context, which honours SSL_CERT_FILE. The
    deadline, `limits.timeout`, is wall-clock time for the whole download: a timer shuts
    the connection down when it passes, however slowly the bytes arrive.

    Raises:
        InvalidArgumentError: `url` is not https, or redirects to something else.
        FileTooLargeError: the body is over `limits.max_bytes` (counted as it arrives).
        StdToolsError: the server cannot be reached, answers with an error, or the
            download takes longer than `limits.timeout`.
    """
    named = url if shown is None else shown
    if not url.lower().startswith("https://"):
        raise InvalidArgumentError(
            f"{named} is not an https URL; install downloads only over https, since a "
            "download over plain http can be changed on its way."
        )
    opener = urllib.request.build_opener(
        urllib.request.HTTPSHandler(context=ssl.create_default_context()), _HttpsOnly()
    )
    deadline = time.monotonic() + limits.timeout
    late = StdToolsError(
        f"Downloading {named} took longer than {limits.timeout:g} s; nothing was installed. "
        "Try again, or download it yourself and install the file."
    )
    digest = hashlib.sha256()
    total = 0
    expired = threading.Event()
    try:
        with opener.open(url, timeout=limits.timeout) as response:
            timer = threading.Timer(
                max(deadline - time.monotonic(), 0.0), _cut, (response, expired)
            )
            timer.daemon = True
            timer.start()
            try:
                length = response.headers.get("Content-Length")
                if length is not None and length.isdigit() and int(length) > limits.max_bytes:
                    raise limits.too_big(named, "is")
                with target.open("xb") as out:
                    # read1 returns what one read brings, so a trickle is checked as it comes.
                    while chunk := response.read1(_CHUNK):
                        if time.monotonic() > deadline:
                            raise late
                        total += len(chunk)
                        if total > limits.max_bytes:
                            raise limits.too_big(named, "is")
                        digest.update(chunk)
                        out.write(chunk)
            finally:
                timer.cancel()
            if expired.is_set() or time.monotonic() > deadline:
                raise late
    except urllib.error.HTTPError as exc:
        raise StdToolsError(
            f"{named} answered {exc.code} {exc.reason}; nothing was installed. Check the URL."
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        if expired.is_set() or time.monotonic() > deadline:
            raise late from None
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise StdToolsError(
            f"{named} cannot be downloaded ({reason}); nothing was installed. Check the URL "
            "and the network (and SSL_CERT_FILE when the server's certificate is your own)."
        ) from None
    return digest.hexdigest()


def _cut(response: object, expired: threading.Event) -> None:
    """Shut the connection of `response` down: its deadline passed."""
    expired.set()
    raw = getattr(getattr(response, "fp", None), "raw", None)
    sock = getattr(raw, "_sock", None)
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


# Unpacking ---------------------------------------------------------------------------------


def _refuse(archive: str, name: str, why: str) -> InvalidArgumentError:
    shown = name.encode("ascii", "backslashreplace").decode()
    return InvalidArgumentError(
        f"The archive {archive} has an entry {shown!r} that {why}; nothing was installed. "
        "An archive of skills holds plain files, folders and links that stay inside it."
    )


def _parts(archive: str, name: str) -> list[str]:
    """The checked parts of an archive entry's name."""
    if not name or "\0" in name:
        raise _refuse(archive, name, "has an empty or invalid name")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise _refuse(archive, name, "has an absolute name, which would be written outside")
    if "\\" in name:
        raise _refuse(archive, name, "has a backslash in its name")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise _refuse(archive, name, "has '..' in its name, which would lead outside")
    if not parts:
        raise _refuse(archive, name, "names the archive's top folder itself")
    return parts


def _place(root: Path, archive: str, name: str, parts: list[str]) -> Path:
    """The path of a new entry under `root`: its folders are made (never through a link),
    and an entry that is already there is refused."""
    folder = root
    for part in parts[:-1]:
        folder = folder / part
        try:
            info = folder.lstat()
        except FileNotFoundError:
            folder.mkdir(mode=0o755)
            continue
        if not stat.S_ISDIR(info.st_mode):
            raise _refuse(archive, name, "passes through a link or a file")
    path = folder / parts[-1]
    if os.path.lexists(path):
        raise _refuse(archive, name, "appears twice")
    return path


def _check_link(archive: str, name: str, parts: list[str], target: str) -> None:
    if not target or target.startswith(("/", "\\")) or "\0" in target or "\\" in target:
        raise _refuse(archive, name, "is a link with an absolute or invalid target")
    joined = posixpath.normpath(posixpath.join(*parts[:-1], target) if parts[:-1] else target)
    if joined == ".." or joined.startswith("../"):
        raise _refuse(archive, name, "is a link that leads outside the archive")


def _write(path: Path, source: IO[bytes], budget: Budget, mode: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    handle = os.open(path, flags, 0o600 | (mode & 0o100))
    with os.fdopen(handle, "wb") as out:
        while chunk := source.read(_CHUNK):
            budget.add(len(chunk))
            out.write(chunk)


def _extract_tar(archive: Path, shown: str, root: Path, budget: Budget) -> None:
    # Stream mode: members are read in order, each header once, nothing seeks back.
    with tarfile.open(archive, "r|gz") as tar:
        for member in tar:
            budget.entry()
            if member.isdir() and member.name.strip("./") == "":
                continue  # "./", the archive's own top folder
            parts = _parts(shown, member.name)
            if member.isdir():
                path = root.joinpath(*parts)
                if not path.is_dir() or path.is_symlink():
                    _place(root, shown, member.name, parts).mkdir(mode=0o755)
                continue
            path = _place(root, shown, member.name, parts)
            if member.issym():
                _check_link(shown, member.name, parts, member.linkname)
                path.symlink_to(member.linkname)
            elif member.islnk():
                linked = root.joinpath(*_parts(shown, member.linkname))
                real = os.path.realpath(linked)
                if not linked.is_file() or not real.startswith(os.path.realpath(root) + os.sep):
                    raise _refuse(
                        shown,
                        member.name,
                        "is a hard link to something other than a file earlier in the archive",
                    )
                with linked.open("rb") as source:
                    _write(path, source, budget, member.mode)
            elif member.isreg():
                if member.size > budget.limits.max_bytes - budget.bytes:
                    raise budget.limits.too_big(shown)
                data = tar.extractfile(member)
                if data is None:  # pragma: no cover - a regular member always has data
                    raise _refuse(shown, member.name, "cannot be read")
                with data:
                    _write(path, data, budget, member.mode)
            else:
                raise _refuse(shown, member.name, "is a device, a FIFO or another special file")


_EOCD: Final = struct.Struct("<4s4H2LH")
_ZIP64_LOCATOR: Final = struct.Struct("<4sLQL")
_ZIP64_EOCD: Final = struct.Struct("<4sQ2H2L4Q")
_CENTRAL_ENTRY_MOST: Final = 46 + 4096  # a central-directory entry, its name at most a path


def _zip_directory(archive: Path) -> tuple[int, int] | None:
    """(entries, central-directory bytes) that the zip's end-of-central-directory record
    (zip64 included) declares, read from the file's end; None when there is no record."""
    with archive.open("rb") as stream:
        size = stream.seek(0, os.SEEK_END)
        tail_size = min(size, _EOCD.size + 0xFFFF + _ZIP64_LOCATOR.size)
        stream.seek(size - tail_size)
        tail = stream.read(tail_size)
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < _EOCD.size:
            return None
        fields = _EOCD.unpack_from(tail, at)
        entries, directory = fields[4], fields[5]
        locator_at = at - _ZIP64_LOCATOR.size
        if locator_at >= 0 and tail[locator_at : locator_at + 4] == b"PK\x06\x07":
            offset = _ZIP64_LOCATOR.unpack_from(tail, locator_at)[2]
            stream.seek(offset)
            record = stream.read(_ZIP64_EOCD.size)
            if len(record) == _ZIP64_EOCD.size and record[:4] == b"PK\x06\x06":
                zip64 = _ZIP64_EOCD.unpack(record)
                entries, directory = max(entries, zip64[7]), max(directory, zip64[8])
        return entries, directory


def _extract_zip(archive: Path, shown: str, root: Path, budget: Budget) -> None:
    # The entry count is read from the end record before the central directory is parsed:
    # parsing a million entries costs seconds and hundreds of MB before any cap applies.
    declared = _zip_directory(archive)
    if declared is not None:
        entries, directory = declared
        most = budget.limits.max_files
        if entries > most or directory > most * _CENTRAL_ENTRY_MOST:
            raise budget.limits.too_many(budget.where)
    with zipfile.ZipFile(archive) as bundle:
        for info in bundle.infolist():
            budget.entry()
            if info.is_dir() and info.filename.strip("./") == "":
                continue  # "./", the archive's own top folder
            parts = _parts(shown, info.filename)
            mode = info.external_attr >> 16 if info.create_system == 3 else 0
            kind = stat.S_IFMT(mode)
            if info.is_dir():
                path = root.joinpath(*parts)
                if not path.is_dir() or path.is_symlink():
                    _place(root, shown, info.filename, parts).mkdir(mode=0o755)
                continue
            if kind not in (0, stat.S_IFREG, stat.S_IFLNK):
                raise _refuse(shown, info.filename, "is a device, a FIFO or another special file")
            if info.flag_bits & 0x1:
                raise _refuse(shown, info.filename, "is encrypted")
            path = _place(root, shown, info.filename, parts)
            with bundle.open(info) as source:
                if kind == stat.S_IFLNK:
                    target = source.read(4097)
                    budget.add(len(target))
                    try:
                        text = target.decode("utf-8")
                    except UnicodeDecodeError:
                        raise _refuse(
                            shown, info.filename, "is a link with an invalid target"
                        ) from None
                    _check_link(shown, info.filename, parts, text)
                    path.symlink_to(text)
                else:
                    _write(path, source, budget, mode)


def archive_kind(name: str) -> str | None:
    """``"zip"``, ``"tar.gz"`` or None, from the end of `name` (case-insensitive)."""
    lower = name.lower()
    if lower.endswith(".zip"):
        return "zip"
    if lower.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    return None


def extract(archive: Path, kind: str, root: Path, limits: Limits, shown: str) -> None:
    """Unpack the `kind` archive `archive` (named `shown` in messages) into the empty
    folder `root`; the caller removes `root` when this raises.

    Raises:
        InvalidArgumentError: an entry is unsafe (see the module), or the file is not an
            archive of that kind.
        FileTooLargeError: more than `limits.max_files` entries or `limits.max_bytes` bytes.
    """
    budget = Budget(limits, f"The archive {shown}")
    try:
        if kind == "zip":
            _extract_zip(archive, shown, root, budget)
        else:
            _extract_tar(archive, shown, root, budget)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zipfile.LargeZipFile) as exc:
        raise InvalidArgumentError(
            f"{shown} is not a readable {kind} archive ({exc}); nothing was installed."
        ) from None


def walk_entries(root: Path) -> Iterator[tuple[Path, list[str], list[str]]]:
    """os.walk without following links and without ``.git`` folders."""
    for folder, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        yield Path(folder), dirnames, sorted(filenames)


def remove_tree(path: Path) -> None:
    """Remove `path` and everything under it, quietly (a temporary folder)."""
    shutil.rmtree(path, ignore_errors=True)
