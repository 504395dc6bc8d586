"""File operations confined to the workspace folder, without any MCP in sight.

Every function takes a `Workspace` (the root, the size limit and the output limit; see
`workspace`) and a path relative to its root. Files are opened, read and written through
`_io`, which walks the path from the root without letting the kernel follow a link, so
`..`, absolute paths and symbolic links that lead outside the root are refused even when
a link is swapped in during the call. Writes are atomic: the new content goes to a
temporary file, which then replaces the target in one step; when a write fails, the
temporary file and any folder created for it are removed again. Writes and edits of one
file are serialised, so an edit never loses another that finished before it. Nothing here
ever deletes a file or folder that was in the workspace before the call (only our own
temporary files of interrupted writes, see `_io.sweep_stale_temporaries`). Folders are
walked by `walk`.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import json
import logging
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Final

from .. import _io
from .._text import truncate
from ..errors import ChangeRefusedError, InvalidArgumentError, NotFoundError, StdToolsError
from ..paths import is_inside
from ..workspace import Workspace, existing_file, file_checks, located
from .bounded_regex import BoundedRegex
from .walk import (
    MAX_WALK_DEPTH,
    SKIPPED_DIRS,
    check_pattern,
    glob_to_regex,
    is_dir,
    resolved,
    walk_files,
    with_depth_note,
)

__all__ = [
    "MAX_FIND_RESULTS",
    "MAX_LIST_ENTRIES",
    "MAX_SEARCH_RESULTS",
    "MAX_WALK_DEPTH",
    "SKIPPED_DIRS",
    "Workspace",
    "edit_file",
    "existing_file",
    "find_files",
    "get_file_info",
    "glob_to_regex",
    "list_directory",
    "read_file",
    "search_text",
    "write_file",
]

logger = logging.getLogger(__name__)

#: Most entries `list_directory` shows before counting the rest.
MAX_LIST_ENTRIES = 1000
#: Most paths `find_files` returns before counting the rest.
MAX_FIND_RESULTS = 500
#: Upper bound of `search_text`'s `max_results`.
MAX_SEARCH_RESULTS = 1000
_SEARCH_LINE_CHARS = 300
_BINARY_HINT = "for PDF, DOCX or XLSX use the document tools (read_document, get_file_overview)."


def _read_text(ws: Workspace, location: _io.Location, path: str) -> tuple[str, bool]:
    """The text of the file at `location` and whether it started with a byte-order mark."""
    data, _ = _io.read_at(location, **file_checks(ws, path))
    return _decode(data, path)


def _decode(data: bytes, path: str) -> tuple[str, bool]:
    if _io.is_binary(data):
        return _io.decode_utf8(data, repr(path), hint=_BINARY_HINT)
    return _io.decode_utf8(
        data, repr(path), hint="only UTF-8 files can be read and edited with the file tools."
    )


def _encode(text: str, what: str, path: str) -> bytes:
    """`text` as UTF-8, or an error when it holds characters UTF-8 cannot store."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"{what} for {path!r} holds a character that cannot be written as UTF-8 "
            f"({text[exc.start]!r} at position {exc.start}, a lone surrogate); remove it. "
            "Nothing was written."
        ) from None


