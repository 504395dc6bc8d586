"""Settings read once from the DPTTOOLS_* environment variables.

`get_settings()` reads the environment the first time it is called and returns the same
frozen object afterwards; `reset_settings()` forgets it (tests and command-line overrides
use it). Relative folders are resolved against the working directory of that first read.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError

__all__ = ["DEFAULTS", "Settings", "get_settings", "load_settings", "reset_settings"]

#: Variable name -> default value, as the user would write it in the environment.
DEFAULTS: dict[str, str] = {
    "DPTTOOLS_SKILLS_DIR": "./.agent_skills",
    "DPTTOOLS_WORKSPACE_DIR": ".",
    "DPTTOOLS_SANDBOX_TIMEOUT": "30",
    "DPTTOOLS_MAX_FILE_SIZE_MB": "50",
    "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT": "50000",
}


@dataclass(frozen=True, slots=True)
class Settings:
    """The effective configuration of every std-tools server in this process."""

    skills_dir: Path
    """Absolute folder whose direct subfolders holding a SKILL.md are the skills."""
    workspace_dir: Path
    """Absolute root that the file system and document tools are confined to."""
    sandbox_timeout: float
    """Seconds a skill script may run before it and its children are killed."""
    max_file_size_mb: float
    """Files larger than this many megabytes (MiB) are refused by the reading tools."""
    output_truncation_limit: int
    """Characters of tool output kept before the rest is cut with a visible marker."""

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
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(
            f"{name}={raw!r} is not a whole number; set it to a positive integer such as "
            f"{DEFAULTS[name]}, or unset it to use that default."
        ) from None
    if value <= 0:
        raise ConfigError(
            f"{name}={raw!r} must be a positive integer; set it to a value such as "
            f"{DEFAULTS[name]}, or unset it to use that default."
        )
    return value


def _folder(name: str, raw: str) -> Path:
    if not raw.strip():
        raise ConfigError(
            f"{name} is set but empty; set it to a folder path, or unset it to use "
            f"the default {DEFAULTS[name]!r}."
        )
    if "\x00" in raw:
        raise ConfigError(f"{name} contains a NUL character; set it to a valid folder path.")
    return Path(raw).expanduser().resolve()


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build settings from `environ` (default: `os.environ`) without caching them.

    Raises:
        ConfigError: a variable has a bad value; the message names it and says what to set.
    """
    env = os.environ if environ is None else environ

    def raw(name: str) -> str:
        value = env.get(name)
        return DEFAULTS[name] if value is None else value

    return Settings(
        skills_dir=_folder("DPTTOOLS_SKILLS_DIR", raw("DPTTOOLS_SKILLS_DIR")),
        workspace_dir=_folder("DPTTOOLS_WORKSPACE_DIR", raw("DPTTOOLS_WORKSPACE_DIR")),
        sandbox_timeout=_positive_number(
            "DPTTOOLS_SANDBOX_TIMEOUT", raw("DPTTOOLS_SANDBOX_TIMEOUT")
        ),
        max_file_size_mb=_positive_number(
            "DPTTOOLS_MAX_FILE_SIZE_MB", raw("DPTTOOLS_MAX_FILE_SIZE_MB")
        ),
        output_truncation_limit=_positive_int(
            "DPTTOOLS_OUTPUT_TRUNCATION_LIMIT", raw("DPTTOOLS_OUTPUT_TRUNCATION_LIMIT")
        ),
    )


_current: Settings | None = None


def get_settings() -> Settings:
    """The process-wide settings, read from the environment on first use."""
    global _current
    if _current is None:
        _current = load_settings()
    return _current


def reset_settings(settings: Settings | None = None) -> None:
    """Forget the cached settings, or replace them with `settings`.

    The next `get_settings()` call reads the environment again when `settings` is None.
    """
    global _current
    _current = settings
