"""Closing the agent's host process to the other processes of its user (Linux).

A skill script that runs without a sandbox runs as the user of the server that started
it, and the server is often a child of the agent's process: a script could then read the
host's ``/proc/<pid>/environ`` (the model provider's API key is usually there), its
memory and its open descriptors. `protect_process` marks the process not dumpable
(``PR_SET_DUMPABLE`` 0), which closes all three to every process without CAP_SYS_PTRACE
and also turns core dumps of the process off.

This changes the whole process, so the library never does it on import: ``dpt-agent``
does it as it starts, and an `Agent` does it right before it starts its first local
server process (an ``mcp_command`` or ``mcp_script`` tool). A debugger or profiler that
attaches to a running host (gdb, py-spy) then needs root.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import sys
from typing import Final

__all__ = ["protect_process"]

logger = logging.getLogger(__name__)

_PR_SET_DUMPABLE: Final = 4


@functools.cache
def protect_process() -> bool:
    """Make this process not dumpable, once; True when that took (False off Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        done = int(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0
    except (AttributeError, OSError):
        done = False
    logger.debug("host process not dumpable: %s", done)
    return done
