"""Let the user skill scripts run as reach what the tests give them, when the tests run
as root.

A server running as root runs skill scripts as DPTTOOLS_SCRIPT_USER (``nobody`` by
default), which must be able to pass every folder on the way to the interpreter, the
skills and the workspace. pytest makes its temporary folders private (mode 0700), and an
interpreter may be installed under a private home (``/root``). `open_paths` adds search
permission for others (``o+x``, not listing) to the folders on the way to the given
paths that lack it, and returns what it changed so that `restore` can put it back.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

SCRIPT_USER = "nobody"


def runs_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def interpreter_paths() -> list[Path]:
    """The interpreter, its installation and the supervisor's package."""
    import doc_processing_std_tools

    return [
        Path(os.path.realpath(sys.executable)),
        Path(sys.prefix),
        Path(sys.base_prefix).resolve(),
        Path(doc_processing_std_tools.__file__).resolve().parent,
    ]


def open_paths(paths: Iterable[Path]) -> dict[Path, int]:
    """Give others search permission on each folder on the way to `paths` (and on the
    paths that are folders); return the modes changed, folder -> old mode."""
    changed: dict[Path, int] = {}
    for path in paths:
        real = Path(os.path.realpath(path))
        chain = [*reversed(real.parents), *([real] if real.is_dir() else [])]
        for folder in chain:
            mode = stat.S_IMODE(folder.stat().st_mode)
            if not mode & stat.S_IXOTH and folder not in changed:
                folder.chmod(mode | stat.S_IXOTH)
                changed[folder] = mode
    return changed


def restore(changed: dict[Path, int]) -> None:
    for folder, mode in changed.items():
        with contextlib.suppress(OSError):
            folder.chmod(mode)


def give_to_script_user(path: Path) -> Path:
    """As root, hand `path` and everything in it to the scripts' user, as an operator
    makes a workspace writable for it; elsewhere leave it alone. Returns `path`."""
    if not runs_as_root():
        return path
    import pwd

    entry = pwd.getpwnam(SCRIPT_USER)
    for folder, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.chown(Path(folder, name), entry.pw_uid, entry.pw_gid, follow_symlinks=False)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    return path
