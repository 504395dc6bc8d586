"""A line for a script that failed under bubblewrap on a file the sandbox hides: the file
exists on the server, but the sandbox's allow-list does not show it (`hidden_path_note`,
`hidden_by` reading the command line `sandbox.bwrap_command` built)."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

__all__ = ["hidden_by", "hidden_path_note"]


def _under(path: Path, folders: Sequence[Path]) -> bool:
    return any(path == folder or folder in path.parents for folder in folders)


#: Options of bubblewrap that take two arguments and show something at the second.
_BINDS: Final = (
    "--bind",
    "--ro-bind",
    "--ro-bind-fd",
    "--dev-bind",
    "--symlink",
    "--ro-bind-data",
)
#: Options taking one argument; for --tmpfs, --dev and --proc it is where they are mounted.
_ONE_ARGUMENT: Final = (
    "--tmpfs",
    "--dir",
    "--perms",
    "--dev",
    "--proc",
    "--size",
    "--chdir",
    "--cap-drop",
    "--cap-add",
    "--remount-ro",
)
_NOT_FOUND: Final = "No such file or directory"
#: Python's ``[Errno 2] No such file or directory: '<path>'`` (the path as a repr).
_PYTHON_NOT_FOUND: Final = re.compile(
    re.escape(_NOT_FOUND) + r""": ('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
)


def hidden_by(prefix: Sequence[str], path: Path) -> Path | None:
    """The empty folder under which the bubblewrap command `prefix` (as `bwrap_command`
    builds it) hides `path` (absolute, normalised), or None when the sandbox shows it.
    The last mount over a path is the one a script sees; a path under none of them is
    hidden by the sandbox's empty root (``/``)."""
    shown_by: tuple[Path, bool] | None = (Path("/"), False)
    index = 1
    while index < len(prefix) and prefix[index] != "--":
        option = prefix[index]
        if option in _BINDS and index + 2 < len(prefix):
            target = Path(prefix[index + 2])
            if _under(path, [target]):
                shown_by = (target, True)
            index += 3
        elif option in _ONE_ARGUMENT and index + 1 < len(prefix):
            target = Path(prefix[index + 1])
            if option in ("--tmpfs", "--dev", "--proc") and _under(path, [target]):
                shown_by = (target, option != "--tmpfs")
            index += 2
        else:
            index += 1
    if shown_by is None or shown_by[1]:
        return None
    return shown_by[0]


def _not_found_paths(stderr: str) -> Iterator[str]:
    """The paths `stderr` says were not found: Python's repr form, and the ``tool: PATH:
    No such file or directory`` lines of other programs (each possible split)."""
    for line in stderr.splitlines():
        if _NOT_FOUND not in line:
            continue
        found = _PYTHON_NOT_FOUND.search(line)
        if found is not None:
            try:
                value = ast.literal_eval(found.group(1))
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, str):
                yield value
            continue
        head = line[: line.index(_NOT_FOUND)].rstrip()
        if not head.endswith(":"):
            continue
        head = head[:-1]
        starts = [0] + [match.end() for match in re.finditer(": ", head)]
        for start in starts:
            yield head[start:].strip().strip("'\"\u2018\u2019")


def hidden_path_note(stderr: str, prefix: Sequence[str], workdir: Path) -> str | None:
    """One line for a script that failed on a file the sandbox hides, or None.

    `stderr` is the end of the script's standard error, `prefix` the bubblewrap command it
    ran under and `workdir` its working folder (relative paths are taken from there). A
    line is returned only for a path `stderr` reports as not found that exists on the
    host and lies under a folder `prefix` hides; never for a path that does not exist.
    """
    for named in _not_found_paths(stderr):
        if not named or "\x00" in named:
            continue
        path = Path(os.path.normpath(workdir / named))
        try:
            if not path.exists():
                continue
            real = path.resolve()
        except (OSError, RuntimeError, ValueError):
            continue
        folder = hidden_by(prefix, path) or hidden_by(prefix, real)
        if folder is None:
            continue
        shows = (
            "only the system folders, the Python installation, the skill, the workspace "
            "and the DPTTOOLS_SCRIPT_VISIBLE folders, not this one"
            if folder == Path("/")
            else f"{folder} as an empty folder"
        )
        return (
            f"Sandbox: {named} exists on the server, but skill scripts run under bubblewrap, "
            f"which shows them {shows}. To let scripts read the file, put it in the "
            "workspace (set DPTTOOLS_WORKSPACE_DIR; the sandbox shows it), add its folder "
            "to DPTTOOLS_SCRIPT_VISIBLE, or run scripts without the sandbox "
            "(DPTTOOLS_SCRIPT_SANDBOX=none)."
        )
    return None
