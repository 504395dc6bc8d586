"""``dpt-skills lock`` and pinned serving (DPTTOOLS_SKILLS_LOCK), on real folders."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from mcp import Client
from mcp.types import TextContent

from doc_processing_std_tools.config import reset_settings
from doc_processing_std_tools.skills.cli import main
from doc_processing_std_tools.skills.server import skills_server
from doc_processing_std_tools.skills.server import skills_server_state as skills_state

if TYPE_CHECKING:
    from conftest import SkillsFolder

SCRIPT = "import sys\nprint('ran', *sys.argv[1:])\n"


@pytest.fixture
def two(skills: SkillsFolder) -> SkillsFolder:
    """Two skills: alpha with a script and a reference in a subfolder, beta alone; a
        hidden file and a __pycache__ folder, which the lock names too (a script can import
    from them)."""
    alpha = skills.write("alpha")
    (alpha / "scripts").mkdir()
    (alpha / "scripts" / "run.py").write_text(SCRIPT, encoding="utf-8")
    (alpha / "reference.md").write_text("# Reference\n", encoding="utf-8")
    (alpha / ".hidden").write_text("secret\n", encoding="utf-8")
    (alpha / "__pycache__").mkdir()
    (alpha / "__pycache__" / "run.pyc").write_bytes(b"\0")
    skills.write("beta")
    # Past the moments within which a file's stamp is not trusted: the catalog read next
    # stays the same object until something it read changes.
    time.sleep(0.3)
    skills_state.clear()
    return skills


def lock(skills: SkillsFolder, lock_file: Path, *extra: str) -> int:
    return main(["lock", "--skills-dir", str(skills.path), "--output", str(lock_file), *extra])


def test_lock_names_every_file_with_its_digest_and_size(
    two: SkillsFolder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock_file = tmp_path / "skills.lock"
    assert lock(two, lock_file) == 0
    document = json.loads(lock_file.read_text(encoding="utf-8"))
    assert document["format"] == 1
    assert sorted(document["skills"]) == ["alpha", "beta"]
    alpha = document["skills"]["alpha"]
    assert alpha["source"] == "local"
    assert sorted(alpha["files"]) == [
        ".hidden",
        "SKILL.md",
        "__pycache__/run.pyc",
        "reference.md",
        "scripts/run.py",
    ]
    script = (two.path / "alpha" / "scripts" / "run.py").read_bytes()
    assert alpha["files"]["scripts/run.py"] == {
        "sha256": hashlib.sha256(script).hexdigest(),
        "size": len(script),
    }
    assert "Locked 2 skill(s), 6 file(s)" in capsys.readouterr().out
    # No temporary file is left next to the lock.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["skills", "skills.lock"]


def test_check_passes_then_names_each_changed_new_and_missing_skill(
    two: SkillsFolder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock_file = tmp_path / "skills.lock"
    assert lock(two, lock_file) == 0
    assert lock(two, lock_file, "--check") == 0
    assert "All 2 skill(s) match" in capsys.readouterr().out

    (two.path / "alpha" / "reference.md").write_text("# Edited\n", encoding="utf-8")
    assert lock(two, lock_file, "--check") == 1
    assert "alpha: changed: reference.md" in capsys.readouterr().out

    (two.path / "alpha" / "reference.md").write_text("# Reference\n", encoding="utf-8")
    (two.path / "alpha" / "scripts" / "added.py").write_text("print(1)\n", encoding="utf-8")
    assert lock(two, lock_file, "--check") == 1
    assert "alpha: changed: scripts/added.py" in capsys.readouterr().out

    (two.path / "alpha" / "scripts" / "added.py").unlink()
    shutil.rmtree(two.path / "beta")
    two.write("gamma")
    assert lock(two, lock_file, "--check") == 1
    out = capsys.readouterr().out
    assert "beta: missing" in out and "gamma: new" in out and "alpha" not in out
    # --check writes nothing.
    assert "gamma" not in json.loads(lock_file.read_text(encoding="utf-8"))["skills"]


def test_relocking_keeps_where_each_skill_came_from(two: SkillsFolder, tmp_path: Path) -> None:
    lock_file = tmp_path / "skills.lock"
    assert lock(two, lock_file) == 0
    document = json.loads(lock_file.read_text(encoding="utf-8"))
    document["skills"]["beta"]["source"] = "https://example.org/beta.zip"
    lock_file.write_text(json.dumps(document), encoding="utf-8")
    assert lock(two, lock_file) == 0
    again = json.loads(lock_file.read_text(encoding="utf-8"))
    assert again["skills"]["beta"]["source"] == "https://example.org/beta.zip"


def test_check_without_a_lock_fails_and_says_so(
    two: SkillsFolder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert lock(two, tmp_path / "absent.lock", "--check") == 1
    assert "cannot be read" in capsys.readouterr().err


async def _call(tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    async with Client(skills_server) as client:
        result = await client.call_tool(tool, arguments)
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text, result.is_error


@pytest.fixture
def pinned(two: SkillsFolder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SkillsFolder:
    lock_file = tmp_path / "skills.lock"
    assert lock(two, lock_file) == 0
    monkeypatch.setenv("DPTTOOLS_SKILLS_LOCK", str(lock_file))
    reset_settings()
    skills_state.clear()
    return two


@pytest.mark.anyio
async def test_pinned_serving_leaves_out_changed_and_unlisted_skills(
    pinned: SkillsFolder,
) -> None:
    text, is_error = await _call("list_skills", {})
    assert not is_error
    assert [s["name"] for s in json.loads(text)["skills"]] == ["alpha", "beta"]

    (pinned.path / "beta" / "notes.md").write_text("planted\n", encoding="utf-8")
    pinned.write("beta", body="# Instructions\n\nDo something else.\n")
    pinned.write("gamma")
    text, is_error = await _call("list_skills", {})
    payload = json.loads(text)
    assert [s["name"] for s in payload["skills"]] == ["alpha"]
    codes = {d["skill"]: (d["level"], d["code"]) for d in payload["diagnostics"]}
    assert codes["beta"] == ("error", "lock_mismatch")
    assert codes["gamma"] == ("error", "not_locked")
    mismatch = next(d for d in payload["diagnostics"] if d["skill"] == "beta")
    assert "SKILL.md" in mismatch["message"] and "notes.md" in mismatch["message"]

    for name in ("beta", "gamma"):
        text, is_error = await _call("load_skill", {"skill_name": name})
        assert is_error and "not listed" in text, text
    text, is_error = await _call(
        "load_skill_resource", {"skill_name": "beta", "resource_path": "notes.md"}
    )
    assert is_error and "planted" not in text


@pytest.mark.anyio
async def test_a_script_edited_after_locking_is_refused_before_it_runs(
    pinned: SkillsFolder, tmp_path: Path
) -> None:
    text, is_error = await _call(
        "execute_skill_script", {"skill_name": "alpha", "script_path": "scripts/run.py"}
    )
    assert not is_error and "ran" in json.loads(text)["stdout"], text

    # Edited in place: neither the SKILL.md nor the skill's folder changes; the running
    # server still sees it (the skill is judged again) and the script never runs.
    marker = tmp_path / "marker"
    edited = f"open({str(marker)!r}, 'w').write('ran')\n"
    (pinned.path / "alpha" / "scripts" / "run.py").write_text(edited, encoding="utf-8")
    text, is_error = await _call(
        "execute_skill_script", {"skill_name": "alpha", "script_path": "scripts/run.py"}
    )
    assert is_error and "differ from the skills lock" in text, text
    assert not marker.exists()


@pytest.mark.anyio
async def test_relocking_lets_the_changed_skill_back_in(
    pinned: SkillsFolder, tmp_path: Path
) -> None:
    pinned.write("beta", body="# Instructions\n\nChanged.\n")
    text, _ = await _call("list_skills", {})
    assert [s["name"] for s in json.loads(text)["skills"]] == ["alpha"]
    assert lock(pinned, tmp_path / "skills.lock") == 0
    text, _ = await _call("list_skills", {})
    assert [s["name"] for s in json.loads(text)["skills"]] == ["alpha", "beta"]
