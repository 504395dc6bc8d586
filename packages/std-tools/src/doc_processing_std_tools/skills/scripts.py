"""Run a skill's Python script: the server's own interpreter, the script's own folder.

The script runs in a new process group, never through a shell. When it outlives its
timeout the whole group (the script and every process it started that stayed in the
group) is killed. Output is read as it arrives, and only the part that can be shown is
kept, so a script that prints without end costs bounded memory.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream

from .._text import truncate
from ..errors import InvalidArgumentError

__all__ = ["ScriptResult", "run_script", "split_args"]

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
        InvalidArgumentError: the quoting is unbalanced.
    """
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
        async for chunk in stream:
            room = self._cap - self._kept
            if room > 0:
                piece = chunk[:room]
                self._chunks.append(piece)
                self._kept += len(piece)

    def text(self, limit_chars: int, hint: str) -> str:
        data = b"".join(self._chunks).decode("utf-8", errors="replace")
        return truncate(data, limit_chars, hint=hint)


def _kill_group(process: anyio.abc.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    except AttributeError:  # no process groups on this platform
        process.kill()


async def run_script(
    script: Path, argv: list[str], *, time_limit: float, output_limit: int
) -> ScriptResult:
    """Run `script` with `argv` using ``sys.executable``, in the script's folder.

    Standard input is empty. After `time_limit` seconds the process group is killed and the
    result has ``exit_code`` -1 and a timeout message at the end of ``stderr``. ``stdout``
    and ``stderr`` are each cut at `output_limit` characters.
    """
    env = dict(os.environ)
    env.setdefault("PYTHONIOENCODING", "utf-8")
    command = [sys.executable, str(script), *argv]
    logger.debug("running skill script %s with %d argument(s)", script, len(argv))
    out = _Capture(output_limit)
    err = _Capture(output_limit)
    timed_out = False
    process = await anyio.open_process(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=script.parent,
        env=env,
        start_new_session=True,
    )
    try:
        with anyio.move_on_after(time_limit) as scope:
            async with anyio.create_task_group() as group:
                assert process.stdout is not None and process.stderr is not None
                group.start_soon(out.drain, process.stdout)
                group.start_soon(err.drain, process.stderr)
            await process.wait()
        if scope.cancelled_caught:
            timed_out = True
            _kill_group(process)
            with anyio.move_on_after(_REAP_SECONDS, shield=True):
                await process.wait()
    finally:
        if process.returncode is None:
            _kill_group(process)
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
