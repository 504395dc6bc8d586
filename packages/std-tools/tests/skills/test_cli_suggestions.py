"""What ``dpt-skills`` suggests running next works as written (issue 20, item 8): after
``dpt-skills new ... --skills-dir X`` the suggested ``dpt-skills list`` carries the same
``--skills-dir X`` and lists the new skill. Real processes, real folders."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path


def _dpt_skills(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "doc_processing_std_tools.skills.cli", *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=True,
    )


def test_new_suggests_a_list_command_that_finds_the_new_skill(tmp_path: Path) -> None:
    folder = tmp_path / "team skills"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    created = _dpt_skills(
        "new", "invoice-check", "--description", "Checks invoices.", "--skills-dir",
        str(folder), cwd=elsewhere,
    )  # fmt: skip
    suggested = re.search(r"`(dpt-skills list[^`]*)`", created.stdout)
    assert suggested is not None, created.stdout
    words = shlex.split(suggested.group(1))
    assert words[:2] == ["dpt-skills", "list"]
    assert "--skills-dir" in words
    # Run exactly what was suggested, from a folder without skills.
    listing = _dpt_skills(*words[1:], cwd=elsewhere)
    assert "invoice-check" in listing.stdout


def test_without_skills_dir_the_suggestion_is_unchanged(tmp_path: Path) -> None:
    created = _dpt_skills("new", "plain-skill", "--description", "Plain.", cwd=tmp_path)
    assert "`dpt-skills list` shows it now" in created.stdout
