"""Where ``dpt-skills install`` takes skills from: reading a SOURCE and fetching it.

A SOURCE (`parse_source`) is a local folder, a .zip or .tar.gz (a local file or an https
URL), or a git repository (an https URL, ``git+file://``, or a local path with ``@ref``),
with an optional ``@ref`` (git) and ``#subfolder``. `fetch` brings it into a temporary
folder (`unpack` checks archives and downloads) and returns the record the lock keeps of
where the skills came from. A URL's query string, which a signed download uses for its
credentials, is fetched but never printed nor locked (`redact`); a user name or password
in a URL is refused. A commit named by ``@ref`` is checked to be the commit checked out.
This module never prints.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from ...errors import InvalidArgumentError, NotFoundError, StdToolsError
from .unpack import Limits, archive_kind, download, extract, remove_tree

__all__ = ["SKILL_FILE", "Source", "fetch", "parse_source", "redact"]

SKILL_FILE: Final = "SKILL.md"

_REF: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+-]*")
_COMMIT: Final = re.compile(r"[0-9a-f]{7,40}")
_FULL_COMMIT: Final = re.compile(r"[0-9a-f]{40}")
_QUERY: Final = re.compile(r"(https://[^\s?#'\"]*)\?[^\s#'\"]*")
_USERINFO: Final = re.compile(r"(https://)[^/\s@?#]*@")
_CHUNK: Final = 64 * 1024

#: Variables that would point git at another repository than the one it clones.
_GIT_LOCATIONS: Final = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
    }
)


def redact(text: str) -> str:
    """`text` with the query string of every https URL in it replaced by ``?...``, and
    a user name or password in one by ``...@``."""
    if "@" in text:
        text = _USERINFO.sub(r"\1...@", text)
    return _QUERY.sub(r"\1?...", text) if "?" in text else text


@dataclass(frozen=True, slots=True)
class Source:
    """Where skills come from, as `parse_source` read it."""

    kind: str
    """``"folder"``, ``"archive"`` or ``"git"``."""
    location: str
    """An https URL without its query string (see `redact`), or an absolute local path:
    what is printed and locked."""
    ref: str | None = None
    """For git: the branch, tag or commit (``@ref``); None for the default branch."""
    subfolder: str | None = None
    """The folder inside the source that holds the skill or skills (``#subfolder``)."""

    address: str = ""
    """The URL fetched, query string included (a signed download carries its
    credentials there): never printed, never locked. Empty for a local path."""

    @property
    def is_url(self) -> bool:
        """True for an https URL, False for a local path."""
        return self.location.startswith("https://")


def _plain_http(text: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"{text} uses plain http, which anyone on the way can read and change, so install "
        "refuses it; use the https URL of the same file or repository."
    )


def _check_ref(text: str, ref: str) -> str:
    if not _REF.fullmatch(ref) or ".." in ref or ref.endswith((".lock", "/")):
        raise InvalidArgumentError(
            f"{ref!r} in {text} is not a valid git ref; use a branch, tag or commit such as "
            "@main, @v1.2.0 or @3f1c2ab."
        )
    return ref


def _check_subfolder(text: str, subfolder: str) -> str:
    parts = [p for p in subfolder.split("/") if p not in ("", ".")]
    if subfolder.startswith(("/", "\\")) or ".." in parts or "\\" in subfolder or not parts:
        raise InvalidArgumentError(
            f"#{subfolder} in {text} is not a folder inside the source; use a relative path "
            "such as #skills/pdf-tools, without '..'."
        )
    return "/".join(parts)


def parse_source(text: str, cwd: Path | None = None) -> Source:
    """Read a SOURCE of ``dpt-skills install`` (see the module); relative paths are taken
    from `cwd` (default: the working folder).

    Raises:
        InvalidArgumentError: the SOURCE uses plain http or another unsupported scheme, or
            its ``@ref`` or ``#subfolder`` is malformed.
        NotFoundError: a local path does not exist.
    """
    raw = text.strip()
    lower = raw.lower()
    address = ""
    if not raw:
        raise InvalidArgumentError("SOURCE is empty; pass a folder, an archive or a git URL.")
    if lower.startswith(("http://", "git+http://")):
        raise _plain_http(redact(raw))
    forced_git = lower.startswith("git+")
    body = raw[4:] if forced_git else raw
    scheme = body.split("://", 1)[0].lower() if "://" in body else ""
    if scheme not in ("", "https", "file") or (scheme == "file" and not forced_git):
        raise InvalidArgumentError(
            f"{redact(raw)} uses a scheme install does not fetch from; use an https URL, "
            "git+file:///path for a local git repository, or a local path."
        )
    if scheme == "https":
        address, _, fragment = body.partition("#")
        parts = urlsplit(address)
        if parts.username is not None or parts.password is not None:
            raise InvalidArgumentError(
                f"{redact(raw)} carries a user name or password, which would be "
                "written into the skills lock; leave it out of the URL (for a private git "
                "repository, let git's credential helper supply it)."
            )
        path, ref = parts.path, None
        if "@" in path:
            path, _, ref = path.rpartition("@")
        address = parts._replace(path=path, fragment="").geturl()
        location = redact(address)
        kind = "git" if forced_git or archive_kind(path) is None else "archive"
    else:
        local = body[len("file://") :] if scheme == "file" else body
        base = cwd if cwd is not None else Path.cwd()
        if (base / Path(local).expanduser()).exists():
            fragment, ref = "", None
        else:
            local, _, fragment = local.partition("#") if "#" in local else (local, "", "")
            ref = None
            if not (base / Path(local).expanduser()).exists() and "@" in local:
                local, _, ref = local.rpartition("@")
        path_obj = Path(os.path.normpath((base / Path(local).expanduser()).absolute()))
        if not path_obj.exists():
            raise NotFoundError(
                f"{path_obj} does not exist; pass a skill folder, a .zip or .tar.gz, or a "
                "git repository (a URL, or a local path with @ref)."
            )
        location = str(path_obj)
        if path_obj.is_file():
            if archive_kind(path_obj.name) is None:
                raise InvalidArgumentError(
                    f"{path_obj} is a file but not a .zip, .tar.gz or .tgz archive; pass a "
                    "folder or an archive."
                )
            kind = "archive"
        elif forced_git or ref is not None or path_obj.name.endswith(".git"):
            kind = "git"
            if not (path_obj / ".git").exists() and not (path_obj / "HEAD").is_file():
                raise InvalidArgumentError(
                    f"{path_obj} is not a git repository, so {raw} cannot be cloned; "
                    "leave out @ref to install the folder as it is."
                )
        else:
            kind = "folder"
    if ref is not None and kind != "git":
        raise InvalidArgumentError(
            f"@{ref} in {raw} names a git ref, but the source is not a git repository "
            f"(it is read as a {kind}); leave @{ref} out, or pass a git repository."
        )
    return Source(
        kind=kind,
        location=location,
        address=address,
        ref=_check_ref(raw, ref) if ref is not None else None,
        subfolder=_check_subfolder(raw, fragment) if fragment else None,
    )


# Fetching --------------------------------------------------------------------------------


def _git(arguments: list[str], limits: Limits, where: str) -> str:
    program = shutil.which("git")
    if program is None:
        raise StdToolsError(
            f"Installing from the git repository {where} needs the git program, which is not "
            "on PATH; install git, or install a .tar.gz or .zip of the repository instead."
        )
    # Only file:// and https:// may be fetched (submodules included), no prompt waits for
    # a password, and no hook runs.
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATIONS}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_ALLOW_PROTOCOL="file:https")
    command = [program, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]
    try:
        done = subprocess.run(
            [*command, *arguments],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            timeout=limits.timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise StdToolsError(
            f"git took longer than {limits.timeout:g} s for {where}; nothing was installed."
        ) from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        said = redact(" ".join(lines[-3:])) or f"exit status {done.returncode}"
        raise StdToolsError(
            f"git could not fetch {where}: {said}. Nothing was installed; check the URL "
            "and the @ref."
        )
    return done.stdout.decode("utf-8", "replace").strip()


def _clone(source: Source, target: Path, limits: Limits) -> str:
    """Clone `source` into `target`; return the commit checked out.

    A ref of 7 to 40 hexadecimal digits is a commit: a full one is never asked for as a
    branch (upstream could create a branch of that name), and the commit checked out must
    be the one named, or nothing is installed.
    """
    url = source.address if source.is_url else Path(source.location).as_uri()
    where = f"{source.location}{'@' + source.ref if source.ref else ''}"
    ref = source.ref
    full = ref is not None and _FULL_COMMIT.fullmatch(ref) is not None
    shallow = ["clone", "--depth", "1", "--no-tags", "--single-branch"]
    try:
        if full:
            raise StdToolsError("a full commit is fetched with the history")
        branch = ["--branch", ref] if ref else []
        _git([*shallow, *branch, "--", url, str(target)], limits, where)
    except StdToolsError:
        if ref is None or not _COMMIT.fullmatch(ref):
            raise
        # A commit is not a branch: fetch the history, then check the commit out.
        remove_tree(target)
        _git(["clone", "--no-checkout", "--", url, str(target)], limits, where)
        _git(["-C", str(target), "checkout", "--detach", ref], limits, where)
    head = _git(["-C", str(target), "rev-parse", "HEAD"], limits, where)
    if ref is not None and _COMMIT.fullmatch(ref) and not head.startswith(ref):
        raise StdToolsError(
            f"@{ref} in {source.location} names a commit, but what was checked out is "
            f"{head}: the repository has a branch or tag of that name. Nothing was "
            "installed; pass the full 40-digit commit."
        )
    return head


def _sha256_of(path: Path, limits: Limits) -> str:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            size += len(chunk)
            if size > limits.max_bytes:
                raise limits.too_big(str(path), "is")
            digest.update(chunk)
    return digest.hexdigest()


def _only_folder(root: Path) -> Path | None:
    """The one visible folder at the top of an unpacked archive that has nothing else
    (how archives of a repository are made), or None."""
    entries = [e for e in root.iterdir() if not e.name.startswith(".")]
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0]
    return None


