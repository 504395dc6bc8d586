"""Settings read once from the DPTTOOLS_* environment variables.

`get_settings()` reads the environment the first time it is called and returns the same
frozen object afterwards; `reset_settings()` forgets it (tests and command-line overrides
use it). Relative folders are resolved against the working directory of that first read.
"""

from __future__ import annotations

import ipaddress
import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import platformdirs

from ._script_settings import SCRIPT_DEFAULTS, positive_int, script_fields
from .change_policy import (
    HIDDEN_PATTERNS,
    ChangePolicy,
    applied_classes,
    held_setting,
    hidden_setting,
)
from .errors import ConfigError
from .places import skills_dir_refusal, workspace_refusal

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "DEFAULTS",
    "AuthConfig",
    "ServingSettings",
    "Settings",
    "SettingsSource",
    "get_settings",
    "load_serving_settings",
    "load_settings",
    "loopback_host",
    "reset_settings",
    "settings_source",
]

#: Variable name -> default value, as the user would write it in the environment.
DEFAULTS: dict[str, str] = {
    "DPTTOOLS_SKILLS_DIR": "./.agent_skills",
    "DPTTOOLS_SKILLS_DEPTH": "1",
    "DPTTOOLS_WORKSPACE_DIR": ".",
    "DPTTOOLS_SANDBOX_TIMEOUT": "30",
    "DPTTOOLS_MAX_FILE_SIZE_MB": "50",
    "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT": "50000",
    # The persistent skills index: empty means the platform's user cache folder.
    "DPTTOOLS_CACHE_DIR": "",
    # Pinned serving: the skills lock (empty: no pinning).
    "DPTTOOLS_SKILLS_LOCK": "",
    **SCRIPT_DEFAULTS,
    # Document tools: what one call may unpack, use and spend (see docs/worker.py).
    "DPTTOOLS_DOC_MAX_UNPACKED_MB": "256",
    "DPTTOOLS_DOC_MEMORY_MB": "1024",
    "DPTTOOLS_DOC_WORKERS": "2",
    "DPTTOOLS_TABLE_PAGE_SECONDS": "10",
    "DPTTOOLS_TABLE_CALL_SECONDS": "30",
    # What scripts and the file tools may change (see change_policy.py).
    "DPTTOOLS_SCRIPT_APPLY": "",
    "DPTTOOLS_SCRIPT_HOLD": "",
    "DPTTOOLS_SCRIPT_HIDDEN": "",
    "DPTTOOLS_WRITE_ALLOW": "",
}


