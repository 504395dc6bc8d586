"""Bubblewrap for skill scripts: whether it can be used here, and the command that confines
one run.

`sandbox_status()` looks for ``bwrap`` on the server's PATH and runs it once with the same
namespaces a script gets; the answer is kept for the life of the process. `use_bwrap()`
turns DPTTOOLS_SCRIPT_SANDBOX into a yes or no for one run (``bwrap`` without a working
bubblewrap is a `SandboxUnavailableError`), and `announce_sandbox()` logs once, at server
start-up, what scripts will run under (a WARNING when ``auto`` finds no usable bubblewrap).

`bwrap_command()` builds the bubblewrap command line for one run (a server running as
root starts it as the scripts' user, so bubblewrap builds an unprivileged user namespace
and holds no privilege of its own on the host):

- an empty root, made read-only at the end, holding only an allow-list: the system
  folders (`SYSTEM_FOLDERS`, merged-/usr links kept as links) and pieces of /etc
  (`ETC_FILES`, and `NETWORK_ETC_FILES` with the network) read-only; a generated
  /etc/passwd and /etc/group (from descriptors); the Python installation and virtual
  environment, the supervisor's folder and the DPTTOOLS_SCRIPT_VISIBLE folders,
  read-only; a fresh /dev and /proc, and a fresh, writable, bounded /tmp (HOME and
  TMPDIR of the script);
- then the workspace (when DPTTOOLS_WORKSPACE_DIR is set: read-write, or read-only for a
  call whose token lacks the ``write`` scope) and the skill's folder read-only, in that
  order, so the skill stays read-only even inside a writable workspace. The skill's
  folder is bound from the descriptor the server opened and checked (``--ro-bind-fd``,
  bubblewrap 0.5 and later), so a link swapped in for it by name cannot put another
  folder in its place;
- in a writable workspace, right after it (a later bind covers an earlier one), each
  protected path that exists when the run starts (`PROTECTED_PATHS`, or
  DPTTOOLS_SCRIPT_PROTECTED: ``.git``, the agents' memory and settings) and every skills
  folder in it, bound read-only over itself (`protected_paths`), and a Python folder
  that lies in the workspace bound read-only again. A link among them protects what it
  leads to, when that lies in the workspace. A protected name that does not exist when
  the run starts is not protected: a bind needs something to cover, and making that
  would write to the host;
- new PID, IPC, UTS and network namespaces (the network one only when the network is
  off), no capabilities (``--cap-drop ALL``; bubblewrap also sets no-new-privileges), a
  new terminal session, and death with the server; the command runs as the PID
  namespace's init (``--as-pid-1``).

`hidden_path_note()` reads a failed script's standard error for a file that was not found
although it exists on the host, outside the allow-list or under the fresh /tmp, and
returns one line saying so and how to let scripts see it.
"""

from __future__ import annotations

import ast
import functools
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from .._notices import notice
from ..errors import ConfigError

