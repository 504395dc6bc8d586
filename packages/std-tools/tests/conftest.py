"""Fixtures shared by the std-tools tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from script_user_access import interpreter_paths, open_paths, restore, runs_as_root

from doc_processing_std_tools.config import reset_settings

_OPENED: dict[Path, int] = {}
_OWN_TEMP: list[Path] = []


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Keep the persistent skills index of every server the tests start (in process and
    in child processes) in a folder of this run, not in the user's cache folder.

    As root, scripts run as an unprivileged user: let it reach the interpreter (the
    folders changed are put back when the run ends, by the process that started it),
    and keep this run's temporary folders in a folder of its own, which other pytest
    runs on the machine do not make private again as they start."""
    if "DPTTOOLS_CACHE_DIR" not in os.environ:
        os.environ["DPTTOOLS_CACHE_DIR"] = tempfile.mkdtemp(prefix="dpttools-cache-")
    if not runs_as_root():
        return
    opened = open_paths(interpreter_paths())
    if hasattr(config, "workerinput"):
        return  # an xdist worker: its folders come from the controller
    _OPENED.update(opened)
    factory = getattr(config, "_tmp_path_factory", None)
    if config.option.basetemp is None and factory is not None:
        own = Path(tempfile.mkdtemp(prefix="dpttools-pytest-"))
        own.chmod(0o711)
        _OWN_TEMP.append(own)
        factory._given_basetemp = own / "basetemp"


def pytest_unconfigure(config: pytest.Config) -> None:
    restore(_OPENED)
    _OPENED.clear()
    for folder in _OWN_TEMP:
        shutil.rmtree(folder, ignore_errors=True)
    _OWN_TEMP.clear()


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """As root, let the scripts' user pass pytest's folder of temporary folders. pytest
    makes it private again the first time each process asks for it, so every process
    (each xdist worker too) asks now, before any test runs, and opens it after."""
    if runs_as_root():
        factory = session.config._tmp_path_factory  # type: ignore[attr-defined]
        open_paths([factory.getbasetemp()])


@pytest.fixture(autouse=True)
def _script_user_reaches_tmp_path(request: pytest.FixtureRequest) -> None:
    """As root, let the scripts' user pass the test's private temporary folders (those of
    shared fixtures made with tmp_path_factory too), and write in the test's own folder,
    where tests put skills and workspaces."""
    if not runs_as_root():
        return
    factory: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
    base = factory.getbasetemp()
    open_paths([base, *(child for child in base.iterdir() if child.is_dir())])
    if "tmp_path" in request.fixturenames:
        tmp_path: Path = request.getfixturevalue("tmp_path")
        open_paths([tmp_path])
        tmp_path.chmod(0o777)


@pytest.fixture
def anyio_backend() -> str:
    """Run the anyio tests on asyncio only."""
    return "asyncio"


class SkillsFolder:
    """A skills folder under the test's tmp_path, pointed to by DPTTOOLS_SKILLS_DIR."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(
        self,
        name: str,
        frontmatter: str | None = None,
        body: str = "# Instructions\n\nDo the thing.\n",
        *,
        description: str | None = None,
    ) -> Path:
        """Write `<name>/SKILL.md`; by default with a valid name and description."""
        folder = self.path / name
        folder.mkdir(parents=True, exist_ok=True)
        if frontmatter is None:
            text = description if description is not None else f"Does {name} things."
            frontmatter = f"name: {name}\ndescription: {text}\n"
        (folder / "SKILL.md").write_text(f"---\n{frontmatter}---\n\n{body}", encoding="utf-8")
        return folder

    def write_bytes(self, name: str, data: bytes) -> Path:
        """Write raw bytes as `<name>/SKILL.md`."""
        folder = self.path / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_bytes(data)
        return folder


@pytest.fixture
def skills(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SkillsFolder]:
    """An existing, empty skills folder; small limits so the limit tests stay fast."""
    folder = (tmp_path / "skills").resolve()
    folder.mkdir()
    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(folder))
    monkeypatch.setenv("DPTTOOLS_MAX_FILE_SIZE_MB", "1")
    monkeypatch.setenv("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", "4000")
    monkeypatch.setenv("DPTTOOLS_SANDBOX_TIMEOUT", "20")
    reset_settings()
    yield SkillsFolder(folder)
    reset_settings()