def _current_mode(location: _io.Location, path: str) -> int | None:
    """The permission bits of the file to be replaced, or None when there is none yet.

    Raises:
        InvalidArgumentError: the name is a folder, a pipe or the like, or the file is
            read-only for this server (an atomic write swaps the folder entry, which the
            file's own permissions do not guard, so this keeps such a file unchanged).
    """
    if location.missing:
        return None
    try:
        status = os.stat(location.name, dir_fd=location.dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(status.st_mode):
        raise InvalidArgumentError(f"{path!r} is a folder; pass the path of a file to write.")
    if stat.S_ISLNK(status.st_mode):
        raise InvalidArgumentError(
            f"{path!r} was replaced by a symbolic link during the call; nothing was "
            "written. Try again."
        )
    if not stat.S_ISREG(status.st_mode):
        raise _io.not_regular(repr(path))
    if not os.access(location.name, os.W_OK, dir_fd=location.dir_fd):
        raise InvalidArgumentError(
            f"{path!r} is read-only (its permissions do not let this server write it); "
            "nothing was changed. Make it writable first if it should change."
        )
    return stat.S_IMODE(status.st_mode)


def _check_size(ws: Workspace, data: bytes, shown: str, unwritten: str) -> None:
    """Refuse `data` when it is over the file size limit, before anything is written."""
    if len(data) > ws.max_file_bytes:
        raise _io.too_large(shown, len(data), ws.max_file_bytes, unwritten=unwritten)


_NEVER_LEFT: Final = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | 0o111 | stat.S_IWOTH
"""Permission bits the file tools never leave on a file they write: execute,
setuid, setgid, sticky and write for others."""


def _replace(ws: Workspace, location: _io.Location, path: str, data: bytes) -> _Written:
    """Write `data` atomically at `location`, keeping the permissions of the file it
    replaces less `_NEVER_LEFT`, once the change policy lets the change through.

    Raises:
        ChangeRefusedError: the policy holds the change back (`ChangePolicy.verdict`).
    """
    mode = _current_mode(location, path)
    kept = (_io.new_file_mode() if mode is None else mode) & ~_NEVER_LEFT
    rel = PurePosixPath(ws.relative(location.path))
    reason = ws.changes.verdict(rel, kind="file", mode=kept, workspace=ws.root)
    if reason is not None:
        raise ChangeRefusedError(
            f"{path!r} was not written: {reason}. Nothing was changed. If the user wants "
            "this change, they can make it themselves; the Security page of the "
            "documentation shows how an operator lets the file tools make it behind the "
            "host's approval."
        )
    _io.write_atomically(location, data, mode=kept)
    return _Written(before=mode, after=kept)


@dataclass(frozen=True, slots=True)
class _Written:
    before: int | None
    """The permissions of the file replaced, or None when there was none."""
    after: int
    """The permissions of the file written."""

    @property
    def note(self) -> str:
        """A sentence when the permissions changed, else nothing."""
        if self.before is None or self.before == self.after:
            return ""
        return (
            f" Its permissions changed from {self.before:04o} to {self.after:04o}: the file "
            "tools never leave a file executable, setuid, setgid or writable for others."
        )


def read_file(
    ws: Workspace, path: str, start_line: int | None = None, end_line: int | None = None
) -> str:
    """The text of a UTF-8 file, whole or lines `start_line`..`end_line` (1-based, inclusive).

    Long output is cut at the output limit; the marker says which line to continue from.
    """
    with located(ws, path) as location:
        text, _ = _read_text(ws, location, path)
    first = 1
    lines: list[str] | None = None
    if start_line is not None or end_line is not None:
        first = 1 if start_line is None else start_line
        if first < 1:
            raise InvalidArgumentError(f"start_line must be 1 or more, not {first}.")
        if end_line is not None and end_line < first:
            raise InvalidArgumentError(
                f"end_line ({end_line}) is before start_line ({first}); "
                "pass end_line >= start_line."
            )
        lines = text.splitlines(keepends=True)
        if first > len(lines) and not (first == 1 and not lines):
            raise InvalidArgumentError(
                f"start_line {first} is past the end of {path!r}, which has {len(lines)} lines."
            )
        lines = lines[first - 1 : end_line]
        text = "".join(lines)
    if len(text) <= ws.output_limit:
        return text
    # The cut lands at most a few hundred characters before the limit; restart from the
    # line that holds the cut, so nothing is skipped. Lines are counted as `start_line`
    # counts them (`splitlines`, which also ends a line at "\r", "\f", "\u2028" ...).
    safe = max(ws.output_limit - 300, 0)
    next_line = first
    end = 0
    for line in text.splitlines(keepends=True) if lines is None else lines:
        end += len(line)
        if end > safe:
            break
        next_line += 1
    return truncate(
        text, ws.output_limit, hint=f"call read_file with start_line={next_line} to read on"
    )


def write_file(ws: Workspace, path: str, content: str) -> str:
    """Create or replace a file with `content` (UTF-8), creating missing folders.

    Returns a one-line confirmation.
    """
    data = _encode(content, "content", path)
    _check_size(ws, data, f"The content for {path!r}", "nothing was written")
    with located(ws, path, writing=True) as location, _io.locked(location):
        written = _replace(ws, location, path, data)
        target = location.path
    logger.info("Wrote %d bytes to %s", len(data), target)
    action = "created it" if written.before is None else "replaced its previous content"
    return f"Wrote {len(data)} bytes to {ws.relative(target)} ({action}).{written.note}"


def edit_file(ws: Workspace, path: str, old_text: str, new_text: str) -> str:
    """Replace the one occurrence of `old_text` in a file with `new_text`.

    `old_text` must occur exactly once; otherwise nothing is written and the error says
    how many times it was found. A file with Windows line endings can be edited with
    `old_text` and `new_text` written with plain `\\n`. The read and the write happen under
    the file's write lock, so concurrent edits of one file all land.
    """
    if not old_text:
        raise InvalidArgumentError(
            "old_text is empty; pass the exact text to replace, as read_file shows it."
        )
    with located(ws, path) as location, _io.locked(location):
        text, bom = _read_text(ws, location, path)
        count = text.count(old_text)
        if count == 0 and "\r\n" in text and "\r\n" not in old_text and "\n" in old_text:
            crlf_old = old_text.replace("\n", "\r\n")
            if text.count(crlf_old):
                old_text = crlf_old
                new_text = new_text.replace("\r\n", "\n").replace("\n", "\r\n")
                count = text.count(old_text)
        if count != 1:
            found = "not found (0 times)" if count == 0 else f"found {count} times"
            advice = (
                "it must match exactly, including spaces, indentation and line breaks; "
                "read the file again with read_file and copy the text"
                if count == 0
                else "include more of the surrounding text so that it occurs exactly once"
            )
            raise InvalidArgumentError(
                f"old_text was {found} in {path!r}; {advice}. Nothing was changed."
            )
        index = text.index(old_text)
        updated = text[:index] + new_text + text[index + len(old_text) :]
        data = (b"\xef\xbb\xbf" if bom else b"") + _encode(updated, "new_text", path)
        _check_size(ws, data, f"After the edit {path!r}", "nothing was changed")
        written = _replace(ws, location, path, data)
        target = location.path
    line = text.count("\n", 0, index) + 1
    logger.info("Edited %s at line %d", target, line)
    return f"Replaced 1 occurrence in {ws.relative(target)} at line {line}.{written.note}"


def _entry_line(ws: Workspace, folder: Path, entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        # By name, only to describe where the link leads; nothing is read through it.
        real = resolved(folder / entry.name)
        if real is None:
            return f"{entry.name}  (symbolic link in a loop: it leads nowhere)"
        if not is_inside(real, ws.root):
            return f"{entry.name}  (symbolic link leading outside the workspace)"
        kind = "/" if real.is_dir() else ""
        return f"{entry.name}{kind}  (symbolic link to {ws.relative(real)})"
    if is_dir(entry):
        return f"{entry.name}/"
    try:
        size = entry.stat().st_size
    except OSError:
        return entry.name
    return f"{entry.name}  {_io.human_size(size)}"


@contextlib.contextmanager
def _found(ws: Workspace, path: str, what: str) -> Iterator[_io.Location]:
    """`_io.locate` of `path` (the root allowed) for the block, with nothing there (or a
    file on the way) reported as "There is no `what` ..."."""
    try:
        with _io.locate(ws.root, ws.argument(path), what="path", allow_root=True) as location:
            yield location
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise NotFoundError(
                f"There is no {what} {path!r} in the workspace {ws.root}."
            ) from None
        raise


def list_directory(ws: Workspace, path: str = ".") -> str:
    """The entries of a folder: folders first (with a trailing `/`), then files with sizes.

    The folder is opened through `_io` and listed from its descriptor, so a link swapped
    in for it during the call cannot show the entries of a folder outside the workspace.
    """
    with _found(ws, path, "folder") as location:
        try:
            fd = _io.open_folder(location)
        except NotADirectoryError:
            raise InvalidArgumentError(
                f"{path!r} is a file, not a folder; use get_file_info on it."
            ) from None
        target = location.path
        try:
            with os.scandir(fd) as scan:
                entries = list(scan)
            entries.sort(key=lambda e: (not is_dir(e), e.name.lower(), e.name))
            folders = sum(1 for e in entries if is_dir(e))
            shown = [_entry_line(ws, target, e) for e in entries[:MAX_LIST_ENTRIES]]
        finally:
            os.close(fd)
    if not entries:
        return f"{ws.relative(target)}: empty folder"
    header = f"{ws.relative(target)}: {folders} folders, {len(entries) - folders} files"
    lines = [header, *shown]
    if len(entries) > MAX_LIST_ENTRIES:
        lines.append(f"... and {len(entries) - MAX_LIST_ENTRIES} more entries not shown")
    return truncate("\n".join(lines), ws.output_limit, hint="list a subfolder to see less")


def find_files(ws: Workspace, pattern: str, path: str = ".") -> str:
    """Paths of the files under `path` whose relative path matches the glob `pattern`.

    Returns one workspace-relative path per line, sorted; at most `MAX_FIND_RESULTS`.
    """
    regex = glob_to_regex(check_pattern(pattern, "pattern"))
    base = ws.resolve(path, allow_root=True)
    if not base.is_dir():
        raise NotFoundError(f"There is no folder {path!r} in the workspace {ws.root}.")
    # A glob with many stars backtracks like a bad regular expression ('*a*a*a*a*b'
    # against a long name), so it is matched under the same time bound.
    bounded = BoundedRegex(
        rf"\A(?:{regex.pattern})",
        ignore_case=False,
        what="pattern",
        label=f"The glob pattern {pattern!r}",
        unit="paths",
    )
    too_deep: list[Path] = []
    candidates = ((p, p.relative_to(base).as_posix()) for p in walk_files(ws, base, too_deep))
    with bounded:
        matches = [ws.relative(p) for p, _ in bounded.filter(candidates, lambda item: item[1])]
    hint = "narrow the pattern or the path"
    if not matches:
        body = f"No files under {ws.relative(base)} match {pattern!r}."
        return with_depth_note(ws, body, base, too_deep, hint)
    lines = matches[:MAX_FIND_RESULTS]
    if len(matches) > MAX_FIND_RESULTS:
        lines.append(
            f"... and {len(matches) - MAX_FIND_RESULTS} more; narrow the pattern or the path"
        )
    return with_depth_note(ws, "\n".join(lines), base, too_deep, hint)


def _searchable_text(ws: Workspace, file: Path, *, strict: bool = False) -> str | None:
    """The file's text, or None when it is too large, unreadable or binary.

    Invalid UTF-8 is replaced unless `strict`, when it makes the file count as binary.
    """
    relative = ws.relative(file)
    try:
        _, data, _ = _io.read_bytes(ws.root, relative, what="path", **file_checks(ws, relative))
    except (StdToolsError, OSError):
        return None
    if _io.is_binary(data):
        return None
    try:
        return data.decode("utf-8-sig", errors="strict" if strict else "replace")
    except UnicodeDecodeError:
        return None


def search_text(
    ws: Workspace,
    pattern: str,
    path: str = ".",
    include: str = "",
    ignore_case: bool = False,
    max_results: int = 100,
) -> str:
    """Lines matching the regular expression `pattern`, as `path:line: text`.

    `path` is a folder to search recursively or a single file; `include` is an optional
    glob on file names (such as `*.md`). Binary files and files over the size limit are
    skipped. Stops after `max_results` matches and says so. The pattern is matched in a
    child process under a time bound (see `bounded_regex`), so a pattern that backtracks
    catastrophically is refused instead of freezing the server.
    """
    if not 1 <= max_results <= MAX_SEARCH_RESULTS:
        raise InvalidArgumentError(
            f"max_results must be between 1 and {MAX_SEARCH_RESULTS}, not {max_results}."
        )
    regex = BoundedRegex(pattern, ignore_case=ignore_case, what="pattern")
    base = ws.resolve(path, allow_root=True)
    if not base.exists():
        raise NotFoundError(f"There is no file or folder {path!r} in the workspace {ws.root}.")
    too_deep: list[Path] = []
    files: Iterable[Path] = [base] if base.is_file() else walk_files(ws, base, too_deep)
    searched = 0

    def lines() -> Iterator[tuple[str, int, str]]:
        nonlocal searched
        for file in files:
            if include and not fnmatch.fnmatchcase(file.name, include):
                continue
            text = _searchable_text(ws, file)
            if text is None:
                continue
            searched += 1
            name = ws.relative(file)
            for number, line in enumerate(text.splitlines(), start=1):
                yield name, number, line

    results: list[str] = []
    stopped = False
    with regex:
        for name, number, line in regex.filter(lines(), lambda item: item[2]):
            shown = line if len(line) <= _SEARCH_LINE_CHARS else line[:_SEARCH_LINE_CHARS] + "…"
            results.append(f"{name}:{number}: {shown}")
            if len(results) >= max_results:
                stopped = True
                break
    if not results:
        body = f"No match for {pattern!r} under {ws.relative(base)} ({searched} files searched)."
        return with_depth_note(ws, body, base, too_deep, "narrow the search")
    if stopped:
        results.append(
            f"[stopped after {max_results} matches; narrow the pattern, the path or include]"
        )
    return with_depth_note(ws, "\n".join(results), base, too_deep, "narrow the search")


def get_file_info(ws: Workspace, path: str) -> str:
    """JSON facts about a file or folder: type, size, dates, permissions, line count.

    The facts are taken through `_io` from what the walk found, never through a link
    swapped in during the call.
    """
    with _found(ws, path, "file or folder") as location:
        status = _io.stat_at(location, repr(path))
        target = location.path
        entries: int | None = None
        if stat.S_ISDIR(status.st_mode):
            fd = _io.open_folder(location)
            try:
                with os.scandir(fd) as scan:
                    entries = sum(1 for _ in scan)
            finally:
                os.close(fd)
    relative = ws.argument(path).strip()
    given = ws.root / relative if relative not in ("", ".") else ws.root
    info: dict[str, object] = {"path": ws.relative(target), "absolute_path": str(target)}
    if entries is not None:
        info["type"] = "directory"
        info["entries"] = entries
    else:
        info["type"] = "file" if stat.S_ISREG(status.st_mode) else "other"
        info["size_bytes"] = status.st_size
        info["size"] = _io.human_size(status.st_size)
        info["suffix"] = target.suffix.lower()
    info["modified"] = datetime.fromtimestamp(status.st_mtime, UTC).isoformat(timespec="seconds")
    info["permissions"] = stat.filemode(status.st_mode)
    if given.is_symlink():
        info["symbolic_link_to"] = ws.relative(target)
    if info["type"] == "file":
        within = status.st_size <= ws.max_file_bytes
        info["within_size_limit"] = within
        if within:
            text = _searchable_text(ws, target, strict=True)
            info["is_text"] = text is not None
            if text is not None:
                info["line_count"] = len(text.splitlines())
    return json.dumps(info, indent=2)
