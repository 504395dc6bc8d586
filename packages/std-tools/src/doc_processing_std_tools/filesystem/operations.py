"""File operations confined to the workspace folder, without any MCP in sight.

Every function takes a `Workspace` (the root, the size limit and the output limit) and a
path relative to its root. Paths go through `paths.confine`, so `..`, absolute paths and
symbolic links that lead outside the root are refused. Writes are atomic: the new content
goes to a temporary file in the same folder, which then replaces the target in one step;
when a write fails, the temporary file and any folder created for it are removed again.
Nothing here ever deletes a file or folder that was in the workspace before the call.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import logging
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .._text import truncate
from ..config import Settings, get_settings
from ..errors import (
    BinaryFileError,
    FileTooLargeError,
    InvalidArgumentError,
    NotFoundError,
    PathOutsideRootError,
)
from ..paths import confine, is_inside, names_nothing
from .bounded_regex import BoundedRegex

__all__ = [
    "MAX_FIND_RESULTS",
    "MAX_LIST_ENTRIES",
    "MAX_SEARCH_RESULTS",
    "SKIPPED_DIRS",
    "Workspace",
    "atomic_write",
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
#: Most entries `list_directory` shows before counting the rest.
MAX_LIST_ENTRIES = 1000
#: Most paths `find_files` returns before counting the rest.
MAX_FIND_RESULTS = 500
#: Upper bound of `search_text`'s `max_results`.
MAX_SEARCH_RESULTS = 1000
_SEARCH_LINE_CHARS = 300
_SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class Workspace:
    """The folder the tools are confined to, with the limits that apply inside it."""

    root: Path
    """Absolute, resolved folder; every path argument is relative to it."""
    max_file_bytes: int
    """Files larger than this are neither read nor written."""
    output_limit: int
    """Characters of tool output kept before the rest is cut with a marker."""

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> Workspace:
        """The workspace described by `settings` (default: the current settings)."""
        current = settings if settings is not None else get_settings()
        return cls(
            root=current.workspace_dir,  # `load_settings` resolves it already
            max_file_bytes=current.max_file_size_bytes,
            output_limit=current.output_truncation_limit,
        )

    def resolve(self, path: str, *, allow_root: bool = False) -> Path:
        """Confine `path` inside the root and return it absolute and symlink-free."""
        return confine(self.root, path, what="path", allow_root=allow_root)

    def relative(self, absolute: Path) -> str:
        """`absolute` as a path relative to the root, with `/` separators (`.` for the root)."""
        rel = absolute.relative_to(self.root).as_posix()
        return rel or "."


def _human_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def existing_file(ws: Workspace, path: str) -> tuple[Path, int]:
    """Confine `path` and check that it names a regular file within the size limit.

    The file tools and the document tools both start here, so a missing file, a folder,
    a named pipe or a file over the limit is reported in the same words by either. One
    ``stat`` of the resolved path answers every check.

    Returns:
        The absolute, symlink-free path and the file's size in bytes.

    Raises:
        PathOutsideRootError, InvalidArgumentError: a bad path (see `Workspace.resolve`).
        NotFoundError: nothing is at `path`.
        InvalidArgumentError: `path` is a folder, or not a regular file (a named pipe, a
            socket, a device), which a reader would wait on forever.
        FileTooLargeError: the file is over `Workspace.max_file_bytes`.
    """
    target = ws.resolve(path)
    try:
        status = target.stat()
    except OSError as exc:
        if not names_nothing(exc):
            raise
        raise NotFoundError(
            f"There is no file {path!r} in the workspace {ws.root}; "
            "use list_directory or find_files to see what exists."
        ) from None
    if stat.S_ISDIR(status.st_mode):
        raise InvalidArgumentError(
            f"{path!r} is a folder, not a file; use list_directory to see what it holds and "
            "pass the path of a file in it."
        )
    if not stat.S_ISREG(status.st_mode):
        raise InvalidArgumentError(_not_regular(path))
    size = status.st_size
    if size > ws.max_file_bytes:
        raise FileTooLargeError(
            f"{path!r} is {_human_size(size)} ({size:,} bytes), over the limit of "
            f"{ws.max_file_bytes:,} bytes (DPTTOOLS_MAX_FILE_SIZE_MB="
            f"{ws.max_file_bytes / 1048576:g}); raise DPTTOOLS_MAX_FILE_SIZE_MB to read it."
        )
    return target, size


def _not_regular(path: str) -> str:
    # Reading a named pipe or a device would block or never end.
    return (
        f"{path!r} is not a regular file (a named pipe, socket or device); the file and "
        "document tools only work on regular files, so pass the path of one."
    )


def _decode(data: bytes, path: str) -> tuple[str, bool]:
    """UTF-8 text and whether it started with a byte-order mark."""
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise BinaryFileError(
            f"{path!r} is a binary file, not text; for PDF, DOCX or XLSX use the document "
            "tools (read_document, get_file_overview)."
        )
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        text = data[3 if bom else 0 :].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BinaryFileError(
            f"{path!r} is not UTF-8 text (invalid byte at offset {exc.start}); "
            "only UTF-8 files can be read and edited with the file tools."
        ) from None
    return text, bom


def _read_text(ws: Workspace, path: str) -> tuple[Path, str, bool]:
    target, _ = existing_file(ws, path)
    text, bom = _decode(target.read_bytes(), path)
    return target, text, bom


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


def _make_folders(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents; return the ones created, deepest first."""
    missing: list[Path] = []
    current = folder
    while not current.exists():
        missing.append(current)
        current = current.parent
    folder.mkdir(parents=True, exist_ok=True)
    return missing


