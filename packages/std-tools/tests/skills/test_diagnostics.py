"""The table of diagnostic codes: one source for levels, and the documentation agrees."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from doc_processing_std_tools.skills.core.diagnostics import CODES, diagnostic

DOCS = Path(__file__).resolve().parents[4] / "docs" / "std-tools" / "skills-server.md"


def documented_codes() -> dict[str, str]:
    """Code -> level, from the table under "Frontmatter rules and diagnostic codes"."""
    if not DOCS.is_file():
        pytest.skip(f"the documentation is not next to the package ({DOCS} is missing)")
    section = DOCS.read_text(encoding="utf-8").split("## Frontmatter rules and diagnostic codes")[1]
    found: dict[str, str] = {}
    for line in section.split("\n## ")[0].splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 2 or cells[1] not in ("error", "warning"):
            continue
        for code in re.findall(r"`([a-z0-9_]+)`", cells[0]):
            found[code] = cells[1]
    return found


def test_every_code_is_documented_with_its_level_and_nothing_else_is() -> None:
    assert documented_codes() == {code: info.level for code, info in CODES.items()}


def test_a_diagnostic_takes_its_level_from_the_table() -> None:
    assert diagnostic("missing_name", "m").level == "warning"
    assert diagnostic("yaml_recursive_alias", "m").level == "error"
    with pytest.raises(KeyError):
        diagnostic("no_such_code", "m")