@dataclass(frozen=True, slots=True)
class Settings:
    """The effective configuration of every std-tools server in this process."""

    skills_dir: Path
    """The first (often the only) skills folder, absolute: see `skill_roots`."""
    workspace_dir: Path
    """Absolute root that the file system and document tools are confined to."""
    sandbox_timeout: float
    """Seconds a skill script may run before it and its children are killed."""
    max_file_size_mb: float
    """Files larger than this many megabytes (MiB) are refused by the reading tools."""
    output_truncation_limit: int
    """Characters of tool output kept before the rest is cut with a visible marker."""

    # Skill scripts (DPTTOOLS_SCRIPT_*).
    script_sandbox: Literal["auto", "bwrap", "none"] = "auto"
    """How scripts are isolated: bubblewrap when it works (auto), always (bwrap), never."""
    script_env: tuple[str, ...] = ()
    """Names of server environment variables a script also receives."""
    script_network: bool = False
    """True when a script under bubblewrap keeps the network."""
    script_memory_mb: int = 1024
    """Address-space limit of a script process, in MiB."""
    script_cpu_seconds: int | None = None
    """CPU-seconds limit of a script process; None means the timeout, rounded up."""
    script_max_file_size_mb: int = 256
    """Largest file, in MiB, a script process may write."""
    script_max_open_files: int = 256
    """Open file descriptors a script process may hold."""
    script_max_processes: int = 64
    """Processes a script may add to those its user already runs."""
    script_max_changed_files: int = 1000
    """Files one script call may create, change or delete (DPTTOOLS_SCRIPT_MAX_CHANGED_FILES)."""
    script_max_changed_mb: int = 256
    """MiB of content one script call may write (DPTTOOLS_SCRIPT_MAX_CHANGED_MB)."""
    script_max_calls: int = 4
    """Script calls running at once; more wait their turn (DPTTOOLS_SCRIPT_MAX_CALLS)."""
    script_user: str = "nobody"
    """The user scripts run as when the server runs as root (DPTTOOLS_SCRIPT_USER)."""
    script_visible: tuple[Path, ...] = ()
    """More folders a script under bubblewrap may read (DPTTOOLS_SCRIPT_VISIBLE)."""
    script_workspace: Path | None = None
    """The folder a sandboxed script may write to: the workspace when
    DPTTOOLS_WORKSPACE_DIR is set explicitly, otherwise None."""

    # Document tools (DPTTOOLS_DOC_*, DPTTOOLS_TABLE_*).
    doc_max_unpacked_mb: float = 256
    """MiB an Office package (DOCX, XLSX) may unpack to, by the sizes it declares."""
    doc_memory_mb: int = 1024
    """Address-space limit, in MiB, of each process that parses documents."""
    doc_workers: int = 2
    """Document calls that may run at the same time, each in a process of its own."""
    table_page_seconds: float = 10
    """Seconds extract_tables may spend detecting the tables of one PDF page."""
    table_call_seconds: float = 30
    """Seconds extract_tables may spend detecting tables in one call."""

    # Skills folders (DPTTOOLS_SKILLS_DIR as a list, DPTTOOLS_SKILLS_DEPTH).
    skills_dirs: tuple[Path, ...] = ()
    """Every skills folder, in order, when DPTTOOLS_SKILLS_DIR lists several."""
    skills_depth: int = 1
    """How many folder levels under each skills folder are searched for skills."""
    cache_dir: Path | None = None
    """Where the persistent skills index is kept (DPTTOOLS_CACHE_DIR); None: no index."""
    skills_lock: Path | None = None
    """The skills lock the servers pin to (DPTTOOLS_SKILLS_LOCK); None: no pinning."""

    workspace_refusal: str | None = None
    """Why the file and document tools refuse every call, or None when they work: set
    when no workspace was given (neither ``--workspace`` nor DPTTOOLS_WORKSPACE_DIR) and
    the working folder, the default workspace, is the file system's root, the home folder
    or a system folder (`places.place_refusal`)."""
    skills_dir_refusal: str | None = None
    """Why create_skill refuses to create skills, or None when it may: set when
    DPTTOOLS_SKILLS_DIR is not set and the default skills folder would be made in a place
    `places.place_refusal` names."""

    # What scripts and the file tools may change (change_policy.ChangePolicy).
    script_apply: tuple[str, ...] = ()
    """Held-back classes a script's changes are applied in anyway (DPTTOOLS_SCRIPT_APPLY)."""
    script_hold: tuple[str, ...] = ()
    """More path patterns whose changes by scripts are held back (DPTTOOLS_SCRIPT_HOLD)."""
    script_hidden: tuple[str, ...] = HIDDEN_PATTERNS
    """Secret path patterns scripts do not see (DPTTOOLS_SCRIPT_HIDDEN)."""
    write_allow: tuple[str, ...] = ()
    """Held-back classes write_file and edit_file may change (DPTTOOLS_WRITE_ALLOW)."""

    @property
    def skill_roots(self) -> tuple[Path, ...]:
        """Every skills folder in order; a skill name belongs to the first one found."""
        return self.skills_dirs or (self.skills_dir,)

    @property
    def script_cpu_limit(self) -> int:
        """CPU seconds a script process may use: the setting, or the timeout rounded up."""
        if self.script_cpu_seconds is not None:
            return self.script_cpu_seconds
        return max(1, math.ceil(self.sandbox_timeout))

    def script_changes(self) -> ChangePolicy:
        """Which of a skill script's changes are applied, and which secrets scripts do not
        see (DPTTOOLS_SCRIPT_APPLY, _HOLD and _HIDDEN; the skills folders, the skills lock
        and the cache folder are held back)."""
        return ChangePolicy.for_scripts(
            applied=self.script_apply,
            held=self.script_hold,
            hide=self.script_hidden,
            skill_roots=self.skill_roots,
            protected_files=self._protected_files(),
        )

    def file_tools_changes(self) -> ChangePolicy:
        """What write_file and edit_file may change (DPTTOOLS_WRITE_ALLOW)."""
        return ChangePolicy.for_file_tools(
            applied=self.write_allow,
            skill_roots=self.skill_roots,
            protected_files=self._protected_files(),
        )

    def _protected_files(self) -> tuple[Path, ...]:
        return tuple(path.absolute() for path in (self.skills_lock, self.cache_dir) if path)

    @property
    def max_file_size_bytes(self) -> int:
        """`max_file_size_mb` in bytes (a limit too large to count means no limit)."""
        return int(min(self.max_file_size_mb * 1024 * 1024, sys.maxsize))


