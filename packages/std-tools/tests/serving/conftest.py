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
    skills = tmp_path / "skills"
    (skills / "invoice-check" / "scripts").mkdir(parents=True)
    (skills / "invoice-check" / "SKILL.md").write_text(
        "---\nname: invoice-check\ndescription: Checks invoice totals.\n---\n\n# Steps\n",
        encoding="utf-8",
    )
    (skills / "invoice-check" / "scripts" / "hello.py").write_text(
        "print('hello from the script')\n", encoding="utf-8"
    )
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("first line\n", encoding="utf-8")
    return Folders(skills.resolve(), workspace.resolve())
