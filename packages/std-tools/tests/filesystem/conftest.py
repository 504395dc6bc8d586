"""Fixtures of the file system tool tests: a workspace folder and the settings that point to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from doc_processing_std_tools.config import get_settings, load_settings, reset_settings
from doc_processing_std_tools.filesystem.operations import Workspace


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """A workspace folder that the process-wide settings point to during the test."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    reset_settings(
        load_settings(
            {
                "DPTTOOLS_WORKSPACE_DIR": str(folder),
                "DPTTOOLS_SKILLS_DIR": str(tmp_path / "skills"),
                "DPTTOOLS_MAX_FILE_SIZE_MB": "1",
                "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT": "2000",
            }
        )
    )
    yield folder.resolve()
    reset_settings()


@pytest.fixture
def ws(root: Path) -> Workspace:
    """The workspace of `root`, with a 1 MiB file limit and 2000 characters of output."""
    return Workspace.from_settings(get_settings())


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file next to the workspace, which no tool may reach."""
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n", encoding="utf-8")
    return secret
