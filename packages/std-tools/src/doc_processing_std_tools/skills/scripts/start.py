"""What scripts run under, said once at start-up, and the server contained before its
first script call: the one place that asks both the sandbox (`sandbox`) and the script
user and bounds (`_containment`, `_cgroups`).
"""

from __future__ import annotations

import functools
import logging
from typing import Literal

from ...config import Settings
from ._containment import (
    WAYS_OUT,
    bounds_in_effect,
    contain_server,
    interpreter_paths,
    reach_problem,
    script_user,
)
from .sandbox import sandbox_status

__all__ = ["announce_sandbox", "start_scripts"]

#: The start-up lines keep the logger they are documented under (see the Logging page).
logger = logging.getLogger(__package__ + ".sandbox")
containment_logger = logging.getLogger(__package__ + "._containment")


def announce_sandbox(mode: Literal["auto", "bwrap", "none"], user: str = "nobody") -> None:
    """Log, once per process and mode, what skill scripts will run under.

    Call it when a server is built or started, never at import. ``auto`` without a usable
    bubblewrap is a WARNING naming what is missing; ``bwrap`` without it is an ERROR
    (every script call will be refused); ``none`` is an INFO line. Each also says which
    user scripts run as (`user`, DPTTOOLS_SCRIPT_USER, when the server runs as root) and
    what bounds a whole call (a cgroup per call, or per-process limits only).

    Raises:
        ConfigError: the server runs as root and `user` names no user here, or root.
    """
    _announce(mode, user)


@functools.cache
def _announce(mode: Literal["auto", "bwrap", "none"], user: str) -> None:
    found = script_user(user)
    more = f"; {bounds_in_effect(found)}"
    if mode == "none":
        logger.info("skill scripts run without a sandbox (DPTTOOLS_SCRIPT_SANDBOX=none)%s", more)
        return
    status = sandbox_status()
    if status.bwrap is not None:
        logger.info("skill scripts run under bubblewrap (%s)%s", status.bwrap, more)
    elif mode == "bwrap":
        logger.error(
            "DPTTOOLS_SCRIPT_SANDBOX=bwrap, but %s; execute_skill_script will refuse to run "
            "scripts",
            status.problem,
        )
    else:
        logger.warning(
            "skill scripts will run WITHOUT the bubblewrap sandbox: %s. They still get a "
            "minimal environment, resource limits and a process sweep, but can read what "
            "the server's user can read and use the network. Set DPTTOOLS_SCRIPT_SANDBOX=none "
            "to choose this explicitly.",
            status.problem,
        )


def start_scripts(settings: Settings, *, read_only: bool, tools: tuple[str, ...] | None) -> None:
    """At server start in the command line: log what scripts run under and, when the
    server offers execute_skill_script, contain this process now (`contain_server`).

    Raises:
        ConfigError: the server runs as root and DPTTOOLS_SCRIPT_USER names no user here.
            Without bubblewrap, a user that cannot reach the interpreter is a WARNING: the
            server's other tools work, and every script call is refused with the same
            reason. Under bubblewrap the server opens every path itself, so it never is.
    """
    found = script_user(settings.script_user)
    announce_sandbox(settings.script_sandbox, settings.script_user)
    if not read_only and (tools is None or "execute_skill_script" in tools):
        sandboxed = settings.script_sandbox != "none" and sandbox_status().bwrap is not None
        problem = None if found is None or sandboxed else reach_problem(found, interpreter_paths())
        if problem is not None:
            # The other tools work; each script call will say the same as a tool error.
            containment_logger.warning(
                "%s: execute_skill_script will refuse every call. %s", problem, WAYS_OUT
            )
        contain_server()
