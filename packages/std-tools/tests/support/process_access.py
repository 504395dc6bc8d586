"""What another process of the same user can see of a process: for the tests that check
that the servers, their workers and the agent's host process are not dumpable.

A skill script without bubblewrap runs as the server's user; a dumpable process of that
user lets it read ``/proc/<pid>/environ`` and open ``/proc/<pid>/fd/*``. Root may read
them anyway (CAP_SYS_PTRACE), so when the tests run as root, both the process looked at
and the one looking are started without capabilities (``setpriv``): the kernel then
applies the same rule to them as to two processes of one ordinary user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

_DROP = ["--bounding-set=-all", "--inh-caps=-all"]


def as_plain_user(command: list[str]) -> list[str]:
    """`command` started without capabilities when the tests run as root, else as is."""
    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to drop root's capabilities")
    return [setpriv, *_DROP, *command]


_PEEK = """
import sys
pid = sys.argv[1]
found = []
try:
    with open(f"/proc/{pid}/environ", "rb") as handle:
        found.append("environ:" + handle.read().decode("utf-8", "replace").replace("\\0", " "))
except OSError as exc:
    found.append(f"environ-refused:{exc.errno}")
try:
    with open(f"/proc/{pid}/fd/0", "wb"):
        found.append("stdin-opened")
except OSError as exc:
    found.append(f"stdin-refused:{exc.errno}")
print("\\n".join(found))
"""


def peek(pid: int) -> str:
    """What a process of the same user, without privileges, gets of process `pid`:
    ``environ:...`` or ``environ-refused:ERRNO``, and ``stdin-opened`` or
    ``stdin-refused:ERRNO`` (its standard input opened for writing)."""
    done = subprocess.run(
        as_plain_user([sys.executable, "-c", _PEEK, str(pid)]),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def command_line(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
