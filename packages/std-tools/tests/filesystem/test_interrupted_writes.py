"""Attack: a server killed with SIGKILL in the middle of a write.

A real child process writes a large file and is killed while its temporary file is being
filled. What it leaves behind must be cleaned by the next write to that folder, and only
what matches the server's own temporary-file pattern may ever be deleted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from doc_processing_std_tools.filesystem import operations as ops
from doc_processing_std_tools.filesystem.operations import Workspace

# 96 MB: long enough to be caught half-written.
_BIG_WRITE = r"""
import sys
from doc_processing_std_tools.config import load_settings
from doc_processing_std_tools.filesystem import operations as ops
from doc_processing_std_tools.filesystem.operations import Workspace
settings = load_settings(
    {"DPTTOOLS_WORKSPACE_DIR": sys.argv[1], "DPTTOOLS_MAX_FILE_SIZE_MB": "200"}
)
content = "x" * (96 * 1024 * 1024)
print("writing", flush=True)
ops.write_file(Workspace.from_settings(settings), "new/deeper/big.txt", content)
print("finished", flush=True)
"""


def _temporaries(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.name.endswith(".tmp"))


def _kill_mid_write(root: Path) -> list[Path]:
    """Start the big write in a child, SIGKILL it once a temporary file exists; what is left."""
    child = subprocess.Popen(
        [sys.executable, "-c", _BIG_WRITE, str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "writing"
    deadline = time.monotonic() + 20
    while not _temporaries(root):
        assert child.poll() is None, "the write ended before it could be interrupted"
        assert time.monotonic() < deadline, "no temporary file appeared"
        time.sleep(0.001)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    return _temporaries(root)


@pytest.mark.timeout(60)
def test_a_write_killed_midway_is_cleaned_by_the_next_write(ws: Workspace, root: Path) -> None:
    leftovers = _kill_mid_write(root)
    assert leftovers, "the kill left nothing to clean: the attack proved nothing"
    assert not (root / "new" / "deeper" / "big.txt").exists()
    # Not ours: an editor's swap file and a temporary file named in another pattern.
    foreign = [root / ".big.txt.ab12cd.tmp", root / ".notes.md.dpt-x.tmp", root / "keep.tmp"]
    for path in foreign:
        path.write_text("someone else's", encoding="utf-8")

    ops.write_file(ws, "after.txt", "next write")

    assert _temporaries(root) == sorted(foreign)
    # No folder was left holding nothing but a temporary file.
    assert not (root / "new").exists() or any((root / "new").rglob("big.txt"))
    assert (root / "after.txt").read_text(encoding="utf-8") == "next write"
