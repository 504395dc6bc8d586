"""Running skill scripts: interpreter, folder, arguments, timeout and output limits."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
import pytest

from doc_processing_std_tools.errors import InvalidArgumentError
from doc_processing_std_tools.skills.scripts import run_script, split_args

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


async def test_a_script_that_runs_too_long_is_killed_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    path = script(
        tmp_path,
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n",
    )
    started = time.monotonic()
    result = await run_script(path, [], time_limit=1.0, output_limit=1000)
    assert time.monotonic() - started < 10
    assert result.exit_code == -1
    assert result.timed_out
    assert "Timed out" in result.stderr and "DPTTOOLS_SANDBOX_TIMEOUT" in result.stderr
    assert result.stdout == "started\n"
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        await anyio.sleep(0.05)
    else:
        pytest.fail(f"the script's child process {child} is still running")


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
