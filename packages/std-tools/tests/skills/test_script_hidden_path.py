"""A skill script under bubblewrap that fails on a file the sandbox hides (one that exists
on the host, in a folder such as /tmp or a home that the sandbox covers with an empty
one) gets one added line at the end of ``stderr`` naming the sandbox and how to let the
script see the file. A path that does not exist anywhere gets no such line, and neither
does a run without the sandbox.

The scripts are real and run under real bubblewrap. The test's folder lies under /tmp,
which the sandbox replaces with an empty folder; only the skill's own folder is bound back.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from script_user_access import without_bwrap_as_root

from doc_processing_std_tools.skills.scripts.policy import ScriptPolicy
from doc_processing_std_tools.skills.scripts.run import run_script
from doc_processing_std_tools.skills.scripts.sandbox import sandbox_status

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        sandbox_status().bwrap is None,
        reason="bubblewrap not installed: apt-get install bubblewrap",
    ),
]

READ_PY = "import sys\nprint(open(sys.argv[1], encoding='utf-8').read())\n"
"""Fails with Python's FileNotFoundError traceback when the file is not there."""

CAT = "import subprocess, sys\nsys.exit(subprocess.run(['cat', sys.argv[1]]).returncode)\n"
"""Fails with ``cat: PATH: No such file or directory``, as tools other than Python say it."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def skill_script(tmp_path: Path, source: str) -> Path:
    folder = tmp_path / "skill" / "scripts"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "read.py"
    path.write_text(source, encoding="utf-8")
    return path


async def run(tmp_path: Path, source: str, target: Path, **policy: object) -> tuple[str, int]:
    path = skill_script(tmp_path, source)
    result = await run_script(
        path,
        [str(target)],
        time_limit=20,
        output_limit=8000,
        policy=ScriptPolicy(**{"sandbox": "bwrap", **policy}),  # type: ignore[arg-type]
        skill_dir=path.parent.parent,
    )
    return result.stderr, result.exit_code


def assert_tmp_is_hidden(tmp_path: Path) -> None:
    if not str(tmp_path.resolve()).startswith("/tmp/"):
        pytest.skip("the test's folder is not under /tmp, which the sandbox hides")


@pytest.mark.parametrize("source", [READ_PY, CAT], ids=["python", "cat"])
async def test_a_file_the_sandbox_hides_gets_one_line_saying_how_to_allow_it(
    tmp_path: Path, source: str
) -> None:
    assert_tmp_is_hidden(tmp_path)
    data = tmp_path / "inbox" / "invoice.txt"
    data.parent.mkdir()
    data.write_text("Total: 10 EUR\n", encoding="utf-8")
    stderr, code = await run(tmp_path, source, data)
    assert code != 0
    lines = stderr.rstrip("\n").splitlines()
    assert "No such file or directory" in lines[-2], stderr
    note = lines[-1]
    assert str(data) in note
    assert "sandbox" in note and "bubblewrap" in note
    assert "DPTTOOLS_WORKSPACE_DIR" in note and "DPTTOOLS_SCRIPT_SANDBOX=none" in note
    assert sum("DPTTOOLS_WORKSPACE_DIR" in line for line in lines) == 1


@pytest.mark.parametrize("source", [READ_PY, CAT], ids=["python", "cat"])
async def test_a_path_that_does_not_exist_anywhere_gets_no_line(
    tmp_path: Path, source: str
) -> None:
    missing = tmp_path / "inbox" / "nowhere.txt"
    stderr, code = await run(tmp_path, source, missing)
    assert code != 0
    assert "No such file or directory" in stderr.rstrip("\n").splitlines()[-1], stderr
    assert "DPTTOOLS_WORKSPACE_DIR" not in stderr and "bubblewrap" not in stderr


async def test_a_file_in_the_workspace_is_seen_and_needs_no_line(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    data = workspace / "invoice.txt"
    data.write_text("Total: 10 EUR\n", encoding="utf-8")
    stderr, code = await run(tmp_path, READ_PY, data, workspace=workspace)
    assert code == 0, stderr
    assert stderr == ""


@without_bwrap_as_root
async def test_without_the_sandbox_a_missing_file_gets_no_line(tmp_path: Path) -> None:
    stderr, code = await run(tmp_path, READ_PY, tmp_path / "nowhere.txt", sandbox="none")
    assert code == 1
    assert "bubblewrap" not in stderr
