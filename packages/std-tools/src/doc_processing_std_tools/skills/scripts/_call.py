"""One skill script call's process around the script: starting it (as the script's user,
inside the call's cgroup), and after it the sweep of what it left behind."""

from __future__ import annotations

import logging
import os
import subprocess
from typing import TYPE_CHECKING

import anyio
from anyio.abc import Process

from ...access import WRITE, current_scopes
from ._cgroups import CallGroup, open_call_group
from ._containment import ScriptUser, clear_setid, sweep_orphans
from .sandbox import INSTALL_HINT, SandboxUnavailableError, sandbox_status

if TYPE_CHECKING:
    from .policy import ScriptPolicy

__all__ = [
    "IN_FLIGHT",
    "memory_note",
    "no_read_only_workspace",
    "open_group",
    "start_call",
    "sweep_call",
]

logger = logging.getLogger(__name__)

IN_FLIGHT: set[int] = set()
"""The first processes of the calls running now: direct children the sweep leaves alone."""


def open_group(run_id: str, policy: ScriptPolicy) -> CallGroup | None:
    """The call's cgroup, or None where there is none (the reason is logged)."""
    try:
        return open_call_group(run_id, policy.memory_mb, policy.max_processes)
    except OSError as exc:
        logger.warning("no cgroup for this skill script call (%s); per-process limits only", exc)
        return None


async def start_call(
    command: list[str],
    env: dict[str, str],
    pass_fds: tuple[int, ...],
    call_group: CallGroup | None,
) -> Process:
    """Start `command`; with `call_group`, through a gate that holds it until the server
    has moved it into the group, so nothing of the call starts outside the group.

    The gate is a shell reading one line from its standard input (a pipe the server
    writes to once the move is done), which then runs the command with an empty standard
    input. A pipe given as standard input needs no permission to read, whichever user
    the shell runs as."""
    gate: tuple[int, int] | None = None
    stdin: int = subprocess.DEVNULL
    if call_group is not None:
        gate = os.pipe()
        stdin = gate[0]
        command = ["/bin/sh", "-c", 'read -r _ && exec "$@" </dev/null', "sh", *command]
    try:
        process = await anyio.open_process(
            command,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except BaseException:
        if gate is not None:
            os.close(gate[0])
            os.close(gate[1])
        raise
    if gate is not None and call_group is not None:
        os.close(gate[0])
        try:
            call_group.add(process.pid)
            os.write(gate[1], b"go\n")
        except OSError as exc:
            # Closing the gate unopened ends the command before it runs anything.
            logger.error("could not move the skill script into its cgroup: %s", exc)
        finally:
            os.close(gate[1])
    return process


def sweep_call(
    policy: ScriptPolicy,
    call_group: CallGroup | None,
    first: int,
    began: float,
    began_ticks: int,
    user: ScriptUser | None,
    sandboxed: bool,
) -> int:
    """After a call: kill what it left (its cgroup, and without bubblewrap the orphans
    that came to the server), and clear set-user/group-ID bits in the writable workspace;
    return how many processes were killed.

    Without bubblewrap the orphans are swept even when the call had a cgroup: a script
    that runs as the server's user may move a process out of the call's group into one
    that user owns (the server's own), and kill its supervisor; once the call's processes
    are gone, such a process is an orphan of the server, and dies here."""
    killed = 0
    if call_group is not None:
        killed = call_group.close(first)
    if not sandboxed:
        killed += sweep_orphans(began_ticks, {*IN_FLIGHT, first}, user)
    workspace = policy.workspace
    # Under bubblewrap the script never wrote the workspace: its changes were staged.
    if not sandboxed and workspace is not None and policy.workspace_writable and workspace.is_dir():
        clear_setid(workspace, began - 1, user)
    return killed


def memory_note(call_group: CallGroup | None, policy: ScriptPolicy) -> str | None:
    if call_group is None or not call_group.oom_killed:
        return None
    return (
        f"Killed: the script's processes together reached the memory limit of "
        f"{policy.memory_mb} MiB for the whole call (DPTTOOLS_SCRIPT_MEMORY_MB)."
    )


def no_read_only_workspace(policy: ScriptPolicy) -> SandboxUnavailableError:
    """Why a script of a token without ``write`` cannot run without bubblewrap."""
    granted = current_scopes() or frozenset()
    held = ", ".join(sorted(granted)) or "none"
    if policy.sandbox == "none":
        why = "DPTTOOLS_SCRIPT_SANDBOX=none turns bubblewrap off"
        fix = f"set DPTTOOLS_SCRIPT_SANDBOX=auto with a working bubblewrap ({INSTALL_HINT})"
    else:
        why = str(sandbox_status().problem)
        fix = "make bubblewrap work on the server"
    return SandboxUnavailableError(
        f"This token's scopes are: {held}. Without the '{WRITE}' scope a script may only "
        f"read the workspace, and only bubblewrap can hold it to that, but {why}; nothing "
        f"ran. Ask for a token that also carries '{WRITE}', or have the server's operator "
        f"{fix}."
    )
