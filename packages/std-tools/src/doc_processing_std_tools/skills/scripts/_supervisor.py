"""The small process that stands between the server and a skill script (Linux).

Started by `scripts.run_script` as
``python -I -S _supervisor.py STATUS_FD SETTINGS -- CMD...`` (inside bubblewrap when the
sandbox is on), where SETTINGS is ``name=value`` pairs joined by commas: ``time_limit``,
``parent`` (the server's pid, left out under bubblewrap), ``folder`` (``DEV:INO``, the
device and inode of the script's folder as the server checked it), ``folder_fd`` (an open
descriptor of that folder, passed without bubblewrap only), ``uid`` and ``gid`` (the user
the script runs as, when the supervisor runs as root), under bubblewrap ``view`` (a
descriptor holding the view's plan, JSON), ``stage`` (a socket to send the server the
staging layer through) and ``workdir`` (the script's folder, hex-encoded), and one per
resource limit (``as``, ``cpu``, ``nofile``, ``nproc``, ``fsize``, ``core``). It uses a
few standard modules only (json and socket only under bubblewrap, no pathlib), so it
starts fast without the site packages, and it never writes to standard output or error,
which belong to the script.

What it does:

1. Makes itself not dumpable (``PR_SET_DUMPABLE`` 0), so that a script running as the
   same user cannot open its descriptors through ``/proc`` and write a false report into
   the status pipe (only a process with ``CAP_SYS_PTRACE`` still could, and scripts never
   run as root).
   Under bubblewrap, it then builds the script's view while it still holds the capabilities
   bubblewrap gave it (`_view.set_up_view`, loaded by path like `_seccomp`): the
   overlay over the workspace with its staging layer, the secrets left out, the owners
   mapped as root; the staging layer's descriptor goes to the server; then no user
   namespace can be made. Any failure is reported as ``stopped=view`` with a
   ``reason``, and nothing runs.
2. Enters the script's folder: by descriptor (``fchdir``) when ``folder_fd`` is given;
   under bubblewrap it enters the folder by path once the view is built. Either
   way the folder it is in must be the one the server checked (same device and inode);
   if it is not (a link swapped in on the way), nothing runs and the report says
   ``stopped=moved``.
3. Becomes a *child subreaper* (``PR_SET_CHILD_SUBREAPER``): every process the script
   starts, including one that called ``setsid()`` and emptied its environment, is
   re-parented to this process when its own parent dies, instead of escaping to init.
4. Asks for SIGTERM when the server dies (``PR_SET_PDEATHSIG``), and arms a timer for the
   time limit.
5. Forks the script: the child resets the signals Python ignores, sets the resource
   limits (address space, CPU seconds, open files, processes, file size), sets
   no-new-privileges (``PR_SET_NO_NEW_PRIVS``: a set-user-ID file it runs gains nothing,
   and every process of the script carries the flag, which the server's sweep looks
   for), drops to ``uid``/``gid`` when given (supplementary groups, group, user, in that
   order, each checked); under bubblewrap it empties the bounding set first and drops
   every capability left (and checks that none is), refuses to go on as root, installs
   the system-call filter that
   keeps the script from making set-user-ID or set-group-ID files (`_seccomp`), and
   execs CMD.
6. Waits for the script to end, the time limit, or SIGTERM, then kills every process
   left in its subtree and reaps them until it has no child left: only then is the run
   over, and nothing the script started is running.
7. Writes its report to STATUS_FD, one ``name=value`` line each: how the script ended
   (``exit_code`` or ``signal``), or ``stopped`` (``timeout``, ``terminated`` or
   ``moved``), the CPU seconds it used, and how many leftover processes it had to kill.
   Under bubblewrap, once the script runs, it keeps no capability but, as root, the
   right to signal the script's processes (CAP_KILL).
"""

# pathlib is not imported here, to start fast.
# ruff: noqa: PTH116

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_KILL = 5
_CAP_VERSION_3 = 0x20080522
_LIMITS = {
    "as": resource.RLIMIT_AS,
    "cpu": resource.RLIMIT_CPU,
    "nofile": resource.RLIMIT_NOFILE,
    "nproc": resource.RLIMIT_NPROC,
    "fsize": resource.RLIMIT_FSIZE,
    "core": resource.RLIMIT_CORE,
}


