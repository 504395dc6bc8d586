"""Fixtures shared by the std-tools tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import script_user_access

from doc_processing_std_tools.config import reset_settings


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Keep the run in a folder of its own: the persistent skills index of every server
    the tests start goes there, not in the user's cache folder; as root, let the scripts'
    user reach what the tests give it there (`script_user_access`)."""
    script_user_access.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    script_user_access.unconfigure()


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    script_user_access.session_start(session)


@pytest.fixture(autouse=True)
def _script_user_reaches_tmp_path(request: pytest.FixtureRequest) -> None:
    script_user_access.reach_tmp_folders(request)


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
