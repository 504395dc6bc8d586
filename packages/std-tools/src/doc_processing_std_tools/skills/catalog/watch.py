"""Which skill folders changed since the last look, from the kernel (Linux inotify).

The MCP Skills extension publishes a digest of every file, so telling an unchanged skill
from a changed one by ``stat`` costs one call per folder and per file on every listing.
On a local Linux file system the kernel can say it instead: every folder and file walked
is watched *before* it is read, and any write, attribute change, creation, deletion or
rename queues an event at the moment of the change. A skill with no event since its last
walk is unchanged, exactly; draining the queue is one ``read``.

Where the kernel cannot vouch for every change, nothing is trusted and the caller falls
back to comparing ``stat`` stamps: no inotify (not Linux, or inotify-simple missing), a
file system whose changes may come from elsewhere (NFS, SMB, FUSE and any type not known
to be local), a folder on another device than the skills folder, the watch limit reached,
or an overflowing event queue (then every folder is walked again).
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Any, Final

__all__ = ["EVERYTHING", "LOCAL_FILE_SYSTEMS", "FolderWatch"]

logger = logging.getLogger(__name__)

LOCAL_FILE_SYSTEMS: Final = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "ramfs", "overlay", "zfs", "f2fs"}
)
"""File system types whose every change goes through this kernel, so inotify sees it."""

EVERYTHING: Final = "*"
"""Returned by `FolderWatch.changed` in place of keys when every folder must be walked."""

# IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE,
# IN_DELETE_SELF, IN_MOVE_SELF: every change to content, metadata or the set of names.
_MASK: Final = 0x002 | 0x004 | 0x008 | 0x040 | 0x080 | 0x100 | 0x200 | 0x400 | 0x800
# IN_DELETE_SELF, IN_MOVE_SELF: the skills folder or a folder above it is moved or removed,
# so every path may now lead to other files without any event on the watched ones.
_SELF_MASK: Final = 0x400 | 0x800
_IN_Q_OVERFLOW: Final = 0x4000
_IN_IGNORED: Final = 0x8000


def _file_system_type(path: Path) -> str | None:
    """The type of the file system holding `path`, from /proc/self/mountinfo."""
    try:
        lines = Path("/proc/self/mountinfo").read_text("utf-8", "replace").splitlines()
    except OSError:
        return None
    best: tuple[int, str] | None = None
    target = str(path)
    for line in lines:
        head, _, tail = line.partition(" - ")
        fields = head.split()
        if len(fields) < 5 or not tail:
            continue
        mount_point = fields[4].replace("\\040", " ")
        inside = target == mount_point or target.startswith(mount_point.rstrip("/") + "/")
        if inside and (best is None or len(mount_point) > best[0]):
            best = (len(mount_point), tail.split()[0])
    return None if best is None else best[1]


class FolderWatch:
    """inotify watches on skill folders, each owned by a key (the skill folder's path).

    Not thread-safe: the caller serialises every call (the publisher holds its lock).
    """

    def __init__(self, *, enabled: bool = True) -> None:
        """Open an inotify instance (unless not `enabled`), or record why there is none."""
        self._inotify: Any = None
        # The key of each watch, or the keys when several share the path (a set only then:
        # one watch per walked path, tens of thousands of them).
        self._owners: dict[int, str | set[str]] = {}
        self._roots: dict[str, int | None] = {}
        # Paths watched with another mask than every change (the skills folder and those
        # above it): inotify replaces a path's mask on each add_watch, so a later watch of
        # the same path keeps these events too.
        self._masks: dict[str, int] = {}
        if not enabled:
            return
        try:
            import inotify_simple  # type: ignore[import-untyped,unused-ignore]

            self._inotify = inotify_simple.INotify(nonblocking=True)
        except (ImportError, OSError, AttributeError) as exc:
            logger.debug("no inotify (%s); skill folders are checked with stat", exc)

    def covers(self, skills_dir: Path) -> int | None:
        """The device of `skills_dir` when its changes can be watched, else None."""
        if self._inotify is None:
            return None
        key = str(skills_dir)
        if key not in self._roots:
            kind = _file_system_type(skills_dir)
            device: int | None = None
            if kind in LOCAL_FILE_SYSTEMS:
                try:
                    device = os.stat(skills_dir).st_dev  # noqa: PTH116
                except OSError:
                    device = None
                for folder in (skills_dir, *skills_dir.parents):
                    if not self.watch(str(folder), EVERYTHING, _SELF_MASK):
                        device = None
            else:
                logger.info(
                    "skills folder %s is on a %s file system; its changes are checked with "
                    "stat on every listing",
                    skills_dir,
                    kind or "unknown",
                )
            self._roots[key] = device
        return self._roots[key]

    def watch(self, path: str, key: str, mask: int = _MASK) -> bool:
        """Watch `path` on behalf of `key` (every change, unless `mask` says otherwise);
        False when it cannot be watched. `EVERYTHING` as the key makes any event on the
        path mark every folder as changed."""
        if self._inotify is None:
            return False
        try:
            wd: int = self._inotify.add_watch(path, mask | self._masks.get(path, 0))
        except OSError as exc:
            if exc.errno == 28:  # ENOSPC: the per-user watch limit is reached
                logger.warning(
                    "inotify watch limit reached (fs.inotify.max_user_watches); skill "
                    "folders are checked with stat from now on"
                )
                self.close()
            return False
        if mask != _MASK:
            self._masks[path] = mask | self._masks.get(path, 0)
        owners = self._owners.get(wd)
        if owners is None or owners == key:
            self._owners[wd] = key
        elif isinstance(owners, set):
            owners.add(key)
        else:
            self._owners[wd] = {owners, key}
        return True

    def changed(self) -> set[str]:
        """The keys with an event since the last call; `EVERYTHING` in the set when the
        events cannot be attributed (an overflow, a watch nobody owns)."""
        if self._inotify is None:
            return {EVERYTHING}
        try:
            events = list(self._inotify.read(timeout=0))
        except OSError:
            self.close()
            return {EVERYTHING}
        keys: set[str] = set()
        for event in events:
            if event.mask & _IN_Q_OVERFLOW:
                return {EVERYTHING}
            owners = self._owners.get(event.wd)
            if owners is None:
                continue  # a watch already released: its owners were marked before
            if isinstance(owners, str):
                keys.add(owners)
            else:
                keys.update(owners)
            if event.mask & _IN_IGNORED:
                del self._owners[event.wd]
        return keys

    @property
    def active(self) -> bool:
        """True while the kernel delivers events."""
        return self._inotify is not None

    def close(self) -> None:
        """Close the inotify instance; from now on every check falls back to stat."""
        if self._inotify is not None:
            with contextlib.suppress(OSError):
                self._inotify.close()
        self._inotify = None
        self._owners.clear()
        self._masks.clear()
