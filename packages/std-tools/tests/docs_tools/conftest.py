"""Fixtures of the document tool tests: one folder of real sample documents per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from doc_processing_std_tools.config import get_settings, load_settings, reset_settings
from doc_processing_std_tools.filesystem.operations import Workspace

from .samples import write_samples


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding every sample document and every bad input, written once."""
    folder = tmp_path_factory.mktemp("library")
    write_samples(folder, tmp_path_factory.mktemp("scratch"))
    return folder.resolve()


@pytest.fixture
def ws(library: Path) -> Iterator[Workspace]:
    """The sample folder as the workspace, with a 1 MiB file limit."""
    reset_settings(
        load_settings(
            {
                "DPTTOOLS_WORKSPACE_DIR": str(library),
                "DPTTOOLS_MAX_FILE_SIZE_MB": "1",
                "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT": "4000",
            }
        )
    )
    yield Workspace.from_settings(get_settings())
    reset_settings()


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """An empty workspace folder of its own, with a 1 MiB file limit and 4000 characters of
    output, for tests that write documents of their own."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    reset_settings(
        load_settings(
            {
                "DPTTOOLS_WORKSPACE_DIR": str(folder),
                "DPTTOOLS_MAX_FILE_SIZE_MB": "1",
                "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT": "4000",
            }
        )
    )
    yield folder.resolve()
    reset_settings()
