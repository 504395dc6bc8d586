"""Bubblewrap for skill scripts: whether it can be used here, and the command that confines
one call.

`sandbox_status()` looks for ``bwrap`` on the server's PATH and runs it once the way a
script's sandbox runs (the supervisor's capabilities, an overlay on a tmpfs); the answer,
with the real cause when it fails (bubblewrap's own last line and what it means here), is
kept for the life of the process. `use_bwrap()` turns DPTTOOLS_SCRIPT_SANDBOX into a yes or
no for one call (``bwrap`` without a working bubblewrap is a `SandboxUnavailableError`);
`start.announce_sandbox()` logs once, at server start-up, what scripts will run under (a
WARNING naming the cause when ``auto`` finds no usable bubblewrap).

`bwrap_command()` builds the command line of one call and the plan of the script's view.
bubblewrap runs as the server's own user, so every path it binds is looked up by the
server, never by the script's user: Python under a private home and skills or a workspace
in private folders work. As root it makes its namespaces without a user namespace (no
identity of the host is mapped into one); otherwise in a user namespace of the server's
user. Its command is the supervisor, holding the few capabilities of `VIEW_CAPABILITIES`
while it builds the view (`_supervisor`), which then drops them all, and, as root, drops to
the scripts' user, before the script runs. The sandbox holds:

- an empty root, made read-only at the end, holding only an allow-list: the system
  folders (`SYSTEM_FOLDERS`, merged-/usr links kept as links) and pieces of /etc
  (`ETC_FILES`, and `NETWORK_ETC_FILES` with the network) read-only; a generated
  /etc/passwd and /etc/group (from descriptors); the Python installation and virtual
  environment, the supervisor's folder and the DPTTOOLS_SCRIPT_VISIBLE folders,
  read-only (folders above them that bubblewrap makes are opened to all, mode 0755);
  a small /dev of its own, a fresh /proc, a fresh /tmp (HOME and TMPDIR of the script)
  bounded by DPTTOOLS_SCRIPT_MAX_FILE_SIZE_MB and a /dev/shm bounded by a quarter of it;
- the skill's folder, read-only, bound from the descriptor the server opened and checked
  (``--ro-bind-fd``), so a link swapped in for it by name cannot put another folder in
  its place; as root it is shown owned by the scripts' user (an idmapped mount);
- the workspace (DPTTOOLS_WORKSPACE_DIR), read-only, which the supervisor turns into the
  script's view: an overlay whose lower layers are a layer of whiteouts hiding the
  secrets (`ChangePolicy.hidden`) and the workspace itself (as root, shown owned by the
  scripts' user), and whose upper layer, for a call that may write, is a tmpfs bounded by
  the limits on changed files and bytes. The server applies what landed there
  (`_staging`). A folder of the allow-list inside the workspace (a virtual environment,
  the skill) is bound again over the view, read-only;
- new PID, IPC, UTS and network namespaces (the network one only when the network is
  off), a new terminal session, and death with the server; the supervisor runs as the
  PID namespace's init (``--as-pid-1``). It moves into a copy of the tree mounted on a
  folder of it, a root that is not its mount namespace's own, from which the kernel
  makes no user namespace: nested user namespaces are off for the script.

`_hidden_note.hidden_path_note()` explains a failure on a file the sandbox hides.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from ..._notices import notice
from ...errors import ConfigError

__all__ = [
    "INSTALL_HINT",
    "SandboxCall",
    "SandboxStatus",
    "SandboxUnavailableError",
    "bwrap_command",
    "sandbox_status",
    "use_bwrap",
]

logger = logging.getLogger(__name__)

INSTALL_HINT: Final = "install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap)"
"""How to get bubblewrap, as the messages say it."""

_PROBE_SECONDS: Final = 10.0

SYSTEM_FOLDERS: Final[tuple[str, ...]] = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
)
"""System folders a script under bubblewrap sees, read-only (each that exists)."""

ETC_FILES: Final[tuple[str, ...]] = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/nsswitch.conf",
    "/etc/mime.types",
    "/etc/matplotlibrc",
    "/etc/fonts",
)
"""Pieces of /etc a script under bubblewrap sees, read-only (each that exists). Its
/etc/passwd and /etc/group are generated: root, the script's user and nobody only."""

NETWORK_ETC_FILES: Final[tuple[str, ...]] = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
)
"""Pieces of /etc a script sees besides `ETC_FILES` when it keeps the network."""


