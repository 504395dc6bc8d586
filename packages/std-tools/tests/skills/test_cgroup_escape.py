"""A script cannot outlive its call by leaving the call's cgroup.

Without bubblewrap a script runs as the server's user, and where that user owns the
server's cgroup (a delegated group, as systemd gives each user session) the script can
write one of its processes into the server's group, out of the call's. The call's own
processes are killed with its group; the one that left is then an orphan of the server,
and the server's sweep after the call kills it too.

The test makes the move itself, with the real call group, the real start of a call and
the real sweep: the first process of the "call" starts a child that marks itself as every
script process is marked (no-new-privileges), writes itself into the server's group, and
stays; the first process exits."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest
from script_user_access import without_bwrap_as_root

from doc_processing_std_tools.skills.scripts._call import start_call, sweep_call
from doc_processing_std_tools.skills.scripts._cgroups import cgroup_support, open_call_group
from doc_processing_std_tools.skills.scripts._containment import call_start_ticks, contain_server
from doc_processing_std_tools.skills.scripts.policy import ScriptPolicy

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        cgroup_support().version is None,
        reason=f"no writable cgroup here: {cgroup_support().problem}",
    ),
]

_ESCAPE = """
import ctypes, os, sys, time
ready_read, ready_write = os.pipe()
child = os.fork()
if child == 0:
    ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)  # no-new-privileges, as every script process
    for folder in sys.argv[1:]:
        with open(os.path.join(folder, "cgroup.procs"), "w") as procs:
            procs.write(str(os.getpid()))
    os.write(ready_write, b"x")
    time.sleep(120)
    os._exit(0)
os.read(ready_read, 1)
print(child, flush=True)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _kill(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)


def _groups_of(pid: int) -> str:
    return Path(f"/proc/{pid}/cgroup").read_text()


@without_bwrap_as_root
async def test_a_process_that_left_the_calls_group_dies_with_the_call() -> None:
    contain_server()  # the server is the subreaper of its calls' orphans
    support = cgroup_support()
    run_id = uuid.uuid4().hex
    group = open_call_group(run_id, 256, 64)
    assert group is not None
    began, ticks = time.time(), call_start_ticks()
    command = [sys.executable, "-c", _ESCAPE, *map(str, support.parents)]
    process = await start_call(command, dict(os.environ), (), {}, group)
    escapee = 0
    try:
        assert process.stdout is not None
        escapee = int((await process.stdout.receive()).decode().split()[0])
        await process.wait()
        assert _alive(escapee)
        assert run_id not in _groups_of(escapee)  # it left the call's group
        killed = sweep_call(
            ScriptPolicy(sandbox="none"), group, process.pid, began, ticks, None, False
        )
        assert killed >= 1
        assert not _alive(escapee)
    finally:
        if escapee and _alive(escapee):
            _kill(escapee)
        await process.aclose()
