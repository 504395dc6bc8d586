"""Staging a skill script's changes: what the script may not see, and applying what it
changed by the change policy (Linux, under bubblewrap).

A script never writes the workspace. Its view of it is an overlay whose upper layer is a
bounded tmpfs inside the sandbox (`_supervisor._set_up_view`); the supervisor hands the
server a descriptor of that layer before the script starts. When the call is over the
server, as its own user, walks the layer (`apply_changes`) and, for each change,

- asks `ChangePolicy.verdict` whether it may be applied (plain files with ordinary modes:
  yes; version-control, hook, agent, build, bytecode and skills paths, executables, links,
  special files, privileged modes and secrets: held back with the reason);
- applies it through descriptors, never following a link: a new or changed file is
  written next to its target and renamed over it, with the target's owner (a new file
  gets the workspace folder's owner), a deletion removes only what the script could see
  and the policy lets go, a folder the script emptied and made again loses what it held.

Held-back content is never written anywhere: it goes with the layer when the descriptor
is closed. Past the limits on files and bytes changed (DPTTOOLS_SCRIPT_MAX_CHANGED_FILES
and _MB) nothing is applied. The layer records only what changed, so applying costs in
proportion to the changes, not to the workspace.

`hidden_paths` lists the secrets under a workspace (`ChangePolicy.hidden`) that the view
leaves out. It remembers each folder's listing with its modification time, so a call
re-reads only the folders that changed since the last one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Final, Literal

from ...change_policy import ChangePolicy

__all__ = ["Changes", "apply_changes", "hidden_paths"]

_OPAQUE: Final = ("trusted.overlay.opaque", "user.overlay.opaque")
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK: Final = 1 << 20

Kind = Literal["file", "dir", "link", "special"]


@dataclass
class Changes:
    """What became of one call's changes to the workspace."""

    applied: list[str] = field(default_factory=list)
    """The paths applied (relative to the workspace; a trailing ``/`` marks a folder, a
    leading ``-`` a deletion)."""
    held: list[tuple[str, str]] = field(default_factory=list)
    """(path, why) for each change held back."""
    refused: str | None = None
    """Why nothing was applied at all (a limit was passed), or None."""

    def to_payload(self, room: int) -> dict[str, Any]:
        """The ``changes`` object of the tool result, its path lists cut to about `room`
        characters."""
        payload: dict[str, Any] = {"applied": len(self.applied)}
        if self.refused:
            payload["refused"] = self.refused
        payload["applied_paths"], left = _fit([f'"{path}"' for path in self.applied], room // 2)
        if left:
            payload["applied_paths_left_out"] = left
        held = [{"path": path, "why": why} for path, why in self.held]
        payload["held_back"] = len(held)
        shown, left = _fit([f"{item}" for item in held], room // 2)
        payload["held_back_paths"] = held[: len(shown)]
        if left:
            payload["held_back_left_out"] = left
        return payload

    def summary(self) -> str:
        """One line for the log."""
        return f"{len(self.applied)} applied, {len(self.held)} held back" + (
            f", refused: {self.refused}" if self.refused else ""
        )


def _fit(items: list[str], room: int) -> tuple[list[str], int]:
    """The first of `items` whose text fits in `room`, and how many were left out."""
    used = 0
    for index, item in enumerate(items):
        used += len(item) + 2
        if used > room:
            return [text.strip('"') for text in items[:index]], len(items) - index
    return [text.strip('"') for text in items], 0


@dataclass(frozen=True, slots=True)
class _Entry:
    """One change found in the upper layer."""

    action: Literal["write", "mkdir", "delete", "clear", "other"]
    rel: PurePosixPath
    kind: Kind = "file"
    mode: int | None = None
    size: int = 0
    upper: tuple[int, str] | None = None
    """(descriptor of its folder in the layer, its name) for a write; the descriptor
    stays open until the changes are applied."""
    keep: frozenset[str] = frozenset()
    """For ``clear``: the names the layer holds in that folder (everything else goes);
    for ``mkdir``: the same, so that an empty new folder is made at once and one with
    content only when something in it is applied."""


def _kind(mode: int) -> Kind:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "special"


def _opaque(fd: int) -> bool:
    for name in _OPAQUE:
        with contextlib.suppress(OSError):
            if os.getxattr(fd, name) == b"y":
                return True
    return False


def _lstat(workspace_fd: int, rel: PurePosixPath) -> os.stat_result | None:
    """`rel` under the workspace without following a link at any step, or None."""
    parent = _open_parent(workspace_fd, rel)
    if parent is None:
        return None
    try:
        return os.stat(rel.name, dir_fd=parent, follow_symlinks=False)
    except OSError:
        return None
    finally:
        os.close(parent)


def _open_parent(workspace_fd: int, rel: PurePosixPath) -> int | None:
    """A descriptor of the folder holding `rel`, reached without following links."""
    fd = os.dup(workspace_fd)
    for part in rel.parts[:-1]:
        try:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = child
    return fd


def _same_file(upper_dir: int, name: str, target_dir: int, target: str, size: int) -> bool:
    """True when the layer's file holds the same bytes as the workspace's."""
    try:
        theirs = os.stat(target, dir_fd=target_dir, follow_symlinks=False)
        if not stat.S_ISREG(theirs.st_mode) or theirs.st_size != size:
            return False
        mine = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=upper_dir)
    except OSError:
        return False
    try:
        other = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=target_dir)
    except OSError:
        os.close(mine)
        return False
    try:
        while True:
            left, right = os.read(mine, _CHUNK), os.read(other, _CHUNK)
            if left != right:
                return False
            if not left:
                return True
    finally:
        os.close(mine)
        os.close(other)


