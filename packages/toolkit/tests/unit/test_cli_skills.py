"""dpt-agent and the skills it shows: the ``skills:`` progress line stays short, ``--dry-run
PROMPT`` shows the block a run of PROMPT gets, and ``--skills-include`` /
``--skills-exclude`` scope a run (``main`` in process, the stand-in skills server over
stdio)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from doc_processing_toolkit.cli import main

STANDIN = Path(__file__).parents[1] / "servers" / "skills_standin.py"
TOPICS = ["budget", "payroll", "contract", "recipe", "timesheet", "itinerary", "survey"]


def many_skills_config(tmp_path: Path, count: int = 300) -> Path:
    skills = [
        {
            "name": f"{TOPICS[n % len(TOPICS)]}-helper-{n:03d}",
            "description": f"Reviews {TOPICS[n % len(TOPICS)]} documents of kind {n} and "
            "writes a short summary with the totals, the dates and the people named.",
        }
        for n in range(count)
    ]
    skills.insert(
        count // 2,
        {
            "name": "changelog-generator",
            "description": "Writes a changelog for a release from the commit history.",
        },
    )
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"skills": skills, "count": len(skills)}), encoding="utf-8")
    config = tmp_path / "agent.yaml"
    config.write_text(
        "model: test\ntools:\n"
        f"  - type: mcp_script\n    script: {STANDIN}\n    name: kit\n"
        f"    env:\n      STANDIN_CATALOG: {catalog}\n",
        encoding="utf-8",
    )
    return config


def block_names(prompt: str) -> list[str]:
    return [line.split('"', 2)[1] for line in prompt.splitlines() if line.startswith("  <skill ")]


def test_the_progress_line_stays_under_300_characters_with_hundreds_of_skills(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = many_skills_config(tmp_path)
    assert main(["run", "-c", str(config), "write the changelog"]) == 0
    line = capsys.readouterr().err.splitlines()[0]
    assert line.startswith("skills: ")
    assert len(line) < 300
    assert line.endswith("more")
    assert "changelog-generator" in line  # the best match is named first


def test_a_dry_run_shows_the_block_a_run_of_its_prompt_gets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = many_skills_config(tmp_path)
    prompt = "write the changelog for this release from the commit history"
    assert main(["run", "--dry-run", "--json", "-c", str(config), prompt]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert main(["run", "--json", "-c", str(config), prompt]) == 0
    ran = json.loads(capsys.readouterr().out)
    assert block_names(dry["system_prompt"])[0] == "changelog-generator"
    assert dry["system_prompt"] == ran["system_prompt"]


def test_the_scope_flags_scope_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = many_skills_config(tmp_path, count=6)
    arguments = ["run", "--dry-run", "--json", "-c", str(config)]
    scoped = [*arguments, "--skills-include", "*-helper-*", "--skills-exclude", "budget-*"]
    assert main(scoped) == 0
    plan = json.loads(capsys.readouterr().out)
    names = block_names(plan["system_prompt"])
    assert names == [f"{topic}-helper-{n:03d}" for n, topic in enumerate(TOPICS[:6]) if n]
    assert plan["skills"]["scope"] == {"include": ["*-helper-*"], "exclude": ["budget-*"]}
    assert sorted(plan["skills"]["out_of_scope"]) == ["budget-helper-000", "changelog-generator"]
