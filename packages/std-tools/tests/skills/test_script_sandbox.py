"""Nothing a script starts outlives the call: not even a child that called setsid() and
emptied its environment (which the old environment-based sweep could not find)."""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from doc_processing_std_tools.skills.sandbox import sandbox_status
from doc_processing_std_tools.skills.scripts import ScriptPolicy, run_script

BWRAP_MISSING = "bubblewrap not installed: apt-get install bubblewrap"

needs_bwrap = pytest.mark.skipif(
    sandbox_status().bwrap is None,
    reason=f"{BWRAP_MISSING} ({sandbox_status().problem})",
)
"""Skip a test that needs a working bubblewrap, saying how to get it."""

#: The modes the process tests run under: always without, and with bubblewrap.
MODES = [
    pytest.param("none", id="none"),
    pytest.param("bwrap", id="bwrap", marks=needs_bwrap),
]


def write_skill(skills_dir: Path, name: str, scripts: dict[str, str]) -> Path:
    """Write a valid skill `name` with `scripts` (file name -> source) under scripts/."""
    folder = skills_dir / name
    (folder / "scripts").mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Test skill {name}.\n---\n\n# Use\n", encoding="utf-8"
    )
    for file_name, source in scripts.items():
        (folder / "scripts" / file_name).write_text(source, encoding="utf-8")
    return folder


def processes_with(token: str) -> list[int]:
    """Host pids of live (not zombie) processes whose command line holds `token`."""
    found: list[int] = []
    needle = token.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if needle in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


pytestmark = [pytest.mark.anyio, pytest.mark.skipif(not Path("/proc").is_dir(), reason="Linux")]

# The script starts a middle process that starts the escaper and exits at once, so the
# escaper is an orphan; the escaper calls setsid() and runs with an EMPTY environment
# (no run id to find it by), writes a file saying it is up, and sleeps. The token in its
# command line lets the test find it on the host, with or without a PID namespace.
ESCAPER = """
import os, subprocess, sys, time
token, ready, mode = sys.argv[1], sys.argv[2], sys.argv[3]
sleeper = (
    "import os, sys, time\\n"
    "os.setsid()\\n"
    "open(sys.argv[2], 'w').write(str(os.getpid()))\\n"
    "time.sleep(300)\\n"
)
middle = (
    "import subprocess, sys\\n"
    "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2], sys.argv[3]], env={})\\n"
)
subprocess.run([sys.executable, "-c", middle, sleeper, token, ready], env={})
while not os.path.exists(ready):
    time.sleep(0.01)
print("escaper is up", flush=True)
if mode == "wait":
    time.sleep(300)
"""


def kill_leftovers(token: str) -> None:
    for pid in processes_with(token):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ending", ["exit", "wait"])
async def test_a_setsid_child_with_an_emptied_environment_is_dead_when_the_call_returns(
    tmp_path: Path, mode: str, ending: str
) -> None:
    skill = tmp_path / "skill"
    (skill / "scripts").mkdir(parents=True)
    script = skill / "scripts" / "escape.py"
    script.write_text(ESCAPER, encoding="utf-8")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    token = f"dpt-escape-{uuid.uuid4().hex}"
    policy = ScriptPolicy(sandbox="bwrap" if mode == "bwrap" else "none", workspace=workspace)
    started = time.monotonic()
    try:
        result = await run_script(
            script,
            [token, str(workspace / "ready"), ending],
            time_limit=3 if ending == "wait" else 20,
            output_limit=2000,
            policy=policy,
            skill_dir=skill,
        )
        # The escaper was really started, and the call did not wait for it to end.
        assert result.stdout == "escaper is up\n", result.stderr
        assert (workspace / "ready").exists()
        assert time.monotonic() - started < 15
        if ending == "wait":
            assert result.timed_out and result.exit_code == -1
            assert "killed with every process it started" in result.stderr
        else:
            assert (result.exit_code, result.timed_out) == (0, False)
        # Dead right away: no polling, no grace period.
        assert processes_with(token) == [], "a setsid() child outlived the call"
    finally:
        kill_leftovers(token)


@pytest.mark.parametrize("mode", MODES)
async def test_a_forking_chain_is_killed_to_the_last_process(tmp_path: Path, mode: str) -> None:
    # Each process starts the next and exits: a chain of orphans, each a new session.
    source = """
import os, subprocess, sys, time
token, depth = sys.argv[1], int(sys.argv[2])
if depth > 0:
    subprocess.Popen([sys.executable, __file__, token, str(depth - 1)], env={},
                     start_new_session=True)
    if depth != 5:
        sys.exit(0)
    time.sleep(1.5)
    print("chain started", flush=True)
else:
    time.sleep(300)
"""
    skill = tmp_path / "skill"
    (skill / "scripts").mkdir(parents=True)
    script = skill / "scripts" / "chain.py"
    script.write_text(source, encoding="utf-8")
    token = f"dpt-chain-{uuid.uuid4().hex}"
    policy = ScriptPolicy(sandbox="bwrap" if mode == "bwrap" else "none")
    try:
        result = await run_script(
            script, [token, "5"], time_limit=20, output_limit=2000, policy=policy, skill_dir=skill
        )
        assert result.stdout == "chain started\n", result.stderr
        assert processes_with(token) == []
    finally:
        kill_leftovers(token)
