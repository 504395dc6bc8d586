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
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import pytest

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


_OPENED: dict[Path, int] = {}
_OWN_TEMP: list[Path] = []


def configure(config: pytest.Config) -> None:
    """For a conftest's ``pytest_configure`` (trylast): as root, let the scripts' user
    reach the interpreter (the folders changed are put back when the run ends, by the
    process that started it), and keep this run's temporary folders in a folder of its
    own, which other pytest runs on the machine do not make private again as they start."""
    if not runs_as_root():
        return
    opened = open_paths(interpreter_paths())
    if hasattr(config, "workerinput"):
        return  # an xdist worker: its folders come from the controller
    _OPENED.update(opened)
    factory = getattr(config, "_tmp_path_factory", None)
    if config.option.basetemp is None and factory is not None and not _OWN_TEMP:
        own = Path(tempfile.mkdtemp(prefix="dpttools-pytest-"))
        own.chmod(0o711)
        _OWN_TEMP.append(own)
        factory._given_basetemp = own / "basetemp"


def unconfigure() -> None:
    """For ``pytest_unconfigure``: put back what `configure` changed."""
    restore(_OPENED)
    _OPENED.clear()
    for folder in _OWN_TEMP:
        shutil.rmtree(folder, ignore_errors=True)
    _OWN_TEMP.clear()


def session_start(session: pytest.Session) -> None:
    """For ``pytest_sessionstart`` (trylast): pytest makes its folder of temporary
    folders private the first time each process asks for it, so every process (each
    xdist worker too) asks now, before any test runs, and opens it after."""
    if runs_as_root():
        factory = session.config._tmp_path_factory  # type: ignore[attr-defined]
        open_paths([factory.getbasetemp()])


def reach_tmp_folders(request: pytest.FixtureRequest) -> None:
    """For an autouse fixture: as root, let the scripts' user pass the test's private
    temporary folders (those of shared fixtures made with tmp_path_factory too), and
    write in the test's own folder, where tests put skills and workspaces."""
    if not runs_as_root():
        return
    factory: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
    base = factory.getbasetemp()
    open_paths([base, *(child for child in base.iterdir() if child.is_dir())])
    if "tmp_path" in request.fixturenames:
        tmp_path: Path = request.getfixturevalue("tmp_path")
        open_paths([tmp_path])
        tmp_path.chmod(0o777)
