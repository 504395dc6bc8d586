"""A skill's evals/ folder (the labelled queries of skill trigger evals) is an ordinary
part of the skill: no diagnostic from the listing, validate or audit, and readable with
load_skill_resource like any other file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from doc_processing_std_tools.skills.catalog.scan import scan_once
from doc_processing_std_tools.skills.cli import main

REPO = Path(__file__).resolve().parents[4]
EXAMPLES = REPO / "examples" / "skills"


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    shutil.copytree(EXAMPLES, root)
    return root


def test_every_example_skill_carries_about_twenty_labelled_queries() -> None:
    for skill in sorted(EXAMPLES.iterdir()):
        data = json.loads((skill / "evals" / "eval_queries.json").read_text(encoding="utf-8"))
        labels = [entry["should_trigger"] for entry in data]
        assert 18 <= len(data) <= 24, skill.name
        assert labels.count(True) >= 8 and labels.count(False) >= 8, skill.name
        assert all(set(entry) == {"query", "should_trigger"} for entry in data)


def test_an_evals_folder_gives_no_diagnostic_when_listed_validated_or_audited(
    skills: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = scan_once(skills, max_bytes=50 * 1024 * 1024)
    assert catalog.diagnostics == ()
    assert main(["validate", str(skills)]) == 0
    assert "0 error(s), 0 warning(s)" in capsys.readouterr().out
    assert main(["audit", str(skills)]) == 0
    assert "0 error(s), 0 warning(s)" in capsys.readouterr().out
