"""The script's view of the workspace, built inside bubblewrap by the supervisor before
the script starts (Linux; see `sandbox.bwrap_command` for the plan it reads and
`_staging` for what the server does with the staging layer afterwards).

`set_up_view` mounts, while the supervisor still holds the capabilities bubblewrap gave
it:

- a tmpfs bounded by the limits on changes, holding the overlay's upper layer, its work
  folder and a layer of whiteouts (0:0 character devices) that hides the secrets;
- as root, the workspace (and each folder bound again over the view that asks for it,
  the skill's) through an idmapped mount that shows its owner as the scripts' user, so
  the script may write its view of a root-owned workspace; a file system that cannot map
  owners is shown as it is;
- the overlay over the workspace (lowerdir: the whiteouts, then the workspace; upperdir:
  the tmpfs), without redirects, so a folder renamed in the view is copied;
- the read-only folders inside the workspace, bound again over the view.

It then sends the server a descriptor of the upper layer, detaches every staging mount,
and moves into a copy of the tree mounted on a folder of it: the process's root is then
not its mount namespace's own, and the kernel makes no user namespace from such a root,
so nested user namespaces are off for the script and all it starts. This module uses the
standard library only, since the supervisor loads it by path, without the package.
"""

# pathlib is not imported here, to start fast.
# ruff: noqa: PTH101, PTH102, PTH112, PTH116, PTH118

from __future__ import annotations

import ctypes
import os
import stat

__all__ = ["read_plan", "set_up_view"]

_CLONE_NEWUSER = 0x10000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MNT_DETACH = 2
_AT_FDCWD = -100
_AT_EMPTY_PATH = 0x1000
_OPEN_TREE_CLONE = 1
_OPEN_TREE_CLOEXEC = 0o2000000
_MOVE_MOUNT_F_EMPTY_PATH = 4
_MOUNT_ATTR_RDONLY = 1
_MOUNT_ATTR_IDMAP = 0x00100000
# The same numbers on every architecture (the new mount API is in the common table).
_SYS_OPEN_TREE = 428
_SYS_MOVE_MOUNT = 429
_SYS_MOUNT_SETATTR = 442
_PR_SET_DUMPABLE = 4

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


