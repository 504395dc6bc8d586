"""The link swapper of the link-race attack tests: a child process that keeps exchanging a
file or folder with a symbolic link to somewhere else, and back, until it is killed.

renameat2(RENAME_EXCHANGE) exchanges the two names in one step, so the name is never
missing and the code under attack never recreates it. Where the call is not available the
test skips, saying so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from doc_processing_std_tools.errors import StdToolsError

#: How long each attack runs (RACE_SECONDS overrides it for a longer hunt), and the most
#: calls it makes.
SECONDS = float(os.environ.get("RACE_SECONDS", "1.5"))
MAX_CALLS = 20_000


#: What the outside content of every attack holds, and no answer may show.
MARKER = "never shown"


def hammer(call: Callable[[], str], marker: str = MARKER) -> tuple[int, int, list[str]]:
    """Call `call` until time or count runs out: (calls, refusals, answers holding `marker`)."""
    calls = refused = 0
    leaks: list[str] = []
    deadline = time.monotonic() + SECONDS
    while calls < MAX_CALLS and time.monotonic() < deadline:
        calls += 1
        try:
            text = call()
        except StdToolsError as exc:
            refused += 1
            text = str(exc)
        except OSError as exc:  # the swapper's half-done state: a name briefly missing
            refused += 1
            text = str(exc)
        if marker in text:
            leaks.append(text)
    return calls, refused, leaks


_SWAPPER = r"""
import ctypes, os, sys
victim, target = sys.argv[1:3]
link = victim + ".swaplink"
os.symlink(target, link)
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
def exchange():
    if libc.renameat2(AT_FDCWD, victim.encode(), AT_FDCWD, link.encode(), RENAME_EXCHANGE):
        raise OSError(ctypes.get_errno(), "renameat2")
try:
    exchange()
    exchange()
except (OSError, AttributeError) as exc:
    print("unsupported", exc, flush=True)
    sys.exit(0)
print("ready", flush=True)
while True:
    exchange()
"""


@contextmanager
def swapping(victim: Path, target: Path) -> Iterator[None]:
    """Swap `victim` with a symbolic link to `target`, and back, for the duration of the
    block; the block fails if the swapper stopped before it ended."""
    child = subprocess.Popen(
        [sys.executable, "-c", _SWAPPER, str(victim), str(target)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        first = child.stdout.readline().strip()
        if first.startswith("unsupported"):
            pytest.skip(f"renameat2(RENAME_EXCHANGE) is not available here: {first}")
        assert first == "ready", child.stderr.read() if child.stderr else first
        yield
        assert child.poll() is None, (
            "the swapper stopped before the attack ended: "
            f"{child.stderr.read() if child.stderr else ''}"
        )
    finally:
        child.kill()
        child.wait()
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
