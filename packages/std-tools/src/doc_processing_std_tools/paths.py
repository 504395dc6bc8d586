"""Confine a user-supplied relative path inside a root folder.

This is the one place that states the rules for a path argument: `check_relative` refuses
what is wrong on its face (empty, absolute, ``..``, a NUL byte) before the disk is touched,
and `confine` also follows symbolic links, so a link that points outside the root is
refused even when its target exists.

`confine` answers by name, which suits listings and checks. Opening, reading or writing a
file goes through `_io`, which walks the same rules on open folder descriptors, so a link
swapped in during the call cannot lead it outside the root.
"""

from __future__ import annotations

import errno
from pathlib import Path, PurePosixPath, PureWindowsPath

from .errors import InvalidArgumentError, PathOutsideRootError

__all__ = [
    "check_relative",
    "confine",
    "is_inside",
    "loop_error",
    "names_nothing",
    "outside_error",
    "real_path",
]

# The errors that `Path.exists()` and `Path.is_file()` answer False to: no such file, a
# file used as a folder on the way, a bad descriptor, a loop of symbolic links; on Windows
# a drive that is not ready, a name that is not valid, a name that cannot be resolved.
_ABSENT_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})
_ABSENT_WINERRORS = frozenset({21, 123, 1921})


def names_nothing(exc: OSError) -> bool:
    """True when `exc`, raised by a ``stat`` or ``open`` of a path, means that nothing is
    there, exactly as `Path.exists()` would have answered False.

    Lets a caller stat or open a path once and still tell "missing" from a real failure
    (such as a permission error) the way the `Path` predicates do.
    """
    return exc.errno in _ABSENT_ERRNOS or getattr(exc, "winerror", None) in _ABSENT_WINERRORS


def real_path(path: Path) -> Path:
    """`path` made absolute with every symbolic link followed; a part that does not exist
    is kept as written.

    Raises:
        OSError: (errno ``ELOOP``) the path runs into a loop of symbolic links. Python
            reports loops differently across versions (a ``RuntimeError`` before 3.13,
            nothing at all from a non-strict resolve since); this is the one place that
            tells them apart.
    """
    try:
        return path.resolve(strict=True)
    except RuntimeError:
        raise OSError(errno.ELOOP, f"{path} runs into a loop of symbolic links") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, f"{path} runs into a loop of symbolic links") from None
        return path.resolve()


def is_inside(path: Path, root: Path) -> bool:
    """True when the fully resolved `path` is `root` or lies below it (a path that runs
    into a loop of symbolic links is inside nothing)."""
    try:
        return real_path(path).is_relative_to(root.resolve())
    except OSError:
        return False


def check_relative(root: Path, relative: str, *, what: str, allow_root: bool = False) -> str:
    """`relative` stripped, after the checks that need no disk access; ``""`` means `root`.

    Raises:
        InvalidArgumentError: the path is empty (unless `allow_root`) or contains a NUL byte.
        PathOutsideRootError: the path is absolute, uses ``..`` or starts with ``~``.
    """
    if "\x00" in relative:
        raise InvalidArgumentError(f"{what} contains a NUL character; pass a plain relative path.")
    text = relative.strip()
    if not text or text == ".":
        if allow_root:
            return ""
        raise InvalidArgumentError(
            f"{what} is empty; pass a path relative to {root}, such as 'references/notes.md'."
        )
    if PurePosixPath(text).is_absolute() or PureWindowsPath(text).is_absolute() or text[0] in "/\\":
        raise PathOutsideRootError(
            f"{what} {relative!r} is absolute; pass a path relative to {root} instead."
        )
    if text.startswith("~"):
        # Taken literally, `~/x` would be a folder named `~` inside the root, while the
        # caller meant a home folder: refuse it rather than answer as if that was reached.
        place = f"the workspace {root}" if what == "path" else str(root)
        raise PathOutsideRootError(
            f"{what} {relative!r} starts with '~': paths are relative to {place}, and '~' "
            "is not expanded to a home folder. Pass a path inside that folder, without '~'."
        )
    if ".." in PurePosixPath(text.replace("\\", "/")).parts:
        raise PathOutsideRootError(
            f"{what} {relative!r} uses '..'; paths must stay inside {root}. "
            "Pass a path relative to that folder without '..'."
        )
    return text


def outside_error(root: Path, relative: str, *, what: str) -> PathOutsideRootError:
    """The refusal of a path that a symbolic link leads out of `root`. Where the link
    points is never named: it may be a secret's path, which the caller must not learn."""
    return PathOutsideRootError(
        f"{what} {relative!r} leads outside {root} through a symbolic link; only files "
        "inside that folder can be used."
    )


def loop_error(root: Path, relative: str, *, what: str, detail: str) -> InvalidArgumentError:
    """The refusal of a path that runs into a loop of symbolic links."""
    return InvalidArgumentError(
        f"{what} {relative!r} cannot be followed: it leads into a loop of symbolic "
        f"links inside {root} ({detail}). Point it at a regular file instead."
    )


def confine(root: Path, relative: str, *, what: str = "path", allow_root: bool = False) -> Path:
    """Resolve `relative` inside `root` and return the absolute, symlink-free path.

    Args:
        root: the folder the path must stay in.
        relative: a path relative to `root`, with `/` separators.
        what: how error messages call the argument (for example ``"resource_path"``).
        allow_root: accept an empty path or ``"."`` meaning `root` itself.

    Raises:
        InvalidArgumentError: the path is empty, absolute or contains a NUL byte.
        PathOutsideRootError: the path, after following `..` and symlinks, leaves `root`.
    """
    text = check_relative(root, relative, what=what, allow_root=allow_root)
    real_root = root.resolve()
    if not text:
        return real_root
    try:
        candidate = real_path(real_root / text)
    except OSError as exc:
        raise loop_error(root, relative, what=what, detail=str(exc)) from None
    if candidate != real_root and not candidate.is_relative_to(real_root):
        raise outside_error(root, relative, what=what)
    return candidate
