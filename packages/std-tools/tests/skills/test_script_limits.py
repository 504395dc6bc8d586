"""Resource limits set in the script's process before exec, with or without bubblewrap:
a script over a limit ends with a message that names the limit and its setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from script_user_access import without_bwrap_as_root

from doc_processing_std_tools.skills.scripts.policy import ScriptPolicy
from doc_processing_std_tools.skills.scripts.run import run_script
from doc_processing_std_tools.skills.scripts.sandbox import sandbox_status

pytestmark = pytest.mark.anyio

MODES = [
    pytest.param("none", id="none", marks=without_bwrap_as_root),
    pytest.param(
        "bwrap",
        id="bwrap",
        marks=pytest.mark.skipif(
            sandbox_status().bwrap is None,
            reason="bubblewrap not installed: apt-get install bubblewrap",
        ),
    ),
]


def script(tmp_path: Path, source: str) -> Path:
    folder = tmp_path / "skill" / "scripts"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "limit.py"
    path.write_text(source, encoding="utf-8")
    return path


async def run(tmp_path: Path, source: str, mode: str, **limits: int) -> tuple[str, int]:
    path = script(tmp_path, source)
    policy = ScriptPolicy(sandbox="bwrap" if mode == "bwrap" else "none", **limits)  # type: ignore[arg-type]
    result = await run_script(
        path, [], time_limit=20, output_limit=4000, policy=policy, skill_dir=path.parent.parent
    )
    assert result.sandboxed == (mode == "bwrap")
    return result.stderr, result.exit_code


@pytest.mark.parametrize("mode", MODES)
async def test_allocating_2_gib_ends_with_the_memory_limit_message(
    tmp_path: Path, mode: str
) -> None:
    stderr, code = await run(tmp_path, "block = bytearray(2 * 1024**3)\nprint('allocated')\n", mode)
    assert code == 1
    assert "MemoryError" in stderr
    assert "address-space limit of 1024 MiB (DPTTOOLS_SCRIPT_MEMORY_MB)" in stderr


@pytest.mark.parametrize("mode", MODES)
async def test_writing_a_huge_file_ends_with_the_file_size_message(
    tmp_path: Path, mode: str
) -> None:
    source = (
        "import os\n"
        "with open(os.path.join(os.environ['TMPDIR'], 'huge.bin'), 'wb') as out:\n"
        "    for _ in range(64):\n"
        "        out.write(b'x' * 1024 * 1024)\n"
    )
    stderr, code = await run(tmp_path, source, mode, max_file_size_mb=4)
    assert code == 1
    assert "file size limit of 4 MiB per file (DPTTOOLS_SCRIPT_MAX_FILE_SIZE_MB)" in stderr


@pytest.mark.parametrize("mode", MODES)
async def test_spinning_on_the_cpu_ends_with_the_cpu_limit_message(
    tmp_path: Path, mode: str
) -> None:
    stderr, code = await run(tmp_path, "while True:\n    pass\n", mode, cpu_seconds=1)
    assert code < 0
    assert "exceeded the CPU limit of 1 CPU seconds (SIGXCPU" in stderr
    assert "DPTTOOLS_SCRIPT_CPU_SECONDS" in stderr
    assert not list((tmp_path / "skill").rglob("core*")), "a core file was left behind"


@pytest.mark.parametrize("mode", MODES)
async def test_opening_too_many_files_ends_with_the_open_files_message(
    tmp_path: Path, mode: str
) -> None:
    source = "import os\nkeep = [open(os.devnull) for _ in range(200)]\n"
    stderr, code = await run(tmp_path, source, mode, max_open_files=32)
    assert code == 1
    assert "limit of 32 open files (DPTTOOLS_SCRIPT_MAX_OPEN_FILES)" in stderr


# As root the script runs as DPTTOOLS_SCRIPT_USER, to which the limit applies.
@without_bwrap_as_root
async def test_a_fork_bomb_stops_at_the_process_limit(tmp_path: Path) -> None:
    source = (
        "import os, time\n"
        "children = []\n"
        "for _ in range(500):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        time.sleep(30)\n"
        "        os._exit(0)\n"
        "    children.append(pid)\n"
    )
    stderr, code = await run(tmp_path, source, "none", max_processes=16)
    assert code == 1
    assert "DPTTOOLS_SCRIPT_MAX_PROCESSES" in stderr


@without_bwrap_as_root
async def test_a_script_within_its_limits_is_not_told_about_them(tmp_path: Path) -> None:
    stderr, code = await run(tmp_path, "import sys\nsys.exit(4)\n", "none")
    assert (stderr, code) == ("", 4)