__all__ = [
    "INSTALL_HINT",
    "PROTECTED_PATHS",
    "SandboxStatus",
    "SandboxUnavailableError",
    "announce_sandbox",
    "bwrap_command",
    "hidden_by",
    "hidden_path_note",
    "protected_paths",
    "protected_setting",
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

PROTECTED_PATHS: Final[tuple[str, ...]] = (
    ".git",
    "AGENTS.md",
    "CLAUDE.md",
    "GEMINI.md",
    ".claude",
    ".agents",
    ".cursor",
    ".windsurf",
    ".clinerules",
    ".github/copilot-instructions.md",
    ".vscode",
    ".idea",
)
"""Paths, relative to the workspace, that a script under bubblewrap may not change even
when the workspace is writable: ``.git`` (a planted hook runs on the host, outside any
sandbox) and the memory, rules and settings that coding agents and editors read from a
project. DPTTOOLS_SCRIPT_PROTECTED adds to this list (``+NAME,...``) or replaces it."""

_PROTECTED_VARIABLE: Final = "DPTTOOLS_SCRIPT_PROTECTED"


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


def _namespaces(network: bool) -> list[str]:
    flags = ["--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not network:
        flags.append("--unshare-net")
    return [*flags, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]


@functools.cache
def sandbox_status(run_as: tuple[int, int] | None = None) -> SandboxStatus:
    """Find ``bwrap`` and run it once with a script's namespaces, as `run_as` (uid, gid)
    when given (a server running as root runs bubblewrap as the script's user); cached
    for the process."""
    found = shutil.which("bwrap")
    if found is None:
        return SandboxStatus(
            None, f"bubblewrap is not installed (no bwrap on PATH); {INSTALL_HINT}"
        )
    probe = [
        found,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        *_namespaces(network=False),
        "--",
        sys.executable,
        "-I",
        "-S",
        "-c",
        "",
    ]
    try:
        done = subprocess.run(
            probe,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_SECONDS,
            check=False,
            **_as_user(run_as),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus(None, f"bubblewrap at {found} could not be started ({exc})")
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = reason[-1] if reason else f"exit status {done.returncode}"
        return SandboxStatus(
            None,
            f"bubblewrap at {found} does not work here ({detail}); it needs user, PID and "
            "network namespaces, which this machine or container does not allow",
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


def _as_user(run_as: tuple[int, int] | None) -> dict[str, Any]:
    """The `subprocess` arguments that start a process as `run_as` (uid, gid) with no
    supplementary group (applied in that order: groups, group, user), or none."""
    if run_as is None:
        return {}
    return {"user": run_as[0], "group": run_as[1], "extra_groups": []}


def use_bwrap(
    mode: Literal["auto", "bwrap", "none"], run_as: tuple[int, int] | None = None
) -> SandboxStatus | None:
    """The bubblewrap to run a script under for `mode`, or None to run it without.

    Raises:
        SandboxUnavailableError: `mode` is ``bwrap`` and bubblewrap cannot be used.
    """
    if mode == "none":
        return None
    status = sandbox_status(run_as)
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


def announce_sandbox(mode: Literal["auto", "bwrap", "none"], user: str = "nobody") -> None:
    """Log, once per process and mode, what skill scripts will run under.

    Call it when a server is built or started, never at import. ``auto`` without a usable
    bubblewrap is a WARNING naming what is missing; ``bwrap`` without it is an ERROR
    (every script call will be refused); ``none`` is an INFO line. Each also says which
    user scripts run as (`user`, DPTTOOLS_SCRIPT_USER, when the server runs as root) and
    what bounds a whole call (a cgroup per call, or per-process limits only).

    Raises:
        ConfigError: the server runs as root and `user` names no user here, or root.
    """
    _announce(mode, user)


@functools.cache
def _announce(mode: Literal["auto", "bwrap", "none"], user: str) -> None:
    from ._containment import bounds_in_effect, script_user

    found = script_user(user)
    run_as = (found.uid, found.gid) if found is not None else None
    more = f"; {bounds_in_effect(found)}"
    if mode == "none":
        logger.info("skill scripts run without a sandbox (DPTTOOLS_SCRIPT_SANDBOX=none)%s", more)
        return
    status = sandbox_status(run_as)
    if status.bwrap is not None:
        logger.info("skill scripts run under bubblewrap (%s)%s", status.bwrap, more)
    elif mode == "bwrap":
        logger.error(
            "DPTTOOLS_SCRIPT_SANDBOX=bwrap, but %s; execute_skill_script will refuse to run "
            "scripts",
            status.problem,
        )
    else:
        logger.warning(
            "skill scripts will run WITHOUT the bubblewrap sandbox: %s. They still get a "
            "minimal environment, resource limits and a process sweep, but can read what "
            "the server's user can read and use the network. Set DPTTOOLS_SCRIPT_SANDBOX=none "
            "to choose this explicitly.",
            status.problem,
        )


def protected_setting(raw: str) -> tuple[str, ...]:
    """The protected paths DPTTOOLS_SCRIPT_PROTECTED=`raw` names: empty means
    `PROTECTED_PATHS`, ``+A,B`` that list and A and B, ``A,B`` only A and B, ``none`` no
    path (the skills folders stay protected). Each entry is a relative path inside the
    workspace, normalised (``build/`` is ``build``); the order is kept, duplicates dropped.

    Raises:
        ConfigError: an entry is empty after ``+``, absolute, starts with ``~``, or is the
            workspace itself or leads out of it (``.``, ``..``).
    """
    value = raw.strip()
    if not value:
        return PROTECTED_PATHS
    if value.lower() == "none":
        return ()
    adding = value.startswith("+")
    entries = [part.strip() for part in value.removeprefix("+").split(",")]
    names: list[str] = []
    for entry in entries:
        normal = os.path.normpath(entry) if entry else ""
        if (
            not entry
            or "\x00" in entry
            or entry.startswith(("/", "~"))
            or normal in (".", "..")
            or normal.startswith("../")
        ):
            raise ConfigError(
                f"{_PROTECTED_VARIABLE}={raw!r} holds {entry!r}, which is not a path inside "
                "the workspace; list relative paths separated by commas, such as "
                f"{_PROTECTED_VARIABLE}=+Makefile,ci/ (a leading '+' adds them to the "
                "default list, 'none' protects no path), or unset it for the default list."
            )
        names.append(normal)
    return tuple(dict.fromkeys([*PROTECTED_PATHS, *names] if adding else names))


def protected_paths(
    workspace: Path, names: Iterable[str], skill_roots: Iterable[Path] = ()
) -> list[Path]:
    """What to bind read-only inside the writable `workspace`: each of `names` that exists
    there and every folder of `skill_roots` inside it (or the workspace itself), links
    resolved; a link leading out of the workspace is left out (all outside it is
    read-only already). Shortest first, each once, none inside another."""
    root = workspace.resolve()
    found: list[Path] = []
    candidates = [*(root / name for name in names), *skill_roots]
    for candidate in candidates:
        try:
            if not os.path.lexists(candidate):
                continue
            real = candidate.resolve(strict=True)
        except (OSError, RuntimeError):
            continue  # a broken link, a loop: nothing to bind over
        if _under(real, [root]) and real not in found:
            found.append(real)
    found.sort(key=lambda path: len(path.parts))
    kept: list[Path] = []
    for path in found:
        if not _under(path, kept):
            kept.append(path)
    return kept


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
    protected: Sequence[str] = PROTECTED_PATHS,
    skill_roots: Sequence[Path] = (),
    visible: Sequence[Path] = (),
    etc_data: Sequence[tuple[int, str]] = (),
) -> list[str]:
    """The bubblewrap arguments, ending with ``--``, that confine one script run.

    The script sees only what is listed here (an allow-list over an empty root): the
    system folders and /etc pieces (`system_binds`), the Python installation and
    virtual environment, the `also_readable` folders (the supervisor's) and the
    `visible` ones (DPTTOOLS_SCRIPT_VISIBLE), read-only; a fresh /tmp, /dev and /proc;
    `workspace` (when given) read-write, or read-only when not `workspace_writable` (the
    call's token lacks ``write``), and `skill_dir` read-only; `workdir` becomes the
    working directory. `etc_data` (descriptor, path) pairs are files made from a
    descriptor's content (the generated /etc/passwd and /etc/group). In a writable
    workspace, the `protected` paths (relative to it) that exist and the `skill_roots`
    inside it are bound read-only over themselves (`protected_paths`). With
    `skill_dir_fd` (an open descriptor of `skill_dir`, which the caller passes on to
    bubblewrap) and a bubblewrap that can, the folder bound is the one that descriptor
    holds, whatever the path names by then; bubblewrap closes the descriptor once it is
    bound.
    """
    assert status.bwrap is not None
    args = [status.bwrap, *system_binds(network)]
    for fd, dest in etc_data:
        args += ["--ro-bind-data", str(fd), dest]
    args += ["--dev", "/dev", "--proc", "/proc"]
    if status.tmpfs_size:
        args += ["--size", str(temp_size_bytes)]
    args += ["--tmpfs", "/tmp"]
    # After the fresh /tmp: a later mount covers an earlier one, and a virtual
    # environment or a checkout under /tmp must stay visible.
    bound: list[Path] = []
    readable = {*_python_folders(), *also_readable, *visible}
    for folder in sorted(readable, key=lambda path: len(path.parts)):
        if _under(folder, bound) or not folder.exists():
            continue
        args += ["--ro-bind", str(folder), str(folder)]
        bound.append(folder)
    if workspace is not None and workspace.is_dir():
        bind = "--bind" if workspace_writable else "--ro-bind"
        args += [bind, str(workspace), str(workspace)]
        if workspace_writable:
            # After the workspace: a later bind covers an earlier one.
            for path in protected_paths(workspace, protected, skill_roots):
                args += ["--ro-bind", str(path), str(path)]
        for folder in bound:
            if folder != workspace and _under(folder, [workspace]):
                # A virtual environment in the workspace stays read-only.
                args += ["--ro-bind", str(folder), str(folder)]
    if skill_dir_fd is not None and status.bind_fd:
        args += ["--ro-bind-fd", str(skill_dir_fd), str(skill_dir)]
    else:
        args += ["--ro-bind", str(skill_dir), str(skill_dir)]
    # The empty root itself is read-only (and so cannot fill the host's memory).
    args += ["--remount-ro", "/"]
    # The command (the supervisor) is the namespace's init itself: one process fewer per
    # run, every orphan comes to it, and signals from inside cannot kill it.
    args += ["--chdir", str(workdir), *_namespaces(network), "--as-pid-1", "--"]
    return args


#: Options of bubblewrap that take two arguments and show something at the second.
_BINDS: Final = ("--bind", "--ro-bind", "--ro-bind-fd", "--symlink", "--ro-bind-data")
#: Options taking one argument; for --tmpfs, --dev and --proc it is where they are mounted.
_ONE_ARGUMENT: Final = (
    "--tmpfs",
    "--dev",
    "--proc",
    "--size",
    "--chdir",
    "--cap-drop",
    "--remount-ro",
)
_NOT_FOUND: Final = "No such file or directory"
#: Python's ``[Errno 2] No such file or directory: '<path>'`` (the path as a repr).
_PYTHON_NOT_FOUND: Final = re.compile(
    re.escape(_NOT_FOUND) + r""": ('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
)


def hidden_by(prefix: Sequence[str], path: Path) -> Path | None:
    """The empty folder under which the bubblewrap command `prefix` (as `bwrap_command`
    builds it) hides `path` (absolute, normalised), or None when the sandbox shows it.
    The last mount over a path is the one a script sees; a path under none of them is
    hidden by the sandbox's empty root (``/``)."""
    shown_by: tuple[Path, bool] | None = (Path("/"), False)
    index = 1
    while index < len(prefix) and prefix[index] != "--":
        option = prefix[index]
        if option in _BINDS and index + 2 < len(prefix):
            target = Path(prefix[index + 2])
            if _under(path, [target]):
                shown_by = (target, True)
            index += 3
        elif option in _ONE_ARGUMENT and index + 1 < len(prefix):
            target = Path(prefix[index + 1])
            if option in ("--tmpfs", "--dev", "--proc") and _under(path, [target]):
                shown_by = (target, option != "--tmpfs")
            index += 2
        else:
            index += 1
    if shown_by is None or shown_by[1]:
        return None
    return shown_by[0]


def _not_found_paths(stderr: str) -> Iterator[str]:
    """The paths `stderr` says were not found: Python's repr form, and the ``tool: PATH:
    No such file or directory`` lines of other programs (each possible split)."""
    for line in stderr.splitlines():
        if _NOT_FOUND not in line:
            continue
        found = _PYTHON_NOT_FOUND.search(line)
        if found is not None:
            try:
                value = ast.literal_eval(found.group(1))
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, str):
                yield value
            continue
        head = line[: line.index(_NOT_FOUND)].rstrip()
        if not head.endswith(":"):
            continue
        head = head[:-1]
        starts = [0] + [match.end() for match in re.finditer(": ", head)]
        for start in starts:
            yield head[start:].strip().strip("'\"\u2018\u2019")


def hidden_path_note(stderr: str, prefix: Sequence[str], workdir: Path) -> str | None:
    """One line for a script that failed on a file the sandbox hides, or None.

    `stderr` is the end of the script's standard error, `prefix` the bubblewrap command it
    ran under and `workdir` its working folder (relative paths are taken from there). A
    line is returned only for a path `stderr` reports as not found that exists on the
    host and lies under a folder `prefix` hides; never for a path that does not exist.
    """
    for named in _not_found_paths(stderr):
        if not named or "\x00" in named:
            continue
        path = Path(os.path.normpath(workdir / named))
        try:
            if not path.exists():
                continue
            real = path.resolve()
        except (OSError, RuntimeError, ValueError):
            continue
        folder = hidden_by(prefix, path) or hidden_by(prefix, real)
        if folder is None:
            continue
        shows = (
            "only the system folders, the Python installation, the skill, the workspace "
            "and the DPTTOOLS_SCRIPT_VISIBLE folders, not this one"
            if folder == Path("/")
            else f"{folder} as an empty folder"
        )
        return (
            f"Sandbox: {named} exists on the server, but skill scripts run under bubblewrap, "
            f"which shows them {shows}. To let scripts read the file, put it in the "
            "workspace (set DPTTOOLS_WORKSPACE_DIR; the sandbox shows it), add its folder "
            "to DPTTOOLS_SCRIPT_VISIBLE, or run scripts without the sandbox "
            "(DPTTOOLS_SCRIPT_SANDBOX=none)."
        )
    return None
