"""The one way std-tools opens a file inside a root folder, reads it under a size limit,
and writes it atomically.

How a path is followed: `locate` opens the root once and walks the relative path one name
at a time, each folder opened relative to the one before it with ``O_NOFOLLOW``. The kernel
never follows a symbolic link for us: a link's target is read (``readlink``) and walked in
turn by the same rules, so a link may lead anywhere inside the root and nowhere outside it.
The walk ends with an open descriptor of the last folder and the file's name in it (a
`Location`).

Reading (`read_at`, `read_bytes`) opens that name relative to the folder descriptor, again
with ``O_NOFOLLOW``, checks the open file with ``fstat`` (a regular file, not over the
limit) and reads at most limit + 1 bytes; `open_at` hands the checked descriptor to a
reader that needs the open file itself (the document libraries). Writing
(`write_atomically`) fills a temporary file created through the folder descriptor, then
renames it over the name, descriptor to descriptor. A link swapped in while a call runs
is therefore either walked like any other (and refused when it leads out) or makes the
``O_NOFOLLOW`` open fail: the file checked is the file read, and nothing is ever created
outside the root.

Writers of one file are serialised (`locked`): a lock per file within the process and an
advisory ``flock`` on the file's folder across processes sharing it. Temporary files carry
a pattern of their own (``.<name>.dpt-<host>-<pid>-<random>.tmp``); a write sweeps those
of dead writers from its folder (`sweep_stale_temporaries`), nothing else.

A reader of many small files (the skills catalog) first tries `read_plain`: the same
descriptor walk and checks in a few system calls, for the common case where nothing is
unusual; anything else (a link on the way, a missing or odd file, one over the limit)
makes it step aside, and `read_bytes` then follows the links or words the refusal.

The refusals every reader shares are worded here: `too_large`, `not_regular`, `decode_utf8`.
Needs POSIX descriptor-relative calls (``dir_fd``), as Linux and macOS have.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import hashlib
import logging
import os
import re
import secrets
import socket
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from .errors import (
    BinaryFileError,
    FileTooLargeError,
    InvalidArgumentError,
    NotRegularFileError,
    StdToolsError,
)
from .paths import check_relative, loop_error, names_nothing, outside_error

__all__ = [
    "SNIFF_BYTES",
    "Location",
    "decode_utf8",
    "human_size",
    "is_binary",
    "locate",
    "locked",
    "new_file_mode",
    "not_regular",
    "open_at",
    "open_folder",
    "read_at",
    "read_bytes",
    "read_plain",
    "stat_at",
    "sweep_stale_temporaries",
    "temporary_name",
    "too_large",
    "write_atomically",
]

logger = logging.getLogger(__name__)

#: A file whose first this many bytes hold a NUL byte is binary, not text.
SNIFF_BYTES: Final = 8192
_MAX_LINKS: Final = 40
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_ROOT_FLAGS: Final = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC
_DIR_FLAGS: Final = _ROOT_FLAGS | os.O_NOFOLLOW
# Non-blocking, so that opening a named pipe returns at once instead of waiting for a
# writer (the pipe is then refused by the type check); reads of regular files are unaffected.
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC
_TEMP_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
# `.{name}.dpt-{host}-{pid}-{random}.tmp`; the name is cut to 64 characters so that the
# whole fits where a 255-character name fits.
_TEMP_PATTERN: Final = re.compile(
    r"\A\..{1,64}\.dpt-(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]+)-[0-9a-f]{8}\.tmp\Z", re.DOTALL
)
#: A temporary file of ours untouched for this long is stale even when its writer's
#: process cannot be checked (another machine sharing the folder).
STALE_AFTER_SECONDS: Final = 3600.0
_SWEEP_EVERY_SECONDS: Final = 60.0
_MAX_SWEPT_FOLDERS: Final = 4096


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


@dataclass(slots=True)
class Location:
    """Where a confined path leads: an open descriptor of its folder and the name in it.

    Valid only inside the `locate` block that made it, which closes the descriptor.
    """

    root: Path
    """The root folder the walk stayed in, as given."""
    dir_fd: int
    """The folder holding `name` or, when `missing` is set, the deepest folder that exists."""
    name: str
    """The final name (``"."`` when the path leads to a folder through a link to it)."""
    folders: list[str] = field(default_factory=list)
    """Names of the folders walked from the root to `dir_fd`."""
    missing: list[str] = field(default_factory=list)
    """Folders still to create below `dir_fd` before `name` (writes only)."""

    @property
    def path(self) -> Path:
        """The absolute path the walk found, with no symbolic link in it."""
        return self.root.joinpath(*self.folders, *self.missing, self.name)


class _Walk:
    """The state of one walk: the open folders from the root down, and the names to go."""

    def __init__(self, root: Path, relative: str, text: str, what: str) -> None:
        self.root = root
        self.relative = relative
        self.what = what
        self.pending = list(reversed(text.split("/")))
        self.links = 0
        self.fds: list[int] = [os.open(root, _ROOT_FLAGS)]
        self.names: list[str] = []

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()

    def _up_to_root(self) -> None:
        while len(self.fds) > 1:
            os.close(self.fds.pop())
        self.names.clear()

    def _enter_absolute(self, absolute: str) -> None:
        """Continue at `absolute`, which must lie inside the root; walk it from the root."""
        # Following by name is safe here: the answer only picks the names to walk next,
        # and those are walked from the root descriptor like any other.
        real = Path(os.path.realpath(absolute))
        real_root = Path(os.path.realpath(self.root))
        if real != real_root and not real.is_relative_to(real_root):
            raise outside_error(self.root, self.relative, what=self.what)
        self._up_to_root()
        self.pending.extend(reversed(real.relative_to(real_root).parts))

    def follow(self, name: str) -> bool:
        """Queue the target of `name` when it is a symbolic link; False when it is not."""
        try:
            target = os.readlink(name, dir_fd=self.fds[-1])
        except OSError:
            return False
        self.links += 1
        if self.links > _MAX_LINKS:
            raise loop_error(
                self.root, self.relative, what=self.what, detail=f"over {_MAX_LINKS} links"
            )
        if target.startswith("/"):
            self._enter_absolute(target)
        else:
            self.pending.extend(reversed(target.split("/")))
        return True

    def to_final(self, *, allow_missing: bool) -> tuple[str, list[str]]:
        """Walk the folders; return the final name and the folders found missing (empty
        unless `allow_missing`)."""
        while True:
            part = self.pending.pop()
            if part in ("", "."):
                if not self.pending:
                    return ".", []
                continue
            if part == "..":
                if len(self.fds) > 1:
                    os.close(self.fds.pop())
                    self.names.pop()
                else:
                    parent = Path(os.path.realpath(self.root)).parent
                    rest = list(reversed(self.pending))
                    self.pending.clear()
                    self._enter_absolute(str(parent.joinpath(*rest)))
                if not self.pending:
                    return ".", []
                continue
            if not self.pending:
                return part, []
            try:
                fd = os.open(part, _DIR_FLAGS, dir_fd=self.fds[-1])
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and self.follow(part):
                    continue
                rest = list(reversed(self.pending))
                if allow_missing and exc.errno == errno.ENOENT and ".." not in rest:
                    self.pending.clear()
                    return rest[-1], [part, *rest[:-1]]
                raise
            self.fds.append(fd)
            self.names.append(part)


@contextmanager
def locate(
    root: Path,
    relative: str,
    *,
    what: str,
    allow_missing: bool = False,
    allow_root: bool = False,
    exact: bool = False,
) -> Iterator[Location]:
    """Walk `relative` inside `root` without letting the kernel follow any link.

    The final name is followed too when it is a link (so a write through a link inside the
    root replaces the file it points to, and the link stays). With `allow_missing`, folders
    that do not exist yet end the walk and are listed in `Location.missing`. With
    `allow_root`, an empty path or ``"."`` is the root itself (name ``"."``). `exact` walks
    `relative` as given, for names that come from a listing rather than from a caller
    (which are stripped of surrounding blanks).

    Raises:
        InvalidArgumentError, PathOutsideRootError: see `paths.check_relative`; also a path
            that a link leads outside `root`, or a loop of links.
        OSError: a folder on the way is missing (``ENOENT``, ``ENOTDIR``) or unreadable.
    """
    text = check_relative(root, relative, what=what, allow_root=allow_root) or "."
    walk = _Walk(root, relative, relative if exact else text, what)
    try:
        while True:
            name, missing = walk.to_final(allow_missing=allow_missing)
            if missing or name == "." or not walk.follow(name):
                break
        yield Location(root, walk.fds[-1], name, list(walk.names), missing)
    finally:
        walk.close()


def stat_at(location: Location, shown: str) -> os.stat_result:
    """The status of what is at `location`, a link there not followed.

    Raises:
        InvalidArgumentError: the name became a symbolic link during the call.
        OSError: nothing is there (``ENOENT``).
    """
    status = os.stat(location.name, dir_fd=location.dir_fd, follow_symlinks=False)
    if stat.S_ISLNK(status.st_mode):
        raise InvalidArgumentError(
            f"{shown} was replaced by a symbolic link during the call; try again."
        )
    return status


def open_folder(location: Location) -> int:
    """A descriptor of the folder at `location`, opened without following a link; close it.

    Raises:
        NotADirectoryError: it is not a folder. OSError: nothing is there, or (``ELOOP``)
            the name became a symbolic link during the call.
    """
    return os.open(location.name, _DIR_FLAGS, dir_fd=location.dir_fd)


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
        folder = os.open(root, _ROOT_FLAGS)
    except OSError:
        return None
    try:
        for name in parts[:-1]:
            inner = os.open(name, _DIR_FLAGS, dir_fd=folder)
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


def new_file_mode() -> int:
    """The permissions `open()` would give a new file: 0o666 less the process umask.

    The umask is read from /proc where there is one, because `os.umask` can only be read
    by setting it, which would race with other threads creating files.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o644


