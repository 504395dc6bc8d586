"""What the server does around a skill script call so that the script cannot reach past it
(Linux): the server's own process, the user a script runs as, what the call leaves behind.

- `contain_server()`, the first time a script is about to run in the process (and at
  server start in the command line when scripts are enabled), makes the process not
  dumpable (``PR_SET_DUMPABLE`` 0: another process of the same user can no longer read its
  ``/proc/<pid>/environ``, memory or descriptors) and a child subreaper
  (``PR_SET_CHILD_SUBREAPER``: a process of a script whose supervisor died comes to the
  server, not to init, so the server can still find and end it). Both last for the life of
  the process: a host that runs skill scripts in process becomes non-dumpable and the
  reaper of orphans of its own children too.
- `script_user()`: when the server runs as root, scripts run as DPTTOOLS_SCRIPT_USER
  (``nobody`` by default), never as root; `unreachable()` finds a folder that user cannot
  pass on the way to the interpreter, for a start-up error that names it.
- `sweep_orphans()`: without a per-call cgroup, the processes that came to the server as
  orphans during a call (parent: the server; started after the call began; carrying the
  no-new-privileges flag every script process has and the server has not; as root, run by
  the script user) are killed and reaped.
- `clear_setid()`: after a call, the set-user-ID and set-group-ID bits are cleared on every
  file the call created or changed in the writable workspace.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import pwd
import signal
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ...errors import ConfigError

__all__ = [
    "ScriptUser",
    "call_start_ticks",
    "check_open_folder",
    "clear_setid",
    "contain_server",
    "permission_note",
    "script_user",
    "sweep_orphans",
    "unreachable",
]

logger = logging.getLogger(__name__)

_PR_SET_DUMPABLE: Final = 4
_PR_SET_CHILD_SUBREAPER: Final = 36
_SETID: Final = stat.S_ISUID | stat.S_ISGID
_USER_VARIABLE: Final = "DPTTOOLS_SCRIPT_USER"


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (AttributeError, OSError):
        return False


@functools.cache
def contain_server() -> bool:
    """Make this process non-dumpable and a child subreaper, once; True when both took."""
    dumpable = _prctl(_PR_SET_DUMPABLE, 0)
    reaper = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    logger.debug("skill scripts: server non-dumpable=%s, child subreaper=%s", dumpable, reaper)
    return dumpable and reaper


@dataclass(frozen=True, slots=True)
class ScriptUser:
    """The unprivileged user scripts run as when the server runs as root."""

    name: str
    uid: int
    gid: int


def script_user(name: str) -> ScriptUser | None:
    """The user DPTTOOLS_SCRIPT_USER=`name` names, or None when the server is not root
    (scripts then run as the server's own user).

    Raises:
        ConfigError: no such user here, or it is root.
    """
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
    except (KeyError, ValueError, OverflowError):
        raise ConfigError(
            f"{_USER_VARIABLE}={name!r} names no user on this machine, and a server running "
            "as root runs skill scripts as that user, never as root. Create the user, set "
            f"{_USER_VARIABLE} to an existing unprivileged user (default: nobody), or run "
            "the server as a normal user."
        ) from None
    if entry.pw_uid == 0:
        raise ConfigError(
            f"{_USER_VARIABLE}={name!r} is root; skill scripts never run as root. Set it to "
            "an unprivileged user such as nobody."
        )
    return ScriptUser(entry.pw_name, entry.pw_uid, entry.pw_gid)


def _may_search(info: os.stat_result, user: ScriptUser) -> bool:
    if info.st_uid == user.uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == user.gid:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def unreachable(path: Path, user: ScriptUser) -> Path | None:
    """The first folder on the way to `path` (links resolved) that `user` may not pass
    (by its mode bits), or None when every one lets it through."""
    real = Path(os.path.realpath(path))
    folders = [*reversed(real.parents), *([real] if real.is_dir() else [])]
    for folder in folders:
        try:
            if not _may_search(folder.stat(), user):
                return folder
        except OSError:
            return folder
    return None


def permission_note(err_tail: str, user: ScriptUser | None) -> str | None:
    """One line for a script that failed on a permission while running as `user`."""
    if user is None or not any(
        sign in err_tail for sign in ("Permission denied", "[Errno 13]", "[Errno 1]")
    ):
        return None
    return (
        f"Permissions: the server runs as root, so this script ran as the user {user.name!r} "
        f"({_USER_VARIABLE}), which may not write or read everything root can. Make the "
        f"workspace writable by {user.name!r} (chown or an ACL), or run the server as a "
        "normal user, the recommended setup."
    )


def call_start_ticks() -> int:
    """Now, in the clock ticks since boot that /proc gives process start times in."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK"))


def _no_new_privs(pid: int | str) -> bool | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("NoNewPrivs:"):
                    return line.split()[1] == "1"
    except OSError:
        return None
    return None


def sweep_orphans(since: int, exclude: set[int], user: ScriptUser | None) -> int:
    """Kill and reap the processes that came to this process as orphans of a script since
    tick `since` (see the module docstring), never one of `exclude`; return how many."""
    me = os.getpid()
    marked = _no_new_privs(me) is False
    if not marked and user is None:
        return 0  # nothing tells a script's orphan from the host's own child
    killed = 0
    for _round in range(100):
        found = []
        try:
            names = [entry.name for entry in Path("/proc").iterdir() if entry.name.isdigit()]
        except OSError:
            return killed
        for name in names:
            pid = int(name)
            if pid in exclude:
                continue
            try:
                with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                owner = Path(f"/proc/{name}").stat().st_uid
            except (OSError, IndexError):
                continue
            if int(fields[1]) != me or int(fields[19]) + 1 < since:
                continue
            if user is not None and owner != user.uid:
                continue
            if marked and _no_new_privs(pid) is not True:
                continue
            found.append(pid)
        if not found:
            return killed
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        for pid in found:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)
    return killed


