"""A symbolic link leading out of a skill (issue 17, item 4): refused, and reported: marked
in load_skill's file list and given a ``link_outside_skill`` warning in list_skills; no
refusal or diagnostic names where such a link points."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from doc_processing_std_tools.config import get_settings
from doc_processing_std_tools.errors import PathOutsideRootError
from doc_processing_std_tools.skills import actions
from doc_processing_std_tools.skills.catalog.scan import scan_once
from doc_processing_std_tools.skills.server import skills_server_state as skills_state

if TYPE_CHECKING:
    from conftest import SkillsFolder

MAX = 1024 * 1024


def _secrets(tmp_path: Path) -> Path:
    folder = tmp_path / "home-of-someone" / ".ssh"
    folder.mkdir(parents=True)
    (folder / "id_rsa").write_text("PRIVATE KEY\n", encoding="utf-8")
    return folder


def _assert_names_no_target(text: str) -> None:
    assert "home-of-someone" not in text
    assert ".ssh" not in text
    assert "id_rsa" not in text


def test_a_link_out_of_a_skill_is_marked_in_load_skill_and_warned_in_list_skills(
    skills: SkillsFolder, tmp_path: Path
) -> None:
    secrets = _secrets(tmp_path)
    folder = skills.write("trojan")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "run.py").write_text("print('hi')\n", encoding="utf-8")
    (folder / "scripts" / "helper.py").symlink_to(secrets / "id_rsa")
    (folder / "keys").symlink_to(secrets)
    skills.write("plain")

    catalog = scan_once(skills.path, max_bytes=MAX)
    assert [s.name for s in catalog.skills] == ["plain", "trojan"]
    assert [(d.skill, d.level, d.code) for d in catalog.diagnostics] == [
        ("trojan", "warning", "link_outside_skill")
    ]
    (warning,) = catalog.diagnostics
    assert "scripts/helper.py" in warning.message and "keys" in warning.message
    _assert_names_no_target(catalog.json)

    text = actions.load_skill(skills_state, get_settings(), "trojan")
    assert "<file>scripts/run.py</file>" in text
    assert "scripts/helper.py (a link leading outside the skills folder, not readable)" in text
    assert "keys (a link leading outside the skills folder, not readable)" in text
    _assert_names_no_target(text)

    with pytest.raises(PathOutsideRootError) as caught:
        actions.load_skill_resource(skills_state, get_settings(), "trojan", "scripts/helper.py")
    _assert_names_no_target(str(caught.value))
    with pytest.raises(PathOutsideRootError) as caught:
        actions.load_skill_resource(skills_state, get_settings(), "trojan", "keys/notes.txt")
    _assert_names_no_target(str(caught.value))


def test_a_link_to_another_skill_inside_the_folder_is_no_warning(skills: SkillsFolder) -> None:
    shared = skills.write("shared")
    (shared / "notes.md").write_text("notes\n", encoding="utf-8")
    folder = skills.write("user")
    (folder / "notes.md").symlink_to(shared / "notes.md")
    catalog = scan_once(skills.path, max_bytes=MAX)
    assert catalog.diagnostics == ()
    assert "<file>notes.md</file>" in actions.load_skill(skills_state, get_settings(), "user")


def test_a_skill_md_linked_outside_is_refused_without_naming_the_target(
    skills: SkillsFolder, tmp_path: Path
) -> None:
    secrets = _secrets(tmp_path)
    (secrets / "SKILL.md").write_text("---\nname: leak\ndescription: Secret.\n---\n", "utf-8")
    (skills.path / "leak").mkdir()
    (skills.path / "leak" / "SKILL.md").symlink_to(secrets / "SKILL.md")
    catalog = scan_once(skills.path, max_bytes=MAX)
    assert [(d.skill, d.code) for d in catalog.diagnostics] == [("leak", "outside_skills_dir")]
    assert "outside the skills folder" in catalog.diagnostics[0].message
    _assert_names_no_target(catalog.json)
