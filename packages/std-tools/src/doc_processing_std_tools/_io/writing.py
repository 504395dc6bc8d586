"""Writing a file at a `Location` atomically (`write_atomically`), one writer of a file at
a time (`locked`), and sweeping the temporary files of writers that died
(`sweep_stale_temporaries`)."""

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
from typing import Final

from .locating import CLOEXEC, DIR_FLAGS, Location

__all__ = [
    "STALE_AFTER_SECONDS",
    "locked",
    "new_file_mode",
    "sweep_stale_temporaries",
    "temporary_name",
    "write_atomically",
]

logger = logging.getLogger(__name__)

_TEMP_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | CLOEXEC
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
            target_dir = os.open(name, DIR_FLAGS, dir_fd=target_dir)
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
