"""A control group per skill script call (Linux): one memory bound and one process bound
for everything the call starts, and a way to find and kill all of it afterwards.

The group is made under the server's own group of each hierarchy (read from
``/proc/self/cgroup``): with cgroup v2 in one folder holding ``memory.max`` and
``pids.max``, where the server's group already hands the memory and pids controllers down
(``cgroup.subtree_control``) and the server may write there; with cgroup v1 in the memory
hierarchy (``memory.limit_in_bytes``, and ``memory.memsw.limit_in_bytes`` where swap is
counted) and the pids hierarchy (``pids.max``), both writable. `cgroup_support()` probes
once per process which of them works; where none does, calls are bounded per process only
(resource limits), and the start-up line and the documentation say so.

The server moves the call's first process into the group before that process runs
anything (`CallGroup.add`), so every process the script starts is in it, whatever it does
to its session or environment. After the call, `CallGroup.close` kills what is left in it
(``cgroup.kill`` on v2; SIGKILL to every pid of ``cgroup.procs`` until it is empty on v1),
reaps those of them that came to the server as orphans, and removes the group. A server
killed during a call leaves its group behind, empty; the next server to probe removes
such groups once they are ten minutes old.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

__all__ = ["CallGroup", "CgroupSupport", "cgroup_support", "open_call_group"]

_PREFIX: Final = "dpt-script-"
_KILL_SECONDS: Final = 5.0
_STALE_SECONDS: Final = 600.0


@dataclass(frozen=True, slots=True)
class CgroupSupport:
    """Where per-call groups can be made on this machine, if anywhere."""

    version: Literal[1, 2] | None
    """2 or 1 when per-call groups work, None when they do not."""
    parents: tuple[Path, ...] = ()
    """The server's own group folders the call groups are made in (v2: one; v1: memory, pids)."""
    problem: str | None = None
    """Why they do not work (None when they do)."""

    def describe(self) -> str:
        """The bound in effect, as the start-up line says it."""
        if self.version is not None:
            return f"a cgroup v{self.version} per call bounds memory and processes"
        return (
            "no writable cgroup: memory and processes are bounded per process only "
            f"(resource limits; {self.problem})"
        )


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(mount point, root inside the hierarchy, type, super options) of each cgroup mount."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text("utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        fields = line.split()
        try:
            dash = fields.index("-")
        except ValueError:
            continue
        kind = fields[dash + 1]
        if kind in ("cgroup", "cgroup2"):
            options = set(fields[dash + 3].split(",")) if len(fields) > dash + 3 else set()
            found.append((fields[4], fields[3], kind, options))
    return found


def _own_groups() -> dict[str, str]:
    """Controller (or "" for v2) -> the server's group path, from /proc/self/cgroup."""
    groups: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text("utf-8").splitlines()
    except OSError:
        return groups
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            groups[name.removeprefix("name=")] = path
    return groups


def _folder(mount: str, root: str, path: str) -> Path:
    if root != "/" and (path == root or path.startswith(root + "/")):
        path = path[len(root) :]
    return Path(mount) / path.lstrip("/")


def _prune(parent: Path) -> None:
    """Remove the empty call groups of servers that died before removing theirs (killed
    during a call): those left for `_STALE_SECONDS`. A group with a process in it cannot
    be removed, and a call's group holds its processes from its first moment on."""
    now = time.time()
    with contextlib.suppress(OSError):
        for child in parent.iterdir():
            if not child.name.startswith(_PREFIX):
                continue
            with contextlib.suppress(OSError):
                if now - child.stat().st_mtime > _STALE_SECONDS and not _pids(child):
                    child.rmdir()


def _try_make(parent: Path) -> str | None:
    """Make and remove a probe group under `parent`; None when that works, else why not."""
    probe = parent / f"{_PREFIX}probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError as exc:
        return f"cannot make a group in {parent}: {exc.strerror}"
    with contextlib.suppress(OSError):
        probe.rmdir()
    return None