@functools.cache
def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def temporary_name(name: str) -> str:
    """A fresh temporary name for writing `name`, in the pattern the sweep recognises."""
    return f".{name[:64]}.dpt-{_host_tag()}-{os.getpid()}-{secrets.token_hex(4)}.tmp"


def _writer_is_gone(host: str, pid: int) -> bool:
    if host != _host_tag():
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


_swept: dict[tuple[int, int], float] = {}
_swept_lock = threading.Lock()


def sweep_stale_temporaries(dir_fd: int) -> list[str]:
    """Delete this folder's temporary files left by interrupted writes; return their names.

    Only names in our own pattern (see `temporary_name`) are candidates, and of those only
    the ones whose writer is known to be gone (a process of this machine that no longer
    exists) or that nobody touched for `STALE_AFTER_SECONDS`. A folder is swept at most
    once a minute per process.
    """
    status = os.fstat(dir_fd)
    key = (status.st_dev, status.st_ino)
    now = time.monotonic()
    with _swept_lock:
        if now - _swept.get(key, -_SWEEP_EVERY_SECONDS) < _SWEEP_EVERY_SECONDS:
            return []
        if len(_swept) >= _MAX_SWEPT_FOLDERS:
            _swept.clear()
        _swept[key] = now
    removed: list[str] = []
    with os.scandir(dir_fd) as entries:
        names = [e.name for e in entries if e.name.endswith(".tmp")]
    for name in names:
        match = _TEMP_PATTERN.match(name)
        if match is None:
            continue
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        idle = time.time() - info.st_mtime
        if _writer_is_gone(match["host"], int(match["pid"])) or idle > STALE_AFTER_SECONDS:
            with suppress(FileNotFoundError):
                os.unlink(name, dir_fd=dir_fd)
                removed.append(name)
    if removed:
        logger.info("Removed %d stale temporary file(s) of interrupted writes", len(removed))
    return removed