def _scan(
    upper_fd: int,
    workspace_fd: int,
    prefix: PurePosixPath,
    held: list[int],
    replaced: bool = False,
) -> Iterator[_Entry]:
    """The changes the layer folder `upper_fd` (at `prefix`) records, parents first.
    `replaced`: a folder above was made again (opaque), so every folder in this one
    replaces the workspace's folder of that name, whatever it held."""
    with os.scandir(upper_fd) as listing:
        names = sorted(entry.name for entry in listing)
    target_dir = _open_parent(workspace_fd, prefix / "x") if names else None
    try:
        for name in names:
            rel = prefix / name
            info = os.stat(name, dir_fd=upper_fd, follow_symlinks=False)
            mode = info.st_mode
            if stat.S_ISCHR(mode) and info.st_rdev == 0:
                yield _Entry("delete", rel)
                continue
            if stat.S_ISDIR(mode):
                child = os.open(name, _DIR_FLAGS, dir_fd=upper_fd)
                held.append(child)
                there = _lstat(workspace_fd, rel)
                with os.scandir(child) as listing:
                    inside = frozenset(e.name for e in listing)
                made_again = replaced or _opaque(child)
                if there is None or not stat.S_ISDIR(there.st_mode):
                    yield _Entry("mkdir", rel, "dir", stat.S_IMODE(mode), keep=inside)
                elif made_again:
                    yield _Entry("clear", rel, "dir", keep=inside)
                yield from _scan(child, workspace_fd, rel, held, made_again)
                continue
            if stat.S_ISREG(mode):
                if target_dir is not None and _same_file(
                    upper_fd, name, target_dir, name, info.st_size
                ):
                    there = os.stat(name, dir_fd=target_dir, follow_symlinks=False)
                    if stat.S_IMODE(there.st_mode) == stat.S_IMODE(mode):
                        continue  # copied up without a change (opened for writing, touched)
                yield _Entry(
                    "write", rel, "file", stat.S_IMODE(mode), info.st_size, (upper_fd, name)
                )
                continue
            yield _Entry("other", rel, _kind(mode), stat.S_IMODE(mode))
    finally:
        if target_dir is not None:
            os.close(target_dir)


