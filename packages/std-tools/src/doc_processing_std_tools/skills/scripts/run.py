"""Run a skill's Python script: the server's own interpreter, the script's own folder, and
nothing of the server's that the script was not given.

A run, step by step:

1. The script is opened once, without following a link by name (`ScriptFile`, made by
   the caller through `_io`, or here for a plain path), and its code is read. What runs
   is that code: the script's interpreter gets it through an inherited descriptor (a
   sealed memory file) from a few lines of bootstrap (`BOOTSTRAP`), which set
   ``__file__``, ``sys.argv[0]`` and ``sys.path[0]`` as ``python script.py`` would and run
   it as ``__main__``. The script's folder, opened during the same walk, is entered by
   descriptor (without bubblewrap) or checked by device and inode (under it); the skill's
   folder is bound into bubblewrap from its descriptor. A link swapped in after the check
   therefore changes nothing: the checked file runs, or nothing does.
2. The environment is built from scratch (`script_environment`): PATH, LANG and LC_*,
   PYTHONIOENCODING, a fresh HOME and TMPDIR, the run id, DPTTOOLS_WORKSPACE_DIR when it
   is set, and only the server variables named in DPTTOOLS_SCRIPT_ENV. API keys and other
   secrets in the server's environment never reach a script.
3. With DPTTOOLS_SCRIPT_SANDBOX=auto (bubblewrap works) or bwrap, the run is wrapped in
   bubblewrap (`sandbox.bwrap_command`): read-only file system, hidden homes, no network,
   no capability, no nested user namespace. The script never writes the workspace: it
   sees it through an overlay without its secrets, its changes land in a bounded layer
   inside the sandbox, and after the call the server applies them by the change policy
   (`_staging.apply_changes`; `ScriptPolicy.changes`), reporting what was applied and
   what was held back and why (`ScriptResult.changes`). For a request whose token lacks
   the ``write`` scope the view is read-only; the scopes come with the request
   (`access.current_scopes`). Without bubblewrap nothing can keep a script from writing,
   so a token without ``write`` runs no script there (`SandboxUnavailableError`, before
   anything starts). At most DPTTOOLS_SCRIPT_MAX_CALLS calls run at once; the others
   wait their turn.
4. The small supervisor (`_supervisor.py`, started with the server's interpreter) becomes
   the subreaper of everything the script starts, sets the resource limits and
   no-new-privileges in the child before exec, enforces the timeout, and after the
   script ends kills whatever it left running, before it reports how the script ended.
   A server running as root runs scripts as DPTTOOLS_SCRIPT_USER (`_containment`): the
   supervisor's child drops to it (under bubblewrap too, which starts as root). The first run
   makes the server's process non-dumpable and a child subreaper. Where a cgroup can be
   made, the call runs in one of its own (`_cgroups`), entered before anything runs
   (`_script_call.start_call`); after the call, what is left in it, or without one the
   orphans that came to the server, is killed, and, without bubblewrap, set-user/group-ID
   bits are cleared in the writable workspace (`_script_call.sweep_call`). Python runs
   with bytecode off: none is written, and a ``.pyc`` shipped next to a source is never
   used.
5. Output is read as it arrives, and only the part that can be shown is kept, so a script
   that prints without end costs bounded memory. A script that hit a limit gets a message
   at the end of ``stderr`` naming the limit and its setting; one that failed under
   bubblewrap on a file the sandbox hides, a line saying so (`_hidden_note.hidden_path_note`).

If the supervisor dies without a report, or stops answering a grace period past the
timeout, the server kills its process group and every process carrying the run id
(`RUN_ID_VARIABLE`).
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import anyio
import anyio.lowlevel
import anyio.to_thread

from ... import _io
from ..._notices import notice
from ..._tracing import note_script
from ...errors import InvalidArgumentError, NotFoundError
from ._call import IN_FLIGHT, memory_note, open_group, start_call, sweep_call
from ._containment import (
    call_start_ticks,
    contain_server,
    permission_note,
    script_user,
)
from ._hidden_note import hidden_path_note
from ._launch import SUPERVISOR, apply_layer, prepare, received_layer
from ._output import Capture, describe_end, read_status
from ._process import (
    BASE_ENV_NAMES,
    BOOTSTRAP,
    RUN_ID_VARIABLE,
    kill_group,
    kill_marked,
    script_environment,
)
from ._staging import Changes
from .policy import OpenFolder, ScriptFile, ScriptPolicy
from .sandbox import (
    SandboxUnavailableError,
)

__all__ = [
    "BASE_ENV_NAMES",
    "BOOTSTRAP",
    "RUN_ID_VARIABLE",
    "ScriptResult",
    "run_script",
    "script_environment",
    "split_args",
]

logger = logging.getLogger(__name__)

_REAP_SECONDS: Final = 5.0
_GRACE_SECONDS: Final = 5.0
#: Under bubblewrap, /tmp holds up to this many files of the largest size allowed.


@dataclass(frozen=True, slots=True)
class ScriptResult:
    """What a script run produced."""

    stdout: str
    """Standard output, cut at the output limit with a visible marker."""
    stderr: str
    """Standard error, cut the same way; ends with the timeout or limit message, if any."""
    exit_code: int
    """The exit status; -N when signal N ended it; -1 when it was killed for running too
    long."""
    timed_out: bool = False
    """True when the timeout killed the script."""
    sandboxed: bool = field(default=False, compare=False)
    """True when the script ran under bubblewrap."""
    changes: Changes | None = field(default=None, compare=False)
    """What became of the script's changes to the workspace (under bubblewrap with a
    writable workspace), or None."""

    def to_payload(self, room: int = 4000) -> dict[str, object]:
        """The JSON object `execute_skill_script` returns; the lists of changed paths take
        about `room` characters at most."""
        payload: dict[str, object] = {
            "stdout": self.stdout,
            "stderr": self.stderr,
            "exit_code": self.exit_code,
        }
        if self.changes is not None and (
            self.changes.applied or self.changes.held or self.changes.refused
        ):
            payload["changes"] = self.changes.to_payload(room)
        return payload


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


@contextmanager
def _open_path(script: Path) -> Iterator[ScriptFile]:
    """`script`, given by a caller that trusts the path, opened like a checked script."""
    real = Path(os.path.realpath(script))
    shown = f"script {str(real)!r}"
    with _io.locate(real.parent, real.name, what="script", exact=True) as location:
        source, _ = _io.read_at(
            location,
            shown=shown,
            limit=sys.maxsize,
            missing=NotFoundError(f"{shown} does not exist; pass the path of a Python file."),
            folder=InvalidArgumentError(f"{shown} is a folder; pass the path of a Python file."),
        )
        yield ScriptFile(real, source, OpenFolder(real.parent, location.dir_fd))


_LIMITER: list[tuple[object, int, anyio.CapacityLimiter]] = []


def _call_limiter(size: int) -> anyio.CapacityLimiter:
    """The limiter of concurrent script calls of this event loop (DPTTOOLS_SCRIPT_MAX_CALLS)."""
    token = anyio.lowlevel.current_token()
    if not _LIMITER or _LIMITER[0][0] != token or _LIMITER[0][1] != size:
        _LIMITER[:] = [(token, size, anyio.CapacityLimiter(size))]
    return _LIMITER[0][2]


async def run_script(
    script: Path | ScriptFile,
    argv: list[str],
    *,
    time_limit: float,
    output_limit: int,
    policy: ScriptPolicy | None = None,
    skill_dir: Path | None = None,
) -> ScriptResult:
    """Run `script` with `argv` using ``sys.executable``, in the script's folder.

    `script` is a `ScriptFile` its caller checked and opened, or a path the caller trusts
    (opened here the same way, links resolved first). `policy` (default: `ScriptPolicy()`,
    the settings' defaults) says what the script may see and use; bubblewrap shows it the
    `ScriptFile`'s skill folder read-only, or for a path `skill_dir` (default: the script's
    folder). Standard input is empty. Nothing the script starts outlives the run. On
    timeout the result has ``exit_code`` -1 and a timeout message at the end of
    ``stderr``; a script stopped by a limit gets a message naming it. ``stdout`` and
    ``stderr`` are each cut at `output_limit` characters.

    The request being served narrows `policy` (`ScriptPolicy.for_this_call`): for a
    token without ``write`` the workspace is read-only under bubblewrap.

    Raises:
        SandboxUnavailableError: the policy asks for bubblewrap and it cannot be used, or
            the request's token lacks ``write`` and bubblewrap cannot be used (nothing ran).
        InvalidArgumentError: the script's folder was replaced (a symbolic link swapped in)
            while the run started; nothing ran.
        NotFoundError, InvalidArgumentError, NotRegularFileError: a `script` path that is
            missing, a folder, or not a regular file.
    """
    if isinstance(script, ScriptFile):
        return await _run_checked(script, argv, time_limit, output_limit, policy, skill_dir)
    with _open_path(script) as opened:
        return await _run_checked(opened, argv, time_limit, output_limit, policy, skill_dir)


async def _run_checked(
    script: ScriptFile,
    argv: list[str],
    time_limit: float,
    output_limit: int,
    policy: ScriptPolicy | None,
    skill_dir: Path | None,
) -> ScriptResult:
    """`run_script` for a script already opened; the descriptors stay its caller's."""
    policy = (policy or ScriptPolicy()).for_this_call()
    async with _call_limiter(policy.max_calls):
        return await _run_now(script, argv, time_limit, output_limit, policy, skill_dir)