def _mount(source: str, target: str, kind: str | None, flags: int, data: str = "") -> None:
    _checked(
        _libc().mount(
            source.encode(),
            target.encode(),
            kind.encode() if kind else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {kind or 'bind'} on {target}",
    )


def _detach(target: str) -> None:
    _checked(_libc().umount2(target.encode(), _MNT_DETACH), f"detach {target}")


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _mapping_namespace(disk: tuple[int, int], shown: tuple[int, int]) -> int:
    """A user namespace (its descriptor) that maps the on-disk owner `disk` (uid, gid) to
    `shown`: what an idmapped mount made with it shows that owner as."""
    ready_read, ready_write = os.pipe()
    done_read, done_write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked child
        try:
            os.close(ready_read)
            os.close(done_write)
            # The parent opens this process's namespace through /proc.
            _libc().prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
            _checked(_libc().unshare(_CLONE_NEWUSER), "new user namespace")
            os.write(ready_write, b"1")
            os.read(done_read, 1)
        finally:
            os._exit(0)
    os.close(ready_write)
    os.close(done_read)
    try:
        if os.read(ready_read, 1) != b"1":
            raise OSError("the helper process could not make a user namespace")
        for name, text in (
            ("uid_map", f"{disk[0]} {shown[0]} 1\n"),
            ("setgroups", "deny"),
            ("gid_map", f"{disk[1]} {shown[1]} 1\n"),
        ):
            with open(f"/proc/{child}/{name}", "w", encoding="ascii") as handle:
                handle.write(text)
        return os.open(f"/proc/{child}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(ready_read)
        os.close(done_write)
        os.waitpid(child, 0)


def _idmapped_bind(source: str, target: str, namespace: int) -> None:
    """Bind `source` at `target`, read-only, with the owners `namespace` maps."""
    libc = _libc()
    tree = _checked(
        libc.syscall(
            _SYS_OPEN_TREE, _AT_FDCWD, source.encode(), _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC
        ),
        f"clone the mount of {source}",
    )
    try:
        attr = _MountAttr(_MOUNT_ATTR_IDMAP | _MOUNT_ATTR_RDONLY, 0, 0, namespace)
        _checked(
            libc.syscall(
                _SYS_MOUNT_SETATTR,
                tree,
                b"",
                _AT_EMPTY_PATH,
                ctypes.byref(attr),
                ctypes.sizeof(attr),
            ),
            f"map the owners of {source}",
        )
        _checked(
            libc.syscall(
                _SYS_MOVE_MOUNT, tree, b"", _AT_FDCWD, target.encode(), _MOVE_MOUNT_F_EMPTY_PATH
            ),
            f"attach {source} at {target}",
        )
    finally:
        os.close(tree)


def read_plan(fd: int) -> dict[str, object]:
    import json

    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    plan: dict[str, object] = json.loads(b"".join(chunks))
    return plan


def _whiteouts(mask: str, lower: str, hidden: list[str]) -> None:
    """Make the layer above the workspace that hides each of `hidden` (relative paths):
    a whiteout (a 0:0 character device) in folders with the owner and mode the
    workspace's own folders show."""
    for rel in hidden:
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            made = os.path.join(mask, folder)
            if os.path.isdir(made):
                continue
            info = os.stat(os.path.join(lower, folder), follow_symlinks=False)
            os.mkdir(made, 0o700)
            os.chown(made, info.st_uid, info.st_gid)
            os.chmod(made, stat.S_IMODE(info.st_mode))
        os.mknod(os.path.join(mask, rel), stat.S_IFCHR | 0o600, 0)


def set_up_view(plan: dict[str, object], stage_fd: int) -> None:
    """Build the script's view (see the module docstring), then confine the process to a
    root that is not its mount namespace's own, where no user namespace can be made."""
    owner = plan.get("map")
    shown = (int(owner[0]), int(owner[1])) if isinstance(owner, list) else None
    namespaces: dict[tuple[int, int], int] = {}

    def mapped_bind(source: str, target: str) -> bool:
        """An idmapped read-only bind showing `source`'s owner as the script's user;
        False where the file system cannot map owners (then nothing was mounted)."""
        assert shown is not None
        disk = os.stat(source)
        key = (disk.st_uid, disk.st_gid)
        if key not in namespaces:
            namespaces[key] = _mapping_namespace(key, shown)
        try:
            _idmapped_bind(source, target, namespaces[key])
        except OSError as exc:
            if exc.errno in (22, 95):  # EINVAL, EOPNOTSUPP: no idmapped mounts there
                return False
            raise
        return True

    workspace = plan.get("workspace")
    upper_fd = None
    detach: list[str] = []
    if isinstance(workspace, str):
        stage = str(plan["stage"])
        lower = workspace
        if shown is not None and mapped_bind(workspace, str(plan["lower"])):
            lower = str(plan["lower"])
            detach.append(lower)
        writable = bool(plan.get("writable"))
        hidden = [str(rel) for rel in plan.get("hidden", [])]  # type: ignore[attr-defined]
        options = ""
        if writable or hidden:
            _mount("stage", stage, "tmpfs", _MS_NOSUID | _MS_NODEV, str(plan["tmpfs"]))
            detach.append(stage)
            mask = os.path.join(stage, "mask")
            os.mkdir(mask, 0o700)
            # The top layer's root is the view's root: the workspace's owner and mode.
            top = os.stat(lower)
            os.chown(mask, top.st_uid, top.st_gid)
            os.chmod(mask, stat.S_IMODE(top.st_mode))
            _whiteouts(mask, lower, hidden)
            layers = f"{mask}:{lower}" if hidden else lower
            options = f"lowerdir={layers}"
        if writable:
            upper, work = os.path.join(stage, "upper"), os.path.join(stage, "work")
            for folder in (upper, work):
                os.mkdir(folder, 0o700)
            top = os.stat(lower)
            os.chown(upper, top.st_uid, top.st_gid)
            os.chmod(upper, stat.S_IMODE(top.st_mode))
            options += f",upperdir={upper},workdir={work}"
            # A folder renamed in the view is copied, never recorded as a redirect
            # (``userxattr``, which a user namespace needs, implies as much).
            options += ",redirect_dir=off" if shown is not None else ",userxattr"
            upper_fd = os.open(upper, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        elif not hidden:
            options = ""
        if options:
            _mount("overlay", workspace, "overlay", _MS_NOSUID | _MS_NODEV, options)
        elif lower != workspace:
            _mount(lower, workspace, None, _MS_BIND | _MS_REC)
    for source, target, mapped in plan.get("keep", []):  # type: ignore[attr-defined]
        if not (mapped and shown is not None and mapped_bind(source, target)):
            _mount(source, target, None, _MS_BIND | _MS_REC)
            _mount("", target, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID)
        detach.append(str(source))
    import socket

    with socket.socket(fileno=stage_fd) as channel:
        socket.send_fds(channel, [b"upper"], [] if upper_fd is None else [upper_fd])
    if upper_fd is not None:
        os.close(upper_fd)
    for namespace in namespaces.values():
        os.close(namespace)
    for target in detach:
        _detach(target)
    _confine_root(str(plan["root"]))


def _confine_root(root: str) -> None:
    """Move into a copy of the file system tree mounted at `root` (a folder of it): the
    process's root is then not its mount namespace's own, and the kernel refuses to make
    a user namespace from such a root (nested user namespaces are off)."""
    _mount("/", root, None, _MS_BIND | _MS_REC)
    os.chdir(root)
    os.chroot(".")
    os.chdir("/")