class _Applier:
    """Applies the allowed changes to the workspace open as `workspace_fd`."""

    def __init__(self, workspace: Path, workspace_fd: int, policy: ChangePolicy) -> None:
        self.workspace = workspace
        self.fd = workspace_fd
        self.policy = policy
        self.changes = Changes()
        self.pending: dict[PurePosixPath, int] = {}
        """New folders made once something in them is applied (folder -> mode)."""
        top = os.fstat(workspace_fd)
        self.owner = (top.st_uid, top.st_gid) if os.geteuid() == 0 else None

    def verdict(self, rel: PurePosixPath, kind: Kind, mode: int | None) -> str | None:
        return self.policy.verdict(rel, kind=kind, mode=mode, workspace=self.workspace)

    def hold(self, rel: PurePosixPath, why: str) -> None:
        self.changes.held.append((str(rel), why))

    def apply(self, entry: _Entry) -> None:
        rel = entry.rel
        if entry.action == "other":
            why = self.verdict(rel, entry.kind, entry.mode)
            self.hold(rel, why or f"{rel} is not a plain file or folder")
            return
        if entry.action == "delete":
            self.remove(rel)
            return
        if entry.action == "clear":
            parent = self.open_folder(rel)
            if parent is None:
                return
            try:
                with os.scandir(parent) as listing:
                    gone = sorted(e.name for e in listing if e.name not in entry.keep)
            finally:
                os.close(parent)
            for name in gone:
                self.remove(rel / name)
            return
        why = self.verdict(rel, entry.kind, entry.mode)
        if why is not None:
            self.hold(rel, why)
            return
        if entry.action == "mkdir" and entry.keep:
            self.pending[rel] = entry.mode or 0o755
            return
        self.make_parents(rel)
        parent = _open_parent(self.fd, rel)
        if parent is None:
            self.hold(rel, f"{rel}: its folder is not in the workspace (it was held back)")
            return
        try:
            there = _stat_at(parent, rel.name)
            if there is not None and (entry.action == "mkdir") != stat.S_ISDIR(there.st_mode):
                if not self.remove(rel):
                    return
                there = None
            if entry.action == "mkdir":
                if there is None:
                    os.mkdir(rel.name, (entry.mode or 0o755) & 0o777, dir_fd=parent)
                    self.own(parent, rel.name, None)
                    self.changes.applied.append(f"{rel}/")
                return
            assert entry.upper is not None
            self.write(parent, rel, entry, there)
        finally:
            os.close(parent)

    def make_parents(self, rel: PurePosixPath) -> None:
        """Make the new folders above `rel` that wait for content."""
        for folder in reversed(rel.parents):
            mode = self.pending.pop(folder, None)
            if mode is not None:
                self.apply(_Entry("mkdir", folder, "dir", mode))

    def open_folder(self, rel: PurePosixPath) -> int | None:
        parent = _open_parent(self.fd, rel)
        if parent is None:
            return None
        try:
            return os.open(rel.name, _DIR_FLAGS, dir_fd=parent)
        except OSError:
            return None
        finally:
            os.close(parent)

    def own(self, parent: int, name: str, like: os.stat_result | None) -> None:
        """As root, give a file the owner of the one it replaces, or of the workspace."""
        if self.owner is None:
            return
        uid, gid = (like.st_uid, like.st_gid) if like is not None else self.owner
        os.chown(name, uid, gid, dir_fd=parent, follow_symlinks=False)

    def write(
        self, parent: int, rel: PurePosixPath, entry: _Entry, there: os.stat_result | None
    ) -> None:
        assert entry.upper is not None
        upper_dir, name = entry.upper
        temp = f".{name[:40]}.dpt-{uuid.uuid4().hex[:12]}"
        source = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=upper_dir)
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            target = os.open(temp, flags, 0o600, dir_fd=parent)
            try:
                _copy(source, target)
                if self.owner is not None:
                    uid, gid = (there.st_uid, there.st_gid) if there is not None else self.owner
                    os.fchown(target, uid, gid)
                os.fchmod(target, (entry.mode or 0o644) & 0o777)
            finally:
                os.close(target)
            os.rename(temp, rel.name, src_dir_fd=parent, dst_dir_fd=parent)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent)
            raise
        finally:
            os.close(source)
        self.changes.applied.append(str(rel))

    def remove(self, rel: PurePosixPath) -> bool:
        """Delete `rel` from the workspace as far as the policy lets it (a folder: what
        in it may go, then the folder if it is empty); True when nothing is left."""
        parent = _open_parent(self.fd, rel)
        if parent is None:
            return True
        try:
            there = _stat_at(parent, rel.name)
            if there is None:
                return True
            kind = _kind(there.st_mode)
            why = self.verdict(rel, kind, None)
            if why is not None:
                self.hold(rel, why)
                return False
            if kind != "dir":
                os.unlink(rel.name, dir_fd=parent)
                self.changes.applied.append(f"-{rel}")
                return True
            folder = os.open(rel.name, _DIR_FLAGS, dir_fd=parent)
            try:
                with os.scandir(folder) as listing:
                    names = sorted(entry.name for entry in listing)
            finally:
                os.close(folder)
            emptied = all([self.remove(rel / name) for name in names])
            if not emptied:
                return False
            try:
                os.rmdir(rel.name, dir_fd=parent)
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                self.hold(rel, f"{rel}/ was kept: it holds files the script could not see")
                return False
            self.changes.applied.append(f"-{rel}/")
            return True
        finally:
            os.close(parent)


