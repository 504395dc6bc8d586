"""The workspace: the one folder the file and document tools work in, and the checks on
the way into it.

`Workspace` holds the folder and the limits that apply inside it. `located` walks a path
from the root through `_io` (never letting the kernel follow a link), and `existing_file`
opens a regular file within the size limit and keeps it open for a block. The file system
tools (`filesystem.operations`) and the document tools (`documents.source`) both start
here, so a missing file, a folder, a named pipe or a file over the limit is reported in
the same words by either.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath
from typing import TypedDict

from . import _io
from .change_policy import FILE_TOOLS_POLICY, ChangePolicy
from .config import Settings
from .errors import (
    ConfigError,
    InvalidArgumentError,
    NotFoundError,
    PathOutsideRootError,
    StdToolsError,
)
from .paths import confine

__all__ = [
    "FileChecks",
    "Workspace",
    "existing_file",
    "file_checks",
    "folder_error",
    "located",
    "missing_file",
]


@dataclass(frozen=True, slots=True)
class Workspace:
    """The folder the tools are confined to, with the limits that apply inside it."""

    root: Path
    """Absolute, resolved folder; every path argument is relative to it."""
    max_file_bytes: int
    """Files larger than this are neither read nor written."""
    output_limit: int
    """Characters of tool output kept before the rest is cut with a marker."""
    changes: ChangePolicy = FILE_TOOLS_POLICY
    """What write_file and edit_file may change (`config.Settings.file_tools_changes`)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> Workspace:
        """The workspace described by `settings`.

        Raises:
            ConfigError: no workspace was set and the server runs in the root or the home
                folder (`Settings.workspace_refusal`): every file and document tool
                refuses, with a message naming the settings to use.
        """
        current = settings
        if current.workspace_refusal is not None:
            raise ConfigError(current.workspace_refusal)
        return cls(
            root=current.workspace_dir,  # `load_settings` resolves it already
            max_file_bytes=current.max_file_size_bytes,
            output_limit=current.output_truncation_limit,
            changes=current.file_tools_changes(),
        )

    def resolve(self, path: str, *, allow_root: bool = False) -> Path:
        """Confine `path` inside the root and return it absolute and symlink-free."""
        return confine(self.root, self.argument(path), what="path", allow_root=allow_root)

    def argument(self, path: str) -> str:
        """`path` as the tools walk it: relative to the root.

        A relative path is returned as given (the walk checks it). An absolute path that
        names the root or a place below it, as `get_file_info` shows it, is made relative
        by its name alone; the walk that follows never lets a link lead out of the root,
        so what it reaches stays inside. A ``..`` in it is kept, for the walk to refuse.

        Raises:
            PathOutsideRootError: `path` is absolute and lies outside the root.
        """
        if "\x00" in path:
            return path  # the walk refuses it with its own words
        text = path.strip()
        if not (PurePosixPath(text).is_absolute() or PureWindowsPath(text).is_absolute()):
            return path
        try:
            inside = PurePath(text).relative_to(self.root)
        except ValueError:
            raise PathOutsideRootError(
                f"path {path!r} is outside the workspace {self.root}; pass a path inside "
                f"it, either relative to it (such as 'notes.md') or absolute (starting "
                f"with '{self.root}{os.sep}')."
            ) from None
        return inside.as_posix()

    def relative(self, absolute: Path) -> str:
        """`absolute` as a path relative to the root, with `/` separators (`.` for the root)."""
        rel = absolute.relative_to(self.root).as_posix()
        return rel or "."


def missing_file(ws: Workspace, path: str) -> NotFoundError:
    """The error for a file the tools were asked for that is not there."""
    return NotFoundError(
        f"There is no file {path!r} in the workspace {ws.root}; "
        "use list_directory or find_files to see what exists."
    )


def folder_error(path: str) -> InvalidArgumentError:
    """The error for a folder passed where a file is needed."""
    return InvalidArgumentError(
        f"{path!r} is a folder, not a file; use list_directory to see what it holds and "
        "pass the path of a file in it."
    )


class FileChecks(TypedDict):
    """How `_io` checks and names a file of the workspace (the keywords of `_io.open_at`,
    `_io.read_at` and `_io.read_bytes`)."""

    shown: str
    limit: int
    missing: StdToolsError
    folder: StdToolsError


def file_checks(ws: Workspace, path: str) -> FileChecks:
    """The checks of `path` as the file and document tools word them."""
    return {
        "shown": repr(path),
        "limit": ws.max_file_bytes,
        "missing": missing_file(ws, path),
        "folder": folder_error(path),
    }


@contextlib.contextmanager
def existing_file(ws: Workspace, path: str) -> Iterator[tuple[Path, int, os.stat_result]]:
    """Check that `path` names a regular file within the size limit and keep it open for
    the block: (absolute link-free path, descriptor, status of the open file).

    The document tools start here, so a missing file, a folder, a named pipe or a file
    over the limit is reported in the same words as by the file tools. The checks are
    made on the open file (see `_io.open_at`), and whatever reads the descriptor reads
    that file, even if a link is swapped under its name meanwhile.

    Raises:
        PathOutsideRootError, InvalidArgumentError: a bad path, or one that a link leads
            outside the workspace.
        NotFoundError: nothing is at `path`.
        InvalidArgumentError: `path` is a folder; `NotRegularFileError` (a subclass): a
            named pipe, a socket or a device, which a reader would wait on forever.
        FileTooLargeError: the file is over `Workspace.max_file_bytes`.
    """
    with located(ws, path) as location:
        fd, status = _io.open_at(location, **file_checks(ws, path))
        target = location.path
    try:
        yield target, fd, status
    finally:
        os.close(fd)


@contextlib.contextmanager
def located(ws: Workspace, path: str, *, writing: bool = False) -> Iterator[_io.Location]:
    """`_io.locate` inside the workspace, with a missing folder on the way reported as a
    missing file (or, for a write, a file on the way as the mistake it is)."""
    try:
        with _io.locate(ws.root, ws.argument(path), what="path", allow_missing=writing) as location:
            yield location
    except OSError as exc:
        if writing and exc.errno == errno.ENOTDIR:
            raise InvalidArgumentError(
                f"A part of {path!r} is a file, not a folder, so nothing can be written "
                "there; pass a path whose folders are folders."
            ) from None
        if not writing and exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise missing_file(ws, path) from None
        raise
