"""Fixtures of the skill eval tests: skill folders with eval files, served by std-tools'
real skills server in process (helpers in eval_support.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import eval_support as support
import pytest

pytest.importorskip("doc_processing_std_tools", reason="install packages/std-tools")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def skills_root(tmp_path: Path) -> Path:
    """Three skills: two with eval files, table-profiling without one."""
    root = tmp_path / "skills"
    support.write_skill(root, "invoice-extraction", support.INVOICE_QUERIES)
    support.write_skill(root, "pii-redaction", support.PII_QUERIES)
    support.write_skill(root, "table-profiling", None)
    return root


@pytest.fixture
def std_tools(skills_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    """Builds std-tools' skills server over `skills_root`, in process (``tools=[]``: the
    MCP Skills extension only)."""
    from doc_processing_std_tools.config import reset_settings
    from doc_processing_std_tools.skills.server import new_skills_server

    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(skills_root))
    reset_settings()
    try:
        yield new_skills_server
    finally:
        reset_settings()
