"""Confine a user-supplied relative path inside a root folder.

This is the one place that decides whether a path may be touched. Symlinks are
followed before the check, so a link that points outside the root is refused even
when its target exists.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath

from .errors import InvalidArgumentError, PathOutsideRootError

__all__ = ["confine", "is_inside"]


def is_inside(path: Path, root: Path) -> bool:
    """True when the fully resolved `path` is `root` or lies below it."""
    try:
        resolved = path.resolve()
    except (RuntimeError, OSError):  # a loop of symbolic links is inside nothing
        return False
    real_root = root.resolve()
    return resolved == real_root or resolved.is_relative_to(real_root)


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
    if "\x00" in relative:
        raise InvalidArgumentError(f"{what} contains a NUL character; pass a plain relative path.")
    text = relative.strip()
    if not text or text == ".":
        if allow_root:
            return root.resolve()
        raise InvalidArgumentError(
            f"{what} is empty; pass a path relative to {root}, such as 'references/notes.md'."
        )
    if PurePosixPath(text).is_absolute() or PureWindowsPath(text).is_absolute() or text[0] in "/\\":
        raise PathOutsideRootError(
            f"{what} {relative!r} is absolute; pass a path relative to {root} instead."
        )
    if ".." in PurePosixPath(text.replace("\\", "/")).parts:
        raise PathOutsideRootError(
            f"{what} {relative!r} uses '..'; paths must stay inside {root}. "
            "Pass a path relative to that folder without '..'."
        )
    real_root = root.resolve()
    try:
        candidate = (real_root / text).resolve()
    except (RuntimeError, OSError) as exc:  # a loop of symbolic links (3.13+: OSError)
        raise InvalidArgumentError(
            f"{what} {relative!r} cannot be followed: it leads into a loop of symbolic "
            f"links inside {root} ({exc}). Point it at a regular file instead."
        ) from None
    if candidate != real_root and not candidate.is_relative_to(real_root):
        raise PathOutsideRootError(
            f"{what} {relative!r} leads outside {root} (through a symbolic link to "
            f"{candidate}); only files inside that folder can be used."
        )
    return candidate
