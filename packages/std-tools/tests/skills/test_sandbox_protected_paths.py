"""Under bubblewrap a skill script with a writable workspace still cannot change what the
host trusts inside it: ``.git`` (a planted hook runs outside any sandbox), the agents'
memory and settings files (the next session reads them) and the skills folders (every
skill, not only the running one). Each attack is a real script under real bubblewrap; an
ordinary workspace file stays writable. DPTTOOLS_SCRIPT_PROTECTED extends or replaces
the list."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from script_user_access import give_to_script_user

from doc_processing_std_tools.config import load_settings
from doc_processing_std_tools.errors import ConfigError
from doc_processing_std_tools.skills.sandbox import PROTECTED_PATHS, sandbox_status
from doc_processing_std_tools.skills.scripts import ScriptPolicy, ScriptResult, run_script

needs_bwrap = pytest.mark.skipif(
    sandbox_status().bwrap is None,
    reason=(
        "bubblewrap is needed to test its read-only binds and is not usable here "
        f"({sandbox_status().problem}); install it: apt-get install bubblewrap"
    ),
)

#: Writes each path it is given (relative to the workspace), or renames one with
#: ``mv:OLD:NEW``; prints one JSON line per path: "ok" or the error's errno name.
WRITER = """\
import errno, json, os, sys
workspace = os.environ["DPTTOOLS_WORKSPACE_DIR"]
for target in sys.argv[1:]:
    try:
        if target.startswith("mv:"):
            _, old, new = target.split(":")
            os.rename(os.path.join(workspace, old), os.path.join(workspace, new))
        else:
            path = os.path.join(workspace, target)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write("planted by a skill script\\n")
        outcome = "ok"
    except OSError as exc:
        outcome = errno.errorcode.get(exc.errno or 0, str(exc))
    print(json.dumps([target, outcome]))
"""

ORIGINAL = "original\n"


def write_skill(skills_dir: Path, name: str) -> Path:
    folder = skills_dir / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Test skill {name}.\n---\n\n# Use\n", encoding="utf-8"
    )
    (folder / "scripts" / "write.py").write_text(WRITER, encoding="utf-8")
    return folder


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace holding a git folder, agent files and its skills folder (the default
    ``.agent_skills`` layout), every protected file holding `ORIGINAL`."""
    root = tmp_path / "workspace"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text(ORIGINAL, encoding="utf-8")
    (root / ".claude").mkdir()
    (root / ".claude" / "CLAUDE.md").write_text(ORIGINAL, encoding="utf-8")
    (root / "AGENTS.md").write_text(ORIGINAL, encoding="utf-8")
    (root / "notes").mkdir()
    write_skill(root / ".agent_skills", "runner")
    write_skill(root / ".agent_skills", "victim")
    return root


async def run_writer(
    workspace: Path, targets: list[str], extra: dict[str, str] | None = None
) -> dict[str, str]:
    """Run the runner skill's script under bubblewrap, configured as the server would be
    from the environment; the outcome for each target."""
    settings = load_settings(
        {
            "DPTTOOLS_WORKSPACE_DIR": str(workspace),
            "DPTTOOLS_SKILLS_DIR": str(workspace / ".agent_skills"),
            "DPTTOOLS_SCRIPT_SANDBOX": "bwrap",
            **(extra or {}),
        }
    )
    give_to_script_user(workspace)
    skill = workspace / ".agent_skills" / "runner"
    result: ScriptResult = await run_script(
        skill / "scripts" / "write.py",
        targets,
        time_limit=20,
        output_limit=20_000,
        policy=ScriptPolicy.from_settings(settings),
        skill_dir=skill,
    )
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    return {target: outcome for target, outcome in lines}


READ_ONLY = errno.errorcode[errno.EROFS]

pytestmark = [pytest.mark.anyio, needs_bwrap]


async def test_a_script_cannot_plant_a_git_hook_or_move_the_git_folder_away(
    workspace: Path,
) -> None:
    outcome = await run_writer(
        workspace, [".git/hooks/pre-commit", ".git/HEAD", "mv:.git:.git-old"]
    )
    assert outcome[".git/hooks/pre-commit"] == READ_ONLY
    assert outcome[".git/HEAD"] == READ_ONLY
    # A mount point cannot be renamed: the script cannot put its own .git in its place.
    assert outcome["mv:.git:.git-old"] in (READ_ONLY, errno.errorcode[errno.EBUSY])
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / ".git" / "HEAD").read_text(encoding="utf-8") == ORIGINAL
    assert not (workspace / ".git-old").exists()


