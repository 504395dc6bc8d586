"""``dpt-skills validate`` on a large collection (issue 20, item 6): a few lines per
diagnostic code and a summary by code, every line with --verbose; a name that breaks the
rule is one warning, not also a mismatch; a lowercase skill.md is named as such. Run as
the real command, on files written here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SKILLS_WITH_AN_UNKNOWN_FIELD = 40


def _write(folder: Path, text: str, file_name: str = "SKILL.md") -> None:
    folder.mkdir(parents=True)
    (folder / file_name).write_text(text, encoding="utf-8")


@pytest.fixture
def collection(tmp_path: Path) -> Path:
    root = tmp_path / "collection"
    for index in range(SKILLS_WITH_AN_UNKNOWN_FIELD):
        name = f"skill-{index:02d}"
        _write(root / name, f"---\nname: {name}\ndescription: Does {index}.\neffort: high\n---\n")
    _write(root / "bad-name", "---\nname: Bad Name\ndescription: Badly named.\n---\n")
    _write(root / "lower", "---\nname: lower\ndescription: Lower case.\n---\n", "skill.md")
    return root


def _dpt_skills(*arguments: str) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, "-m", "doc_processing_std_tools.skills.cli", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout.splitlines()


def test_a_large_collection_gets_a_few_lines_per_code_and_a_summary(collection: Path) -> None:
    status, lines = _dpt_skills("validate", str(collection))
    assert status == 1  # the lowercase skill.md is an error
    assert len(lines) < 15, "\n".join(lines)
    assert sum("[unknown_field]" in line for line in lines) == 3
    (summary,) = [line for line in lines if line.strip().startswith("40  unknown_field")]
    assert "37 not shown" in summary and "--verbose" in summary
    assert lines[-1] == "Checked 42 skill(s): 1 error(s), 41 warning(s)."


def test_verbose_prints_every_line(collection: Path) -> None:
    _, lines = _dpt_skills("validate", "--verbose", str(collection))
    assert sum("[unknown_field]" in line for line in lines) == SKILLS_WITH_AN_UNKNOWN_FIELD


def test_a_name_that_breaks_the_rule_is_not_also_a_mismatch(collection: Path) -> None:
    _, lines = _dpt_skills("validate", str(collection / "bad-name"))
    assert [line for line in lines if "[invalid_name]" in line]
    assert not [line for line in lines if "name_mismatch" in line]
    assert "listed as 'bad-name'" in "\n".join(lines)


@pytest.mark.parametrize("target", ["collection", "folder", "file"])
def test_a_lowercase_skill_md_is_named_as_such(collection: Path, target: str) -> None:
    path = {
        "collection": collection,
        "folder": collection / "lower",
        "file": collection / "lower" / "skill.md",
    }[target]
    status, lines = _dpt_skills("validate", str(path))
    assert status == 1
    (line,) = [line for line in lines if "[skill_md_case]" in line]
    assert "'skill.md'" in line and "Rename 'skill.md' to 'SKILL.md'" in line


def test_list_skills_names_a_lowercase_skill_md_too(collection: Path) -> None:
    _, lines = _dpt_skills("list", "--skills-dir", str(collection), "--json")
    payload = json.loads("\n".join(lines))
    codes = {(d["skill"], d["code"]) for d in payload["diagnostics"]}
    assert ("lower", "skill_md_case") in codes
