"""How one skill script call starts (`prepare`: with or without bubblewrap, the
supervisor's settings, the descriptors it inherits), and, under bubblewrap, the staging
layer it hands back (`received_layer`) and its changes applied by the policy
(`apply_layer`). Blocking work, run in a worker thread by `scripts`."""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ._call import no_read_only_workspace
from ._containment import (
    ScriptUser,
    check_open_folder,
    check_reachable,
    etc_files,
    interpreter_paths,
)
from ._process import limits_for, source_descriptor
from ._staging import Changes, apply_changes, hidden_paths
from .sandbox import bwrap_command, use_bwrap
from .start import announce_sandbox

if TYPE_CHECKING:
    from .policy import ScriptFile, ScriptPolicy

__all__ = ["SUPERVISOR", "Launch", "apply_layer", "prepare", "received_layer"]

logger = logging.getLogger(__name__)

SUPERVISOR: Final = Path(__file__).with_name("_supervisor.py")
"""The supervisor each call runs (``python -I -S SUPERVISOR ...``)."""


@dataclass(frozen=True, slots=True)
class Launch:
    """Everything one run needs before its process starts."""

    limits: dict[str, int]
    prefix: list[str]
    """The bubblewrap command line, or [] without bubblewrap."""
    temp_home: str | None
    """The run's own HOME and TMPDIR on the host, without bubblewrap (removed after)."""
    source_fd: int
    """The descriptor the bootstrap reads the script's code from (closed after the start)."""
    settings: dict[str, float | str]
    """The supervisor's settings besides the time limit."""
    pass_fds: tuple[int, ...]
    """Descriptors the supervisor (or bubblewrap) inherits, besides the status pipe."""
    close_after: tuple[int, ...] = ()
    """Descriptors made for the start (the code, /etc/passwd, /etc/group): closed after."""
    stage: int | None = None
    """The server's end of the channel the supervisor sends the staging layer through."""


def prepare(
    script: ScriptFile,
    policy: ScriptPolicy,
    skill_dir: Path | None,
    time_limit: float,
    user: ScriptUser | None,
) -> Launch:
    """Decide how to run `script` (blocking file-system work: called in a worker thread).

    Raises:
        SandboxUnavailableError: the policy asks for bubblewrap and it cannot be used.
        ConfigError: without bubblewrap, the script's user cannot reach the interpreter
            or the script.
    """
    announce_sandbox(policy.sandbox, policy.user)
    bwrap = use_bwrap(policy.sandbox)
    if bwrap is None and not policy.workspace_writable:
        raise no_read_only_workspace(policy)
    if user is not None and bwrap is None:
        # Without bubblewrap the script's user looks the paths up itself.
        check_reachable(user, interpreter_paths())
        check_open_folder(user, script.folder.fd, script.folder.path)
    limits = limits_for(policy, time_limit, user.uid if user is not None else os.getuid())
    folder = os.fstat(script.folder.fd)
    settings: dict[str, float | str] = {**limits, "folder": f"{folder.st_dev}:{folder.st_ino}"}
    if user is not None:
        settings.update(uid=user.uid, gid=user.gid)
    if bwrap is None:
        # The supervisor enters the folder by this descriptor. Never under bubblewrap: a
        # descriptor of a host folder would lead out of the sandbox's file system.
        settings["folder_fd"] = script.folder.fd
        home = tempfile.mkdtemp(prefix="dpt-script-")
        if user is not None:
            os.chown(home, user.uid, user.gid)
        source_fd = source_descriptor(script.source)
        return Launch(
            limits, [], home, source_fd, settings, (script.folder.fd, source_fd), (source_fd,)
        )
    bind_fd: int | None
    if script.skill_dir is not None:
        bind_path, bind_fd = script.skill_dir.path, script.skill_dir.fd
    elif skill_dir is not None:  # named by a caller that trusts the path
        bind_path, bind_fd = Path(os.path.realpath(skill_dir)), None
    else:
        bind_path, bind_fd = script.folder.path, script.folder.fd
    workspace = policy.workspace
    hidden = (
        hidden_paths(workspace, policy.changes)
        if workspace is not None and workspace.is_dir()
        else []
    )
    changed_bytes = policy.max_changed_mb << 20
    etc_fds = [source_descriptor(content) for content in etc_files(user)]
    call = bwrap_command(
        bwrap,
        skill_dir=bind_path,
        skill_dir_fd=bind_fd,
        workdir=script.folder.path,
        workspace=workspace,
        network=policy.network,
        temp_size_bytes=limits["fsize"],
        also_readable=[SUPERVISOR.parent],
        workspace_writable=policy.workspace_writable,
        visible=policy.visible,
        etc_data=list(zip(etc_fds, ("/etc/passwd", "/etc/group"), strict=True)),
        as_root=os.geteuid() == 0,
        script_ids=(user.uid, user.gid) if user is not None else None,
        hidden=hidden,
        # Room for the limits, for folders copied up, and for each small file's page.
        stage_bytes=changed_bytes + policy.max_changed_files * 4096 + (8 << 20),
        stage_files=policy.max_changed_files * 2 + 256,
    )
    plan_fd = source_descriptor(json.dumps(call.view_plan).encode())
    stage_server, stage_supervisor = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    stage_fd = stage_supervisor.detach()
    server_end = stage_server.detach()
    settings.update(view=plan_fd, stage=stage_fd, workdir=os.fsencode(script.folder.path).hex())
    # bubblewrap binds the skill's folder from its descriptor, then closes it.
    bound = (bind_fd,) if bind_fd is not None and bwrap.bind_fd else ()
    source_fd = source_descriptor(script.source)
    made = (source_fd, plan_fd, stage_fd, *etc_fds)
    return Launch(limits, call.prefix, None, source_fd, settings, (*bound, *made), made, server_end)


def apply_layer(layer: int, policy: ScriptPolicy) -> Changes:
    """Apply the call's changes in `layer` by the policy (see `_staging`); close it."""
    try:
        assert policy.workspace is not None
        changes = apply_changes(
            layer,
            policy.workspace,
            policy.changes,
            max_files=policy.max_changed_files,
            max_bytes=policy.max_changed_mb << 20,
        )
    finally:
        os.close(layer)
    logger.info("skill script changes to the workspace: %s", changes.summary())
    for path, why in changes.held:
        logger.info("held back: %s", why if path in why else f"{path}: {why}")
    return changes


def received_layer(stage: int) -> int | None:
    """The staging layer's descriptor the supervisor sent, or None (it sent none: the
    view failed, or the workspace is read-only)."""
    with socket.socket(fileno=stage) as channel:
        channel.setblocking(False)
        try:
            _message, fds, _flags, _address = socket.recv_fds(channel, 16, 1)
        except (BlockingIOError, OSError):
            return None
    return fds[0] if fds else None