class SandboxUnavailableError(ConfigError):
    """DPTTOOLS_SCRIPT_SANDBOX=bwrap, but bubblewrap is missing or does not work here."""


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether bubblewrap can confine scripts on this machine."""

    bwrap: str | None
    """Path of a working ``bwrap``, or None."""
    problem: str | None
    """Why bubblewrap cannot be used (None when it can): what is missing or failing."""
    tmpfs_size: bool = False
    """True when this bubblewrap can bound the size of a tmpfs (``--size``, 0.9 and later)."""
    bind_fd: bool = False
    """True when this bubblewrap can bind an open folder descriptor (``--ro-bind-fd``)."""


VIEW_CAPABILITIES: Final[tuple[str, ...]] = (
    "CAP_SYS_ADMIN",
    "CAP_DAC_OVERRIDE",
    "CAP_CHOWN",
    "CAP_FOWNER",
    "CAP_SYS_CHROOT",
    "CAP_SETPCAP",
    "CAP_SETUID",
    "CAP_SETGID",
    "CAP_KILL",
)
"""What the supervisor inside the sandbox holds while it builds the script's view (mount
the staging layers, map owners, confine its root), in the sandbox's user namespace, or as
root in its own mount namespace when the server runs as root. It drops every one of them
in the script's process before the script runs, and keeps only CAP_KILL (as root) for
itself."""

#: Where the supervisor builds the view, inside the sandbox; detached before the script runs.
VIEW_FOLDER: Final = "/run/dpt-view"


def _namespaces(network: bool, as_root: bool) -> list[str]:
    flags = [] if as_root else ["--unshare-user"]
    flags += ["--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not network:
        flags.append("--unshare-net")
    flags += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    for capability in VIEW_CAPABILITIES:
        flags += ["--cap-add", capability]
    return flags


#: The probe: inside bubblewrap, with the supervisor's capabilities, mount an overlay the
#: way a script's view is built (a tmpfs holding the layers).
_PROBE_CODE: Final = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def mount(source, target, kind, data):
    if libc.mount(source.encode(), target.encode(), kind.encode(), 0, data.encode()) != 0:
        error = ctypes.get_errno()
        sys.exit(f"mounting {kind} failed: {os.strerror(error)}")
mount("probe", "/tmp", "tmpfs", "size=1m")
for name in ("lower", "upper", "work", "view"):
    os.mkdir("/tmp/" + name)
extra = ",redirect_dir=off" if sys.argv[1] == "root" else ",userxattr"
mount("probe", "/tmp/view", "overlay",
      "lowerdir=/tmp/lower,upperdir=/tmp/upper,workdir=/tmp/work" + extra)
"""


def _explain(detail: str, as_root: bool) -> str:
    """What bubblewrap's own last line of error means here, and what to do."""
    lowered = detail.lower()
    if "mounting overlay" in lowered or "mounting tmpfs" in lowered:
        return (
            f"{detail}; scripts see the workspace through an overlay on a tmpfs, which "
            "needs a kernel that allows both in a user namespace (Linux 5.11 or later)"
        )
    if "namespace" in lowered or "operation not permitted" in lowered:
        if as_root:
            return (
                f"{detail}; the server runs as root but may not create namespaces here (a "
                "container without CAP_SYS_ADMIN, or a seccomp profile that forbids "
                "unshare); run the container with the capability and a profile that "
                "allows namespaces"
            )
        return (
            f"{detail}; unprivileged user namespaces are not allowed here (sysctl "
            "user.max_user_namespaces is 0, kernel.unprivileged_userns_clone is 0, an "
            "AppArmor rule restricts them, or a container forbids them)"
        )
    return detail


