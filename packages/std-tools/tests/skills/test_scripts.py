"""Running skill scripts: interpreter, folder, arguments, timeout and output limits."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import anyio
import pytest
from script_user_access import without_bwrap_as_root

from doc_processing_std_tools.errors import InvalidArgumentError
from doc_processing_std_tools.skills.scripts.policy import ScriptPolicy
from doc_processing_std_tools.skills.scripts.run import run_script, split_args

pytestmark = pytest.mark.anyio


def script(tmp_path: Path, source: str, name: str = "tool.py") -> Path:
    folder = tmp_path / "skill" / "scripts"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(source, encoding="utf-8")
    return path


async def test_output_exit_code_interpreter_and_folder_come_back(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "import os, sys\nprint(sys.executable)\nprint(os.getcwd())\n"
        "print(sys.argv[1:])\nprint('warn', file=sys.stderr)\nsys.exit(3)\n",
    )
    result = await run_script(path, ["a b", "$HOME"], time_limit=20, output_limit=10_000)
    lines = result.stdout.splitlines()
    assert lines[0] == sys.executable
    assert Path(lines[1]) == path.parent.resolve()
    assert lines[2] == "['a b', '$HOME']"
    assert result.stderr == "warn\n"
    assert result.exit_code == 3
    assert result.to_payload() == {
        "stdout": result.stdout,
        "stderr": "warn\n",
        "exit_code": 3,
    }


async def test_standard_input_is_empty(tmp_path: Path) -> None:
    path = script(tmp_path, "import sys\nprint(repr(sys.stdin.read()))\n")
    result = await run_script(path, [], time_limit=20, output_limit=1000)
    assert result.stdout.strip() == "''"


# Only Linux lets the server find a child that left the process group.
HAS_PROC = Path("/proc/self/environ").exists()
# The spawner below writes pid files next to the test and checks host pids, so it runs
# without bubblewrap (whose private /tmp and PID namespace would hide both); the same
# attacks under bubblewrap are in test_script_processes.py.
UNSANDBOXED = ScriptPolicy(sandbox="none")


def is_running(pid: int) -> bool:
    """True while `pid` runs; a zombie waiting for its new parent to reap it is dead."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state not in ("Z", "X")


async def assert_dies(pid: int, what: str) -> None:
    deadline = time.monotonic() + 5
    while is_running(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"{what} (pid {pid}) outlived the script")
        await anyio.sleep(0.05)


# Starts a grandchild through a child that exits at once, so the grandchild is orphaned
# and would outlive the script; another grandchild also leaves the process group.
SPAWNER = """
import os, subprocess, sys, time
folder = sys.argv[1]
sleeper = "import os, sys, time\\n{setsid}open(sys.argv[1], 'w').write(str(os.getpid()))\\n" \\
    "time.sleep(120)"
middle = (
    "import subprocess, sys\\n"
    "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]])\\n"
)
for name, setsid in [("orphan", ""), ("escaped", "os.setsid()\\n")]:
    code = sleeper.format(setsid=setsid)
    subprocess.run([sys.executable, "-c", middle, code, os.path.join(folder, name)])
while not all(os.path.exists(os.path.join(folder, n)) for n in ("orphan", "escaped")):
    time.sleep(0.01)
print("started", flush=True)
if sys.argv[2] == "wait":
    time.sleep(120)
"""


def pids(folder: Path) -> dict[str, int]:
    deadline = time.monotonic() + 5
    found: dict[str, int] = {}
    while time.monotonic() < deadline and len(found) < 2:
        for name in ("orphan", "escaped"):
            text = (folder / name).read_text(encoding="utf-8") if (folder / name).exists() else ""
            if text:
                found[name] = int(text)
    return found


@without_bwrap_as_root
async def test_a_script_that_runs_too_long_is_killed_with_every_process_it_started(
    tmp_path: Path,
) -> None:
    path = script(tmp_path, SPAWNER)
    started = time.monotonic()
    result = await run_script(
        path, [str(tmp_path), "wait"], time_limit=2.0, output_limit=1000, policy=UNSANDBOXED
    )
    assert time.monotonic() - started < 10
    assert result.exit_code == -1
    assert result.timed_out
    assert "Timed out" in result.stderr and "DPTTOOLS_SANDBOX_TIMEOUT" in result.stderr
    assert result.stdout == "started\n"
    found = pids(tmp_path)
    await assert_dies(found["orphan"], "a grandchild left in the process group")
    if HAS_PROC:
        await assert_dies(found["escaped"], "a grandchild that called setsid()")
    else:
        os.kill(found["escaped"], signal.SIGKILL)


@without_bwrap_as_root
async def test_a_script_that_ends_leaves_nothing_running_and_keeps_its_exit_code(
    tmp_path: Path,
) -> None:
    # The grandchildren inherit the output pipes: had they been left running, the call
    # would have waited for them until the timeout and reported one.
    path = script(tmp_path, SPAWNER + "sys.exit(5)\n")
    started = time.monotonic()
    result = await run_script(
        path, [str(tmp_path), "exit"], time_limit=20, output_limit=1000, policy=UNSANDBOXED
    )
    assert time.monotonic() - started < 10
    assert (result.exit_code, result.timed_out, result.stdout) == (5, False, "started\n")
    found = pids(tmp_path)
    await assert_dies(found["orphan"], "a grandchild left in the process group")
    if HAS_PROC:
        await assert_dies(found["escaped"], "a grandchild that called setsid()")
    else:
        os.kill(found["escaped"], signal.SIGKILL)


async def test_output_is_cut_at_the_limit_with_a_marker(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "import sys\nsys.stdout.write('x' * 1_000_000)\nsys.stderr.write('é' * 100_000)\n",
    )
    result = await run_script(path, [], time_limit=20, output_limit=500)
    assert len(result.stdout) <= 500
    assert "truncated" in result.stdout
    assert len(result.stderr) <= 500 and "truncated" in result.stderr
    assert result.exit_code == 0


@pytest.mark.parametrize(
    ("args", "argv"),
    [
        ("", []),
        ("a b", ["a", "b"]),
        ("'my file.json' --flag", ["my file.json", "--flag"]),
        ('"x y" z\\ w', ["x y", "z w"]),
        ("$(rm -rf /) ; echo", ["$(rm", "-rf", "/)", ";", "echo"]),
    ],
)
def test_args_are_split_with_posix_shell_rules(args: str, argv: list[str]) -> None:
    assert split_args(args) == argv


def test_unbalanced_quotes_are_a_clear_error() -> None:
    with pytest.raises(InvalidArgumentError, match="close every quote"):
        split_args("'unclosed")


def test_a_nul_character_in_args_is_a_clear_error() -> None:
    with pytest.raises(InvalidArgumentError, match="NUL character"):
        split_args("a\x00b")
