"""Which changes to a workspace may be applied, and which files scripts may not see.

A skill script's changes to the workspace are staged and applied after the call by the
server; `ChangePolicy.verdict` decides, for each changed path, whether it is applied or
held back and why. The same policy, built with `ChangePolicy.for_file_tools`, decides what
``write_file`` and ``edit_file`` may change. `ChangePolicy.hidden` names the secrets that
scripts do not see at all.

A change is held back when it touches one of these classes (`CLASSES`):

- ``vcs``: version-control folders and files wherever they are (``.git``, ``.hg``,
  ``.svn``, ``.gitmodules`` ...);
- ``hooks``: hook folders (``.githooks``, ``.husky``) and the ``core.hooksPath`` folder of
  the repository the workspace lies in;
- ``agent``: instructions, memory and settings of coding agents and editors (``AGENTS.md``,
  ``CLAUDE.md``, ``.claude/``, ``.cursor/``, ``.mcp.json``, ``.vscode/`` ...);
- ``build``: build, test, CI and shell start-up entry points (``Makefile``,
  ``conftest.py``, ``pyproject.toml``, ``package.json``, ``.github/workflows/``,
  ``*.pth`` ...);
- ``bytecode``: Python bytecode (``*.pyc``, ``__pycache__``);
- ``skills``: any folder holding a ``SKILL.md``, the configured skills folders, the skills
  lock and the catalog index;
- ``executable``, ``link``, ``special``, ``mode``: files with an x bit, symbolic links,
  devices, pipes and sockets, and setuid, setgid, sticky or world-writable modes;
- ``secret``: the hidden secrets themselves (scripts neither see nor create them);
- ``operator``: paths the operator added with DPTTOOLS_SCRIPT_HOLD.

Names are compared case-insensitively and after Unicode normalisation, with the
characters some file systems ignore removed, since on such file systems ``claude.MD`` or
``.GIT`` is the same file as the protected one.

The operator may apply more classes (DPTTOOLS_SCRIPT_APPLY; DPTTOOLS_WRITE_ALLOW for the
file tools), hold back more paths (DPTTOOLS_SCRIPT_HOLD) and hide more or fewer secrets
(DPTTOOLS_SCRIPT_HIDDEN). `ChangePolicy.loosened` describes every loosening, and
`announce_policy` logs it at start-up.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from fnmatch import translate
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Final, Literal

from ._git_hooks import hooks_folder
from .errors import ConfigError

__all__ = [
    "APPLICABLE_CLASSES",
    "CLASSES",
    "FILE_TOOLS_POLICY",
    "HELD_PATTERNS",
    "HIDDEN_PATTERNS",
    "WRITABLE_CLASSES",
    "ChangePolicy",
    "Held",
    "announce_policy",
    "applied_classes",
    "held_setting",
    "hidden_setting",
    "normal_name",
]

_log = logging.getLogger(__name__)

Kind = Literal["file", "dir", "link", "special"]

CLASSES: Final[dict[str, str]] = {
    "vcs": "a version-control folder or file, whose settings and hooks git runs",
    "hooks": "a hook folder, whose scripts git runs on the next commit",
    "agent": "agent instructions, memory or settings, which coding agents and editors obey",
    "build": "a build, test, CI or start-up entry point, which the next build or test runs",
    "bytecode": "Python bytecode, which runs on import while git shows nothing",
    "skills": "a skills folder, skills lock or catalog index, whose skills the server serves",
    "executable": "an executable file (it has an x bit)",
    "link": "a symbolic link",
    "special": "a special file (a device, pipe or socket)",
    "mode": "a setuid, setgid, sticky or world-writable mode",
    "secret": "a secret that scripts may not see",
    "operator": "a path the operator holds back (DPTTOOLS_SCRIPT_HOLD)",
    "outside": "a path outside the workspace",
}
"""Every class of held-back change, with why it is held back."""

APPLICABLE_CLASSES: Final[tuple[str, ...]] = ("agent", "build", "bytecode", "skills", "executable")
"""The classes an operator may let a script's changes be applied in (DPTTOOLS_SCRIPT_APPLY).
Version-control folders, hooks, links, special files, privileged modes and secrets are
never applied."""

WRITABLE_CLASSES: Final[tuple[str, ...]] = ("agent", "build", "bytecode", "skills")
"""The classes an operator may let write_file and edit_file change (DPTTOOLS_WRITE_ALLOW).
They never write inside a version-control folder or leave a file executable."""


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


HELD_PATTERNS: Final[dict[str, tuple[str, ...]]] = {
    "vcs": _words(
        """
        .git git~1 .gitmodules .gitattributes .lfsconfig .hg .hgrc .svn .bzr _darcs .jj
        .pijul .fossil _fossil_ CVS
        """
    ),
    "hooks": _words(
        """
        .githooks .husky .git-hooks lefthook.yml lefthook.yaml
        """
    ),
    "agent": _words(
        """
        AGENTS.md AGENTS.override.md AGENT.md CLAUDE.md CLAUDE.local.md GEMINI.md QWEN.md
        CONVENTIONS.md .claude .agents .agent .cursor .cursorrules .cursorignore .windsurf
        .windsurfrules .codeium .clinerules .clineignore .roo .roorules .roomodes .kilocode
        .gemini .codex .aider* .continue .continuerc.json .goosehints .goose .kiro .junie
        .amazonq .qwen .opencode opencode.json opencode.jsonc .openhands .augment
        .augment-guidelines .tabnine .aiassistant .rules .zed .mcp.json mcp.json .vscode
        .idea .fleet .devcontainer .devcontainer.json .github/copilot-instructions.md
        .github/instructions .github/prompts .github/chatmodes .github/agents
        .github/copilot *.code-workspace
        """
    ),
    "build": _words(
        """
        Makefile GNUmakefile makefile *.mk *.mak CMakeLists.txt *.cmake meson.build
        meson_options.txt configure configure.ac Makefile.am Makefile.in BUILD.bazel
        WORKSPACE.bazel MODULE.bazel *.bzl .bazelrc build.gradle build.gradle.kts
        settings.gradle settings.gradle.kts gradlew gradle.properties pom.xml build.xml .mvn
        Rakefile Gemfile Gemfile.lock *.gemspec Justfile .justfile Taskfile.yml
        Taskfile.yaml Dockerfile Containerfile docker-compose.yml docker-compose.yaml
        compose.yml compose.yaml Vagrantfile Cargo.toml Cargo.lock build.rs .cargo go.mod
        go.sum conftest.py pytest.ini setup.py setup.cfg pyproject.toml tox.ini noxfile.py
        MANIFEST.in requirements*.txt constraints*.txt Pipfile Pipfile.lock poetry.lock
        uv.lock pdm.lock sitecustomize.py usercustomize.py *.pth package.json
        package-lock.json npm-shrinkwrap.json yarn.lock pnpm-lock.yaml pnpm-workspace.yaml
        .yarnrc .yarnrc.yml .yarn .pnpmfile.cjs bun.lockb bunfig.toml deno.json deno.jsonc
        composer.json composer.lock .github/workflows .github/actions .github/dependabot.yml
        .gitlab-ci.yml .gitlab .circleci .travis.yml azure-pipelines.yml .azure-pipelines
        Jenkinsfile .buildkite bitbucket-pipelines.yml .drone.yml .woodpecker
        .woodpecker.yml appveyor.yml .appveyor.yml cloudbuild.yaml .pre-commit-config.yaml
        .pre-commit-hooks.yaml .envrc .tool-versions .mise.toml mise.toml .bashrc
        .bash_profile .bash_login .bash_logout .profile .zshrc .zshenv .zprofile .zlogin
        .inputrc .pythonrc .pythonstartup .config/autostart .config/systemd .config/git
        .config/fish .gitconfig
        """
    ),
    "bytecode": _words(
        """
        *.pyc *.pyo __pycache__
        """
    ),
}
"""Path patterns whose changes are held back, by class. A pattern is a name (``*`` and
``?`` allowed) that matches a path component anywhere, or components joined by ``/`` that
match consecutive components anywhere; whatever lies under a matched folder matches too.
The ``skills`` class is found on disk (a folder holding a SKILL.md) and in the settings."""

HIDDEN_PATTERNS: Final[tuple[str, ...]] = _words(
    """
    .env .env.* *.env .envrc *.pem *.key *.p12 *.pfx *.jks *.keystore *.kdbx *.ppk id_rsa*
    id_dsa* id_ecdsa* id_ed25519* .netrc _netrc .npmrc .pypirc .pgpass .my.cnf
    .git-credentials .dockercfg .docker/config.json .htpasswd credentials credentials.*
    *credentials*.json client_secret*.json service-account*.json secrets.* .secrets .aws
    .ssh .gnupg .azure .kube .config/gcloud .config/gh .terraform.d *.tfvars *.tfstate
    *.tfstate.*
    """
)
"""Secrets a script does not see (DPTTOOLS_SCRIPT_HIDDEN): patterns as in
`HELD_PATTERNS`."""

_IGNORED_CHARACTERS: Final = re.compile(
    "[\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]"
)
"""Characters some file systems drop from names (HFS+ ignores these code points)."""


def normal_name(name: str) -> str:
    """`name` as the comparison sees it: NFC, case-folded, without the characters some file
    systems ignore, and without the trailing dots and spaces Windows drops."""
    folded = unicodedata.normalize("NFC", _IGNORED_CHARACTERS.sub("", name)).casefold()
    stripped = folded.rstrip(" .")
    return stripped if stripped else folded


@dataclass(frozen=True, slots=True)
class Held:
    """Why one change is held back: its class (a key of `CLASSES`) and the reason."""

    kind: str
    reason: str


class _Matcher:
    """Patterns of one class, compiled: single names as a set and one expression; longer
    patterns without wildcards by their last name (the names before it compared as a
    tuple), the others as tuples of expressions matched against consecutive names."""

    __slots__ = ("_exact", "_glob", "_multi", "_tails")

    def __init__(self, patterns: Iterable[str]) -> None:
        exact: set[str] = set()
        globs: list[str] = []
        tails: dict[str, list[tuple[str, ...]]] = {}
        multi: list[tuple[re.Pattern[str], ...]] = []
        for pattern in patterns:
            parts = [normal_name(part) for part in pattern.strip("/").split("/") if part]
            wild = any(char in part for part in parts for char in "*?[")
            if not parts:
                continue
            if len(parts) > 1 and not wild:
                tails.setdefault(parts[-1], []).append(tuple(parts[:-1]))
            elif len(parts) > 1:
                multi.append(tuple(re.compile(translate(part)) for part in parts))
            elif wild:
                globs.append(translate(parts[0]))
            else:
                exact.add(parts[0])
        self._exact = frozenset(exact)
        self._glob = re.compile("|".join(f"(?:{glob})" for glob in globs)) if globs else None
        self._tails = {name: tuple(before) for name, before in tails.items()}
        self._multi = tuple(multi)

    def match(self, names: Sequence[str]) -> int | None:
        """The number of components up to and including the first match, or None."""
        for index, name in enumerate(names):
            if name in self._exact or (self._glob is not None and self._glob.match(name)):
                return index + 1
            for before in self._tails.get(name, ()):
                start = index - len(before)
                if start >= 0 and tuple(names[start:index]) == before:
                    return index + 1
            for parts in self._multi:
                start = index + 1 - len(parts)
                if start >= 0 and all(
                    part.match(names[start + offset]) for offset, part in enumerate(parts)
                ):
                    return index + 1
        return None


@lru_cache(maxsize=64)
def _matcher(patterns: tuple[str, ...]) -> _Matcher:
    return _Matcher(patterns)


def _settings_list(raw: str) -> list[str]:
    return [part.strip() for part in raw.split(",") if part.strip()]


def applied_classes(raw: str, variable: str = "DPTTOOLS_SCRIPT_APPLY") -> tuple[str, ...]:
    """The held-back classes `variable`=`raw` lets through: class names separated by
    commas (empty: none).

    Raises:
        ConfigError: a name is not a class that may be let through.
    """
    allowed = APPLICABLE_CLASSES if variable == "DPTTOOLS_SCRIPT_APPLY" else WRITABLE_CLASSES
    names: list[str] = []
    for name in (part.lower() for part in _settings_list(raw)):
        if name not in allowed:
            never = (
                " is never let through"
                if name in CLASSES
                else " is not a class of held-back change"
            )
            raise ConfigError(
                f"{variable}={raw!r} names {name!r}, which{never}; list some of "
                f"{', '.join(allowed)} separated by commas, or unset it to hold them all back."
            )
        names.append(name)
    return tuple(dict.fromkeys(names))


def held_setting(raw: str) -> tuple[str, ...]:
    """DPTTOOLS_SCRIPT_HOLD: more patterns whose changes are held back, separated by
    commas (names or relative paths, ``*`` allowed).

    Raises:
        ConfigError: a pattern is absolute, climbs out with ``..`` or holds a NUL.
    """
    return tuple(
        dict.fromkeys(_pattern("DPTTOOLS_SCRIPT_HOLD", raw, p) for p in _settings_list(raw))
    )


def hidden_setting(raw: str) -> tuple[str, ...]:
    """DPTTOOLS_SCRIPT_HIDDEN: empty means `HIDDEN_PATTERNS`; ``+A,B`` that list and A and
    B; ``-A,B`` that list without A and B; ``A,B`` only A and B; ``none`` nothing hidden.

    Raises:
        ConfigError: a pattern is absolute, climbs out with ``..`` or holds a NUL, or a
            ``-`` entry names no default pattern.
    """
    value = raw.strip()
    if not value:
        return HIDDEN_PATTERNS
    if value.lower() == "none":
        return ()
    variable = "DPTTOOLS_SCRIPT_HIDDEN"
    if value.startswith("-"):
        dropped = {_pattern(variable, raw, p) for p in _settings_list(value[1:])}
        unknown = sorted(dropped - set(HIDDEN_PATTERNS))
        if unknown:
            raise ConfigError(
                f"{variable}={raw!r} removes {', '.join(map(repr, unknown))}, which the default "
                f"list does not hold; the default list is {', '.join(HIDDEN_PATTERNS)}."
            )
        return tuple(p for p in HIDDEN_PATTERNS if p not in dropped)
    adding = value.startswith("+")
    names = [_pattern(variable, raw, p) for p in _settings_list(value.removeprefix("+"))]
    return tuple(dict.fromkeys([*HIDDEN_PATTERNS, *names] if adding else names))


def _pattern(variable: str, raw: str, pattern: str) -> str:
    parts = pattern.strip("/").split("/")
    if pattern.startswith("/") or "\x00" in pattern or ".." in parts or not pattern.strip("/"):
        raise ConfigError(
            f"{variable}={raw!r} holds {pattern!r}, which is not a name or a path inside the "
            "workspace; list names or relative paths separated by commas, such as "
            f"{variable}=+*.sqlite,private/ ."
        )
    return pattern.strip("/")


@dataclass(frozen=True, slots=True)
class ChangePolicy:
    """What may change in a workspace: see the module's description.

    `for_scripts` builds the policy of skill scripts, `for_file_tools` that of
    ``write_file`` and ``edit_file``; `config.Settings` passes them its values.
    """

    applied: frozenset[str] = frozenset()
    """Held-back classes the operator lets through."""
    held: tuple[str, ...] = ()
    """More patterns the operator holds back (class ``operator``)."""
    hide: tuple[str, ...] = HIDDEN_PATTERNS
    """Secret patterns scripts do not see (and whose changes are held back)."""
    skill_roots: tuple[Path, ...] = ()
    """The configured skills folders, absolute."""
    protected_files: tuple[Path, ...] = ()
    """More absolute paths held back as ``skills``: the skills lock and the catalog index."""
    variable: str = "DPTTOOLS_SCRIPT_APPLY"
    """The setting that lets classes through, named in reasons."""
    loosened: tuple[str, ...] = field(default=())
    """What the operator loosened against the defaults, one sentence each."""

    @classmethod
    def for_scripts(
        cls,
        *,
        applied: Iterable[str],
        held: Iterable[str],
        hide: Iterable[str],
        skill_roots: Iterable[Path],
        protected_files: Iterable[Path],
    ) -> ChangePolicy:
        """The policy of skill scripts (`config.Settings.script_changes` passes the
        DPTTOOLS_SCRIPT_APPLY, _HOLD and _HIDDEN values)."""
        applied = frozenset(applied)
        hide = tuple(hide)
        loosened: list[str] = []
        if applied:
            loosened.append(
                "DPTTOOLS_SCRIPT_APPLY lets skill scripts change "
                + "; ".join(f"{name}: {CLASSES[name]}" for name in sorted(applied))
            )
        shown = [pattern for pattern in HIDDEN_PATTERNS if pattern not in hide]
        if shown:
            loosened.append(
                "DPTTOOLS_SCRIPT_HIDDEN shows skill scripts these secrets: " + ", ".join(shown)
            )
        return cls(
            applied=applied,
            held=tuple(held),
            hide=hide,
            skill_roots=tuple(skill_roots),
            protected_files=tuple(protected_files),
            variable="DPTTOOLS_SCRIPT_APPLY",
            loosened=tuple(loosened),
        )

    @classmethod
    def for_file_tools(
        cls, *, applied: Iterable[str], skill_roots: Iterable[Path], protected_files: Iterable[Path]
    ) -> ChangePolicy:
        """The policy of ``write_file`` and ``edit_file``: the same classes, let through by
        DPTTOOLS_WRITE_ALLOW (`config.Settings.file_tools_changes`); secrets stay theirs
        to write."""
        applied = frozenset(applied)
        loosened = (
            (
                "DPTTOOLS_WRITE_ALLOW lets write_file and edit_file change "
                + "; ".join(f"{name}: {CLASSES[name]}" for name in sorted(applied)),
            )
            if applied
            else ()
        )
        return cls(
            applied=applied,
            held=(),
            hide=(),
            skill_roots=tuple(skill_roots),
            protected_files=tuple(protected_files),
            variable="DPTTOOLS_WRITE_ALLOW",
            loosened=loosened,
        )

    def hidden(self, rel: PurePosixPath) -> bool:
        """Whether the workspace path `rel` is, or lies in, a secret scripts must not see."""
        return bool(self.hide) and _matcher(self.hide).match(_names(rel)) is not None

    def verdict(
        self,
        rel: PurePosixPath,
        *,
        kind: Kind,
        mode: int | None,
        workspace: Path | None = None,
    ) -> str | None:
        """None when a change of the workspace path `rel` may be applied; otherwise the
        reason it is held back.

        `kind` is what the path is (or was, for a deletion) and `mode` its permission bits
        after the change (None: a deletion, or unknown). With `workspace`, the folders
        holding a SKILL.md, the repository's ``core.hooksPath`` and links among the
        existing parents are found on disk.
        """
        held = self.held_back(rel, kind=kind, mode=mode, workspace=workspace)
        return None if held is None else held.reason

    def held_back(
        self,
        rel: PurePosixPath,
        *,
        kind: Kind,
        mode: int | None,
        workspace: Path | None = None,
    ) -> Held | None:
        """As `verdict`, with the class of the held-back change."""
        for held in self._candidates(rel, kind=kind, mode=mode, workspace=workspace):
            if held.kind not in self.applied:
                return held
        return None

    def _candidates(
        self, rel: PurePosixPath, *, kind: Kind, mode: int | None, workspace: Path | None
    ) -> Iterator[Held]:
        """Every reason to hold the change back, most telling first."""
        names = _names(rel)
        if rel.is_absolute() or ".." in rel.parts or not names:
            yield self._hold("outside", rel)
            return
        for name, patterns in HELD_PATTERNS.items():
            depth = _matcher(patterns).match(names)
            if depth is not None:
                yield self._hold(name, rel, _shown(rel, depth))
        if self.held:
            depth = _matcher(self.held).match(names)
            if depth is not None:
                yield self._hold("operator", rel, _shown(rel, depth))
        if self.hide:
            depth = _matcher(self.hide).match(names)
            if depth is not None:
                yield self._hold("secret", rel, _shown(rel, depth))
        if workspace is not None:
            yield from self._on_disk(rel, names, workspace, kind)
        elif names[-1] == "skill.md":
            yield self._hold("skills", rel)
        if kind == "special":
            yield self._hold("special", rel)
        if kind == "link":
            yield self._hold("link", rel)
        if mode is not None:
            if mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWOTH):
                yield self._hold("mode", rel, f"mode {stat.S_IMODE(mode):04o}")
            if kind == "file" and mode & 0o111:
                yield self._hold("executable", rel, f"mode {stat.S_IMODE(mode):04o}")

    def _on_disk(
        self, rel: PurePosixPath, names: list[str], workspace: Path, kind: Kind
    ) -> Iterator[Held]:
        """The classes found on disk: links among the existing parents, folders holding a
        SKILL.md, configured skills folders, the skills lock, and core.hooksPath."""
        root = os.path.realpath(workspace)
        target = "/".join((root.rstrip("/"), *rel.parts))
        for folder in self.skill_roots:
            if _within(target, str(folder)) or _within(str(folder), target):
                yield self._hold("skills", rel, f"the skills folder {folder}")
        for protected in self.protected_files:
            if _within(target, str(protected)) or _within(str(protected), target):
                yield self._hold("skills", rel, str(protected))
        hooks = hooks_folder(Path(root))
        if hooks is not None and (_within(target, str(hooks)) or _within(str(hooks), target)):
            yield self._hold("hooks", rel, f"core.hooksPath {hooks}")
        if names[-1] == "skill.md":
            yield self._hold("skills", rel)
        current = root
        parents = rel.parts if kind == "dir" else rel.parts[:-1]
        for depth in range(len(parents) + 1):
            if _holds_skill(current):
                yield self._hold("skills", rel, _shown(rel, depth) or ".")
            if depth == len(parents):
                break
            current = f"{current.rstrip('/')}/{parents[depth]}"
            try:
                mode = os.lstat(current).st_mode
            except OSError:
                break
            if stat.S_ISLNK(mode):
                yield self._hold("link", rel, f"{_shown(rel, depth + 1)} is a link")
                break
            if not stat.S_ISDIR(mode):
                break

    def _hold(self, kind: str, rel: PurePosixPath, what: str | None = None) -> Held:
        where = f" ({what})" if what and what != str(rel) else ""
        reason = f"{rel} is {CLASSES[kind]}{where}"
        allowed = (
            APPLICABLE_CLASSES if self.variable == "DPTTOOLS_SCRIPT_APPLY" else WRITABLE_CLASSES
        )
        if kind in allowed:
            reason += f"; the operator can allow such changes with {self.variable}={kind}"
        elif kind == "secret":
            reason += "; the operator can show it to scripts with DPTTOOLS_SCRIPT_HIDDEN"
        return Held(kind=kind, reason=reason)

    def __post_init__(self) -> None:
        unknown = set(self.applied) - set(CLASSES)
        if unknown:
            raise ConfigError(f"Unknown classes of held-back change: {', '.join(sorted(unknown))}")


def _names(rel: PurePosixPath) -> list[str]:
    return [normal_name(part) for part in rel.parts if part not in ("", ".", "/")]


def _shown(rel: PurePosixPath, depth: int) -> str:
    return "/".join(rel.parts[:depth])


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _holds_skill(folder: str) -> bool:
    base = folder.rstrip("/")
    return any(os.path.lexists(f"{base}/{name}") for name in ("SKILL.md", "skill.md"))


FILE_TOOLS_POLICY: Final = ChangePolicy(hide=(), variable="DPTTOOLS_WRITE_ALLOW")
"""The file tools' policy before settings add the skills folders, lock and index."""


def announce_policy(policy: ChangePolicy, logger: logging.Logger | None = None) -> None:
    """Log, once at start-up, each way the operator loosened `policy` (a WARNING each)."""
    for sentence in policy.loosened:
        (logger or _log).warning("Change policy loosened: %s.", sentence)
