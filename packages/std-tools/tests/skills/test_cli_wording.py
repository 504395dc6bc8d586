"""``dpt-skills`` speaks to a person, the tools keep speaking to a model.

The same logic words its next step by audience: the command line names commands to run,
the tools name tools to call (their wording is part of the tools' contract).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools.skills.cli import main
from doc_processing_std_tools.skills.server import skills_server

if TYPE_CHECKING:
    from conftest import SkillsFolder

MODEL_WORDS = ("list_skills", "create_skill", "Call ", "call ", "file tool")


def assert_for_a_person(text: str) -> None:
    for words in MODEL_WORDS:
        assert words not in text, (words, text)


def test_a_bad_name_tells_a_person_what_to_run(
    skills: SkillsFolder, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "Bad_Name", "--description", "x"]) == 1
    err = capsys.readouterr().err
    assert "Run `dpt-skills list` to see the available names." in err
    assert_for_a_person(err)


def test_a_new_skill_tells_a_person_how_to_finish_it(
    skills: SkillsFolder, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "fresh-skill", "--description", "Does fresh things."]) == 0
    out = capsys.readouterr().out
    assert "Open it in an editor and replace the TODO sections" in out
    assert "`dpt-skills list` shows it now" in out
    assert_for_a_person(out.replace("list_skills from its next call", ""))


def test_a_missing_skills_folder_tells_a_person_what_to_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none"
    assert main(["list", "--skills-dir", str(missing)]) == 0
    out = capsys.readouterr().out
    assert f"The skills folder {missing} does not exist" in out
    # The command it suggests looks in the same folder.
    assert f"run `dpt-skills new NAME --description TEXT --skills-dir {missing}`" in out
    assert_for_a_person(out)


def test_a_missing_root_among_several_is_named_after_the_listing(
    skills: SkillsFolder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skills.write("alpha")
    missing = tmp_path / "gone"
    assert main(["list", "--skills-dir", f"{skills.path}{os.pathsep}{missing}"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[0] == "alpha"
    assert out[2] == f"1 skill(s) in {skills.path}, {missing}"
    assert out[3].startswith(f"The skills folder {missing} does not exist")


@pytest.mark.anyio
async def test_the_tools_keep_their_words_for_the_model(
    skills: SkillsFolder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from doc_processing_std_tools.config import reset_settings

    monkeypatch.setenv("DPTTOOLS_WORKSPACE_DIR", str(tmp_path))
    reset_settings()
    async with Client(skills_server) as client:
        bad = await client.call_tool("load_skill", {"skill_name": "Bad_Name"})
        created = await client.call_tool(
            "create_skill", {"skill_name": "fresh-skill", "description": "Does fresh things."}
        )
    texts = []
    for result in (bad, created):
        block = result.content[0]
        assert isinstance(block, TextContent)
        texts.append(block.text)
    assert "Call list_skills to see the available names." in texts[0]
    assert texts[1].endswith(
        "Replace the TODO sections with the real instructions using a file tool (its path "
        "in the workspace is skills/fresh-skill/SKILL.md); "
        "list_skills shows the skill from its next call."
    )

    monkeypatch.setenv("DPTTOOLS_SKILLS_DIR", str(tmp_path / "none"))
    reset_settings()
    async with Client(skills_server) as client:
        listing = await client.call_tool("list_skills", {})
    block = listing.content[0]
    assert isinstance(block, TextContent)
    assert (
        "create it (or call create_skill) to add skills, or point DPTTOOLS_SKILLS_DIR" in block.text
    )


@pytest.mark.anyio
async def test_a_skill_outside_the_workspace_is_not_left_to_the_file_tools(
    skills: SkillsFolder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file tools of this server cannot reach a skills folder outside the workspace,
    so create_skill does not send the model to them."""
    from doc_processing_std_tools.config import reset_settings

    workspace = tmp_path / "project"
    workspace.mkdir()
    monkeypatch.setenv("DPTTOOLS_WORKSPACE_DIR", str(workspace))
    reset_settings()
    async with Client(skills_server) as client:
        created = await client.call_tool(
            "create_skill", {"skill_name": "far-skill", "description": "Does far things."}
        )
    block = created.content[0]
    assert isinstance(block, TextContent)
    assert not created.is_error
    assert "using a file tool" not in block.text
    assert "ask the user" in block.text
    assert (skills.path / "far-skill" / "SKILL.md").is_file()
