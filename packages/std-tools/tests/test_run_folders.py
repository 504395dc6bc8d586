"""The test run keeps to folders of its own: the skills index of the servers it starts is
not written into the user's cache folder, and no mode outside the run's folder changes."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import platformdirs
import script_user_access

from doc_processing_std_tools.config import load_settings


def test_the_skills_index_goes_to_the_runs_own_folder(tmp_path: Path) -> None:
    own = script_user_access.run_folder()
    assert own is not None
    cache = load_settings().cache_dir
    assert cache is not None
    user_cache = Path(platformdirs.user_cache_dir("doc-processing-std-tools", appauthor=False))
    assert cache != user_cache
    # A server child process inherits the setting and writes its index there.
    skill = tmp_path / "skills" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: Demo things.\n---\nBody\n")
    code = (
        "from doc_processing_std_tools.config import load_settings\n"
        "from doc_processing_std_tools.skills.state import SkillsState\n"
        "print(sorted(SkillsState().scan(load_settings()).skills))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "DPTTOOLS_SKILLS_DIR": str(tmp_path / "skills")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "demo" in result.stdout + result.stderr
    assert any(cache.glob("skills-*.sqlite3"))


def test_modes_outside_the_runs_folder_stay(tmp_path: Path) -> None:
    outside = Path(os.path.realpath(sys.executable)).parent
    before = stat.S_IMODE(outside.stat().st_mode)
    script_user_access.open_paths([outside, tmp_path])
    assert stat.S_IMODE(outside.stat().st_mode) == before