def clear_setid(root: Path, since: float, user: ScriptUser | None) -> int:
    """Clear the set-user-ID and set-group-ID bits of every regular file under `root`
    changed since `since` (a time.time() value) or owned by `user`; return how many.

    Links are never followed: each file is opened by name in its folder's descriptor
    with O_NOFOLLOW and changed through that descriptor. Run after every process of
    the call has ended, so nothing of it can swap a file in between.
    """
    cleared = 0
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    for _folder, _dirs, files, dir_fd in os.fwalk(root, follow_symlinks=False):
        for name in files:
            try:
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode) or not info.st_mode & _SETID:
                continue
            if info.st_ctime < since and (user is None or info.st_uid != user.uid):
                continue
            try:
                fd = os.open(name, flags, dir_fd=dir_fd)
            except OSError:
                continue
            try:
                now = os.fstat(fd)
                if stat.S_ISREG(now.st_mode) and (now.st_dev, now.st_ino) == (
                    info.st_dev,
                    info.st_ino,
                ):
                    os.fchmod(fd, stat.S_IMODE(now.st_mode) & ~_SETID)
                    cleared += 1
            except OSError:
                continue
            finally:
                os.close(fd)
    if cleared:
        logger.warning("cleared set-user-ID/set-group-ID bits on %d file(s) in %s", cleared, root)
    return cleared


def check_reachable(user: ScriptUser, paths: dict[str, Path]) -> None:
    """Refuse to run when `user` cannot reach one of `paths` (what -> path).

    Raises:
        ConfigError: naming the folder, the path behind it, and the ways out.
    """
    problem = reach_problem(user, paths)
    if problem is not None:
        raise ConfigError(f"{problem}; nothing ran. {WAYS_OUT}")


WAYS_OUT: Final = (
    "Let it through (chmod o+x on that folder, or an ACL), keep Python and the skills in "
    "folders other users can read, or run the server as a normal user (the recommended "
    "setup)."
)


def reach_problem(user: ScriptUser, paths: dict[str, Path]) -> str | None:
    """Why `user` cannot reach one of `paths` (what -> path), or None when it can."""
    for what, path in paths.items():
        folder = unreachable(path, user)
        if folder is None:
            continue
        try:
            mode = f"mode {stat.S_IMODE(folder.stat().st_mode):04o}"
        except OSError:
            mode = "missing"
        # Name the file the folders lead to: a virtual environment's `bin/python` is a
        # link, and the folder at fault is on the way to its target, not to the link.
        real = Path(os.path.realpath(path))
        through = f" (which {path} links to)" if real != path.absolute() else ""
        return (
            f"Skill scripts run as the user {user.name!r} ({_USER_VARIABLE}) because the "
            f"server runs as root, but that user cannot pass {folder} ({mode}) on the way "
            f"to {what} {real}{through}"
        )
    return None


def check_open_folder(user: ScriptUser, fd: int, path: Path) -> None:
    """Refuse to run when `user` may not enter the folder open as `fd` (the script's
    folder, entered by this descriptor, so the folders above it do not matter).

    Raises:
        ConfigError: naming the folder and the ways out.
    """
    if _may_search(os.fstat(fd), user):
        return
    raise ConfigError(
        f"Skill scripts run as the user {user.name!r} ({_USER_VARIABLE}) because the server "
        f"runs as root, but that user may not enter the script's folder {path}; nothing "
        f"ran. {WAYS_OUT}"
    )


def interpreter_paths() -> dict[str, Path]:
    """What a script's user must reach to start a script at all."""
    supervisor = Path(__file__).with_name("_supervisor.py")
    return {"the Python interpreter": Path(sys.executable), "the supervisor": supervisor}


def etc_files(user: ScriptUser | None) -> tuple[bytes, bytes]:
    """The /etc/passwd and /etc/group a script under bubblewrap sees: root, nobody and
    the user it runs as, with /tmp as home; nothing else of the host's accounts."""
    uid, gid = (user.uid, user.gid) if user is not None else (os.getuid(), os.getgid())
    name = user.name if user is not None else _own_name(uid)
    users = {0: ("root", 0), 65534: ("nobody", 65534), uid: (name, gid)}
    passwd = "".join(
        f"{login}:x:{number}:{group}::/tmp:/usr/sbin/nologin\n"
        for number, (login, group) in sorted(users.items())
    )
    groups = {0: "root", 65534: "nogroup", gid: name if gid not in (0, 65534) else ""}
    group_file = "".join(
        f"{label or ('root' if number == 0 else 'nogroup')}:x:{number}:\n"
        for number, label in sorted(groups.items())
    )
    return passwd.encode(), group_file.encode()


def _own_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return "script"


def bounds_in_effect(user: ScriptUser | None) -> str:
    """Who scripts run as and what bounds a whole call, for the start-up line."""
    from ._cgroups import cgroup_support

    who = (
        f"as the user {user.name!r} (the server runs as root)"
        if user is not None
        else "as the server's user"
    )
    return f"{who}; {cgroup_support().describe()}"
