"""Fixtures of the HTTP tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import Folders


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def folders(tmp_path: Path) -> Folders:
    return Folders.make(tmp_path)
