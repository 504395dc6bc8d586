"""Where a default folder may not be: the places that no workspace and no skills folder is
taken in unless the user names them.

With no ``--workspace`` and no DPTTOOLS_WORKSPACE_DIR, the workspace is the working folder,
which a host chooses: often ``/``, the home folder or a system folder. `place_refusal`
names such a place, and `workspace_refusal` and `skills_dir_refusal` word what the file and
document tools and `create_skill` answer there (`config.load_settings` keeps the answers in
the settings). Pure functions of the folders they are given; nothing here reads the
environment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from ._links import docs_page

__all__ = [
    "HOST_PAGES",
    "OS_FOLDERS",
    "SHARED_FOLDERS",
    "place_refusal",
    "skills_dir_refusal",
    "workspace_refusal",
]

OS_FOLDERS: Final = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/System",
    "/Library",
)
"""Folders of the operating system: with no workspace set, a working folder that is one
of these or lies below one is refused (`workspace_refusal`)."""

SHARED_FOLDERS: Final = (
    "/home",
    "/media",
    "/mnt",
    "/opt",
    "/root",
    "/srv",
    "/tmp",
    "/var",
    "/Applications",
    "/Users",
    "/Volumes",
)
"""Folders that hold what belongs to many users or programs: with no workspace set, a
working folder that is exactly one of these is refused; a folder below one (a project in
``/srv/reports``, say) is a workspace like any other."""


def place_refusal(folder: Path, home: Path | None) -> str | None:
    """Why `folder` (resolved) is no place for a default workspace or skills folder: it is
    the file system's root, the home folder, or a folder of
    `OS_FOLDERS` or `SHARED_FOLDERS`; None for any other folder.

    The answer names the place ("the root of the file system (/)"), for a message.
    """
    if folder == Path(folder.anchor):
        return f"the root of the file system ({folder})"
    if home is not None and folder == home:
        return f"the home folder ({folder})"
    for name in OS_FOLDERS:
        for system in _spellings(name):
            if folder.is_relative_to(system):
                return f"{folder}, a folder of the operating system"
    for name in SHARED_FOLDERS:
        if folder in _spellings(name):
            return f"{folder}, a folder shared by the whole system"
    return None


def _spellings(name: str) -> tuple[Path, ...]:
    """`name` as written and with its links followed (``/bin`` is ``/usr/bin`` on many
    systems, ``/etc`` is ``/private/etc`` on macOS)."""
    written = Path(name)
    try:
        resolved = written.resolve()
    except (OSError, RuntimeError):
        return (written,)
    return (written,) if resolved == written else (written, resolved)


HOST_PAGES: Final = (
    "the Hosts pages of the documentation (Claude Desktop, Claude Code, VS Code, Cursor)"
)
"""Where the documentation shows how each host passes ``--workspace`` to the server."""


def workspace_refusal(folder: Path, home: Path | None) -> str | None:
    """The refusal of the file and document tools when no workspace was set and the
    working folder `folder` (resolved) is a place `place_refusal` names; None elsewhere.

    Hosts often start servers in ``/``, in the home folder or in a system folder, where
    the default workspace (the working folder) would let a model list, read and write far
    more than a project.
    """
    where = place_refusal(folder, home)
    if where is None:
        return None
    return (
        f"No workspace is set and this server was started in {where}, so the file and "
        "document tools refuse to work rather than open that folder to the model. Name the "
        "folder they may use with --workspace DIR in the server's arguments, or with the "
        "environment variable DPTTOOLS_WORKSPACE_DIR=DIR, in the host's configuration "
        f"of this server, and restart it; {docs_page('troubleshooting/#no-workspace')} "
        f"explains, and {HOST_PAGES} show where to set it."
    )


def skills_dir_refusal(folder: Path, home: Path | None) -> str | None:
    """Why create_skill refuses to make the default skills folder (``.agent_skills`` in
    the working folder) when that working folder is a place `place_refusal` names."""
    where = place_refusal(folder.parent, home)
    if where is None:
        return None
    return (
        f"No skills folder is set and the working folder is {where}, so no skills folder "
        f"is created there ({folder} would be). Set DPTTOOLS_SKILLS_DIR=DIR, or pass "
        "--skills-dir DIR, naming the folder that should hold your skills (for a server, "
        "in the host's configuration of it, then restart it)."
    )
