"""Attack: a skill script, or its folder, swapped for a link to an outside script while
execute_skill_script checks and starts it.

A swapper child process keeps exchanging the script (or the folder holding it) with a
symbolic link to an outside script, and back, with renameat2(RENAME_EXCHANGE), so the name
is never missing. Meanwhile execute_skill_script is called in a loop, bounded in time and
count, with and without bubblewrap. The outside script writes a marker file and prints a
line of its own. Every call must either run the inside script or refuse with a clear
error; the outside script must never run.

Then what makes that hold: the code that runs is the code read from the checked file,
run the way ``python script.py`` runs it; no descriptor of a host folder reaches a script;
under bubblewrap a working folder that is not the checked one runs nothing.

The outside folder lies in the workspace (DPTTOOLS_WORKSPACE_DIR), which bubblewrap binds
writable: a script started from there by mistake would run and leave its marker in either
mode, so the attack is real under bubblewrap too.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
import pytest
from link_swapper import swapping
from script_user_access import without_bwrap_as_root

from doc_processing_std_tools.config import Settings, load_settings
from doc_processing_std_tools.errors import InvalidArgumentError, StdToolsError
from doc_processing_std_tools.skills import actions
from doc_processing_std_tools.skills.scripts.policy import OpenFolder, ScriptFile, ScriptPolicy
from doc_processing_std_tools.skills.scripts.run import run_script
from doc_processing_std_tools.skills.scripts.sandbox import INSTALL_HINT, sandbox_status
from doc_processing_std_tools.skills.server import skills_server_state as skills_state

pytestmark = pytest.mark.anyio

#: How long each attack runs (RACE_SECONDS overrides it for a longer hunt), how much longer
#: it may go on until one call has run the inside script (most calls are refused while the
#: link is in place), and the most calls it makes.
SECONDS = float(os.environ.get("RACE_SECONDS", "2.0"))
UNTIL_ONE_RAN_SECONDS = 6.0
MAX_CALLS = 5_000

INSIDE = "print('inside ran')\n"


@dataclass
class Outcome:
    """What the calls of one attack gave."""

    calls: int = 0
    inside: int = 0
    refusals: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)


@dataclass
class Site:
    settings: Settings
    skill: Path
    outside: Path
    marker: Path


@pytest.fixture(params=[pytest.param("none", marks=without_bwrap_as_root), "bwrap"])
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Site:
    """A skill 'race' with scripts/run.py, and an outside folder in the workspace holding
    a run.py that leaves a marker."""
    mode = str(request.param)
    if mode == "bwrap" and sandbox_status().bwrap is None:
        pytest.skip(f"bubblewrap cannot be used here ({sandbox_status().problem}); {INSTALL_HINT}")
    skills = tmp_path / "skills"
    skill = skills / "race"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: race\ndescription: Runs one script.\n---\n\nRun scripts/run.py.\n",
        encoding="utf-8",
    )
    (skill / "scripts" / "run.py").write_text(INSIDE, encoding="utf-8")
    workspace = tmp_path / "workspace"
    outside = workspace / "outside"
    outside.mkdir(parents=True)
    marker = outside / "marker"
    (outside / "run.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\nprint('outside ran')\n",
        encoding="utf-8",
    )
    settings = load_settings(
        {
            "DPTTOOLS_SKILLS_DIR": str(skills),
            "DPTTOOLS_WORKSPACE_DIR": str(workspace),
            "DPTTOOLS_SCRIPT_SANDBOX": mode,
        }
    )
    return Site(settings, skill.resolve(), outside.resolve(), marker)


async def hammer(settings: Settings) -> Outcome:
    """Call execute_skill_script until time or count runs out (and one call ran the
    inside script, for a few seconds more)."""
    outcome = Outcome()
    started = time.monotonic()
    while outcome.calls < MAX_CALLS and (
        time.monotonic() < started + SECONDS
        or (outcome.inside == 0 and time.monotonic() < started + UNTIL_ONE_RAN_SECONDS)
    ):
        outcome.calls += 1
        try:
            text = await actions.execute_skill_script(
                skills_state, settings, "race", "scripts/run.py"
            )
        except StdToolsError as exc:
            outcome.refusals.append(str(exc))
            continue
        payload = json.loads(text)
        if payload == {"stdout": "inside ran\n", "stderr": "", "exit_code": 0}:
            outcome.inside += 1
        else:
            outcome.other.append(text)
    return outcome


def check(outcome: Outcome, site: Site) -> None:
    assert not site.marker.exists(), (
        f"the outside script ran ({outcome.calls} calls, {len(outcome.other)} odd results: "
        f"{outcome.other[:3]})"
    )
    assert outcome.other == [], f"{len(outcome.other)} calls gave neither: {outcome.other[:3]}"
    for message in outcome.refusals:
        assert "script_path" in message or "script" in message, message
        assert "outside ran" not in message
    assert outcome.inside > 0, f"no call ran the inside script: {outcome.refusals[:3]}"


async def test_a_script_swapped_for_a_link_outside_never_runs_the_outside_script(
    site: Site,
) -> None:
    with swapping(site.skill / "scripts" / "run.py", site.outside / "run.py"):
        outcome = await hammer(site.settings)
    check(outcome, site)


async def test_a_script_folder_swapped_for_a_link_outside_never_runs_the_outside_script(
    site: Site,
) -> None:
    with swapping(site.skill / "scripts", site.outside):
        outcome = await hammer(site.settings)
    check(outcome, site)


# ---- What runs is what was checked, the way `python script.py` runs it.

Mode = Literal["none", "bwrap"]
MODES = [
    pytest.param("none", marks=without_bwrap_as_root),
    pytest.param(
        "bwrap",
        marks=pytest.mark.skipif(
            sandbox_status().bwrap is None,
            reason=f"bubblewrap cannot be used here ({sandbox_status().problem}); {INSTALL_HINT}",
        ),
    ),
]

# Prints what a script sees of itself; with 'raise', ends in a traceback through a
# function; with 'exit', ends with status 7; imports a module lying next to it.
INTROSPECT = '''"""The module docstring."""
import os, sys
import helper


def fail():
    raise ValueError("boom")


if __name__ == "__main__":
    print(__file__, sys.argv, sys.path[0], os.getcwd(), __doc__, helper.VALUE)
    print(sorted(globals()), type(__loader__).__name__, __spec__, __cached__, __package__)
    if sys.argv[1:] == ["raise"]:
        fail()
    if sys.argv[1:] == ["exit"]:
        sys.exit(7)
'''


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("name", "args"),
    [("main.py", []), ("main.py", ["raise"]), ("main.py", ["exit"]), ("broken.py", [])],
)
async def test_a_script_runs_as_python_script_py_would_run_it(
    tmp_path: Path, mode: Mode, name: str, args: list[str]
) -> None:
    folder = tmp_path / "skill" / "scripts"
    folder.mkdir(parents=True)
    (folder / "helper.py").write_text("VALUE = 'sibling imported'\n", encoding="utf-8")
    (folder / "main.py").write_text(INTROSPECT, encoding="utf-8")
    (folder / "broken.py").write_text("x = (\n", encoding="utf-8")
    path = (folder / name).resolve()
    bare = await anyio.run_process(
        [sys.executable, str(path), *args],
        cwd=path.parent,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"},
        check=False,
    )
    result = await run_script(
        path, args, time_limit=20, output_limit=20_000, policy=ScriptPolicy(sandbox=mode)
    )
    assert (result.stdout, result.stderr, result.exit_code) == (
        bare.stdout.decode(),
        bare.stderr.decode(),
        bare.returncode,
    )
    if name == "main.py":
        assert f"{path} ['{path}'" in result.stdout and "sibling imported" in result.stdout
    assert "<string>" not in result.stderr  # no line of the bootstrap in a traceback


@pytest.mark.parametrize("mode", MODES)
async def test_the_code_that_runs_is_the_code_checked_not_the_file_read_again(
    tmp_path: Path, mode: Mode
) -> None:
    folder = tmp_path / "skill"
    folder.mkdir()
    path = folder / "run.py"
    path.write_text("print('changed after the check')\n", encoding="utf-8")
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        checked = ScriptFile(
            path.resolve(),
            b"print('as checked', __file__)\n",
            OpenFolder(folder.resolve(), descriptor),
        )
        result = await run_script(
            checked, [], time_limit=20, output_limit=2000, policy=ScriptPolicy(sandbox=mode)
        )
    finally:
        os.close(descriptor)
    assert (result.stdout, result.exit_code) == (f"as checked {path.resolve()}\n", 0)


# Prints every descriptor above the standard streams that the script holds, and where
# it leads (the one listdir opened on /proc/self/fd is closed again once it is read).
FD_LISTER = """
import os
found = []
for fd in sorted(int(name) for name in os.listdir("/proc/self/fd")):
    try:
        found.append((fd, os.readlink(f"/proc/self/fd/{fd}")))
    except FileNotFoundError:
        pass
