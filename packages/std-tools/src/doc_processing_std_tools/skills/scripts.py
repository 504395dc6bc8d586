"""Run a skill's Python script: the server's own interpreter, the script's own folder.

The script runs in a new process group, never through a shell. When it ends, or when it
outlives its timeout, the whole group is killed, and so (on Linux) is every process that
carries the run's id in its environment, which catches children that left the group.
Nothing a script starts outlives the call. Output is read as it arrives, and only the
part that can be shown is kept, so a script that prints without end costs bounded memory.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream

from .._text import truncate
from ..errors import InvalidArgumentError

__all__ = ["RUN_ID_VARIABLE", "ScriptResult", "run_script", "split_args"]

logger = logging.getLogger(__name__)

_CHUNK: Final = 65536
_REAP_SECONDS: Final = 5.0


@dataclass(frozen=True, slots=True)
class ScriptResult:
    """What a script run produced."""

    stdout: str
    """Standard output, cut at the output limit with a visible marker."""
    stderr: str
    """Standard error, cut the same way; holds the timeout message when it timed out."""
    exit_code: int
    """The process exit status; -1 when it was killed for running too long."""
    timed_out: bool = False
    """True when the timeout killed the script."""

    def to_payload(self) -> dict[str, str | int]:
        """The JSON object `execute_skill_script` returns."""
        return {"stdout": self.stdout, "stderr": self.stderr, "exit_code": self.exit_code}


def split_args(args: str) -> list[str]:
    """Split `args` with POSIX shell rules (quotes group words; nothing is expanded).

    Raises:
        InvalidArgumentError: the quoting is unbalanced, or a NUL character (which no
            command-line argument can hold) is present.
    """
    if "\x00" in args:
        raise InvalidArgumentError(
            "args contains a NUL character, which a command-line argument cannot hold; "
            "pass plain text, or write binary data to a file and pass its path."
        )
    try:
        return shlex.split(args, posix=True)
    except ValueError as exc:
        raise InvalidArgumentError(
            f"args {args!r} cannot be split into arguments ({exc}); close every quote, "
            'for example: --input "my invoice.json".'
        ) from None


class _Capture:
    """Keeps the first bytes of a stream that can possibly be shown, counts the rest."""

    def __init__(self, limit_chars: int) -> None:
        # UTF-8 needs at most 4 bytes per character; one extra byte makes sure that a
        # stream that was cut decodes to more than `limit_chars` and is marked as cut.
        self._cap = limit_chars * 4 + 4
        self._chunks: list[bytes] = []
        self._kept = 0

    async def drain(self, stream: ByteReceiveStream) -> None:
        """Read `stream` to its end, keeping only the bytes that may be shown."""
        async for chunk in stream:
            room = self._cap - self._kept
            if room > 0:
                piece = chunk[:room]
                self._chunks.append(piece)
                self._kept += len(piece)

    def text(self, limit_chars: int, hint: str) -> str:
        """The kept bytes as text, cut at `limit_chars` with a marker naming `hint`."""
        data = b"".join(self._chunks).decode("utf-8", errors="replace")
        return truncate(data, limit_chars, hint=hint)


RUN_ID_VARIABLE: Final = "DPT_SKILL_RUN_ID"
"""Set in a script's environment to a value unique to the run.

Every process the script starts inherits it, so the processes of a run can be found
(on Linux, through /proc) even after they left the script's process group."""


def _kill_group(pid: int) -> None:
    """SIGKILL the process group led by `pid`: the script and every child still in it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _kill_marked(run_id: str) -> int:
    """SIGKILL every process whose environment carries this run's id; return how many.

    Catches what a process group misses: a child that called setsid() or otherwise left
    the group. Linux only (elsewhere there is no /proc to read, and 0 is returned).
    """
    marker = f"{RUN_ID_VARIABLE}={run_id}".encode()
    me = os.getpid()
    killed = 0
    try:
        with os.scandir("/proc") as entries:
            pids = [int(e.name) for e in entries if e.name.isdigit() and int(e.name) != me]
    except OSError:
        return 0
    for pid in pids:
        # A pidfd pins the process before its environment is read, so a pid reused by an
        # unrelated process in between is never signalled.
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read()
            if marker in environ.split(b"\0"):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                killed += 1
        except OSError:
            continue
        finally:
            os.close(pidfd)
    return killed


def _kill_run(pid: int, run_id: str) -> None:
    """Kill the script's process group and every process marked with its run id."""
    _kill_group(pid)
    killed = _kill_marked(run_id)
    if killed:
        logger.debug("killed %d process(es) that had left the skill script's group", killed)


async def run_script(
    script: Path, argv: list[str], *, time_limit: float, output_limit: int
) -> ScriptResult:
    """Run `script` with `argv` using ``sys.executable``, in the script's folder.

    Standard input is empty. Nothing the script starts outlives the run: when the script
    ends, or after `time_limit` seconds, its process group and every process carrying its
    run id (`RUN_ID_VARIABLE`) are killed. On timeout the result has ``exit_code`` -1 and
    a timeout message at the end of ``stderr``. ``stdout`` and ``stderr`` are each cut at
    `output_limit` characters.
    """
    run_id = uuid.uuid4().hex
    env = dict(os.environ)
    env.setdefault("PYTHONIOENCODING", "utf-8")
    env[RUN_ID_VARIABLE] = run_id
    command = [sys.executable, str(script), *argv]
    logger.debug("running skill script %s with %d argument(s)", script, len(argv))
    out = _Capture(output_limit)
    err = _Capture(output_limit)
    drained = anyio.Event()
    process = await anyio.open_process(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=script.parent,
        env=env,
        start_new_session=True,
    )

    async def drain_both() -> None:
        assert process.stdout is not None and process.stderr is not None
        async with anyio.create_task_group() as readers:
            readers.start_soon(out.drain, process.stdout)
            readers.start_soon(err.drain, process.stderr)
        drained.set()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(drain_both)
            with anyio.move_on_after(time_limit) as scope:
                await process.wait()
            timed_out = scope.cancelled_caught
            # The script is over, or out of time: whatever it started goes with it. That
            # also closes the output pipes a leftover process would otherwise hold open.
            _kill_run(process.pid, run_id)
            with anyio.move_on_after(_REAP_SECONDS):
                await drained.wait()
            group.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            _kill_run(process.pid, run_id)
        with anyio.move_on_after(_REAP_SECONDS, shield=True):
            await process.aclose()
    hint = "the script's output was cut at DPTTOOLS_OUTPUT_TRUNCATION_LIMIT"
    stderr = err.text(output_limit, hint)
    if timed_out:
        logger.warning("skill script %s timed out after %s s", script, time_limit)
        message = (
            f"Timed out: the script ran longer than {time_limit:g} seconds "
            "(DPTTOOLS_SANDBOX_TIMEOUT) and was killed with every process it started."
        )
        stderr = f"{stderr}\n{message}" if stderr else message
        return ScriptResult(out.text(output_limit, hint), stderr, -1, timed_out=True)
    code = process.returncode if process.returncode is not None else -1
    return ScriptResult(out.text(output_limit, hint), stderr, code)