def _positive_number(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(
            f"{name}={raw!r} is not a number; set it to a positive number such as "
            f"{DEFAULTS[name]}, or unset it to use that default."
        ) from None
    if not value > 0 or value == float("inf"):
        raise ConfigError(
            f"{name}={raw!r} must be a positive, finite number; set it to a value such as "
            f"{DEFAULTS[name]}, or unset it to use that default."
        )
    return value


def _positive_int(name: str, raw: str) -> int:
    return positive_int(name, raw, DEFAULTS[name])


def _folder(name: str, raw: str) -> Path:
    if not raw.strip():
        raise ConfigError(
            f"{name} is set but empty; set it to a folder path, or unset it to use "
            f"the default {DEFAULTS[name]!r}."
        )
    if "\x00" in raw:
        raise ConfigError(f"{name} contains a NUL character; set it to a valid folder path.")
    return Path(raw).expanduser().resolve()


def _folders(name: str, raw: str) -> tuple[Path, ...]:
    """A list of folders separated by `os.pathsep` (``:``; ``;`` on Windows), in order,
    each given once; empty entries are ignored."""
    parts = [part for part in raw.split(os.pathsep) if part.strip()]
    if not parts:
        return (_folder(name, raw),)
    return tuple(dict.fromkeys(_folder(name, part) for part in parts))


def _cache_dir(raw: str) -> Path | None:
    """DPTTOOLS_CACHE_DIR: a folder (made absolute), ``off`` for none, or empty for the
    platform's user cache folder."""
    value = raw.strip()
    if value.lower() in ("off", "none", "0", "false", "no"):
        return None
    if not value:
        return Path(platformdirs.user_cache_dir("doc-processing-std-tools", appauthor=False))
    return Path(value).expanduser().absolute()


def _lock_file(raw: str) -> Path | None:
    """DPTTOOLS_SKILLS_LOCK: a lock file (made absolute), or empty for no pinning."""
    value = raw.strip()
    return Path(value).expanduser().absolute() if value else None


def _home(env: Mapping[str, str]) -> Path | None:
    """The user's home folder, resolved: HOME of `env`, else the account's."""
    raw = env.get("HOME")
    try:
        home = Path(raw) if raw else Path.home()
        return home.resolve()
    except (OSError, RuntimeError):
        return None


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build settings from `environ` (default: `os.environ`) without caching them.

    Raises:
        ConfigError: a variable has a bad value; the message names it and says what to set.
    """
    env = os.environ if environ is None else environ

    def raw(name: str) -> str:
        value = env.get(name)
        return DEFAULTS[name] if value is None else value

    roots = _folders("DPTTOOLS_SKILLS_DIR", raw("DPTTOOLS_SKILLS_DIR"))
    workspace = _folder("DPTTOOLS_WORKSPACE_DIR", raw("DPTTOOLS_WORKSPACE_DIR"))
    home = _home(env)
    return Settings(
        skills_dir=roots[0],
        skills_dirs=roots if len(roots) > 1 else (),
        skills_depth=_positive_int("DPTTOOLS_SKILLS_DEPTH", raw("DPTTOOLS_SKILLS_DEPTH")),
        cache_dir=_cache_dir(raw("DPTTOOLS_CACHE_DIR")),
        skills_lock=_lock_file(raw("DPTTOOLS_SKILLS_LOCK")),
        workspace_dir=workspace,
        workspace_refusal=(
            workspace_refusal(workspace, home)
            if env.get("DPTTOOLS_WORKSPACE_DIR") is None
            else None
        ),
        skills_dir_refusal=(
            skills_dir_refusal(roots[0], home) if env.get("DPTTOOLS_SKILLS_DIR") is None else None
        ),
        sandbox_timeout=_positive_number(
            "DPTTOOLS_SANDBOX_TIMEOUT", raw("DPTTOOLS_SANDBOX_TIMEOUT")
        ),
        max_file_size_mb=_positive_number(
            "DPTTOOLS_MAX_FILE_SIZE_MB", raw("DPTTOOLS_MAX_FILE_SIZE_MB")
        ),
        output_truncation_limit=_positive_int(
            "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", raw("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT")
        ),
        **script_fields(raw, env),
        script_workspace=(
            _folder("DPTTOOLS_WORKSPACE_DIR", raw("DPTTOOLS_WORKSPACE_DIR"))
            if env.get("DPTTOOLS_WORKSPACE_DIR") is not None
            else None
        ),
        # Document tools.
        doc_max_unpacked_mb=_positive_number(
            "DPTTOOLS_DOC_MAX_UNPACKED_MB", raw("DPTTOOLS_DOC_MAX_UNPACKED_MB")
        ),
        doc_memory_mb=_positive_int("DPTTOOLS_DOC_MEMORY_MB", raw("DPTTOOLS_DOC_MEMORY_MB")),
        doc_workers=_positive_int("DPTTOOLS_DOC_WORKERS", raw("DPTTOOLS_DOC_WORKERS")),
        table_page_seconds=_positive_number(
            "DPTTOOLS_TABLE_PAGE_SECONDS", raw("DPTTOOLS_TABLE_PAGE_SECONDS")
        ),
        table_call_seconds=_positive_number(
            "DPTTOOLS_TABLE_CALL_SECONDS", raw("DPTTOOLS_TABLE_CALL_SECONDS")
        ),
        # What scripts and the file tools may change.
        script_apply=applied_classes(raw("DPTTOOLS_SCRIPT_APPLY")),
        script_hold=held_setting(raw("DPTTOOLS_SCRIPT_HOLD")),
        script_hidden=hidden_setting(raw("DPTTOOLS_SCRIPT_HIDDEN")),
        write_allow=applied_classes(raw("DPTTOOLS_WRITE_ALLOW"), "DPTTOOLS_WRITE_ALLOW"),
    )


_current: Settings | None = None


def get_settings() -> Settings:
    """The process-wide settings, read from the environment on first use."""
    global _current
    if _current is None:
        _current = load_settings()
    return _current


SettingsSource = Callable[[], Settings]
"""Where the tools of a server get their settings, once per call: `get_settings` (the
process-wide settings, read from the environment) or a fixed `Settings` given to the
server's builder (`settings_source`)."""


def settings_source(settings: Settings | None) -> SettingsSource:
    """The source a server built with `settings` reads: those settings, or, for None, the
    process-wide settings (`get_settings`) as they are when each tool is called."""
    if settings is None:
        return get_settings
    fixed = settings
    return lambda: fixed


def reset_settings(settings: Settings | None = None) -> None:
    """Forget the cached settings, or replace them with `settings`.

    The next `get_settings()` call reads the environment again when `settings` is None.
    """
    global _current
    _current = settings


# --- Serving: HTTP authentication and the tool allow-list ------------------------------
# Read once by the command lines at start-up (never by a tool), from the environment with
# the command-line options laid over it; see `load_serving_settings`.

#: Signature algorithms a JWKS may be used with: public-key ones only, so a token signed
#: with a shared secret (HS256 and friends, or "none") can never pass.
ASYMMETRIC_ALGORITHMS: tuple[str, ...] = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
DEFAULT_AUTH_ALGORITHMS: tuple[str, ...] = ("RS256", "ES256")
"""The JWT algorithms accepted when DPTTOOLS_AUTH_ALGORITHMS is unset."""


@dataclass(frozen=True, slots=True)
class AuthConfig:
    """How an HTTP server checks bearer tokens: JWTs against a JWKS, or a token file."""

    jwks_url: str | None = None
    """URL of the identity provider's JSON Web Key Set (https, or http on loopback)."""
    jwks_file: Path | None = None
    """A JWKS in a local file, instead of `jwks_url`."""
    issuer: str | None = None
    """The ``iss`` every JWT must carry; also the authorization server the metadata names."""
    audience: str | None = None
    """The ``aud`` every JWT must carry; the resource URL when unset."""
    algorithms: tuple[str, ...] = DEFAULT_AUTH_ALGORITHMS
    """The JWT signature algorithms accepted (a subset of `ASYMMETRIC_ALGORITHMS`)."""
    tokens_file: Path | None = None
    """A file of static tokens and their scopes, instead of JWTs."""
    resource_url: str | None = None
    """The URL clients use for the MCP endpoint (the protected resource's identifier)."""

    @property
    def enabled(self) -> bool:
        """Whether tokens are checked at all."""
        return self.uses_jwt or self.tokens_file is not None

    @property
    def uses_jwt(self) -> bool:
        """Whether tokens are JWTs checked against a JWKS."""
        return self.jwks_url is not None or self.jwks_file is not None


@dataclass(frozen=True, slots=True)
class ServingSettings:
    """Start-up settings of a server process: which tools it offers, and HTTP access."""

    tools: tuple[str, ...] | None = None
    """Names of the only tools to offer (DPTTOOLS_TOOLS), or None for all."""
    read_only: bool = False
    """Leave out the tools that write files, create skills or run scripts."""
    allow_unauthenticated: bool = False
    """Serve HTTP without authentication on an address other machines can reach."""
    auth: AuthConfig = AuthConfig()
    """Bearer-token checking for HTTP."""


def loopback_host(host: str) -> str | None:
    """The one spelling of `host` when it names this machine only, else None.

    ``localhost`` in any case (and with a final dot) is ``localhost``; an IPv4 address in
    127.0.0.0/8 is its dotted form (``127.0.0.2``); IPv6 loopback in any spelling
    (``0:0:0:0:0:0:0:1``, ``[::1]``) is ``::1``. Anything else, an IPv4-mapped address
    (``::ffff:127.0.0.1``) and the wildcards included, is None: other machines may reach it.
    Every loopback decision (no authentication needed, the Host and Origin checks, plain
    http for a JWKS) is taken from this one answer.
    """
    name = host.strip()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name.casefold().rstrip(".") == "localhost":
        return "localhost"
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return None
    return address.compressed if address.is_loopback else None


def _flag(name: str, raw: str | None) -> bool:
    if raw is None or raw.strip() == "":
        return False
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}={raw!r} is not a yes/no value; set it to 1 or 0, or unset it.")