print([item for item in found if item[0] > 2])
"""


@pytest.mark.parametrize("mode", MODES)
async def test_a_script_inherits_no_descriptor_but_its_standard_streams(
    tmp_path: Path, mode: Mode
) -> None:
    path = tmp_path / "fds.py"
    path.write_text(
        FD_LISTER,
        encoding="utf-8",
    )
    result = await run_script(
        path, [], time_limit=20, output_limit=2000, policy=ScriptPolicy(sandbox=mode)
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout


@pytest.mark.skipif(
    sandbox_status().bwrap is None,
    reason=f"bubblewrap cannot be used here ({sandbox_status().problem}); {INSTALL_HINT}",
)
async def test_under_bubblewrap_a_folder_that_is_not_the_checked_one_runs_nothing(
    tmp_path: Path,
) -> None:
    named = tmp_path / "named"
    named.mkdir()
    (named / "run.py").write_text("print('ran')\n", encoding="utf-8")
    other = tmp_path / "other"
    other.mkdir()
    # The folder checked (held by its descriptor) is not the one the path names now, as
    # after a swap below the skill's folder; bubblewrap enters the path, and the
    # supervisor notices.
    descriptor = os.open(other, os.O_RDONLY | os.O_DIRECTORY)
    skill = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        script = ScriptFile(
            (named / "run.py").resolve(),
            b"print('ran')\n",
            OpenFolder(named.resolve(), descriptor),
            OpenFolder(tmp_path, skill),  # pytest's tmp_path has no link in it
        )
        with pytest.raises(InvalidArgumentError, match=r"was replaced.*nothing ran\. Try again"):
            await run_script(
                script, [], time_limit=20, output_limit=2000, policy=ScriptPolicy(sandbox="bwrap")
            )
    finally:
        os.close(descriptor)
        os.close(skill)
