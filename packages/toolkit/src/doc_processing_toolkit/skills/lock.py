"""`SkillsLock`: ``Agent(skills_lock=PATH)``, the skills an agent accepts from servers that
serve the Skills extension, pinned file by file.

The file is the skills lock that ``dpt-skills lock`` writes (format 1), read here without
the std-tools package: a JSON object ``{"format": 1, "skills": {NAME: {"files": {PATH:
{"sha256": HEX, "size": BYTES}}}}}``, each ``PATH`` relative to the skill's folder with
``/`` between parts (other keys, such as ``folder`` and ``source``, are allowed and not
used).

An extension server lists each skill with the URI of its SKILL.md and every file with
its digest and size. With a lock, a listed skill is accepted only when the lock names it
(by its frontmatter name) and its listed files are exactly the locked ones, with the same
digests and sizes; any other is rejected before anything of it is read, as a skill whose
file fails verification is (see `skills.extension.Rejections`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..errors import ConfigError

__all__ = ["LOCK_FORMAT", "SkillsLock", "read_skills_lock"]

LOCK_FORMAT: Final = 1
"""The lock format this toolkit reads."""

_DIGEST_PREFIX = "sha256:"
_FIX = "write it with `dpt-skills lock --output FILE` on the skills you audited"

LockedFiles = Mapping[str, tuple[str, int]]
"""Path relative to the skill's folder -> (hexadecimal SHA-256, size in bytes)."""


@dataclass(frozen=True, slots=True)
class SkillsLock:
    """The skills a lock file pins.

    Attributes:
        path: the file it was read from (named in rejections).
        skills: skill name -> its locked files.
    """

    path: str
    skills: Mapping[str, LockedFiles]

    def refusal(
        self, name: str, uri: str, files: Mapping[str, tuple[str, int]] | None
    ) -> str | None:
        """Why the skill `name`, listed at `uri` (its SKILL.md) with `files` (URI ->
        (``sha256:`` digest, size); None: listed as ``"dynamic"``), is not the locked one
        (None: it is)."""
        locked = self.skills.get(name)
        if locked is None:
            return f"the skills lock {self.path} does not name skill {name!r}"
        if files is None:
            return (
                f"skill {name!r} publishes no digests for its files, so they cannot be "
                f"checked against the skills lock {self.path}"
            )
        listed = _relative(uri, files)
        if listed is None:
            return (
                f"the files of skill {name!r} are not listed under its folder, so they "
                f"cannot be checked against the skills lock {self.path}"
            )
        changed = sorted(p for p in listed.keys() | locked.keys() if listed.get(p) != locked.get(p))
        if not changed:
            return None
        shown = ", ".join(changed[:5]) + (
            f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        )
        return f"the files of skill {name!r} differ from the skills lock {self.path} ({shown})"


def _relative(uri: str, files: Mapping[str, tuple[str, int]]) -> dict[str, tuple[str, int]] | None:
    """`files` by path relative to the skill's folder (`uri`, its SKILL.md, without the
    last part), digests without their prefix; None when one is listed outside that folder
    or with another kind of digest."""
    base = uri.rsplit("/", 1)[0] + "/"
    relative: dict[str, tuple[str, int]] = {}
    for file_uri, (digest, size) in files.items():
        if not file_uri.startswith(base) or not digest.startswith(_DIGEST_PREFIX):
            return None
        relative[file_uri[len(base) :]] = (digest[len(_DIGEST_PREFIX) :], size)
    return relative


def read_skills_lock(path: str | os.PathLike[str]) -> SkillsLock:
    """Read and check the lock file at `path`.

    Raises:
        ConfigError: the file is missing, unreadable, not JSON, of another format, or not
            shaped like a lock; the message names the file and how to fix it.
    """
    name = str(path)
    try:
        document = json.loads(Path(path).read_bytes())
    except FileNotFoundError:
        raise ConfigError(f"skills_lock: the file {name!r} does not exist; {_FIX}.") from None
    except OSError as exc:
        raise ConfigError(f"skills_lock: cannot read {name!r} ({exc}); {_FIX}.") from None
    except ValueError as exc:
        raise ConfigError(f"skills_lock: {name!r} is not JSON ({exc}); {_FIX}.") from None
    if not isinstance(document, dict) or document.get("format") != LOCK_FORMAT:
        found = document.get("format") if isinstance(document, dict) else None
        raise ConfigError(
            f"skills_lock: {name!r} is not a skills lock of format {LOCK_FORMAT} (its "
            f"'format' is {found!r}); {_FIX}."
        )
    skills = document.get("skills")
    if not isinstance(skills, dict):
        raise ConfigError(f"skills_lock: {name!r} has no 'skills' object; {_FIX}.")
    return SkillsLock(name, {str(k): _files(name, str(k), v) for k, v in skills.items()})


def _files(name: str, skill: str, entry: Any) -> dict[str, tuple[str, int]]:
    files = entry.get("files") if isinstance(entry, dict) else None
    if not isinstance(files, dict):
        raise ConfigError(f"skills_lock: {name!r}: skill {skill!r} has no 'files' object; {_FIX}.")
    found: dict[str, tuple[str, int]] = {}
    for path, value in files.items():
        digest = value.get("sha256") if isinstance(value, dict) else None
        size = value.get("size") if isinstance(value, dict) else None
        if not isinstance(digest, str) or not isinstance(size, int) or isinstance(size, bool):
            raise ConfigError(
                f"skills_lock: {name!r}: file {path!r} of skill {skill!r} needs a string "
                f"'sha256' and an integer 'size'; {_FIX}."
            )
        found[str(path)] = (digest, size)
    return found