def _names(name: str, raw: str | None) -> tuple[str, ...] | None:
    if raw is None:
        return None
    names = tuple(part.strip() for part in raw.split(",") if part.strip())
    if not names:
        raise ConfigError(
            f"{name} is set but names no tool; list tool names separated by commas "
            "(such as list_skills,load_skill), or unset it to offer every tool."
        )
    return names


def _url(name: str, raw: str | None, *, https_unless_loopback: bool = False) -> str | None:
    if raw is None or not raw.strip():
        return None
    value = raw.strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{name}={raw!r} is not an http(s) URL; write it as https://host/path.")
    local = loopback_host(parts.hostname) is not None
    if https_unless_loopback and parts.scheme == "http" and not local:
        raise ConfigError(
            f"{name}={raw!r} uses plain http to another machine, where the keys could be "
            "swapped on the way; use https (plain http is accepted on a loopback address "
            "only, such as 127.0.0.1)."
        )
    return value


def _file(name: str, raw: str | None) -> Path | None:
    if raw is None or not raw.strip():
        return None
    if "\x00" in raw:
        raise ConfigError(f"{name} contains a NUL character; set it to a valid file path.")
    path = Path(raw.strip()).expanduser().resolve()
    if not path.is_file():
        raise ConfigError(f"{name}={raw!r} is not a file; set it to the path of an existing file.")
    return path


