"""Walking the workspace: the files under a folder, found without following a link out
of it, and the globs that select among them (`find_files`, `search_text`)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Generator, Iterator
from pathlib import Path

from .. import _io
from .._text import truncate
from ..errors import InvalidArgumentError, PathOutsideRootError
from ..paths import is_inside
from ..workspace import Workspace

__all__ = [
    "MAX_WALK_DEPTH",
    "SKIPPED_DIRS",
    "check_pattern",
    "glob_to_regex",
    "is_dir",
    "resolved",
    "walk_files",
    "with_depth_note",
]

#: Folders that `find_files` and `search_text` never walk into: tool caches and
#: version-control data, which would drown the results.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        "node_modules",
        ".venv",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".tox",
    }
)
#: Folder levels under the searched folder that `find_files` and `search_text` enter; a
#: folder deeper than this is left out, and the answer names it (search from it instead).
#: The walk holds one descriptor per level, so this also bounds what it keeps open.
MAX_WALK_DEPTH = 128
#: Folders left out for their depth that an answer names; the rest are counted.
_SHOWN_TOO_DEEP = 3


def resolved(path: Path) -> Path | None:
    """`path` with every symbolic link followed, or None when the links loop."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return None


def is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether the entry is a folder (or links to one); False when that cannot be told."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob over `/`-separated relative paths.

    `*` and `?` stay within one path segment, `[...]` is a character class and `**`
    spans any number of folders (`**/` also matches none).
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            close = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if close == -1:
                out.append(re.escape(char))
                i += 1
            else:
                body = pattern[i + 1 : close]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = close + 1
        else:
            out.append(re.escape(char))
            i += 1
    try:
        return re.compile("".join(out) + r"\Z")
    except re.error as exc:
        raise InvalidArgumentError(f"The glob pattern {pattern!r} is not valid: {exc}.") from None


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _folder_files(ws: Workspace, folder: Path, fd: int) -> Generator[Path, None, list[str]]:
    """The regular files of the open folder `fd` (sorted) that resolve inside the workspace;
    returns (as the generator's value) the names of its subfolders to walk, sorted."""
    with os.scandir(fd) as scan:
        entries = list(scan)
    subfolders = sorted(e.name for e in entries if is_dir(e) and e.name not in SKIPPED_DIRS)
    for name in sorted(e.name for e in entries if not is_dir(e)):
        candidate = folder / name
        try:
            status = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISLNK(status.st_mode):
            # By name, only to decide whether to offer the link; whatever reads it later
            # walks it again through `_io`.
            real = resolved(candidate)
            if real is None or not is_inside(real, ws.root) or not real.is_file():
                continue
        elif not stat.S_ISREG(status.st_mode):
            # Regular files only: reading a named pipe or a device would block.
            continue
        yield candidate
    return subfolders


def walk_files(ws: Workspace, base: Path, too_deep: list[Path]) -> Iterator[Path]:
    """Regular files under `base` (sorted, depth first) that resolve inside the workspace.

    The walk starts from a descriptor opened through `_io` and enters every folder by
    descriptor from its parent's, never through a link (``O_NOFOLLOW``), so a folder
    swapped for a link during the walk cannot list the files of a folder outside the
    workspace. It keeps its own stack (one open folder per level), not Python's, and does
    not go deeper than `MAX_WALK_DEPTH` levels under `base`: each folder it leaves out for
    that is added to `too_deep`, for the answer to name.
    """
    with _io.locate(ws.root, ws.relative(base), what="path", allow_root=True) as location:
        # (open folder, its path, the names of its subfolders still to walk)
        stack: list[tuple[int, Path, Iterator[str]]] = []
        fd = _io.open_folder(location)
        try:
            subfolders = yield from _folder_files(ws, base, fd)
            stack.append((fd, base, iter(subfolders)))
        except BaseException:
            os.close(fd)
            raise
        try:
            while stack:
                parent_fd, folder, names = stack[-1]
                name = next(names, None)
                if name is None:
                    stack.pop()
                    os.close(parent_fd)
                    continue
                if len(stack) > MAX_WALK_DEPTH:
                    too_deep.append(folder / name)
                    continue
                try:
                    fd = os.open(name, _FOLDER_FLAGS, dir_fd=parent_fd)
                except OSError:
                    continue  # gone, a link, or not readable: like os.fwalk, left out
                try:
                    subfolders = yield from _folder_files(ws, folder / name, fd)
                except BaseException:
                    os.close(fd)
                    raise
                stack.append((fd, folder / name, iter(subfolders)))
        finally:
            for open_fd, _, _ in stack:
                os.close(open_fd)


def with_depth_note(ws: Workspace, body: str, base: Path, too_deep: list[Path], hint: str) -> str:
    """`body` held to the output limit, followed by a note naming the folders the walk left
    out for their depth (the note is kept whole, `body` is cut to make room for it)."""
    if not too_deep:
        return truncate(body, ws.output_limit, hint=hint)
    shown = ", ".join(ws.relative(folder) for folder in too_deep[:_SHOWN_TOO_DEEP])
    more = len(too_deep) - _SHOWN_TOO_DEEP
    others = f" and {more} more" if more > 0 else ""
    note = (
        f"[not searched: {len(too_deep)} folder(s) deeper than {MAX_WALK_DEPTH} folder "
        f"levels under {ws.relative(base)}: {shown}{others}; to search inside one, pass it "
        "(or a folder nearer to it) as path]"
    )
    room = ws.output_limit - len(note) - 1
    if room <= 0:
        return truncate(note, ws.output_limit)
    return f"{truncate(body, room, hint=hint)}\n{note}"


def check_pattern(pattern: str, what: str) -> str:
    text = pattern.strip()
    while text.startswith("./"):
        text = text[2:]
    if not text:
        raise InvalidArgumentError(f"{what} is empty; pass a pattern such as '**/*.md'.")
    if text.startswith(("/", "\\")) or ".." in text.replace("\\", "/").split("/"):
        raise PathOutsideRootError(
            f"{what} {pattern!r} would leave the searched folder; use a relative pattern "
            "without '..' and pass the folder as `path`."
        )
    return text