def fetch(source: Source, work: Path, limits: Limits) -> tuple[Path, dict[str, Any]]:
    """(the folder holding the source's files, the lock's record of where they came from)."""
    origin: dict[str, Any] = {"kind": source.kind, "location": source.location}
    if source.kind == "folder":
        root = Path(source.location)
    elif source.kind == "git":
        root = work / "repository"
        origin["ref"] = source.ref
        origin["commit"] = _clone(source, root, limits)
    else:
        name = urlsplit(source.location).path if source.is_url else source.location
        kind = archive_kind(name) or "zip"
        if source.is_url:
            archive = work / "download"
            origin["sha256"] = download(source.address, archive, limits, shown=source.location)
        else:
            archive = Path(source.location)
            origin["sha256"] = _sha256_of(archive, limits)
        root = work / "unpacked"
        root.mkdir()
        extract(archive, kind, root, limits, source.location)
        if not (root / SKILL_FILE).exists():
            root = _only_folder(root) or root
    if source.subfolder is not None:
        origin["subfolder"] = source.subfolder
        inner = root.joinpath(*source.subfolder.split("/"))
        real = os.path.realpath(inner)
        if not inner.is_dir() or not real.startswith(os.path.realpath(root) + os.sep):
            raise NotFoundError(
                f"#{source.subfolder} is not a folder in {source.location}; check the path "
                "inside the source."
            )
        root = inner
    return root, origin