def _algorithms(raw: str | None) -> tuple[str, ...]:
    name = "DPTTOOLS_AUTH_ALGORITHMS"
    if raw is None or not raw.strip():
        return DEFAULT_AUTH_ALGORITHMS
    chosen = tuple(part.strip() for part in raw.split(",") if part.strip())
    wrong = [alg for alg in chosen if alg not in ASYMMETRIC_ALGORITHMS]
    if wrong or not chosen:
        raise ConfigError(
            f"{name}={raw!r} names {', '.join(wrong) or 'no algorithm'}; a JWKS holds public "
            f"keys, so only these are accepted: {', '.join(ASYMMETRIC_ALGORITHMS)}."
        )
    return chosen


def load_serving_settings(environ: Mapping[str, str] | None = None) -> ServingSettings:
    """Build the start-up settings from `environ` (default: `os.environ`).

    Raises:
        ConfigError: a variable has a bad value or contradicts another one; the message
            names the variables and says what to set.
    """
    env = os.environ if environ is None else environ
    auth = AuthConfig(
        jwks_url=_url(
            "DPTTOOLS_AUTH_JWKS_URL", env.get("DPTTOOLS_AUTH_JWKS_URL"), https_unless_loopback=True
        ),
        jwks_file=_file("DPTTOOLS_AUTH_JWKS_FILE", env.get("DPTTOOLS_AUTH_JWKS_FILE")),
        issuer=(env.get("DPTTOOLS_AUTH_ISSUER") or "").strip() or None,
        audience=(env.get("DPTTOOLS_AUTH_AUDIENCE") or "").strip() or None,
        algorithms=_algorithms(env.get("DPTTOOLS_AUTH_ALGORITHMS")),
        tokens_file=_file("DPTTOOLS_AUTH_TOKENS_FILE", env.get("DPTTOOLS_AUTH_TOKENS_FILE")),
        resource_url=_url("DPTTOOLS_AUTH_RESOURCE_URL", env.get("DPTTOOLS_AUTH_RESOURCE_URL")),
    )
    if auth.jwks_url is not None and auth.jwks_file is not None:
        raise ConfigError(
            "DPTTOOLS_AUTH_JWKS_URL and DPTTOOLS_AUTH_JWKS_FILE are both set; keep one."
        )
    if auth.uses_jwt and auth.tokens_file is not None:
        raise ConfigError(
            "DPTTOOLS_AUTH_TOKENS_FILE is set together with a JWKS; choose JWTs "
            "(DPTTOOLS_AUTH_JWKS_URL or _JWKS_FILE) or static tokens, not both."
        )
    if auth.uses_jwt and auth.issuer is None:
        raise ConfigError(
            "JWT authentication needs DPTTOOLS_AUTH_ISSUER: the issuer (iss) your identity "
            "provider writes into its tokens, such as https://login.example.com/."
        )
    if not auth.uses_jwt:
        stray = [
            name
            for name in (
                "DPTTOOLS_AUTH_ISSUER",
                "DPTTOOLS_AUTH_AUDIENCE",
                "DPTTOOLS_AUTH_ALGORITHMS",
            )
            if (env.get(name) or "").strip()
        ]
        if stray:
            raise ConfigError(
                f"{', '.join(stray)} only apply to JWTs; set DPTTOOLS_AUTH_JWKS_URL or "
                "DPTTOOLS_AUTH_JWKS_FILE as well, or unset them."
            )
    return ServingSettings(
        tools=_names("DPTTOOLS_TOOLS", env.get("DPTTOOLS_TOOLS")),
        read_only=_flag("DPTTOOLS_READ_ONLY", env.get("DPTTOOLS_READ_ONLY")),
        allow_unauthenticated=_flag(
            "DPTTOOLS_ALLOW_UNAUTHENTICATED", env.get("DPTTOOLS_ALLOW_UNAUTHENTICATED")
        ),
        auth=auth,
    )
