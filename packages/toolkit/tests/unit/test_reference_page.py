"""The API reference page documents every public name of the package (issue 28): a name
added to ``__all__`` without its entry on docs/reference/toolkit.md fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

import doc_processing_toolkit

PAGE = Path(__file__).resolve().parents[4] / "docs" / "reference" / "toolkit.md"


def test_every_public_name_has_its_entry() -> None:
    if not PAGE.is_file():
        pytest.skip("the documentation is not next to these tests")
    text = PAGE.read_text(encoding="utf-8")
    missing = [
        name
        for name in doc_processing_toolkit.__all__
        if name != "__version__" and f"::: doc_processing_toolkit.{name}\n" not in text
    ]
    assert missing == []