def _stat_at(parent: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _copy(source: int, target: int) -> None:
    while True:
        try:
            copied = os.copy_file_range(source, target, _CHUNK)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                raise
            chunk = os.read(source, _CHUNK)
            if not chunk:
                return
            os.write(target, chunk)
            continue
        if copied == 0:
            return


def apply_changes(
    upper_fd: int,
    workspace: Path,
    policy: ChangePolicy,
    *,
    max_files: int,
    max_bytes: int,
) -> Changes:
    """Apply by `policy` the changes recorded in the upper layer open as `upper_fd` to
    `workspace`; report what was applied and what was held back (see the module
    docstring). Past `max_files` changed files or `max_bytes` of content, or when the
    layer filled up during the call, nothing is applied."""
    workspace_fd = os.open(workspace, _DIR_FLAGS)
    held: list[int] = []
    try:
        entries = list(_scan(upper_fd, workspace_fd, PurePosixPath(), held))
        files = sum(entry.action != "mkdir" for entry in entries)
        size = sum(entry.size for entry in entries)
        room = os.fstatvfs(upper_fd)
        full = room.f_bavail == 0 or room.f_favail == 0
        if files > max_files or size > max_bytes or full:
            mib = max_bytes / (1 << 20)
            return Changes(
                refused=(
                    f"the script changed {'at least ' if full else ''}{files} file(s) and "
                    f"{size / (1 << 20):.1f} MiB, more than one call may change "
                    f"({max_files} files, DPTTOOLS_SCRIPT_MAX_CHANGED_FILES; {mib:g} MiB, "
                    "DPTTOOLS_SCRIPT_MAX_CHANGED_MB), so none of its changes were applied. "
                    "Have the script write less, or ask the operator to raise the limits."
                )
            )
        applier = _Applier(workspace, workspace_fd, policy)
        for entry in entries:
            try:
                applier.apply(entry)
            except OSError as exc:
                applier.hold(entry.rel, f"{entry.rel} could not be applied ({exc.strerror})")
        return applier.changes
    finally:
        for fd in held:
            os.close(fd)
        os.close(workspace_fd)


_HIDDEN_CACHE: OrderedDict[tuple[str, tuple[str, ...]], dict[str, _Listing]] = OrderedDict()


@dataclass(frozen=True, slots=True)
class _Listing:
    """One workspace folder as last read: its identity and modification time, the hidden
    names in it and its sub-folders."""

    stamp: tuple[int, int, int]
    hidden: tuple[str, ...]
    folders: tuple[str, ...]


def hidden_paths(workspace: Path, policy: ChangePolicy) -> list[str]:
    """The paths under `workspace` (relative, ``/`` between parts) that `policy` hides
    from scripts; a hidden folder is listed, not what is in it. Links are not followed."""
    if not policy.hide:
        return []
    key = (str(workspace), policy.hide)
    known = _HIDDEN_CACHE.pop(key, {})
    fresh: dict[str, _Listing] = {}
    answers: dict[PurePosixPath, bool] = {}
    found: list[str] = []
    pending = [""]
    while pending:
        rel = pending.pop()
        folder = workspace / rel if rel else workspace
        try:
            info = folder.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode):
            continue
        stamp = (info.st_dev, info.st_ino, info.st_mtime_ns)
        listing = known.get(rel)
        if listing is None or listing.stamp != stamp:
            listing = _list_folder(folder, rel, stamp, policy, answers)
        fresh[rel] = listing
        found += [f"{rel}/{name}" if rel else name for name in listing.hidden]
        pending += [f"{rel}/{name}" if rel else name for name in listing.folders]
    _HIDDEN_CACHE[key] = fresh
    while len(_HIDDEN_CACHE) > 8:
        _HIDDEN_CACHE.popitem(last=False)
    return sorted(found)


def _list_folder(
    folder: Path,
    rel: str,
    stamp: tuple[int, int, int],
    policy: ChangePolicy,
    answers: dict[PurePosixPath, bool],
) -> _Listing:
    """Read one folder: its hidden names and its sub-folders. `answers` remembers the
    policy's answer for each tail of a path already asked about (names repeat a lot
    across the folders of a project)."""
    hidden: list[str] = []
    folders: list[str] = []
    # The folder itself is not hidden (it would not be listed), so a pattern can match
    # only in its last few parts: as many as the longest pattern has, this name included.
    depth = max(len(pattern.strip("/").split("/")) for pattern in policy.hide) - 1
    parts = PurePosixPath(rel).parts if rel else ()
    base = PurePosixPath(*parts[len(parts) - depth :]) if depth and parts else PurePosixPath()
    try:
        with os.scandir(folder) as listing:
            entries = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in listing]
    except OSError:
        entries = []
    for name, is_dir in entries:
        tail = base / name
        secret = answers.get(tail)
        if secret is None:
            secret = answers[tail] = policy.hidden(tail)
        if secret:
            hidden.append(name)
        elif is_dir:
            folders.append(name)
    return _Listing(stamp, tuple(sorted(hidden)), tuple(folders))