@functools.cache
def cgroup_support() -> CgroupSupport:
    """Probe, once per process, whether per-call groups can be made (see the module)."""
    mounts = _mounts()
    own = _own_groups()
    problems: list[str] = []
    for mount, root, kind, _options in mounts:
        if kind != "cgroup2" or "" not in own:
            continue
        parent = _folder(mount, root, own[""])
        try:
            enabled = (parent / "cgroup.subtree_control").read_text("ascii").split()
        except OSError:
            continue
        if not {"memory", "pids"} <= set(enabled):
            problems.append(f"cgroup v2 at {parent} does not hand down memory and pids")
            continue
        problem = _try_make(parent)
        if problem is None:
            _prune(parent)
            return CgroupSupport(2, (parent,))
        problems.append(problem)
    parents: dict[str, Path] = {}
    for mount, root, kind, options in mounts:
        for controller in ("memory", "pids"):
            if kind == "cgroup" and controller in options and controller in own:
                parents[controller] = _folder(mount, root, own[controller])
    if len(parents) == 2:
        v1_problems = [p for p in map(_try_make, parents.values()) if p is not None]
        if not v1_problems:
            for parent in parents.values():
                _prune(parent)
            return CgroupSupport(1, (parents["memory"], parents["pids"]))
        problems += v1_problems
    elif not problems:
        problems.append("no cgroup v2 with memory and pids, nor v1 memory and pids hierarchies")
    return CgroupSupport(None, problem="; ".join(problems))


def _write(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode("ascii"))
    finally:
        os.close(fd)


def _pids(folder: Path) -> list[int]:
    try:
        return [int(pid) for pid in (folder / "cgroup.procs").read_text("ascii").split()]
    except OSError:
        return []


@dataclass(slots=True)
class CallGroup:
    """The group of one call (one folder on v2, two on v1)."""

    version: Literal[1, 2]
    folders: tuple[Path, ...]
    memory_bytes: int
    seen: set[int] = field(default_factory=set)
    oom_killed: bool = False
    """Set by `close`: the kernel killed a process of the call for the memory bound."""

    def add(self, pid: int) -> None:
        """Move process `pid` (and so what it starts afterwards) into the group."""
        for folder in self.folders:
            _write(folder / "cgroup.procs", str(pid))

    def memory_killed(self) -> bool:
        """True when the kernel killed a process of the call for the group's memory bound."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            lines = (self.folders[0] / name).read_text("ascii").splitlines()
        except OSError:
            return False
        for line in lines:
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value) > 0
        return False

    def kill_all(self, exclude: int) -> int:
        """SIGKILL everything in the group until it is empty; return how many were
        signalled. Orphans that came to the server are reaped, never `exclude`."""
        killed: set[int] = set()
        if self.version == 2:
            with contextlib.suppress(OSError):
                killed.update(_pids(self.folders[0]))
                _write(self.folders[0] / "cgroup.kill", "1")
        deadline = time.monotonic() + _KILL_SECONDS
        while time.monotonic() < deadline:
            left = {pid for folder in self.folders for pid in _pids(folder)}
            if not left:
                break
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            killed |= left
            _reap(left - {exclude})
            time.sleep(0.002)
        self.seen |= killed
        return len(killed)

    def close(self, exclude: int) -> int:
        """Kill what is left, reap the orphans that came to the server (never `exclude`,
        the call's first process, which its own waiter reaps), remove the group; return how
        many processes were killed."""
        killed = self.kill_all(exclude)
        self.oom_killed = self.memory_killed()
        _reap(self.seen - {exclude})
        for folder in self.folders:
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        return killed


def _reap(pids: set[int]) -> None:
    """Reap those of `pids` that are children of this process and have ended."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def open_call_group(run_id: str, memory_mb: int, max_processes: int) -> CallGroup | None:
    """A new group for one call with its two bounds, or None where groups do not work.

    Raises:
        OSError: the group could not be made or bounded although the probe succeeded.
    """
    support = cgroup_support()
    if support.version is None:
        return None
    memory = memory_mb * 1024 * 1024
    folders = tuple(parent / f"{_PREFIX}{run_id}" for parent in support.parents)
    group = CallGroup(support.version, folders, memory)
    made: list[Path] = []
    try:
        for folder in folders:
            folder.mkdir()
            made.append(folder)
        if support.version == 2:
            _write(folders[0] / "memory.max", str(memory))
            with contextlib.suppress(OSError):
                _write(folders[0] / "memory.swap.max", "0")
            _write(folders[0] / "pids.max", str(max_processes))
        else:
            _write(folders[0] / "memory.limit_in_bytes", str(memory))
            if (folders[0] / "memory.memsw.limit_in_bytes").exists():
                _write(folders[0] / "memory.memsw.limit_in_bytes", str(memory))
            _write(folders[1] / "pids.max", str(max_processes))
    except OSError:
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    return group
