"""``dpt-skills validate`` warns about what the Agent Skills specification does not allow,
``--strict`` fails on those warnings, and list_skills serves such skills exactly as before.
An indented key is reported as what it is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools.skills.cli import main
from doc_processing_std_tools.skills.core.frontmatter import parse_skill_md
from doc_processing_std_tools.skills.core.lint import lint
from doc_processing_std_tools.skills.server import skills_server

if TYPE_CHECKING:
    from conftest import SkillsFolder

OUTSIDE_THE_SPEC = (
    "name: {name}\n"
    "description: Reviews pull requests.\n"
    "effort: high\n"
    "type: workflow\n"
    "argument-hint: '[pr-number]'\n"
    "disable-model-invocation: true\n"
    "allowed-tools:\n  - Read\n  - Grep\n"
)
NEW_CODES = {"unknown_field", "misspelled_field", "allowed_tools_not_text", "template_body"}


def validate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    status = main(["validate", *args])
    return status, capsys.readouterr().out.splitlines()


def test_keys_outside_the_specification_and_a_list_of_allowed_tools_are_warnings(
    skills: SkillsFolder, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skills.write("review", OUTSIDE_THE_SPEC.format(name="review"))
    status, out = validate(capsys, "--verbose", str(folder))
    assert status == 0
    warned = [line for line in out if "[unknown_field]" in line]
    assert [line.split("'")[1] for line in warned] == [
        "effort",
        "type",
        "argument-hint",
        "disable-model-invocation",
    ]
    assert all(line.startswith(f"{folder}: warning [unknown_field]") for line in warned)
    assert "under 'metadata:'" in warned[0]
    tools = [line for line in out if "[allowed_tools_not_text]" in line]
    assert len(tools) == 1 and "'allowed-tools: Read Grep'" in tools[0]
    assert out[-1] == "Checked 1 skill(s): 0 error(s), 5 warning(s)."


def test_strict_turns_warnings_into_a_failing_exit_status(
    skills: SkillsFolder, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skills.write("review", OUTSIDE_THE_SPEC.format(name="review"))
    clean = skills.write("clean")
    assert validate(capsys, "--strict", str(folder))[0] == 1
    assert validate(capsys, "--strict", str(clean))[0] == 0
    assert validate(capsys, str(folder))[0] == 0


def test_a_misspelled_key_asks_did_you_mean(
    skills: SkillsFolder, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skills.write("typo", "name: typo\ndescripton: Finds typos.\nlicence: MIT\n")
    status, out = validate(capsys, str(folder))
    assert status == 1
    text = "\n".join(out)
    assert "error [missing_description]" in text
    assert "'descripton' is there: did you mean 'description'?" in text
    assert (
        "warning [misspelled_field] 'descripton' is not an Agent Skills field; "
        "did you mean 'description'?" in text
    )
    assert (
        "warning [misspelled_field] 'licence' is not an Agent Skills field; did you mean 'license'?"
        in text
    )


def test_a_key_close_to_a_field_that_is_present_is_unknown_not_misspelled() -> None:
    found = lint({"name": "n", "description": "d", "descriptions": "x"}, "")
    assert [d.code for d in found] == ["unknown_field"]


def test_the_template_body_left_unchanged_is_a_warning_with_its_line(
    skills: SkillsFolder, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "fresh-skill", "--description", "Does fresh things."]) == 0
    capsys.readouterr()
    status, out = validate(capsys, "--strict", str(skills.path / "fresh-skill"))
    assert status == 1
    (line,) = [line for line in out if "[template_body]" in line]
    assert "line 8 reads 'TODO: write the instructions" in line
    text = (skills.path / "fresh-skill" / "SKILL.md").read_text(encoding="utf-8")
    assert text.splitlines()[7].startswith("TODO: write the instructions")
    body = text.split("---\n", 2)[2]
    finished = text.replace(body, "\n# Fresh skill\n\nRead the input, then write the output.\n")
    (skills.path / "fresh-skill" / "SKILL.md").write_text(finished, encoding="utf-8")
    assert validate(capsys, "--strict", str(skills.path / "fresh-skill"))[0] == 0


@pytest.mark.anyio
async def test_list_skills_serves_such_skills_exactly_as_before(
    skills: SkillsFolder, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skills.write("review", OUTSIDE_THE_SPEC.format(name="review"))
    skills.write(
        "draft",
        "name: draft\ndescription: A draft.\nauthr: me\n",
        body="TODO: the tasks and inputs this skill is meant for.\n",
    )
    async with Client(skills_server) as client:
        result = await client.call_tool("list_skills", {})
    block = result.content[0]
    assert isinstance(block, TextContent) and not result.is_error
    assert json.loads(block.text) == {
        "skills": [
            {
                "name": "draft",
                "description": "A draft.",
                "path": str(skills.path / "draft" / "SKILL.md"),
                "directory": str(skills.path / "draft"),
            },
            {
                "name": "review",
                "description": "Reviews pull requests.",
                "path": str(folder / "SKILL.md"),
                "directory": str(folder),
            },
        ],
        "skills_dir": str(skills.path),
        "count": 2,
    }
    # `dpt-skills list` shows the server's view: none of the specification warnings.
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert not any(code in listed for code in NEW_CODES)
    status, out = validate(capsys, str(skills.path))
    assert status == 0 and {"unknown_field", "template_body"} <= {
        line.split("[")[1].split("]")[0] for line in out if "[" in line
    }


def test_an_indented_key_is_named_with_its_line_not_as_an_unquoted_colon(
    skills: SkillsFolder, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skills.write("indented", "name: indented\n  description: Does things.\n")
    status, out = validate(capsys, str(folder))
    assert status == 1
    assert out[0].startswith(f"{folder}: error [indented_key] Line 3 of SKILL.md is indented")
    assert "top-level keys start at column 0" in out[0]
    assert "unquoted_colon" not in "\n".join(out)


@pytest.mark.parametrize(
    "frontmatter",
    [
        # A mapping under metadata, a block scalar, a continuation line with a colon that
        # is not a field name, and a nested mapping under a key of its own.
        "name: s\ndescription: d\nmetadata:\n  name: inner\n  license: x\n",
        "name: s\ndescription: |\n  Steps:\n  license: see the file\n",
        "name: s\ndescription: Use it\n  Example: a case\n",
        "name: s\ndescription: d\nhooks:\n  name: pre\n",
    ],
)
def test_indented_lines_that_belong_where_they_are_are_not_flagged(frontmatter: str) -> None:
    parsed = parse_skill_md(f"---\n{frontmatter}---\nbody\n")
    assert "indented_key" not in [d.code for d in parsed.diagnostics]
    assert parsed.fields is not None


def test_an_indented_key_under_a_value_later_in_the_file_is_found() -> None:
    parsed = parse_skill_md(
        "\n---\nname: s\ndescription: d\nlicense: MIT\n  compatibility: x\n---\n"
    )
    assert parsed.fields is None
    (problem,) = parsed.diagnostics
    assert problem.code == "indented_key"
    assert (
        "Line 6 of SKILL.md" in problem.message and "'license' value on line 5" in problem.message
    )


def test_validate_searches_as_deep_as_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skill = tmp_path / "plugins" / "p" / "skills" / "deep-skill"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: deep-skill\ndescription: d\n---\nx\n", encoding="utf-8"
    )
    status, out = validate(capsys, str(tmp_path))
    assert status == 1 and "plugins/p/skills/deep-skill" in out[0] and "--skills-depth 4" in out[0]
    status, out = validate(capsys, "--skills-depth", "4", str(tmp_path))
    assert status == 0 and out[-1] == "Checked 1 skill(s): 0 error(s), 0 warning(s)."