async def test_a_script_cannot_rewrite_the_agents_memory_and_settings(
    workspace: Path,
) -> None:
    outcome = await run_writer(
        workspace, ["AGENTS.md", ".claude/CLAUDE.md", ".claude/settings.json"]
    )
    assert outcome == {
        "AGENTS.md": READ_ONLY,
        ".claude/CLAUDE.md": READ_ONLY,
        ".claude/settings.json": READ_ONLY,
    }
    assert (workspace / "AGENTS.md").read_text(encoding="utf-8") == ORIGINAL
    assert (workspace / ".claude" / "CLAUDE.md").read_text(encoding="utf-8") == ORIGINAL
    assert not (workspace / ".claude" / "settings.json").exists()


async def test_a_script_cannot_rewrite_another_skill_or_add_one(workspace: Path) -> None:
    victim = workspace / ".agent_skills" / "victim" / "SKILL.md"
    before = victim.read_text(encoding="utf-8")
    outcome = await run_writer(
        workspace, [".agent_skills/victim/SKILL.md", ".agent_skills/planted/SKILL.md"]
    )
    assert outcome == {
        ".agent_skills/victim/SKILL.md": READ_ONLY,
        ".agent_skills/planted/SKILL.md": READ_ONLY,
    }
    assert victim.read_text(encoding="utf-8") == before
    assert not (workspace / ".agent_skills" / "planted").exists()


async def test_ordinary_workspace_files_stay_writable(workspace: Path) -> None:
    outcome = await run_writer(workspace, ["result.txt", "notes/today.md", "new/deep/file.txt"])
    assert set(outcome.values()) == {"ok"}
    for name in ("result.txt", "notes/today.md", "new/deep/file.txt"):
        assert (workspace / name).read_text(encoding="utf-8") == "planted by a skill script\n"


async def test_a_protected_link_protects_the_file_it_leads_to(workspace: Path) -> None:
    (workspace / "CLAUDE.md").symlink_to("AGENTS.md")
    outcome = await run_writer(workspace, ["CLAUDE.md"])
    assert outcome == {"CLAUDE.md": READ_ONLY}
    assert (workspace / "AGENTS.md").read_text(encoding="utf-8") == ORIGINAL


async def test_a_protected_name_that_does_not_exist_can_be_created(workspace: Path) -> None:
    """Documented limit: only what exists when the script starts is bound read-only
    (a bind needs something to bind over, and making it would write to the host)."""
    outcome = await run_writer(workspace, ["GEMINI.md"])
    assert outcome == {"GEMINI.md": "ok"}


async def test_the_list_can_be_extended_or_replaced(workspace: Path) -> None:
    (workspace / "Makefile").write_text(ORIGINAL, encoding="utf-8")
    added = await run_writer(
        workspace, ["Makefile", "AGENTS.md"], {"DPTTOOLS_SCRIPT_PROTECTED": "+Makefile"}
    )
    assert added == {"Makefile": READ_ONLY, "AGENTS.md": READ_ONLY}
    replaced = await run_writer(
        workspace,
        ["Makefile", "AGENTS.md", ".agent_skills/victim/SKILL.md"],
        {"DPTTOOLS_SCRIPT_PROTECTED": "Makefile"},
    )
    # The skills folders stay read-only whatever the list says.
    assert replaced == {
        "Makefile": READ_ONLY,
        "AGENTS.md": "ok",
        ".agent_skills/victim/SKILL.md": READ_ONLY,
    }
    assert (workspace / "Makefile").read_text(encoding="utf-8") == ORIGINAL


def test_the_setting() -> None:
    assert load_settings({}).script_protected == PROTECTED_PATHS
    assert {".git", "AGENTS.md", ".claude", ".github/copilot-instructions.md"} <= set(
        PROTECTED_PATHS
    )
    assert load_settings({"DPTTOOLS_SCRIPT_PROTECTED": " + build/ , .git "}).script_protected == (
        *PROTECTED_PATHS,
        "build",
    )
    assert load_settings({"DPTTOOLS_SCRIPT_PROTECTED": "a, b/c"}).script_protected == (
        "a",
        "b/c",
    )
    assert load_settings({"DPTTOOLS_SCRIPT_PROTECTED": "none"}).script_protected == ()
    for bad in ("/etc", "../up", "a/../../b", ".", "+", "a,,~/x"):
        with pytest.raises(ConfigError, match="DPTTOOLS_SCRIPT_PROTECTED"):
            load_settings({"DPTTOOLS_SCRIPT_PROTECTED": bad})