def _new_file_mode() -> int:
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


def _check_writable(target: Path, path: str) -> None:
    """Refuse to replace a file its permissions keep us from writing.

    An atomic write swaps the folder entry, which the file's own permissions do not
    guard; this keeps a file marked read-only from being replaced anyway.
    """
    if target.exists() and not os.access(target, os.W_OK):
        raise InvalidArgumentError(
            f"{path!r} is read-only (its permissions do not let this server write it); "
            "nothing was changed. Make it writable first if it should change."
        )


def atomic_write(target: Path, data: bytes) -> None:
    """Replace `target` with `data` so that readers see the old or the new file, never half.

    The bytes go to a temporary file in the target's folder, are flushed to disk, and the
    temporary file is renamed over the target. An existing target keeps its permissions.
    If anything fails, the temporary file is removed and the target is untouched.
    """
    # A short prefix: the temporary name must fit where a 255-character name fits.
    fd, tmp_name = tempfile.mkstemp(
        prefix=f".{target.name[:64]}.", suffix=".tmp", dir=target.parent
    )
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else _new_file_mode()
        tmp.chmod(mode)
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)


def _sync_folder(folder: Path) -> None:
    """Flush the folder entry of a rename to disk where the system allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        logger.debug("Could not flush the folder %s", folder, exc_info=True)
    finally:
        os.close(fd)


def read_file(
    ws: Workspace, path: str, start_line: int | None = None, end_line: int | None = None
) -> str:
    """The text of a UTF-8 file, whole or lines `start_line`..`end_line` (1-based, inclusive).

    Long output is cut at the output limit; the marker says which line to continue from.
    """
    _, text, _ = _read_text(ws, path)
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
    target = ws.resolve(path)
    if target.is_dir():
        raise InvalidArgumentError(f"{path!r} is a folder; pass the path of a file to write.")
    if target.exists() and not target.is_file():
        raise InvalidArgumentError(_not_regular(path))
    data = _encode(content, "content", path)
    if len(data) > ws.max_file_bytes:
        raise FileTooLargeError(
            f"The content is {_human_size(len(data))}, over the limit of "
            f"{_human_size(ws.max_file_bytes)} (DPTTOOLS_MAX_FILE_SIZE_MB); nothing was written."
        )
    _check_writable(target, path)
    existed = target.exists()
    created = _make_folders(target.parent)
    try:
        atomic_write(target, data)
    except BaseException:
        # Leave the workspace as it was: the folders made for this write go again.
        for folder in created:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    logger.info("Wrote %d bytes to %s", len(data), target)
    action = "replaced its previous content" if existed else "created it"
    return f"Wrote {len(data)} bytes to {ws.relative(target)} ({action})."


def edit_file(ws: Workspace, path: str, old_text: str, new_text: str) -> str:
    """Replace the one occurrence of `old_text` in a file with `new_text`.

    `old_text` must occur exactly once; otherwise nothing is written and the error says
    how many times it was found. A file with Windows line endings can be edited with
    `old_text` and `new_text` written with plain `\\n`.
    """
    if not old_text:
        raise InvalidArgumentError(
            "old_text is empty; pass the exact text to replace, as read_file shows it."
        )
    target, text, bom = _read_text(ws, path)
    count = text.count(old_text)
    if count == 0 and "\r\n" in text and "\r\n" not in old_text and "\n" in old_text:
        crlf_old = old_text.replace("\n", "\r\n")
        if text.count(crlf_old):
            old_text, new_text = crlf_old, new_text.replace("\r\n", "\n").replace("\n", "\r\n")
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
    if len(data) > ws.max_file_bytes:
        raise FileTooLargeError(
            f"After the edit {path!r} would be {_human_size(len(data))}, over the limit of "
            f"{_human_size(ws.max_file_bytes)} (DPTTOOLS_MAX_FILE_SIZE_MB); nothing was changed."
        )
    _check_writable(target, path)
    atomic_write(target, data)
    line = text.count("\n", 0, index) + 1
    logger.info("Edited %s at line %d", target, line)
    return f"Replaced 1 occurrence in {ws.relative(target)} at line {line}."


def _resolved(path: Path) -> Path | None:
    """`path` with every symbolic link followed, or None when the links loop."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return None


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether the entry is a folder (or links to one); False when that cannot be told."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _entry_line(ws: Workspace, entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        real = _resolved(Path(entry.path))
        if real is None:
            return f"{entry.name}  (symbolic link in a loop: it leads nowhere)"
        if not is_inside(real, ws.root):
            return f"{entry.name}  (symbolic link leading outside the workspace)"
        kind = "/" if real.is_dir() else ""
        return f"{entry.name}{kind}  (symbolic link to {ws.relative(real)})"
    if _is_dir(entry):
        return f"{entry.name}/"
    try:
        size = entry.stat().st_size
    except OSError:
        return entry.name
    return f"{entry.name}  {_human_size(size)}"