@functools.cache
def sandbox_status() -> SandboxStatus:
    """Find ``bwrap`` and run it once as the server runs a script's sandbox (with the
    supervisor's capabilities, building an overlay); cached for the process."""
    found = shutil.which("bwrap")
    if found is None:
        return SandboxStatus(
            None, f"bubblewrap is not installed (no bwrap on PATH); {INSTALL_HINT}"
        )
    as_root = os.geteuid() == 0
    # No --dev: bubblewrap would then run the command in a nested user namespace, which
    # may not mount anything (the script's sandbox makes its own small /dev instead).
    probe = [found, "--ro-bind", "/", "/", "--proc", "/proc"]
    probe += [*_namespaces(network=False, as_root=as_root), "--"]
    probe += [sys.executable, "-I", "-S", "-c", _PROBE_CODE, "root" if as_root else "user"]
    try:
        done = subprocess.run(
            probe,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus(None, f"bubblewrap at {found} could not be started ({exc})")
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = reason[-1] if reason else f"exit status {done.returncode}"
        return SandboxStatus(
            None, f"bubblewrap at {found} does not work here: {_explain(detail, as_root)}"
        )
    try:
        usage = subprocess.run(
            [found, "--help"], capture_output=True, timeout=_PROBE_SECONDS, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        usage = b""
    return SandboxStatus(
        found, None, tmpfs_size=b"--size" in usage, bind_fd=b"--ro-bind-fd" in usage
    )


def use_bwrap(mode: Literal["auto", "bwrap", "none"]) -> SandboxStatus | None:
    """The bubblewrap to run a script under for `mode`, or None to run it without.

    Raises:
        SandboxUnavailableError: `mode` is ``bwrap`` and bubblewrap cannot be used.
    """
    if mode == "none":
        return None
    status = sandbox_status()
    if status.bwrap is not None:
        return status
    if mode == "bwrap":
        raise SandboxUnavailableError(
            f"DPTTOOLS_SCRIPT_SANDBOX=bwrap, but {status.problem}. No script runs until "
            "bubblewrap works; or set DPTTOOLS_SCRIPT_SANDBOX=auto to run scripts without it."
        )
    notice(
        logger,
        logging.WARNING,
        f"this skill script runs WITHOUT the bubblewrap sandbox ({status.problem}); it can "
        "read what the server's user can read and use the network",
    )
    return None


def _under(path: Path, folders: Iterable[Path]) -> bool:
    return any(path == folder or folder in path.parents for folder in folders)


def _python_folders() -> list[Path]:
    """The interpreter's installation and the virtual environment (as named and with
    links resolved), and the folder of the interpreter's real file."""
    candidates: list[str | Path] = [
        sys.prefix,
        sys.exec_prefix,
        sys.base_prefix,
        sys.base_exec_prefix,
        Path(sys.executable).resolve().parent,
    ]
    folders: list[Path] = []
    for candidate in candidates:
        for path in (Path(candidate).absolute(), Path(candidate).resolve()):
            if path.is_dir() and path not in folders:
                folders.append(path)
    return folders


def system_binds(network: bool) -> list[str]:
    """The bubblewrap arguments that show the system's programs and libraries and the
    pieces of /etc a program needs (`SYSTEM_FOLDERS`, `ETC_FILES`, and with the
    network `NETWORK_ETC_FILES`), read-only; a folder that is a link (merged /usr) is
    made the same link."""
    args: list[str] = []
    for folder in map(Path, SYSTEM_FOLDERS):
        if folder.is_symlink():
            args += ["--symlink", str(folder.readlink()), str(folder)]
        elif folder.is_dir():
            args += ["--ro-bind", str(folder), str(folder)]
    for name in (*ETC_FILES, *(NETWORK_ETC_FILES if network else ())):
        if Path(name).exists():
            args += ["--ro-bind", name, name]
    return args


@dataclass(frozen=True, slots=True)
class SandboxCall:
    """The bubblewrap command line of one call and the plan its supervisor builds the
    script's view from (`view_plan`, handed over as JSON through a descriptor)."""

    prefix: list[str]
    """bubblewrap and its arguments, ending with ``--``."""
    view_plan: dict[str, object]
    """What the supervisor mounts: see `_supervisor._set_up_view`."""


def _folders_above(path: Path, made: set[Path]) -> list[str]:
    """``--perms 0755 --dir`` for each folder above `path` not made yet: bubblewrap would
    make them private to the server's user, and a script running as another user could
    not pass them."""
    args: list[str] = []
    for folder in reversed(path.parents):
        if folder == Path("/") or folder in made:
            continue
        made.add(folder)
        args += ["--perms", "0755", "--dir", str(folder)]
    return args


def _device_nodes(shm_bytes: int, tmpfs_size: bool) -> list[str]:
    """A small /dev of its own: the harmless devices bound from the host, links to the
    standard streams, and a bounded /dev/shm; /dev itself read-only. (bubblewrap's own
    ``--dev`` would make the supervisor's user namespace a nested one, which may not
    mount the script's view.)"""
    args = ["--perms", "0755", *(["--size", "65536"] if tmpfs_size else []), "--tmpfs", "/dev"]
    for name in ("null", "zero", "full", "random", "urandom", "tty"):
        if Path("/dev", name).exists():
            args += ["--dev-bind", f"/dev/{name}", f"/dev/{name}"]
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        args += ["--symlink", target, f"/dev/{name}"]
    args += ["--perms", "01777"]
    if tmpfs_size:
        args += ["--size", str(shm_bytes)]
    return [*args, "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]


def bwrap_command(
    status: SandboxStatus,
    *,
    skill_dir: Path,
    skill_dir_fd: int | None = None,
    workdir: Path,
    workspace: Path | None,
    network: bool,
    temp_size_bytes: int,
    also_readable: Sequence[Path] = (),
    workspace_writable: bool = True,
    visible: Sequence[Path] = (),
    etc_data: Sequence[tuple[int, str]] = (),
    as_root: bool = False,
    script_ids: tuple[int, int] | None = None,
    hidden: Sequence[str] = (),
    stage_bytes: int = 0,
    stage_files: int = 0,
) -> SandboxCall:
    """The bubblewrap arguments, ending with ``--``, that confine one script call, and the
    plan of the script's view.

    The script sees only what is listed here (an allow-list over an empty root): the
    system folders and /etc pieces (`system_binds`), the Python installation and
    virtual environment, the `also_readable` folders (the supervisor's) and the
    `visible` ones (DPTTOOLS_SCRIPT_VISIBLE), read-only; a fresh /tmp bounded to
    `temp_size_bytes` and a /dev/shm to a quarter of it, a small /dev and a fresh /proc; `skill_dir`
    read-only, and `workspace` (when given) as its view: the workspace below, read-only,
    with the `hidden` paths (relative) taken out, and, when `workspace_writable`, a
    layer above it on a tmpfs of `stage_bytes` bytes and `stage_files` files where every
    change lands. `etc_data` (descriptor, path) pairs are files made from a descriptor's
    content (the generated /etc/passwd and /etc/group). A folder of all these that lies
    inside the workspace is bound again over the view, read-only.

    bubblewrap runs as the server's user, which opens every path (as root, in a mount
    namespace of its own without a user namespace; otherwise in a user namespace), and
    the supervisor builds the view and drops to `script_ids` (as root) or drops every
    capability before the script runs. With `skill_dir_fd` (an open descriptor of
    `skill_dir`, which the caller passes on to bubblewrap) the folder bound is the one
    that descriptor holds, whatever the path names by then.
    """
    assert status.bwrap is not None
    made: set[Path] = set()
    args = [status.bwrap, *system_binds(network)]
    for fd, dest in etc_data:
        args += ["--ro-bind-data", str(fd), dest]
    args += _device_nodes(max(temp_size_bytes // 4, 1 << 20), status.tmpfs_size)
    args += ["--proc", "/proc", "--perms", "01777"]
    if status.tmpfs_size:
        args += ["--size", str(temp_size_bytes)]
    args += ["--tmpfs", "/tmp"]
    made.add(Path("/tmp"))
    # After the fresh /tmp: a later mount covers an earlier one, and a virtual
    # environment or a checkout under /tmp must stay visible.
    view = Path(VIEW_FOLDER)
    args += ["--perms", "0700", "--dir", "/run", "--perms", "0700", "--dir", str(view)]
    made.update((Path("/run"), view))
    keep: list[tuple[str, str, bool]] = []
    inside = workspace is not None and workspace.is_dir()

    def in_view(folder: Path) -> bool:
        return inside and workspace is not None and _under(folder, [workspace])

    bound: list[Path] = []
    readable = {*_python_folders(), *also_readable, *visible}
    for folder in sorted(readable, key=lambda path: len(path.parts)):
        if _under(folder, bound) or not folder.exists():
            continue
        bound.append(folder)
        if in_view(folder):
            hold = view / f"keep{len(keep)}"
            keep.append((str(hold), str(folder), False))
            args += ["--ro-bind", str(folder), str(hold)]
        else:
            args += _folders_above(folder, made)
            args += ["--ro-bind", str(folder), str(folder)]
    plan: dict[str, object] = {"root": str(view / "root")}
    if inside and workspace is not None:
        args += _folders_above(workspace, made)
        args += ["--ro-bind", str(workspace), str(workspace)]
        plan.update(
            workspace=str(workspace),
            stage=str(view / "stage"),
            lower=str(view / "lower"),
            writable=workspace_writable,
            hidden=list(hidden),
            tmpfs=f"size={max(stage_bytes, 1 << 20)},nr_inodes={max(stage_files, 64)},mode=0700",
        )
        args += ["--dir", str(view / "stage"), "--dir", str(view / "lower")]
    mapped = as_root and script_ids is not None
    by_fd = skill_dir_fd is not None and status.bind_fd
    if in_view(skill_dir) or mapped:
        hold = view / f"keep{len(keep)}"
        keep.append((str(hold), str(skill_dir), mapped))
        target = str(hold)
        if not in_view(skill_dir):
            args += [*_folders_above(skill_dir, made), "--dir", str(skill_dir)]
    else:
        args += _folders_above(skill_dir, made)
        target = str(skill_dir)
    if by_fd:
        args += ["--ro-bind-fd", str(skill_dir_fd), target]
    else:
        args += ["--ro-bind", str(skill_dir), target]
    plan["keep"] = [list(entry) for entry in keep]
    if mapped and script_ids is not None:
        plan["map"] = list(script_ids)
    args += ["--dir", str(view / "root")]
    # The empty root itself is read-only (and so cannot fill the host's memory).
    args += ["--remount-ro", "/"]
    # The command (the supervisor) is the namespace's init itself: one process fewer per
    # run, every orphan comes to it, and signals from inside cannot kill it.
    args += [*_namespaces(network, as_root), "--as-pid-1", "--"]
    del workdir  # the supervisor enters it once the view is built
    return SandboxCall(args, plan)
