"""What one skill script call is given: the script checked and read (`ScriptFile`), the
folders opened for it (`OpenFolder`), and what it may see and use (`ScriptPolicy`).

These are the call's input types, shared by `run` and the helpers it runs the call with
(`_call`, `_launch`, `_output`, `_process`), which therefore never import `run`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from ...access import WRITE, current_scopes
from ...change_policy import ChangePolicy
from ...config import Settings

__all__ = ["OpenFolder", "ScriptFile", "ScriptPolicy"]


@dataclass(frozen=True, slots=True)
class OpenFolder:
    """A folder opened for one run."""

    path: Path
    """Its absolute path, with no symbolic link in it."""
    fd: int
    """An open descriptor of it; whoever opened it closes it after the run."""


@dataclass(frozen=True, slots=True)
class ScriptFile:
    """A script checked and read for one run: what runs is `source`, not the file again.

    Made by whoever checked the path (the skills tools, through `_io`), which keeps the
    descriptors open for the run.
    """

    path: Path
    """The script's absolute path, with no symbolic link in it (``__file__``)."""
    source: bytes
    """The code read from the file that was checked."""
    folder: OpenFolder
    """The folder holding the script, the walk's last folder: the working directory."""
    skill_dir: OpenFolder | None = None
    """The skill's folder, which bubblewrap shows read-only; None: `folder`."""


@dataclass(frozen=True, slots=True)
class ScriptPolicy:
    """What a script may see and use; `from_settings` reads the DPTTOOLS_SCRIPT_* values."""

    sandbox: Literal["auto", "bwrap", "none"] = "auto"
    """auto: bubblewrap when it works; bwrap: always (refuse without it); none: never."""
    env_allow: tuple[str, ...] = ()
    """Names of server variables passed on besides the minimal environment."""
    network: bool = False
    """Keep the network under bubblewrap."""
    workspace: Path | None = None
    """Folder a sandboxed script may write to (and whose path it is told)."""
    memory_mb: int = 1024
    """Address-space limit (RLIMIT_AS) in MiB of each process, and the memory bound of
    the whole call where a per-call cgroup can be made."""
    cpu_seconds: int | None = None
    """CPU-seconds limit (RLIMIT_CPU); None means the time limit, rounded up."""
    max_file_size_mb: int = 256
    """Largest file a script may write (RLIMIT_FSIZE), and the size of its /tmp."""
    max_open_files: int = 256
    """Open file descriptors per process (RLIMIT_NOFILE)."""
    max_processes: int = 64
    """Processes of the whole call (a per-call cgroup's pids.max), and the processes the
    script may add to those its user runs (RLIMIT_NPROC)."""
    workspace_writable: bool = True
    """False for a call whose token lacks the ``write`` scope: the script's view of the
    workspace is read-only, and without bubblewrap the script does not run (nothing else
    could keep it from writing). Set per call from the request (`for_this_call`)."""
    changes: ChangePolicy = field(default_factory=ChangePolicy)
    """Which of a script's changes to the workspace are applied, and which secrets in it
    scripts do not see (DPTTOOLS_SCRIPT_APPLY, _HOLD, _HIDDEN)."""
    max_changed_files: int = 1000
    """Files one call may create, change or delete (DPTTOOLS_SCRIPT_MAX_CHANGED_FILES)."""
    max_changed_mb: int = 256
    """MiB of content one call may write (DPTTOOLS_SCRIPT_MAX_CHANGED_MB)."""
    max_calls: int = 4
    """Script calls running at once; more wait their turn (DPTTOOLS_SCRIPT_MAX_CALLS)."""
    user: str = "nobody"
    """The user scripts run as when the server runs as root (never root itself)."""
    visible: tuple[Path, ...] = ()
    """More folders a script under bubblewrap may read (DPTTOOLS_SCRIPT_VISIBLE)."""

    def for_this_call(self) -> ScriptPolicy:
        """This policy narrowed to the request being served: the workspace read-only when
        the request's token lacks ``write`` (`access.current_scopes`); unchanged for a
        request without a token."""
        granted = current_scopes()
        if granted is None or WRITE in granted or not self.workspace_writable:
            return self
        return replace(self, workspace_writable=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> ScriptPolicy:
        """The policy the DPTTOOLS_SCRIPT_* settings describe."""
        return cls(
            sandbox=settings.script_sandbox,
            env_allow=settings.script_env,
            network=settings.script_network,
            workspace=settings.script_workspace,
            memory_mb=settings.script_memory_mb,
            cpu_seconds=settings.script_cpu_limit,
            max_file_size_mb=settings.script_max_file_size_mb,
            max_open_files=settings.script_max_open_files,
            max_processes=settings.script_max_processes,
            changes=settings.script_changes(),
            max_changed_files=settings.script_max_changed_files,
            max_changed_mb=settings.script_max_changed_mb,
            max_calls=settings.script_max_calls,
            user=settings.script_user,
            visible=settings.script_visible,
        )
