"""The dpt-skills command line, run in process and as an installed command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from doc_processing_std_tools.skills.cli import main

if TYPE_CHECKING:
    from conftest import SkillsFolder


def test_list_prints_a_table_and_the_diagnostics(
    skills: SkillsFolder, capsys: pytest.CaptureFixture[str]
) -> None:
    skills.write("alpha", description="First skill.")
    skills.write("broken", "name: broken\n")
    assert main(["list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["NAME", "DESCRIPTION"]
    assert out[1].split() == ["alpha", "First", "skill."]
    assert out[2] == f"1 skill(s) in {skills.path}"
    assert out[3].startswith("broken: error [missing_description]")


def test_list_json_prints_the_list_skills_payload(
    skills: SkillsFolder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    (other / "x-one").mkdir(parents=True)
    (other / "x-one" / "SKILL.md").write_text("---\ndescription: d\n---\n", encoding="utf-8")
    assert main(["list", "--json", "--skills-dir", str(other)]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["skills_dir"] == str(other.resolve())
    assert [s["name"] for s in payload["skills"]] == ["x-one"]
    assert payload["diagnostics"][0]["code"] == "missing_name"


def test_list_of_a_missing_folder_prints_the_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", "--skills-dir", str(tmp_path / "none")]) == 0
    assert "does not exist" in capsys.readouterr().out


def test_validate_prints_every_diagnostic_and_fails_on_an_error(
    skills: SkillsFolder, capsys: pytest.CaptureFixture[str]
) -> None:
    warned = skills.write("warned", "description: d\nmetadata: [1]\n")
    broken = skills.write("broken", "name: broken\n")
    assert main(["validate", str(warned), str(broken / "SKILL.md")]) == 1
    out = capsys.readouterr().out
    assert "warning [missing_name]" in out
    assert "warning [invalid_metadata]" in out
    assert "error [missing_description]" in out
    assert "Checked 2 skill(s): 1 error(s), 2 warning(s)." in out


def test_list_and_validate_report_a_recursive_alias_without_a_traceback(
    skills: SkillsFolder,
) -> None:
    skills.write("good")
    loop = skills.write("loop", "name: loop\ndescription: d\nmetadata: &m {k: *m}\n")
    command = [sys.executable, "-m", "doc_processing_std_tools.skills.cli"]
    listed = subprocess.run(
        [*command, "list"], capture_output=True, text=True, timeout=60, check=False
    )
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr + listed.stdout
    assert "1 skill(s) in" in listed.stdout
    assert "loop: error [yaml_recursive_alias]" in listed.stdout
    as_json = subprocess.run(
        [*command, "list", "--json"], capture_output=True, text=True, timeout=60, check=False
    )
    assert as_json.returncode == 0, as_json.stderr
    assert [d["code"] for d in json.loads(as_json.stdout)["diagnostics"]] == [
        "yaml_recursive_alias"
    ]
    checked = subprocess.run(
        [*command, "validate", str(loop)], capture_output=True, text=True, timeout=60, check=False
    )
    assert checked.returncode == 1
    assert "Traceback" not in checked.stderr + checked.stdout
    assert "error [yaml_recursive_alias]" in checked.stdout
    assert "Checked 1 skill(s): 1 error(s), 0 warning(s)." in checked.stdout


def test_validate_passes_with_warnings_only_and_checks_whole_folders(
    skills: SkillsFolder, capsys: pytest.CaptureFixture[str]
) -> None:
    skills.write("good")
    skills.write("warned", "description: d\n")
    assert main(["validate", str(skills.path)]) == 0
    assert "Checked 2 skill(s): 0 error(s), 1 warning(s)." in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["missing", "plain-file", "empty-folder"])
def test_validate_fails_on_paths_that_hold_no_skill(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    path = tmp_path / kind
    if kind == "plain-file":
        path.write_text("x", encoding="utf-8")
    elif kind == "empty-folder":
        path.mkdir()
    assert main(["validate", str(path)]) == 1
    assert "error" in capsys.readouterr().out


def test_new_creates_a_skill_and_refuses_to_overwrite(
    skills: SkillsFolder, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "fresh-skill", "--description", "Does fresh things."]) == 0
    assert "fresh-skill" in capsys.readouterr().out
    assert main(["validate", str(skills.path / "fresh-skill")]) == 0
    assert main(["new", "fresh-skill", "--description", "Again."]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main(["new", "Bad_Name", "--description", "x"]) == 1
    assert "lowercase letters" in capsys.readouterr().err


def test_a_bad_setting_is_reported_by_name(
    skills: SkillsFolder, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from doc_processing_std_tools.config import reset_settings

    monkeypatch.setenv("DPTTOOLS_MAX_FILE_SIZE_MB", "lots")
    reset_settings()
    assert main(["list"]) == 1
    assert "DPTTOOLS_MAX_FILE_SIZE_MB" in capsys.readouterr().err


def test_the_installed_command_runs(skills: SkillsFolder) -> None:
    command = shutil.which("dpt-skills") or str(Path(sys.executable).parent / "dpt-skills")
    skills.write("alpha")
    done = subprocess.run(
        [command, "list", "--json"], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout)["count"] == 1


def test_a_reader_that_leaves_early_gets_no_error_message(skills: SkillsFolder) -> None:
    for index in range(400):
        skills.write(f"skill-{index:03d}")
    command = shutil.which("dpt-skills") or str(Path(sys.executable).parent / "dpt-skills")
    with subprocess.Popen(
        [command, "list", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        assert child.stdout.readline().strip() == b"{"
        # The JSON is far larger than a pipe's buffer, so the next write meets a closed pipe.
        child.stdout.close()
        stderr = child.stderr.read()
        child.wait(timeout=60)
    assert stderr == b""
