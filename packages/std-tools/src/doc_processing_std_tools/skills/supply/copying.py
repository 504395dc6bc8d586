"""Copying one skill folder from a source that others may write, without following links.

`copy_skill` walks the source through folder descriptors: every folder is opened with
``O_NOFOLLOW`` relative to the descriptor of the folder that holds it, and every file is
opened the same way, so swapping a folder or a file for a link during the copy makes that
open fail instead of reading what the link points at. Links are copied as links; once the
copy is whole, each one is resolved inside the copy (a folder only this process writes),
and a link that leads out of the skill is refused. Files are written read-only; an
executable bit is kept, set-user-ID and the like never. Compiled Python (``.pyc``,
``.pyo``) is never copied: the paths left out are returned so the audit can name them.
This module never prints.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from ...errors import FileTooLargeError, InvalidArgumentError
from .unpack import Budget

__all__ = ["BYTECODE_SUFFIXES", "copy_skill"]

#: Files never installed: Python may run them in place of the reviewed source.
BYTECODE_SUFFIXES: Final = (".pyc", ".pyo")

_CHUNK: Final = 64 * 1024
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_SKIPPED: Final = frozenset({".git"})


def _refuse(skill: str, relative: str, why: str) -> InvalidArgumentError:
    shown = relative.encode("ascii", "backslashreplace").decode()
    return InvalidArgumentError(f"{shown} in the skill {skill} {why}")


def _copy_file(
    folder: int, name: str, target: Path, budget: Budget, max_file_bytes: int, skill: str
) -> None:
    handle = os.open(name, _FILE_FLAGS, dir_fd=folder)
    with os.fdopen(handle, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(skill, name, "changed into something other than a file while copied.")
        mode = 0o444 | (info.st_mode & 0o111)
        out_handle = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        with os.fdopen(out_handle, "wb") as out:
            size = 0
            while chunk := stream.read(_CHUNK):
                size += len(chunk)
                if size > max_file_bytes:
                    raise FileTooLargeError(
                        f"{name} in the skill {skill} is larger than DPTTOOLS_MAX_FILE_SIZE_MB "
                        f"({max_file_bytes // (1024 * 1024)} MB), which the server and the "
                        "lock would refuse."
                    )
                budget.add(len(chunk))
                out.write(chunk)


def _entries(folder: int) -> Iterator[tuple[str, os.stat_result]]:
    with os.scandir(folder) as listing:
        names = sorted(entry.name for entry in listing)
    for name in names:
        if name in _SKIPPED:
            continue
        yield name, os.stat(name, dir_fd=folder, follow_symlinks=False)


def copy_skill(source: Path, target: Path, budget: Budget, max_file_bytes: int) -> list[str]:
    """Copy the skill folder `source` to the new folder `target` (see the module);
    return the compiled-Python files left out, relative and ``/``-separated.

    Raises:
        InvalidArgumentError: a link leads out of the skill, an entry is a device, FIFO
            or socket, or a folder or file was swapped for a link during the copy.
        FileTooLargeError: a file is over `max_file_bytes`, or the budget is spent.
    """
    skill = source.name
    left_out: list[str] = []
    links: list[str] = []
    try:
        top = os.open(source, _DIR_FLAGS)
    except OSError as exc:
        raise _refuse(skill, ".", f"cannot be opened as a folder ({exc.strerror}).") from None
    target.mkdir(mode=0o755)
    pending: list[tuple[int, str, Path]] = [(top, "", target)]
    try:
        while pending:
            folder, prefix, into = pending.pop()
            try:
                for name, info in _entries(folder):
                    relative = prefix + name
                    budget.entry()
                    made = into / name
                    if stat.S_ISLNK(info.st_mode):
                        link = os.readlink(name, dir_fd=folder)
                        if link.startswith("/"):
                            raise _refuse(
                                skill,
                                relative,
                                "is a link with an absolute target, which leads outside the "
                                "skill folder; install refuses it, since it could expose a "
                                "file of this machine.",
                            )
                        made.symlink_to(link)
                        links.append(relative)
                    elif stat.S_ISDIR(info.st_mode):
                        try:
                            inner = os.open(name, _DIR_FLAGS, dir_fd=folder)
                        except OSError as exc:
                            raise _refuse(
                                skill, relative, f"cannot be opened as a folder ({exc.strerror})."
                            ) from None
                        made.mkdir(mode=0o755)
                        pending.append((inner, relative + "/", made))
                    elif stat.S_ISREG(info.st_mode):
                        if name.endswith(BYTECODE_SUFFIXES):
                            left_out.append(relative)
                            continue
                        try:
                            _copy_file(folder, name, made, budget, max_file_bytes, skill)
                        except OSError as exc:
                            raise _refuse(
                                skill, relative, f"cannot be read ({exc.strerror})."
                            ) from None
                    else:
                        raise _refuse(
                            skill,
                            relative,
                            "is a device, FIFO or socket; install copies only files, folders "
                            "and links.",
                        )
            finally:
                os.close(folder)
    finally:
        for folder, _, _ in pending:
            os.close(folder)
    _check_links(target, links, skill)
    return left_out


def _check_links(target: Path, links: list[str], skill: str) -> None:
    """Refuse a link of the copy that resolves outside it (the copy is ours: no race)."""
    root = os.path.realpath(target)
    for relative in links:
        real = os.path.realpath(target / relative)
        if real != root and not real.startswith(root + os.sep):
            raise _refuse(
                skill,
                relative,
                "is a link that leads outside the skill folder; install refuses it, since it "
                "could expose a file of this machine.",
            )