_file_locks: dict[tuple[int, int, str], tuple[threading.Lock, int]] = {}
_file_locks_guard = threading.Lock()


@contextmanager
def locked(location: Location) -> Iterator[None]:
    """Hold the write lock of the file at `location` for the block.

    Within the process, one lock per file (its folder's device and inode, and its name:
    the file's own inode changes with every atomic write). Across processes, an advisory
    ``flock`` on the folder, which every std-tools writer of that folder takes.
    """
    folder = os.fstat(location.dir_fd)
    key = (folder.st_dev, folder.st_ino, "/".join([*location.missing, location.name]))
    with _file_locks_guard:
        lock, users = _file_locks.get(key, (threading.Lock(), 0))
        _file_locks[key] = (lock, users + 1)
    try:
        with lock:
            fcntl.flock(location.dir_fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(location.dir_fd, fcntl.LOCK_UN)
    finally:
        with _file_locks_guard:
            lock, users = _file_locks[key]
            if users == 1:
                del _file_locks[key]
            else:
                _file_locks[key] = (lock, users - 1)


def _sync(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError:
        logger.debug("Could not flush a folder to disk", exc_info=True)


def _publish_new(temporary: str, base: int, name: str, target_dir: int) -> None:
    """Give the temporary file the name `name`, failing when that name is taken."""
    try:
        # A hard link publishes the whole file in one step, and fails when `name` exists.
        os.link(temporary, name, src_dir_fd=base, dst_dir_fd=target_dir, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError:
        # A file system without hard links: check, then rename in one step.
        with suppress(FileNotFoundError):
            os.stat(name, dir_fd=target_dir, follow_symlinks=False)
            raise FileExistsError(errno.EEXIST, "already exists", name) from None
        os.replace(temporary, name, src_dir_fd=base, dst_dir_fd=target_dir)
    else:
        os.unlink(temporary, dir_fd=base)


def write_atomically(location: Location, data: bytes, *, mode: int, replace: bool = True) -> None:
    """Replace the file at `location` with `data`: readers see the old or the new file.

    The bytes go to a temporary file in the deepest folder that exists (so an interrupted
    write leaves no new, empty folders), are flushed to disk and get `mode`; then the
    missing folders are made and the temporary file is renamed over the target, folder
    descriptor to folder descriptor. If anything fails, the temporary file and the folders
    made are removed again and the target is untouched.

    With `replace` false, an existing file is never replaced: `FileExistsError` instead.
    """
    base = location.dir_fd
    sweep_stale_temporaries(base)
    temporary = temporary_name(location.name)
    fd = os.open(temporary, _TEMP_FLAGS, 0o600, dir_fd=base)
    made: list[tuple[int, str]] = []
    opened: list[int] = []
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        target_dir = base
        for name in location.missing:
            try:
                os.mkdir(name, dir_fd=target_dir)
                made.append((target_dir, name))
            except FileExistsError:
                pass  # made meanwhile by another write; entered below like any folder
            target_dir = os.open(name, _DIR_FLAGS, dir_fd=target_dir)
            opened.append(target_dir)
        if replace:
            os.replace(temporary, location.name, src_dir_fd=base, dst_dir_fd=target_dir)
        else:
            _publish_new(temporary, base, location.name, target_dir)
        _sync(target_dir)
        if target_dir != base:
            _sync(base)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary, dir_fd=base)
        for parent, name in reversed(made):
            with suppress(OSError):
                os.rmdir(name, dir_fd=parent)
        raise
    finally:
        for descriptor in opened:
            os.close(descriptor)
