"""Keep a test run inside folders of its own, and, when the tests run as root, let the
user skill scripts run as reach what the tests give them there.

Every run (the controller; xdist workers share it) makes one temporary folder of its own:
the persistent skills index of every server the tests start goes in it (never in the
user's cache folder), and, as root, pytest's temporary folders too. A server running as
root runs skill scripts as DPTTOOLS_SCRIPT_USER (``nobody`` by default), which must be
able to pass the folders on the way to the skills and the workspace; pytest makes its
temporary folders private (mode 0700), so `open_paths` adds search permission for others
(``o+x``, not listing) to those folders, and only to folders inside the run's own folder:
the tests never change a mode anywhere else (the interpreter's folders included: reaching
the interpreter under a private home is the server's business).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

import pytest

SCRIPT_USER = "nobody"


def runs_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


_RUN_FOLDER = "DPTTOOLS_TESTS_RUN_FOLDER"
"""The environment variable naming the run's own folder (xdist workers inherit it)."""


def run_folder() -> Path | None:
    """The run's own temporary folder, once `configure` made it."""
    value = os.environ.get(_RUN_FOLDER)
    return Path(value) if value else None


def open_paths(paths: Iterable[Path]) -> None:
    """Give others search permission on each folder inside the run's own folder on the way
    to `paths` (and on the paths that are folders); folders elsewhere are left alone."""
    own = run_folder()
    if own is None:
        return
    own = Path(os.path.realpath(own))
    for path in paths:
        real = Path(os.path.realpath(path))
        if real != own and own not in real.parents:
            continue
        chain = [*reversed(real.parents), *([real] if real.is_dir() else [])]
        for folder in chain:
            if folder != own and own not in folder.parents:
                continue
            mode = stat.S_IMODE(folder.stat().st_mode)
            if not mode & stat.S_IXOTH:
                folder.chmod(mode | stat.S_IXOTH)


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


_OWN_TEMP: list[Path] = []


def _stdio_servers_keep_the_cache_folder() -> None:
    """A server the tests start over stdio gets only the MCP SDK's short list of inherited
    variables, so without this it would keep its skills index in the user's cache folder.
    Add the run's cache variables to that list for this process (every xdist worker calls
    this)."""
    from mcp.client import stdio

    for name in ("DPTTOOLS_CACHE_DIR", "XDG_CACHE_HOME"):
        if name not in stdio.DEFAULT_INHERITED_ENV_VARS:
            stdio.DEFAULT_INHERITED_ENV_VARS.append(name)


def configure(config: pytest.Config) -> None:
    """For a conftest's ``pytest_configure`` (trylast): make the run's own folder, keep the
    skills index of every server the tests start (in this process and in children) in it,
    and, as root, keep pytest's temporary folders in it too, where other pytest runs on
    the machine do not make them private again as they start."""
    _stdio_servers_keep_the_cache_folder()
    if hasattr(config, "workerinput") or run_folder() is not None:
        return  # an xdist worker, or a second conftest: the folder is made already
    own = Path(tempfile.mkdtemp(prefix="dpttools-pytest-"))
    _OWN_TEMP.append(own)
    os.environ[_RUN_FOLDER] = str(own)
    if "DPTTOOLS_CACHE_DIR" not in os.environ:
        os.environ["DPTTOOLS_CACHE_DIR"] = str(own / "cache")
    # Settings built from a test's own variables, and servers started with them, take the
    # default cache folder, which follows XDG_CACHE_HOME: keep that in the run's folder too.
    os.environ["XDG_CACHE_HOME"] = str(own / "xdg-cache")
    if not runs_as_root():
        return
    own.chmod(0o711)
    factory = getattr(config, "_tmp_path_factory", None)
    if config.option.basetemp is None and factory is not None:
        factory._given_basetemp = own / "basetemp"


def unconfigure() -> None:
    """For ``pytest_unconfigure``: remove the run's own folder (in the process that made
    it)."""
    for folder in _OWN_TEMP:
        shutil.rmtree(folder, ignore_errors=True)
        if os.environ.get(_RUN_FOLDER) == str(folder):
            del os.environ[_RUN_FOLDER]
    _OWN_TEMP.clear()


def session_start(session: pytest.Session) -> None:
    """For ``pytest_sessionstart`` (trylast): pytest makes its folder of temporary
    folders private the first time each process asks for it, so every process (each
    xdist worker too) asks now, before any test runs, and opens it after."""
    if runs_as_root():
        factory = session.config._tmp_path_factory  # type: ignore[attr-defined]
        open_paths([factory.getbasetemp()])


def _closed_children(base: Path) -> list[Path]:
    """The folders directly in `base` that others cannot pass yet. Every test's folder
    stays in `base` until the run ends, so opening all of them again before every test
    cost a run minutes (thousands of folders, each resolved and its chain checked);
    a folder that is open already is left alone, as `open_paths` would leave it."""
    closed: list[Path] = []
    with os.scandir(base) as entries:
        for entry in entries:
            # The `...current` links pytest keeps point at folders in `base` themselves.
            if entry.is_dir(follow_symlinks=False) and not (
                stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode) & stat.S_IXOTH
            ):
                closed.append(Path(entry.path))
    return closed


def reach_tmp_folders(request: pytest.FixtureRequest) -> None:
    """For an autouse fixture: as root, let the scripts' user pass the test's private
    temporary folders (those of shared fixtures made with tmp_path_factory too), and
    write in the test's own folder, where tests put skills and workspaces."""
    if not runs_as_root():
        return
    factory: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
    base = factory.getbasetemp()
    open_paths([base, *_closed_children(base)])
    if "tmp_path" in request.fixturenames:
        tmp_path: Path = request.getfixturevalue("tmp_path")
        open_paths([tmp_path])
        tmp_path.chmod(0o777)


def interpreter_out_of_reach() -> str | None:
    """As root: why the scripts' user cannot start the interpreter without bubblewrap
    (it lies under a private folder, such as a pyenv in root's home), or None. Under
    bubblewrap the server opens every path itself, so this never matters there."""
    if not runs_as_root():
        return None
    from doc_processing_std_tools.skills.scripts._containment import (
        interpreter_paths,
        reach_problem,
        script_user,
    )

    user = script_user(SCRIPT_USER)
    return None if user is None else reach_problem(user, interpreter_paths())


without_bwrap_as_root = pytest.mark.skipif(
    # A string: pytest evaluates it as each test starts, not once at import.
    "__import__('script_user_access').interpreter_out_of_reach() is not None",
    reason=(
        "without bubblewrap a root server's scripts run as the script user, which must "
        "reach the interpreter itself, and cannot here (a Python under a private home)"
    ),
)
"""For a test (or a parameter) that runs scripts without bubblewrap: skipped as root when
the scripts' user cannot reach this interpreter (checked as the test starts; the tests
never open folders outside their own)."""
