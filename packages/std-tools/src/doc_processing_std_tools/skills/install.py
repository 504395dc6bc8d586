"""``dpt-skills install``: fetch skills from elsewhere, audit the copy, install it read-only.

A SOURCE (`parse_source`) is a local folder, a .zip or .tar.gz (a local file or an https
URL), or a git repository (an https URL, ``git+file://``, or a local path with ``@ref``),
with an optional ``@ref`` (git) and ``#subfolder``. `prepare` fetches it into a temporary
folder (`unpack` checks archives and downloads), picks the skills (one SKILL.md at the top,
or a collection of skill folders below), copies each into a hidden staging folder next to
its target with read-only files, checks the copy reads as a skill and audits it
(`audit.audit_skill`): what is audited is exactly what will be installed. `Installation.commit`
then moves each staged skill into place with a rename, replacing an existing one only with
``force``; `record_in_lock` writes the installed skills' entries, with their ``source``, into
the skills lock. Nothing half-written is left in the skills folder when anything fails.
This module never prints; the command line (`cli`) does.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Final
from urllib.parse import urlsplit

from ..errors import (
    AlreadyExistsError,
    FileTooLargeError,
    InvalidArgumentError,
    NotFoundError,
    StdToolsError,
)
from .audit import Finding, audit_skill, find_skill_folders
from .frontmatter import NAME_RULE, is_valid_name, read_skill_md_text
from .lock import LOCK_FORMAT, lock_entry, read_lock, write_lock
from .reading import read_skill
from .unpack import Budget, Limits, archive_kind, download, extract, remove_tree, walk_entries

__all__ = [
    "COLLECTION_DEPTH",
    "Installation",
    "Source",
    "StagedSkill",
    "parse_source",
    "prepare",
    "record_in_lock",
]

SKILL_FILE: Final = "SKILL.md"

#: How many folder levels below a collection's top its skill folders are looked for.
COLLECTION_DEPTH: Final = 3

#: The prefix of the hidden staging folder made inside the skills folder.
STAGING_PREFIX: Final = ".dpt-install-"

_REF: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+-]*")
_COMMIT: Final = re.compile(r"[0-9a-f]{7,40}")
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


@dataclass(frozen=True, slots=True)
class Source:
    """Where skills come from, as `parse_source` read it."""

    kind: str
    """``"folder"``, ``"archive"`` or ``"git"``."""
    location: str
    """An https URL, or an absolute local path."""
    ref: str | None = None
    """For git: the branch, tag or commit (``@ref``); None for the default branch."""
    subfolder: str | None = None
    """The folder inside the source that holds the skill or skills (``#subfolder``)."""

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
    if not raw:
        raise InvalidArgumentError("SOURCE is empty; pass a folder, an archive or a git URL.")
    if lower.startswith(("http://", "git+http://")):
        raise _plain_http(raw)
    forced_git = lower.startswith("git+")
    body = raw[4:] if forced_git else raw
    scheme = body.split("://", 1)[0].lower() if "://" in body else ""
    if scheme not in ("", "https", "file") or (scheme == "file" and not forced_git):
        raise InvalidArgumentError(
            f"{raw} uses a scheme install does not fetch from; use an https URL, "
            "git+file:///path for a local git repository, or a local path."
        )
    if scheme == "https":
        address, _, fragment = body.partition("#")
        parts = urlsplit(address)
        if parts.username is not None or parts.password is not None:
            raise InvalidArgumentError(
                f"{parts.hostname} in SOURCE carries a user name or password, which would be "
                "written into the skills lock; leave it out of the URL (for a private git "
                "repository, let git's credential helper supply it)."
            )
        path, ref = parts.path, None
        if "@" in path:
            path, _, ref = path.rpartition("@")
        location = parts._replace(path=path, fragment="").geturl()
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
        said = " ".join(lines[-3:]) or f"exit status {done.returncode}"
        raise StdToolsError(
            f"git could not fetch {where}: {said}. Nothing was installed; check the URL "
            "and the @ref."
        )
    return done.stdout.decode("utf-8", "replace").strip()


def _clone(source: Source, target: Path, limits: Limits) -> str:
    """Clone `source` into `target`; return the commit checked out."""
    url = source.location if source.is_url else Path(source.location).as_uri()
    where = f"{source.location}{'@' + source.ref if source.ref else ''}"
    shallow = ["clone", "--depth", "1", "--no-tags", "--single-branch"]
    branch = ["--branch", source.ref] if source.ref else []
    try:
        _git([*shallow, *branch, "--", url, str(target)], limits, where)
    except StdToolsError:
        if source.ref is None or not _COMMIT.fullmatch(source.ref):
            raise
        # A commit is not a branch: fetch the history, then check the commit out.
        remove_tree(target)
        _git(["clone", "--no-checkout", "--", url, str(target)], limits, where)
        _git(["-C", str(target), "checkout", "--detach", source.ref], limits, where)
    return _git(["-C", str(target), "rev-parse", "HEAD"], limits, where)


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


def _fetch(source: Source, work: Path, limits: Limits) -> tuple[Path, dict[str, Any]]:
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
            origin["sha256"] = download(source.location, archive, limits)
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


def _skill_folders(root: Path, shown: str) -> list[Path]:
    """The skill folders of a source: its top, or every skill folder below it."""
    if (root / SKILL_FILE).is_file():
        return [root]
    found = find_skill_folders(root, COLLECTION_DEPTH)
    if not found:
        raise NotFoundError(
            f"{shown} holds no skill: no {SKILL_FILE} at its top nor in a folder within "
            f"{COLLECTION_DEPTH} levels under it (hidden folders are skipped). Point at the "
            "skill with #subfolder."
        )
    return found


# Staging ---------------------------------------------------------------------------------


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _copy_file(source: Path, target: Path, budget: Budget, max_file_bytes: int) -> None:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    handle = os.open(source, flags)
    with os.fdopen(handle, "rb") as stream:
        info = os.fstat(stream.fileno())
        # Read-only for everyone; an executable bit is kept, set-user-ID and the like never.
        mode = 0o444 | (info.st_mode & 0o111)
        out_handle = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(out_handle, "wb") as out:
            size = 0
            while chunk := stream.read(_CHUNK):
                size += len(chunk)
                if size > max_file_bytes:
                    raise FileTooLargeError(
                        f"{source.name} in the skill is larger than DPTTOOLS_MAX_FILE_SIZE_MB "
                        f"({max_file_bytes // (1024 * 1024)} MB), which the server and the "
                        "lock would refuse; nothing was installed."
                    )
                budget.add(len(chunk))
                out.write(chunk)


def _copy_skill(source: Path, target: Path, budget: Budget, max_file_bytes: int) -> None:
    """Copy the skill folder `source` to the new folder `target`: files read-only, links
    kept when they lead inside the skill, ``.git`` left out; anything else refused."""
    real_source = os.path.realpath(source)
    target.mkdir(mode=0o755)
    for folder, dirnames, filenames in walk_entries(source):
        into = target / folder.relative_to(source)
        for name in [*dirnames, *filenames]:
            path, made = folder / name, into / name
            relative = path.relative_to(source).as_posix()
            info = path.lstat()
            budget.entry()
            if stat.S_ISLNK(info.st_mode):
                link = path.readlink()
                if link.is_absolute() or not _inside(os.path.realpath(path), real_source):
                    raise InvalidArgumentError(
                        f"{relative} in the skill {source.name} is a link that leads outside "
                        "the skill folder (or is absolute); install refuses it, since it "
                        "could expose a file of this machine. Remove the link from the source."
                    )
                made.symlink_to(link)
            elif stat.S_ISDIR(info.st_mode):
                made.mkdir(mode=0o755)
            elif stat.S_ISREG(info.st_mode):
                _copy_file(path, made, budget, max_file_bytes)
            else:
                raise InvalidArgumentError(
                    f"{relative} in the skill {source.name} is a device, FIFO or socket; "
                    "install copies only files, folders and links. Nothing was installed."
                )


@dataclass(slots=True)
class StagedSkill:
    """One skill copied into the staging folder, audited, not installed yet."""

    name: str
    """The skill's name (its frontmatter ``name``), which is its folder name once installed."""
    staged: Path
    """The staged copy."""
    target: Path
    """Where it is installed: ``<skills folder>/<name>``."""
    replaces: bool
    """True when a skill of that name is installed already (allowed with force)."""
    findings: list[Finding] = field(default_factory=list)
    """The audit's findings on the staged copy."""


class Installation:
    """The staged skills of one SOURCE, until `commit` installs them or `close` drops them."""

    def __init__(self, source: Source, origin: dict[str, Any], staging: Path) -> None:
        self.source = source
        self.origin = origin
        """The lock's ``source`` of every skill of this install."""
        self.staging = staging
        self.skills: list[StagedSkill] = []

    @property
    def findings(self) -> list[Finding]:
        """The audit's findings on every staged skill, in order."""
        return [finding for skill in self.skills for finding in skill.findings]

    @property
    def errors(self) -> int:
        """How many findings are errors."""
        return sum(finding.level == "error" for finding in self.findings)

    def commit(self, *, force: bool = False) -> list[str]:
        """Move each staged skill into place; return their names.

        A skill replaces the one of the same name only with `force`: the old folder is
        renamed away, the new one renamed in, then the old one removed, so the name
        always holds a whole skill, old or new (for an instant, none).

        Raises:
            StdToolsError: the audit found an error and `force` is False.
            AlreadyExistsError: a skill of that name appeared and `force` is False.
        """
        if self.errors and not force:
            raise StdToolsError(
                f"The audit found {self.errors} error(s) in the skills from "
                f"{self.source.location}; nothing was installed. Read the findings, and "
                "install with --force only if you trust them."
            )
        installed: list[str] = []
        for skill in self.skills:
            old = self.staging / f".replaced-{skill.name}"
            replacing = os.path.lexists(skill.target)
            if replacing and not force:
                raise _exists(skill.name, skill.target.parent)
            if replacing:
                skill.target.rename(old)
            try:
                skill.staged.rename(skill.target)
            except OSError:
                if replacing:
                    old.rename(skill.target)
                raise
            installed.append(skill.name)
        self.close()
        return installed

    def close(self) -> None:
        """Remove the staging folder and whatever is left in it."""
        remove_tree(self.staging)

    def __enter__(self) -> Installation:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _exists(name: str, skills_dir: Path) -> AlreadyExistsError:
    return AlreadyExistsError(
        f"A skill named '{name}' is already installed in {skills_dir}; nothing was "
        "installed. Pass --force to replace it (in one step), or remove it first."
    )


def _stage(
    folder: Path,
    installation: Installation,
    index: int,
    budget: Budget,
    max_file_bytes: int,
) -> tuple[str, Path]:
    """Copy one skill folder into the staging folder; (its name, its staged copy)."""
    copy = installation.staging / f".skill-{index}"
    _copy_skill(folder, copy, budget, max_file_bytes)
    fields = read_skill_md_text((copy / SKILL_FILE).read_bytes()).fields or {}
    name = fields.get("name")
    if not isinstance(name, str) or not is_valid_name(name):
        raise InvalidArgumentError(
            f"The skill in {folder.name} cannot be installed: its {SKILL_FILE} has no valid "
            f"name (the folder it is installed in is named after it; use {NAME_RULE}). "
            "Nothing was installed; check it with dpt-skills validate."
        )
    staged = installation.staging / name
    if os.path.lexists(staged):
        raise InvalidArgumentError(
            f"The source holds two skills named '{name}'; nothing was installed. Pick one "
            "with #subfolder."
        )
    copy.rename(staged)
    record, diagnostics = read_skill(staged, max_bytes=max_file_bytes, root=installation.staging)
    if record is None:
        said = " ".join(d.message for d in diagnostics if d.level == "error")
        raise InvalidArgumentError(
            f"The skill '{name}' cannot be installed: {said} Nothing was installed; check it "
            "with dpt-skills validate."
        )
    return name, staged


def prepare(
    text: str,
    skills_dir: Path,
    *,
    force: bool = False,
    limits: Limits | None = None,
    max_file_bytes: int,
    cwd: Path | None = None,
) -> Installation:
    """Fetch the SOURCE `text`, stage its skills next to `skills_dir` and audit them.

    The caller commits or closes the returned `Installation` (a context manager that
    closes it). Every error leaves the skills folder as it was.

    Raises:
        StdToolsError: the SOURCE cannot be read or fetched, an archive entry or a file
            is refused, a limit is reached, a skill does not read as one, or a skill of
            that name is installed already (without `force`).
    """
    limits = limits if limits is not None else Limits()
    source = parse_source(text, cwd)
    skills_dir = skills_dir.absolute()
    work = Path(tempfile.mkdtemp(prefix="dpt-install-"))
    try:
        root, origin = _fetch(source, work, limits)
        folders = _skill_folders(root, text)
        skills_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=skills_dir))
        installation = Installation(source, origin, staging)
        try:
            budget = Budget(limits, f"The source {text}")
            for index, folder in enumerate(folders):
                name, staged = _stage(folder, installation, index, budget, max_file_bytes)
                target = skills_dir / name
                replaces = os.path.lexists(target)
                if replaces and not force:
                    raise _exists(name, skills_dir)
                installation.skills.append(StagedSkill(name, staged, target, replaces))
            for skill in installation.skills:
                skill.findings = audit_skill(skill.staged, max_bytes=max_file_bytes)
        except BaseException:
            installation.close()
            raise
    finally:
        remove_tree(work)
    return installation


def record_in_lock(
    lock: Path, skills_dir: Path, names: list[str], origin: dict[str, Any], max_bytes: int
) -> dict[str, Any]:
    """Write the lock entries of the installed `names` (with `origin` as their source)
    into the lock at `lock`, created when missing, other entries kept; return the lock's
    skills.

    Raises:
        ConfigError: the lock exists but is not a lock.
        StdToolsError: an installed skill cannot be read for its digests.
    """
    skills: dict[str, Any] = dict(read_lock(lock)) if lock.exists() else {}
    root = skills_dir.absolute()
    for name in names:
        record, diagnostics = read_skill(root / name, max_bytes=max_bytes, root=root)
        if record is None:
            said = " ".join(d.message for d in diagnostics)
            raise StdToolsError(f"The installed skill {name} cannot be read for the lock: {said}")
        skills[name] = lock_entry(record, max_bytes, origin)
    write_lock(lock, {"format": LOCK_FORMAT, "skills": skills})
    return skills
