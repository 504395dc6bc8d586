"""Following a path inside a root without letting the kernel follow a link: `locate`
walks it one name at a time, each folder opened relative to the one before it, and ends
with a `Location` (an open folder and the final name in it)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ..errors import InvalidArgumentError
from ..paths import check_relative, loop_error, outside_error

__all__ = ["DIR_FLAGS", "ROOT_FLAGS", "Location", "locate", "open_folder", "stat_at"]

_MAX_LINKS: Final = 40
CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
ROOT_FLAGS: Final = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | CLOEXEC
"""Flags that open a root folder (following links: the root is trusted)."""
DIR_FLAGS: Final = ROOT_FLAGS | os.O_NOFOLLOW
"""Flags that open a folder on the way, never through a link."""


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
        self.fds: list[int] = [os.open(root, ROOT_FLAGS)]
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
                fd = os.open(part, DIR_FLAGS, dir_fd=self.fds[-1])
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
    return os.open(location.name, DIR_FLAGS, dir_fd=location.dir_fd)
