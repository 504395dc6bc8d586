"""Reading a skill script's run: its output, kept within bounds as it arrives
(`Capture`), the supervisor's report (`read_status`), and the sentence saying which limit
ended a script (`describe_end`)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from anyio.abc import ByteReceiveStream

from ..._text import truncate

if TYPE_CHECKING:
    from .policy import ScriptPolicy

__all__ = ["Capture", "describe_end", "read_status"]

_CHUNK: Final = 65536
_TAIL: Final = 4096


class Capture:
    """Keeps the first bytes of a stream that can possibly be shown, and its last bytes."""

    def __init__(self, limit_chars: int) -> None:
        # UTF-8 needs at most 4 bytes per character; one extra byte makes sure that a
        # stream that was cut decodes to more than `limit_chars` and is marked as cut.
        self._cap = limit_chars * 4 + 4
        self._chunks: list[bytes] = []
        self._kept = 0
        self._tail = b""

    async def drain(self, stream: ByteReceiveStream) -> None:
        """Read `stream` to its end, keeping only the bytes that may be shown."""
        async for chunk in stream:
            room = self._cap - self._kept
            if room > 0:
                piece = chunk[:room]
                self._chunks.append(piece)
                self._kept += len(piece)
            self._tail = (self._tail + chunk)[-_TAIL:]

    @property
    def tail(self) -> str:
        """The last few KiB of the stream (uncut), to recognise how the script failed."""
        return self._tail.decode("utf-8", errors="replace")

    def text(self, limit_chars: int, hint: str) -> str:
        """The kept bytes as text, cut at `limit_chars` with a marker naming `hint`."""
        data = b"".join(self._chunks).decode("utf-8", errors="replace")
        return truncate(data, limit_chars, hint=hint)


def describe_end(
    status: Mapping[str, Any], err_tail: str, policy: ScriptPolicy, cpu_limit: int
) -> str | None:
    """A sentence saying which limit ended the script, or None when none did."""
    signum = status.get("signal")
    if signum == signal.SIGXCPU or (
        signum == signal.SIGKILL and float(status.get("cpu_seconds", 0)) >= cpu_limit
    ):
        return (
            f"Killed: the script exceeded the CPU limit of {cpu_limit} CPU seconds "
            "(SIGXCPU; DPTTOOLS_SCRIPT_CPU_SECONDS, by default the timeout)."
        )
    if signum == signal.SIGXFSZ or "[Errno 27] File too large" in err_tail:
        return (
            f"Stopped: the script reached the file size limit of {policy.max_file_size_mb} MiB "
            "per file (DPTTOOLS_SCRIPT_MAX_FILE_SIZE_MB)."
        )
    if "MemoryError" in err_tail or "Cannot allocate memory" in err_tail:
        return (
            f"MemoryError: the script reached the address-space limit of {policy.memory_mb} "
            "MiB (DPTTOOLS_SCRIPT_MEMORY_MB)."
        )
    if "[Errno 28] No space left on device" in err_tail:
        return (
            "Stopped: no space left. Under bubblewrap /tmp holds "
            f"{policy.max_file_size_mb} MiB (DPTTOOLS_SCRIPT_MAX_FILE_SIZE_MB) and /dev/shm a "
            "quarter of that, and one call "
            f"may change {policy.max_changed_files} files and {policy.max_changed_mb} MiB in "
            "the workspace (DPTTOOLS_SCRIPT_MAX_CHANGED_FILES, DPTTOOLS_SCRIPT_MAX_CHANGED_MB)."
        )
    if "[Errno 24] Too many open files" in err_tail:
        return (
            f"Stopped: the script reached the limit of {policy.max_open_files} open files "
            "(DPTTOOLS_SCRIPT_MAX_OPEN_FILES)."
        )
    if "[Errno 11] Resource temporarily unavailable" in err_tail and "fork" in err_tail:
        return (
            "Stopped: the script could not start another process; the process limit "
            "(DPTTOOLS_SCRIPT_MAX_PROCESSES) was reached."
        )
    if isinstance(signum, int):
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return f"Killed by {name}."
    return None


def read_status(fd: int) -> dict[str, Any]:
    """The supervisor's report (``name=value`` lines), or {} when it wrote none."""
    chunks: list[bytes] = []
    os.set_blocking(fd, False)
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
    status: dict[str, Any] = {}
    for line in b"".join(chunks).decode("ascii", "replace").splitlines():
        name, _, value = line.partition("=")
        if name in ("exit_code", "signal", "killed"):
            status[name] = int(value)
        elif name == "cpu_seconds":
            status[name] = float(value)
        elif name in ("stopped", "reason"):
            status[name] = value
    return status