async def _run_now(
    script: ScriptFile,
    argv: list[str],
    time_limit: float,
    output_limit: int,
    policy: ScriptPolicy,
    skill_dir: Path | None,
) -> ScriptResult:
    """`_run_checked` once the call's turn has come."""
    contain_server()
    user = script_user(policy.user)
    # The first call also probes bubblewrap (a short subprocess): off the event loop.
    launch = await anyio.to_thread.run_sync(prepare, script, policy, skill_dir, time_limit, user)
    limits, temp_home = launch.limits, launch.temp_home
    sandboxed = bool(launch.prefix)
    cpu_limit = limits["cpu"]
    run_id = uuid.uuid4().hex
    began, began_ticks = time.time(), call_start_ticks()
    call_group = open_group(run_id, policy)
    env = script_environment(os.environ, policy, home=temp_home or "/tmp", run_id=run_id)
    layer: int | None = None
    settings: dict[str, float | str] = {"time_limit": time_limit, **launch.settings}
    if not sandboxed:
        settings["parent"] = os.getpid()
    status_read, status_write = os.pipe()
    command = [
        *launch.prefix,
        sys.executable,
        "-I",
        "-S",
        str(SUPERVISOR),
        str(status_write),
        ",".join(f"{name}={value}" for name, value in settings.items()),
        "--",
        sys.executable,
        "-B",
        "-c",
        BOOTSTRAP,
        str(launch.source_fd),
        str(script.path),
        *argv,
    ]
    logger.debug(
        "running skill script %s with %d argument(s)%s",
        script.path,
        len(argv),
        " under bubblewrap" if sandboxed else "",
    )
    out = Capture(output_limit)
    err = Capture(output_limit)
    drained = anyio.Event()
    # bubblewrap starts as the server's user, which opens every path (see sandbox.py);
    # the supervisor drops to the script's user. Without it the supervisor drops too.
    try:
        process = await start_call(command, env, (status_write, *launch.pass_fds), call_group)
    finally:
        os.close(status_write)
        for fd in launch.close_after:
            os.close(fd)
    IN_FLIGHT.add(process.pid)

    async def drain_both() -> None:
        assert process.stdout is not None and process.stderr is not None
        async with anyio.create_task_group() as readers:
            readers.start_soon(out.drain, process.stdout)
            readers.start_soon(err.drain, process.stderr)
        drained.set()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(drain_both)
            # The supervisor enforces the time limit; the grace period is for a
            # supervisor that stopped answering.
            with anyio.move_on_after(time_limit + _GRACE_SECONDS) as scope:
                await process.wait()
            stuck = scope.cancelled_caught
            # The report is written before the supervisor exits, so it is complete now.
            status = {} if stuck else read_status(status_read)
            if not status:
                # The supervisor is stuck, or died without a report (killed by someone,
                # or by the script itself when it runs unsandboxed): sweep what can still
                # be found of the run before waiting for its output to end.
                logger.error(
                    "the supervisor of skill script %s failed; killing the run", script.path
                )
                kill_group(process.pid)
                kill_marked(run_id)
            with anyio.move_on_after(_REAP_SECONDS):
                await drained.wait()
            group.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            kill_group(process.pid)
            kill_marked(run_id)
        with anyio.move_on_after(_REAP_SECONDS, shield=True):
            await process.aclose()
        os.close(status_read)
        IN_FLIGHT.discard(process.pid)
        with anyio.CancelScope(shield=True):
            left = await anyio.to_thread.run_sync(
                sweep_call, policy, call_group, process.pid, began, began_ticks, user, sandboxed
            )
        if temp_home is not None:
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(temp_home, ignore_errors=True))
        if launch.stage is not None:
            # Every process of the call has ended: the layer holds all it changed.
            layer = received_layer(launch.stage)
    changes = None
    if layer is not None:
        changes = await anyio.to_thread.run_sync(apply_layer, layer, policy)
    if status.get("stopped") == "view":
        raise SandboxUnavailableError(
            "bubblewrap started, but the script's view of the workspace could not be built "
            f"({status.get('reason', 'no reason given')}); nothing ran. Check that the kernel "
            "allows overlayfs and tmpfs mounts in the sandbox (Linux 5.11 or later), or "
            "set DPTTOOLS_SCRIPT_SANDBOX=none to run scripts without bubblewrap."
        )
    if left:
        logger.warning("killed %d process(es) skill script %s left behind", left, script.path)
    memory = memory_note(call_group, policy)
    hint = "the script's output was cut at DPTTOOLS_OUTPUT_TRUNCATION_LIMIT"
    stdout = out.text(output_limit, hint)
    stderr = err.text(output_limit, hint)
    if memory:
        stderr = f"{stderr}\n{memory}" if stderr else memory
        notice(logger, logging.WARNING, f"skill script {script.path.name}: {memory}")
    if not status:
        if stuck:
            message = (
                f"Killed: the script outlived the time limit of {time_limit:g} seconds "
                "(DPTTOOLS_SANDBOX_TIMEOUT) and its supervisor did not answer, so its process "
                "group and every process carrying its run id were killed."
            )
        else:
            runner = "bubblewrap" if sandboxed else "the script's supervisor"
            message = (
                f"No result: {runner} ended with status {process.returncode} without "
                "reporting how the script ended (it could not start the script, or was "
                "killed); what was left of the run was killed. The lines above may say why."
            )
        stderr = f"{stderr}\n{message}" if stderr else message
        note_script(-1, sandboxed)
        return ScriptResult(
            stdout, stderr, -1, timed_out=stuck, sandboxed=sandboxed, changes=changes
        )
    # Exactly this report, with nothing of a run after it (the supervisor adds
    # ``subreaper`` and ``killed`` to every report of a script it started).
    if status == {"stopped": "moved"}:
        raise InvalidArgumentError(
            f"The folder of the script {str(script.path)!r} was replaced (a symbolic link "
            "swapped in) while the script was being started; nothing ran. Try again."
        )
    if "stopped" in status:
        timed_out = status["stopped"] == "timeout"
        if timed_out:
            logger.warning("skill script %s timed out after %s s", script.path, time_limit)
            message = (
                f"Timed out: the script ran longer than {time_limit:g} seconds "
                "(DPTTOOLS_SANDBOX_TIMEOUT) and was killed with every process it started."
            )
        else:
            message = "Stopped: the run was ended from outside (SIGTERM to its supervisor)."
        stderr = f"{stderr}\n{message}" if stderr else message
        note_script(-1, sandboxed, message)
        return ScriptResult(
            stdout, stderr, -1, timed_out=timed_out, sandboxed=sandboxed, changes=changes
        )
    code = status.get("exit_code")
    signum = status.get("signal")
    exit_code = int(code) if isinstance(code, int) else -int(signum or 1)
    ending = memory
    if exit_code != 0 and not ending:
        ending = describe_end(status, err.tail, policy, cpu_limit)
        if ending:
            stderr = f"{stderr}\n{ending}" if stderr else ending
            notice(logger, logging.WARNING, f"skill script {script.path.name}: {ending}")
        else:
            # Under bubblewrap the script writes its own view of the workspace, so a
            # refused write is not a matter of the workspace's owner.
            note = (
                hidden_path_note(err.tail, launch.prefix, script.folder.path)
                if sandboxed
                else permission_note(err.tail, user)
            )
            if note:
                stderr = stderr.rstrip("\n") + "\n" + note
    if status.get("killed"):
        logger.debug("killed %s process(es) the skill script left running", status["killed"])
    note_script(exit_code, sandboxed, ending)
    return ScriptResult(stdout, stderr, exit_code, sandboxed=sandboxed, changes=changes)
