"""The core.hooksPath folder of the git repository a workspace lies in.

Git runs the hooks in that folder on the next commit, so a change there is held back like
a change inside ``.git`` (see `change_policy`). The git config files are read directly
(no git process): the system, global and repository files, the last value winning.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

__all__ = ["hooks_folder"]

_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"(?:[^"\\]|\\.)*")?\s*\]\s*(.*)$')
_ENTRY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


def _config_value(text: str) -> str:
    """A git config value: quotes removed, escapes resolved, comments cut."""
    out: list[str] = []
    quoted = False
    escape = False
    for char in text:
        if escape:
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(char, char))
            escape = False
        elif char == "\\":
            escape = True
        elif char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
    return "".join(out).strip()


def _hooks_path_in(config: Path) -> str | None:
    """The last core.hooksPath set in the git config file `config`, or None."""
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    section = ""
    found: str | None = None
    for line in text.splitlines():
        header = _SECTION.match(line)
        if header is not None:
            section = header.group(1).lower()
            line = header.group(2)
        entry = _ENTRY.match(line)
        if entry is not None and section == "core" and entry.group(1).lower() == "hookspath":
            found = _config_value(entry.group(2) or "")
    return found


def _repository(start: Path) -> tuple[Path, Path] | None:
    """(the work tree, the git folder) of the repository `start` lies in, or None."""
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return folder, dot_git
        if dot_git.is_file():
            try:
                first = dot_git.read_text(encoding="utf-8", errors="replace").splitlines()[0]
            except (OSError, IndexError):
                continue
            if first.startswith("gitdir:"):
                gitdir = Path(first.removeprefix("gitdir:").strip())
                return folder, gitdir if gitdir.is_absolute() else folder / gitdir
    return None


def _config_files(gitdir: Path) -> Iterator[Path]:
    """The git config files that apply to a repository, lowest priority first."""
    yield Path("/etc/gitconfig")
    home = Path("~").expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    yield (Path(xdg) if xdg else home / ".config") / "git" / "config"
    yield home / ".gitconfig"
    common = gitdir / "commondir"
    if common.is_file():
        try:
            shared = Path(common.read_text(encoding="utf-8").strip())
            yield (shared if shared.is_absolute() else gitdir / shared) / "config"
        except OSError:
            pass
    yield gitdir / "config"
    yield gitdir / "config.worktree"


_FRESH_SECONDS = 2.0
_recent: dict[str, tuple[float, Path | None]] = {}


def hooks_folder(workspace: Path) -> Path | None:
    """The absolute core.hooksPath folder of the repository `workspace` lies in, if set.

    The answer is kept for two seconds per workspace: one call's changes are judged
    against one reading of the git configuration, and a change of it by the user shows
    on the next call."""
    key = str(workspace)
    now = time.monotonic()
    recent = _recent.get(key)
    if recent is not None and now - recent[0] < _FRESH_SECONDS:
        return recent[1]
    found = _read_hooks_folder(workspace)
    if len(_recent) > 64:
        _recent.clear()
    _recent[key] = (now, found)
    return found


def _read_hooks_folder(workspace: Path) -> Path | None:
    start = Path(workspace).absolute()
    repository = _repository(start)
    if repository is None:
        return None
    tree, gitdir = repository
    stamps = tuple(_stamp(path) for path in _config_files(gitdir))
    return _hooks_folder_cached(str(tree), str(gitdir), stamps)


def _stamp(path: Path) -> tuple[str, int, int]:
    try:
        info = path.stat()
    except OSError:
        return (str(path), -1, -1)
    return (str(path), info.st_mtime_ns, info.st_size)


@lru_cache(maxsize=32)
def _hooks_folder_cached(
    tree: str, gitdir: str, stamps: tuple[tuple[str, int, int], ...]
) -> Path | None:
    value: str | None = None
    for path, _mtime, size in stamps:
        if size >= 0:
            value = _hooks_path_in(Path(path)) or value
    if not value:
        return None
    folder = Path(value).expanduser()
    return Path(os.path.normpath(folder if folder.is_absolute() else Path(tree) / folder))