class _Stop(Exception):
    """Raised by a signal handler: the time is up, or the server asks the run to end."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _on_signal(signum: int, frame: object) -> None:
    raise _Stop("timeout" if signum == signal.SIGALRM else "terminated")


def _prctl(option: int, value: int) -> bool:
    """Call Linux's prctl(2); False where it fails or does not exist."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (AttributeError, OSError):
        return False


_LIBC: list[ctypes.CDLL] = []


def _libc() -> ctypes.CDLL:
    if not _LIBC:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        _LIBC.append(libc)
    return _LIBC[0]


def _checked(result: int, what: str) -> int:
    """`result` of a C call, or OSError naming `what` when it failed."""
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")
    return result


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _set_capabilities(keep: int = 0) -> None:
    """Keep only the capabilities in the bit mask `keep` (effective and permitted), none
    inheritable or ambient."""
    libc = _libc()
    _checked(libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient")
    data = (_CapData * 2)()
    data[0].effective = data[0].permitted = keep & 0xFFFFFFFF
    data[1].effective = data[1].permitted = keep >> 32
    header = _CapHeader(_CAP_VERSION_3, 0)
    _checked(libc.capset(ctypes.byref(header), data), "set capabilities")


def _drop_bounding_set() -> None:
    """Empty the bounding set: no later exec can gain a capability, not even as root."""
    libc = _libc()
    for cap in range(64):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            if ctypes.get_errno() == 22:  # EINVAL: past the last capability
                return
            _checked(-1, f"drop capability {cap} from the bounding set")


def _no_capabilities_left() -> None:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            name, _, value = line.partition(":")
            if name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb") and int(value, 16):
                raise OSError(f"the script would keep capabilities ({name} {value.strip()})")


def _set_limit(kind: int, value: int) -> None:
    """Lower a limit to `value` (never above the hard limit already in force)."""
    _soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    new_hard = hard
    if kind == resource.RLIMIT_CPU:
        # SIGXCPU at the soft limit, SIGKILL one second later if it is ignored.
        new_hard = value + 1 if hard == resource.RLIM_INFINITY else min(hard, value + 1)
    elif hard == resource.RLIM_INFINITY or value < hard:
        new_hard = value
    resource.setrlimit(kind, (value, new_hard))


def _drop_to(uid: int, gid: int) -> None:
    """Become `uid`/`gid` with no supplementary group, and check that it took."""
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    ids = (os.getuid(), os.geteuid(), os.getgid(), os.getegid())
    if ids != (uid, uid, gid, gid) or os.getgroups() not in ([], [gid]):
        raise OSError(f"the user switch did not take (uid, euid, gid, egid: {ids})")
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise OSError("root could be regained after the user switch")


def _exec_script(
    command: list[str], limits: dict[str, int], user: tuple[int, int] | None, view: bool
) -> None:
    """In the forked child: restore default signals, set the limits and no-new-privileges,
    leave root (and, in a view, every capability bubblewrap left), exec the script."""
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        for signum in (signal.SIGTERM, signal.SIGALRM, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(signum, signal.SIG_DFL)
        for name, value in limits.items():
            _set_limit(_LIMITS[name], value)
        if view:
            _drop_bounding_set()
        if not _prctl(_PR_SET_NO_NEW_PRIVS, 1):
            raise OSError("no-new-privileges could not be set")
        if user is not None:
            _drop_to(*user)
        if view:
            _set_capabilities(0)
            _no_capabilities_left()
        if os.geteuid() == 0 or os.getuid() == 0:
            raise OSError("a skill script never runs as root")
        _deny_setid_files()
        os.execv(command[0], command)
    except BaseException as exc:  # the child must never return to the supervisor's code
        os.write(2, f"could not start the script: {exc}\n".encode())
    os._exit(127)


def _deny_setid_files() -> None:
    """Install the system-call filter that keeps the script from making a set-user-ID or
    set-group-ID file (`_seccomp`, loaded from this file's folder: the package is not on
    the path of this interpreter). On a machine the filter does not know, nothing is
    installed (the documentation says so); a filter the kernel refuses stops the start."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # noqa: PTH100, PTH120
    import _seccomp  # type: ignore[import-not-found]

    _seccomp.install()


def _own_children() -> list[int] | None:
    """The pids whose parent is this process (orphans of the script included), or None
    where there is no /proc to find them in."""
    me = os.getpid()
    found: list[int] = []
    try:
        with open(f"/proc/{me}/task/{me}/children", encoding="ascii") as handle:
            return [int(pid) for pid in handle.read().split()]
    except OSError:
        pass
    try:
        with os.scandir("/proc") as entries:
            names = [entry.name for entry in entries if entry.name.isdigit()]
    except OSError:
        return None
    for name in names:
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me:
            found.append(int(name))
    return found


def _kill_subtree(script: int) -> int:
    """SIGKILL every child until none is left; leftover grandchildren come back to us
    (we are their subreaper) as their parents die, and are killed in turn.

    Without /proc (not Linux) only the `script` itself can be named: it is killed, and
    whatever has already ended is reaped, without waiting for the rest."""
    killed = 0
    while True:
        children = _own_children()
        if children is None:
            try:
                os.kill(script, signal.SIGKILL)
                os.waitpid(script, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            return 1
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return killed


def main(argv: list[str]) -> int:
    """Run the script described by `argv` (see the module docstring); return 0."""
    _prctl(_PR_SET_DUMPABLE, 0)
    status_fd = int(argv[1])
    settings = dict(pair.split("=", 1) for pair in argv[2].split(","))
    time_limit = float(settings.pop("time_limit"))
    parent = settings.pop("parent", None)
    folder = settings.pop("folder", None)
    folder_fd = settings.pop("folder_fd", None)
    uid, gid = settings.pop("uid", None), settings.pop("gid", None)
    user = (int(uid), int(gid)) if uid is not None and gid is not None else None
    view, stage = settings.pop("view", None), settings.pop("stage", None)
    workdir = settings.pop("workdir", None)
    limits = {name: int(value) for name, value in settings.items()}
    command = argv[4:]
    os.set_inheritable(status_fd, False)
    if view is not None and stage is not None:
        try:
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # noqa: PTH100, PTH120
            import _view  # type: ignore[import-not-found]

            _view.set_up_view(_view.read_plan(int(view)), int(stage))
            if workdir is not None:
                os.chdir(bytes.fromhex(workdir))
        except OSError as exc:
            reason = " ".join(str(exc).split())
            _report(status_fd, {"stopped": "view", "reason": reason})
            return 0
    if folder_fd is not None:
        os.fchdir(int(folder_fd))
        os.close(int(folder_fd))
    if folder is not None and not _in_folder(folder):
        _report(status_fd, {"stopped": "moved"})
        return 0
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGALRM, _on_signal)
    status: dict[str, object] = {"subreaper": _prctl(_PR_SET_CHILD_SUBREAPER, 1)}
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if parent is not None and os.getppid() != int(parent):
        return 0  # the server died before the death signal was set up
    child = os.fork()
    if child == 0:
        _exec_script(command, limits, user, view is not None)
    if view is not None:
        # What this process still needs: as root, the right to signal the script's user.
        _set_capabilities(1 << _CAP_KILL if user is not None else 0)
    signal.setitimer(signal.ITIMER_REAL, time_limit)
    try:
        while True:
            pid, wait_status, usage = os.wait4(-1, 0)
            if pid == child:
                status["cpu_seconds"] = usage.ru_utime + usage.ru_stime
                if os.WIFSIGNALED(wait_status):
                    status["signal"] = os.WTERMSIG(wait_status)
                else:
                    status["exit_code"] = os.waitstatus_to_exitcode(wait_status)
                break
    except _Stop as stop:
        status["stopped"] = stop.reason
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGALRM})
    status["killed"] = _kill_subtree(child)
    _report(status_fd, status)
    return 0


def _in_folder(folder: str) -> bool:
    """True when the working directory is the folder `folder` (``DEV:INO``) names."""
    here = os.stat(".")
    return f"{here.st_dev}:{here.st_ino}" == folder


def _report(status_fd: int, status: dict[str, object]) -> None:
    """Write the report (one ``name=value`` line each) and close its descriptor."""
    os.write(status_fd, "".join(f"{key}={value}\n" for key, value in status.items()).encode())
    os.close(status_fd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
