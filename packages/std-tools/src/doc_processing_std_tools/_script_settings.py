"""The DPTTOOLS_SCRIPT_* settings (what a skill script may see and use): their defaults
and how each is read. `config.load_settings` puts them on `config.Settings`."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from .errors import ConfigError

__all__ = ["SCRIPT_DEFAULTS", "positive_int", "script_fields"]

#: Variable name -> default value, as the user would write it in the environment.
SCRIPT_DEFAULTS: dict[str, str] = {
    "DPTTOOLS_SCRIPT_SANDBOX": "auto",
    "DPTTOOLS_SCRIPT_ENV": "",
    "DPTTOOLS_SCRIPT_NETWORK": "0",
    "DPTTOOLS_SCRIPT_MEMORY_MB": "1024",
    "DPTTOOLS_SCRIPT_CPU_SECONDS": "",
    "DPTTOOLS_SCRIPT_MAX_FILE_SIZE_MB": "256",
    "DPTTOOLS_SCRIPT_MAX_OPEN_FILES": "256",
    "DPTTOOLS_SCRIPT_MAX_PROCESSES": "64",
    # Changed files and bytes one call may leave to be applied, and calls at once.
    "DPTTOOLS_SCRIPT_MAX_CHANGED_FILES": "1000",
    "DPTTOOLS_SCRIPT_MAX_CHANGED_MB": "256",
    "DPTTOOLS_SCRIPT_MAX_CALLS": "4",
    # The user scripts run as when the server runs as root (never root itself).
    "DPTTOOLS_SCRIPT_USER": "nobody",
    # More folders a script under bubblewrap may read (absolute paths, commas between).
    "DPTTOOLS_SCRIPT_VISIBLE": "",
}


def positive_int(name: str, raw: str, default: str) -> int:
    """`raw` as a positive whole number, for variable `name` (whose default is `default`)."""
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(
            f"{name}={raw!r} is not a whole number; set it to a positive integer such as "
            f"{default}, or unset it to use that default."
        ) from None
    if value <= 0:
        raise ConfigError(
            f"{name}={raw!r} must be a positive integer; set it to a value such as "
            f"{default}, or unset it to use that default."
        )
    return value


_SANDBOX_MODES: tuple[str, ...] = ("auto", "bwrap", "none")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _sandbox_mode(raw: str) -> Literal["auto", "bwrap", "none"]:
    value = raw.strip().lower()
    if value == "auto":
        return "auto"
    if value == "bwrap":
        return "bwrap"
    if value == "none":
        return "none"
    raise ConfigError(
        f"DPTTOOLS_SCRIPT_SANDBOX={raw!r} is not one of {', '.join(_SANDBOX_MODES)}; set it "
        "to auto (bubblewrap when it works), bwrap (always) or none, or unset it for auto."
    )


def _env_names(raw: str) -> tuple[str, ...]:
    names = [part.strip() for part in raw.split(",") if part.strip()]
    for name in names:
        if not _ENV_NAME.fullmatch(name):
            raise ConfigError(
                f"DPTTOOLS_SCRIPT_ENV holds {name!r}, which is not a variable name; list "
                "names only, separated by commas, such as DPTTOOLS_SCRIPT_ENV=HTTPS_PROXY,TZ."
            )
    return tuple(dict.fromkeys(names))


def switch(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{name}={raw!r} is not a switch; set it to 1 (on) or 0 (off).")


def script_user(raw: str) -> str:
    """DPTTOOLS_SCRIPT_USER: a user name or number, never root (0)."""
    value = raw.strip()
    if not value or value == "root" or (value.isdigit() and int(value) == 0):
        raise ConfigError(
            f"DPTTOOLS_SCRIPT_USER={raw!r} cannot be used: a server running as root runs "
            "skill scripts as this user, and never as root. Set it to an unprivileged "
            "user such as nobody (the default), or unset it."
        )
    return value


def visible_folders(raw: str) -> tuple[Path, ...]:
    """DPTTOOLS_SCRIPT_VISIBLE: absolute folder paths separated by commas, each once."""
    folders: list[Path] = []
    for part in (piece.strip() for piece in raw.split(",")):
        if not part:
            continue
        if "\x00" in part or not part.startswith("/"):
            raise ConfigError(
                f"DPTTOOLS_SCRIPT_VISIBLE holds {part!r}, which is not an absolute path; "
                "list absolute folder paths separated by commas, such as "
                "DPTTOOLS_SCRIPT_VISIBLE=/opt/fonts,/srv/reference, or unset it."
            )
        path = Path(os.path.normpath(part))
        if path == Path("/"):
            raise ConfigError(
                "DPTTOOLS_SCRIPT_VISIBLE holds '/', which would show scripts the whole file "
                "system; list only the folders they need, such as /opt/fonts."
            )
        if path not in folders:
            folders.append(path)
    return tuple(folders)


def script_fields(raw: Callable[[str], str], env: Mapping[str, str]) -> dict[str, Any]:
    """The ``script_*`` fields of `config.Settings`; `raw` gives a variable's value or its
    default, `env` the environment itself.

    Raises:
        ConfigError: a variable has a bad value; the message names it and says what to set.
    """

    def _int(name: str, value: str) -> int:
        return positive_int(name, value, SCRIPT_DEFAULTS[name])

    if env.get("DPTTOOLS_SCRIPT_PROTECTED", "").strip():
        raise ConfigError(
            "DPTTOOLS_SCRIPT_PROTECTED is not a setting: a script's changes to the workspace "
            "are staged and applied by the change policy, which holds back version-control, "
            "agent, build and skills files by itself. Move the extra paths to "
            "DPTTOOLS_SCRIPT_HOLD (same format: names or relative paths, commas between) and "
            "unset DPTTOOLS_SCRIPT_PROTECTED."
        )
    return {
        "script_sandbox": _sandbox_mode(raw("DPTTOOLS_SCRIPT_SANDBOX")),
        "script_env": _env_names(raw("DPTTOOLS_SCRIPT_ENV")),
        "script_network": switch("DPTTOOLS_SCRIPT_NETWORK", raw("DPTTOOLS_SCRIPT_NETWORK")),
        "script_memory_mb": _int("DPTTOOLS_SCRIPT_MEMORY_MB", raw("DPTTOOLS_SCRIPT_MEMORY_MB")),
        "script_cpu_seconds": (
            _int("DPTTOOLS_SCRIPT_CPU_SECONDS", raw("DPTTOOLS_SCRIPT_CPU_SECONDS"))
            if raw("DPTTOOLS_SCRIPT_CPU_SECONDS").strip()
            else None
        ),
        "script_max_file_size_mb": _int(
            "DPTTOOLS_SCRIPT_MAX_FILE_SIZE_MB", raw("DPTTOOLS_SCRIPT_MAX_FILE_SIZE_MB")
        ),
        "script_max_open_files": _int(
            "DPTTOOLS_SCRIPT_MAX_OPEN_FILES", raw("DPTTOOLS_SCRIPT_MAX_OPEN_FILES")
        ),
        "script_max_processes": _int(
            "DPTTOOLS_SCRIPT_MAX_PROCESSES", raw("DPTTOOLS_SCRIPT_MAX_PROCESSES")
        ),
        "script_max_changed_files": _int(
            "DPTTOOLS_SCRIPT_MAX_CHANGED_FILES", raw("DPTTOOLS_SCRIPT_MAX_CHANGED_FILES")
        ),
        "script_max_changed_mb": _int(
            "DPTTOOLS_SCRIPT_MAX_CHANGED_MB", raw("DPTTOOLS_SCRIPT_MAX_CHANGED_MB")
        ),
        "script_max_calls": _int("DPTTOOLS_SCRIPT_MAX_CALLS", raw("DPTTOOLS_SCRIPT_MAX_CALLS")),
        "script_user": script_user(raw("DPTTOOLS_SCRIPT_USER")),
        "script_visible": visible_folders(raw("DPTTOOLS_SCRIPT_VISIBLE")),
    }
