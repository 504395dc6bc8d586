"""The process side of a skill script's run: its environment, its resource limits, the
descriptor its code is read from, and the last-resort sweep when its supervisor failed."""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import signal
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from .policy import ScriptPolicy

__all__ = [
    "BASE_ENV_NAMES",
    "BOOTSTRAP",
    "RUN_ID_VARIABLE",
    "kill_group",
    "kill_marked",
    "limits_for",
    "script_environment",
    "source_descriptor",
]

RUN_ID_VARIABLE: Final = "DPT_SKILL_RUN_ID"
"""Set in a script's environment to a value unique to the run.

Every process the script starts inherits it unless it empties its environment; the
server's last-resort sweep (when the supervisor itself fails) looks for it in /proc."""

BASE_ENV_NAMES: Final = ("PATH", "LANG", "LANGUAGE", "PYTHONIOENCODING")
"""Server variables every script receives (when set), besides every LC_* variable."""


def script_environment(
    environ: Mapping[str, str],
    policy: ScriptPolicy,
    *,
    home: str,
    run_id: str,
) -> dict[str, str]:
    """The whole environment of a script: the minimal set plus the allow-listed names.

    `home` becomes HOME and TMPDIR. Nothing else of `environ` is passed on. Python
    bytecode is off (PYTHONDONTWRITEBYTECODE, and PYTHONPYCACHEPREFIX under `home`): a
    ``.pyc`` shipped next to a source is never used.
    """
    env = {
        name: value
        for name, value in environ.items()
        if name in BASE_ENV_NAMES or name.startswith("LC_") or name in policy.env_allow
    }
    env.setdefault("PATH", os.defpath)
    env.setdefault("PYTHONIOENCODING", "utf-8")
    env["HOME"] = home
    env["TMPDIR"] = home
    # Bytecode off: none is written, and none found next to a source is used (Python
    # looks for it only under this empty prefix), so what runs is the source itself.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONPYCACHEPREFIX"] = f"{home.rstrip('/')}/.no-bytecode"
    if policy.workspace is not None:
        env["DPTTOOLS_WORKSPACE_DIR"] = str(policy.workspace)
    env[RUN_ID_VARIABLE] = run_id
    return env


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by `pid`: the supervisor and what is still in it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def kill_marked(run_id: str) -> int:
    """SIGKILL every process whose environment carries this run's id; return how many.

    The last resort when the supervisor failed. Linux only (elsewhere there is no /proc
    to read, and 0 is returned).
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


def _user_tasks(uid: int) -> int:
    """Processes and threads that `uid` runs now (RLIMIT_NPROC counts both, per user)."""
    count = 0
    try:
        entries = [entry for entry in Path("/proc").iterdir() if entry.name.isdigit()]
    except OSError:
        return 0
    for entry in entries:
        try:
            if entry.stat().st_uid != uid:
                continue
            stat = (entry / "stat").read_text("utf-8", "replace")
            count += int(stat.rsplit(")", 1)[1].split()[17])
        except (OSError, IndexError, ValueError):
            continue
    return count


def limits_for(policy: ScriptPolicy, time_limit: float, uid: int) -> dict[str, int]:
    """The resource limits of each process of a script that runs as `uid`."""
    mib = 1024 * 1024
    limits = {
        "as": policy.memory_mb * mib,
        "cpu": policy.cpu_seconds or max(1, math.ceil(time_limit)),
        "nofile": policy.max_open_files,
        "fsize": policy.max_file_size_mb * mib,
        # No core files: a script killed by SIGXCPU would otherwise leave one behind.
        "core": 0,
    }
    if uid != 0:
        # The kernel counts every process and thread of the user (root is exempt), so
        # the limit is what the user runs now plus the script's share.
        limits["nproc"] = _user_tasks(uid) + policy.max_processes
    return limits


def source_descriptor(source: bytes) -> int:
    """A descriptor holding `source`, read from its start; close it after the start.

    A sealed memory file where the system has them (nothing can change it afterwards), an
    unlinked temporary file elsewhere.
    """
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("skill-script", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    else:
        fd, name = tempfile.mkstemp(prefix="dpt-script-")
        Path(name).unlink()
    try:
        view = memoryview(source)
        while view:
            view = view[os.write(fd, view) :]
        if hasattr(os, "memfd_create"):
            seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals | fcntl.F_SEAL_WRITE)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


BOOTSTRAP: Final = """\
def _run():
    import os, sys
    fd, path = int(sys.argv[1]), sys.argv[2]
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    os.close(fd)
    del sys.argv[:2]
    sys.path[0] = os.path.dirname(path)
    main = sys.modules["__main__"].__dict__
    loader = sys.modules["_frozen_importlib_external"].SourceFileLoader("__main__", path)
    builtins = main["__builtins__"]
    main.clear()
    main.update(
        __name__="__main__", __doc__=None, __package__=None, __loader__=loader,
        __spec__=None, __annotations__={}, __builtins__=builtins, __file__=path,
        __cached__=None,
    )
    try:
        code = compile(b"".join(chunks), path, "exec", dont_inherit=True)
        del chunks
        exec(code, main)
    except Exception as exc:
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
            tb = tb.tb_next
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        sys.exit(1)
_run()
"""
"""What the script's interpreter runs (``python -c BOOTSTRAP FD PATH ARGS...``).

It reads the script's code from descriptor FD and closes it, then runs the code as
``__main__`` the way ``python PATH ARGS...`` would: the same ``__file__``, ``sys.argv``,
``sys.path[0]`` and module globals, a traceback that starts in the script (its own lines
left out), exit status 1 on an uncaught exception. Nothing of it stays in the script's
globals."""