def list_directory(ws: Workspace, path: str = ".") -> str:
    """The entries of a folder: folders first (with a trailing `/`), then files with sizes."""
    target = ws.resolve(path, allow_root=True)
    if not target.exists():
        raise NotFoundError(f"There is no folder {path!r} in the workspace {ws.root}.")
    if not target.is_dir():
        raise InvalidArgumentError(f"{path!r} is a file, not a folder; use get_file_info on it.")
    with os.scandir(target) as scan:
        entries = list(scan)
    entries.sort(key=lambda e: (not _is_dir(e), e.name.lower(), e.name))
    folders = sum(1 for e in entries if _is_dir(e))
    if not entries:
        return f"{ws.relative(target)}: empty folder"
    header = f"{ws.relative(target)}: {folders} folders, {len(entries) - folders} files"
    lines = [header, *(_entry_line(ws, e) for e in entries[:MAX_LIST_ENTRIES])]
    if len(entries) > MAX_LIST_ENTRIES:
        lines.append(f"... and {len(entries) - MAX_LIST_ENTRIES} more entries not shown")
    return truncate("\n".join(lines), ws.output_limit, hint="list a subfolder to see less")


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


def _walk_files(ws: Workspace, base: Path) -> Iterator[Path]:
    """Regular files under `base` (sorted, depth first) that resolve inside the workspace."""
    for folder, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        for name in sorted(filenames):
            candidate = Path(folder) / name
            if candidate.is_symlink():
                real = _resolved(candidate)
                if real is None or not is_inside(real, ws.root):
                    continue
            # Regular files only: reading a named pipe or a device would block.
            if candidate.is_file():
                yield candidate


def _check_pattern(pattern: str, what: str) -> str:
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


def find_files(ws: Workspace, pattern: str, path: str = ".") -> str:
    """Paths of the files under `path` whose relative path matches the glob `pattern`.

    Returns one workspace-relative path per line, sorted; at most `MAX_FIND_RESULTS`.
    """
    regex = glob_to_regex(_check_pattern(pattern, "pattern"))
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
    candidates = ((p, p.relative_to(base).as_posix()) for p in _walk_files(ws, base))
    with bounded:
        matches = [ws.relative(p) for p, _ in bounded.filter(candidates, lambda item: item[1])]
    if not matches:
        return f"No files under {ws.relative(base)} match {pattern!r}."
    lines = matches[:MAX_FIND_RESULTS]
    if len(matches) > MAX_FIND_RESULTS:
        lines.append(
            f"... and {len(matches) - MAX_FIND_RESULTS} more; narrow the pattern or the path"
        )
    return truncate("\n".join(lines), ws.output_limit, hint="narrow the pattern or the path")


def _searchable_text(ws: Workspace, file: Path, *, strict: bool = False) -> str | None:
    """The file's text, or None when it is too large, unreadable or binary.

    Invalid UTF-8 is replaced unless `strict`, when it makes the file count as binary.
    """
    try:
        if file.stat().st_size > ws.max_file_bytes:
            return None
        data = file.read_bytes()
    except OSError:
        return None
    if b"\x00" in data[:_SNIFF_BYTES]:
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
    files: Iterable[Path] = [base] if base.is_file() else _walk_files(ws, base)
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
        return f"No match for {pattern!r} under {ws.relative(base)} ({searched} files searched)."
    if stopped:
        results.append(
            f"[stopped after {max_results} matches; narrow the pattern, the path or include]"
        )
    return truncate("\n".join(results), ws.output_limit, hint="narrow the search")


def get_file_info(ws: Workspace, path: str) -> str:
    """JSON facts about a file or folder: type, size, dates, permissions, line count."""
    target = ws.resolve(path, allow_root=True)
    if not target.exists():
        raise NotFoundError(f"There is no file or folder {path!r} in the workspace {ws.root}.")
    given = ws.root / path.strip() if path.strip() not in ("", ".") else ws.root
    info: dict[str, object] = {"path": ws.relative(target), "absolute_path": str(target)}
    status = target.stat()
    if target.is_dir():
        info["type"] = "directory"
        with os.scandir(target) as scan:
            info["entries"] = sum(1 for _ in scan)
    else:
        info["type"] = "file" if target.is_file() else "other"
        info["size_bytes"] = status.st_size
        info["size"] = _human_size(status.st_size)
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
